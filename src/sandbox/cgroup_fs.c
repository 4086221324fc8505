/* Small cgroupfs helpers shared by the v1 and v2 back ends: controller names, paths, read and
 * write control files, walk a subtree, signal its tasks, remove it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "cgroup_internal.h"

/* ---- names: controllers, words, paths ---------------------------------------------------- */

static const struct {
	const char *name;
	unsigned role;
} cg_roles[] = {
    {"memory", CG_MEMORY},   {"pids", CG_PIDS},	      {"cpu", CG_CPU},
    {"cpuacct", CG_CPUACCT}, {"freezer", CG_FREEZER}, {"devices", CG_DEVICES},
    {"cpuset", CG_CPUSET},
};

const char *cg_role_name(unsigned role)
{
	for (size_t i = 0; i < sizeof(cg_roles) / sizeof(cg_roles[0]); i++)
		if (cg_roles[i].role == role)
			return cg_roles[i].name;
	return "?";
}

unsigned cg_role_of(const char *ctrl)
{
	for (size_t i = 0; i < sizeof(cg_roles) / sizeof(cg_roles[0]); i++)
		if (!strcmp(cg_roles[i].name, ctrl))
			return cg_roles[i].role;
	return 0;
}

unsigned cg_limits_roles(const struct lb_cgroup_limits *lim)
{
	return (lim->memory_bytes || lim->memory_reservation ? CG_MEMORY : 0) |
	       (lim->pids ? CG_PIDS : 0) | (lim->cpu_quota_us || lim->cpu_shares ? CG_CPU : 0) |
	       (lim->cpus[0] || lim->mems[0] ? CG_CPUSET : 0);
}

uint64_t cg_shares_to_weight(uint64_t shares)
{
	return 1 + ((shares - 2) * 9999) / 262142;
}

bool cg_has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n) {
		bool start = p == list || p[-1] == ' ';
		bool end = !p[n] || p[n] == ' ' || p[n] == '\n';
		if (start && end)
			return true;
	}
	return false;
}

char *cg_path_join(const char *dir, const char *name)
{
	char *s = NULL;
	if (asprintf(&s, "%s/%s", dir, name) < 0)
		return NULL;
	return s;
}

/* ---- control files ------------------------------------------------------------------------ */

const struct cg_dir *cg_tasks_dir(const struct lb_cgroup *cg)
{
	for (size_t i = 0; i < cg->ndirs; i++)
		if (!cg->dirs[i].shared && cg->dirs[i].fd >= 0)
			return &cg->dirs[i];
	return NULL;
}

const char *cg_display_path(const struct lb_cgroup *cg)
{
	for (size_t i = 0; i < cg->ndirs; i++)
		if (!cg->dirs[i].shared)
			return cg->dirs[i].path;
	return cg->ndirs ? cg->dirs[0].path : "?";
}

struct cg_dir *cg_find_dir(struct lb_cgroup *cg, unsigned role)
{
	for (size_t i = 0; i < cg->ndirs; i++)
		if ((cg->dirs[i].roles & role) && !cg->dirs[i].shared)
			return &cg->dirs[i];
	return NULL;
}

/* ---- file helpers shared by v1 and v2 -------------------------------------------------------- */

int cg_write_raw(const struct cg_dir *d, const char *file, const char *val)
{
	size_t len = strlen(val);
	_cleanup_close_ int fd = openat(d->fd, file, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* a cgroup file takes one value per write(2): never split it */
	ssize_t n = write(fd, val, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int cg_write(const struct cg_dir *d, const char *file, const char *val, struct lb_err **err)
{
	int r = cg_write_raw(d, file, val);
	if (r < 0)
		return lb_err_set(err, -r, "write '%s' to %s/%s", val, d->path, file);
	return 0;
}

int cg_write_u64(const struct cg_dir *d, const char *file, uint64_t v, struct lb_err **err)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return cg_write(d, file, buf, err);
}

int cg_read(const struct cg_dir *d, const char *file, char **out, struct lb_err **err)
{
	if (lb_read_fileat(d->fd, file, 1 << 24, out, NULL, err) < 0)
		return lb_err_wrap(err, "cgroup %s", d->path);
	return 0;
}

int cg_read_u64(const struct cg_dir *d, const char *file, uint64_t *out, struct lb_err **err)
{
	_cleanup_free_ char *s = NULL;

	if (cg_read(d, file, &s, err) < 0)
		return -1;
	s[strcspn(s, "\n")] = '\0';
	if (!strcmp(s, "max")) {
		*out = UINT64_MAX;
		return 0;
	}
	if (lb_parse_u64(s, out, err) < 0)
		return lb_err_wrap(err, "%s/%s", d->path, file);
	return 0;
}

/* Finds "key N" in the lines of s; 0 when found. */
static int cg_find_key(char *s, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);
	char *save = NULL;

	for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return lb_parse_u64(l + kl + 1, out, NULL);
	return -1;
}

int cg_read_key(const struct cg_dir *d, const char *file, const char *key, uint64_t *out,
		struct lb_err **err)
{
	_cleanup_free_ char *s = NULL;

	if (cg_read(d, file, &s, err) < 0)
		return -1;
	if (cg_find_key(s, key, out) < 0)
		return lb_err_set(err, ENOENT, "no '%s' in %s/%s", key, d->path, file);
	return 0;
}

static bool cg_file_missing(const struct cg_dir *d, const char *file)
{
	return faccessat(d->fd, file, F_OK, 0) < 0 && (errno == ENOENT || errno == ENODEV);
}

int cg_read_u64_opt(const struct cg_dir *d, const char *file, uint64_t *out, struct lb_err **err)
{
	*out = 0;
	if (cg_file_missing(d, file))
		return 0;
	return cg_read_u64(d, file, out, err);
}

int cg_read_key_opt(const struct cg_dir *d, const char *file, const char *key, uint64_t *out,
		    struct lb_err **err)
{
	_cleanup_free_ char *s = NULL;

	*out = 0;
	if (cg_file_missing(d, file))
		return 0;
	if (cg_read(d, file, &s, err) < 0)
		return -1;
	if (cg_find_key(s, key, out) < 0)
		*out = 0; /* older kernels lack some keys (oom_kill before 4.13) */
	return 0;
}

int cg_read_pids(const struct cg_dir *d, pid_t **out, size_t *n, struct lb_err **err)
{
	_cleanup_free_ char *s = NULL;
	size_t cap = 1, k = 0;
	char *save = NULL;

	if (cg_read(d, "cgroup.procs", &s, err) < 0)
		return -1;
	for (const char *p = s; *p; p++)
		cap += *p == '\n';
	_cleanup_free_ pid_t *v = calloc(cap, sizeof(*v));
	if (!v)
		return lb_err_set(err, ENOMEM, "read %s/cgroup.procs", d->path);
	for (char *t = strtok_r(s, "\n", &save); t && k < cap; t = strtok_r(NULL, "\n", &save)) {
		long pid = strtol(t, NULL, 10);
		/* 0 is a task outside our pid namespace: kill(0, ...) would hit our own group */
		if (pid > 0)
			v[k++] = (pid_t)pid;
	}
	*out = LB_TAKE_PTR(v);
	*n = k;
	return 0;
}

static void cg_dir_closep(struct cg_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
}

static int cg_walk_children(const struct cg_dir *d, cg_walk_fn fn, void *ctx, struct lb_err **err)
{
	int dfd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;

	if (dfd < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "open %s", d->path);
	_cleanup_closedir_ DIR *dir = fdopendir(dfd);
	if (!dir) {
		int e2 = errno;
		close(dfd);
		return lb_err_set(err, e2, "open %s", d->path);
	}
	while ((e = readdir(dir))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		_cleanup_(cg_dir_closep) struct cg_dir sub = {
		    .fd = openat(d->fd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
		    .path = cg_path_join(d->path, e->d_name),
		};
		/* a child cgroup removed meanwhile is simply not visited */
		if (sub.fd >= 0 && sub.path && cg_walk(&sub, fn, ctx, err) < 0)
			return -1;
	}
	return 0;
}

int cg_walk(const struct cg_dir *d, cg_walk_fn fn, void *ctx, struct lb_err **err)
{
	/* never there (a reopened child's in a hierarchy it shared), or removed under us */
	if (d->fd < 0 || cg_file_missing(d, "cgroup.procs"))
		return 0;
	if (fn(d, ctx, err) < 0)
		return -1;
	return cg_walk_children(d, fn, ctx, err);
}

struct cg_signal_ctx {
	int sig;
	size_t *found;
};

static bool has_pid(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

int cg_signal_listed(const struct cg_dir *d, const pid_t *pids, size_t n, int sig,
		     struct lb_err **err)
{
	_cleanup_free_ int *fds = calloc(n ? n : 1, sizeof(*fds));
	_cleanup_free_ pid_t *now = NULL;
	size_t m = 0;
	if (!fds)
		return lb_err_set(err, ENOMEM, "signal %s", d->path);
	for (size_t i = 0; i < n; i++)
		fds[i] = (int)syscall(SYS_pidfd_open, pids[i], 0);
	int r = cg_read_pids(d, &now, &m, err);
	for (size_t i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		if (r == 0 && has_pid(now, m, pids[i]))
			syscall(SYS_pidfd_send_signal, fds[i], sig, NULL, 0);
		close(fds[i]);
	}
	return r;
}

static int cg_signal_one(const struct cg_dir *d, void *ctx, struct lb_err **err)
{
	struct cg_signal_ctx *c = ctx;
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;

	if (cg_read_pids(d, &pids, &n, err) < 0)
		return -1;
	if (c->sig && n && cg_signal_listed(d, pids, n, c->sig, err) < 0)
		return -1;
	*c->found += n;
	return 0;
}

int cg_signal_tree(const struct cg_dir *d, int sig, size_t *found, struct lb_err **err)
{
	struct cg_signal_ctx c = {.sig = sig, .found = found};
	return cg_walk(d, cg_signal_one, &c, err);
}

struct cg_pids_ctx {
	pid_t *v;
	size_t n, cap;
};

static int cg_pids_one(const struct cg_dir *d, void *ctx, struct lb_err **err)
{
	struct cg_pids_ctx *c = ctx;
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;
	if (cg_read_pids(d, &pids, &n, err) < 0)
		return -1;
	if (c->n + n > c->cap) {
		size_t cap = c->n + n + 16;
		pid_t *v = reallocarray(c->v, cap, sizeof(*v));
		if (!v)
			return lb_err_set(err, ENOMEM, "read %s/cgroup.procs", d->path);
		c->v = v, c->cap = cap;
	}
	memcpy(c->v + c->n, pids, n * sizeof(*pids));
	c->n += n;
	return 0;
}

int cg_pids_tree(const struct cg_dir *d, pid_t **out, size_t *n, struct lb_err **err)
{
	struct cg_pids_ctx c = {0};
	if (cg_walk(d, cg_pids_one, &c, err) < 0) {
		free(c.v);
		return -1;
	}
	*out = c.v;
	*n = c.n;
	return 0;
}

int cg_dir_make(struct cg_dir *d, struct lb_err **err)
{
	if (mkdir(d->path, 0755) < 0)
		return lb_err_set(err, errno, "mkdir %s", d->path);
	d->created = true;
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0)
		return lb_err_set(err, errno, "open %s", d->path);
	return 0;
}

void cg_backoff(unsigned *round)
{
	unsigned ms = *round < 4 ? 1u << *round : 16;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};

	(*round)++;
	nanosleep(&ts, NULL);
}

static int cg_rmdir_tree(const char *path, struct lb_err **err);

static int cg_rmdir_children(const char *path, struct lb_err **err)
{
	_cleanup_closedir_ DIR *dir = opendir(path);
	struct dirent *e;
	int r = 0;

	if (!dir)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "open %s", path);
	while ((e = readdir(dir))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		_cleanup_free_ char *sub = cg_path_join(path, e->d_name);
		if (!sub)
			r = lb_err_set(err, ENOMEM, "remove %s", path);
		else if (cg_rmdir_tree(sub, err) < 0)
			r = -1;
	}
	return r;
}

/* Child cgroups first (rmdir fails on a cgroup with children); a memory cgroup may stay busy for
 * a moment after its last task exited, hence the retries. */
static int cg_rmdir_tree(const char *path, struct lb_err **err)
{
	uint64_t deadline = lb_now_ns() + CG_RMDIR_TIMEOUT_NS;
	unsigned round = 0;

	if (cg_rmdir_children(path, err) < 0)
		return -1;
	while (rmdir(path) < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || lb_now_ns() >= deadline)
			return lb_err_set(err, errno, "remove cgroup %s", path);
		cg_backoff(&round);
	}
	return 0;
}

int cg_dir_remove(struct cg_dir *d, struct lb_err **err)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	if (!d->created)
		return 0;
	d->created = false;
	return cg_rmdir_tree(d->path, err);
}
