/* A skill upload's zip and its fixed limits (§6.6; not configurable per tenant). */
#ifndef LBBOX_BOX_SKILL_ZIP_H
#define LBBOX_BOX_SKILL_ZIP_H

#include "lbbox/base/err.h"

#define SKILL_ZIP_COMPRESSED_MAX (20 * 1024 * 1024)
#define SKILL_ZIP_ENTRIES	 512
/* an entry's name, in bytes and in components, and the files and directories (the ones its
 * names imply included) an archive may create: a few deep names cost no more than a few
 * entries to send but one inode and one lookup per level to unpack */
#define SKILL_ZIP_NAME_MAX  1024
#define SKILL_ZIP_DEPTH	    32
#define SKILL_ZIP_INODES    2048
#define SKILL_ZIP_ENTRY_MAX (16ull << 20)
#define SKILL_ZIP_TOTAL_MAX (64ull << 20)
#define SKILL_ZIP_RATIO	    100ull

/* Unpacks the zip read from zipfd into the empty directory dirfd (regular files 0644, or 0755
 * when executable, and directories), refusing it whole at the first rule broken. */
int skill_unzip(int zipfd, int dirfd, struct lb_err **err);

#endif
