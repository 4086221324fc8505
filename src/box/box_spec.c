/*
 * BoxSpec (spec §1.3): defaults and LangBot's validators on the struct, field by field, with
 * LangBot's exact texts ("memory_mb must be at least 32"); the request parser (src/rpc/spec.c)
 * runs them as pydantic does, each right after its field is coerced. lbbox adds rules of its
 * own to some fields (the third column of spec_fields): they apply to requests, not to the
 * records of sessions that exist already.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "box_internal.h"
#include "box_spec_internal.h"
#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"
#include "text_internal.h"

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

/* The before-validator: an unset ("") workdir follows a non-blank mount_path. */
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

typedef int (*spec_check_fn)(struct lb_box_spec *s, struct lb_err **err);

/* BoxSpec's validators by field. */
static const struct {
	const char *name;
	spec_check_fn check; /* LangBot's; NULL: the type is the whole validation */
	spec_check_fn lbbox; /* lbbox's own rule after LangBot's (requests only), or NULL */
} spec_fields[] = {
    {"cmd", check_cmd, NULL},
    {"workdir", check_workdir, NULL},
    {"timeout_sec", check_timeout, lbbox_timeout},
    {"network", NULL, NULL},
    {"session_id", check_session_id, lbbox_session_id},
    {"env", NULL, NULL},
    {"image", check_image, NULL},
    {"host_path", check_host_path, NULL},
    {"host_path_mode", NULL, NULL},
    {"mount_path", check_mount_path, lbbox_mount_path},
    {"extra_mounts", check_extra_mounts, lbbox_extra_mounts},
    {"skill_name", check_skill_name, NULL},
    {"persistent", NULL, NULL},
    {"cpus", check_cpus, NULL}, /* the host's range: box_engine_spec */
    {"memory_mb", check_memory, lbbox_memory},
    {"pids_limit", check_pids, lbbox_pids},
    {"read_only_rootfs", NULL, NULL},
    {"workspace_quota_mb", check_quota, lbbox_quota},
};

#define N_FIELDS (sizeof(spec_fields) / sizeof(spec_fields[0]))

static int check_field(struct lb_box_spec *s, size_t i, bool lbbox_rules, struct lb_err **err)
{
	spec_check_fn check = spec_fields[i].check;
	spec_check_fn lbbox = lbbox_rules ? spec_fields[i].lbbox : NULL;
	return (check && check(s, err) < 0) || (lbbox && lbbox(s, err) < 0) ? -1 : 0;
}

int lb_box_spec_check_field(struct lb_box_spec *s, const char *field, struct lb_err **err)
{
	for (size_t i = 0; i < N_FIELDS; i++)
		if (!strcmp(spec_fields[i].name, field))
			return check_field(s, i, true, err);
	return lb_err_set(err, EINVAL, "BoxSpec has no field %s", field);
}

int lb_box_spec_check_after(const struct lb_box_spec *s, struct lb_err **err)
{
	return check_host_mount_consistency(s, err);
}

/* Every validator in declaration order (pydantic's), then the after-validator. */
static int validate(struct lb_box_spec *spec, bool lbbox_rules, struct lb_err **err)
{
	if (workdir_from_mount_path(spec, err) < 0)
		return -1;
	for (size_t i = 0; i < N_FIELDS; i++)
		if (check_field(spec, i, lbbox_rules, err) < 0)
			return -1;
	return check_host_mount_consistency(spec, err);
}

int lb_box_spec_validate(struct lb_box_spec *spec, struct lb_err **err)
{
	return validate(spec, true, err);
}

/* A session record: LangBot's rules only (lbbox's apply to requests, and may have grown since
 * the session was made). */
int box_spec_validate_record(struct lb_box_spec *spec, struct lb_err **err)
{
	return validate(spec, false, err);
}
