/*
 * The output history of a detached run's process: the keeper appends every chunk of stdout and
 * stderr it reads to procs/<hash>.log; past BOX_LOG_HALF bytes that file becomes .log.1 (the
 * older half goes) and a new one starts, so the history is bounded yet always holds the latest
 * output.
 *
 * Each half starts with a header chunk (stream 0) holding its number, so a reader that falls
 * behind knows how many halves it missed. A rotation never leaves the name .log absent: the new
 * half is made aside as .log.new and renamed over .log once .log.1 is a link to the old one.
 * The history shares its filesystem with the sandbox's workspace, which a sandbox can fill: a
 * chunk written in part is cut off again, so the file stays whole chunks, and a reader still
 * takes a header that is none (a foreign write) as damage, never as output.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "box_internal.h"

void box_proc_log_path(const char *json, char *out, size_t len)
{
	size_t n = strlen(json);
	if (n > 5 && !strcmp(json + n - 5, ".json"))
		n -= 5;
	snprintf(out, len, "%.*s.log", (int)n, json);
}

/* path with suffix (.1, .new, .old). */
void box_log_sibling(const char *path, const char *suffix, char *out, size_t len)
{
	snprintf(out, len, "%s%s", path, suffix);
}

void box_proc_files_unlink(const char *json)
{
	static const char *const suffixes[] = {"", ".1", ".new", ".old"};
	char log[LB_PATH_BUF], p[LB_PATH_BUF + 8];
	box_proc_log_path(json, log, sizeof(log));
	unlink(json);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		box_log_sibling(log, suffixes[i], p, sizeof(p));
		unlink(p);
	}
}

void box_log_put_header(unsigned char h[8], int stream, size_t n)
{
	h[0] = (unsigned char)stream;
	h[1] = h[2] = h[3] = 0;
	h[4] = (unsigned char)(n >> 24);
	h[5] = (unsigned char)(n >> 16);
	h[6] = (unsigned char)(n >> 8);
	h[7] = (unsigned char)n;
}

int lb_box_log_header_parse(const unsigned char h[8], int *stream, size_t *n)
{
	size_t len = (size_t)h[4] << 24 | (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];
	if ((h[0] != 1 && h[0] != 2) || h[1] || h[2] || h[3] || len > LB_BOX_LOG_CHUNK_MAX)
		return -1;
	*stream = h[0];
	*n = len;
	return 0;
}

/* The header chunk of half number seq, at the start of an empty file. */
static int write_half_header(int fd, uint64_t seq)
{
	unsigned char b[BOX_LOG_HALF_HEADER];
	box_log_put_header(b, 0, 8);
	for (int i = 0; i < 8; i++)
		b[8 + i] = (unsigned char)(seq >> (56 - 8 * i));
	return write(fd, b, sizeof(b)) == (ssize_t)sizeof(b) ? 0 : -1;
}

int box_log_open(struct box_log *l, const char *json, struct lb_err **err)
{
	box_proc_log_path(json, l->path, sizeof(l->path));
	l->seq = 1;
	l->size = BOX_LOG_HALF_HEADER;
	l->fd = open(l->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (l->fd < 0)
		return lb_err_set(err, errno, "create %s", l->path);
	if (write_half_header(l->fd, l->seq) < 0) {
		int e = errno;
		close(l->fd);
		l->fd = -1;
		return lb_err_set(err, e, "write %s", l->path);
	}
	return 0;
}

/* .log.1 becomes the current half and .log the new one, .log present all along. */
static int publish(const struct box_log *l, const char *fresh)
{
	char old[LB_PATH_BUF + 8], prev[LB_PATH_BUF + 8];
	box_log_sibling(l->path, ".old", old, sizeof(old));
	box_log_sibling(l->path, ".1", prev, sizeof(prev));
	unlink(old); /* a crash's leftover */
	if (link(l->path, old) == 0) {
		if (rename(old, prev) < 0) {
			unlink(old);
			return -1;
		}
	} else if (rename(l->path, prev) < 0) { /* no hard links here: .log is absent a moment */
		return -1;
	}
	return rename(fresh, l->path);
}

/* No new half can be made: this one starts again, so the history stays bounded all the same. */
static void restart(struct box_log *l)
{
	l->seq++;
	if (ftruncate(l->fd, 0) == 0 && write_half_header(l->fd, l->seq) == 0)
		l->size = BOX_LOG_HALF_HEADER;
	else
		l->size = BOX_LOG_HALF; /* try again at the next chunk */
}

/* The current half is full: it becomes the previous one; each failure is tried again at the
 * next rotation. */
static void rotate(struct box_log *l)
{
	char fresh[LB_PATH_BUF + 8];
	box_log_sibling(l->path, ".new", fresh, sizeof(fresh));
	int fd = open(fresh, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0 && write_half_header(fd, l->seq + 1) == 0 && publish(l, fresh) == 0) {
		close(l->fd);
		l->fd = fd;
		l->seq++;
		l->size = BOX_LOG_HALF_HEADER;
		return;
	}
	if (fd >= 0) {
		close(fd);
		unlink(fresh);
	}
	restart(l);
}

void box_log_write(struct box_log *l, int stream, const char *buf, size_t n)
{
	if (l->fd < 0 || n == 0)
		return;
	if (n > LB_BOX_LOG_CHUNK_MAX)
		n = LB_BOX_LOG_CHUNK_MAX;
	if (l->size + 8 + n > BOX_LOG_HALF)
		rotate(l);
	unsigned char h[8];
	box_log_put_header(h, stream, n);
	struct iovec iov[2] = {{h, 8}, {(void *)buf, n}};
	ssize_t w = writev(l->fd, iov, 2);
	if (w == (ssize_t)(8 + n))
		l->size += 8 + n;
	else if (w > 0 && ftruncate(l->fd, (off_t)l->size) < 0)
		restart(l); /* a part of a chunk would misalign every later one */
}
