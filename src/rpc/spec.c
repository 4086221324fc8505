/*
 * BoxSpec (spec §1.3) from a request's JSON object, the way pydantic validates LangBot's model:
 * fields in declaration order, each coerced (lax mode) and then run through its validators (the
 * box layer's), the first failure reported; unknown keys ignored. Type failures read
 * "<field>: <pydantic message>".
 */
#include <errno.h>
#include <string.h>

#include "lbbox/box/spec.h"
#include "lbbox/box/text.h"
#include "rpc_internal.h"

static int coerce_cmd(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "cmd", false, &s->cmd, err);
}

static int coerce_workdir(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "workdir", false, &s->workdir, err);
}

static int coerce_timeout(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_int(v, "timeout_sec", &s->timeout_sec, err);
}

static int coerce_network(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	static const char *const names[] = {"off", "on"};
	int i;
	if (lb_rpc_coerce_enum(v, "network", names, 2, &i, err) < 0)
		return -1;
	s->network = (enum lb_box_net)i;
	return 0;
}

static int coerce_session_id(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "session_id", false, &s->session_id, err);
}

static int coerce_env(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_env(v, "env", &s->env, err);
}

static int coerce_image(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "image", false, &s->image, err);
}

static int coerce_host_path(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "host_path", true, &s->host_path, err);
}

static int coerce_host_path_mode(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_mount_mode(v, "host_path_mode", &s->host_path_mode, err);
}

static int coerce_mount_path(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "mount_path", false, &s->mount_path, err);
}

static int coerce_extra_mounts(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_mounts(v, &s->extra_mounts, &s->n_extra_mounts, err);
}

static int coerce_skill_name(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "skill_name", true, &s->skill_name, err);
}

static int coerce_persistent(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_bool(v, "persistent", &s->persistent, err);
}

static int coerce_cpus(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_float(v, "cpus", &s->cpus, err);
}

static int coerce_memory(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_int(v, "memory_mb", &s->memory_mb, err);
}

static int coerce_pids(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_int(v, "pids_limit", &s->pids_limit, err);
}

static int coerce_read_only(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_bool(v, "read_only_rootfs", &s->read_only_rootfs, err);
}

static int coerce_quota(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_int(v, "workspace_quota_mb", &s->workspace_quota_mb, err);
}

typedef int (*coerce_fn)(const json_t *v, struct lb_box_spec *s, struct lb_err **err);

/* BoxSpec's fields in declaration order, which decides which error pydantic reports first. */
static const struct {
	const char *name;
	coerce_fn coerce;
} fields[] = {
    {"cmd", coerce_cmd},
    {"workdir", coerce_workdir},
    {"timeout_sec", coerce_timeout},
    {"network", coerce_network},
    {"session_id", coerce_session_id},
    {"env", coerce_env},
    {"image", coerce_image},
    {"host_path", coerce_host_path},
    {"host_path_mode", coerce_host_path_mode},
    {"mount_path", coerce_mount_path},
    {"extra_mounts", coerce_extra_mounts},
    {"skill_name", coerce_skill_name},
    {"persistent", coerce_persistent},
    {"cpus", coerce_cpus},
    {"memory_mb", coerce_memory},
    {"pids_limit", coerce_pids},
    {"read_only_rootfs", coerce_read_only},
    {"workspace_quota_mb", coerce_quota},
};

/* The before-validator: an absent / null / "" workdir follows a non-blank mount_path. */
static const json_t *effective_workdir(const json_t *obj)
{
	const json_t *wd = json_object_get(obj, "workdir");
	const json_t *mp = json_object_get(obj, "mount_path");
	bool unset = !wd || json_is_null(wd) || (json_is_string(wd) && !*json_string_value(wd));

	if (unset && json_is_string(mp) && !lb_box_py_is_blank(json_string_value(mp)))
		return mp;
	return wd;
}

static bool spec_allocated(const struct lb_box_spec *s)
{
	return s->cmd && s->workdir && s->env && s->image && s->mount_path;
}

static int parse_fields(const json_t *obj, struct lb_box_spec *out, struct lb_err **err)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *name = fields[i].name;
		const json_t *v =
		    strcmp(name, "workdir") ? json_object_get(obj, name) : effective_workdir(obj);
		if ((v && fields[i].coerce(v, out, err) < 0) ||
		    lb_box_spec_check_field(out, name, err) < 0)
			return -1;
	}
	return lb_box_spec_check_after(out, err);
}

int lb_rpc_spec_parse(const json_t *obj, struct lb_box_spec *out, struct lb_err **err)
{
	lb_box_spec_init(out);
	if (!spec_allocated(out)) {
		lb_box_spec_free(out);
		return lb_err_set(err, ENOMEM, "box spec");
	}
	if (!json_is_object(obj)) {
		lb_box_spec_free(out);
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "Input should be a valid dictionary or instance of BoxSpec");
	}
	if (parse_fields(obj, out, err) < 0) {
		lb_box_spec_free(out);
		return -1;
	}
	return 0;
}
