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

#define HALF_HEADER 16 /* the header chunk: 8 bytes of header, 8 of half number */

void box_proc_log_path(const char *json, char *out, size_t len)
{
	size_t n = strlen(json);
	if (n > 5 && !strcmp(json + n - 5, ".json"))
		n -= 5;
	snprintf(out, len, "%.*s.log", (int)n, json);
}

/* path with suffix (.1, .new, .old). */
static void sibling(const char *path, const char *suffix, char *out, size_t len)
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
		sibling(log, suffixes[i], p, sizeof(p));
		unlink(p);
	}
}

static void put_header(unsigned char h[8], int stream, size_t n)
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
	unsigned char b[HALF_HEADER];
	put_header(b, 0, 8);
	for (int i = 0; i < 8; i++)
		b[8 + i] = (unsigned char)(seq >> (56 - 8 * i));
	return write(fd, b, sizeof(b)) == (ssize_t)sizeof(b) ? 0 : -1;
}

int box_log_open(struct box_log *l, const char *json, struct lb_err **err)
{
	box_proc_log_path(json, l->path, sizeof(l->path));
	l->seq = 1;
	l->size = HALF_HEADER;
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
	sibling(l->path, ".old", old, sizeof(old));
	sibling(l->path, ".1", prev, sizeof(prev));
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
		l->size = HALF_HEADER;
	else
		l->size = BOX_LOG_HALF; /* try again at the next chunk */
}

/* The current half is full: it becomes the previous one; each failure is tried again at the
 * next rotation. */
static void rotate(struct box_log *l)
{
	char fresh[LB_PATH_BUF + 8];
	sibling(l->path, ".new", fresh, sizeof(fresh));
	int fd = open(fresh, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (fd >= 0 && write_half_header(fd, l->seq + 1) == 0 && publish(l, fresh) == 0) {
		close(l->fd);
		l->fd = fd;
		l->seq++;
		l->size = HALF_HEADER;
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
	put_header(h, stream, n);
	struct iovec iov[2] = {{h, 8}, {(void *)buf, n}};
	ssize_t w = writev(l->fd, iov, 2);
	if (w == (ssize_t)(8 + n))
		l->size += 8 + n;
	else if (w > 0 && ftruncate(l->fd, (off_t)l->size) < 0)
		restart(l); /* a part of a chunk would misalign every later one */
}

/* ---- readers ---------------------------------------------------------------------------- */

/* A half of the history and its number; -1 when it is absent or not (yet) one. */
static int open_half(const char *path, uint64_t *seq)
{
	unsigned char b[HALF_HEADER];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pread(fd, b, sizeof(b), 0) != (ssize_t)sizeof(b) || b[0] != 0 || b[1] || b[2] || b[3] ||
	    b[4] || b[5] || b[6] || b[7] != 8) {
		close(fd);
		return -1;
	}
	*seq = 0;
	for (int i = 0; i < 8; i++)
		*seq = *seq << 8 | b[8 + i];
	return fd;
}

static void use_half(struct lb_box_log_reader *r, int fd, uint64_t seq)
{
	if (r->seq && seq > r->seq + 1)
		r->skipped += seq - r->seq - 1;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = fd;
	r->seq = seq;
	r->off = HALF_HEADER;
	r->damaged = false;
}

/* Moves to the oldest half after the one being read; false when there is none yet. */
static bool next_half(struct lb_box_log_reader *r)
{
	char prev[LB_PATH_BUF + 8];
	uint64_t s1 = 0, s2 = 0;
	sibling(r->path, ".1", prev, sizeof(prev));
	int f1 = open_half(prev, &s1), f2 = open_half(r->path, &s2);
	bool ok1 = f1 >= 0 && s1 > r->seq, ok2 = f2 >= 0 && s2 > r->seq;
	int pick = ok1 && (!ok2 || s1 <= s2) ? f1 : ok2 ? f2 : -1;
	if (f1 >= 0 && f1 != pick)
		close(f1);
	if (f2 >= 0 && f2 != pick)
		close(f2);
	if (pick < 0)
		return false;
	use_half(r, pick, pick == f1 ? s1 : s2);
	return true;
}

int lb_box_proc_log_open(struct lb_box *box, const char *session_id, const char *process_id,
			 struct lb_box_log_reader *r, struct lb_err **err)
{
	struct lb_box_proc_info info;
	char sdir[LB_PATH_BUF], json[LB_PATH_BUF];
	struct stat st;
	*r = (struct lb_box_log_reader){.fd = -1, .bounded = true};
	if (lb_box_proc_get(box, session_id, process_id, &info, err) < 0)
		return -1;
	bool history = info.history;
	lb_box_proc_info_free(&info);
	if (!history)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "managed process %s keeps no output history (only a detached "
				  "run's does)",
				  process_id);
	box_session_dir(box, session_id, sdir, sizeof(sdir));
	box_proc_paths(sdir, process_id, json, NULL, sizeof(json));
	box_proc_log_path(json, r->path, sizeof(r->path));
	/* where the history ends now: what `logs` without -f shows */
	int fd = open_half(r->path, &r->end_seq);
	if (fd >= 0 && fstat(fd, &st) == 0)
		r->end_off = (uint64_t)st.st_size;
	if (fd >= 0)
		close(fd);
	/* none yet (being made, or restarted): lb_box_log_next looks again */
	if (next_half(r) && fd < 0) { /* the end unknown: at most this half and the next */
		r->end_seq = r->seq + 1;
		r->end_off = UINT64_MAX;
	}
	return 0;
}

/* One whole chunk at r->off: 1; 0 when it is not (completely) there yet; -1 when its header is
 * none. */
static int read_chunk(struct lb_box_log_reader *r, int *stream, char *buf, size_t *n)
{
	unsigned char h[8];
	size_t len;
	if (pread(r->fd, h, 8, (off_t)r->off) != 8)
		return 0;
	if (lb_box_log_header_parse(h, stream, &len) < 0)
		return -1;
	if (len && pread(r->fd, buf, len, (off_t)(r->off + 8)) != (ssize_t)len)
		return 0;
	r->off += 8 + len;
	*n = len;
	return 1;
}

/* Nothing more is written to the half being read: a newer one is .log, or it started again. */
static bool half_done(const struct lb_box_log_reader *r)
{
	struct stat now, mine;
	unsigned char b[HALF_HEADER];
	uint64_t seq = 0;
	if (fstat(r->fd, &mine) < 0 || pread(r->fd, b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return true;
	for (int i = 0; i < 8; i++)
		seq = seq << 8 | b[8 + i];
	if (seq != r->seq)
		return true; /* started again (restart) */
	return stat(r->path, &now) == 0 && now.st_ino != mine.st_ino;
}

static bool past_end(const struct lb_box_log_reader *r)
{
	return r->bounded &&
	       (r->seq > r->end_seq || (r->seq == r->end_seq && r->off >= r->end_off));
}

/* A chunk of the half being read: 1, 0 (none yet), and once a header is none, nothing more of
 * this half. */
static int chunk_of_half(struct lb_box_log_reader *r, int *stream, char *buf, size_t *n)
{
	if (r->damaged)
		return 0;
	int c = read_chunk(r, stream, buf, n);
	if (c < 0) {
		r->damaged = true;
		r->damaged_halves++;
		return 0;
	}
	return c;
}

int lb_box_log_next(struct lb_box_log_reader *r, int *stream, char *buf, size_t cap, size_t *n)
{
	(void)cap; /* >= LB_BOX_LOG_CHUNK_MAX, the most a header may say */
	for (int i = 0; i < 4; i++) {
		if ((r->fd < 0 && !next_half(r)) || past_end(r))
			return 0;
		if (chunk_of_half(r, stream, buf, n))
			return 1;
		if (!half_done(r))
			return 0;
		/* done: what was written before it was, then the next half */
		if (chunk_of_half(r, stream, buf, n))
			return 1;
		if (!next_half(r))
			return 0;
	}
	return 0;
}

void lb_box_log_close(struct lb_box_log_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}
