/*
 * Detached runs: a persistent session plus its managed process "main", and run.json beside the
 * session's record naming it a run (what `lbbox ps` lists; a plain session has none). Creates
 * of runs take RUNROOT/box/runs.lock, so two `run -d --name X` never both get X.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/util.h"
#include "lbbox/box/run.h"

void lb_box_run_free(struct lb_box_run *r)
{
	free(r->name);
	free(r->image);
	free(r->workdir);
	lb_strvfreep(&r->argv);
	if (r->has_main)
		lb_box_proc_info_free(&r->main);
	memset(r, 0, sizeof(*r));
}

void lb_box_run_list_free(struct lb_box_run *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		lb_box_run_free(&v[i]);
	free(v);
}

static int write_run_json(const char *sdir, const struct lb_box_run_req *req, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	json_t *j =
	    json_pack("{s:s, s:s, s:s, s:I}", "name", req->bs->session_id, "image", req->image,
		      "workdir", req->proc->cwd, "created_ns", (json_int_t)lb_realtime_ns());
	json_t *cmd = json_array();
	json_array_append_new(cmd, json_string(req->proc->command));
	for (char **a = req->proc->args; a && *a; a++)
		json_array_append_new(cmd, json_string(*a));
	if (j)
		json_object_set_new(j, "argv", cmd);
	else
		json_decref(cmd);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return lb_err_set(err, ENOMEM, "run record");
	snprintf(path, sizeof(path), "%s/run.json", sdir);
	return lb_write_file_atomic(path, text, strlen(text), 0600, err);
}

/* The run of session directory sdir, main excepted; -1 when it is not one (or not NAME's). */
static int read_run_json(const char *sdir, const char *name, struct lb_box_run *out)
{
	char path[LB_PATH_BUF];
	json_error_t jerr;
	snprintf(path, sizeof(path), "%s/run.json", sdir);
	memset(out, 0, sizeof(*out));
	_cleanup_json_ json_t *j = json_load_file(path, 0, &jerr);
	const char *n = json_string_value(json_object_get(j, "name"));
	const char *image = json_string_value(json_object_get(j, "image"));
	const char *wd = json_string_value(json_object_get(j, "workdir"));
	if (!n || (name && strcmp(n, name) != 0))
		return -1;
	out->name = strdup(n);
	out->image = strdup(image ? image : "");
	out->workdir = strdup(wd ? wd : "/");
	out->argv = lb_json_to_strv(json_object_get(j, "argv"));
	out->created_ns = (uint64_t)json_integer_value(json_object_get(j, "created_ns"));
	if (!out->name || !out->image || !out->workdir || !out->argv) {
		lb_box_run_free(out);
		return -1;
	}
	return 0;
}

static void read_main(const char *sdir, struct lb_box_run *r)
{
	char json[LB_PATH_BUF];
	pid_t keeper;
	uint64_t kstart;
	box_proc_paths(sdir, LB_BOX_RUN_PROC, json, NULL, sizeof(json));
	r->has_main = box_proc_read(json, &r->main, &keeper, &kstart, NULL) == 0;
}

int lb_box_run_get(struct lb_box *box, const char *name, struct lb_box_run *out,
		   struct lb_err **err)
{
	char sdir[LB_PATH_BUF];
	box_session_dir(box, name, sdir, sizeof(sdir));
	if (read_run_json(sdir, name, out) < 0)
		return lb_err_set(err, 0, "no run named %s (see lbbox ps -a)", name);
	read_main(sdir, out);
	return 0;
}

struct list_ctx {
	struct lb_box_run *v;
	size_t n;
	bool oom;
};

static void list_one(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	struct list_ctx *l = ctx;
	struct lb_box_run r;
	if (l->oom || read_run_json(sdir, NULL, &r) < 0)
		return;
	struct lb_box_run *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
	if (!nv) {
		lb_box_run_free(&r);
		l->oom = true;
		return;
	}
	read_main(sdir, &r);
	l->v = nv;
	l->v[l->n++] = r;
}

static int newest_first(const void *a, const void *b)
{
	uint64_t x = ((const struct lb_box_run *)a)->created_ns;
	uint64_t y = ((const struct lb_box_run *)b)->created_ns;
	return x < y ? 1 : x > y ? -1 : 0;
}

int lb_box_run_list(struct lb_box *box, struct lb_box_run **out, size_t *n, struct lb_err **err)
{
	struct list_ctx l = {0};
	box_each_session(box, list_one, &l);
	if (l.oom) {
		lb_box_run_list_free(l.v, l.n);
		return lb_err_set(err, ENOMEM, "list runs");
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), newest_first);
	*out = l.v;
	*n = l.n;
	return 0;
}

/* Any session of that name, whole or half made, holds it. */
static bool name_in_use(struct lb_box *box, const char *name)
{
	char sdir[LB_PATH_BUF];
	box_session_dir(box, name, sdir, sizeof(sdir));
	return access(sdir, F_OK) == 0;
}

/* EEXIST (a generated name is retried), without strerror's words in the message; how to free
 * the name depends on what holds it: a run, or a plain session (`lbbox session create`). */
static int in_use(const char *sdir, const char *name, struct lb_err **err)
{
	struct lb_box_run r;
	bool run = read_run_json(sdir, name, &r) == 0;
	bool fresh = err && !*err;
	if (run)
		lb_box_run_free(&r);
	lb_err_set(err, 0, "the name %s is already in use: remove it (%s %s) or choose another",
		   name, run ? "lbbox rm" : "lbbox session rm", name);
	if (fresh && *err)
		(*err)->errnum = EEXIST;
	return -1;
}

/* The session, then run.json, then main; the session goes again on a failure. */
static int create_locked(struct lb_box *box, const struct lb_box_run_req *req, struct lb_err **err)
{
	const char *name = req->bs->session_id;
	struct lb_box_session s;
	struct lb_box_proc_info info;
	char sdir[LB_PATH_BUF];
	bool created = false;
	box_session_dir(box, name, sdir, sizeof(sdir));
	if (name_in_use(box, name))
		return in_use(sdir, name, err);
	req->bs->persistent = true; /* a run lives until it is removed, never reaped */
	req->proc->history = req->proc->direct = true;
	if (lb_box_session_get_or_create(box, req->bs, req->base, &s, &created, err) < 0)
		return -1;
	lb_box_session_free(&s);
	if (!created) /* a `session create` of the same name was quicker: it is not ours */
		return in_use(sdir, name, err);
	if (write_run_json(sdir, req, err) < 0 ||
	    lb_box_proc_start(box, name, req->proc, &info, err) < 0) {
		lb_box_session_delete(box, name, NULL);
		return -1;
	}
	lb_box_proc_info_free(&info);
	return 0;
}

int lb_box_run_create(struct lb_box *box, const struct lb_box_run_req *req, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	char sessions[LB_PATH_BUF];
	free(req->proc->process_id);
	if (!(req->proc->process_id = strdup(LB_BOX_RUN_PROC)))
		return lb_err_set(err, ENOMEM, "run");
	snprintf(sessions, sizeof(sessions), "%s/sessions", box->dir);
	if (lb_mkdir_p(sessions, 0700, err) < 0 ||
	    box_flock(box->dir, "runs.lock", LOCK_EX, true, &lock, err) < 0)
		return -1;
	return create_locked(box, req, err);
}
