/* Parsing, whole-file I/O and path helpers. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

int lb_parse_u64(const char *s, uint64_t *out, struct lb_err **err)
{
	char *end = NULL;

	if (!s || !isdigit((unsigned char)*s))
		return lb_err_set(err, 0, "invalid number '%s'", s ? s : "");
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return lb_err_set(err, 0, "invalid number '%s'", s);
	*out = v;
	return 0;
}

int lb_parse_size(const char *s, uint64_t *out, struct lb_err **err)
{
	char *end = NULL;
	uint64_t mult = 1;

	if (!s || !isdigit((unsigned char)*s))
		return lb_err_set(err, 0, "invalid size '%s'", s ? s : "");
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return lb_err_set(err, 0, "invalid size '%s'", s);
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'b':
		break;
	case 'k':
		mult = 1ULL << 10;
		break;
	case 'm':
		mult = 1ULL << 20;
		break;
	case 'g':
		mult = 1ULL << 30;
		break;
	case 't':
		mult = 1ULL << 40;
		break;
	default:
		return lb_err_set(err, 0, "invalid size '%s': unknown unit", s);
	}
	if (*end) {
		end++;
		/* accept "64m", "64mb", "64MiB" */
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end)
			return lb_err_set(err, 0, "invalid size '%s': unknown unit", s);
	}
	if (v > UINT64_MAX / mult)
		return lb_err_set(err, 0, "invalid size '%s': too large", s);
	*out = v * mult;
	return 0;
}

int lb_read_fileat(int dirfd, const char *path, size_t max, char **out, size_t *len,
		   struct lb_err **err)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "open %s", path);
	size_t cap = 4096, n = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return lb_err_set(err, ENOMEM, "read %s", path);
	for (;;) {
		if (n == cap) {
			if (cap >= max)
				return lb_err_set(err, EFBIG, "read %s", path);
			cap = cap * 2 > max ? max : cap * 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb)
				return lb_err_set(err, ENOMEM, "read %s", path);
			buf = nb;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return lb_err_set(err, errno, "read %s", path);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	*out = LB_TAKE_PTR(buf);
	return 0;
}

int lb_read_file_in_root(int rootfd, const char *path, size_t max, char **out, size_t *len,
			 struct lb_err **err)
{
	/* O_NONBLOCK: a FIFO planted in an image must not hang lbbox in open() or read() */
	struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "open %s", path);
	if (!S_ISREG(st.st_mode))
		return lb_err_set(err, 0, "%s is not a regular file", path);
	if ((uint64_t)st.st_size > max)
		return lb_err_set(err, EFBIG, "%s is larger than %zu bytes", path, max);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return lb_read_fileat(AT_FDCWD, proc, max, out, len, err);
}

int lb_parse_id(const char *s, uint32_t *out, struct lb_err **err)
{
	uint64_t v = 0;
	if (lb_parse_u64(s, &v, err) < 0)
		return -1;
	/* (uid_t)-1 means "unchanged" to setresuid: it would keep the caller's uid 0 */
	if (v >= UINT32_MAX)
		return lb_err_set(err, ERANGE, "id %s is out of range (0 to %u)", s,
				  UINT32_MAX - 1);
	*out = (uint32_t)v;
	return 0;
}

int lb_read_file(const char *path, size_t max, char **out, size_t *len, struct lb_err **err)
{
	return lb_read_fileat(AT_FDCWD, path, max, out, len, err);
}

int lb_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

ssize_t lb_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t n = 0;
	while (n < len) {
		ssize_t r = read(fd, p + n, len - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

int lb_write_fileat(int dirfd, const char *path, const char *buf, size_t len, int flags,
		    mode_t mode, struct lb_err **err)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | flags, mode);
	if (fd < 0)
		return lb_err_set(err, errno, "open %s", path);
	if (lb_write_all(fd, buf, len) < 0)
		return lb_err_set(err, errno, "write %s", path);
	return 0;
}

int lb_write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode,
			 struct lb_err **err)
{
	_cleanup_free_ char *tmp = NULL;
	if (asprintf(&tmp, "%s.tmp.%d", path, getpid()) < 0)
		return lb_err_set(err, ENOMEM, "write %s", path);
	if (lb_write_fileat(AT_FDCWD, tmp, buf, len, O_CREAT | O_TRUNC | O_EXCL, mode, err) < 0) {
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return lb_err_set(err, e, "rename %s", path);
	}
	return 0;
}

/* Every entry of the directory fd satisfies ours(name). Consumes nothing: fd stays open. */
static bool only_ours(int fd, bool (*ours)(const char *name))
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	bool ok = d != NULL;
	for (struct dirent *de; ok && (de = readdir(d));)
		ok = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		     (ours && ours(de->d_name));
	if (d)
		closedir(d);
	else if (dfd >= 0)
		close(dfd);
	return ok;
}

int lb_private_dir(const char *path, const char *what, bool (*ours)(const char *name),
		   struct lb_err **err)
{
	_cleanup_free_ char *parent = strdup(path);
	if (!parent)
		return lb_err_set(err, ENOMEM, "%s %s", what, path);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (lb_mkdir_p(parent, 0755, err) < 0)
			return lb_err_wrap(err, "%s %s", what, path);
	}
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "%s %s", what, path);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "%s %s", what, path);
	if (st.st_uid != geteuid())
		return lb_err_set(err, 0, "%s %s belongs to uid %u, not to this user (uid %u)",
				  what, path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (!(st.st_mode & 077))
		return 0;
	/* Open to others: tightened only when it is plainly lbbox's own (or empty); a directory
	 * others could write to, or one holding anything else, is not ours to chmod. */
	if ((st.st_mode & 022) || !only_ours(fd, ours))
		return lb_err_set(err, 0,
				  "%s %s is open to other users (mode %04o); make it private "
				  "(chmod 700) or choose another directory",
				  what, path, (unsigned)(st.st_mode & 07777));
	if (fchmod(fd, 0700) < 0)
		return lb_err_set(err, errno, "make %s %s private", what, path);
	return 0;
}

int lb_mkdir_p(const char *path, mode_t mode, struct lb_err **err)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return lb_err_set(err, ENOMEM, "mkdir %s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return lb_err_set(err, errno, "mkdir %s", p);
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "mkdir %s", p);
	return 0;
}

/* Directory streams a removal keeps open: the deepest levels', so that a wide directory is read
 * once; a level whose stream was given up is read again from its start on the way back. */
#define RM_OPEN_LEVELS 32

/* A directory the removal is in: its stream (NULL once given up), its name in its parent, and
 * its identity, which ".." must still have on the way back to it (a rename since would lead
 * out of the tree). */
struct rm_level {
	DIR *d;
	char name[256];
	dev_t dev;
	ino_t ino;
};

/* The stream of the directory fd (owned), rewound (fd's offset may be shared). */
static int rm_open(struct rm_level *l, int fd)
{
	struct stat st;
	l->d = NULL;
	if (fstat(fd, &st) < 0 || !(l->d = fdopendir(fd))) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	rewinddir(l->d);
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	return 0;
}

/* Back from level l + 1 to l, whose stream may have been given up: reopened through "..",
 * which must still be l. */
static int rm_back(struct rm_level *l)
{
	struct stat st;
	if (l->d)
		return 0;
	int up = openat(dirfd(l[1].d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (up < 0)
		return -1;
	if (fstat(up, &st) < 0 || st.st_dev != l->dev || st.st_ino != l->ino) {
		close(up);
		return errno = ESTALE, -1;
	}
	return rm_open(l, up);
}

/* Level depth + 1 entered: the stream of the shallowest open level beyond the window goes. */
static void rm_evict(struct rm_level *lv, size_t depth)
{
	if (depth >= RM_OPEN_LEVELS && lv[depth - RM_OPEN_LEVELS].d) {
		closedir(lv[depth - RM_OPEN_LEVELS].d);
		lv[depth - RM_OPEN_LEVELS].d = NULL;
	}
}

/* A removal in progress: its levels (0 the top), the deepest, and the first error met (it
 * goes on with the rest, as long as it never has to read a level again: that would meet the
 * same entry again). */
struct rm_walk {
	struct rm_level *lv;
	size_t depth, cap;
	int failed;
};

/* An entry that cannot be removed: noted, the removal goes on. */
static int rm_skip(struct rm_walk *w, int e)
{
	if (!w->failed)
		w->failed = e;
	return 0;
}

/* The level w->depth is read to its end: back to its parent, where its directory goes. */
static int rm_leave(struct rm_walk *w)
{
	struct rm_level *l = &w->lv[w->depth];
	if (w->failed && !l[-1].d)
		return errno = w->failed, -1;
	if (rm_back(l - 1) < 0)
		return -1;
	closedir(l->d);
	l->d = NULL;
	w->depth--;
	if (unlinkat(dirfd(l[-1].d), l->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return rm_skip(w, errno);
	return 0;
}

/* Into the directory name of level w->depth. */
static int rm_enter(struct rm_walk *w, const char *name)
{
	if (w->depth + 1 == w->cap) {
		struct rm_level *n = realloc(w->lv, w->cap * 2 * sizeof(*n));
		if (!n)
			return errno = ENOMEM, -1;
		w->lv = n;
		w->cap *= 2;
	}
	struct rm_level *sub = &w->lv[w->depth + 1];
	int fd = dirfd(w->lv[w->depth].d);
	snprintf(sub->name, sizeof(sub->name), "%s", name);
	if (rm_open(sub, openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : rm_skip(w, errno);
	rm_evict(w->lv, ++w->depth);
	return 0;
}

/* One step at the deepest level: an entry removed, a directory entered, or the level left.
 * 1 when the top level is done. */
static int rm_step(struct rm_walk *w)
{
	struct rm_level *l = &w->lv[w->depth];
	int fd = dirfd(l->d);
	struct stat st;
	errno = 0;
	struct dirent *e = readdir(l->d);
	if (!e)
		return errno ? -1 : w->depth == 0 ? 1 : rm_leave(w);
	if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
		return 0;
	if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : rm_skip(w, errno);
	if (!S_ISDIR(st.st_mode))
		return unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT ? rm_skip(w, errno) : 0;
	if (st.st_dev != w->lv[0].dev)
		return rm_skip(w, EXDEV);
	return rm_enter(w, e->d_name);
}

int lb_rm_children_fd(int dirfd)
{
	struct rm_walk w = {.cap = 16};
	int r, fd;
	if (!(w.lv = calloc(w.cap, sizeof(*w.lv))))
		return errno = ENOMEM, -1;
	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0 || rm_open(&w.lv[0], fd) < 0) {
		free(w.lv);
		return -1;
	}
	/* depth first with a bounded number of descriptors and no recursion: neither limits how
	 * deep a tree (which a sandbox may have built) can be */
	while ((r = rm_step(&w)) == 0)
		;
	int saved = r == 1 && w.failed ? w.failed : errno;
	for (size_t i = 0; i <= w.depth; i++)
		if (w.lv[i].d)
			closedir(w.lv[i].d);
	free(w.lv);
	errno = saved;
	return r == 1 && !w.failed ? 0 : -1;
}

int lb_rm_rf(const char *path, struct lb_err **err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "remove %s", path);
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) < 0 && errno != ENOENT)
			return lb_err_set(err, errno, "remove %s", path);
		return 0;
	}
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || lb_rm_children_fd(fd) < 0 || (rmdir(path) < 0 && errno != ENOENT))
		return lb_err_set(err, errno, "remove %s", path);
	return 0;
}

uint64_t lb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t lb_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int lb_random_hex(char *buf, size_t n, struct lb_err **err)
{
	unsigned char raw[32];
	static const char hex[] = "0123456789abcdef";

	if (n > 64)
		return lb_err_set(err, EINVAL, "random id too long");
	if (getrandom(raw, (n + 1) / 2, 0) < 0)
		return lb_err_set(err, errno, "getrandom");
	for (size_t i = 0; i < n; i++)
		buf[i] = hex[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
	buf[n] = '\0';
	return 0;
}

int lb_self_dir(char *out, size_t len, struct lb_err **err)
{
	const char *env = getenv("LBBOX_SELF_DIR");
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", out, len - 1);
	if (n <= 0)
		return lb_err_set(err, errno, "readlink /proc/self/exe");
	out[n] = '\0';
	char *slash = strrchr(out, '/');
	if (!slash)
		return lb_err_set(err, EINVAL, "lbbox's own path %s", out);
	*slash = '\0';
	return 0;
}

int lb_exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 when there is none (stray
 * continuation, overlong form, surrogate, beyond U+10FFFF, cut short); *cp its code point. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	if (!len || s[0] > 0xf4 || len > n)
		return 0;
	uint32_t c = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

char *lb_escape_ctl(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), o = 0;
	char *out = malloc(n * 4 + 1); /* every byte may become \xNN */
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		uint32_t cp = p[i];
		size_t len = p[i] < 0x80 ? 1 : utf8_seq(p + i, n - i, &cp);
		/* C0, DEL, C1, and the bidirectional overrides and isolates that reorder what a
		 * terminal shows (an id could pose as another) */
		bool control = cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
			       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
		if (len && !control) {
			memcpy(out + o, p + i, len);
			o += len, i += len;
			continue;
		}
		for (size_t k = 0; k < (len ? len : 1); k++, i++)
			o += (size_t)sprintf(out + o, "\\x%02x", p[i]);
	}
	out[o] = '\0';
	return out;
}

char *lb_vformat_line(const char *fmt, va_list ap)
{
	_cleanup_free_ char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		return NULL;
	return lb_escape_ctl(msg);
}

bool lb_same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}
