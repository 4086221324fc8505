/*
 * A container's life cycle on the engine. create builds the sandbox with its command held at a
 * start gate (a fifo in the container's directory, as runc's exec.fifo); start writes the byte
 * that releases it and removes the fifo, so "created" is "pid 1 lives and the gate exists".
 * pid 1 exits with the command's status, which the caller's subreaper (conmon, the shim) reads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

static void now_rfc3339(char *out, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, len - n, ".%09ldZ", ts.tv_nsec);
}

/* linux.seccomp, written where the engine reads profiles from: a file. */
static int write_seccomp(const char *dir, struct lb_oci_config *cfg, struct lb_err **err)
{
	char path[LB_PATH_BUF + 16];
	if (!cfg->seccomp_json)
		return 0;
	snprintf(path, sizeof(path), "%s/seccomp.json", dir);
	if (lb_write_file_atomic(path, cfg->seccomp_json, strlen(cfg->seccomp_json), 0600, err) < 0)
		return -1;
	free(cfg->spec.seccomp_profile);
	cfg->spec.seccomp_profile = strdup(path);
	return cfg->spec.seccomp_profile ? 0 : lb_err_set(err, ENOMEM, "seccomp");
}

/* LISTEN_FDS=N and LISTEN_PID (filled in with the command's pid by pid 1) replace whatever
 * the config said of them, as runc appends its own. */
static int announce_listen_fds(struct lb_spec *spec, unsigned n, struct lb_err **err)
{
	size_t k = 0, len = 0;
	while (spec->env && spec->env[len])
		len++;
	char **env = calloc(len + 3, sizeof(char *));
	if (!env)
		return lb_err_set(err, ENOMEM, "environment");
	for (size_t i = 0; i < len; i++) {
		if (!strncmp(spec->env[i], "LISTEN_FDS=", 11) ||
		    !strncmp(spec->env[i], "LISTEN_PID=", 11))
			free(spec->env[i]);
		else
			env[k++] = spec->env[i];
	}
	free(spec->env);
	spec->env = env;
	if (asprintf(&env[k], "LISTEN_FDS=%u", n) < 0 || !(env[k + 1] = strdup("LISTEN_PID=0"))) {
		env[k] = NULL;
		return lb_err_set(err, ENOMEM, "environment");
	}
	spec->listen_pid = true;
	return 0;
}

static int make_gate(const char *dir, struct lb_spec *spec, struct lb_err **err)
{
	char path[LB_PATH_BUF + 16];
	snprintf(path, sizeof(path), "%s/gate", dir);
	if (mkfifo(path, 0600) < 0)
		return lb_err_set(err, errno, "mkfifo %s", path);
	spec->start_gate = strdup(path);
	return spec->start_gate ? 0 : lb_err_set(err, ENOMEM, "gate");
}

/* cgroupsPath "/a/b/name": the sandbox's cgroup is exactly there (engines read its stats).
 * Relative or single-component paths go below the caller's cgroup. false when not usable. */
static bool place_cgroup(const char *path, struct lb_spec *spec)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	if (slash && path[0] != '/')
		return false;
	spec->cgroup_name = strdup(name);
	if (slash && slash != path)
		spec->cgroup_parent = strndup(path, (size_t)(slash - path));
	else if (slash)
		spec->cgroup_parent = strdup("/");
	return spec->cgroup_name && (!slash || spec->cgroup_parent);
}

static void unplace_cgroup(struct lb_spec *spec)
{
	free(spec->cgroup_name);
	free(spec->cgroup_parent);
	spec->cgroup_name = spec->cgroup_parent = NULL;
}

/* At cgroupsPath; where its parent exists in no cgroup hierarchy (ctr's "/default/ID"), where
 * lbbox puts a sandbox's cgroup: below the caller's, named lbbox-ID. A parent that exists in some
 * hierarchies only is not missing: the create then fails naming the one that lacks it, rather
 * than leave the container outside its pod's limits. */
static int create_sandbox(const struct lb_oci_root *r, struct lb_oci_config *cfg,
			  struct lb_oci_state *st, struct lb_err **err)
{
	struct lb_spec *spec = &cfg->spec;
	bool placed = cfg->cgroups_path && place_cgroup(cfg->cgroups_path, spec);
	if (!placed || (spec->cgroup_parent && lb_cgroup_parent_missing(spec->cgroup_parent)))
		unplace_cgroup(spec);
	return lb_sandbox_create(spec, &r->paths, st->sandbox, &st->pid, err);
}

static int build(const struct lb_oci_root *r, const char *dir, struct lb_oci_config *cfg,
		 const struct lb_oci_create_opts *o, struct lb_oci_state *st,
		 struct lb_oci_hooks_plan *hooks, struct lb_err **err)
{
	if (cfg->terminal && !o->console_socket)
		return lb_err_set(err, EINVAL, "process.terminal needs --console-socket");
	/* pid 1 makes the pty on the sandbox's own devpts (src/sandbox/init.c) */
	if (cfg->terminal && !(cfg->spec.console_socket = strdup(o->console_socket)))
		return lb_err_set(err, ENOMEM, "console socket");
	/* v1: a cpuset cgroup from the start, so that `update --cpuset-cpus` has one to write */
	cfg->spec.limits.cpuset_cgroup = true;
	/* found by it when the container's own state is unreadable (delete --force) */
	if (!(cfg->spec.tag = strdup(st->id)))
		return lb_err_set(err, ENOMEM, "create");
	if (write_seccomp(dir, cfg, err) < 0 || make_gate(dir, &cfg->spec, err) < 0 ||
	    lb_oci_plan_hooks(dir, cfg, hooks, err) < 0 ||
	    lb_spec_check(&cfg->spec, &r->paths, err) < 0 || create_sandbox(r, cfg, st, err) < 0)
		return -1;
	st->pid_start = lb_proc_starttime(st->pid);
	st->status = LB_OCI_CREATED;
	return lb_oci_state_save(r, st, err);
}

int lb_oci_create(const struct lb_oci_root *r, const char *id, const struct lb_oci_create_opts *o,
		  pid_t *pid, struct lb_err **err)
{
	char dir[LB_PATH_BUF], created[64];
	struct lb_oci_config cfg;
	struct lb_oci_state st = {0};
	struct lb_oci_hooks_plan hooks = {.st = &st};
	if (o->preserve_fds > LB_MAX_PRESERVE_FDS ||
	    o->listen_fds > LB_MAX_PRESERVE_FDS - o->preserve_fds)
		return lb_err_set(err, EINVAL, "--preserve-fds %u is too many", o->preserve_fds);
	if (lb_oci_container_dir(r, id, dir, sizeof(dir), err) < 0)
		return -1;
	if (lb_oci_config_load(o->bundle, &cfg, err) < 0) {
		lb_oci_config_free(&cfg);
		return -1;
	}
	if (mkdir(dir, 0700) < 0) {
		lb_oci_config_free(&cfg);
		return errno == EEXIST ? lb_err_set(err, 0, "container %s already exists", id)
				       : lb_err_set(err, errno, "create %s", dir);
	}
	now_rfc3339(created, sizeof(created));
	snprintf(st.id, sizeof(st.id), "%s", id);
	st.bundle = strdup(o->bundle);
	st.created = strdup(created);
	st.annotations = json_incref(cfg.annotations);
	st.hooks = json_incref(cfg.hooks);
	st.caps_bounding = cfg.caps_bounding;
	st.status = LB_OCI_CREATED;
	cfg.spec.preserve_fds = o->listen_fds + o->preserve_fds;
	int rc = o->listen_fds ? announce_listen_fds(&cfg.spec, o->listen_fds, err) : 0;
	if (rc == 0)
		rc = st.bundle && st.created ? build(r, dir, &cfg, o, &st, &hooks, err)
					     : lb_err_set(err, ENOMEM, "create");
	if (rc < 0) {
		if (st.sandbox[0])
			lb_sandbox_destroy(&r->paths, st.sandbox, NULL);
		/* a hook failed (or something after one): the life cycle goes on at poststop */
		if (hooks.began)
			lb_oci_run_poststop(&st);
		lb_rm_rf(dir, NULL);
		lb_oci_one_line(err);
	} else {
		*pid = st.pid;
	}
	lb_oci_state_free(&st);
	lb_oci_config_free(&cfg);
	return rc;
}

/* A startContainer hook failed: the container is stopped and deleted (runtime-spec). */
static void start_failed(const struct lb_oci_root *r, const char *dir, struct lb_oci_state *st)
{
	lb_sandbox_destroy(&r->paths, st->sandbox, NULL);
	lb_oci_run_poststop(st);
	lb_rm_rf(dir, NULL);
}

/* One start at a time: a second one waits, then finds the container running (or gone), never
 * created. The lock is the container directory's, held until start returns. */
static int lock_start(const struct lb_oci_root *r, const char *id, struct lb_err **err)
{
	char dir[LB_PATH_BUF];
	if (lb_oci_container_dir(r, id, dir, sizeof(dir), err) < 0)
		return -1;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, 0, "container %s does not exist", id);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return lb_err_set(err, e, "lock container %s", id);
		}
	}
	return fd;
}

int lb_oci_start(const struct lb_oci_root *r, const char *id, struct lb_err **err)
{
	struct lb_oci_state st;
	char dir[LB_PATH_BUF], gate[LB_PATH_BUF + 16];
	_cleanup_close_ int rfd = -1, pidfd = -1;
	_cleanup_close_ int lock = lock_start(r, id, err);
	if (lock < 0 || lb_oci_state_load(r, id, &st, err) < 0)
		return -1;
	if (st.status != LB_OCI_CREATED) {
		lb_err_set(err, 0, "container %s is %s, not created", id,
			   lb_oci_status_name(st.status));
		lb_oci_state_free(&st);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/%s", r->dir, id);
	snprintf(gate, sizeof(gate), "%s/gate", dir);
	bool hooked = lb_oci_hooks_has(st.hooks, "startContainer");
	if (hooked && lb_oci_watch_start(dir, &st, &rfd, &pidfd, err) < 0) {
		lb_oci_state_free(&st);
		return -1;
	}
	/* non-blocking: pid 1 holds the read side open from before create returned */
	int fd = open(gate, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	int rc = fd < 0 || write(fd, "1", 1) != 1
		     ? lb_err_set(err, errno, "start container %s (its pid 1 is not waiting)", id)
		     : 0;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && hooked &&
	    lb_oci_await_started(rfd, pidfd, lb_oci_hooks_timeout(st.hooks, "startContainer"),
				 err) < 0) {
		start_failed(r, dir, &st);
		lb_oci_state_free(&st);
		return lb_oci_one_line(err);
	}
	if (rc == 0) {
		unlink(gate);
		st.status = LB_OCI_RUNNING;
		_cleanup_json_ json_t *state = lb_oci_state_json(&st);
		/* a failed poststart hook is only reported: the container runs */
		rc = lb_oci_hooks_run(st.hooks, "poststart", state, err);
	}
	lb_oci_state_free(&st);
	return rc;
}

/* Whether pid 1 joined a pid namespace by path (a pod's shared one): it is then not its
 * namespace's init, and that namespace holds other containers' processes too. */
static bool joined_pid_ns(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* NSpid: its pid in each namespace from ours down to its own; the last is 1 for an init */
	char *line = strstr(buf, "\nNSpid:");
	char *end = line ? strchr(line + 1, '\n') : NULL;
	if (!end)
		return false;
	*end = '\0';
	char *last = strrchr(line, '\t');
	return last && strcmp(last + 1, "1") != 0;
}

/* The processes of pid 1's pid namespace (the container's own and its execs'); in a joined
 * one, those of the container's cgroup (the namespace's other processes are not its). */
int lb_oci_pids(const struct lb_oci_root *r, const char *id, pid_t **pids, size_t *n,
		struct lb_err **err)
{
	struct lb_oci_state st;
	char path[64], want[64] = "", got[64];
	*pids = NULL;
	*n = 0;
	if (lb_oci_state_load(r, id, &st, err) < 0)
		return -1;
	enum lb_oci_status status = st.status;
	char sbid[13];
	memcpy(sbid, st.sandbox, sizeof(sbid));
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", st.pid);
	ssize_t wl = status == LB_OCI_STOPPED ? -1 : readlink(path, want, sizeof(want) - 1);
	bool joined = wl > 0 && joined_pid_ns(st.pid);
	lb_oci_state_free(&st);
	if (wl <= 0)
		return 0;
	if (joined)
		return lb_sandbox_pids(&r->paths, sbid, pids, n, err);
	_cleanup_closedir_ DIR *d = opendir("/proc");
	size_t cap = 0;
	for (struct dirent *de; d && (de = readdir(d));) {
		pid_t p = atoi(de->d_name);
		if (p <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", p);
		ssize_t l = readlink(path, got, sizeof(got) - 1);
		if (l != wl || memcmp(got, want, (size_t)wl))
			continue;
		if (*n == cap) {
			pid_t *more = realloc(*pids, (cap = cap ? 2 * cap : 16) * sizeof(pid_t));
			if (!more)
				return lb_err_set(err, ENOMEM, "ps");
			*pids = more;
		}
		(*pids)[(*n)++] = p;
	}
	return 0;
}

int lb_oci_kill(const struct lb_oci_root *r, const char *id, int sig, bool all, struct lb_err **err)
{
	struct lb_oci_state st;
	if (lb_oci_state_load(r, id, &st, err) < 0)
		return -1;
	enum lb_oci_status status = st.status;
	pid_t pid = st.pid;
	uint64_t start = st.pid_start;
	char sbid[13];
	memcpy(sbid, st.sandbox, sizeof(sbid));
	lb_oci_state_free(&st);
	/* runc's words: containerd's shim takes a kill failing with "container not running" for
	 * one already done (the CRI kills every container it stops, exited or not) */
	if (status == LB_OCI_STOPPED)
		return lb_err_set(err, 0, "%s: container not running", id);
	/* the pidfd pins a process; its start time says it is still this container's pid 1 */
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 || lb_proc_starttime(pid) != start) {
		if (pidfd >= 0)
			close(pidfd);
		return lb_err_set(err, 0, "%s: container not running", id);
	}
	/* joined: pid 1 is not its namespace's init, SIGKILL would end it alone and leave the
	 * command running in a "stopped" container; every process of it goes through its cgroup.
	 * So does --all of another signal: through the cgroup, each process by a pidfd checked
	 * against a second read of its cgroup.procs, never by a pid that may have been reused */
	if ((all && sig != SIGKILL) || (joined_pid_ns(pid) && sig == SIGKILL)) {
		close(pidfd);
		return lb_sandbox_signal(&r->paths, sbid, sig, err) < 0
			   ? lb_err_wrap(err, "kill container %s", id)
			   : 0;
	}
	/* pid 1 forwards every signal to the command; SIGKILL ends the whole pid namespace */
	int rc = (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
	int e = errno;
	close(pidfd);
	return rc < 0 ? lb_err_set(err, e, "kill container %s", id) : 0;
}

int lb_oci_pause(const struct lb_oci_root *r, const char *id, bool pause, struct lb_err **err)
{
	struct lb_oci_state st;
	if (lb_oci_state_load(r, id, &st, err) < 0)
		return -1;
	enum lb_oci_status want = pause ? LB_OCI_RUNNING : LB_OCI_PAUSED, status = st.status;
	char sbid[13];
	memcpy(sbid, st.sandbox, sizeof(sbid));
	lb_oci_state_free(&st);
	if (status != want)
		return lb_err_set(err, 0, "container %s is %s, not %s", id,
				  lb_oci_status_name(status), lb_oci_status_name(want));
	return lb_sandbox_freeze(&r->paths, sbid, pause, err);
}

int lb_oci_delete(const struct lb_oci_root *r, const char *id, bool force, struct lb_err **err)
{
	struct lb_oci_state st;
	char dir[LB_PATH_BUF];
	if (lb_oci_state_load(r, id, &st, err) < 0) {
		/* forced: a container already gone is no error (as runc); a directory without a
		 * readable state is what a killed create left, or a damaged record, whose sandbox
		 * (found by its tag, the id) must not run on unnamed */
		if (!force || lb_oci_container_dir(r, id, dir, sizeof(dir), NULL) < 0)
			return -1;
		lb_err_free(err);
		if (access(dir, F_OK) < 0)
			return 0;
		if (lb_sandbox_destroy_tagged(&r->paths, id, err) < 0)
			return lb_oci_one_line(err);
		return lb_rm_rf(dir, err);
	}
	int rc = 0;
	if ((st.status == LB_OCI_RUNNING || st.status == LB_OCI_PAUSED) && !force) {
		rc = lb_err_set(err, 0, "container %s is %s (delete --force)", id,
				lb_oci_status_name(st.status));
		goto out;
	}
	/* created, or forced: the sandbox goes (destroy waits for pid 1 to be gone) */
	if (lb_sandbox_destroy(&r->paths, st.sandbox, err) < 0) {
		rc = -1;
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s/%s", r->dir, id);
	lb_oci_run_poststop(&st);
	rc = lb_rm_rf(dir, err);
out:
	lb_oci_state_free(&st);
	return rc;
}
