/*
 * LangBot's workspace quota (spec §5.6): a walk of realpath(host_path) before and after each
 * exec. Iterative (a deep tree must not exhaust the stack), never follows symlinks (a link counts
 * its own lstat size, so a link to a big file outside costs a few bytes), and stops as soon as a
 * limit is crossed so a huge tree costs no more than the limit. The sandbox writes this tree
 * while it is walked: every directory is opened from the workspace's own descriptor by its path
 * below it, refusing any symlink on the way (one swapped in for a directory would lead the walk
 * onto the host) and any other file system.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/box/spec.h"
#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"

#define MIB		      (1024ULL * 1024)
#define QUOTA_MAX_ENTRIES_CAP 1000000 /* box.limits.max_workspace_entries is clamped 1..1e6 */

struct quota_walk {
	int root_fd;
	char **stack; /* directories still to read, relative to root_fd ("" for itself) */
	size_t n, cap;
	uint64_t bytes, entries;
	uint64_t limit_bytes, max_entries;
};

static int walk_push(struct quota_walk *w, char *path)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		char **stack = realloc(w->stack, cap * sizeof(*stack));
		if (!stack) {
			free(path);
			return -1;
		}
		w->stack = stack;
		w->cap = cap;
	}
	w->stack[w->n++] = path;
	return 0;
}

static void walk_free(struct quota_walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->stack[i]);
	free(w->stack);
}

static bool walk_over(const struct quota_walk *w)
{
	return w->entries > w->max_entries || w->bytes > w->limit_bytes;
}

/* One entry of dir: counted, sized by lstat, queued when it is a real directory. */
static int walk_entry(struct quota_walk *w, DIR *d, const char *dir, const char *name,
		      struct lb_err **err)
{
	struct stat st;

	w->entries++;
	if (w->entries > w->max_entries)
		return 0;
	if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0; /* removed while we walk: LangBot skips it too */
		return lb_err_set(err, errno, "workspace quota: stat %s/%s", dir, name);
	}
	if (!S_ISDIR(st.st_mode)) {
		w->bytes += (uint64_t)st.st_size;
		return 0;
	}
	char *sub = NULL;
	if (asprintf(&sub, "%s%s%s", dir, *dir ? "/" : "", name) < 0 || walk_push(w, sub) < 0)
		return lb_err_set(err, ENOMEM, "workspace quota");
	return 0;
}

static DIR *open_below(int root_fd, const char *rel)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, root_fd, *rel ? rel : ".", &how, sizeof(how));
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (fd >= 0 && !d)
		close(fd);
	return d;
}

static int walk_dir(struct quota_walk *w, const char *dir, struct lb_err **err)
{
	_cleanup_closedir_ DIR *d = open_below(w->root_fd, dir);

	if (!d) {
		/* vanished, replaced by a link or a file, or another file system: not counted */
		if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV)
			return 0;
		return lb_err_set(err, errno, "workspace quota: open %s", dir);
	}
	while (!walk_over(w)) {
		errno = 0;
		struct dirent *de = readdir(d);
		if (!de) {
			if (errno)
				return lb_err_set(err, errno, "workspace quota: read %s", dir);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (walk_entry(w, d, dir, de->d_name, err) < 0)
			return -1;
	}
	return 0;
}

static int quota_walk(struct quota_walk *w, struct lb_err **err)
{
	char *first = strdup("");

	if (!first || walk_push(w, first) < 0)
		return lb_err_set(err, ENOMEM, "workspace quota");
	while (w->n > 0 && !walk_over(w)) {
		_cleanup_free_ char *dir = w->stack[--w->n];
		if (walk_dir(w, dir, err) < 0)
			return -1;
	}
	return 0;
}

int lb_box_quota_check(const char *host_path, int64_t quota_mb, uint64_t max_entries,
		       const char *phase, const char *session_id, struct lb_err **err)
{
	char root[PATH_MAX];
	struct stat st;
	struct quota_walk w = {0};

	if (!host_path || quota_mb <= 0)
		return 0; /* no host workspace, or 0 = unlimited */
	if (!realpath(host_path, root) || stat(root, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0; /* LangBot enforces only on an existing directory */
	/* Python's integers do not overflow: a quota past 2^64 bytes is simply never reached */
	w.limit_bytes =
	    (uint64_t)quota_mb > UINT64_MAX / MIB ? UINT64_MAX : (uint64_t)quota_mb * MIB;
	w.max_entries = max_entries < 1			      ? 1
			: max_entries > QUOTA_MAX_ENTRIES_CAP ? QUOTA_MAX_ENTRIES_CAP
							      : max_entries;
	w.root_fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w.root_fd < 0)
		return 0; /* replaced since: as if missing */
	int r = quota_walk(&w, err);
	walk_free(&w);
	close(w.root_fd);
	if (r < 0)
		return -1;
	if (w.entries > w.max_entries)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "workspace entry limit exceeded %s: entries>%" PRIu64
				  " host_path=%s session_id=%s",
				  phase, w.max_entries, root, session_id);
	if (w.bytes > w.limit_bytes)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "workspace quota exceeded %s: used=%" PRIu64
				  " bytes limit=%" PRIu64 " bytes entries=%" PRIu64
				  " host_path=%s session_id=%s",
				  phase, w.bytes, w.limit_bytes, w.entries, root, session_id);
	return 0;
}

bool lb_box_workspace_quota_hard(const struct lb_box_spec *spec)
{
	return spec->workspace_quota_mb > 0 && !spec->host_path;
}

uint64_t box_quota_fsize(const struct lb_box_spec *spec)
{
	int64_t mb = spec->workspace_quota_mb;
	/* a hard quota needs no per-file cap: a write past it fails with ENOSPC, not SIGXFSZ */
	if (mb <= 0 || lb_box_workspace_quota_hard(spec))
		return 0;
	return (uint64_t)mb > UINT64_MAX / MIB ? 0 : (uint64_t)mb * MIB;
}
