/*
 * Readers of a process's output history (proc_log.c writes it): lbbox logs and proc logs, from
 * the oldest half still there, following the halves as they rotate; a half they fell behind is
 * counted, a header that is none is damage, never output.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box_internal.h"

/* A half of the history and its number; -1 when it is absent or not (yet) one. */
static int open_half(const char *path, uint64_t *seq)
{
	unsigned char b[BOX_LOG_HALF_HEADER];
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
	r->off = BOX_LOG_HALF_HEADER;
	r->damaged = false;
}

/* Moves to the oldest half after the one being read; false when there is none yet. */
static bool next_half(struct lb_box_log_reader *r)
{
	char prev[LB_PATH_BUF + 8];
	uint64_t s1 = 0, s2 = 0;
	box_log_sibling(r->path, ".1", prev, sizeof(prev));
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
	unsigned char b[BOX_LOG_HALF_HEADER];
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
