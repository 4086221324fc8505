/*
 * __file_chunk (§6.6): LangBot uploads a file in base64 pieces of 16 KiB before the zip skill
 * actions read it. Chunk 0 creates (truncates) the file, later chunks append; the file lives in
 * $LANGBOT_PLUGIN_FILE_STORAGE_DIR or ./data/temp/lbp (mode 0700), at most max_rpc_file_bytes.
 * As in LangBot's handler, an upload belongs to the connection that sent it (at most 128 each,
 * a key another connection holds is refused) and its file is removed when the connection
 * closes; also when the upload fails, and when it lies idle past the upload TTL. The zip skill
 * actions take their upload (server_upload_take): it is opened for them, then removed at once,
 * so it goes whatever the action's outcome. Answered in the loop: one small write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "server.h"

static struct upload *upload_find(struct peer *p, const char *key)
{
	for (size_t i = 0; i < p->n_uploads; i++)
		if (!strcmp(p->uploads[i].key, key))
			return &p->uploads[i];
	return NULL;
}

/* Its file removed, the upload forgotten. */
static void upload_drop(struct peer *p, struct upload *u)
{
	if (u->path)
		unlink(u->path);
	free(u->path);
	*u = p->uploads[--p->n_uploads];
	if (!p->n_uploads) {
		free(p->uploads);
		p->uploads = NULL;
	}
}

void server_uploads_drop(struct peer *p)
{
	while (p->n_uploads)
		upload_drop(p, &p->uploads[0]);
}

void server_uploads_expire(struct server *s)
{
	uint64_t now = lb_now_ns();
	for (struct peer *p = s->peers; p; p = p->next)
		for (size_t i = p->n_uploads; i-- > 0;)
			if (now - p->uploads[i].touched > s->upload_ttl_ns)
				upload_drop(p, &p->uploads[i]);
}

static bool held_elsewhere(struct server *s, const struct peer *p, const char *key)
{
	for (struct peer *o = s->peers; o; o = o->next)
		if (o != p && upload_find(o, key))
			return true;
	return false;
}

/* Chunk 0: the upload of key, new or restarted from zero, at path. */
static struct upload *upload_start(struct server *s, struct peer *p, const char *key,
				   const char *path, struct lb_err **err)
{
	struct upload *u = upload_find(p, key);
	if (!u && held_elsewhere(s, p, key))
		return lb_err_box(err, "ValueError", "file_key %s is in use by another connection",
				  key),
		       NULL;
	if (!u && p->n_uploads >= SERVER_MAX_UPLOADS)
		return lb_err_box(err, "ValueError", "Active file transfer capacity reached"), NULL;
	if (!u) {
		struct upload *v = realloc(p->uploads, (p->n_uploads + 1) * sizeof(*v));
		char *copy = strdup(path);
		if (v)
			p->uploads = v;
		if (!v || !copy) {
			free(copy);
			return lb_err_set(err, ENOMEM, "upload"), NULL;
		}
		u = &p->uploads[p->n_uploads++];
		*u = (struct upload){.path = copy};
		snprintf(u->key, sizeof(u->key), "%s", key);
	}
	u->received = 0;
	u->complete = false;
	return u;
}

static int storage_dir(char *out, size_t len, struct lb_err **err)
{
	const char *env = getenv("LANGBOT_PLUGIN_FILE_STORAGE_DIR");
	snprintf(out, len, "%s", env && *env ? env : "data/temp/lbp");
	if (lb_mkdir_p(out, 0700, err) < 0)
		return -1;
	return 0;
}

/* The chunk's bytes into the upload's file: created by chunk 0, appended to afterwards. */
static int store(struct upload *u, int64_t index, int64_t length, const unsigned char *bytes,
		 size_t n, struct lb_err **err)
{
	if ((int64_t)(u->received + n) > length)
		return lb_err_box(err, "ValueError", "file %s is longer than file_length %lld",
				  u->key, (long long)length);
	int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (index == 0 ? O_CREAT | O_TRUNC : O_APPEND);
	_cleanup_close_ int fd = open(u->path, flags, 0600);
	if (fd < 0 || lb_write_all(fd, bytes, n) < 0)
		return lb_err_set(err, errno, "write %s", u->path);
	u->received += n;
	u->touched = lb_now_ns();
	return 0;
}

/* The upload a chunk goes to: chunk 0 starts it, the others continue one in progress. */
static struct upload *upload_of(struct server *s, struct peer *p, const struct lb_rpc_chunk *c,
				struct lb_err **err)
{
	char dir[LB_PATH_BUF], path[LB_PATH_BUF];
	struct upload *u = c->index ? upload_find(p, c->key) : NULL;
	if (c->index && (!u || u->complete))
		return lb_err_box(err, "ValueError", "no transfer in progress for file_key %s",
				  c->key),
		       NULL;
	if (c->index)
		return u;
	if (storage_dir(dir, sizeof(dir), err) < 0)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, c->key);
	return upload_start(s, p, c->key, path, err);
}

static int write_chunk(struct server *s, struct peer *p, json_t *data, struct lb_err **err)
{
	struct lb_rpc_chunk c = {0};
	if (lb_rpc_chunk_parse(&s->rt, data, &c, err) < 0)
		return -1;
	_cleanup_free_ unsigned char *bytes = c.bytes;
	struct upload *u = upload_of(s, p, &c, err);
	if (!u)
		return -1;
	if (store(u, c.index, c.length, bytes, c.n, err) < 0) {
		upload_drop(p, u); /* a failed upload cannot go on: its file goes */
		return -1;
	}
	u->complete = c.index == c.amount - 1;
	return 0;
}

int server_upload_take(struct peer *p, const json_t *data)
{
	const char *key = json_string_value(json_object_get(data, "file_key"));
	struct upload *u = key ? upload_find(p, key) : NULL;
	if (!u)
		return -1;
	/* an upload still missing chunks is no file to read: it goes all the same */
	int fd = u->complete ? open(u->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	upload_drop(p, u);
	return fd;
}

json_t *server_file_chunk(struct server *s, struct peer *p, json_t *data, json_t *seq_id)
{
	struct lb_err *err = NULL;
	server_uploads_expire(s);
	if (write_chunk(s, p, data, &err) < 0) {
		json_t *r = lb_rpc_reply_err(seq_id, err, "ValueError");
		lb_err_free(&err);
		return r;
	}
	return lb_rpc_reply_ok(seq_id, json_object());
}
