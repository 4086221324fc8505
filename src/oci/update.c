/*
 * update: new limits for a live container, as runc takes them: a runtime-spec LinuxResources
 * object (--resources FILE or -, what podman update, containerd's shim and kubelet's in-place
 * resize send) and/or flags. 0 or absent leaves a value as it is, -1 lifts a limit. Whatever
 * lbbox cannot apply is refused with one line before anything changes.
 */
#include <errno.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

/* A member that must be absent, null, zero or false: lbbox has nothing to apply it to. */
static int refuse_set(json_t *obj, const char *section, const char *key, struct lb_err **err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v) || json_is_false(v) ||
	    (json_is_integer(v) && json_integer_value(v) == 0))
		return 0;
	return lb_err_set(err, 0, "resources: %s.%s is not supported by lbbox-runc", section, key);
}

static int get_i64(json_t *obj, const char *key, int64_t *out, struct lb_err **err)
{
	bool set;
	int64_t v = 0;
	if (lb_oci_get_int(obj, key, -1, INT64_MAX, &set, &v, err) < 0)
		return -1;
	*out = set ? v : 0;
	return 0;
}

static int get_u64(json_t *obj, const char *key, uint64_t *out, struct lb_err **err)
{
	bool set;
	int64_t v = 0;
	if (lb_oci_get_int(obj, key, 0, INT64_MAX, &set, &v, err) < 0)
		return -1;
	*out = set ? (uint64_t)v : 0;
	return 0;
}

static int parse_memory(json_t *res, struct lb_cgroup_update *u, struct lb_err **err)
{
	json_t *m = lb_oci_get_typed(res, "memory", JSON_OBJECT, err);
	if (!m)
		return *err ? -1 : 0;
	static const char *const refused[] = {"kernel", "kernelTCP", "swappiness",
					      "disableOOMKiller"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (refuse_set(m, "memory", refused[i], err) < 0)
			return -1;
	return get_i64(m, "limit", &u->memory, err) < 0 ||
		       get_i64(m, "swap", &u->memory_swap, err) < 0 ||
		       get_i64(m, "reservation", &u->memory_reservation, err) < 0
		   ? -1
		   : 0;
}

static int parse_cpu(json_t *res, struct lb_cgroup_update *u, struct lb_err **err)
{
	json_t *c = lb_oci_get_typed(res, "cpu", JSON_OBJECT, err);
	const char *cpus, *mems;
	if (!c)
		return *err ? -1 : 0;
	static const char *const refused[] = {"realtimeRuntime", "realtimePeriod", "burst", "idle"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (refuse_set(c, "cpu", refused[i], err) < 0)
			return -1;
	if (get_i64(c, "quota", &u->cpu_quota, err) < 0 ||
	    get_u64(c, "period", &u->cpu_period, err) < 0 ||
	    get_u64(c, "shares", &u->cpu_shares, err) < 0 ||
	    lb_oci_get_string(c, "cpus", false, &cpus, err) < 0 ||
	    lb_oci_get_string(c, "mems", false, &mems, err) < 0)
		return -1;
	if ((cpus && lb_cpuset_set(u->cpus, cpus, "cpus", err) < 0) ||
	    (mems && lb_cpuset_set(u->mems, mems, "mems", err) < 0))
		return -1;
	return 0;
}

/* Present and not empty: refused (blockIO may carry a zero weight, as runc's own default). */
static int refuse_nonempty(json_t *res, const char *key, struct lb_err **err)
{
	json_t *v = json_object_get(res, key);
	if (!v || json_is_null(v))
		return 0;
	if (json_is_object(v) && !strcmp(key, "blockIO") && json_object_size(v) == 1 &&
	    json_is_integer(json_object_get(v, "weight")) &&
	    json_integer_value(json_object_get(v, "weight")) == 0)
		return 0;
	if (json_object_size(v) + json_array_size(v) == 0 &&
	    (json_is_object(v) || json_is_array(v)))
		return 0;
	return lb_err_set(err, 0, "resources.%s is not supported by lbbox-runc", key);
}

static int resources_parse(const char *text, size_t len, struct lb_cgroup_update *u,
			   struct lb_err **err)
{
	json_error_t je;
	int64_t pids = 0;
	memset(u, 0, sizeof(*u));
	if (len > LB_OCI_CONFIG_MAX)
		return lb_err_set(err, E2BIG, "resources: larger than %u bytes", LB_OCI_CONFIG_MAX);
	_cleanup_json_ json_t *res = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!res)
		return lb_err_set(err, EINVAL, "resources: %s (line %d)", je.text, je.line);
	if (!json_is_object(res))
		return lb_err_set(err, EINVAL, "resources: not an object");
	static const char *const refused[] = {"unified", "hugepageLimits", "rdma", "blockIO",
					      "network"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (refuse_nonempty(res, refused[i], err) < 0)
			return -1;
	/* devices: checked, and the fence made at create stays as it is (docs/oci-runtime.md) */
	_cleanup_free_ struct lb_oci_dev_rule *rules = NULL;
	size_t n_rules;
	if (lb_oci_parse_device_rules(res, &rules, &n_rules, err) < 0)
		return -1;
	json_t *p = lb_oci_get_typed(res, "pids", JSON_OBJECT, err);
	if (*err || (p && get_i64(p, "limit", &pids, err) < 0))
		return -1;
	u->pids = pids;
	if (parse_memory(res, u, err) < 0 || parse_cpu(res, u, err) < 0)
		return -1;
	return lb_cgroup_update_check(u, err);
}

int lb_oci_resources_parse(const char *text, size_t len, struct lb_cgroup_update *u,
			   struct lb_err **err)
{
	return resources_parse(text, len, u, err) < 0 ? lb_oci_one_line(err) : 0;
}

int lb_oci_update(const struct lb_oci_root *r, const char *id, const struct lb_cgroup_update *u,
		  struct lb_err **err)
{
	struct lb_oci_state st;
	if (lb_cgroup_update_check(u, err) < 0 || lb_oci_state_load(r, id, &st, err) < 0)
		return -1;
	enum lb_oci_status status = st.status;
	char sbid[13];
	memcpy(sbid, st.sandbox, sizeof(sbid));
	lb_oci_state_free(&st);
	if (status == LB_OCI_STOPPED)
		return lb_err_set(err, 0, "container %s is stopped", id);
	if (lb_sandbox_update(&r->paths, sbid, u, err) < 0)
		return lb_err_wrap(err, "update container %s", id);
	return 0;
}
