/*
 * Live sandboxes (sessions) reopened by any later lbbox process from their state.json: the
 * pidfd of pid 1 (checked against its recorded start time, so a reused pid is never joined),
 * the cgroup, and what every exec must apply to itself. Their destruction is destroy.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

int lb_sandbox_check_id(const char *id, struct lb_err **err)
{
	if (!id || strlen(id) != 12 || strspn(id, "0123456789abcdef") != 12)
		return lb_err_set(err, EINVAL, "invalid sandbox id '%s'", id ? id : "");
	return 0;
}

static int parse_cgroup(json_t *st, struct lb_sandbox *sb, struct lb_err **err)
{
	struct lb_cgroup_dir_info dirs[LB_CGROUP_MAX_DIRS];
	json_t *a = json_object_get(st, "cgroup_dirs"), *d;
	const char *name = json_string_value(json_object_get(st, "cgroup_name"));
	size_t i, n = 0;
	json_array_foreach(a, i, d)
	{
		if (n == LB_CGROUP_MAX_DIRS)
			break;
		dirs[n++] = (struct lb_cgroup_dir_info){
		    .path = json_string_value(json_object_get(d, "path")),
		    .hier = json_string_value(json_object_get(d, "hier")),
		    .roles = (unsigned)json_integer_value(json_object_get(d, "roles"))};
		if (!dirs[n - 1].path)
			return lb_err_set(err, 0, "sandbox %s: bad cgroup state", sb->id);
		/* never kill, freeze or join through a cgroup that is not the sandbox's */
		if (lb_state_cgroup_check(sb->id, name, dirs[n - 1].path, err) < 0)
			return -1;
	}
	int version = (int)json_integer_value(json_object_get(st, "cgroup_version"));
	return lb_cgroup_open((enum lb_cgroup_version)version, dirs, n, false, &sb->cg, err);
}

/* v absent, or an integer within lo..hi */
static bool absent_or_within(json_t *v, json_int_t lo, json_int_t hi)
{
	return !v ||
	       (json_is_integer(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi);
}

/* The umask and oom_score_adj the sandbox's command was given, for every exec too (as runc's
 * exec). Absent (a sandbox that sets neither, or a state written before they were recorded):
 * an exec keeps its caller's. */
static int parse_proc_fields(json_t *ex, struct lb_sandbox *sb, struct lb_err **err)
{
	json_t *umask = json_object_get(ex, "umask"), *oom = json_object_get(ex, "oom_score_adj");
	if (!absent_or_within(umask, 0, 0777) || !absent_or_within(oom, -1000, 1000))
		return lb_err_set(err, 0, "sandbox %s: bad exec state", sb->id);
	sb->spec.umask_set = umask != NULL;
	sb->spec.umask = (mode_t)json_integer_value(umask);
	sb->spec.oom_score_adj_set = oom != NULL;
	sb->spec.oom_score_adj = (int)json_integer_value(oom);
	return 0;
}

static int parse_exec(json_t *st, struct lb_sandbox *sb, struct lb_err **err)
{
	json_t *ex = json_object_get(st, "exec"), *r;
	size_t i;
	if (!json_is_object(ex))
		return lb_err_set(err, 0, "sandbox %s cannot be joined (no exec state)", sb->id);
	struct lb_spec *s = &sb->spec;
	s->uid = (uid_t)json_integer_value(json_object_get(ex, "uid"));
	s->gid = (gid_t)json_integer_value(json_object_get(ex, "gid"));
	s->caps = (uint64_t)json_integer_value(json_object_get(ex, "caps"));
	json_t *groups = json_object_get(ex, "groups"), *g;
	size_t n = json_array_size(groups);
	if (n && !(s->groups = calloc(n, sizeof(*s->groups))))
		return lb_err_set(err, ENOMEM, "sandbox state");
	json_array_foreach(groups, i, g) s->groups[s->n_groups++] = (gid_t)json_integer_value(g);
	json_array_foreach(json_object_get(ex, "rlimits"), i, r)
	{
		if (s->n_rlimits == LB_MAX_RLIMITS)
			break;
		s->rlimits[s->n_rlimits++] =
		    (struct lb_rlimit){.resource = (int)json_integer_value(json_array_get(r, 0)),
				       .soft = (rlim_t)json_integer_value(json_array_get(r, 1)),
				       .hard = (rlim_t)json_integer_value(json_array_get(r, 2))};
	}
	const char *sc = json_string_value(json_object_get(ex, "seccomp"));
	if (sc && !(s->seccomp_profile = strdup(sc)))
		return lb_err_set(err, ENOMEM, "sandbox state");
	if (!(s->env = lb_json_to_strv(json_object_get(ex, "env"))))
		return lb_err_set(err, ENOMEM, "sandbox state");
	const char *net =
	    json_string_value(json_object_get(json_object_get(st, "spec"), "network"));
	s->net = net && !strcmp(net, "host") ? LB_NET_HOST : LB_NET_OFF;
	sb->userns = json_is_true(json_object_get(st, "userns"));
	return parse_proc_fields(ex, sb, err);
}

/* pidfd of pid 1, only if it is still the process the state describes. */
static int open_pid1(json_t *st, struct lb_sandbox *sb, struct lb_err **err)
{
	sb->pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
	uint64_t start = (uint64_t)json_integer_value(json_object_get(st, "pid_start"));
	if (sb->pid <= 0)
		return lb_err_set(err, 0, "sandbox %s: bad state", sb->id);
	sb->pidfd = (int)syscall(SYS_pidfd_open, sb->pid, 0);
	/* checked after opening: once we hold the pidfd the pid cannot be recycled under us */
	if (sb->pidfd < 0 || lb_proc_starttime(sb->pid) != start)
		return lb_err_set(err, ESRCH, "sandbox %s is not running", sb->id);
	return 0;
}

int lb_sandbox_open(const struct lb_paths *paths, const char *id, struct lb_sandbox **out,
		    struct lb_err **err)
{
	json_error_t jerr;
	char path[LB_PATH_BUF];
	if (lb_sandbox_check_id(id, err) < 0)
		return -1;
	struct lb_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return lb_err_set(err, ENOMEM, "open sandbox");
	sb->pidfd = -1;
	lb_spec_init(&sb->spec);
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	snprintf(sb->statedir, sizeof(sb->statedir), "%s/%s", paths->runroot, id);
	snprintf(path, sizeof(path), "%s/state.json", sb->statedir);
	json_t *st = json_load_file(path, 0, &jerr);
	int r = -1;
	if (!st)
		lb_err_set(err, errno == ENOENT ? ESRCH : errno, "sandbox %s not found", id);
	else if (!(sb->root = strdup(paths->root)))
		lb_err_set(err, ENOMEM, "open sandbox");
	else if (open_pid1(st, sb, err) == 0 && parse_cgroup(st, sb, err) == 0)
		r = parse_exec(st, sb, err);
	json_decref(st);
	if (r < 0) {
		lb_sandbox_close(sb);
		return -1;
	}
	*out = sb;
	return 0;
}

int lb_sandbox_open_cgroup(const char *statedir, const char *id, struct lb_cgroup **out,
			   struct lb_err **err)
{
	json_error_t jerr;
	char path[LB_PATH_BUF];
	struct lb_sandbox sb = {0};
	snprintf(sb.id, sizeof(sb.id), "%s", id);
	snprintf(path, sizeof(path), "%s/state.json", statedir);
	_cleanup_json_ json_t *st = json_load_file(path, 0, &jerr);
	if (!st)
		return lb_err_set(err, errno, "read %s: %s", path, jerr.text);
	if (parse_cgroup(st, &sb, err) < 0)
		return -1;
	*out = sb.cg;
	return 0;
}

void lb_sandbox_close(struct lb_sandbox *sb)
{
	if (!sb)
		return;
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	lb_cgroup_forget(sb->cg);
	lb_seccomp_prog_free(sb->seccomp);
	lb_spec_free(&sb->spec);
	free(sb->root);
	free(sb);
}

bool lb_sandbox_is_alive(const struct lb_paths *paths, const char *id)
{
	struct lb_state st;
	char statedir[LB_PATH_BUF];
	if (lb_sandbox_check_id(id, NULL) < 0)
		return false;
	snprintf(statedir, sizeof(statedir), "%s/%s", paths->runroot, id);
	if (lb_state_read(statedir, &st, NULL) < 0)
		return false;
	uint64_t start = lb_proc_starttime(st.pid);
	/* a rootless session whose pasta is gone (killed with its creator's login, say) has no
	 * network any more: as good as dead, so the Box replaces it */
	bool alive =
	    start != 0 && start == st.pid_start && (!st.pasta || lb_net_pasta_record_ok(statedir));
	lb_state_free(&st);
	return alive;
}

/* The child cgroup CHILD of sb, opened as ours (destroy removes it). In a hierarchy where the
 * child joined the sandbox's own directory (cgroup_child.c) it has none: that one stays
 * unopened, and is skipped. */
static int open_child(struct lb_sandbox *sb, const char *child, struct lb_cgroup **out,
		      struct lb_err **err)
{
	struct lb_cgroup_dir_info dirs[LB_CGROUP_MAX_DIRS];
	char paths_buf[LB_CGROUP_MAX_DIRS][LB_PATH_BUF];
	if (!lb_cgroup_name_ok(child))
		return lb_err_set(err, EINVAL, "invalid cgroup name '%s'", child ? child : "");
	size_t n = lb_cgroup_dir_info(sb->cg, dirs, LB_CGROUP_MAX_DIRS);
	for (size_t i = 0; i < n; i++) {
		snprintf(paths_buf[i], sizeof(paths_buf[i]), "%s/%s", dirs[i].path, child);
		dirs[i].path = paths_buf[i];
	}
	return lb_cgroup_open(lb_cgroup_version(sb->cg), dirs, n, true, out, err);
}

int lb_sandbox_kill_child(const struct lb_paths *paths, const char *id, const char *child,
			  struct lb_err **err)
{
	struct lb_sandbox *sb = NULL;
	struct lb_cgroup *cg = NULL;
	if (lb_sandbox_open(paths, id, &sb, NULL) < 0)
		return 0; /* gone with its sandbox */
	int r = open_child(sb, child, &cg, err);
	if (r == 0)
		r = lb_cgroup_destroy(cg, err);
	lb_sandbox_close(sb);
	return r;
}

bool lb_sandbox_remove_child_if_empty(const struct lb_paths *paths, const char *id,
				      const char *child)
{
	struct lb_sandbox *sb = NULL;
	struct lb_cgroup *cg = NULL;
	bool removed = true;
	if (lb_sandbox_open(paths, id, &sb, NULL) < 0)
		return true;
	if (open_child(sb, child, &cg, NULL) == 0) {
		removed = lb_cgroup_is_empty(cg);
		if (removed)
			lb_cgroup_destroy(cg, NULL);
		else
			lb_cgroup_forget(cg);
	}
	lb_sandbox_close(sb);
	return removed;
}
