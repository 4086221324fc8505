/*
 * What a session remembers of the spec it was created with (spec §3.3): the eleven fields that
 * must match on reuse, the extra-mount signature that forces a recreate, and their JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/box/spec.h"

const char *lb_box_net_name(enum lb_box_net n)
{
	return n == LB_BOX_NET_ON ? "on" : "off";
}

const char *lb_box_mount_mode_name(enum lb_box_mount_mode m)
{
	switch (m) {
	case LB_BOX_MOUNT_NONE:
		return "none";
	case LB_BOX_MOUNT_RO:
		return "ro";
	default:
		return "rw";
	}
}

/* The shortest decimal digits that read back to d (as CPython's dtoa), and the exponent of the
 * first one: 1.5 -> "15", 0; 0.001 -> "1", -3. */
static int shortest_digits(double d, char *digits, size_t len)
{
	char sci[40];
	size_t nd = 0;

	double mag = d < 0 ? -d : d; /* no fabs(): this library does not link libm */

	for (int prec = 0; prec < 17; prec++) {
		snprintf(sci, sizeof(sci), "%.*e", prec, mag);
		if (strtod(sci, NULL) == mag)
			break;
	}
	const char *p = sci; /* "D[.DDD]e[+-]XX" */
	for (; *p != 'e' && nd + 1 < len; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	return atoi(p + 1);
}

/* Python's repr(float): positional when the exponent is in [-4, 16) ("0.0001", "2.0",
 * "1234.5"), else scientific ("1e-05", "1.5e+16"); "inf", "nan". */
static void py_float_repr(double d, char *buf, size_t len)
{
	char digits[24], body[64];
	size_t o = 0;

	if (isnan(d) || isinf(d)) {
		snprintf(buf, len, "%s", isnan(d) ? "nan" : d < 0 ? "-inf" : "inf");
		return;
	}
	int e = shortest_digits(d, digits, sizeof(digits));
	int nd = (int)strlen(digits);
	if (e < -4 || e >= 16) {
		snprintf(body, sizeof(body), "%c%s%se%c%02d", digits[0], nd > 1 ? "." : "",
			 digits + 1, e < 0 ? '-' : '+', abs(e));
	} else if (e < 0) {
		o += (size_t)snprintf(body, sizeof(body), "0.");
		for (int i = 0; i < -e - 1; i++)
			body[o++] = '0';
		snprintf(body + o, sizeof(body) - o, "%s", digits);
	} else {
		for (int i = 0; i <= e; i++) /* integer part, zero-padded past the digits */
			body[o++] = i < nd ? digits[i] : '0';
		snprintf(body + o, sizeof(body) - o, ".%s", nd > e + 1 ? digits + e + 1 : "0");
	}
	snprintf(buf, len, "%s%s", signbit(d) ? "-" : "", body);
}

static int conflict(struct lb_err **err, const char *session_id, const char *field,
		    const char *value)
{
	return lb_err_box(err, LB_BOX_ECONFLICT, "Box session %s already exists with %s=%s",
			  session_id, field, value);
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static const char *py_bool(bool b)
{
	return b ? "True" : "False";
}

/* The displayed value is LangBot's f"{value}" of the stored field (enum .value, None, True). */
int lb_box_spec_check_compatible(const struct lb_box_spec *stored,
				 const struct lb_box_spec *requested, const char *session_id,
				 struct lb_err **err)
{
	const struct lb_box_spec *s = stored, *r = requested;
	char num[64];

	if (s->network != r->network)
		return conflict(err, session_id, "network", lb_box_net_name(s->network));
	if (!str_eq(s->image, r->image))
		return conflict(err, session_id, "image", s->image ? s->image : "None");
	if (!str_eq(s->host_path, r->host_path))
		return conflict(err, session_id, "host_path", s->host_path ? s->host_path : "None");
	if (s->host_path_mode != r->host_path_mode)
		return conflict(err, session_id, "host_path_mode",
				lb_box_mount_mode_name(s->host_path_mode));
	if (!str_eq(s->mount_path, r->mount_path))
		return conflict(err, session_id, "mount_path",
				s->mount_path ? s->mount_path : "None");
	if (s->persistent != r->persistent)
		return conflict(err, session_id, "persistent", py_bool(s->persistent));
	if (s->cpus != r->cpus) { /* numeric, so 1 and 1.0 are the same */
		py_float_repr(s->cpus, num, sizeof(num));
		return conflict(err, session_id, "cpus", num);
	}
	const struct {
		const char *name;
		int64_t a, b;
	} ints[] = {
	    {"memory_mb", s->memory_mb, r->memory_mb},
	    {"pids_limit", s->pids_limit, r->pids_limit},
	};
	for (size_t i = 0; i < 2; i++) {
		if (ints[i].a == ints[i].b)
			continue;
		snprintf(num, sizeof(num), "%lld", (long long)ints[i].a);
		return conflict(err, session_id, ints[i].name, num);
	}
	if (s->read_only_rootfs != r->read_only_rootfs)
		return conflict(err, session_id, "read_only_rootfs", py_bool(s->read_only_rootfs));
	if (s->workspace_quota_mb != r->workspace_quota_mb) {
		snprintf(num, sizeof(num), "%lld", (long long)s->workspace_quota_mb);
		return conflict(err, session_id, "workspace_quota_mb", num);
	}
	return 0;
}

static bool mount_in(const struct lb_box_mount *m, const struct lb_box_spec *s)
{
	for (size_t i = 0; i < s->n_extra_mounts; i++) {
		const struct lb_box_mount *o = &s->extra_mounts[i];
		if (o->mode == m->mode && str_eq(o->host_path, m->host_path) &&
		    str_eq(o->mount_path, m->mount_path))
			return true;
	}
	return false;
}

/* Every bind-mounted (mode != none) mount of a is in b. */
static bool mounts_subset(const struct lb_box_spec *a, const struct lb_box_spec *b)
{
	for (size_t i = 0; i < a->n_extra_mounts; i++)
		if (a->extra_mounts[i].mode != LB_BOX_MOUNT_NONE &&
		    !mount_in(&a->extra_mounts[i], b))
			return false;
	return true;
}

bool lb_box_extra_mounts_equal(const struct lb_box_spec *a, const struct lb_box_spec *b)
{
	return mounts_subset(a, b) && mounts_subset(b, a);
}

static json_t *mounts_json(const struct lb_box_spec *spec)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < spec->n_extra_mounts; i++) {
		const struct lb_box_mount *m = &spec->extra_mounts[i];
		json_t *o = json_pack("{s:s?, s:s?, s:s}", "host_path", m->host_path, "mount_path",
				      m->mount_path, "mode", lb_box_mount_mode_name(m->mode));
		if (json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* The session fields in BoxSessionInfo's order (§1.4), then extra_mounts; null kept. */
json_t *lb_box_spec_session_json(const struct lb_box_spec *spec)
{
	json_t *mounts = mounts_json(spec);

	if (!mounts)
		return NULL;
	return json_pack(
	    "{s:s?, s:s, s:s?, s:s, s:s?, s:b, s:f, s:I, s:I, s:b, s:I, s:o}", "image", spec->image,
	    "network", lb_box_net_name(spec->network), "host_path", spec->host_path,
	    "host_path_mode", lb_box_mount_mode_name(spec->host_path_mode), "mount_path",
	    spec->mount_path, "persistent", spec->persistent, "cpus", spec->cpus, "memory_mb",
	    (json_int_t)spec->memory_mb, "pids_limit", (json_int_t)spec->pids_limit,
	    "read_only_rootfs", spec->read_only_rootfs, "workspace_quota_mb",
	    (json_int_t)spec->workspace_quota_mb, "extra_mounts", mounts);
}
