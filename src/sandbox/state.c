/* state.json: what a later lbbox process needs to find, inspect or clean up a sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/util.h"
#include "lbbox/sandbox/sandbox.h"
#include "engine.h"

static const char *net_name(enum lb_net_mode m)
{
	return m == LB_NET_HOST ? "host" : m == LB_NET_ON ? "on" : "off";
}

/* cpus and mems when set (a pinned sandbox; absent otherwise, as before pinning existed). */
static void set_cpuset(json_t *limits, const char *cpus, const char *mems)
{
	if (limits && cpus[0])
		json_object_set_new(limits, "cpus", json_string(cpus));
	if (limits && mems[0])
		json_object_set_new(limits, "mems", json_string(mems));
}

/* The parts of the spec another lbbox needs to describe or join the sandbox. */
static json_t *spec_json(const struct lb_spec *spec)
{
	const struct lb_cgroup_limits *l = &spec->limits;
	json_t *mounts = json_array();
	for (size_t i = 0; i < spec->n_mounts; i++)
		json_array_append_new(
		    mounts,
		    json_pack("{s:s, s:s, s:b}", "source",
			      spec->mounts[i].source ? spec->mounts[i].source : "tmpfs", "target",
			      spec->mounts[i].target, "readonly", spec->mounts[i].readonly));
	json_t *j =
	    json_pack("{s:s, s:o, s:o, s:s, s:b, s:s, s:i, s:i, s:{s:I, s:I, s:I, s:I}}", "rootfs",
		      spec->rootfs   ? spec->rootfs
		      : spec->layers ? spec->layers
				     : "host",
		      "argv", lb_json_from_strv(spec->argv), "mounts", mounts, "cwd",
		      spec->cwd ? spec->cwd : "/", "read_only", spec->readonly_root, "network",
		      net_name(spec->net), "uid", (int)spec->uid, "gid", (int)spec->gid, "limits",
		      "memory_bytes", (json_int_t)l->memory_bytes, "pids", (json_int_t)l->pids,
		      "cpu_quota_us", (json_int_t)l->cpu_quota_us, "cpu_period_us",
		      (json_int_t)l->cpu_period_us);
	set_cpuset(json_object_get(j, "limits"), l->cpus, l->mems);
	return j;
}

static json_t *cgroup_dirs_json(const struct lb_cgroup *cg)
{
	struct lb_cgroup_dir_info dirs[LB_CGROUP_MAX_DIRS];
	size_t n = lb_cgroup_dir_info(cg, dirs, LB_CGROUP_MAX_DIRS);
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s?, s:i}", "path", dirs[i].path, "hier",
						   dirs[i].hier, "roles", (int)dirs[i].roles));
	return a;
}

/* What an exec joining the sandbox applies to itself, as pid 1 did for the command. */
static json_t *exec_json(const struct lb_spec *spec)
{
	json_t *rl = json_array();
	for (size_t i = 0; i < spec->n_rlimits; i++)
		json_array_append_new(rl, json_pack("[i, I, I]", spec->rlimits[i].resource,
						    (json_int_t)spec->rlimits[i].soft,
						    (json_int_t)spec->rlimits[i].hard));
	json_t *groups = json_array();
	for (size_t i = 0; i < spec->n_groups; i++)
		json_array_append_new(groups, json_integer((json_int_t)spec->groups[i]));
	json_t *j =
	    json_pack("{s:i, s:i, s:o, s:I, s:o, s:s?, s:o}", "uid", (int)spec->uid, "gid",
		      (int)spec->gid, "groups", groups, "caps", (json_int_t)spec->caps, "rlimits",
		      rl, "seccomp", spec->seccomp_profile, "env", lb_json_from_strv(spec->env));
	/* only when the spec sets them (an OCI container): otherwise an exec keeps its caller's */
	if (j && spec->umask_set)
		json_object_set_new(j, "umask", json_integer(spec->umask));
	if (j && spec->oom_score_adj_set)
		json_object_set_new(j, "oom_score_adj", json_integer(spec->oom_score_adj));
	return j;
}

static json_t *lease_json(const struct lb_net_lease *lease)
{
	char a[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
	struct in_addr ia = {.s_addr = htonl(lease->addr)}, ig = {.s_addr = htonl(lease->gateway)};
	inet_ntop(AF_INET, &ia, a, sizeof(a));
	inet_ntop(AF_INET, &ig, g, sizeof(g));
	if (lease->pasta) /* the address is the host's, chosen by pasta */
		return json_pack("{s:s}", "mode", "pasta");
	return json_pack("{s:s, s:i, s:s}", "address", a, "prefix", lease->prefix, "gateway", g);
}

int lb_state_write(const char *statedir, const char *id, pid_t pid, const struct lb_spec *spec,
		   const struct lb_cgroup *cg, const struct lb_net_lease *lease, bool userns,
		   struct lb_err **err)
{
	char path[LB_PATH_BUF];
	json_t *st = json_object();
	if (!st)
		return lb_err_set(err, ENOMEM, "state");
	json_object_set_new(st, "id", json_string(id));
	json_object_set_new(st, "pid", json_integer(pid));
	/* with the pid, tells a live sandbox from a reused pid */
	json_object_set_new(st, "pid_start", json_integer((json_int_t)lb_proc_starttime(pid)));
	json_object_set_new(st, "created", json_integer((json_int_t)time(NULL)));
	json_object_set_new(st, "cgroup_version", json_integer(lb_cgroup_version(cg)));
	json_object_set_new(st, "cgroups", lb_json_from_strv((char *const *)lb_cgroup_paths(cg)));
	json_object_set_new(st, "cgroup_dirs", cgroup_dirs_json(cg));
	/* the cgroups' own name when it is not lbbox-<id> (state_cgroups.c checks against it) */
	if (spec->cgroup_name)
		json_object_set_new(st, "cgroup_name", json_string(spec->cgroup_name));
	json_object_set_new(st, "spec", spec_json(spec));
	json_object_set_new(st, "exec", exec_json(spec));
	/* rootless: an exec joins the sandbox's user namespace too */
	json_object_set_new(st, "userns", json_boolean(userns));
	if (lease)
		json_object_set_new(st, "net", lease_json(lease));
	if (spec->tag)
		json_object_set_new(st, "tag", json_string(spec->tag));
	_cleanup_free_ char *text = json_dumps(st, JSON_COMPACT);
	json_decref(st);
	if (!text)
		return lb_err_set(err, ENOMEM, "state");
	snprintf(path, sizeof(path), "%s/state.json", statedir);
	/*
	 * Written once into a fresh directory, without temp file + rename (each metadata operation
	 * costs ~0.1-0.4 ms on disk-backed runroots): a reader that sees it half-written treats the
	 * sandbox as still starting.
	 */
	return lb_write_fileat(AT_FDCWD, path, text, strlen(text), O_CREAT | O_EXCL, 0600, err);
}

void lb_state_free(struct lb_state *st)
{
	lb_strvfreep(&st->cgroups);
	free(st->tag);
	memset(st, 0, sizeof(*st));
}

int lb_state_read(const char *statedir, struct lb_state *out, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	json_error_t jerr;
	snprintf(path, sizeof(path), "%s/state.json", statedir);
	json_t *st = json_load_file(path, 0, &jerr);
	if (!st)
		return lb_err_set(err, errno, "read %s: %s", path, jerr.text);
	memset(out, 0, sizeof(*out));
	out->pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
	out->pid_start = (uint64_t)json_integer_value(json_object_get(st, "pid_start"));
	out->cgroups = lb_json_to_strv(json_object_get(st, "cgroups"));
	const char *cgname = json_string_value(json_object_get(st, "cgroup_name"));
	json_t *net = json_object_get(st, "net");
	out->pasta = json_is_string(json_object_get(net, "mode"));
	out->net_on = net && !out->pasta;
	const char *tag = json_string_value(json_object_get(st, "tag"));
	out->tag = tag ? strdup(tag) : NULL;
	if (out->pid <= 0 || !out->cgroups) {
		json_decref(st);
		lb_state_free(out);
		return lb_err_set(err, 0, "%s: incomplete state", path);
	}
	const char *id = lb_statedir_id(statedir);
	for (char **c = out->cgroups; *c; c++)
		if (lb_state_cgroup_check(id, cgname, *c, err) < 0) {
			json_decref(st);
			lb_state_free(out);
			return -1;
		}
	json_decref(st);
	return 0;
}

/* A limit after an update: u's value (0 = unchanged, -1 = none, recorded as 0). */
static void updated(json_t *limits, const char *key, int64_t v)
{
	if (v)
		json_object_set_new(limits, key, json_integer(v < 0 ? 0 : v));
}

int lb_state_update_limits(const char *statedir, const struct lb_cgroup_update *u,
			   struct lb_err **err)
{
	char path[LB_PATH_BUF];
	json_error_t jerr;
	snprintf(path, sizeof(path), "%s/state.json", statedir);
	_cleanup_json_ json_t *st = json_load_file(path, 0, &jerr);
	json_t *limits = json_object_get(json_object_get(st, "spec"), "limits");
	if (!json_is_object(limits))
		return lb_err_set(err, EINVAL, "%s: no limits recorded", path);
	updated(limits, "memory_bytes", u->memory);
	updated(limits, "pids", u->pids);
	updated(limits, "cpu_quota_us", u->cpu_quota);
	updated(limits, "cpu_period_us", (int64_t)u->cpu_period);
	set_cpuset(limits, u->cpus, u->mems);
	_cleanup_free_ char *text = json_dumps(st, JSON_COMPACT);
	if (!text)
		return lb_err_set(err, ENOMEM, "state");
	/* replaced whole (rename): a reader sees the old record or the new one */
	return lb_write_file_atomic(path, text, strlen(text), 0600, err);
}
