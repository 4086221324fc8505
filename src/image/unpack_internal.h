/* Shared state of one layer unpack; private to src/image/unpack*.c. */
#ifndef LBBOX_IMAGE_UNPACK_INTERNAL_H
#define LBBOX_IMAGE_UNPACK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#include "lbbox/image/unpack.h"

struct archive;
struct archive_entry;

/* Set of root-relative paths ("a/b", "" for the root). */
struct unpack_pathset {
	char **slots;
	size_t cap, n;
};

/* Directory mode and times, applied after the whole layer so later entries do not disturb them
 * (creating a child updates the parent's mtime; a 0555 directory would refuse its children). */
struct unpack_dirmeta {
	char *path;
	mode_t mode;
	struct timespec times[2];
};

struct unpack_ctx {
	int root_fd;
	unsigned flags;
	bool may_trusted; /* root and not rootless: trusted.* xattrs allowed */
	uint64_t max_entries, max_total_size, max_path;
	uint64_t used_entries, used_bytes; /* by lower layers of the same image */
	struct lb_unpack_result res;
	/* Paths this layer created (and their ancestors): a whiteout or opaque marker only hides
	 * what lower layers put there, never what this same layer wrote. */
	struct unpack_pathset written;
	struct unpack_dirmeta *dirs;
	size_t ndirs, capdirs;
	char **opaque; /* directories holding a .wh..wh..opq marker, handled at the end */
	size_t nopaque, capopaque;
	/* Parent directory of the previous entry: tars list a directory's entries together. Only
	 * children of this directory are ever removed while it is cached, so it stays valid. */
	char *cache_path;
	int cache_fd;
};

/* unpack_stream.c: blob -> (decompress, sha256) -> tar reader */
struct unpack_stream;
int unpack_stream_open(int fd, const char *media_type, struct unpack_stream **out,
		       struct lb_err **err);
struct archive *unpack_stream_tar(struct unpack_stream *s);
/* Error for a failed tar read: the decompressor's or the tar reader's message. first: no header
 * was read yet, so the input is not a tar archive at all. */
int unpack_stream_error(struct unpack_stream *s, bool first, struct lb_err **err);
/* Hashes the rest of the stream (tar padding after the end marker) and returns the DiffID. */
int unpack_stream_finish(struct unpack_stream *s, char diff_id[72], uint64_t *tar_size,
			 struct lb_err **err);
void unpack_stream_free(struct unpack_stream **s);

/* unpack_path.c: resolution that never leaves the root */
/* Lexically cleans a tar path into root-relative form: "/a/./b/../c/" -> "a/c", ".." at the top
 * stays at the root. */
int unpack_clean_path(const char *in, uint64_t max, char **out, struct lb_err **err);
int unpack_openat2(int root_fd, const char *path, int flags);
/* Borrowed fd of the parent directory of path (resolved inside the root; parents that do not
 * exist are created when create is set). Sets *fd to -1 with no error when the parent is missing
 * and create is unset. */
int unpack_parent(struct unpack_ctx *c, const char *path, bool create, int *fd,
		  struct lb_err **err);
void unpack_parent_drop(struct unpack_ctx *c);
/* Removes name (a whole tree for a directory) under dirfd without following any symlink. */
int unpack_remove_at(int dirfd, const char *name, const char *what, struct lb_err **err);
const char *unpack_basename(const char *path);

/* unpack_set.c */
/* Adds path and all its ancestors. */
int unpack_pathset_add(struct unpack_pathset *s, const char *path);
bool unpack_pathset_has(const struct unpack_pathset *s, const char *path);
void unpack_pathset_free(struct unpack_pathset *s);

/* unpack_entry.c: one tar entry onto disk */
int unpack_entry(struct unpack_ctx *c, struct archive *a, struct archive_entry *e, const char *path,
		 struct lb_err **err);
/* Directory modes and mtimes, after everything else. */
int unpack_dirs_finish(struct unpack_ctx *c, struct lb_err **err);

/* unpack_whiteout.c */
bool unpack_is_whiteout(const char *path);
int unpack_whiteout(struct unpack_ctx *c, const char *path, struct lb_err **err);
int unpack_opaque_finish(struct unpack_ctx *c, struct lb_err **err);

#endif
