/*
 * config.json's "linux" object: namespaces, resources, seccomp, masked and read-only paths, and
 * the fields lbbox refuses (devices: config_devices.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

/* Every sandbox gets new mount, pid, ipc and uts namespaces (and a cgroup one): a bundle that
 * asks to share the host's asks for what the engine does not do, except for uts (below). Joined
 * by path: the network namespace, a pod's ipc, uts, pid and user namespaces (its containers join
 * its sandbox's, as with Kubernetes), and a cgroup namespace. A mount namespace is never joined:
 * the container's root would be built, and pivot_root done, in another's mount table. */
static const char *const always[] = {"mount", "pid", "ipc", "uts"};

/* Where a joined namespace's path goes in the spec; NULL for the types never joined. */
static char **join_slot(struct lb_spec *spec, const char *type)
{
	return !strcmp(type, "network")	 ? &spec->netns_path
	       : !strcmp(type, "ipc")	 ? &spec->ipcns_path
	       : !strcmp(type, "uts")	 ? &spec->utsns_path
	       : !strcmp(type, "pid")	 ? &spec->pidns_path
	       : !strcmp(type, "cgroup") ? &spec->cgroupns_path
	       : !strcmp(type, "user")	 ? &spec->userns_path
					 : NULL;
}

/* One entry of linux.namespaces; seen[] marks the ones of always[], *net the network one,
 * *user a user namespace (new, or joined: spec->userns_path). */
static int parse_namespace(json_t *ns, struct lb_spec *spec, bool seen[4], bool *net, bool *user,
			   struct lb_err **err)
{
	const char *type, *path;
	if (!json_is_object(ns))
		return lb_err_set(err, EINVAL, "config: namespaces entries must be objects");
	if (lb_oci_get_string(ns, "type", true, &type, err) < 0 ||
	    lb_oci_get_string(ns, "path", false, &path, err) < 0)
		return -1;
	if (path && !*path)
		path = NULL;
	bool is_user = !strcmp(type, "user");
	if (is_user) {
		if (*user)
			return lb_err_set(err, EINVAL, "config: user namespace twice");
		*user = true;
	}
	bool known = is_user || !strcmp(type, "network") || !strcmp(type, "cgroup");
	for (size_t k = 0; k < 4; k++)
		if (!strcmp(type, always[k])) {
			if (seen[k])
				return lb_err_set(err, EINVAL, "config: %s namespace twice", type);
			known = seen[k] = true;
		}
	if (!strcmp(type, "network")) {
		if (*net)
			return lb_err_set(err, EINVAL, "config: network namespace twice");
		*net = true;
	}
	if (!known)
		return lb_err_set(err, strcmp(type, "time") ? EINVAL : ENOTSUP,
				  "config: %s namespace type %.32s",
				  strcmp(type, "time") ? "unknown" : "unsupported", type);
	if (!path)
		return 0;
	char **slot = join_slot(spec, type);
	if (!slot)
		return lb_err_set(err, ENOTSUP,
				  "config: joining a %.32s namespace is not supported%s", type,
				  strcmp(type, "mount") ? ""
							: " (each container's root is built in a "
							  "mount namespace of its own)");
	if (path[0] != '/')
		return lb_err_set(err, EINVAL, "config: namespace path %.64s is not absolute",
				  path);
	*slot = strdup(path);
	return *slot ? 0 : lb_err_set(err, ENOMEM, "config: namespaces");
}

static int parse_namespaces(json_t *lx, struct lb_spec *spec, bool *user, struct lb_err **err)
{
	json_t *a = lb_oci_get_typed(lx, "namespaces", JSON_ARRAY, err), *ns;
	bool seen[4] = {false}, net = false;
	size_t i;
	if (*err)
		return -1;
	if (json_array_size(a) > 16)
		return lb_err_set(err, E2BIG, "config: too many namespaces");
	json_array_foreach(a, i, ns)
	{
		if (parse_namespace(ns, spec, seen, &net, user, err) < 0)
			return -1;
	}
	/* no uts namespace: the host's, as runc gives it (containerd's CRI leaves it out for a
	 * hostNetwork pod); nothing but the hostname lives there, and that is never set then */
	spec->uts_host = !seen[3];
	for (size_t k = 0; k < 3; k++)
		if (!seen[k])
			return lb_err_set(err, ENOTSUP,
					  "config: lbbox always gives a new %s namespace; "
					  "sharing the host's is not supported",
					  always[k]);
	/* no network namespace asked: the host's, as runc does */
	spec->net = net ? LB_NET_OFF : LB_NET_HOST;
	if ((spec->utsns_path || spec->uts_host) && spec->hostname)
		return lb_err_set(err, EINVAL,
				  "config: a hostname needs a new uts namespace, not a joined one "
				  "or the host's");
	return 0;
}

static int parse_memory(json_t *res, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *mem = lb_oci_get_typed(res, "memory", JSON_OBJECT, err);
	int64_t v = 0;
	bool set;
	if (!mem)
		return *err ? -1 : 0;
	if (lb_oci_get_int(mem, "limit", -1, INT64_MAX, &set, &v, err) < 0)
		return -1;
	if (set && v > 0) {
		if ((uint64_t)v < LB_MIN_MEMORY)
			return lb_err_set(err, EINVAL,
					  "config: memory limit %lld is below lbbox's 32 MiB",
					  (long long)v);
		cfg->spec.limits.memory_bytes = (uint64_t)v;
	}
	if (lb_oci_get_int(mem, "reservation", -1, INT64_MAX, &set, &v, err) < 0)
		return -1;
	if (set && v > 0)
		cfg->spec.limits.memory_reservation = (uint64_t)v;
	/* swap, swappiness ...: checked; the limit is hard and swap is never given */
	static const char *const ints[] = {"swap", "kernel", "kernelTCP", "swappiness"};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (lb_oci_get_int(mem, ints[i], -1, INT64_MAX, &set, &v, err) < 0)
			return -1;
	return 0;
}

static int parse_cpu(json_t *res, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *cpu = lb_oci_get_typed(res, "cpu", JSON_OBJECT, err);
	struct lb_cgroup_limits *lim = &cfg->spec.limits;
	int64_t quota = 0, period = 0, shares = 0;
	bool qs, ps, ss;
	const char *cpus = NULL, *mems = NULL;
	if (!cpu)
		return *err ? -1 : 0;
	if (lb_oci_get_int(cpu, "quota", -1, INT64_MAX, &qs, &quota, err) < 0 ||
	    lb_oci_get_int(cpu, "period", 0, 1000000, &ps, &period, err) < 0 ||
	    lb_oci_get_int(cpu, "shares", 0, UINT32_MAX, &ss, &shares, err) < 0 ||
	    lb_oci_get_string(cpu, "cpus", false, &cpus, err) < 0 ||
	    lb_oci_get_string(cpu, "mems", false, &mems, err) < 0)
		return -1;
	if ((cpus && lb_cpuset_set(lim->cpus, cpus, "cpus", err) < 0) ||
	    (mems && lb_cpuset_set(lim->mems, mems, "mems", err) < 0))
		return lb_err_wrap(err, "config: resources.cpu");
	if (qs && quota > 0) {
		if (quota < 1000)
			return lb_err_set(err, EINVAL, "config: cpu quota below 1000 us");
		lim->cpu_quota_us = (uint64_t)quota;
		lim->cpu_period_us = ps && period >= 1000 ? (uint64_t)period : 100000;
	}
	if (ss && shares > 0)
		lim->cpu_shares = (uint64_t)shares;
	return 0;
}

static int parse_resources(json_t *lx, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *res = lb_oci_get_typed(lx, "resources", JSON_OBJECT, err), *pids;
	int64_t v = 0;
	bool set;
	if (!res)
		return *err ? -1 : 0;
	if (parse_memory(res, cfg, err) < 0 || parse_cpu(res, cfg, err) < 0)
		return -1;
	pids = lb_oci_get_typed(res, "pids", JSON_OBJECT, err);
	if (*err)
		return -1;
	if (pids && lb_oci_get_int(pids, "limit", -1, INT64_MAX, &set, &v, err) < 0)
		return -1;
	if (pids && set && v > 0)
		cfg->spec.limits.pids = (uint64_t)v;
	json_t *unified = lb_oci_get_typed(res, "unified", JSON_OBJECT, err);
	if (*err)
		return -1;
	if (json_object_size(unified))
		return lb_err_set(err, ENOTSUP, "config: resources.unified is not supported");
	static const char *const refused[] = {"hugepageLimits", "rdma", "blockIO", "network"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		json_t *r = json_object_get(res, refused[i]);
		if (r && !json_is_null(r) && json_object_size(r) + json_array_size(r) > 0 &&
		    !(json_is_object(r) && !strcmp(refused[i], "blockIO") &&
		      json_object_size(r) == 0))
			return lb_err_set(err, ENOTSUP, "config: resources.%s is not supported",
					  refused[i]);
	}
	return 0;
}

static int parse_seccomp(json_t *lx, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *sc = lb_oci_get_typed(lx, "seccomp", JSON_OBJECT, err);
	if (*err)
		return -1;
	if (!sc) /* no filter asked: lbbox's default one still applies (stricter than runc) */
		return 0;
	if (json_object_get(sc, "listenerPath"))
		return lb_err_set(err, ENOTSUP, "config: seccomp listenerPath is not supported");
	cfg->seccomp_json = json_dumps(sc, JSON_COMPACT);
	return cfg->seccomp_json ? 0 : lb_err_set(err, ENOMEM, "config: seccomp");
}

/* maskedPaths / readonlyPaths: applied as written, on top of lbbox's own masks; resolved
 * inside the root by the engine (src/sandbox/masks.c), so ".." or a link cannot leave it. */
static int parse_paths(json_t *lx, const char *key, char ***out, struct lb_err **err)
{
	_cleanup_strv_ char **v = NULL;
	if (lb_oci_get_strv(lx, key, 1024, &v, err) < 0)
		return -1;
	for (char **p = v; p && *p; p++)
		if ((*p)[0] != '/' || strlen(*p) >= 4096)
			return lb_err_set(err, EINVAL, "config: %s entry %.64s is not absolute",
					  key, *p);
	*out = v && *v ? LB_TAKE_PTR(v) : NULL;
	return 0;
}

/* linux.sysctl: {"name": "value"}, as "name=value" for the engine, which checks them (after
 * the namespaces: net.* needs one of the container's own). */
static int parse_sysctl(json_t *lx, struct lb_spec *spec, struct lb_err **err)
{
	json_t *obj = lb_oci_get_typed(lx, "sysctl", JSON_OBJECT, err), *v;
	const char *k;
	size_t n = 0;
	if (*err)
		return -1;
	if (json_object_size(obj) > LB_MAX_SYSCTLS)
		return lb_err_set(err, E2BIG, "config: more than %d sysctls", LB_MAX_SYSCTLS);
	if (!json_object_size(obj))
		return 0;
	spec->sysctls = calloc(json_object_size(obj) + 1, sizeof(char *));
	if (!spec->sysctls)
		return lb_err_set(err, ENOMEM, "config: sysctl");
	json_object_foreach(obj, k, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return lb_err_set(err, EINVAL, "config: sysctl %.64s must be a string", k);
		if (strchr(k, '='))
			return lb_err_set(err, EINVAL, "config: sysctl %.64s: not a sysctl name",
					  k);
		if (asprintf(&spec->sysctls[n], "%s=%s", k, json_string_value(v)) < 0)
			return lb_err_set(err, ENOMEM, "config: sysctl");
		n++;
	}
	return lb_spec_check_sysctls(spec, err) < 0 ? lb_err_wrap(err, "config") : 0;
}

/* cgroupsPath: "/parent/.../name" (cgroupfs), or systemd's "slice:prefix:name" as runc lays it
 * out in cgroupfs (cgroups_path.c). */
static int parse_cgroups_path(json_t *lx, struct lb_oci_config *cfg, struct lb_err **err)
{
	const char *p;
	if (lb_oci_get_string(lx, "cgroupsPath", false, &p, err) < 0)
		return -1;
	if (!p || !*p)
		return 0;
	if (strchr(p, ':'))
		return lb_oci_systemd_cgroups_path(p, &cfg->cgroups_path, err);
	if (strlen(p) >= 1024 || strstr(p, "/../") || !strncmp(p, "../", 3) ||
	    (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")) || !strcmp(p, ".."))
		return lb_err_set(err, EINVAL, "config: cgroupsPath %.64s is not usable", p);
	cfg->cgroups_path = strdup(p);
	return cfg->cgroups_path ? 0 : lb_err_set(err, ENOMEM, "config: cgroupsPath");
}

/* Present and non-empty: refused. */
static int refuse_nonempty(json_t *lx, const char *key, struct lb_err **err)
{
	json_t *v = json_object_get(lx, key);
	if (!v || json_is_null(v))
		return 0;
	if ((json_is_array(v) && !json_array_size(v)) ||
	    (json_is_object(v) && !json_object_size(v)))
		return 0;
	return lb_err_set(err, ENOTSUP, "config: linux.%s is not supported by lbbox-runc", key);
}

int lb_oci_parse_linux(json_t *root, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *lx = lb_oci_get_typed(root, "linux", JSON_OBJECT, err);
	const char *s;
	bool user = false;
	if (!lx)
		return *err ? -1 : lb_err_set(err, EINVAL, "config: linux is required");
	static const char *const refused[] = {"intelRdt", "personality", "timeOffsets"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (refuse_nonempty(lx, refused[i], err) < 0)
			return -1;
	if (parse_namespaces(lx, &cfg->spec, &user, err) < 0 ||
	    lb_oci_parse_userns(lx, user, &cfg->spec, err) < 0 ||
	    parse_sysctl(lx, &cfg->spec, err) < 0)
		return -1;
	/* only the user namespace that owns a pid namespace may mount a procfs of it: the host's
	 * or a joined one (a pod's) for one joined by path, never a new one made for the
	 * container */
	if (user && !cfg->spec.userns_path && cfg->spec.pidns_path)
		return lb_err_set(err, ENOTSUP,
				  "config: a joined pid namespace with a new user namespace is not "
				  "supported (the container could not mount its /proc)");
	if (parse_resources(lx, cfg, err) < 0 || lb_oci_parse_devices(lx, &cfg->spec, err) < 0 ||
	    parse_seccomp(lx, cfg, err) < 0 ||
	    parse_paths(lx, "maskedPaths", &cfg->spec.masked_paths, err) < 0 ||
	    parse_paths(lx, "readonlyPaths", &cfg->spec.readonly_paths, err) < 0 ||
	    parse_cgroups_path(lx, cfg, err) < 0 ||
	    lb_oci_get_string(lx, "rootfsPropagation", false, &s, err) < 0 ||
	    lb_oci_refuse_label(lx, "linux", "mountLabel", "SELinux label", err) < 0)
		return -1;
	return 0;
}
