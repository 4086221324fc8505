/*
 * The cgroup layer on whatever the machine has: v1 on hybrid hosts, pure v2 in the qemu guest
 * (scripts/vm-test.sh, which runs us in /sys/fs/cgroup/test/runner with CGROOT set). Every test
 * registers what it creates so teardown kills, reaps and removes it even after a failed
 * assertion, then checks that no directory is left behind.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/sandbox/cgroup.h"
#include "sandbox/cgroup_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

#define MiB		   (1024ull * 1024)
#define CGROUP2_MAGIC	   0x63677270
#define MAX_CGS		   8
#define MAX_KIDS	   64
#define MAX_PATHS	   32
#define TEST_CLONE_INTO_CG 0x200000000ULL

static struct lb_cgroup *cgs[MAX_CGS];
static size_t ncgs;
static pid_t kids[MAX_KIDS];
static size_t nkids;
static char *paths[MAX_PATHS]; /* every directory a test cgroup had: must be gone afterwards */
static size_t npaths;
static char prefix[64]; /* "lbbox-test-<pid>-": names of this test's cgroups */

static const char *msg(const struct lb_err *e)
{
	return e && e->msg ? e->msg : "(no message)";
}

static uint64_t now_ms(void)
{
	return lb_now_ns() / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static enum lb_cgroup_version expected_version(void)
{
	struct statfs sf;
	if (statfs("/sys/fs/cgroup", &sf) == 0 && (unsigned long)sf.f_type == CGROUP2_MAGIC)
		return LB_CGROUP_V2;
	return LB_CGROUP_V1;
}

/* The cgroup hierarchy path the test can pass as an explicit parent. */
static const char *explicit_parent(void)
{
	const char *root = getenv("CGROOT");
	const char *mnt = "/sys/fs/cgroup";
	if (root && !strncmp(root, mnt, strlen(mnt)) && root[strlen(mnt)] == '/')
		return root + strlen(mnt);
	return "/";
}

static void setup(void)
{
	snprintf(prefix, sizeof(prefix), "lbbox-test-%d-", (int)getpid());
	/* orphans of our children (double-forked daemons) come back to us to be reaped */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* A reaped pid may be reused at once: never signal it again. */
static void forget_kid(pid_t pid)
{
	for (size_t i = 0; i < nkids; i++) {
		if (kids[i] != pid)
			continue;
		kids[i] = kids[--nkids];
		return;
	}
}

static void add_kid(pid_t pid)
{
	cr_assert(nkids < MAX_KIDS);
	kids[nkids++] = pid;
}

/* Reaps every child; true when all are gone before the deadline. */
static bool reap_all(uint64_t timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		pid_t p = waitpid(-1, NULL, WNOHANG);
		if (p < 0 && errno == ECHILD)
			return true;
		if (p > 0) {
			forget_kid(p);
			continue;
		}
		if (now_ms() >= deadline)
			return false;
		sleep_ms(2);
	}
}

/* No entry named prefix* in the directory that held path. */
static void expect_no_leftover_in_parent(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));)
		cr_expect(strncmp(e->d_name, prefix, strlen(prefix)), "leftover cgroup %s/%s", dir,
			  e->d_name);
	closedir(d);
}

static void teardown(void)
{
	struct lb_err *err = NULL;

	while (ncgs > 0) {
		int r = lb_cgroup_destroy(cgs[--ncgs], &err);
		cr_expect(r == 0, "destroy: %s", msg(err));
		lb_err_free(&err);
	}
	for (size_t i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	cr_expect(reap_all(5000), "children left running");
	nkids = 0;
	for (size_t i = 0; i < npaths; i++) {
		struct stat st;
		cr_expect(stat(paths[i], &st) < 0 && errno == ENOENT, "%s left behind", paths[i]);
		expect_no_leftover_in_parent(paths[i]);
		free(paths[i]);
	}
	npaths = 0;
}

TestSuite(cgroup, .init = setup, .fini = teardown, .timeout = 90);

static void remember_paths(struct lb_cgroup *cg)
{
	for (const char *const *p = lb_cgroup_paths(cg); *p && npaths < MAX_PATHS; p++)
		paths[npaths++] = strdup(*p);
}

/* Creates lbbox-test-<pid>-<suffix>; teardown destroys it. */
static struct lb_cgroup *mk(const char *suffix, const char *parent,
			    const struct lb_cgroup_limits *lim)
{
	struct lb_err *err = NULL;
	struct lb_cgroup *cg = NULL;
	char name[128];

	snprintf(name, sizeof(name), "%s%s", prefix, suffix);
	int r = lb_cgroup_create(name, parent, lim, &cg, &err);
	cr_assert(r == 0, "create %s: %s", name, msg(err));
	cr_assert(ncgs < MAX_CGS);
	cgs[ncgs++] = cg;
	remember_paths(cg);
	cr_assert_eq(lb_cgroup_version(cg), expected_version());
	return cg;
}

/* Destroys cg now (the test wants to look at the result) and forgets it for teardown. */
static void destroy_now(struct lb_cgroup *cg)
{
	struct lb_err *err = NULL;
	for (size_t i = 0; i < ncgs; i++) {
		if (cgs[i] != cg)
			continue;
		cgs[i] = cgs[--ncgs];
		int r = lb_cgroup_destroy(cg, &err);
		cr_assert(r == 0, "destroy: %s", msg(err));
		return;
	}
	cr_assert_fail("unknown cgroup");
}

/* Reads file from whichever directory of cg has it (v1 spreads files over hierarchies). */
static char *read_cg_file(struct lb_cgroup *cg, const char *file)
{
	for (const char *const *p = lb_cgroup_paths(cg); *p; p++) {
		char path[PATH_MAX];
		char *buf = NULL;
		snprintf(path, sizeof(path), "%s/%s", *p, file);
		if (lb_read_file(path, 4096, &buf, NULL, NULL) < 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		return buf;
	}
	cr_assert_fail("no %s in the cgroup", file);
	return NULL;
}

static void expect_file(struct lb_cgroup *cg, const char *file, const char *want)
{
	char *got = read_cg_file(cg, file);
	cr_expect_str_eq(got, want, "%s", file);
	free(got);
}

/*
 * Forks a child that runs fn only once the parent attached it to cg, so everything it does is
 * accounted there. setsid: a stray kill(0, ...) in the child never hits the criterion runner.
 */
static pid_t spawn(struct lb_cgroup *cg, int (*fn)(void *), void *arg)
{
	struct lb_err *err = NULL;
	int sync[2];
	char c = 'x';

	cr_assert(pipe(sync) == 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		setsid();
		close(sync[1]);
		if (read(sync[0], &c, 1) != 1)
			_exit(100);
		_exit(fn(arg));
	}
	add_kid(pid);
	close(sync[0]);
	int r = lb_cgroup_attach(cg, pid, &err);
	if (r == 0)
		cr_assert(write(sync[1], &c, 1) == 1);
	close(sync[1]);
	cr_assert(r == 0, "attach: %s", msg(err));
	return pid;
}

/* Waits for pid with a deadline; returns its wait status. */
static int wait_for(pid_t pid, uint64_t timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;
	int st = 0;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		cr_assert(r >= 0, "waitpid: %s", strerror(errno));
		if (r == pid) {
			forget_kid(pid);
			return st;
		}
		cr_assert(now_ms() < deadline, "child %d still running", (int)pid);
		sleep_ms(5);
	}
}

/* After a destroy: pid was SIGKILLed and every directory in keep (freed here) is gone. */
static void expect_killed_and_removed(pid_t pid, char **keep, size_t n)
{
	int status = wait_for(pid, 5000);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		cr_expect(stat(keep[i], &st) < 0 && errno == ENOENT, "%s still exists", keep[i]);
		free(keep[i]);
	}
}

static void get_stats(struct lb_cgroup *cg, struct lb_cgroup_stats *st)
{
	struct lb_err *err = NULL;
	int r = lb_cgroup_stats(cg, st, &err);
	cr_assert(r == 0, "stats: %s", msg(err));
}

static void kill_cg(struct lb_cgroup *cg)
{
	struct lb_err *err = NULL;
	uint64_t t0 = now_ms();
	int r = lb_cgroup_kill(cg, &err);
	cr_assert(r == 0, "kill: %s", msg(err));
	cr_assert(lb_cgroup_is_empty(cg), "tasks left after kill");
	cr_log_info("lb_cgroup_kill took %llu ms", (unsigned long long)(now_ms() - t0));
}

/* ---- children ---------------------------------------------------------------------------- */

static int child_hog(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	volatile char *p = malloc(n);
	if (!p)
		return 2;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	return 0; /* survived: the limit did not hold */
}

static int child_fork_until_refused(void *arg)
{
	(void)arg;
	for (int i = 0; i < 32; i++) {
		pid_t p = fork();
		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p < 0)
			return errno == EAGAIN ? 42 : 43;
	}
	return 44;
}

static int child_spin(void *arg)
{
	uint64_t end = now_ms() + (uint64_t)(uintptr_t)arg;
	volatile uint64_t x = 0;
	while (now_ms() < end)
		x++;
	return 0;
}

static int child_pause(void *arg)
{
	(void)arg;
	while (pause() < 0 && errno == EINTR)
		;
	return 1;
}

static void report_and_pause(int fd)
{
	pid_t me = getpid();
	if (write(fd, &me, sizeof(me)) != sizeof(me))
		_exit(3);
	for (;;)
		pause();
}

/* Classic daemon: fork, setsid, fork again, middle exits; the survivor is nobody's child. */
static void daemonize_and_pause(int fd)
{
	setsid();
	pid_t p = fork();
	if (p != 0)
		_exit(p < 0);
	report_and_pause(fd);
}

#define TREE_PIDS 6

/* Itself, 2 plain grandchildren and 3 double-forked daemons, each reporting its pid on fd. */
static int child_tree(void *arg)
{
	int fd = (int)(intptr_t)arg;
	for (int i = 0; i < 5; i++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0 && i < 2)
			report_and_pause(fd);
		if (p == 0)
			daemonize_and_pause(fd);
	}
	report_and_pause(fd);
	return 0;
}

static void read_pids(int fd, pid_t *pids, size_t n)
{
	uint64_t deadline = now_ms() + 10000;
	size_t got = 0;
	while (got < n * sizeof(pid_t)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		cr_assert(now_ms() < deadline, "tree reported %zu of %zu pids", got / sizeof(pid_t),
			  n);
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t r = read(fd, (char *)pids + got, n * sizeof(pid_t) - got);
		cr_assert(r > 0);
		got += (size_t)r;
	}
}

/* ---- tests ------------------------------------------------------------------------------- */

Test(cgroup, limits_read_back)
{
	struct lb_cgroup_limits lim = {.memory_bytes = 40 * MiB, .pids = 8, .cpu_quota_us = 50000};
	struct lb_cgroup *cg = mk("limits", NULL, &lim);

	cr_assert_not_null(lb_cgroup_paths(cg)[0]);
	if (lb_cgroup_version(cg) == LB_CGROUP_V2) {
		cr_expect_geq(lb_cgroup_dirfd(cg), 0);
		cr_expect_null(lb_cgroup_v1_hierarchies(cg)[0]);
		expect_file(cg, "memory.max", "41943040");
		expect_file(cg, "memory.swap.max", "0");
		expect_file(cg, "pids.max", "8");
		expect_file(cg, "cpu.max", "50000 100000");
		return;
	}
	cr_expect_eq(lb_cgroup_dirfd(cg), -1);
	expect_file(cg, "memory.limit_in_bytes", "41943040");
	expect_file(cg, "memory.memsw.limit_in_bytes", "41943040");
	expect_file(cg, "pids.max", "8");
	expect_file(cg, "cpu.cfs_period_us", "100000");
	expect_file(cg, "cpu.cfs_quota_us", "50000");
	/* what the sandbox mounts: the hierarchies holding limits and accounting */
	const char *const *h = lb_cgroup_v1_hierarchies(cg);
	bool mem = false, pids = false, cpu = false;
	for (; *h; h++) {
		mem |= !strcmp(*h, "memory");
		pids |= !strcmp(*h, "pids");
		cpu |= !strncmp(*h, "cpu", 3) && strcmp(*h, "cpuset");
		cr_expect(strcmp(*h, "freezer"), "freezer is not for the sandbox");
	}
	cr_expect(mem && pids && cpu, "v1 hierarchies incomplete");
}

Test(cgroup, memory_limit_oom_kills)
{
	struct lb_cgroup_limits lim = {.memory_bytes = 40 * MiB};
	struct lb_cgroup *cg = mk("oom", NULL, &lim);
	struct lb_cgroup_stats st;

	pid_t pid = spawn(cg, child_hog, (void *)(uintptr_t)(100 * MiB));
	int status = wait_for(pid, 30000);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "hog was not OOM-killed (status 0x%x)", status);
	get_stats(cg, &st);
	cr_expect_geq(st.oom_kills, 1);
	cr_expect_gt(st.memory_peak, 0);
	cr_expect_leq(st.memory_peak, 40 * MiB);
}

Test(cgroup, pids_limit_refuses_fork)
{
	struct lb_cgroup_limits lim = {.pids = 8};
	struct lb_cgroup *cg = mk("pids", NULL, &lim);
	struct lb_cgroup_stats st;

	pid_t pid = spawn(cg, child_fork_until_refused, NULL);
	int status = wait_for(pid, 30000);
	cr_assert(WIFEXITED(status), "status 0x%x", status);
	cr_assert_eq(WEXITSTATUS(status), 42, "fork did not fail with EAGAIN (exit %d)",
		     WEXITSTATUS(status));
	get_stats(cg, &st);
	cr_expect_leq(st.pids_peak, 8);
	kill_cg(cg); /* the paused grandchildren */
}

Test(cgroup, cpu_quota_throttles)
{
	struct lb_cgroup_limits lim = {.cpu_quota_us = 10000, .cpu_period_us = 50000};
	struct lb_cgroup *cg = mk("cpu", NULL, &lim);
	struct lb_cgroup_stats st;

	if (lb_cgroup_version(cg) == LB_CGROUP_V2) {
		expect_file(cg, "cpu.max", "10000 50000");
	} else {
		expect_file(cg, "cpu.cfs_quota_us", "10000");
		expect_file(cg, "cpu.cfs_period_us", "50000");
	}
	pid_t pid = spawn(cg, child_spin, (void *)(uintptr_t)1000);
	int status = wait_for(pid, 30000);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	get_stats(cg, &st);
	/* 20 % of one CPU for 1 s: about 200 ms, far from the 1000 ms it would burn unthrottled */
	cr_expect_gt(st.cpu_usec, 0);
	cr_expect_lt(st.cpu_usec, 500000, "cpu %llu us", (unsigned long long)st.cpu_usec);
}

/* child_tree in cg; the pids it reports in pids. */
static void spawn_tree(struct lb_cgroup *cg, pid_t pids[TREE_PIDS])
{
	int rep[2];
	cr_assert(pipe(rep) == 0);
	spawn(cg, child_tree, (void *)(intptr_t)rep[1]);
	close(rep[1]);
	read_pids(rep[0], pids, TREE_PIDS);
	close(rep[0]);
}

/* Every process of the tree gone once the children are reaped (after what). */
static void expect_tree_gone(const pid_t pids[TREE_PIDS], const char *what)
{
	cr_assert(reap_all(5000), "children left after the %s", what);
	for (int i = 0; i < TREE_PIDS; i++)
		cr_expect(kill(pids[i], 0) < 0 && errno == ESRCH, "pid %d survived", (int)pids[i]);
}

Test(cgroup, kill_takes_the_whole_tree)
{
	struct lb_cgroup *cg = mk("tree", NULL, NULL);
	pid_t pids[TREE_PIDS];

	spawn_tree(cg, pids);
	cr_assert_not(lb_cgroup_is_empty(cg));
	kill_cg(cg);
	expect_tree_gone(pids, "kill");
}

/* What an OCI runtime's ps and kill --all use for a container sharing a pid namespace: every
 * process of the tree is listed (daemons included), and a signal reaches each. */
Test(cgroup, pids_and_signal_reach_the_whole_tree)
{
	struct lb_cgroup *cg = mk("listed", NULL, NULL);
	struct lb_err *err = NULL;
	pid_t pids[TREE_PIDS], *listed = NULL;
	size_t n = 0;

	spawn_tree(cg, pids);
	/* a daemon's middle process may not have exited yet when the last pid is reported */
	for (uint64_t deadline = now_ms() + 5000;; sleep_ms(10)) {
		cr_assert_eq(lb_cgroup_pids(cg, &listed, &n, &err), 0, "%s", msg(err));
		if (n == TREE_PIDS || now_ms() >= deadline)
			break;
		free(listed);
	}
	for (int i = 0; i < TREE_PIDS; i++) {
		bool seen = false;
		for (size_t k = 0; k < n; k++)
			seen = seen || listed[k] == pids[i];
		cr_expect(seen, "pid %d not listed", (int)pids[i]);
	}
	cr_expect_eq(n, TREE_PIDS + 0, "listed %zu", n);
	free(listed);
	cr_assert_eq(lb_cgroup_signal(cg, SIGTERM, &err), 0, "%s", msg(err));
	expect_tree_gone(pids, "signal");
}

/* A pid read from cgroup.procs whose process then left (here: one never in it, as a reused pid
 * would be) is not signalled: each goes through a pidfd checked against a second read. */
Test(cgroup, signal_skips_a_pid_the_cgroup_no_longer_lists)
{
	struct lb_cgroup *cg = mk("reused", NULL, NULL);
	struct lb_err *err = NULL;
	pid_t member = spawn(cg, child_pause, NULL);
	pid_t outsider = fork();
	cr_assert(outsider >= 0);
	if (outsider == 0) {
		pause();
		_exit(0);
	}
	add_kid(outsider);
	pid_t listed[] = {member, outsider};
	cr_assert_eq(cg_signal_listed(&cg->dirs[0], listed, 2, SIGTERM, &err), 0, "%s", msg(err));
	int status;
	cr_assert_eq(waitpid(member, &status, 0), member);
	forget_kid(member);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "the member got it");
	sleep_ms(50);
	cr_expect_eq(waitpid(outsider, NULL, WNOHANG), 0, "the outsider was signalled");
	kill(outsider, SIGKILL);
	waitpid(outsider, NULL, 0);
	forget_kid(outsider);
}

/* Itself and a child, each counting in its own slot of the shared page arg. */
static int child_count_pair(void *arg)
{
	volatile uint64_t *slot = arg;
	pid_t p = fork();
	if (p < 0)
		return 2;
	for (int i = p == 0;;)
		slot[i]++;
}

/* Both counters move (bounded wait): true when each passed its value in from. */
static bool counters_move(volatile uint64_t *slot, const uint64_t *from, uint64_t timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;
	while (slot[0] <= from[0] || slot[1] <= from[1])
		if (now_ms() >= deadline)
			return false;
		else
			sleep_ms(2);
	return true;
}

Test(cgroup, freeze_stops_the_tree_and_thaw_restarts_it)
{
	struct lb_cgroup *cg = mk("freeze", NULL, NULL);
	struct lb_err *err = NULL;
	volatile uint64_t *slot =
	    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t zero[2] = {0, 0}, seen[2];

	cr_assert(slot != MAP_FAILED);
	spawn(cg, child_count_pair, (void *)slot);
	cr_assert(counters_move(slot, zero, 5000), "the tree never ran");
	cr_assert_not(lb_cgroup_frozen(cg));
	int r = lb_cgroup_freeze(cg, true, &err);
	cr_assert(r == 0, "freeze: %s", msg(err));
	cr_assert(lb_cgroup_frozen(cg));
	seen[0] = slot[0], seen[1] = slot[1];
	sleep_ms(200);
	cr_expect_eq(slot[0], seen[0], "the frozen process ran");
	cr_expect_eq(slot[1], seen[1], "its frozen child ran");
	r = lb_cgroup_freeze(cg, false, &err);
	cr_assert(r == 0, "thaw: %s", msg(err));
	cr_assert_not(lb_cgroup_frozen(cg));
	cr_expect(counters_move(slot, seen, 5000), "the tree did not run again after the thaw");
	kill_cg(cg);
	cr_assert(reap_all(5000), "children left after the kill");
	munmap((void *)slot, 4096);
}

Test(cgroup, destroy_kills_and_removes)
{
	struct lb_cgroup_limits lim = {.memory_bytes = 64 * MiB, .pids = 16};
	struct lb_cgroup *cg = mk("destroy", NULL, &lim);
	char *keep[8] = {0};
	size_t n = 0;

	pid_t pid = spawn(cg, child_pause, NULL);
	for (const char *const *p = lb_cgroup_paths(cg); *p && n < 8; p++)
		keep[n++] = strdup(*p);
	destroy_now(cg);
	expect_killed_and_removed(pid, keep, n);
}

Test(cgroup, no_limits)
{
	static const struct lb_cgroup_limits zero;
	struct lb_cgroup *a = mk("nolim-null", NULL, NULL);
	struct lb_cgroup *b = mk("nolim-zero", NULL, &zero);
	struct lb_cgroup_stats st;

	pid_t pid = spawn(b, child_spin, (void *)(uintptr_t)100);
	cr_assert(WIFEXITED(wait_for(pid, 10000)));
	get_stats(b, &st);
	cr_expect_gt(st.cpu_usec, 0);
	spawn(a, child_pause, NULL);
	kill_cg(a);
	destroy_now(a);
	destroy_now(b);
}

Test(cgroup, explicit_parent)
{
	const char *parent = explicit_parent();
	struct lb_cgroup_limits lim = {.memory_bytes = 48 * MiB, .pids = 32};
	struct lb_cgroup *cg = mk("explicit", parent, &lim);
	char want[PATH_MAX];

	/* every directory is <mount point><parent>/<name> */
	for (const char *const *p = lb_cgroup_paths(cg); *p; p++) {
		snprintf(want, sizeof(want), "%s%s%sexplicit", strcmp(parent, "/") ? parent : "",
			 "/", prefix);
		size_t wl = strlen(want), pl = strlen(*p);
		cr_expect(pl > wl && !strcmp(*p + pl - wl, want), "%s does not end in %s", *p,
			  want);
	}
	pid_t pid = spawn(cg, child_hog, (void *)(uintptr_t)(100 * MiB));
	int status = wait_for(pid, 30000);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

Test(cgroup, explicit_parent_missing_fails)
{
	struct lb_err *err = NULL;
	struct lb_cgroup *cg = NULL;

	int r = lb_cgroup_create("x", "/lbbox-no-such-parent-dir", NULL, &cg, &err);
	cr_expect_lt(r, 0);
	cr_expect_null(cg);
	cr_expect_not_null(err);
	lb_err_free(&err);
	r = lb_cgroup_create("../escape", NULL, NULL, &cg, &err);
	cr_expect_lt(r, 0);
	lb_err_free(&err);
}

/* Per-exec cgroups nest under the session's: killing the session takes them along. */
Test(cgroup, nested_killed_with_outer)
{
	struct lb_cgroup_limits lim = {.memory_bytes = 64 * MiB, .pids = 64};
	struct lb_cgroup *outer = mk("outer", NULL, &lim);
	char inner_name[80];

	snprintf(inner_name, sizeof(inner_name), "outer/exec");
	struct lb_cgroup *inner = mk(inner_name, NULL, NULL);
	pid_t a = spawn(inner, child_pause, NULL);
	pid_t b = spawn(outer, child_pause, NULL);
	cr_assert_not(lb_cgroup_is_empty(outer));
	kill_cg(outer);
	cr_expect(lb_cgroup_is_empty(inner));
	int sa = wait_for(a, 5000), sb = wait_for(b, 5000);
	cr_expect(WIFSIGNALED(sa) && WIFSIGNALED(sb));
	/* destroying the outer one first removes the inner directory too; inner's destroy copes */
	destroy_now(outer);
	destroy_now(inner);
}

/* destroy tries one rmdir per directory first (cgroup.c): a task left only in a child cgroup, or
 * an empty child, must send it down the careful path, which kills and removes everything. */
Test(cgroup, destroy_with_children_kills_and_removes_them)
{
	struct lb_cgroup *outer = mk("dchild", NULL, NULL);
	struct lb_cgroup *busy = mk("dchild/busy", NULL, NULL);
	struct lb_cgroup *idle = mk("dchild/idle", NULL, NULL);
	char *keep[24] = {0};
	size_t n = 0;

	pid_t pid = spawn(busy, child_pause, NULL);
	struct lb_cgroup *all[] = {outer, busy, idle};
	for (size_t k = 0; k < 3; k++)
		for (const char *const *p = lb_cgroup_paths(all[k]); *p && n < 24; p++)
			keep[n++] = strdup(*p);
	destroy_now(outer);
	expect_killed_and_removed(pid, keep, n);
	destroy_now(busy);
	destroy_now(idle);
}

/* The limit sits on the session cgroup, the victim in a per-exec child: the session counts it. */
Test(cgroup, nested_oom_counted_at_outer)
{
	struct lb_cgroup_limits lim = {.memory_bytes = 40 * MiB};
	struct lb_cgroup *outer = mk("oom-outer", NULL, &lim);
	struct lb_cgroup *inner = mk("oom-outer/exec", NULL, NULL);
	struct lb_cgroup_stats st;

	pid_t pid = spawn(inner, child_hog, (void *)(uintptr_t)(100 * MiB));
	int status = wait_for(pid, 30000);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "hog was not OOM-killed (status 0x%x)", status);
	get_stats(outer, &st);
	cr_expect_geq(st.oom_kills, 1);
	cr_expect_leq(st.memory_peak, 40 * MiB);
}

/* v2: lbbox's own cgroup has processes, so enabling controllers moves them into a leaf. */
Test(cgroup, v2_leaf_move_and_clone_into_cgroup)
{
	if (expected_version() != LB_CGROUP_V2)
		cr_skip_test("cgroup v1 host: no no-internal-process rule, no CLONE_INTO_CGROUP");
	struct lb_cgroup_limits lim = {.memory_bytes = 64 * MiB, .pids = 64, .cpu_quota_us = 50000};
	struct lb_cgroup *cg = mk("leaf", NULL, &lim);
	char *own = NULL, *procs = NULL, *ctl = NULL, path[PATH_MAX];

	cr_assert(lb_read_file("/proc/self/cgroup", 4096, &own, NULL, NULL) == 0);
	own[strcspn(own, "\n")] = '\0';
	cr_log_info("own cgroup now %s, sandbox %s", own, lb_cgroup_paths(cg)[0]);
	bool at_root = !strcmp(own, "0::/");
	if (!at_root) {
		cr_expect(strstr(own, "/lbbox-leaf") != NULL, "not moved into the leaf: %s", own);
		/* the parent of the sandbox has no process of its own and the controllers on */
		snprintf(path, sizeof(path), "%s", lb_cgroup_paths(cg)[0]);
		*strrchr(path, '/') = '\0';
		strcat(path, "/cgroup.procs");
		cr_assert(lb_read_file(path, 4096, &procs, NULL, NULL) == 0);
		cr_expect_str_empty(procs);
		strcpy(strrchr(path, '/'), "/cgroup.subtree_control");
		cr_assert(lb_read_file(path, 4096, &ctl, NULL, NULL) == 0);
		cr_expect(strstr(ctl, "memory") && strstr(ctl, "pids") && strstr(ctl, "cpu"), "%s",
			  ctl);
	}
	free(own), free(procs), free(ctl);

	/* a second sandbox goes beside the first, not under the leaf */
	struct lb_cgroup *cg2 = mk("leaf2", NULL, &lim);
	snprintf(path, sizeof(path), "%s", lb_cgroup_paths(cg)[0]);
	*strrchr(path, '/') = '\0';
	cr_expect(!strncmp(lb_cgroup_paths(cg2)[0], path, strlen(path)) &&
		      !strchr(lb_cgroup_paths(cg2)[0] + strlen(path) + 1, '/'),
		  "%s not beside %s", lb_cgroup_paths(cg2)[0], lb_cgroup_paths(cg)[0]);

	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
		    set_tid, set_tid_size, cgroup;
	} args = {.flags = TEST_CLONE_INTO_CG,
		  .exit_signal = SIGCHLD,
		  .cgroup = (uint64_t)lb_cgroup_dirfd(cg)};
	const char *name = strrchr(lb_cgroup_paths(cg)[0], '/');
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	cr_assert_geq(pid, 0, "clone3: %s", strerror(errno));
	if (pid == 0) {
		/* raw clone: only async-signal-safe calls here */
		char buf[512] = {0};
		int fd = open("/proc/self/cgroup", O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		_exit(n > 0 && strstr(buf, name) ? 0 : 1);
	}
	add_kid(pid);
	int status = wait_for(pid, 5000);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child not in %s", name);
}

/* Exit code bits of the child in no_hierarchy. */
static int none_checks(void)
{
	struct lb_cgroup_limits lim = {.pids = 10};
	struct lb_cgroup_stats st;
	struct lb_err *err = NULL;
	struct lb_cgroup *cg = NULL;
	int bad = 0;

	if (lb_cgroup_create("lbbox-none", NULL, NULL, &cg, &err) < 0)
		return 1;
	if (lb_cgroup_version(cg) != LB_CGROUP_NONE || lb_cgroup_dirfd(cg) != -1 ||
	    lb_cgroup_paths(cg)[0] || lb_cgroup_v1_hierarchies(cg)[0])
		bad |= 2;
	if (lb_cgroup_attach(cg, getpid(), &err) < 0 || lb_cgroup_kill(cg, &err) < 0 ||
	    !lb_cgroup_is_empty(cg) || lb_cgroup_stats(cg, &st, &err) < 0 ||
	    lb_cgroup_destroy(cg, &err) < 0)
		bad |= 4;
	cg = NULL;
	if (lb_cgroup_create("lbbox-none", NULL, &lim, &cg, &err) == 0 || !err ||
	    !strstr(err->msg, "cannot enforce"))
		bad |= 8;
	lb_err_free(&err);
	return bad;
}

/* No cgroup mounted at all (a private mount namespace without /sys/fs/cgroup). */
Test(cgroup, no_hierarchy)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(64);
		if (umount2("/sys/fs/cgroup", MNT_DETACH) < 0)
			_exit(65);
		_exit(none_checks());
	}
	add_kid(pid);
	int status = wait_for(pid, 10000);
	cr_assert(WIFEXITED(status));
	cr_expect_eq(WEXITSTATUS(status), 0, "none checks failed: %d", WEXITSTATUS(status));
}

Test(cgroup_name, one_component_only)
{
	static const char *const bad[] = {"", ".", "..", "a/b", "/a", "a/", "lbbox-leaf"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_not(lb_cgroup_name_ok(bad[i]), "'%s' accepted", bad[i]);
	cr_expect_not(lb_cgroup_name_ok(NULL));
	char longest[257];
	memset(longest, 'a', 256);
	longest[256] = '\0';
	cr_expect_not(lb_cgroup_name_ok(longest), "a 256-byte name accepted");
	longest[255] = '\0';
	cr_expect(lb_cgroup_name_ok(longest), "a 255-byte name refused");
	cr_expect(lb_cgroup_name_ok("lbbox-sb-1"));
	cr_expect(lb_cgroup_name_ok("...x"));
}

/* lbbox-runc update's engine side: new values land (v1 memory and memsw in a valid order),
 * a refused update writes nothing. */
Test(cgroup, update_applies_and_refuses)
{
	struct lb_cgroup_limits lim = {.memory_bytes = 40 * MiB, .pids = 8, .cpu_quota_us = 50000};
	struct lb_cgroup *cg = mk("update", NULL, &lim);
	struct lb_err *err = NULL;
	struct lb_cgroup_update u = {.memory = 64 * MiB,
				     .pids = 16,
				     .cpu_quota = 20000,
				     .cpu_period = 50000,
				     .cpu_shares = 512};
	cr_assert_eq(lb_cgroup_update(cg, &u, &err), 0, "%s", msg(err));
	bool v2 = lb_cgroup_version(cg) == LB_CGROUP_V2;
	expect_file(cg, v2 ? "memory.max" : "memory.limit_in_bytes", "67108864");
	if (!v2)
		expect_file(cg, "memory.memsw.limit_in_bytes", "67108864");
	expect_file(cg, "pids.max", "16");
	expect_file(cg, v2 ? "cpu.max" : "cpu.cfs_quota_us", v2 ? "20000 50000" : "20000");
	expect_file(cg, v2 ? "cpu.weight" : "cpu.shares", v2 ? "20" : "512");
	/* down again, and no limit on pids */
	u = (struct lb_cgroup_update){.memory = 48 * MiB, .pids = -1};
	cr_assert_eq(lb_cgroup_update(cg, &u, &err), 0, "%s", msg(err));
	expect_file(cg, v2 ? "memory.max" : "memory.limit_in_bytes", "50331648");
	expect_file(cg, "pids.max", "max");
	static const struct lb_cgroup_update bad[] = {
	    {.memory = 1 * MiB, .pids = 4},
	    {.memory_swap = 128 * MiB},
	    {.memory = 64 * MiB, .memory_swap = 32 * MiB},
	    {.cpu_quota = 10},
	    {.cpu_period = 5},
	    {.cpu_shares = 1},
	    {.pids = -3},
	    {.pids = 4, .cpus = "x"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_lt(lb_cgroup_update(cg, &bad[i], &err), 0, "bad[%zu] accepted", i);
		lb_err_free(&err);
	}
	expect_file(cg, v2 ? "memory.max" : "memory.limit_in_bytes", "50331648");
	expect_file(cg, "pids.max", "max");
}

/* cpu.shares and memory.reservation are create-time limits too (v2: cpu.weight by runc's
 * mapping, memory.low). */
Test(cgroup, shares_and_reservation_at_create)
{
	struct lb_cgroup_limits lim = {.cpu_shares = 512, .memory_reservation = 40 * MiB};
	struct lb_cgroup *cg = mk("soft", NULL, &lim);
	bool v2 = lb_cgroup_version(cg) == LB_CGROUP_V2;
	expect_file(cg, v2 ? "cpu.weight" : "cpu.shares", v2 ? "20" : "512");
	expect_file(cg, v2 ? "memory.low" : "memory.soft_limit_in_bytes", "41943040");
}

/* Every file of an update, by version (memory, memory + swap, reservation, cpu quota, period,
 * shares, pids): one value each. */
struct update_files {
	const char *mem, *swap, *low, *cpu, *weight, *pids;
};

static void expect_update_files(struct lb_cgroup *cg, const struct update_files *f)
{
	bool v2 = lb_cgroup_version(cg) == LB_CGROUP_V2;
	expect_file(cg, v2 ? "memory.max" : "memory.limit_in_bytes", f->mem);
	expect_file(cg, v2 ? "memory.swap.max" : "memory.memsw.limit_in_bytes", f->swap);
	expect_file(cg, v2 ? "memory.low" : "memory.soft_limit_in_bytes", f->low);
	if (v2) {
		expect_file(cg, "cpu.max", f->cpu);
	} else { /* "QUOTA PERIOD" as v2 writes it, in v1's two files */
		char quota[32], period[32];
		cr_assert_eq(sscanf(f->cpu, "%31s %31s", quota, period), 2);
		expect_file(cg, "cpu.cfs_quota_us", strcmp(quota, "max") ? quota : "-1");
		expect_file(cg, "cpu.cfs_period_us", period);
	}
	expect_file(cg, v2 ? "cpu.weight" : "cpu.shares", f->weight);
	expect_file(cg, "pids.max", f->pids);
}

/* The update path file by file (on v2 in the qemu guest of scripts/vm-test.sh, on v1 here):
 * each limit lands, swap counted as v2 (alone) or v1 (memory + swap) wants it, limits lifted;
 * an update with one refused value changes none of the others. */
Test(cgroup, update_every_file_then_refused_changes_nothing)
{
	struct lb_cgroup_limits lim = {.memory_bytes = 40 * MiB, .pids = 8, .cpu_quota_us = 50000};
	struct lb_cgroup *cg = mk("update-all", NULL, &lim);
	struct lb_err *err = NULL;
	bool v2 = lb_cgroup_version(cg) == LB_CGROUP_V2;
	struct lb_cgroup_update u = {.memory = 64 * MiB,
				     .memory_swap = 96 * MiB,
				     .memory_reservation = 32 * MiB,
				     .cpu_quota = 20000,
				     .cpu_period = 50000,
				     .cpu_shares = 1024,
				     .pids = 16};
	cr_assert_eq(lb_cgroup_update(cg, &u, &err), 0, "%s", msg(err));
	/* v2: swap alone (96 - 64 MiB); v1: memory + swap; shares 1024 -> weight 39 */
	const struct update_files set = {"67108864",	     v2 ? "33554432" : "100663296",
					 "33554432",	     "20000 50000",
					 v2 ? "39" : "1024", "16"};
	expect_update_files(cg, &set);

	/* each value refused alone, with valid ones beside it: nothing written */
	static const struct lb_cgroup_update bad[] = {
	    {.memory = 48 * MiB, .pids = 4, .cpu_quota = 30000, .cpu_shares = 1},
	    {.memory = 48 * MiB, .memory_swap = 32 * MiB, .pids = 4},
	    {.memory_reservation = 16 * MiB, .cpu_period = 5, .pids = 4},
	    {.memory = 1 * MiB, .cpu_shares = 2048},
	    {.pids = -2, .memory_reservation = 16 * MiB},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_lt(lb_cgroup_update(cg, &bad[i], &err), 0, "bad[%zu] accepted", i);
		lb_err_free(&err);
		expect_update_files(cg, &set);
	}

	/* -1 lifts: memory and swap, the quota (the period stays), pids */
	u = (struct lb_cgroup_update){.memory = -1, .memory_swap = -1, .cpu_quota = -1, .pids = -1};
	cr_assert_eq(lb_cgroup_update(cg, &u, &err), 0, "%s", msg(err));
	if (v2) {
		const struct update_files lifted = {"max",	 "max", "33554432",
						    "max 50000", "39",	"max"};
		expect_update_files(cg, &lifted);
	} else { /* v1 reads "no limit" back as the page-rounded maximum */
		char *mem = read_cg_file(cg, "memory.limit_in_bytes");
		cr_expect_gt(strtoull(mem, NULL, 10), 1ull << 40, "memory %s", mem);
		free(mem);
		expect_file(cg, "cpu.cfs_quota_us", "-1");
		expect_file(cg, "pids.max", "max");
	}
}

/* ---- cpuset ------------------------------------------------------------------------------- */

Test(cgroup_cpuset, lists_checked)
{
	static const char *const good[] = {"0", "0-1", "0,2-3,7", "8191", "0-0", "1,0"};
	static const char *const bad[] = {"",	"a",  "1-0", "9999", "8192",  "0-",  "-1",
					  "0,", ",0", "0 1", "0\n",  "0-2:1", "1--2"};
	struct lb_err *err = NULL;
	char huge[4097];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_expect_eq(lb_cpuset_check(good[i], "cpus", &err), 0, "%s: %s", good[i],
			     msg(err));
		lb_err_free(&err);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_lt(lb_cpuset_check(bad[i], "cpus", &err), 0, "'%s' accepted", bad[i]);
		cr_expect(err && !strchr(err->msg, '\n'), "one line for bad[%zu]", i);
		lb_err_free(&err);
	}
	memset(huge, '1', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	cr_expect_lt(lb_cpuset_check(huge, "cpus", &err), 0);
	cr_expect(err && strlen(err->msg) < 200, "a 4 KiB list is not echoed whole");
	lb_err_free(&err);
}

/* The cpus this test may use: the effective set above its cgroups. */
static char *usable_cpus(void)
{
	bool v2 = expected_version() == LB_CGROUP_V2;
	char path[PATH_MAX];
	char *buf = NULL;
	const char *root = getenv("CGROOT");
	if (v2)
		snprintf(path, sizeof(path), "%s/cpuset.cpus.effective",
			 root ? root : "/sys/fs/cgroup");
	else
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/cpuset.effective_cpus");
	if (lb_read_file(path, 4096, &buf, NULL, NULL) < 0 && v2) {
		/* cpuset not enabled for CGROOT: the root's set is the one */
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset.cpus.effective");
		cr_assert(lb_read_file(path, 4096, &buf, NULL, NULL) == 0, "read %s", path);
	}
	cr_assert_not_null(buf, "read %s", path);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static const char *effective_file(void)
{
	return expected_version() == LB_CGROUP_V2 ? "cpuset.cpus.effective"
						  : "cpuset.effective_cpus";
}

/* Cpus_allowed_list of pid, as the scheduler applies it. */
static char *allowed_cpus(pid_t pid)
{
	char path[64], *buf = NULL;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	cr_assert(lb_read_file(path, 1 << 16, &buf, NULL, NULL) == 0);
	char *l = strstr(buf, "Cpus_allowed_list:");
	cr_assert_not_null(l);
	l += strlen("Cpus_allowed_list:");
	l += strspn(l, " \t");
	l[strcspn(l, "\n")] = '\0';
	char *out = strdup(l);
	free(buf);
	return out;
}

static void expect_allowed(pid_t pid, const char *want)
{
	char *got = allowed_cpus(pid);
	cr_expect_str_eq(got, want, "Cpus_allowed_list of %d", (int)pid);
	free(got);
}

/* Pinned at create, a process of the sandbox and of an exec's child cgroup run on that cpu; an
 * update moves them all; bad lists change nothing. On one cpu the update stays on cpu 0. */
Test(cgroup_cpuset, pins_on_create_and_update, .init = setup, .fini = teardown, .timeout = 90)
{
	_cleanup_free_ char *usable = usable_cpus();
	const char *second = strcmp(usable, "0") ? "1" : "0";
	struct lb_cgroup_limits lim = {.memory_bytes = 64 * MiB, .cpus = "0"};
	struct lb_cgroup *cg = mk("cpuset", NULL, &lim);
	struct lb_cgroup *child = NULL;
	struct lb_err *err = NULL;
	cr_log_info("usable cpus %s, update to %s", usable, second);
	expect_file(cg, effective_file(), "0");
	pid_t a = spawn(cg, child_pause, NULL);
	expect_allowed(a, "0");
	cr_assert_eq(lb_cgroup_create_child(cg, "exec-1", 0, &child, &err), 0, "%s", msg(err));
	cgs[ncgs++] = child;
	pid_t b = spawn(child, child_pause, NULL);
	expect_allowed(b, "0");

	struct lb_cgroup_update u = {0};
	snprintf(u.cpus, sizeof(u.cpus), "%s", second);
	cr_assert_eq(lb_cgroup_update(cg, &u, &err), 0, "%s", msg(err));
	expect_file(cg, effective_file(), second);
	expect_allowed(a, second);
	expect_allowed(b, second);
	pid_t c = spawn(child, child_pause, NULL);
	expect_allowed(c, second);

	static const char *const bad[] = {"9999", "1-0", "a", "0-4095"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(u.cpus, sizeof(u.cpus), "%s", bad[i]);
		cr_expect_lt(lb_cgroup_update(cg, &u, &err), 0, "'%s' accepted", bad[i]);
		cr_log_info("%s", msg(err));
		lb_err_free(&err);
	}
	expect_file(cg, effective_file(), second);
	expect_allowed(a, second);
	/* the exec's cgroup goes, the sandbox's pinning stays */
	destroy_now(child);
	cr_expect_eq(kill(a, 0), 0, "the sandbox's process survived its exec's cgroup");
	expect_allowed(a, second);
}

/* pid's path in the v1 hierarchy named ctrl, from /proc/PID/cgroup (malloc'ed; NULL: none). */
static char *v1_path_of(pid_t pid, const char *ctrl)
{
	char file[64], line[512];
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(file, "r");
	char *found = NULL;
	size_t n = strlen(ctrl);
	while (f && !found && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');
		if (c && !strncmp(c + 1, ctrl, n) && c[1 + n] == ':') {
			line[strcspn(line, "\n")] = '\0';
			found = strdup(c + 2 + n);
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* Whether a v1 hierarchy (as mounted: "cpu,cpuacct") holds only controllers an exec's child
 * shares with its sandbox when it has no memory limit of its own (cgroup_child.c). */
static bool child_shares(const char *hier)
{
	_cleanup_free_ char *copy = strdup(hier);
	char *save = NULL;
	for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save))
		if (strcmp(c, "memory") && strcmp(c, "cpu") && strcmp(c, "cpuacct") &&
		    strcmp(c, "devices") && strcmp(c, "cpuset"))
			return false;
	return true;
}

/* Without a memory limit of its own, an exec's child gets v1 directories of its own only where
 * it has tasks to list and kill (freezer, pids): in the memory, cpu, cpuacct and devices
 * hierarchies its process is in its sandbox's cgroup, held by the sandbox's limits and fence
 * (cgroup_child.c). Killing the child kills that process alone, also when the child is reopened
 * by name (a managed process's) and the directories it never had cannot be opened. */
Test(cgroup_child, shares_the_sandbox_directories_it_needs_none_of, .init = setup, .fini = teardown,
     .timeout = 60)
{
	if (expected_version() == LB_CGROUP_V2)
		cr_skip_test("v2: one directory, nothing shared");
	struct lb_cgroup_limits lim = {.memory_bytes = 64 * MiB, .pids = 64, .cpu_quota_us = 50000};
	struct lb_cgroup *cg = mk("memshare", NULL, &lim);
	struct lb_cgroup *child = NULL;
	struct lb_err *err = NULL;
	pid_t a = spawn(cg, child_pause, NULL);
	cr_assert_eq(lb_cgroup_create_child(cg, "exec-1", 0, &child, &err), 0, "%s", msg(err));
	pid_t b = spawn(child, child_pause, NULL);
	struct lb_cgroup_dir_info dirs[LB_CGROUP_MAX_DIRS];
	char at[LB_CGROUP_MAX_DIRS][LB_PATH_BUF];
	size_t n = lb_cgroup_dir_info(cg, dirs, LB_CGROUP_MAX_DIRS);
	size_t shared = 0, own = 0, keeps = 0;
	for (size_t i = 0; i < n; i++)
		keeps += dirs[i].hier && !child_shares(dirs[i].hier);
	if (!keeps) /* the child then keeps a directory of its own in each */
		cr_skip_test("no v1 freezer or pids hierarchy on this host");
	for (size_t i = 0; i < n; i++) {
		snprintf(at[i], sizeof(at[i]), "%s/exec-1", dirs[i].path);
		cr_assert(dirs[i].hier, "a v1 directory without its hierarchy: %s", dirs[i].path);
		_cleanup_free_ char *in_a = v1_path_of(a, dirs[i].hier);
		_cleanup_free_ char *in_b = v1_path_of(b, dirs[i].hier);
		cr_assert(in_a && in_b, "%s: not in /proc/PID/cgroup", dirs[i].hier);
		if (child_shares(dirs[i].hier)) {
			shared++;
			cr_expect_str_eq(in_b, in_a,
					 "%s: the exec's process is not in the sandbox's",
					 dirs[i].hier);
			cr_expect_neq(access(at[i], F_OK), 0, "a %s cgroup of its own: %s",
				      dirs[i].hier, at[i]);
		} else {
			own++;
			cr_expect(strstr(in_b, "/exec-1"), "%s: not in its own: %s", dirs[i].hier,
				  in_b);
		}
		dirs[i].path = at[i];
	}
	cr_assert(shared >= 1 && own >= 1, "this host's v1 layout: %zu shared, %zu own", shared,
		  own);
	lb_cgroup_forget(child); /* as a later lbbox process would: reopened by name */
	struct lb_cgroup *again = NULL;
	cr_assert_eq(lb_cgroup_open(LB_CGROUP_V1, dirs, n, true, &again, &err), 0, "%s", msg(err));
	cr_expect(!lb_cgroup_is_empty(again), "the exec's process not found");
	cr_assert_eq(lb_cgroup_destroy(again, &err), 0, "%s", msg(err));
	cr_expect(WIFSIGNALED(wait_for(b, 5000)), "the exec's process survived");
	cr_expect_eq(kill(a, 0), 0, "the sandbox's process was killed with its exec's cgroup");
}

/* Nothing asked: no cpuset directory at all (v1), so lbbox run pays nothing for the feature. */
Test(cgroup_cpuset, none_asked_no_cpuset_dir, .init = setup, .fini = teardown)
{
	struct lb_cgroup_limits lim = {.pids = 16};
	struct lb_cgroup *cg = mk("nocpuset", NULL, &lim);
	if (expected_version() == LB_CGROUP_V2)
		cr_skip_test("v2: one directory, cpuset just not enabled");
	for (const char *const *p = lb_cgroup_paths(cg); *p; p++)
		cr_expect_null(strstr(*p, "/cpuset/"), "%s made without a cpuset asked", *p);
}

/* An OCI container's cgroup (cpuset_cgroup, no values) gets the parent's set on v1 and can be
 * pinned by a later update on v1 and v2. */
Test(cgroup_cpuset, pin_later, .init = setup, .fini = teardown, .timeout = 60)
{
	_cleanup_free_ char *usable = usable_cpus();
	struct lb_cgroup_limits lim = {.cpuset_cgroup = true};
	struct lb_cgroup *cg = mk("cpuset-later", NULL, &lim);
	struct lb_err *err = NULL;
	pid_t a = spawn(cg, child_pause, NULL);
	expect_allowed(a, usable);
	struct lb_cgroup_update u = {.cpus = "0", .mems = "0"};
	cr_assert_eq(lb_cgroup_update(cg, &u, &err), 0, "%s", msg(err));
	expect_file(cg, effective_file(), "0");
	expect_allowed(a, "0");
}

/* A list beyond what the host offers is refused at create with one line, nothing left. */
Test(cgroup_cpuset, create_refuses_outside, .init = setup, .fini = teardown)
{
	struct lb_cgroup_limits lim = {.cpus = "0-4095"};
	struct lb_cgroup *cg = NULL;
	struct lb_err *err = NULL;
	char name[128];
	snprintf(name, sizeof(name), "%soutside", prefix);
	cr_expect_lt(lb_cgroup_create(name, NULL, &lim, &cg, &err), 0);
	cr_expect(err && strstr(err->msg, "0-4095") && !strchr(err->msg, '\n'), "%s", msg(err));
	lb_err_free(&err);
	if (expected_version() == LB_CGROUP_V1) {
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s", name);
		cr_expect(stat(path, &st) < 0, "%s left behind", path);
	}
}

/* ---- a pod cgroup lbbox does not own: /<prefix>pod in the v1 hierarchies ------------------ */

#define MAX_PODS 16
static char pods[MAX_PODS][PATH_MAX]; /* made by the test, removed by teardown_pods */
static size_t npods;

static void teardown_pods(void)
{
	teardown();
	while (npods > 0) {
		const char *d = pods[--npods];
		cr_expect(rmdir(d) == 0, "rmdir %s: %s", d, strerror(errno));
	}
}

/* Makes the pod in every v1 hierarchy (links and the systemd one aside), cpuset only when
 * with_cpuset; *parent is its path inside the hierarchy. */
static void make_pod(bool with_cpuset, char *parent, size_t len)
{
	DIR *d = opendir("/sys/fs/cgroup");
	cr_assert_not_null(d);
	snprintf(parent, len, "/%spod", prefix);
	for (struct dirent *e; (e = readdir(d));) {
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", e->d_name);
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "unified") ||
		    !strcmp(e->d_name, "systemd") || lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    (!with_cpuset && !strcmp(e->d_name, "cpuset")))
			continue;
		cr_assert_lt(npods, MAX_PODS);
		snprintf(pods[npods], PATH_MAX, "%s%s", path, parent);
		cr_assert(mkdir(pods[npods], 0755) == 0, "mkdir %s", pods[npods]);
		npods++;
	}
	closedir(d);
}

static char *read_path(const char *path)
{
	char *buf = NULL;
	cr_assert(lb_read_file(path, 4096, &buf, NULL, NULL) == 0, "read %s", path);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

/* The only fallback an OCI create has (a cgroup of its own below lbbox's) is for a parent that
 * exists nowhere; one that exists in some hierarchies is not missing. */
Test(cgroup_cpuset, parent_missing_only_when_missing_everywhere, .init = setup,
     .fini = teardown_pods)
{
	char parent[128];
	cr_expect(lb_cgroup_parent_missing("/lbbox-no-such-parent-dir"));
	cr_expect_not(lb_cgroup_parent_missing(explicit_parent()), "%s", explicit_parent());
	if (expected_version() == LB_CGROUP_V2)
		return;
	make_pod(false, parent, sizeof(parent));
	cr_expect_not(lb_cgroup_parent_missing(parent), "%s has no cpuset directory only", parent);
}

/* A pod present in every v1 hierarchy but cpuset (a slice systemd made): cpus asked below it are
 * refused with one line naming it, nothing made; nothing asked, the sandbox sits in the pod
 * with no cpuset directory, and an update of its cpus says so. */
Test(cgroup_cpuset, parent_without_cpuset, .init = setup, .fini = teardown_pods)
{
	if (expected_version() == LB_CGROUP_V2)
		cr_skip_test("v1 only: one hierarchy on v2");
	char parent[128], name[128];
	struct lb_cgroup *cg = NULL;
	struct lb_err *err = NULL;
	make_pod(false, parent, sizeof(parent));
	snprintf(name, sizeof(name), "%sctr", prefix);
	struct lb_cgroup_limits lim = {.memory_bytes = 48 * MiB, .cpus = "0"};
	cr_expect_lt(lb_cgroup_create(name, parent, &lim, &cg, &err), 0);
	cr_assert_not_null(err);
	cr_expect(strstr(err->msg, parent) && strstr(err->msg, "cpuset") &&
		      !strchr(err->msg, '\n') && err->errnum != ENOENT,
		  "%s", msg(err));
	lb_err_free(&err);
	for (size_t i = 0; i < npods; i++) {
		char inside[PATH_MAX + 4];
		snprintf(inside, sizeof(inside), "%s/x", pods[i]);
		expect_no_leftover_in_parent(inside);
	}

	struct lb_cgroup_limits none = {.memory_bytes = 48 * MiB, .cpuset_cgroup = true};
	cg = mk("ctr", parent, &none);
	bool in_memory = false;
	for (const char *const *p = lb_cgroup_paths(cg); *p; p++) {
		cr_expect_null(strstr(*p, "/cpuset/"), "%s made", *p);
		in_memory |= !strncmp(*p, "/sys/fs/cgroup/memory/", 22) && strstr(*p, parent);
	}
	cr_expect(in_memory, "the memory cgroup is below %s", parent);
	struct lb_cgroup_update u = {.cpus = "0"};
	cr_expect_lt(lb_cgroup_update(cg, &u, &err), 0);
	cr_expect(err && strstr(err->msg, "no cpuset cgroup"), "%s", msg(err));
	lb_err_free(&err);
}

/* A pod whose cpuset cgroup has no cpus and mems (nobody set them) is written only for a sandbox
 * that asks for cpus: without, the sandbox gets no cpuset directory and the pod stays empty. */
Test(cgroup_cpuset, empty_ancestor_left_alone, .init = setup, .fini = teardown_pods)
{
	if (expected_version() == LB_CGROUP_V2)
		cr_skip_test("v1 only: a v2 cpuset is never empty");
	char parent[128], cpus[PATH_MAX], mems[PATH_MAX];
	make_pod(true, parent, sizeof(parent));
	snprintf(cpus, sizeof(cpus), "/sys/fs/cgroup/cpuset%s/cpuset.cpus", parent);
	snprintf(mems, sizeof(mems), "/sys/fs/cgroup/cpuset%s/cpuset.mems", parent);
	_cleanup_free_ char *before = read_path(cpus);
	if (*before)
		cr_skip_test("cgroup.clone_children filled the new pod (%s)", before);

	struct lb_cgroup_limits none = {.cpuset_cgroup = true};
	struct lb_cgroup *cg = mk("ctr", parent, &none);
	for (const char *const *p = lb_cgroup_paths(cg); *p; p++)
		cr_expect_null(strstr(*p, "/cpuset/"), "%s made", *p);
	destroy_now(cg);
	_cleanup_free_ char *c1 = read_path(cpus);
	_cleanup_free_ char *m1 = read_path(mems);
	cr_expect(!*c1 && !*m1, "the pod was written: cpus '%s' mems '%s'", c1, m1);

	/* asked, the pod is filled (as runc does) and the sandbox pinned */
	struct lb_cgroup_limits pin = {.cpus = "0"};
	cg = mk("ctr2", parent, &pin);
	expect_file(cg, effective_file(), "0");
}

/* Exit code: bit 0 = /dev/kmsg opened for reading, bit 1 = for writing, bit 2 = /dev/null
 * (lbbox's standard table) for both; 100 + errno when a refusal was not the fence's EPERM. */
static int child_open_devices(void *arg)
{
	(void)arg;
	int r = 0;
	static const struct {
		const char *path;
		int flags, bit;
	} tries[] = {{"/dev/kmsg", O_RDONLY | O_NONBLOCK, 1},
		     {"/dev/kmsg", O_WRONLY, 2},
		     {"/dev/null", O_RDWR, 4}};
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		int fd = open(tries[i].path, tries[i].flags | O_CLOEXEC);
		if (fd >= 0) {
			r |= tries[i].bit;
			close(fd);
		} else if (errno != EPERM) {
			return 100 + errno;
		}
	}
	return r;
}

static int open_in(struct lb_cgroup *cg)
{
	int status = wait_for(spawn(cg, child_open_devices, NULL), 10000);
	cr_assert(WIFEXITED(status), "status 0x%x", status);
	return WEXITSTATUS(status);
}

/* The device fence: lbbox's standard devices, plus the extra ones with the access granted
 * (v1: devices.allow lines; v2: the BPF program's entries, run in the qemu guest). */
Test(cgroup, device_fence_extra_devices)
{
	struct stat st;
	if (geteuid() != 0)
		cr_skip_test("the device fence is root's only");
	cr_assert(stat("/dev/kmsg", &st) == 0 && S_ISCHR(st.st_mode), "/dev/kmsg is needed");
	const struct lb_cgroup_device kmsg_r = {.type = 'c',
						.major = major(st.st_rdev),
						.minor = minor(st.st_rdev),
						.access = LB_DEV_READ};
	const struct lb_cgroup_device kmsg_block = {.type = 'b',
						    .major = major(st.st_rdev),
						    .minor = minor(st.st_rdev),
						    .access = LB_DEV_RWM};
	struct lb_cgroup_limits none = {0}, read_only = {.devices = &kmsg_r, .n_devices = 1},
				block = {.devices = &kmsg_block, .n_devices = 1};
	cr_expect_eq(open_in(mk("dev-none", NULL, &none)), 4, "only the standard devices");
	cr_expect_eq(open_in(mk("dev-r", NULL, &read_only)), 4 | 1, "kmsg read, not write");
	cr_expect_eq(open_in(mk("dev-b", NULL, &block)), 4, "a block entry is not the char device");
}
