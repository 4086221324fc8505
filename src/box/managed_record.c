/* Managed-process records: SDIR/procs/<hash>.json, written by the keeper, read by everyone (a
 * dead keeper's record reads as exited). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/hash.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"

/* Hashed: any process_id is allowed, and the socket path must stay short (sun_path). */
void box_proc_key(const char *process_id, char key[32])
{
	char hex[65];
	lb_sha256_hex(process_id, strlen(process_id), hex);
	snprintf(key, 32, "%.16s", hex);
}

void box_proc_paths(const char *sdir, const char *process_id, char *json, char *sock, size_t len)
{
	char key[32];
	box_proc_key(process_id, key);
	if (json)
		snprintf(json, len, "%s/procs/%s.json", sdir, key);
	if (sock)
		snprintf(sock, len, "%s/procs/%s.sock", sdir, key);
}

void box_proc_tty_path(const char *sock, char *out, size_t len)
{
	size_t n = strlen(sock);
	if (n > 5 && !strcmp(sock + n - 5, ".sock"))
		n -= 5;
	snprintf(out, len, "%.*s.tty.sock", (int)n, sock);
}

void box_proc_follow_path(const char *sock, char *out, size_t len)
{
	size_t n = strlen(sock);
	if (n > 5 && !strcmp(sock + n - 5, ".sock"))
		n -= 5;
	snprintf(out, len, "%.*s.out.sock", (int)n, sock);
}

int box_proc_record_write(const char *path, const struct lb_box_proc_info *p, pid_t keeper,
			  uint64_t keeper_start, struct lb_err **err)
{
	json_t *j = json_pack(
	    "{s:s, s:s, s:s, s:o, s:s, s:o, s:b, s:b, s:I, s:I, s:o, s:s, s:i, s:I}", "session_id",
	    p->session_id, "process_id", p->process_id, "command", p->command, "args",
	    lb_json_from_strv(p->args), "cwd", p->cwd, "env_keys", lb_json_from_strv(p->env_keys),
	    "running", p->running, "attached", p->attached, "started_ns", (json_int_t)p->started_ns,
	    "exited_ns", (json_int_t)p->exited_ns, "exit_code",
	    p->has_exit_code ? json_integer(p->exit_code) : json_null(), "stderr_preview",
	    p->stderr_preview ? p->stderr_preview : "", "keeper", (int)keeper, "keeper_start",
	    (json_int_t)keeper_start);
	if (j && p->cgroup)
		json_object_set_new(j, "cgroup", json_string(p->cgroup));
	if (j && p->history) /* a detached run's: kept after its exit, its history readable */
		json_object_set_new(j, "history", json_true());
	if (j && p->pid > 0) {
		json_object_set_new(j, "pid", json_integer(p->pid));
		json_object_set_new(j, "pid_start", json_integer((json_int_t)p->pid_start));
	}
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return lb_err_set(err, ENOMEM, "process record");
	return lb_write_file_atomic(path, text, strlen(text), 0600, err);
}

static char *dup_str(json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));
	return strdup(s ? s : "");
}

int box_proc_record_read(const char *path, struct lb_box_proc_info *out, pid_t *keeper,
			 uint64_t *keeper_start, struct lb_err **err)
{
	json_error_t jerr;
	memset(out, 0, sizeof(*out));
	json_t *j = json_load_file(path, 0, &jerr);
	if (!j)
		return lb_err_set(err, errno, "read %s", path);
	out->session_id = dup_str(j, "session_id");
	out->process_id = dup_str(j, "process_id");
	out->command = dup_str(j, "command");
	out->cwd = dup_str(j, "cwd");
	out->stderr_preview = dup_str(j, "stderr_preview");
	out->cgroup = dup_str(j, "cgroup");
	out->args = lb_json_to_strv(json_object_get(j, "args"));
	out->env_keys = lb_json_to_strv(json_object_get(j, "env_keys"));
	out->running = json_is_true(json_object_get(j, "running"));
	out->attached = json_is_true(json_object_get(j, "attached"));
	out->history = json_is_true(json_object_get(j, "history"));
	out->pid = (pid_t)json_integer_value(json_object_get(j, "pid"));
	out->pid_start = (uint64_t)json_integer_value(json_object_get(j, "pid_start"));
	out->started_ns = (uint64_t)json_integer_value(json_object_get(j, "started_ns"));
	out->exited_ns = (uint64_t)json_integer_value(json_object_get(j, "exited_ns"));
	json_t *code = json_object_get(j, "exit_code");
	out->has_exit_code = json_is_integer(code);
	out->exit_code = (int)json_integer_value(code);
	*keeper = (pid_t)json_integer_value(json_object_get(j, "keeper"));
	*keeper_start = (uint64_t)json_integer_value(json_object_get(j, "keeper_start"));
	json_decref(j);
	if (!out->session_id || !out->process_id || !out->command || !out->cwd ||
	    !out->stderr_preview || !out->cgroup || !out->args || !out->env_keys) {
		lb_box_proc_info_free(out);
		return lb_err_set(err, ENOMEM, "read %s", path);
	}
	return 0;
}

void lb_box_proc_info_free(struct lb_box_proc_info *p)
{
	free(p->session_id);
	free(p->process_id);
	free(p->command);
	free(p->cwd);
	free(p->stderr_preview);
	free(p->cgroup);
	lb_strvfreep(&p->args);
	lb_strvfreep(&p->env_keys);
	memset(p, 0, sizeof(*p));
}

/* Keeper alive and still the same process; its pidfd in *pidfd when asked. */
bool box_keeper_alive(pid_t keeper, uint64_t start, int *pidfd)
{
	if (keeper <= 0 || lb_proc_starttime(keeper) != start || start == 0)
		return false;
	if (!pidfd)
		return true;
	*pidfd = (int)syscall(SYS_pidfd_open, keeper, 0);
	return *pidfd >= 0 && lb_proc_starttime(keeper) == start;
}

/* Reads a record; a keeper that died without recording the exit (SIGKILL) reads as exited. */
int box_proc_read(const char *path, struct lb_box_proc_info *out, pid_t *keeper, uint64_t *kstart,
		  struct lb_err **err)
{
	if (box_proc_record_read(path, out, keeper, kstart, err) < 0)
		return -1;
	if (!out->running || box_keeper_alive(*keeper, *kstart, NULL))
		return 0;
	/* the keeper may have recorded the exit and ended after the first read: read it again */
	lb_box_proc_info_free(out);
	if (box_proc_record_read(path, out, keeper, kstart, err) < 0)
		return -1;
	if (out->running) {
		out->running = false;
		out->attached = false;
	}
	return 0;
}

/* Calls fn on every record of the session directory. */
void box_each_proc(const char *sdir, box_each_proc_fn fn, void *ctx)
{
	char procs[LB_PATH_BUF];
	snprintf(procs, sizeof(procs), "%s/procs", sdir);
	_cleanup_closedir_ DIR *d = opendir(procs);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char json[LB_PATH_BUF];
		struct lb_box_proc_info info;
		pid_t keeper;
		uint64_t kstart;
		size_t len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(json, sizeof(json), "%s/%s", procs, de->d_name);
		if (box_proc_read(json, &info, &keeper, &kstart, NULL) < 0)
			continue;
		fn(json, &info, keeper, kstart, ctx);
		lb_box_proc_info_free(&info);
	}
}
