/* Small safe I/O, parsing and path helpers shared by every layer. */
#ifndef LBBOX_UTIL_H
#define LBBOX_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbbox/base/err.h"

/* lbbox's own directories (--root, --runroot) are at most LB_PATH_ROOT_MAX bytes long
 * (lb_paths_secure refuses longer ones), so every path lbbox builds under them -- a session's
 * workspace, a managed process's socket -- fits LB_PATH_BUF, as does any PATH_MAX path. */
#define LB_PATH_ROOT_MAX 1024
#define LB_PATH_BUF	 (4096 + 512)

/* "64m", "1g", "512k", "1048576" (bytes; binary units) -> bytes. */
int lb_parse_size(const char *s, uint64_t *out, struct lb_err **err);
/* Non-negative decimal integer, the whole string. */
int lb_parse_u64(const char *s, uint64_t *out, struct lb_err **err);
/* A numeric uid or gid: decimal, 0 to 4294967294 ((uid_t)-1 is not an id). */
int lb_parse_id(const char *s, uint32_t *out, struct lb_err **err);

/* Reads a whole file (at most max bytes) into a NUL-terminated buffer. */
int lb_read_file(const char *path, size_t max, char **out, size_t *len, struct lb_err **err);
int lb_read_fileat(int dirfd, const char *path, size_t max, char **out, size_t *len,
		   struct lb_err **err);
/* Reads path below rootfd, resolved as inside a chroot (symlinks cannot leave it): a regular
 * file of at most max bytes, opened non-blocking (a FIFO or device is refused, never waited on). */
int lb_read_file_in_root(int rootfd, const char *path, size_t max, char **out, size_t *len,
			 struct lb_err **err);
/* Whether two open descriptors are the same file (or namespace): device and inode. */
bool lb_same_file(int a, int b);

/* Writes the whole buffer (open O_WRONLY|O_TRUNC; creates with mode when O_CREAT is in flags). */
int lb_write_fileat(int dirfd, const char *path, const char *buf, size_t len, int flags,
		    mode_t mode, struct lb_err **err);
/* Writes data to path atomically: temp file + fsync-less rename (state, caches). */
int lb_write_file_atomic(const char *path, const void *buf, size_t len, mode_t mode,
			 struct lb_err **err);
int lb_mkdir_p(const char *path, mode_t mode, struct lb_err **err);
/*
 * A directory only this user may enter (lbbox's store and runtime state; what = its name in
 * messages): created 0700 (missing parents 0755). An existing one must belong to this user; if
 * others may enter it, it is made 0700 when it is empty or every entry passes ours(name) (may be
 * NULL), and refused otherwise, as is one others may write to.
 */
int lb_private_dir(const char *path, const char *what, bool (*ours)(const char *name),
		   struct lb_err **err);
/* path.c: host paths that may not exist yet. */
/* The canonical path that path will have once its missing directories are created: realpath of
 * its deepest existing ancestor, then the missing components ("." and ".." there are refused). */
int lb_path_resolve_missing(const char *path, char **out, struct lb_err **err);
/* Creates the missing directories of canonical (as lb_path_resolve_missing returns it) walking
 * from / without following any symlink: one planted since the check makes it fail. */
int lb_mkdir_nofollow(const char *canonical, mode_t mode, struct lb_err **err);
/* Removes a directory tree (no crossing of mount points is attempted: callers own the tree). */
int lb_rm_rf(const char *path, struct lb_err **err);
/* Empties the directory dirfd (borrowed), never following a link nor crossing into another
 * filesystem (EXDEV), with a bounded number of descriptors whatever the tree's depth. An entry
 * it cannot remove is left and the rest still goes (unless a level 32 or more above it would
 * have to be read again: then it stops); -1 with the first error's errno. */
int lb_rm_children_fd(int dirfd);

/* Full write / read loops that retry on EINTR and short counts. */
int lb_write_all(int fd, const void *buf, size_t len);
ssize_t lb_read_all(int fd, void *buf, size_t len);

/* s for a terminal or a log line: control characters (below 0x20, 0x7f, and U+0080-U+009F,
 * whose CSI starts terminal escapes) and bytes that are not UTF-8 written as \xNN, the rest as
 * is; malloc'ed, NULL without memory. */
char *lb_escape_ctl(const char *s);
/* vprintf into a malloc'ed string, escaped as lb_escape_ctl does: text from requests (ids,
 * paths) becomes one line with no terminal escapes. NULL on ENOMEM. */
char *lb_vformat_line(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

struct pollfd;
#define LB_WAIT_MAX_FDS 5 /* a run's signals and lb_tty's */
/*
 * Waits until the process behind pidfd ends (true) or the deadline (lb_now_ns clock; 0: none)
 * passes (false), calling on_ready(ctx, fd) whenever one of fds[0..n) is ready for its events
 * (0: POLLIN), fd->revents saying how; it may set fd->fd to -1 to stop watching it, or change
 * fd->fd and fd->events for the next round. At most LB_WAIT_MAX_FDS of them.
 */
bool lb_wait_exit(int pidfd, struct pollfd *fds, size_t n, uint64_t deadline,
		  void (*on_ready)(void *ctx, struct pollfd *fd), void *ctx);

/* Monotonic clock in nanoseconds. */
uint64_t lb_now_ns(void);
/* poll(2)'s timeout until deadline (lb_now_ns clock; 0: none, -1), a minute at most so that a
 * deadline years away cannot overflow it (callers loop); -2 once the deadline has passed. */
int lb_poll_timeout(uint64_t deadline);
/* Wall clock (CLOCK_REALTIME) in nanoseconds since the epoch: times that outlive a boot. */
uint64_t lb_realtime_ns(void);
/* Random lowercase hex id of n chars (n <= 64) into buf (n + 1 bytes). */
int lb_random_hex(char *buf, size_t n, struct lb_err **err);

/* A wait status as a shell reports it: the exit code, or 128 + the signal. */
int lb_exit_code_of(int status);

/* The directory of the lbbox executable (where lbbox-init and lbbox-image live): LBBOX_SELF_DIR
 * when set (lbbox runs from a sealed view or copy then), else dirname(/proc/self/exe). */
int lb_self_dir(char *out, size_t len, struct lb_err **err);

#endif
