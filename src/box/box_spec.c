/*
 * BoxSpec (spec §1.3) from a JSON object, the way pydantic validates LangBot's model: fields in
 * declaration order, each coerced (lax mode) and then run through its validator, the first
 * failure reported; unknown keys ignored. Validator failures carry LangBot's exact text
 * ("memory_mb must be at least 32"), type failures "<field>: <pydantic message>". lbbox adds
 * rules of its own to some fields (the third column of spec_fields): they apply to requests,
 * not to the records of sessions that exist already.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "box/box_internal.h"
#include "box_spec_internal.h"
#include "lbbox/box_spec.h"
#include "lbbox/cleanup.h"
#include "text_internal.h"

static const char *const net_names[] = {"off", "on"};

void lb_box_spec_init(struct lb_box_spec *out)
{
	*out = (struct lb_box_spec){
	    .cmd = strdup(""),
	    .workdir = strdup(LB_BOX_DEFAULT_MOUNT_PATH),
	    .timeout_sec = 30,
	    .network = LB_BOX_NET_OFF,
	    .env = lb_box_strv_new(),
	    .image = strdup(LB_BOX_DEFAULT_IMAGE),
	    .host_path_mode = LB_BOX_MOUNT_RW,
	    .mount_path = strdup(LB_BOX_DEFAULT_MOUNT_PATH),
	    .cpus = 1.0,
	    .memory_mb = 512,
	    .pids_limit = 128,
	    .read_only_rootfs = true,
	};
}

void lb_box_spec_free(struct lb_box_spec *spec)
{
	free(spec->cmd);
	free(spec->workdir);
	free(spec->session_id);
	lb_box_strv_free(spec->env);
	free(spec->image);
	free(spec->host_path);
	free(spec->mount_path);
	lb_box_mounts_free(spec->extra_mounts, spec->n_extra_mounts);
	free(spec->skill_name);
	*spec = (struct lb_box_spec){0};
}

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

/* Same rule on a filled struct (lb_box_spec_validate). */
static int workdir_from_mount_path(struct lb_box_spec *s, struct lb_err **err)
{
	if ((s->workdir && *s->workdir) || !s->mount_path || lb_box_py_is_blank(s->mount_path))
		return 0;
	char *wd = strdup(s->mount_path);
	if (!wd)
		return lb_err_set(err, ENOMEM, "workdir");
	free(s->workdir);
	s->workdir = wd;
	return 0;
}

static int check_cmd(struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_strip_field(&s->cmd, "cmd", err);
}

static int check_workdir(struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_check_sandbox_path(&s->workdir, "workdir", err);
}

static int check_timeout(struct lb_box_spec *s, struct lb_err **err)
{
	if (s->timeout_sec <= 0)
		return lb_err_box(err, LB_BOX_EVALIDATION, "timeout_sec must be greater than 0");
	return 0;
}

static int check_session_id(struct lb_box_spec *s, struct lb_err **err)
{
	if (!s->session_id)
		return lb_box_type_error(err, "session_id", "Field required");
	if (lb_box_strip_field(&s->session_id, "session_id", err) < 0)
		return -1;
	if (!*s->session_id)
		return lb_err_box(err, LB_BOX_EVALIDATION, "session_id must not be empty");
	return 0;
}

static int check_image(struct lb_box_spec *s, struct lb_err **err)
{
	if (!s->image) /* not stripped: LangBot keeps the image string as given */
		return lb_box_type_error(err, "image", "Input should be a valid string");
	return 0;
}

static int check_host_path(struct lb_box_spec *s, struct lb_err **err)
{
	return s->host_path ? lb_box_check_host_path(&s->host_path, err) : 0;
}

static int check_mount_path(struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_check_sandbox_path(&s->mount_path, "mount_path", err);
}

static int check_extra_mounts(struct lb_box_spec *s, struct lb_err **err)
{
	for (size_t i = 0; i < s->n_extra_mounts; i++)
		if (lb_box_check_mount(&s->extra_mounts[i], i, err) < 0)
			return -1;
	return 0;
}

static int check_skill_name(struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_check_skill_name(&s->skill_name, err);
}

static int check_cpus(struct lb_box_spec *s, struct lb_err **err)
{
	if (!isfinite(s->cpus))
		return lb_box_type_error(err, "cpus", "Input should be a finite number");
	if (s->cpus <= 0)
		return lb_err_box(err, LB_BOX_EVALIDATION, "cpus must be greater than 0");
	return 0;
}

static int check_memory(struct lb_box_spec *s, struct lb_err **err)
{
	if (s->memory_mb < 32)
		return lb_err_box(err, LB_BOX_EVALIDATION, "memory_mb must be at least 32");
	return 0;
}

static int check_pids(struct lb_box_spec *s, struct lb_err **err)
{
	if (s->pids_limit < 1)
		return lb_err_box(err, LB_BOX_EVALIDATION, "pids_limit must be at least 1");
	return 0;
}

static int check_quota(struct lb_box_spec *s, struct lb_err **err)
{
	if (s->workspace_quota_mb < 0)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "workspace_quota_mb must be greater than or equal to 0");
	return 0;
}

/* The after-validator: with a host mount, workdir must be mount_path or below it (plain prefix
 * test on the strings, no normalisation of "..", like LangBot). */
static int check_host_mount_consistency(const struct lb_box_spec *s, struct lb_err **err)
{
	size_t n = strlen(s->mount_path);

	if (!s->host_path || s->host_path_mode == LB_BOX_MOUNT_NONE)
		return 0;
	if (!strcmp(s->workdir, s->mount_path) ||
	    (!strncmp(s->workdir, s->mount_path, n) && s->workdir[n] == '/'))
		return 0;
	return lb_err_box(err, LB_BOX_EVALIDATION,
			  "workdir must stay under mount_path when host_path is provided");
}

/* ---- lbbox's own rules, beyond LangBot's model ---------------------------------------------- */

static int lbbox_timeout(struct lb_box_spec *s, struct lb_err **err)
{
	if (s->timeout_sec > LB_BOX_MAX_TIMEOUT_SEC)
		return lb_err_box(err, LB_BOX_EVALIDATION, "timeout_sec must be at most %lld",
				  LB_BOX_MAX_TIMEOUT_SEC);
	return 0;
}

static int lbbox_session_id(struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_check_id(s->session_id, "session_id", err);
}

static int lbbox_mount_path(struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_check_mount_target(s->mount_path, err);
}

static int lbbox_extra_mounts(struct lb_box_spec *s, struct lb_err **err)
{
	for (size_t i = 0; i < s->n_extra_mounts; i++)
		if (lb_box_check_mount_target(s->extra_mounts[i].mount_path, err) < 0)
			return -1;
	return 0;
}

/* An upper bound in MiB that still fits in 64 bits as bytes. */
static int at_most_mb(const char *field, int64_t v, struct lb_err **err)
{
	if (v > LB_BOX_MAX_MB)
		return lb_err_box(err, LB_BOX_EVALIDATION, "%s must be at most %lld", field,
				  (long long)LB_BOX_MAX_MB);
	return 0;
}

static int lbbox_memory(struct lb_box_spec *s, struct lb_err **err)
{
	return at_most_mb("memory_mb", s->memory_mb, err);
}

static int lbbox_pids(struct lb_box_spec *s, struct lb_err **err)
{
	if (s->pids_limit > LB_BOX_MAX_PIDS)
		return lb_err_box(err, LB_BOX_EVALIDATION, "pids_limit must be at most %d",
				  LB_BOX_MAX_PIDS);
	return 0;
}

/* lbbox exec caps every file at the quota (RLIMIT_FSIZE, in bytes) */
static int lbbox_quota(struct lb_box_spec *s, struct lb_err **err)
{
	return at_most_mb("workspace_quota_mb", s->workspace_quota_mb, err);
}

/* ---- coercion -------------------------------------------------------------------------------- */

static int coerce_cmd(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_str(v, "cmd", false, &s->cmd, err);
}

static int coerce_workdir(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_str(v, "workdir", false, &s->workdir, err);
}

static int coerce_timeout(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_int(v, "timeout_sec", &s->timeout_sec, err);
}

static int coerce_network(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	int i;

	if (lb_box_coerce_enum(v, "network", net_names, 2, &i, err) < 0)
		return -1;
	s->network = (enum lb_box_net)i;
	return 0;
}

static int coerce_session_id(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_str(v, "session_id", false, &s->session_id, err);
}

static int coerce_env(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_env(v, "env", &s->env, err);
}

static int coerce_image(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_str(v, "image", false, &s->image, err);
}

static int coerce_host_path(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_str(v, "host_path", true, &s->host_path, err);
}

static int coerce_host_path_mode(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_mount_mode(v, "host_path_mode", &s->host_path_mode, err);
}

static int coerce_mount_path(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_str(v, "mount_path", false, &s->mount_path, err);
}

static int coerce_extra_mounts(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_mounts(v, &s->extra_mounts, &s->n_extra_mounts, err);
}

static int coerce_skill_name(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_str(v, "skill_name", true, &s->skill_name, err);
}

static int coerce_persistent(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_bool(v, "persistent", &s->persistent, err);
}

static int coerce_cpus(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_float(v, "cpus", &s->cpus, err);
}

static int coerce_memory(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_int(v, "memory_mb", &s->memory_mb, err);
}

static int coerce_pids(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_int(v, "pids_limit", &s->pids_limit, err);
}

static int coerce_read_only(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_bool(v, "read_only_rootfs", &s->read_only_rootfs, err);
}

static int coerce_quota(const json_t *v, struct lb_box_spec *s, struct lb_err **err)
{
	return lb_box_coerce_int(v, "workspace_quota_mb", &s->workspace_quota_mb, err);
}

typedef int (*spec_coerce_fn)(const json_t *v, struct lb_box_spec *s, struct lb_err **err);
typedef int (*spec_check_fn)(struct lb_box_spec *s, struct lb_err **err);

/* BoxSpec's fields in declaration order, which decides which error pydantic reports first. */
static const struct {
	const char *name;
	spec_coerce_fn coerce;
	spec_check_fn check; /* NULL: the type is the whole validation */
	spec_check_fn lbbox; /* lbbox's own rule after LangBot's (requests only), or NULL */
} spec_fields[] = {
    {"cmd", coerce_cmd, check_cmd, NULL},
    {"workdir", coerce_workdir, check_workdir, NULL},
    {"timeout_sec", coerce_timeout, check_timeout, lbbox_timeout},
    {"network", coerce_network, NULL, NULL},
    {"session_id", coerce_session_id, check_session_id, lbbox_session_id},
    {"env", coerce_env, NULL, NULL},
    {"image", coerce_image, check_image, NULL},
    {"host_path", coerce_host_path, check_host_path, NULL},
    {"host_path_mode", coerce_host_path_mode, NULL, NULL},
    {"mount_path", coerce_mount_path, check_mount_path, lbbox_mount_path},
    {"extra_mounts", coerce_extra_mounts, check_extra_mounts, lbbox_extra_mounts},
    {"skill_name", coerce_skill_name, check_skill_name, NULL},
    {"persistent", coerce_persistent, NULL, NULL},
    {"cpus", coerce_cpus, check_cpus, NULL}, /* the host's range: box_engine_spec */
    {"memory_mb", coerce_memory, check_memory, lbbox_memory},
    {"pids_limit", coerce_pids, check_pids, lbbox_pids},
    {"read_only_rootfs", coerce_read_only, NULL, NULL},
    {"workspace_quota_mb", coerce_quota, check_quota, lbbox_quota},
};

static bool spec_allocated(const struct lb_box_spec *s)
{
	return s->cmd && s->workdir && s->env && s->image && s->mount_path;
}

static int spec_parse(const json_t *obj, bool lbbox_rules, struct lb_box_spec *out,
		      struct lb_err **err)
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
	for (size_t i = 0; i < sizeof(spec_fields) / sizeof(spec_fields[0]); i++) {
		const char *name = spec_fields[i].name;
		const json_t *v =
		    strcmp(name, "workdir") ? json_object_get(obj, name) : effective_workdir(obj);
		spec_check_fn check = spec_fields[i].check;
		spec_check_fn lbbox = lbbox_rules ? spec_fields[i].lbbox : NULL;
		if ((v && spec_fields[i].coerce(v, out, err) < 0) ||
		    (check && check(out, err) < 0) || (lbbox && lbbox(out, err) < 0)) {
			lb_box_spec_free(out);
			return -1;
		}
	}
	if (check_host_mount_consistency(out, err) < 0) {
		lb_box_spec_free(out);
		return -1;
	}
	return 0;
}

int lb_box_spec_from_json(const json_t *obj, struct lb_box_spec *out, struct lb_err **err)
{
	return spec_parse(obj, true, out, err);
}

int lb_box_spec_from_record(const json_t *obj, struct lb_box_spec *out, struct lb_err **err)
{
	return spec_parse(obj, false, out, err);
}

int lb_box_spec_validate(struct lb_box_spec *spec, struct lb_err **err)
{
	if (workdir_from_mount_path(spec, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(spec_fields) / sizeof(spec_fields[0]); i++) {
		spec_check_fn check = spec_fields[i].check, lbbox = spec_fields[i].lbbox;
		if ((check && check(spec, err) < 0) || (lbbox && lbbox(spec, err) < 0))
			return -1;
	}
	return check_host_mount_consistency(spec, err);
}
