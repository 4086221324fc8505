/* Store handle: layout creation, the index lock, temp files and stale-temp cleanup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

static const char oci_layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
static const char empty_index[] =
    "{\"schemaVersion\":2,\"mediaType\":\"" LB_MT_OCI_INDEX "\",\"manifests\":[]}";

static int flock_retry(int fd, int op)
{
	int r;
	do
		r = flock(fd, op);
	while (r < 0 && errno == EINTR);
	return r;
}

int store_lock(struct lb_store *s, int *fd, struct lb_err **err)
{
	_cleanup_close_ int lfd =
	    openat(s->root_fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0)
		return lb_err_set(err, errno, "open %s/.lock", s->root);
	if (flock_retry(lfd, LOCK_EX) < 0)
		return lb_err_set(err, errno, "lock %s/.lock", s->root);
	*fd = LB_TAKE_FD(lfd);
	return 0;
}

int store_fsync_dir(int dirfd, const char *what, struct lb_err **err)
{
	if (fsync(dirfd) < 0)
		return lb_err_set(err, errno, "fsync %s", what);
	return 0;
}

/* After taking the lock, the name must still be ours: a concurrent cleanup may have locked and
 * removed it between our create and our flock. */
static bool tmp_still_linked(struct lb_store *s, int fd, const char *name)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && fstatat(s->tmp_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* 0 with *out locked, 1 when a concurrent cleanup removed the new directory before we could
 * open it (it could take the lock in between: try another name), -1 on error. */
static int tmp_create_once(struct lb_store *s, const char *name, bool dir, int *out,
			   struct lb_err **err)
{
	_cleanup_close_ int fd = -1;

	if (dir) {
		if (mkdirat(s->tmp_fd, name, 0700) < 0)
			return lb_err_set(err, errno, "mkdir %s/tmp/%s", s->root, name);
		fd = openat(s->tmp_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			return 1;
	} else {
		fd = openat(s->tmp_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0644);
	}
	if (fd < 0)
		return lb_err_set(err, errno, "create %s/tmp/%s", s->root, name);
	if (flock_retry(fd, LOCK_EX) < 0)
		return lb_err_set(err, errno, "lock %s/tmp/%s", s->root, name);
	*out = LB_TAKE_FD(fd);
	return 0;
}

int store_tmp_create(struct lb_store *s, const char *prefix, bool dir, int *fd,
		     char name[STORE_TMP_NAME], struct lb_err **err)
{
	char rnd[17];

	for (int attempt = 0; attempt < 8; attempt++) {
		int tfd = -1;
		if (lb_random_hex(rnd, 16, err) < 0)
			return -1;
		snprintf(name, STORE_TMP_NAME, "%s%s", prefix, rnd);
		int r = tmp_create_once(s, name, dir, &tfd, err);
		if (r < 0)
			return -1;
		if (r == 0 && tmp_still_linked(s, tfd, name)) {
			*fd = tfd;
			return 0;
		}
		if (tfd >= 0)
			close(tfd);
	}
	return lb_err_set(err, EAGAIN, "create a temp file in %s/tmp", s->root);
}

int store_write_atomic(struct lb_store *s, int dirfd, const char *name, const void *buf, size_t len,
		       struct lb_err **err)
{
	char tmp[STORE_TMP_NAME];
	_cleanup_close_ int fd = -1;

	if (store_tmp_create(s, "write-", false, &fd, tmp, err) < 0)
		return -1;
	if (lb_write_all(fd, buf, len) < 0 || fsync(fd) < 0) {
		lb_err_set(err, errno, "write %s", name);
		goto fail;
	}
	if (renameat(s->tmp_fd, tmp, dirfd, name) < 0) {
		lb_err_set(err, errno, "rename into %s", name);
		goto fail;
	}
	return store_fsync_dir(dirfd, name, err);
fail:
	unlinkat(s->tmp_fd, tmp, 0);
	return -1;
}

/* Writes name only when it does not exist yet: two first opens must not clobber each other. */
static int write_if_missing(struct lb_store *s, const char *name, const char *content,
			    struct lb_err **err)
{
	char tmp[STORE_TMP_NAME];
	_cleanup_close_ int fd = -1;

	if (faccessat(s->root_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	if (store_tmp_create(s, "init-", false, &fd, tmp, err) < 0)
		return -1;
	if (lb_write_all(fd, content, strlen(content)) < 0 || fsync(fd) < 0) {
		unlinkat(s->tmp_fd, tmp, 0);
		return lb_err_set(err, errno, "write %s/%s", s->root, name);
	}
	int r = linkat(s->tmp_fd, tmp, s->root_fd, name, 0);
	int e = errno;
	unlinkat(s->tmp_fd, tmp, 0);
	if (r < 0 && e != EEXIST)
		return lb_err_set(err, e, "create %s/%s", s->root, name);
	return 0;
}

/* A temp entry whose flock we can take belongs to no live process. */
static void tmp_clean_one(struct lb_store *s, const char *name)
{
	_cleanup_close_ int fd = openat(s->tmp_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0) {
		if (errno == ELOOP)
			unlinkat(s->tmp_fd, name, 0);
		return;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || fstat(fd, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(s->tmp_fd, name, 0);
		return;
	}
	_cleanup_free_ char *path = NULL;
	struct lb_err *e = NULL;
	if (asprintf(&path, "%s/tmp/%s", s->root, name) < 0)
		return;
	lb_rm_rf(path, &e);
	lb_err_free(&e);
}

static void tmp_clean(struct lb_store *s)
{
	int dfd = openat(s->tmp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		tmp_clean_one(s, de->d_name);
	}
}

static int open_dir(struct lb_store *s, const char *rel, int *fd, struct lb_err **err)
{
	_cleanup_free_ char *path = NULL;

	if (asprintf(&path, "%s/%s", s->root, rel) < 0)
		return lb_err_set(err, ENOMEM, "open store");
	if (lb_mkdir_p(path, 0755, err) < 0)
		return -1;
	*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return lb_err_set(err, errno, "open %s", path);
	return 0;
}

void lb_store_close(struct lb_store *s)
{
	if (!s)
		return;
	lb_closep(&s->root_fd);
	lb_closep(&s->blobs_fd);
	lb_closep(&s->tmp_fd);
	free(s->root);
	free(s);
}

static void store_closep(struct lb_store **s)
{
	lb_store_close(*s);
}

int lb_store_open(const char *root, struct lb_store **out, struct lb_err **err)
{
	_cleanup_(store_closep) struct lb_store *s = calloc(1, sizeof(*s));

	if (!s || !(s->root = strdup(root)))
		return lb_err_set(err, ENOMEM, "open store %s", root);
	s->root_fd = s->blobs_fd = s->tmp_fd = -1;
	if (open_dir(s, ".", &s->root_fd, err) < 0 ||
	    open_dir(s, "blobs/sha256", &s->blobs_fd, err) < 0 ||
	    open_dir(s, "tmp", &s->tmp_fd, err) < 0)
		return lb_err_wrap(err, "open store %s", root);
	tmp_clean(s);
	if (write_if_missing(s, "oci-layout", oci_layout, err) < 0 ||
	    write_if_missing(s, "index.json", empty_index, err) < 0)
		return lb_err_wrap(err, "open store %s", root);
	*out = LB_TAKE_PTR(s);
	return 0;
}

const char *lb_store_root(const struct lb_store *s)
{
	return s->root;
}

/* Opens the store only when one exists: a lookup must not create ROOT as a side effect. */
int lb_store_open_existing(const char *root, struct lb_store **s, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	struct stat st;
	snprintf(path, sizeof(path), "%s/index.json", root);
	if (stat(path, &st) < 0)
		return lb_err_set(err, 0, "no images in %s (lbbox load or lbbox pull first)", root);
	return lb_store_open(root, s, err);
}
