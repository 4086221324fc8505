/*
 * The output history of a detached run's process: the keeper appends every chunk of stdout and
 * stderr it reads to procs/<hash>.log; past BOX_LOG_HALF bytes that file becomes .log.1 (the
 * older half goes) and a new one starts, so the history is bounded yet always holds the latest
 * output. Readers follow the rename: the file they have open is complete once it is renamed.
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

void box_proc_files_unlink(const char *json)
{
	char log[LB_PATH_BUF], old[LB_PATH_BUF + 2];
	box_proc_log_path(json, log, sizeof(log));
	snprintf(old, sizeof(old), "%s.1", log);
	unlink(json);
	unlink(log);
	unlink(old);
}

int box_log_open(struct box_log *l, const char *json, struct lb_err **err)
{
	box_proc_log_path(json, l->path, sizeof(l->path));
	l->size = 0;
	l->fd = open(l->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	return l->fd < 0 ? lb_err_set(err, errno, "create %s", l->path) : 0;
}

/* The current half is full: it becomes the previous one. */
static void rotate(struct box_log *l)
{
	char old[LB_PATH_BUF + 2];
	snprintf(old, sizeof(old), "%s.1", l->path);
	if (rename(l->path, old) < 0)
		return; /* keep appending: better a longer history than none */
	close(l->fd);
	l->fd = open(l->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	l->size = 0;
}

void box_log_write(struct box_log *l, int stream, const char *buf, size_t n)
{
	if (l->fd < 0 || n == 0)
		return;
	if (n > LB_BOX_LOG_CHUNK_MAX)
		n = LB_BOX_LOG_CHUNK_MAX;
	if (l->size > 0 && l->size + 8 + n > BOX_LOG_HALF)
		rotate(l);
	unsigned char h[8] = {(unsigned char)stream,
			      0,
			      0,
			      0,
			      (unsigned char)(n >> 24),
			      (unsigned char)(n >> 16),
			      (unsigned char)(n >> 8),
			      (unsigned char)n};
	struct iovec iov[2] = {{h, 8}, {(void *)buf, n}};
	ssize_t w = l->fd >= 0 ? writev(l->fd, iov, 2) : -1;
	if (w > 0)
		l->size += (uint64_t)w;
}

/* ---- readers ---------------------------------------------------------------------------- */

int lb_box_proc_log_open(struct lb_box *box, const char *session_id, const char *process_id,
			 struct lb_box_log_reader *r, struct lb_err **err)
{
	struct lb_box_proc_info info;
	char sdir[LB_PATH_BUF], json[LB_PATH_BUF], old[LB_PATH_BUF + 2];
	struct stat cur, prev;
	*r = (struct lb_box_log_reader){.fd = -1, .old_fd = -1};
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
	snprintf(old, sizeof(old), "%s.1", r->path);
	r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return lb_err_set(err, errno, "open %s", r->path);
	r->old_fd = open(old, O_RDONLY | O_CLOEXEC);
	/* rotated between the two opens: .log.1 is the file already open */
	if (r->old_fd >= 0 && fstat(r->fd, &cur) == 0 && fstat(r->old_fd, &prev) == 0 &&
	    cur.st_ino == prev.st_ino) {
		close(r->old_fd);
		r->old_fd = -1;
	}
	return 0;
}

/* One whole chunk at *off of fd: 1; 0 when it is not (completely) there yet. */
static int read_chunk(int fd, uint64_t *off, int *stream, char *buf, size_t cap, size_t *n)
{
	unsigned char h[8];
	if (pread(fd, h, 8, (off_t)*off) != 8)
		return 0;
	size_t len = (size_t)h[4] << 24 | (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];
	if (len > cap || (len && pread(fd, buf, len, (off_t)(*off + 8)) != (ssize_t)len))
		return 0;
	*off += 8 + len;
	*stream = h[0];
	*n = len;
	return 1;
}

static bool rotated(const struct lb_box_log_reader *r)
{
	struct stat now, mine;
	return stat(r->path, &now) == 0 && fstat(r->fd, &mine) == 0 && now.st_ino != mine.st_ino;
}

int lb_box_log_next(struct lb_box_log_reader *r, int *stream, char *buf, size_t cap, size_t *n)
{
	if (r->old_fd >= 0) {
		if (read_chunk(r->old_fd, &r->old_off, stream, buf, cap, n))
			return 1;
		close(r->old_fd);
		r->old_fd = -1;
	}
	for (int i = 0; i < 4 && r->fd >= 0; i++) {
		if (read_chunk(r->fd, &r->off, stream, buf, cap, n))
			return 1;
		if (!rotated(r))
			return 0;
		/* renamed: nothing more is written to it, and the above read it to its end */
		if (read_chunk(r->fd, &r->off, stream, buf, cap, n))
			return 1;
		close(r->fd);
		r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
		r->off = 0;
	}
	return 0;
}

void lb_box_log_close(struct lb_box_log_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->old_fd >= 0)
		close(r->old_fd);
	r->fd = r->old_fd = -1;
}
