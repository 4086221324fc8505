/* The mount table (/proc/self/mountinfo), and paths compared by what they are, not by name. */
#ifndef LBBOX_MOUNTINFO_H
#define LBBOX_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lbbox/base/err.h"

struct lb_mount_entry {
	dev_t dev;	  /* the filesystem */
	char *root;	  /* the directory of that filesystem the mount shows */
	char *mountpoint; /* where */
	char *fstype;
	char *super; /* the filesystem's options ("rw,memory" for a v1 cgroup hierarchy) */
};

struct lb_mountinfo {
	struct lb_mount_entry *v;
	size_t n;
};

int lb_mountinfo_read(struct lb_mountinfo *out, struct lb_err **err);
void lb_mountinfo_free(struct lb_mountinfo *mi);

/*
 * Whether the canonical paths a and b reach the same files: one holds the other on the same
 * filesystem, however bind mounts name them, or a mount below one of them shows (part of) the
 * other. A path the table does not place counts as overlapping.
 */
bool lb_mountinfo_overlap(const struct lb_mountinfo *mi, const char *a, const char *b);

#endif
