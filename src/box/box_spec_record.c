/*
 * A session's BoxSpec read back from its record (lb_box_spec_session_json plus its session_id):
 * lbbox's own format, so each field is read with its one JSON type, absent ones keep their
 * defaults, and LangBot's validators run again (lbbox's own rules judge requests only: a
 * session recorded before they tightened can still be read, listed and removed).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "box_internal.h"
#include "lbbox/box/spec.h"

static int bad(const char *key, struct lb_err **err)
{
	return lb_err_set(err, 0, "bad session record: %s", key);
}

static int take_str(const json_t *j, const char *key, bool nullable, char **out,
		    struct lb_err **err)
{
	const json_t *v = json_object_get(j, key);
	char *s = NULL;
	if (!v || (nullable && json_is_null(v))) {
		if (v)
			free(*out), *out = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return bad(key, err);
	if (!(s = strdup(json_string_value(v))))
		return lb_err_set(err, ENOMEM, "session record");
	free(*out);
	*out = s;
	return 0;
}

static int take_int(const json_t *j, const char *key, int64_t *out, struct lb_err **err)
{
	const json_t *v = json_object_get(j, key);
	if (v && !json_is_integer(v))
		return bad(key, err);
	if (v)
		*out = json_integer_value(v);
	return 0;
}

static int take_bool(const json_t *j, const char *key, bool *out, struct lb_err **err)
{
	const json_t *v = json_object_get(j, key);
	if (v && !json_is_boolean(v))
		return bad(key, err);
	if (v)
		*out = json_is_true(v);
	return 0;
}

static int take_mode(const json_t *v, const char *key, enum lb_box_mount_mode *out,
		     struct lb_err **err)
{
	static const enum lb_box_mount_mode modes[] = {LB_BOX_MOUNT_NONE, LB_BOX_MOUNT_RO,
						       LB_BOX_MOUNT_RW};
	for (size_t i = 0; v && i < 3; i++)
		if (json_is_string(v) &&
		    !strcmp(json_string_value(v), lb_box_mount_mode_name(modes[i])))
			return *out = modes[i], 0;
	return v ? bad(key, err) : 0;
}

static int take_network(const json_t *j, enum lb_box_net *out, struct lb_err **err)
{
	const json_t *v = json_object_get(j, "network");
	const char *s = json_string_value(v);
	if (!v)
		return 0;
	if (!s || (strcmp(s, "on") && strcmp(s, "off")))
		return bad("network", err);
	*out = strcmp(s, "on") ? LB_BOX_NET_OFF : LB_BOX_NET_ON;
	return 0;
}

static int take_mounts(const json_t *j, struct lb_box_spec *s, struct lb_err **err)
{
	const json_t *v = json_object_get(j, "extra_mounts"), *m;
	size_t i;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return bad("extra_mounts", err);
	if (json_array_size(v) &&
	    !(s->extra_mounts = calloc(json_array_size(v), sizeof(*s->extra_mounts))))
		return lb_err_set(err, ENOMEM, "session record");
	json_array_foreach(v, i, m)
	{
		struct lb_box_mount *o = &s->extra_mounts[s->n_extra_mounts++];
		o->mode = LB_BOX_MOUNT_RW;
		if (!json_is_object(m) || take_str(m, "host_path", false, &o->host_path, err) < 0 ||
		    take_str(m, "mount_path", false, &o->mount_path, err) < 0 ||
		    take_mode(json_object_get(m, "mode"), "extra_mounts", &o->mode, err) < 0)
			return err && *err ? -1 : bad("extra_mounts", err);
	}
	return 0;
}

static int take_fields(const json_t *j, struct lb_box_spec *s, struct lb_err **err)
{
	const json_t *cpus = json_object_get(j, "cpus");
	if (cpus && !json_is_number(cpus))
		return bad("cpus", err);
	if (cpus)
		s->cpus = json_number_value(cpus);
	/* not a session field: unset, it follows mount_path (the before-validator) */
	free(s->workdir);
	if (!(s->workdir = strdup("")))
		return lb_err_set(err, ENOMEM, "session record");
	if (take_str(j, "workdir", false, &s->workdir, err) < 0 ||
	    take_str(j, "session_id", false, &s->session_id, err) < 0 ||
	    take_str(j, "image", false, &s->image, err) < 0 ||
	    take_network(j, &s->network, err) < 0 ||
	    take_str(j, "host_path", true, &s->host_path, err) < 0 ||
	    take_mode(json_object_get(j, "host_path_mode"), "host_path_mode", &s->host_path_mode,
		      err) < 0 ||
	    take_str(j, "mount_path", false, &s->mount_path, err) < 0 ||
	    take_bool(j, "persistent", &s->persistent, err) < 0 ||
	    take_int(j, "memory_mb", &s->memory_mb, err) < 0 ||
	    take_int(j, "pids_limit", &s->pids_limit, err) < 0 ||
	    take_bool(j, "read_only_rootfs", &s->read_only_rootfs, err) < 0 ||
	    take_int(j, "workspace_quota_mb", &s->workspace_quota_mb, err) < 0)
		return -1;
	return take_mounts(j, s, err);
}

int lb_box_spec_from_record(const json_t *obj, struct lb_box_spec *out, struct lb_err **err)
{
	lb_box_spec_init(out);
	if (!out->cmd || !out->workdir || !out->env || !out->image || !out->mount_path) {
		lb_box_spec_free(out);
		return lb_err_set(err, ENOMEM, "session record");
	}
	if (!json_is_object(obj) || take_fields(obj, out, err) < 0 ||
	    box_spec_validate_record(out, err) < 0) {
		if (err && !*err)
			bad("not an object", err);
		lb_box_spec_free(out);
		return -1;
	}
	return 0;
}
