/* The skill store's shared pieces (skill_*.c). */
#ifndef LBBOX_BOX_SKILL_INTERNAL_H
#define LBBOX_BOX_SKILL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lbbox/box/skill.h"

#define SKILL_MAX_FOUND	     1000  /* packages one discovery may find */
#define SKILL_MAX_SCANNED    10000 /* directory entries one discovery may read */
#define SKILL_MAX_DIR_LIST   10000 /* entries of a directory listed by list_skill_files */
#define SKILL_MAX_LIST_FILES 1000  /* max_entries is capped here */
#define SKILL_MAX_LIST_TEXT  (16u << 20)

/* s[0..n) is valid UTF-8. */
bool skill_utf8_valid(const char *s, size_t n);
/* Python's str.strip() == "". */
bool lb_skill_is_blank(const char *s);

/* skill_root.c: path against base (absolute paths stay, "~" is $HOME) into out; -1 when too long.
 */
int skill_joined(const char *base, const char *path, char *out, size_t len);
/* rel ("." or a relative path) below dirfd, never through a symbolic link nor out of dirfd
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); -1 with errno. O_CLOEXEC is added. */
int skill_openat(int dirfd, const char *rel, int flags, mode_t mode);
/* The directories of rel below dirfd, created 0755 as needed, without following links; *made
 * (when given) is increased by the number created. */
int skill_mkdirs(int dirfd, const char *rel, size_t *made, struct lb_err **err);
/* Removes the tree rel below dirfd (a directory entry, never followed), however deep. */
int skill_rmtree(int dirfd, const char *rel, struct lb_err **err);
/* Copies the tree src below sfd to the new directory dst below dfd (regular files and
 * directories only). *created: dst was made by this call (a failed copy's to remove). */
int skill_copytree(int sfd, const char *src, int dfd, const char *dst, bool *created,
		   struct lb_err **err);

/* posixpath.normpath of a relative path ("" -> "."), malloc'ed. */
char *skill_normpath(const char *path);
/* path.strip().replace("\\", "/").strip("/"), malloc'ed. */
char *skill_norm_source(const char *path);

/* A package found by discovery: rel below the searched directory, entry SKILL.md or skill.md. */
struct skill_found {
	char *rel; /* "." for the directory itself */
	const char *entry;
};
void skill_found_free(struct skill_found *v, size_t n);
/* Breadth-first from rel below dirfd to max_depth levels: a directory with an entry file is a
 * package (not searched further); links are not followed; names in sorted order. skip_tenants:
 * a top-level "tenants" is left out (the legacy store). */
int skill_discover(int dirfd, const char *rel, int max_depth, bool skip_tenants,
		   struct skill_found **out, size_t *n, struct lb_err **err);
/* The skill object of the package rel (below dirfd, whose path is base): its entry file read
 * (at most 1 MiB of UTF-8), front matter parsed, name checked. */
int skill_load(int dirfd, const char *base, const char *rel, const char *entry, json_t **out,
	       struct lb_err **err);
/* A text file below dirfd: regular, at most LB_SKILL_TEXT_MAX bytes, UTF-8 (subject names it
 * in the errors). */
int skill_read_text(int dirfd, const char *rel, const char *subject, char **out, size_t *len,
		    struct lb_err **err);

/* Every skill of the store, newest first (packages that do not load are left out). */
int skill_all(struct lb_skill_store *st, json_t **out, struct lb_err **err);
/* The skill called name (a new reference) or NULL when there is none. */
int skill_find(struct lb_skill_store *st, const char *name, json_t **out, struct lb_err **err);
/* The part of a canonical path below the store's root ("." for the root itself), NULL when it
 * is outside. */
const char *skill_rel_of(const struct lb_skill_store *st, const char *canonical);
/* The canonical form of a path a request gives (relative ones against the working directory);
 * it must lie in the store: its relative part is returned in *rel (malloc'ed). */
int skill_scoped(const struct lb_skill_store *st, const char *path, const char *label,
		 char **canonical, struct lb_err **err);
/* Writes SKILL.md of the package rel from metadata and instructions. */
int skill_write_md(struct lb_skill_store *st, const char *rel, const struct lb_skill_meta *m,
		   struct lb_err **err);

#endif
