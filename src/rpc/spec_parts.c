/*
 * The request models inside a BoxSpec and beside it: BoxMountSpec (each of extra_mounts) and
 * BoxManagedProcessSpec (the "spec" of box_start_managed_process), coerced from JSON and
 * validated field by field as pydantic does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"
#include "rpc_internal.h"

static const char *const mode_names[] = {"none", "ro", "rw"};

int lb_rpc_coerce_mount_mode(const json_t *v, const char *loc, enum lb_box_mount_mode *out,
			     struct lb_err **err)
{
	int i;

	if (lb_rpc_coerce_enum(v, loc, mode_names, 3, &i, err) < 0)
		return -1;
	*out = (enum lb_box_mount_mode)i;
	return 0;
}

/* One BoxMountSpec: host_path, mount_path, mode, each coerced then validated in that order. */
static int coerce_mount(const json_t *v, size_t index, struct lb_box_mount *m, struct lb_err **err)
{
	const json_t *host = json_object_get(v, "host_path");
	const json_t *mount = json_object_get(v, "mount_path");
	const json_t *mode = json_object_get(v, "mode");
	char loc[64];

	m->mode = LB_BOX_MOUNT_RW;
	if (!json_is_object(v)) {
		snprintf(loc, sizeof(loc), "extra_mounts.%zu", index);
		return lb_box_type_error(
		    err, loc, "Input should be a valid dictionary or instance of BoxMountSpec");
	}
	snprintf(loc, sizeof(loc), "extra_mounts.%zu.host_path", index);
	if (!host)
		return lb_box_type_error(err, loc, "Field required");
	if (lb_rpc_coerce_str(host, loc, false, &m->host_path, err) < 0 ||
	    lb_box_check_host_path(&m->host_path, err) < 0)
		return -1;
	snprintf(loc, sizeof(loc), "extra_mounts.%zu.mount_path", index);
	if (!mount)
		return lb_box_type_error(err, loc, "Field required");
	if (lb_rpc_coerce_str(mount, loc, false, &m->mount_path, err) < 0 ||
	    lb_box_check_sandbox_path(&m->mount_path, "mount_path", err) < 0)
		return -1;
	snprintf(loc, sizeof(loc), "extra_mounts.%zu.mode", index);
	return mode ? lb_rpc_coerce_mount_mode(mode, loc, &m->mode, err) : 0;
}

int lb_rpc_coerce_mounts(const json_t *v, struct lb_box_mount **out, size_t *n, struct lb_err **err)
{
	size_t count = json_array_size(v);
	struct lb_box_mount *m = NULL;

	if (!json_is_array(v))
		return lb_box_type_error(err, "extra_mounts", "Input should be a valid list");
	if (count && !(m = calloc(count, sizeof(*m))))
		return lb_err_set(err, ENOMEM, "extra_mounts");
	for (size_t i = 0; i < count; i++) {
		if (coerce_mount(json_array_get(v, i), i, &m[i], err) < 0) {
			lb_box_mounts_free(m, count);
			return -1;
		}
	}
	lb_box_mounts_free(*out, *n);
	*out = m;
	*n = count;
	return 0;
}

typedef int (*proc_coerce_fn)(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err);

static int coerce_process_id(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "process_id", false, &s->process_id, err);
}

static int coerce_command(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "command", false, &s->command, err);
}

static int coerce_args(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str_list(v, "args", &s->args, err);
}

static int coerce_env(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_env(v, "env", &s->env, err);
}

static int coerce_cwd(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_str(v, "cwd", false, &s->cwd, err);
}

static int coerce_memory(const json_t *v, struct lb_box_proc_spec *s, struct lb_err **err)
{
	return lb_rpc_coerce_int(v, "memory_mb", &s->memory_mb, err);
}

/* BoxManagedProcessSpec's fields in declaration order. */
static const struct {
	const char *name;
	proc_coerce_fn coerce;
} proc_fields[] = {
    {"process_id", coerce_process_id},
    {"command", coerce_command},
    {"args", coerce_args},
    {"env", coerce_env},
    {"cwd", coerce_cwd},
    {"memory_mb", coerce_memory},
};

static int parse_proc_fields(const json_t *obj, struct lb_box_proc_spec *s, struct lb_err **err)
{
	for (size_t i = 0; i < sizeof(proc_fields) / sizeof(proc_fields[0]); i++) {
		const json_t *v = json_object_get(obj, proc_fields[i].name);
		if ((v && proc_fields[i].coerce(v, s, err) < 0) ||
		    lb_box_proc_spec_check_field(s, proc_fields[i].name, err) < 0)
			return -1;
	}
	return 0;
}

int lb_rpc_proc_spec_parse(const json_t *obj, struct lb_box_proc_spec *out, struct lb_err **err)
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
	if (parse_proc_fields(obj, out, err) < 0) {
		lb_box_proc_spec_free(out);
		return -1;
	}
	return 0;
}
