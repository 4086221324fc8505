/* BoxManagedProcessSpec (spec §1.6), the "spec" of box_start_managed_process. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "box_spec_internal.h"
#include "lbbox/box_spec.h"
#include "lbbox/cleanup.h"

void lb_box_proc_spec_init(struct lb_box_proc_spec *out)
{
	*out = (struct lb_box_proc_spec){
	    .process_id = strdup("default"),
	    .args = lb_box_strv_new(),
	    .env = lb_box_strv_new(),
	    .cwd = strdup(LB_BOX_DEFAULT_MOUNT_PATH),
	};
}

void lb_box_proc_spec_free(struct lb_box_proc_spec *spec)
{
	free(spec->process_id);
	free(spec->command);
	lb_box_strv_free(spec->args);
	lb_box_strv_free(spec->env);
	free(spec->cwd);
	*spec = (struct lb_box_proc_spec){0};
}

static int proc_command(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err)
{
	if (!v)
		return lb_box_type_error(err, "command", "Field required");
	if (lb_box_coerce_str(v, "command", false, &s->command, err) < 0 ||
	    lb_box_strip_field(&s->command, "command", err) < 0)
		return -1;
	if (!*s->command)
		return lb_err_box(err, LB_BOX_EVALIDATION, "command must not be empty");
	return 0;
}

/* Fields in declaration order: process_id, command, args, env, cwd, memory_mb. process_id has
 * no validator in LangBot (not even a strip; lbbox refuses control characters) and memory_mb
 * none either (0 = the session's; lbbox does not use it). */
static int proc_fields(const json_t *obj, struct lb_box_proc_spec *s, struct lb_err **err)
{
	const json_t *v;

	if ((v = json_object_get(obj, "process_id")) &&
	    lb_box_coerce_str(v, "process_id", false, &s->process_id, err) < 0)
		return -1;
	if (lb_box_check_id(s->process_id, "process_id", err) < 0)
		return -1;
	if (proc_command(json_object_get(obj, "command"), s, err) < 0)
		return -1;
	if ((v = json_object_get(obj, "args")) &&
	    lb_box_coerce_str_list(v, "args", &s->args, err) < 0)
		return -1;
	if ((v = json_object_get(obj, "env")) && lb_box_coerce_env(v, "env", &s->env, err) < 0)
		return -1;
	if ((v = json_object_get(obj, "cwd")) &&
	    lb_box_coerce_str(v, "cwd", false, &s->cwd, err) < 0)
		return -1;
	if (lb_box_check_sandbox_path(&s->cwd, "cwd", err) < 0)
		return -1;
	if ((v = json_object_get(obj, "memory_mb")) &&
	    lb_box_coerce_int(v, "memory_mb", &s->memory_mb, err) < 0)
		return -1;
	return 0;
}

int lb_box_proc_spec_from_json(const json_t *obj, struct lb_box_proc_spec *out, struct lb_err **err)
{
	lb_box_proc_spec_init(out);
	if (!out->process_id || !out->args || !out->env || !out->cwd) {
		lb_box_proc_spec_free(out);
		return lb_err_set(err, ENOMEM, "managed process spec");
	}
	if (!json_is_object(obj)) {
		lb_box_proc_spec_free(out);
		return lb_err_box(
		    err, LB_BOX_EVALIDATION,
		    "Input should be a valid dictionary or instance of BoxManagedProcessSpec");
	}
	if (proc_fields(obj, out, err) < 0) {
		lb_box_proc_spec_free(out);
		return -1;
	}
	return 0;
}
