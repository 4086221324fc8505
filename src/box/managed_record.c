/* Managed-process records: SDIR/procs/<hash>.json, written by the keeper, read by everyone. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box/box_internal.h"
#include "lbbox/cleanup.h"
#include "lbbox/hash.h"
#include "lbbox/json_util.h"
#include "lbbox/util.h"

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
