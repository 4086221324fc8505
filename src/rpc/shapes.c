/* The JSON shapes LangBot sees (§1.4, §1.5, §1.7, §3.7), datetimes as pydantic writes them. */
#include <stdio.h>
#include <string.h>

#include "lbbox/box/box.h"
#include "lbbox/box/text.h"
#include "lbbox/base/json_util.h"
#include "lbbox/rpc/rpc.h"

#define BACKEND_NAME "lbbox"

static json_t *time_json(uint64_t ns)
{
	char buf[40];
	if (!ns)
		return json_null();
	lb_box_format_time(ns, buf, sizeof(buf));
	return json_string(buf);
}

json_t *lb_rpc_session_json(const struct lb_box_session *s)
{
	const struct lb_box_spec *b = &s->spec;
	char backend_id[32];
	snprintf(backend_id, sizeof(backend_id), "lbbox-%s", s->sandbox);
	json_t *j = json_object();
	json_object_set_new(j, "session_id", json_string(s->session_id));
	json_object_set_new(j, "backend_name", json_string(BACKEND_NAME));
	json_object_set_new(j, "backend_session_id", json_string(backend_id));
	json_object_set_new(j, "image", json_string(b->image));
	json_object_set_new(j, "network", json_string(lb_box_net_name(b->network)));
	json_object_set_new(j, "host_path", b->host_path ? json_string(b->host_path) : json_null());
	json_object_set_new(j, "host_path_mode",
			    json_string(lb_box_mount_mode_name(b->host_path_mode)));
	json_object_set_new(j, "mount_path", json_string(b->mount_path));
	json_object_set_new(j, "persistent", json_boolean(b->persistent));
	json_object_set_new(j, "cpus", json_real(b->cpus));
	json_object_set_new(j, "memory_mb", json_integer(b->memory_mb));
	json_object_set_new(j, "pids_limit", json_integer(b->pids_limit));
	json_object_set_new(j, "read_only_rootfs", json_boolean(b->read_only_rootfs));
	json_object_set_new(j, "workspace_quota_mb", json_integer(b->workspace_quota_mb));
	json_object_set_new(j, "created_at", time_json(s->created_ns));
	json_object_set_new(j, "last_used_at", time_json(s->last_used_ns));
	return j;
}

json_t *lb_rpc_proc_json(const struct lb_box_proc_info *p)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:b, s:o, s:o, s:o, s:s}",
			 "session_id", p->session_id, "process_id", p->process_id, "status",
			 p->running ? "running" : "exited", "command", p->command, "args",
			 lb_json_from_strv(p->args), "cwd", p->cwd, "env_keys",
			 lb_json_from_strv(p->env_keys), "attached", p->attached, "started_at",
			 time_json(p->started_ns), "exited_at", time_json(p->exited_ns),
			 "exit_code", p->has_exit_code ? json_integer(p->exit_code) : json_null(),
			 "stderr_preview", p->stderr_preview ? p->stderr_preview : "");
}

json_t *lb_rpc_exec_result_json(const char *session_id, const struct lb_box_exec_result *r)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:I}", "session_id", session_id,
			 "backend_name", BACKEND_NAME, "status",
			 r->timed_out ? "timed_out" : "completed", "exit_code",
			 r->has_exit_code ? json_integer(r->exit_code) : json_null(), "stdout",
			 r->out ? r->out : "", "stderr", r->err ? r->err : "", "duration_ms",
			 (json_int_t)r->duration_ms);
}

json_t *lb_rpc_session_details_json(struct lb_box *box, const char *id, struct lb_err **err)
{
	struct lb_box_session s;
	struct lb_box_proc_info *procs = NULL;
	size_t n = 0;
	if (lb_box_session_get(box, id, &s, err) < 0)
		return NULL;
	if (lb_box_proc_list(box, id, &procs, &n, err) < 0) {
		lb_box_session_free(&s);
		return NULL;
	}
	json_t *j = lb_rpc_session_json(&s);
	if (n) {
		json_t *m = json_object();
		for (size_t i = 0; i < n; i++) {
			json_object_set_new(m, procs[i].process_id, lb_rpc_proc_json(&procs[i]));
			if (!strcmp(procs[i].process_id, "default"))
				json_object_set_new(j, "managed_process",
						    lb_rpc_proc_json(&procs[i]));
		}
		json_object_set_new(j, "managed_processes", m);
	}
	lb_box_proc_list_free(procs, n);
	lb_box_session_free(&s);
	return j;
}
