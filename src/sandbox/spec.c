/* Spec defaults and validation before any work. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/stat.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/mountinfo.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/sandbox/spec.h"
#include "lbbox/base/util.h"

/* LangBot's blocked host paths (its "blocked host paths" rule). */
static const char *const blocked_paths[] = {
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/root",
    "/boot",
    "/run",
    "/var/run",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
};

uint64_t lb_default_caps(void)
{
	static const int caps[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID,
				   CAP_KILL,  CAP_SETGID,	CAP_SETUID, CAP_NET_BIND_SERVICE};
	uint64_t m = 0;
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
		m |= 1ULL << caps[i];
	return m;
}

void lb_spec_init(struct lb_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->readonly_root = true;
	spec->tmp_size = 64ULL << 20;
	spec->caps = lb_default_caps();
	spec->net = LB_NET_OFF;
}

void lb_spec_free(struct lb_spec *spec)
{
	free(spec->rootfs);
	free(spec->layers);
	lb_strvfreep(&spec->argv);
	lb_strvfreep(&spec->env);
	free(spec->cwd);
	free(spec->groups);
	free(spec->hostname);
	for (size_t i = 0; i < spec->n_mounts; i++) {
		free(spec->mounts[i].source);
		free(spec->mounts[i].target);
	}
	free(spec->cgroup_parent);
	free(spec->cgroup_name);
	free(spec->seccomp_profile);
	free(spec->tag);
	free(spec->netns_path);
	free(spec->ipcns_path);
	free(spec->utsns_path);
	free(spec->pidns_path);
	free(spec->cgroupns_path);
	free(spec->userns_path);
	free(spec->start_gate);
	free(spec->console_socket);
	lb_strvfreep(&spec->masked_paths);
	lb_strvfreep(&spec->readonly_paths);
	lb_strvfreep(&spec->sysctls);
	free(spec->uid_map);
	free(spec->gid_map);
	lb_devices_free(spec->devices, spec->n_devices);
	memset(spec, 0, sizeof(*spec));
}

/* Container-engine sockets are refused wherever they live, not only at their usual paths. */
static const char *const engine_sockets[] = {"docker.sock", "podman.sock", "containerd.sock",
					     "crio.sock", "dockershim.sock"};

/* The blocked directories by what they are: a bind mount of /etc elsewhere is /etc too, and so
 * is a directory holding one. */
static int check_blocked_identity(const char *canonical, const char *original, struct lb_err **err)
{
	struct lb_mountinfo mi;
	if (lb_mountinfo_read(&mi, err) < 0)
		return -1;
	int r = 0;
	for (size_t i = 0; i < sizeof(blocked_paths) / sizeof(blocked_paths[0]) && !r; i++) {
		_cleanup_free_ char *real = realpath(blocked_paths[i], NULL);
		if (real && lb_mountinfo_overlap(&mi, canonical, real))
			r = lb_err_set(err, 0,
				       "host_path %s is blocked for security (it reaches %s)",
				       original, blocked_paths[i]);
	}
	lb_mountinfo_free(&mi);
	return r;
}

int lb_check_host_path(const char *canonical, const char *original, struct lb_err **err)
{
	const char *base = strrchr(canonical, '/');
	/* The whole host root would expose every blocked path below it. */
	if (strcmp(canonical, "/") == 0)
		return lb_err_set(err, 0, "host_path %s is blocked for security", original);
	for (size_t i = 0; base && i < sizeof(engine_sockets) / sizeof(engine_sockets[0]); i++)
		if (strcmp(base + 1, engine_sockets[i]) == 0)
			return lb_err_set(err, 0, "host_path %s is blocked for security", original);
	for (size_t i = 0; i < sizeof(blocked_paths) / sizeof(blocked_paths[0]); i++) {
		size_t n = strlen(blocked_paths[i]);
		if (strncmp(canonical, blocked_paths[i], n) == 0 &&
		    (canonical[n] == '\0' || canonical[n] == '/'))
			return lb_err_set(err, 0, "host_path %s is blocked for security", original);
	}
	return check_blocked_identity(canonical, original, err);
}

static int check_mount(struct lb_mount *m, const struct lb_paths *paths, struct lb_err **err)
{
	if (m->tmpfs_size)
		return m->target[0] == '/'
			   ? 0
			   : lb_err_set(err, 0, "tmpfs target %s must be absolute", m->target);
	char *real = realpath(m->source, NULL);
	if (!real)
		return lb_err_set(err, errno, "volume host path %s", m->source);
	if (m->pinned && strcmp(real, m->source) != 0) {
		free(real);
		return lb_err_set(err, 0, "host path %s changed while it was checked", m->source);
	}
	if (!m->owned && (lb_check_host_path(real, m->source, err) < 0 ||
			  lb_paths_check_mount(paths, real, m->source, err) < 0)) {
		free(real);
		return -1;
	}
	free(m->source);
	m->source = real;
	return 0;
}

static int check_limits(const struct lb_spec *spec, struct lb_err **err)
{
	const char *n = spec->cgroup_name;
	if (n && !lb_cgroup_name_ok(n))
		return lb_err_set(err, 0, "invalid cgroup name '%.64s'", n);
	const struct lb_cgroup_limits *l = &spec->limits;
	if (l->memory_bytes && l->memory_bytes < LB_MIN_MEMORY)
		return lb_err_set(err, 0, "memory limit must be at least 32 MiB");
	if (spec->tmp_size && spec->tmp_size < 4096)
		return lb_err_set(err, 0, "--tmp-size must be at least 4 KiB");
	if (l->cpu_shares && (l->cpu_shares < 2 || l->cpu_shares > 262144))
		return lb_err_set(err, 0, "cpu shares must be 2 to 262144");
	return 0;
}

/* What the kernel takes: a umask of permission bits, oom_score_adj -1000..1000. */
static int check_process(const struct lb_spec *spec, struct lb_err **err)
{
	if (spec->umask_set && (spec->umask & ~(mode_t)0777))
		return lb_err_set(err, 0, "umask %#o is not a permission mask", spec->umask);
	if (spec->oom_score_adj_set && (spec->oom_score_adj < -1000 || spec->oom_score_adj > 1000))
		return lb_err_set(err, 0, "oom_score_adj %d is outside -1000..1000",
				  spec->oom_score_adj);
	return 0;
}

int lb_spec_check(struct lb_spec *spec, const struct lb_paths *paths, struct lb_err **err)
{
	struct stat st;

	if (!spec->session && (!spec->argv || !spec->argv[0] || !spec->argv[0][0]))
		return lb_err_set(err, 0, "no command given");
	if (spec->rootfs) {
		if (stat(spec->rootfs, &st) < 0)
			return lb_err_set(err, errno, "rootfs %s", spec->rootfs);
		if (!S_ISDIR(st.st_mode))
			return lb_err_set(err, ENOTDIR, "rootfs %s", spec->rootfs);
		char *real = realpath(spec->rootfs, NULL);
		if (!real)
			return lb_err_set(err, errno, "rootfs %s", spec->rootfs);
		free(spec->rootfs);
		spec->rootfs = real;
	}
	/* the store is never a sandbox's writable root (a directory image there serves every
	 * later sandbox): only read-only, under an overlay, or copied */
	if (spec->rootfs && !spec->readonly_root && !spec->copy_rootfs &&
	    lb_paths_check_mount(paths, spec->rootfs, spec->rootfs, NULL) < 0)
		return lb_err_set(err, 0, "rootfs %s is in lbbox's store: it cannot be writable",
				  spec->rootfs);
	if (spec->cwd && spec->cwd[0] != '/')
		return lb_err_set(err, 0, "working directory %s must be absolute", spec->cwd);
	if (check_limits(spec, err) < 0 || check_process(spec, err) < 0 ||
	    lb_spec_check_userns(spec, err) < 0 || lb_spec_check_devices(spec, err) < 0 ||
	    lb_spec_check_sysctls(spec, err) < 0 || lb_spec_check_rlimits(spec, err) < 0)
		return -1;
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (check_mount(&spec->mounts[i], paths, err) < 0)
			return -1;
	return 0;
}
