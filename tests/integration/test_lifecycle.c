// Sandbox lifecycle: signal forwarding, orphan reaping by pid 1, on-disk state while running,
// --cgroup-parent, the Python image, the seccomp BPF cache, --network host with --read-only.
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- cgroups this file creates for --cgroup-parent (removed also when a test fails) ----- */

#define MAX_CGP 32

static struct {
	char *created[MAX_CGP]; // directories we made, in creation order
	int n_created;
	char *bases[MAX_CGP]; // the --cgroup-parent directory, once per hierarchy
	int n_bases;
} CGP;

// Kill what is left in a cgroup we created ourselves (only sandboxes of this test run there),
// then remove it and everything below it.
static void cgp_remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		char *sub = lbt_strdupf("%s/%s", dir, e->d_name);

		cgp_remove_tree(sub);
		free(sub);
	}
	if (d)
		closedir(d);
	for (int i = 0; i < 300 && rmdir(dir) < 0 && errno == EBUSY; i++) {
		char *freezer = lbt_strdupf("%s/freezer.state", dir);
		char *procs_path = lbt_strdupf("%s/cgroup.procs", dir);
		char *procs = lbt_read_file(procs_path);
		FILE *f = fopen(freezer, "we");

		if (f) {
			fputs("THAWED", f);
			fclose(f);
		}
		for (char *p = procs; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
			if (atoi(p) > 1 && atoi(p) != getpid())
				kill((pid_t)atoi(p), SIGKILL);
		free(procs);
		free(procs_path);
		free(freezer);
		usleep(10000);
	}
}

static void cgp_cleanup(void)
{
	while (CGP.n_created > 0) {
		char *dir = CGP.created[--CGP.n_created];

		cgp_remove_tree(dir);
		free(dir);
	}
	while (CGP.n_bases > 0)
		free(CGP.bases[--CGP.n_bases]);
}

static void lifecycle_fini(void)
{
	lbt_teardown(); // kills this test's lbbox and marked sleeps first
	cgp_cleanup();
}

TestSuite(lifecycle, .init = lbt_setup, .fini = lifecycle_fini, .timeout = 240);

/* ---- small helpers ------------------------------------------------------------------------ */

// Wait until lbbox's stdout (a memfd the harness reads at lbt_wait) holds needle; false when
// lbbox exited first or the timeout passed. Does not reap lbbox.
static bool wait_stdout(const struct lbt_proc *p, const char *needle, double timeout)
{
	double deadline = lbt_now() + timeout;
	char buf[8192];

	for (;;) {
		ssize_t n = pread(p->outfd, buf, sizeof(buf) - 1, 0);
		siginfo_t si = {0};

		buf[n > 0 ? n : 0] = '\0';
		if (strstr(buf, needle))
			return true;
		if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == p->pid)
			return false;
		if (lbt_now() > deadline)
			return false;
		usleep(10000);
	}
}

static json_t *last_json(const struct lb_run_out *o)
{
	char line[4096];
	json_error_t jerr;
	json_t *j = json_loads(lbt_last_line(o->out, line, sizeof(line)), 0, &jerr);

	cr_assert_not_null(j, "last stdout line is not JSON (%s): %s", jerr.text, o->out);
	return j;
}

// Entries of the runroot; returns how many, the first name in first (if any).
static int runroot_entries(char *first, size_t len)
{
	DIR *d = opendir(lbt_runroot());
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "runroot %s: %s", lbt_runroot(), strerror(errno));
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n++ == 0 && first)
			snprintf(first, len, "%s", e->d_name);
	}
	closedir(d);
	return n;
}

static bool is_hex_id(const char *s)
{
	if (strlen(s) != 12)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

// The single sandbox state directory of the runroot: its id (12 hex) and parsed state.json.
static json_t *read_single_state(char id[64])
{
	char *path;
	json_t *st;
	json_error_t jerr;
	struct stat sb;
	int n = runroot_entries(id, 64);

	cr_assert_eq(n, 1, "%d entries in the runroot %s while one sandbox runs (first: %s)", n,
		     lbt_runroot(), n ? id : "-");
	cr_assert(is_hex_id(id), "state directory name '%s' is not a 12-hex id", id);
	path = lbt_strdupf("%s/%s", lbt_runroot(), id);
	cr_assert(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode), "%s is not a directory", path);
	free(path);
	path = lbt_strdupf("%s/%s/state.json", lbt_runroot(), id);
	st = json_load_file(path, 0, &jerr);
	cr_assert_not_null(st, "cannot parse %s: %s", path, jerr.text);
	free(path);
	return st;
}

// Is pid listed in cgroup.procs of dir or of a cgroup below it?
static bool cgroup_tree_has_pid(const char *dir, pid_t pid)
{
	char *procs_path = lbt_strdupf("%s/cgroup.procs", dir);
	char *procs = lbt_read_file(procs_path);
	bool found = false;
	DIR *d;
	struct dirent *e;

	for (char *p = procs; p && *p && !found; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		found = atoi(p) == pid;
	free(procs);
	free(procs_path);
	d = found ? NULL : opendir(dir);
	while (d && !found && (e = readdir(d))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		char *sub = lbt_strdupf("%s/%s", dir, e->d_name);

		found = cgroup_tree_has_pid(sub, pid);
		free(sub);
	}
	if (d)
		closedir(d);
	return found;
}

// Names of the lbbox-* cgroups directly under dir (a v2 "lbbox-leaf" aside), space-separated.
static char *lbbox_cgroups_under(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *list = strdup("");

	while (d && (e = readdir(d))) {
		if (e->d_type != DT_DIR || strncmp(e->d_name, "lbbox-", 6) ||
		    !strcmp(e->d_name, "lbbox-leaf"))
			continue;
		char *more = lbt_strdupf("%s%s%s", list, *list ? " " : "", e->d_name);

		free(list);
		list = more;
	}
	if (d)
		closedir(d);
	return list;
}

static int count_subdirs(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_type == DT_DIR && e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

// Running `sleep MARKER` processes (lbbox's own argv, which holds the marker too, aside).
static int count_sleeps(const char *marker)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char *path, *cmd;
		int pid = atoi(e->d_name);

		if (pid <= 0)
			continue;
		path = lbt_strdupf("/proc/%d/cmdline", pid);
		cmd = lbt_read_file(path);
		if (cmd) {
			const char *arg1 = cmd + strlen(cmd) + 1;
			const char *base = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;

			// cmdline is NUL-separated; read_file NUL-terminates after the last one
			n += *cmd && !strcmp(base, "sleep") && !strcmp(arg1, marker);
		}
		free(cmd);
		free(path);
	}
	if (d)
		closedir(d);
	return n;
}

static bool wait_sleep(const char *marker, double timeout)
{
	double deadline = lbt_now() + timeout;

	while (count_sleeps(marker) != 1 && lbt_now() < deadline)
		usleep(10000);
	return count_sleeps(marker) == 1;
}

/* ---- 1. signals --------------------------------------------------------------------------- */

LBT_TEST(lifecycle, sigterm_is_forwarded_to_the_command)
{
	struct lbt_proc p;
	struct lb_run_out o;

	lbt_add_marker("876541");
	lbt_spawn(
	    &p, "run", "--rootfs", lbt_rootfs(), "--", "sh", "-c",
	    "trap 'echo got-term; exit 42' TERM; sleep 876541 & echo ready; wait; echo no-trap",
	    NULL);
	bool ready = wait_stdout(&p, "ready\n", 10.0);

	if (ready)
		kill(p.pid, SIGTERM);
	lbt_wait(&p, &o, 10.0);
	cr_assert(ready,
		  "the command never printed ready (exit %d)\n--- stdout:\n%s--- stderr:\n%s",
		  o.status, o.out, o.err);
	LBT_ASSERT_EXIT(o, 42);
	LBT_ASSERT_OUT(o, "ready\ngot-term\n");
	cr_assert_lt(o.secs, 8.0, "lbbox took %.1f s to end after SIGTERM", o.secs);
	cr_assert_eq(lbt_count_procs_with_arg("876541"), 0, "the background sleep survived");
	lbt_out_free(&o);
}

LBT_TEST(lifecycle, sigint_kills_a_command_without_handler)
{
	struct lbt_proc p;
	struct lb_run_out o;
	json_t *j;

	lbt_add_marker("876542");
	lbt_spawn(&p, "run", "--json", "--rootfs", lbt_rootfs(), "--", "sh", "-c",
		  "echo ready; exec sleep 876542", NULL);
	// The command is `sleep` itself once it runs: no shell in between to swallow SIGINT.
	bool ready = wait_stdout(&p, "ready\n", 10.0) && wait_sleep("876542", 10.0);

	if (ready)
		kill(p.pid, SIGINT);
	lbt_wait(&p, &o, 10.0);
	cr_assert(ready, "sleep 876542 never started (exit %d)\n--- stdout:\n%s--- stderr:\n%s",
		  o.status, o.out, o.err);
	LBT_ASSERT_EXIT(o, 130);
	j = last_json(&o);
	cr_assert_eq(json_integer_value(json_object_get(j, "signal")), SIGINT,
		     "signal in the result is not SIGINT: %s", o.out);
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 130, "%s", o.out);
	cr_assert(json_is_false(json_object_get(j, "timed_out")), "%s", o.out);
	json_decref(j);
	cr_assert_eq(lbt_count_procs_with_arg("876542"), 0, "sleep 876542 survived SIGINT");
	lbt_out_free(&o);
}

/* ---- 2. pid 1 reaps orphans --------------------------------------------------------------- */

LBT_TEST(lifecycle, pid1_reaps_orphans)
{
	struct lb_run_out o;
	// The subshell exits at once, so its sleep is reparented to pid 1; once that sleep has
	// exited, an init that does not reap leaves it as a zombie (state Z) for as long as the
	// command runs.
	static const char script[] =
	    "(sleep 0.5 & echo $! >/tmp/orphan); p=$(cat /tmp/orphan); "
	    "echo ppid=$(cut -d' ' -f4 /proc/$p/stat); "
	    "sleep 1.5; "
	    "if [ -e /proc/$p ]; then echo left=$(cut -d' ' -f3 /proc/$p/stat); else echo gone; fi; "
	    "z=0; for f in /proc/[0-9]*/stat; do read -r l <$f || continue; "
	    "case \"$l\" in *') Z '*) z=$((z+1)); echo \"zombie: $l\";; esac; done; "
	    "echo zombies=$z";

	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--", "sh", "-c", script, NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ppid=1\ngone\nzombies=0\n");
	lbt_out_free(&o);
}

/* ---- 3. state while running --------------------------------------------------------------- */

// NSpid of a host pid: its pid in every pid namespace, outermost first.
static char *nspid_of(pid_t pid)
{
	char *path = lbt_strdupf("/proc/%d/status", (int)pid);
	char *status = lbt_read_file(path);
	char *line = status ? strstr(status, "\nNSpid:") : NULL;
	char *v;

	cr_assert_not_null(status, "%s: %s", path, strerror(errno));
	cr_assert_not_null(line, "no NSpid in %s", path);
	line += strlen("\nNSpid:");
	line[strcspn(line, "\n")] = '\0';
	for (char *c = line; *c; c++)
		if (*c == '\t')
			*c = ' ';
	v = strdup(line + strspn(line, " "));
	free(status);
	free(path);
	return v;
}

LBT_TEST(lifecycle, state_dir_while_running)
{
	struct lbt_proc p;
	struct lb_run_out o;
	char id[64], want[64], *nspid, *statedir;
	json_t *st, *cgroups, *argv, *v;
	size_t i;

	lbt_add_marker("876543");
	lbt_spawn(&p, "run", "--", "sleep", "876543", NULL);
	cr_assert(wait_sleep("876543", 10.0), "sandbox did not start");
	st = read_single_state(id);
	statedir = lbt_strdupf("%s/%s", lbt_runroot(), id);

	cr_assert_str_eq(json_string_value(json_object_get(st, "id")), id, "state id");
	pid_t pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
	cr_assert_gt(pid, 1, "state.json has no pid");
	cr_assert_eq(kill(pid, 0), 0, "pid %d of state.json is not alive", (int)pid);
	nspid = nspid_of(pid);
	// the pid as we see it first, the sandbox's own pid namespace last: pid 1 there
	snprintf(want, sizeof(want), "%d ", (int)pid);
	size_t nl = strlen(nspid);
	cr_assert(!strncmp(nspid, want, strlen(want)) && nl > 2 && !strcmp(nspid + nl - 2, " 1"),
		  "NSpid of pid %d is '%s': not the sandbox's pid 1", (int)pid, nspid);

	cgroups = json_object_get(st, "cgroups");
	cr_assert(json_is_array(cgroups) && json_array_size(cgroups) > 0,
		  "state.json has no cgroups");
	json_array_foreach(cgroups, i, v)
	{
		const char *dir = json_string_value(v);
		struct stat sb;

		cr_assert_not_null(dir, "cgroup %zu of state.json is not a string", i);
		cr_assert(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode), "cgroup %s does not exist",
			  dir);
		cr_assert(cgroup_tree_has_pid(dir, pid), "pid %d is not in cgroup %s", (int)pid,
			  dir);
	}
	// the command, recorded with the spec ("spec": {"argv": ...}; top level in older states)
	argv = json_object_get(json_object_get(st, "spec"), "argv");
	if (!argv)
		argv = json_object_get(st, "argv");
	cr_assert(json_is_array(argv) && json_array_size(argv) == 2 &&
		      !strcmp(json_string_value(json_array_get(argv, 0)) ?: "", "sleep") &&
		      !strcmp(json_string_value(json_array_get(argv, 1)) ?: "", "876543"),
		  "argv in state.json is not [sleep, 876543]: %s", json_dumps(argv, JSON_COMPACT));

	kill(p.pid, SIGTERM);
	lbt_wait(&p, &o, 10.0);
	LBT_ASSERT_EXIT(o, 143);
	cr_assert_eq(access(statedir, F_OK), -1, "state directory %s still there", statedir);
	cr_assert_eq(runroot_entries(NULL, 0), 0, "runroot not empty after the run");
	json_array_foreach(cgroups, i, v)
	{
		cr_assert_eq(access(json_string_value(v), F_OK), -1, "cgroup %s still there",
			     json_string_value(v));
	}
	cr_assert_eq(kill(pid, 0), -1, "the sandbox's pid 1 (%d) is still alive", (int)pid);
	json_decref(st);
	free(statedir);
	free(nspid);
	lbt_out_free(&o);
}

/* ---- 4. --cgroup-parent ------------------------------------------------------------------- */

static void cgp_mkdir(const char *dir)
{
	if (mkdir(dir, 0755) == 0) {
		cr_assert_lt(CGP.n_created, MAX_CGP);
		CGP.created[CGP.n_created++] = strdup(dir);
		// a v1 cpuset cgroup takes no task before it has cpus and mems
		char *slash = strrchr(dir, '/');
		char *parent = strndup(dir, (size_t)(slash - dir));

		for (int i = 0; i < 2; i++) {
			const char *file = i ? "cpuset.mems" : "cpuset.cpus";
			char *src = lbt_strdupf("%s/%s", parent, file);
			char *dst = lbt_strdupf("%s/%s", dir, file);
			char *val = lbt_read_file(src);

			if (val && *val)
				lbt_write_file(dst, val);
			free(val);
			free(src);
			free(dst);
		}
		free(parent);
		return;
	}
	cr_assert_eq(errno, EEXIST, "mkdir %s: %s", dir, strerror(errno));
}

struct cg_mnt {
	char dev[32], root[PATH_MAX], mnt[PATH_MAX];
	bool v2;
};

// The cgroup mounts of /proc/self/mountinfo, each hierarchy once.
static int cg_mounts(struct cg_mnt *out, int max)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], fstype[64];
	int n = 0;

	cr_assert_not_null(f);
	while (n < max && fgets(line, sizeof(line), f)) {
		char *post = strstr(line, " - ");
		struct cg_mnt *m = &out[n];
		bool dup = false;

		if (!post || sscanf(post + 3, "%63s", fstype) != 1 ||
		    (strcmp(fstype, "cgroup") && strcmp(fstype, "cgroup2")) ||
		    sscanf(line, "%*d %*d %31s %4095s %4095s", m->dev, m->root, m->mnt) != 3)
			continue;
		m->v2 = !strcmp(fstype, "cgroup2");
		for (int i = 0; i < n; i++)
			dup = dup || !strcmp(out[i].dev, m->dev);
		n += !dup;
	}
	fclose(f);
	return n;
}

// Creates the parent cgroup in every hierarchy lbbox may use; returns its path relative to
// the hierarchy root, as --cgroup-parent takes it.
static char *make_cgroup_parent(const char *name)
{
	struct cg_mnt m[16];
	bool v2 = false;
	int n = cg_mounts(m, 16);

	cr_assert_not_null(lbt_cgroup_dir("pids", &v2), "no pids cgroup hierarchy");
	if (!v2) {
		// v1: the same relative path in every hierarchy; in those where this test's own
		// cgroup is the root, that is under the harness's private lbt-<pid> cgroup.
		char *rel = lbt_strdupf("/lbt-%d/%s", (int)getpid(), name);

		for (int i = 0; i < n; i++) {
			if (m[i].v2)
				continue;
			cr_assert_str_eq(m[i].root, "/", "cgroup v1 mount %s shows a subtree only",
					 m[i].mnt);
			char *top = lbt_strdupf("%s/lbt-%d", m[i].mnt, (int)getpid());
			char *dir = lbt_strdupf("%s%s", m[i].mnt, rel);

			cgp_mkdir(top);
			cgp_mkdir(dir);
			CGP.bases[CGP.n_bases++] = dir;
			free(top);
		}
		return rel;
	}
	// v2: a child of the cgroup lbbox runs in (not of the leaf lbbox moves processes into)
	char *own = strdup(lbt_cgroup_dir("", NULL));
	size_t ol = strlen(own), ll = strlen("/lbbox-leaf");
	const struct cg_mnt *best = NULL;

	if (ol > ll && !strcmp(own + ol - ll, "/lbbox-leaf"))
		own[ol - ll] = '\0';
	for (int i = 0; i < n; i++) {
		size_t ml = strlen(m[i].mnt);

		if (m[i].v2 && !strncmp(own, m[i].mnt, ml) && (own[ml] == '/' || !own[ml]) &&
		    (!best || ml > strlen(best->mnt)))
			best = &m[i];
	}
	cr_assert_not_null(best, "no cgroup2 mount holds %s", own);
	char *dir = lbt_strdupf("%s/%s", own, name);
	char *rel = lbt_strdupf("%s%s/%s", strcmp(best->root, "/") ? best->root : "",
				own + strlen(best->mnt), name);

	cgp_mkdir(dir);
	CGP.bases[CGP.n_bases++] = dir;
	free(own);
	return rel;
}

static bool is_under_a_base(const char *path, const char *id)
{
	for (int i = 0; i < CGP.n_bases; i++) {
		char *want = lbt_strdupf("%s/lbbox-%s", CGP.bases[i], id);
		bool eq = !strcmp(path, want);

		free(want);
		if (eq)
			return true;
	}
	return false;
}

LBT_TEST(lifecycle, cgroup_parent)
{
	struct lbt_proc p;
	struct lb_run_out o;
	char id[64];
	json_t *st, *cgroups, *v;
	size_t i;
	bool v2_pids = false, v2_mem = false;
	const char *own_pids = lbt_cgroup_dir("pids", &v2_pids);
	const char *own_mem = lbt_cgroup_dir("memory", &v2_mem);
	char *rel = make_cgroup_parent("lbt-cgparent-876544");

	lbt_add_marker("876544");
	lbt_spawn(&p, "run", "--cgroup-parent", rel, "--", "sleep", "876544", NULL);
	bool started = wait_sleep("876544", 10.0);

	if (!started) {
		lbt_wait(&p, &o, 10.0);
		cr_assert_fail("sandbox with --cgroup-parent %s did not start (exit %d): %s", rel,
			       o.status, o.err);
	}
	st = read_single_state(id);
	cgroups = json_object_get(st, "cgroups");
	cr_assert(json_is_array(cgroups) && json_array_size(cgroups) > 0,
		  "state.json has no cgroups");
	json_array_foreach(cgroups, i, v)
	{
		const char *dir = json_string_value(v) ?: "";

		cr_assert(is_under_a_base(dir, id), "sandbox cgroup %s is not <%s>/lbbox-%s", dir,
			  rel, id);
		cr_assert_eq(access(dir, F_OK), 0, "sandbox cgroup %s does not exist", dir);
	}
	char *under_pids = lbbox_cgroups_under(own_pids);
	char *under_mem = own_mem ? lbbox_cgroups_under(own_mem) : strdup("");

	cr_assert_str_empty(under_pids, "sandbox cgroup in lbbox's own %s: %s", own_pids,
			    under_pids);
	cr_assert_str_empty(under_mem, "sandbox cgroup in lbbox's own %s: %s", own_mem, under_mem);

	kill(p.pid, SIGTERM);
	lbt_wait(&p, &o, 10.0);
	LBT_ASSERT_EXIT(o, 143);
	json_array_foreach(cgroups, i, v)
	{
		cr_assert_eq(access(json_string_value(v), F_OK), -1, "cgroup %s left behind",
			     json_string_value(v));
	}
	for (int b = 0; b < CGP.n_bases; b++)
		cr_assert_eq(count_subdirs(CGP.bases[b]), 0, "cgroups left under %s", CGP.bases[b]);

	char *created[MAX_CGP];
	int n_created = CGP.n_created;

	for (int k = 0; k < n_created; k++)
		created[k] = strdup(CGP.created[k]);
	cgp_cleanup();
	for (int k = 0; k < n_created; k++) {
		cr_assert_eq(access(created[k], F_OK), -1, "cannot remove our cgroup %s",
			     created[k]);
		free(created[k]);
	}
	json_decref(st);
	free(under_pids);
	free(under_mem);
	free(rel);
	lbt_out_free(&o);
}

/* ---- 5. the Python image ------------------------------------------------------------------ */

static const char *python_rootfs(void)
{
	const char *e = getenv("LBBOX_TEST_PYTHON_ROOTFS");
	const char *dir = e && *e ? e : "/var/lib/lbbox/images/python/rootfs";
	char *py = lbt_strdupf("%s/usr/bin/python3", dir);
	bool ok = access(py, X_OK) == 0;

	free(py);
	cr_assert(ok,
		  "Python rootfs %s missing: run scripts/setup.sh (it builds it with "
		  "rootfs-tools/python.sh), or set LBBOX_TEST_PYTHON_ROOTFS",
		  dir);
	return dir;
}

LBT_TEST(lifecycle, python_image_imports)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--rootfs", python_rootfs(), "--", "python3", "-c",
		"import venv, ssl, sys; print(sys.version_info[0])", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "3\n");
	lbt_out_free(&o);
}

LBT_TEST(lifecycle, python_image_pip)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--rootfs", python_rootfs(), "--", "pip", "--version", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strncmp(o.out, "pip ", 4) && strstr(o.out, "(python 3."),
		  "pip --version printed: %s\n--- stderr:\n%s", o.out, o.err);
	lbt_out_free(&o);
}

LBT_TEST(lifecycle, python_image_venv_in_tmp)
{
	struct lb_run_out o;
	const char *rootfs = python_rootfs();
	char *host_venv = lbt_strdupf("%s/tmp/lbt-venv-876545", rootfs);

	lbt_run(&o, "run", "--rootfs", rootfs, "--", "sh", "-c",
		"python3 -m venv /tmp/lbt-venv-876545 && test -x /tmp/lbt-venv-876545/bin/pip && "
		"/tmp/lbt-venv-876545/bin/python -c "
		"'import sys; print(sys.prefix, sys.prefix != sys.base_prefix, 42)'",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "/tmp/lbt-venv-876545 True 42\n");
	cr_assert_eq(access(host_venv, F_OK), -1, "the venv reached the image on the host: %s",
		     host_venv);
	free(host_venv);
	lbt_out_free(&o);
}

LBT_TEST(lifecycle, python_image_is_read_only)
{
	struct lb_run_out o;
	const char *rootfs = python_rootfs();
	static const char *const paths[] = {"/usr/lbt-ro-876546", "/usr/lib/python3/lbt-ro-876546",
					    "/lbt-ro-876546"};

	lbt_run(&o, "run", "--rootfs", rootfs, "--", "python3", "-c",
		"import errno\n"
		"for p in ('/usr/lbt-ro-876546', '/usr/lib/python3/lbt-ro-876546', "
		"'/lbt-ro-876546'):\n"
		"    try:\n"
		"        open(p, 'w').close(); print(p, 'written')\n"
		"    except OSError as e:\n"
		"        print(p, errno.errorcode[e.errno])\n",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "/usr/lbt-ro-876546 EROFS\n/usr/lib/python3/lbt-ro-876546 EROFS\n"
			  "/lbt-ro-876546 EROFS\n");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *host = lbt_strdupf("%s%s", rootfs, paths[i]);
		bool exists = access(host, F_OK) == 0;

		if (exists)
			unlink(host);
		cr_assert(!exists, "the sandbox wrote %s into the image", host);
		free(host);
	}
	lbt_out_free(&o);
}

/* ---- 6. seccomp BPF cache ----------------------------------------------------------------- */

// The .bpf files in dir: how many, and the name and inode of the first.
static int bpf_files(const char *dir, char *name, size_t len, ino_t *ino, char **listing)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	char *all = strdup("");

	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		char *more;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		more = lbt_strdupf("%s  %s\n", all, e->d_name);
		free(all);
		all = more;
		if (l < 5 || strcmp(e->d_name + l - 4, ".bpf"))
			continue;
		if (n++ == 0) {
			snprintf(name, len, "%s", e->d_name);
			*ino = e->d_ino;
		}
	}
	if (d)
		closedir(d);
	*listing = all;
	return n;
}

static void expect_seccomp_filter(void)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "grep", "^Seccomp:", "/proc/self/status", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "Seccomp:\t2\n");
	lbt_out_free(&o);
}

LBT_TEST(lifecycle, seccomp_filter_is_cached)
{
	char *cache = lbt_strdupf("%s/cache/seccomp", lbt_root());
	char name1[512] = "", name2[512] = "", *list1, *list2;
	ino_t ino1 = 0, ino2 = 0;
	int n;

	expect_seccomp_filter();
	n = bpf_files(cache, name1, sizeof(name1), &ino1, &list1);
	cr_assert_eq(n, 1, "%d .bpf files in %s after one run:\n%s", n, cache, list1);

	expect_seccomp_filter();
	n = bpf_files(cache, name2, sizeof(name2), &ino2, &list2);
	cr_assert_eq(n, 1, "%d .bpf files in %s after two runs:\n%s", n, cache, list2);
	cr_assert_str_eq(name2, name1, "the second run cached another program");
	// loaded, not compiled and stored again (a store replaces the file: a new inode)
	cr_assert_eq(ino2, ino1, "the second run rewrote %s/%s", cache, name1);
	free(list1);
	free(list2);
	free(cache);
}

/* ---- 7. --network host --read-only -------------------------------------------------------- */

LBT_TEST(lifecycle, network_host_keeps_sys_read_only_and_own_proc)
{
	struct lb_run_out o;
	char host_ns[128], *want;
	ssize_t n = readlink("/proc/self/ns/net", host_ns, sizeof(host_ns) - 1);

	// The host's network namespace itself (an own one has another inode).
	cr_assert_gt(n, 0, "readlink /proc/self/ns/net: %s", strerror(errno));
	host_ns[n] = '\0';
	want = lbt_strdupf("%s\n", host_ns);
	lbt_run(&o, "run", "--network", "host", "--read-only", "--", "readlink",
		"/proc/self/ns/net", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, want, "--network host: network namespace %s, the host's is %s",
			 o.out, host_ns);
	free(want);
	lbt_out_free(&o);

	// /sys mounted read-only; writes to it and to the root fail.
	lbt_run(&o, "run", "--network", "host", "--read-only", "--", "sh", "-c",
		"awk '$5 == \"/sys\" { print $6 }' /proc/self/mountinfo", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strncmp(o.out, "ro,", 3) || !strcmp(o.out, "ro\n"),
		  "/sys mount options under --network host: '%s'", o.out);
	cr_assert_eq(lbt_count_lines(o.out), 1, "/sys mounted more than once: %s", o.out);
	lbt_out_free(&o);
	// open for writing only (nothing written) where the file exists on the host
	static const char *const ro[][2] = {
	    {"write", "/sys/lbbox-test-file"},
	    {"openw", "/sys/kernel/mm/transparent_hugepage/enabled"},
	    {"openw", "/sys/class/net/lo/mtu"},
	    {"write", "/lbbox-test-file"},
	};
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
		if (!strcmp(ro[i][0], "openw") && access(ro[i][1], F_OK) < 0)
			continue;
		lbt_run(&o, "run", "--network", "host", "--read-only", LBT_PROBE, ro[i][0],
			ro[i][1], NULL);
		cr_assert_str_eq(o.out, "EROFS\n", "probe %s %s under --network host: %s (exit %d)",
				 ro[i][0], ro[i][1], o.out, o.status);
		lbt_out_free(&o);
	}

	// Its own /proc: only the sandbox's processes, pid 1 is lbbox's init.
	lbt_run(&o, "run", "--network", "host", "--read-only", "--", "sh", "-c",
		"set -- /proc/[0-9]*; echo $#; tr -d '\\0' </proc/1/cmdline; echo", NULL);
	LBT_ASSERT_EXIT(o, 0);
	int nprocs = atoi(o.out);
	char *second = strchr(o.out, '\n');

	cr_assert(nprocs >= 1 && nprocs <= 3, "%d processes visible in /proc: %s", nprocs, o.out);
	cr_assert(second && !strncmp(second + 1, "lbbox", 5), "/proc/1 is not lbbox's init: %s",
		  o.out);
	lbt_out_free(&o);
}
