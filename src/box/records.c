/* Session records on disk (RUNROOT/box/sessions/<key>/): names, locks, read and write. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/hash.h"
#include "lbbox/base/util.h"

int lb_box_init(struct lb_box *box, const struct lb_paths *paths, const char *owner,
		struct lb_err **err)
{
	memset(box, 0, sizeof(*box));
	box->paths = *paths;
	snprintf(box->dir, sizeof(box->dir), "%s/box", paths->runroot);
	if (owner && strlen(owner) >= sizeof(box->owner))
		return lb_err_set(err, EINVAL, "instance id too long");
	snprintf(box->owner, sizeof(box->owner), "%s", owner ? owner : "");
	box->limits = (struct lb_box_limits){.max_sessions = 64,
					     .max_managed_processes = 64,
					     .max_completed_processes = 256,
					     .completed_retention_sec = 300,
					     .session_ttl_sec = 300};
	snprintf(box->default_image, sizeof(box->default_image), "%s", LB_BOX_LOCAL_IMAGE);
	return 0;
}

void lb_box_fini(struct lb_box *box)
{
	box_status_free(box);
	lb_strvfreep(&box->allowed_roots);
}

int lb_box_set_allowed_roots(struct lb_box *box, char *const *roots, struct lb_err **err)
{
	size_t n = 0;
	for (char *const *r = roots; r && *r; r++)
		n++;
	char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return lb_err_set(err, ENOMEM, "allowed roots");
	for (size_t i = 0; i < n; i++) {
		if (!(v[i] = realpath(roots[i], NULL))) {
			int e = errno;
			lb_strvfreep(&v);
			return lb_err_box(err, LB_BOX_EVALIDATION, "allowed mount root %s: %s",
					  roots[i], strerror(e));
		}
	}
	lb_strvfreep(&box->allowed_roots);
	box->allowed_roots = v;
	return 0;
}

/* Ids that are safe file names are kept readable; anything else is hashed. */
void box_session_key(const char *id, char key[BOX_KEY_MAX])
{
	static const char safe[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
	size_t n = strlen(id);
	if (n > 0 && n < 100 && id[0] != '.' && strspn(id, safe) == n) {
		snprintf(key, BOX_KEY_MAX, "%s", id);
		return;
	}
	char hex[65];
	lb_sha256_hex(id, n, hex);
	snprintf(key, BOX_KEY_MAX, "~%.32s", hex);
}

void box_session_dir(const struct lb_box *box, const char *id, char *out, size_t len)
{
	char key[BOX_KEY_MAX];
	box_session_key(id, key);
	snprintf(out, len, "%s/sessions/%s", box->dir, key);
}

void lb_box_session_workspace(const struct lb_box *box, const char *id, char *out, size_t len)
{
	char sdir[LB_PATH_BUF];
	box_session_dir(box, id, sdir, sizeof(sdir));
	snprintf(out, len, "%s/workspace", sdir);
}

int box_flock(const char *dir, const char *name, int op, bool create, int *fd, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int f = open(path, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0600);
	if (f < 0)
		return lb_err_set(err, errno, "open %s", path);
	while (flock(f, op) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(f);
		return lb_err_set(err, e, "lock %s", path);
	}
	*fd = f;
	return 0;
}

int box_global_lock(struct lb_box *box, int *fd, struct lb_err **err)
{
	char sessions[LB_PATH_BUF];
	snprintf(sessions, sizeof(sessions), "%s/sessions", box->dir);
	if (lb_mkdir_p(sessions, 0700, err) < 0)
		return -1;
	return box_flock(box->dir, "lock", LOCK_EX, true, fd, err);
}

void box_touch(const char *sdir)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/exec.lock", sdir);
	utimensat(AT_FDCWD, path, NULL, 0);
}

static uint64_t mtime_ns(const char *sdir, const char *name)
{
	char path[LB_PATH_BUF];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", sdir, name);
	if (stat(path, &st) < 0)
		return 0;
	return (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
}

static int record_parse(json_t *j, struct lb_box_session *out, struct lb_err **err)
{
	const char *id = json_string_value(json_object_get(j, "session_id"));
	const char *sb = json_string_value(json_object_get(j, "sandbox"));
	const char *owner = json_string_value(json_object_get(j, "owner"));
	if (!id || !sb || strlen(sb) != 12)
		return lb_err_set(err, 0, "bad session record");
	snprintf(out->sandbox, sizeof(out->sandbox), "%s", sb);
	out->session_id = strdup(id);
	out->owner = strdup(owner ? owner : "");
	out->created_ns = (uint64_t)json_integer_value(json_object_get(j, "created_ns"));
	if (!out->session_id || !out->owner)
		return lb_err_set(err, ENOMEM, "session record");
	json_t *spec = json_deep_copy(json_object_get(j, "spec"));
	if (!spec)
		return lb_err_set(err, 0, "bad session record");
	/* the stored spec has no session_id of its own: give it the record's */
	json_object_set_new(spec, "session_id", json_string(id));
	int r = lb_box_spec_from_record(spec, &out->spec, err);
	json_decref(spec);
	return r;
}

int box_record_read_file(const struct lb_box *box, const char *key, const char *file,
			 struct lb_box_session *out, struct lb_err **err)
{
	char sdir[LB_PATH_BUF], path[LB_PATH_BUF];
	json_error_t jerr;
	snprintf(sdir, sizeof(sdir), "%s/sessions/%s", box->dir, key);
	snprintf(path, sizeof(path), "%s/%s", sdir, file);
	memset(out, 0, sizeof(*out)); /* the spec is filled by from_json; zero frees as nothing */
	json_t *j = json_load_file(path, 0, &jerr);
	if (!j)
		return lb_err_box(err, LB_BOX_ENOTFOUND, "session %s not found", key);
	int r = record_parse(j, out, err);
	json_decref(j);
	if (r < 0) {
		lb_box_session_free(out);
		return -1;
	}
	out->last_used_ns = mtime_ns(sdir, "exec.lock");
	return 0;
}

int box_record_read_dir(const struct lb_box *box, const char *key, struct lb_box_session *out,
			struct lb_err **err)
{
	return box_record_read_file(box, key, "session.json", out, err);
}

int box_record_read(const struct lb_box *box, const char *id, struct lb_box_session *out,
		    struct lb_err **err)
{
	char key[BOX_KEY_MAX];
	box_session_key(id, key);
	if (box_record_read_dir(box, key, out, NULL) == 0 && strcmp(out->session_id, id) == 0)
		return 0;
	lb_box_session_free(out);
	return lb_err_box(err, LB_BOX_ENOTFOUND, "session %s not found", id);
}

int box_record_write(const char *sdir, const struct lb_box_session *s, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	json_t *j =
	    json_pack("{s:s, s:s, s:s, s:I, s:o}", "session_id", s->session_id, "sandbox",
		      s->sandbox, "owner", s->owner ? s->owner : "", "created_ns",
		      (json_int_t)s->created_ns, "spec", lb_box_spec_session_json(&s->spec));
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return lb_err_set(err, ENOMEM, "session record");
	snprintf(path, sizeof(path), "%s/session.json", sdir);
	return lb_write_file_atomic(path, text, strlen(text), 0600, err);
}

void box_each_session(struct lb_box *box, box_session_fn fn, void *ctx)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/sessions", box->dir);
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char sdir[LB_PATH_BUF];
		if (de->d_name[0] == '.')
			continue;
		snprintf(sdir, sizeof(sdir), "%s/%s", path, de->d_name);
		fn(box, de->d_name, sdir, ctx);
	}
}

static void count_one(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	(*(size_t *)ctx)++;
}

/*
 * The number of session directories without reading them: a directory's link count is 2 plus
 * its subdirectories on tmpfs, ext2/3/4 and xfs (sessions/ holds nothing else). Elsewhere (btrfs
 * says 1; ext4 too past 65,000) they are counted one by one.
 */
size_t box_count_sessions(struct lb_box *box)
{
	char path[LB_PATH_BUF];
	struct statfs fs;
	struct stat st;
	size_t n = 0;
	snprintf(path, sizeof(path), "%s/sessions", box->dir);
	if (statfs(path, &fs) == 0 && stat(path, &st) == 0 && st.st_nlink >= 2 &&
	    (fs.f_type == TMPFS_MAGIC || fs.f_type == EXT4_SUPER_MAGIC ||
	     fs.f_type == XFS_SUPER_MAGIC))
		return (size_t)st.st_nlink - 2;
	box_each_session(box, count_one, &n);
	return n;
}

void lb_box_session_free(struct lb_box_session *s)
{
	if (!s)
		return;
	free(s->session_id);
	free(s->owner);
	lb_box_spec_free(&s->spec);
	memset(s, 0, sizeof(*s));
}
