/*
 * linux.devices and linux.resources.devices: the nodes the engine makes in /dev, and what the
 * device fence lets the command do with each. The rules are read as the runtime-spec says (in
 * order, the last one that matches a device decides, access bit by access bit) but applied only
 * to the devices the bundle lists: a wildcard allow (podman's "c *:* m", a privileged
 * container's "a *:* rwm") never reaches a host device lbbox's /dev does not have. lbbox's own
 * standard devices stay open whatever the rules say (its floor, as its nodev mounts).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "oci_internal.h"

#define MAX_RULES 1024

static int parse_access(json_t *o, unsigned *out, struct lb_err **err)
{
	const char *s;
	if (lb_oci_get_string(o, "access", false, &s, err) < 0)
		return -1;
	*out = s ? 0 : LB_DEV_RWM;
	for (; s && *s; s++) {
		const char *bit = strchr("rwm", *s);
		if (!bit)
			return lb_err_set(err, EINVAL,
					  "config: device access must be made of r, w, m");
		*out |= 1u << (bit - "rwm");
	}
	return 0;
}

/* major or minor: absent or -1 = any (rules only), else within [0, max]. */
static int parse_number(json_t *o, const char *key, bool any_ok, int64_t max, int64_t *out,
			struct lb_err **err)
{
	bool set;
	if (lb_oci_get_int(o, key, any_ok ? -1 : 0, max, &set, out, err) < 0)
		return -1;
	if (!set && !any_ok)
		return lb_err_set(err, EINVAL, "config: linux.devices entry without %s", key);
	if (!set)
		*out = -1;
	return 0;
}

static int parse_rule(json_t *o, struct lb_oci_dev_rule *r, struct lb_err **err)
{
	const char *type;
	if (!json_is_object(o))
		return lb_err_set(err, EINVAL, "config: resources.devices entries must be objects");
	if (lb_oci_get_bool(o, "allow", &r->allow, err) < 0 ||
	    lb_oci_get_string(o, "type", false, &type, err) < 0 ||
	    parse_number(o, "major", true, LB_OCI_DEV_MAJOR_MAX, &r->major, err) < 0 ||
	    parse_number(o, "minor", true, LB_OCI_DEV_MINOR_MAX, &r->minor, err) < 0 ||
	    parse_access(o, &r->access, err) < 0)
		return -1;
	if (!json_is_boolean(json_object_get(o, "allow")))
		return lb_err_set(err, EINVAL, "config: resources.devices entry without allow");
	if (type && (strlen(type) != 1 || !strchr("acb", type[0])))
		return lb_err_set(err, EINVAL, "config: device rule type must be a, c or b");
	r->type = type ? type[0] : 'a';
	return 0;
}

int lb_oci_parse_device_rules(json_t *res, struct lb_oci_dev_rule **out, size_t *n,
			      struct lb_err **err)
{
	json_t *a = res ? lb_oci_get_typed(res, "devices", JSON_ARRAY, err) : NULL, *o;
	size_t i;
	*out = NULL;
	*n = 0;
	if (*err)
		return -1;
	if (json_array_size(a) > MAX_RULES)
		return lb_err_set(err, E2BIG, "config: more than %d resources.devices rules",
				  MAX_RULES);
	if (!json_array_size(a))
		return 0;
	_cleanup_free_ struct lb_oci_dev_rule *rules = calloc(json_array_size(a), sizeof(*rules));
	if (!rules)
		return lb_err_set(err, ENOMEM, "config: resources.devices");
	json_array_foreach(a, i, o)
	{
		if (parse_rule(o, &rules[i], err) < 0)
			return -1;
	}
	*n = json_array_size(a);
	*out = LB_TAKE_PTR(rules);
	return 0;
}

unsigned lb_oci_device_access(const struct lb_oci_dev_rule *rules, size_t n, char type,
			      uint32_t major, uint32_t minor)
{
	unsigned access = 0;
	for (size_t i = 0; i < n; i++) {
		const struct lb_oci_dev_rule *r = &rules[i];
		if ((r->type != 'a' && r->type != type) || (r->major >= 0 && r->major != major) ||
		    (r->minor >= 0 && r->minor != minor))
			continue;
		access = r->allow ? access | r->access : access & ~r->access;
	}
	return access;
}

static int parse_device(json_t *o, struct lb_device *d, struct lb_err **err)
{
	const char *path, *type;
	int64_t major = 0, minor = 0, mode = 0666, uid = 0, gid = 0;
	bool set;
	if (!json_is_object(o))
		return lb_err_set(err, EINVAL, "config: linux.devices entries must be objects");
	if (lb_oci_get_string(o, "path", true, &path, err) < 0 ||
	    lb_oci_get_string(o, "type", true, &type, err) < 0)
		return -1;
	if (strlen(type) != 1 || !strchr("cbup", type[0]))
		return lb_err_set(err, EINVAL, "config: device %.64s: type must be c, b, u or p",
				  path);
	d->type = type[0] == 'u' ? 'c' : type[0];
	if (d->type != 'p' &&
	    (parse_number(o, "major", false, LB_OCI_DEV_MAJOR_MAX, &major, err) < 0 ||
	     parse_number(o, "minor", false, LB_OCI_DEV_MINOR_MAX, &minor, err) < 0))
		return -1;
	/* fileMode may carry the S_IFMT bits of the node's type (Go's stat): only the
	 * permissions count */
	if (lb_oci_get_int(o, "fileMode", 0, 0177777, &set, &mode, err) < 0 ||
	    lb_oci_get_int(o, "uid", 0, UINT32_MAX - 1, &set, &uid, err) < 0 ||
	    lb_oci_get_int(o, "gid", 0, UINT32_MAX - 1, &set, &gid, err) < 0)
		return -1;
	d->major = (uint32_t)major;
	d->minor = (uint32_t)minor;
	d->mode = (uint32_t)mode & 07777;
	d->uid = (uid_t)uid;
	d->gid = (gid_t)gid;
	d->path = strdup(path);
	return d->path ? 0 : lb_err_set(err, ENOMEM, "config: linux.devices");
}

int lb_oci_parse_devices(json_t *lx, struct lb_spec *spec, struct lb_err **err)
{
	json_t *a = lb_oci_get_typed(lx, "devices", JSON_ARRAY, err), *o;
	json_t *res = lb_oci_get_typed(lx, "resources", JSON_OBJECT, err);
	_cleanup_free_ struct lb_oci_dev_rule *rules = NULL;
	size_t n_rules, i;
	if (*err || lb_oci_parse_device_rules(res, &rules, &n_rules, err) < 0)
		return -1;
	if (json_array_size(a) > LB_MAX_DEVICES)
		return lb_err_set(err, E2BIG, "config: more than %d linux.devices", LB_MAX_DEVICES);
	if (!json_array_size(a))
		return 0;
	spec->devices = calloc(json_array_size(a), sizeof(*spec->devices));
	if (!spec->devices)
		return lb_err_set(err, ENOMEM, "config: linux.devices");
	json_array_foreach(a, i, o)
	{
		struct lb_device *d = &spec->devices[i];
		spec->n_devices = i + 1; /* freed with the spec from here */
		if (parse_device(o, d, err) < 0)
			return -1;
		if (d->type != 'p')
			d->access =
			    lb_oci_device_access(rules, n_rules, d->type, d->major, d->minor);
	}
	return lb_spec_check_devices(spec, err) < 0 ? lb_err_wrap(err, "config") : 0;
}
