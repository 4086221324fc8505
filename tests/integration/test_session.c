// Sessions, exec and managed processes (lbbox session / lbbox proc) against real sandboxes: the
// seed scenarios of LangBot Box (spec §3), its error classes and texts, and a clean host after
// every test (no session, sandbox, cgroup, mount or process left).
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// lbbox session create NAME --rootfs <busybox> OPTS... ; returns the session JSON.
static json_t *create(const char *name, ...)
{
	const char *args[64] = {"session",    "create", name,		"--rootfs",
				lbt_rootfs(), "-v",	lbt_probe_vol()};
	int n = 7;
	va_list ap;
	va_start(ap, name);
	for (const char *a; (a = va_arg(ap, const char *)) && n < 62;)
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return lbt_runv_json(args);
}

static void sh(struct lb_run_out *o, const char *session, const char *script)
{
	lbt_run(o, "session", "exec", session, "--", "sh", "-c", script, NULL);
}

/* sh() of the test probe with args (and any shell redirections after them). */
static void probe_sh(struct lb_run_out *o, const char *session, const char *args)
{
	char *script = lbt_strdupf("%s %s", lbt_probe(), args);
	sh(o, session, script);
	free(script);
}

LBT_SUITE(session);

LBT_TEST(session, exec_returns_stdout_stderr_and_exit_code)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	sh(&o, "s1", "echo hi; echo oops >&2; exit 3");
	LBT_ASSERT_EXIT(o, 3);
	LBT_ASSERT_OUT(o, "hi\n");
	cr_assert_str_eq(o.err, "oops\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "exec", "s1", "--json", "--", "sh", "-c", "printf '  a\\n\\n'",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	json_t *r = lbt_json(o.out);
	cr_assert_str_eq(lbt_json_str(r, "status"), "completed");
	cr_assert_str_eq(lbt_json_str(r, "stdout"), "a", "stdout is stripped as LangBot does");
	cr_assert_eq(json_integer_value(json_object_get(r, "exit_code")), 0);
	cr_assert(json_is_integer(json_object_get(r, "duration_ms")));
	json_decref(r);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, files_persist_between_execs_in_workspace_and_tmp)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	sh(&o, "s1", "echo one > /workspace/a && echo two > /tmp/b && pwd");
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "/workspace\n");
	lbt_out_free(&o);
	sh(&o, "s1", "cat /workspace/a /tmp/b");
	LBT_ASSERT_OUT(o, "one\ntwo\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, host_workspace_is_mounted_and_workdir_applies)
{
	struct lb_run_out o;
	char *ws = lbt_mkdir_work("ws");
	char *vol = lbt_strdupf("%s:/workspace", ws);
	json_t *s = create("s1", "-v", vol, NULL);
	cr_assert_str_eq(lbt_json_str(s, "host_path"), ws);
	json_decref(s);
	lbt_run(&o, "session", "exec", "s1", "-w", "/workspace/sub dir", "--", "sh", "-c",
		"pwd; echo x > f", NULL);
	LBT_ASSERT_OUT(o, "/workspace/sub dir\n");
	lbt_out_free(&o);
	char *f = lbt_strdupf("%s/sub dir/f", ws);
	char *content = lbt_read_file(f);
	cr_assert_str_eq(content, "x\n");
	free(content), free(f), free(vol), free(ws);
	lbt_session_rm("s1");
}

// The pid of a process the exec's command starts (the pid namespace hands pids out in turn).
static long exec_pid(const char *workdir)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "exec", "s1", "-w", workdir, "--", "sh", "-c", "true & echo $!",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	long pid = strtol(o.out, NULL, 10);
	lbt_out_free(&o);
	return pid;
}

// The shell runs mkdir -p only for a workdir it cannot enter: an exec into an existing one starts
// one process fewer (a pid fewer between two execs) than one that makes its workdir; a workdir
// that cannot be made fails with mkdir's message alone, and the command does not run.
LBT_TEST(session, workdir_is_made_only_when_missing)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	long a = exec_pid("/workspace"), b = exec_pid("/workspace"), c = exec_pid("/tmp/new dir");
	cr_assert_gt(b, a);
	cr_assert_eq(c - b, b - a + 1, "pids %ld %ld %ld: mkdir ran for an existing workdir", a, b,
		     c);
	sh(&o, "s1", "pwd; touch /tmp/file");
	LBT_ASSERT_OUT(o, "/workspace\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "exec", "s1", "-w", "/tmp/file", "--", "sh", "-c", "echo ran", NULL);
	cr_assert_neq(o.status, 0);
	cr_assert_str_eq(o.out, "");
	cr_assert(strstr(o.err, "mkdir") && strstr(o.err, "/tmp/file") && !strstr(o.err, "cd"),
		  "stderr: %s", o.err);
	cr_assert_eq(strchr(o.err, '\n'), o.err + strlen(o.err) - 1, "one line: %s", o.err);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, each_exec_has_its_own_cgroup)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	sh(&o, "s1", "grep -c exec- /proc/self/cgroup >/dev/null && echo yes");
	LBT_ASSERT_OUT(o, "yes\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// The exec's intermediate moves itself into the exec's cgroup on v1 (cgroup_v1.c): the command
// is in it in every hierarchy lbbox makes one in, none left in the sandbox's own. On v1 it gets
// one only where it has tasks of its own to list and kill (freezer, pids): in the memory, cpu,
// cpuacct and devices hierarchies it joins the sandbox's own cgroup ("/" in its cgroup
// namespace), whose limits and fence hold it (cgroup_child.c). On v2: the one exec- child.
LBT_TEST(session, exec_is_in_its_cgroup_in_every_hierarchy)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	sh(&o, "s1",
	   "v2=0; [ -e /sys/fs/cgroup/cgroup.controllers ] && v2=1; awk -F: -v v2=$v2 "
	   "'$2 == \"\" { if (v2) { n++; if ($3 !~ /exec-/) print \"outside: \" $0 }; next } "
	   "$2 ~ /(^|,)(freezer|pids)(,|$)/ { n++; if ($3 !~ /exec-/) print \"outside: \" $0; "
	   "next } "
	   "$2 ~ /^((memory|cpu|cpuacct|devices|cpuset),?)+$/ && $2 !~ /^cpuset$/ { s++; "
	   "if ($3 != \"/\") print \"not the sandbox cgroup: \" $0 } "
	   "END { print (n > 0 ? \"ok\" : \"none\"), (v2 || s > 0 ? \"shared\" : \"no shared\") }' "
	   "/proc/self/cgroup");
	LBT_ASSERT_OUT(o, "ok shared\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// The session's cpu limit holds an exec's command (on v1 it is in the sandbox's own cpu cgroup,
// not a child of it): 0.6 s of CPU at a fifth of a CPU needs ~3 s of wall time, however loaded
// the machine is (load only makes it slower); unthrottled it takes 0.6 s.
LBT_TEST(session, exec_is_held_by_the_session_cpu_limit)
{
	struct lb_run_out o;
	json_decref(create("s1", "--cpus", "0.2", NULL));
	probe_sh(&o, "s1", "burn 0.6");
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_geq(o.secs, 1.5, "0.6 s of CPU in %.2f s: the session's quota did not hold",
		      o.secs);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// The session's memory limit holds an exec's command (on v1 it is in the sandbox's own memory
// cgroup, not a child of it): beyond it the command is OOM-killed, the session lives on.
LBT_TEST(session, exec_is_held_by_the_session_memory_limit)
{
	struct lb_run_out o;
	json_decref(create("s1", "--memory", "64m", NULL));
	probe_sh(&o, "s1", "memhog 200");
	LBT_ASSERT_EXIT(o, 137);
	lbt_out_free(&o);
	probe_sh(&o, "s1", "memhog 16 && echo fine");
	LBT_ASSERT_OUT(o, "ok\nfine\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, timeout_kills_the_tree_and_destroys_the_session)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	sh(&o, "s1", "echo x > /tmp/mark");
	lbt_out_free(&o);
	lbt_add_marker("987651");
	lbt_run(&o, "session", "exec", "s1", "--timeout", "1", "--json", "--", "sh", "-c",
		"sleep 987651 & setsid sleep 987651 & sleep 987651", NULL);
	LBT_ASSERT_EXIT(o, 124);
	json_t *r = lbt_json(o.out);
	cr_assert_str_eq(lbt_json_str(r, "status"), "timed_out");
	cr_assert(json_is_null(json_object_get(r, "exit_code")));
	cr_assert_str_eq(lbt_json_str(r, "stderr"), "Command timed out after 1 seconds.");
	json_decref(r);
	lbt_out_free(&o);
	cr_assert_eq(lbt_count_procs_with_arg("987651"), 0, "a process of the exec survived");
	lbt_run(&o, "session", "inspect", "s1", NULL);
	lbt_assert_error_line(&o, 125, "BoxSessionNotFoundError: session s1 not found");
	lbt_out_free(&o);
	// the next create starts fresh
	json_decref(create("s1", NULL));
	sh(&o, "s1", "cat /tmp/mark 2>/dev/null || echo fresh");
	LBT_ASSERT_OUT(o, "fresh\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, network_off_reaches_nothing_outside)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	probe_sh(&o, "s1", "connect 192.0.2.1 80");
	LBT_ASSERT_OUT(o, "ENETUNREACH\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, reuse_and_conflict_on_resource_fields)
{
	struct lb_run_out o;
	json_t *a = create("s1", NULL);
	json_t *b = create("s1", NULL);
	cr_assert_str_eq(lbt_json_str(a, "backend_session_id"),
			 lbt_json_str(b, "backend_session_id"));
	json_decref(a), json_decref(b);
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "-v", lbt_probe_vol(),
		"--memory", "256m", NULL);
	lbt_assert_error_line(&o, 125,
			      "BoxSessionConflictError: Box session s1 already exists with "
			      "memory_mb=512");
	lbt_out_free(&o);
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "-v", lbt_probe_vol(),
		"--cpus", "2", NULL);
	lbt_assert_error_line(&o, 125, "already exists with cpus=1.0");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, changed_extra_mounts_recreate_the_session)
{
	char *d1 = lbt_mkdir_work("d1"), *d2 = lbt_mkdir_work("d2");
	char *v1 = lbt_strdupf("%s:/data", d1), *v2 = lbt_strdupf("%s:/data", d2);
	json_t *a = create("s1", "-v", v1, NULL);
	json_t *b = create("s1", "-v", v2, NULL);
	cr_assert_str_neq(lbt_json_str(a, "backend_session_id"),
			  lbt_json_str(b, "backend_session_id"),
			  "a changed extra mount must recreate the sandbox");
	json_decref(a), json_decref(b);
	free(d1), free(d2), free(v1), free(v2);
	lbt_session_rm("s1");
}

LBT_TEST(session, capacity_limits)
{
	struct lb_run_out o;
	setenv("LBBOX_BOX_MAX_SESSIONS", "2", 1);
	setenv("LBBOX_BOX_MAX_PROCESSES", "1", 1);
	json_decref(create("s1", NULL));
	json_decref(create("s2", NULL));
	lbt_run(&o, "session", "create", "s3", "--rootfs", lbt_rootfs(), NULL);
	lbt_assert_error_line(&o, 125,
			      "BoxCapacityExceededError: Box session capacity reached (2)");
	lbt_out_free(&o);
	lbt_run(&o, "proc", "start", "s1", "--id", "p1", "--", "sleep", "1000", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "start", "s2", "--id", "p2", "--", "sleep", "1000", NULL);
	lbt_assert_error_line(&o, 125,
			      "BoxCapacityExceededError: Box managed process capacity reached (1)");
	lbt_out_free(&o);
	// replacing the running one is not a new process
	lbt_run(&o, "proc", "start", "s1", "--id", "p1", "--", "sleep", "1001", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	unsetenv("LBBOX_BOX_MAX_SESSIONS");
	unsetenv("LBBOX_BOX_MAX_PROCESSES");
	lbt_session_rm("s1");
	lbt_session_rm("s2");
}

LBT_TEST(session, bad_input_names_the_error_class)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "exec", "nope", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "BoxSessionNotFoundError: session nope not found");
	lbt_out_free(&o);
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "--memory", "16m", NULL);
	lbt_assert_error_line(&o, 125, "BoxValidationError: memory_mb must be at least 32");
	lbt_out_free(&o);
	lbt_run(&o, "session", "create", "s1", "-v", "/etc:/workspace", NULL);
	lbt_assert_error_line(&o, 125, "host_path /etc is blocked for security");
	lbt_out_free(&o);
	json_decref(create("s1", NULL));
	lbt_run(&o, "proc", "inspect", "s1", "nope", NULL);
	lbt_assert_error_line(&o, 125,
			      "BoxManagedProcessNotFoundError: session s1 has no managed process "
			      "with process_id=nope");
	lbt_out_free(&o);
	lbt_run(&o, "session", "rm", "nope", NULL);
	lbt_assert_error_line(&o, 125, "BoxSessionNotFoundError");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, profile_locks_fields)
{
	json_t *s = create("s1", "--profile", "offline_readonly", "--network", "on", NULL);
	cr_assert_str_eq(lbt_json_str(s, "network"), "off", "offline_readonly locks network");
	cr_assert_eq(json_integer_value(json_object_get(s, "memory_mb")), 256);
	cr_assert_str_eq(lbt_json_str(s, "host_path_mode"), "ro");
	json_decref(s);
	lbt_session_rm("s1");
}

/*
 * Removing a session returns only once its pid 1 is reaped, not merely dead: the lbbox that
 * created it is gone, so its parent is whoever adopts orphans (the host's init), which may reap
 * late, and a command that removed a session must leave no zombie of it. This test adopts the
 * orphan (a subreaper) and reaps it 300 ms after it dies: rm must not return before that.
 */
LBT_TEST(session, rm_returns_once_pid_1_is_reaped)
{
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	json_t *a = create("s1", NULL);
	char *state = lbt_strdupf("%s/%s/state.json", lbt_runroot(),
				  lbt_json_str(a, "backend_session_id") + strlen("lbbox-"));
	json_t *st = json_load_file(state, 0, NULL);
	cr_assert_not_null(st);
	pid_t pid1 = (pid_t)json_integer_value(json_object_get(st, "pid"));
	int pid1fd = (int)syscall(SYS_pidfd_open, pid1, 0);
	cr_assert_geq(pid1fd, 0, "pidfd_open %d: %s", pid1, strerror(errno));
	siginfo_t info = {0};
	cr_assert_eq(waitid(P_PIDFD, (id_t)pid1fd, &info, WEXITED | WNOHANG), 0,
		     "the session's pid 1 is not this subreaper's child: %s", strerror(errno));

	struct lbt_proc rm;
	lbt_spawn(&rm, "session", "rm", "s1", NULL);
	int rmfd = (int)syscall(SYS_pidfd_open, rm.pid, 0);
	cr_assert_geq(rmfd, 0);
	struct pollfd p = {.fd = pid1fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 10000), 1, "pid 1 did not exit");
	struct pollfd r = {.fd = rmfd, .events = POLLIN};
	cr_assert_eq(poll(&r, 1, 300), 0, "session rm returned while pid 1 was still a zombie");
	cr_assert_eq(waitid(P_PIDFD, (id_t)pid1fd, &(siginfo_t){0}, WEXITED), 0);
	struct lb_run_out o;
	lbt_wait(&rm, &o, 10);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	close(rmfd);
	close(pid1fd);
	json_decref(st);
	json_decref(a);
	free(state);
}

LBT_TEST(session, dead_session_is_recreated)
{
	json_t *a = create("s1", NULL);
	char *state = lbt_strdupf("%s/%s/state.json", lbt_runroot(),
				  lbt_json_str(a, "backend_session_id") + strlen("lbbox-"));
	json_t *st = json_load_file(state, 0, NULL);
	cr_assert_not_null(st);
	kill((pid_t)json_integer_value(json_object_get(st, "pid")), SIGKILL);
	json_decref(st);
	usleep(200000);
	json_t *b = create("s1", NULL);
	cr_assert_str_neq(lbt_json_str(a, "backend_session_id"),
			  lbt_json_str(b, "backend_session_id"));
	json_decref(a), json_decref(b);
	free(state);
	lbt_session_rm("s1");
}

LBT_TEST(session, execs_of_one_session_run_one_at_a_time)
{
	struct lbt_proc p[3];
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	for (int i = 0; i < 3; i++)
		lbt_spawn(&p[i], "session", "exec", "s1", "--", "sh", "-c",
			  "echo start >> log; sleep 0.3; echo end >> log", NULL);
	for (int i = 0; i < 3; i++) {
		lbt_wait(&p[i], &o, 30);
		LBT_ASSERT_EXIT(o, 0);
		lbt_out_free(&o);
	}
	sh(&o, "s1", "cat log");
	LBT_ASSERT_OUT(o, "start\nend\nstart\nend\nstart\nend\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, output_is_capped_decoded_and_truncated_as_langbot)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	// 2 MiB + 5 bytes of stdout: 1 MiB kept, the rest counted in the clip notice
	lbt_run(&o, "session", "exec", "s1", "--json", "--", "sh", "-c",
		"head -c 2097157 /dev/zero | tr '\\0' a; printf '\\377x' >&2", NULL);
	LBT_ASSERT_EXIT(o, 0);
	json_t *r = lbt_json(o.out);
	const char *out = lbt_json_str(r, "stdout");
	const char *notice = "\n... [raw output clipped at 1048576 bytes, 1048581 bytes discarded]";
	cr_assert_eq(strlen(out), 1048576 + strlen(notice));
	cr_assert_str_eq(out + 1048576, notice);
	cr_assert_str_eq(lbt_json_str(r, "stderr"), "\xef\xbf\xbdx",
			 "invalid UTF-8 becomes U+FFFD");
	json_decref(r);
	lbt_out_free(&o);
	// --langbot --output-limit: LangBot's head/tail truncation with the notice in the middle
	lbt_run(&o, "session", "exec", "s1", "--langbot", "--output-limit", "4000", "--", "sh",
		"-c", "head -c 10000 /dev/zero | tr '\\0' b", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(strlen(o.out), 4001, "4000 characters and a newline, got %zu", strlen(o.out));
	cr_assert_not_null(strstr(o.out, "\n\n... [6039 characters truncated] ...\n\n"), "%.80s",
			   o.out + 2370);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session, host_paths_outside_allowed_roots_are_refused)
{
	struct lb_run_out o;
	char *allowed = lbt_mkdir_work("allowed");
	char *other = lbt_mkdir_work("other");
	setenv("LBBOX_BOX_ALLOWED_ROOTS", allowed, 1);
	char *bad = lbt_strdupf("%s:/workspace", other);
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "-v", bad, NULL);
	char *want =
	    lbt_strdupf("BoxValidationError: host_path is outside allowed_mount_roots: %s", other);
	lbt_assert_error_line(&o, 125, want);
	lbt_out_free(&o);
	char *good = lbt_strdupf("%s/ws:/workspace", allowed);
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "-v", good, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	unsetenv("LBBOX_BOX_ALLOWED_ROOTS");
	free(allowed), free(other), free(bad), free(want), free(good);
	lbt_session_rm("s1");
}

LBT_TEST(session, exec_has_the_sandbox_privileges)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	sh(&o, "s1",
	   "grep -E '^(NoNewPrivs|Seccomp|CapEff|CapBnd):' /proc/self/status | tr -s '\\t' ' '");
	LBT_ASSERT_OUT(
	    o, "CapEff: 00000000000004fb\nCapBnd: 00000000000004fb\nNoNewPrivs: 1\nSeccomp: 2\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// kill 0 in an exec reaches only the exec's own process group, never lbbox's; kill 1 from
// inside does not end the session.
LBT_TEST(session, exec_is_its_own_process_group_and_cannot_end_the_session)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	lbt_run(&o, "session", "exec", "s1", "--json", "--", "sh", "-c",
		"kill -TERM 1; kill -TERM 0", NULL);
	json_t *r = lbt_json(o.out); // lbbox itself survived to report
	cr_assert_eq(json_integer_value(json_object_get(r, "exit_code")), 143);
	json_decref(r);
	lbt_out_free(&o);
	sh(&o, "s1", "echo still here");
	LBT_ASSERT_OUT(o, "still here\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// While an exec is being set up it still holds host objects (cgroup directories, locks, pid 1's
// pidfd): a process of the sandbox scanning /proc must never get at them.
LBT_TEST(session, sandbox_cannot_reach_an_exec_in_setup)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	probe_sh(&o, "s1", "scanfds 6 > /tmp/hits 2>&1 &");
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	for (int i = 0; i < 60; i++) {
		sh(&o, "s1", "true");
		lbt_out_free(&o);
	}
	sleep(1);
	for (int i = 0; i < 100; i++) { // until the scanner is done
		sh(&o, "s1", "cat /tmp/hits");
		if (strstr(o.out, "scanned"))
			break;
		lbt_out_free(&o);
		usleep(100000);
	}
	LBT_ASSERT_OUT(o, "scanned\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// A process of the session that stops every new process (same uid, same pid namespace) catches
// an exec's or a managed process's command before its execve: the start is bounded by the exec's
// timeout (then the usual timed-out result, and the session goes) and by the managed process's
// start limit, instead of hanging the caller (and a server's job) for ever.
LBT_TEST(session, a_command_stopped_before_it_starts_cannot_hang_the_caller)
{
	struct lb_run_out o;
	struct lbt_proc p;
	char *out = lbt_strdupf("%s/out", lbt_workdir());
	cr_assert_eq(mkdir(out, 0755), 0);
	char *vol = lbt_strdupf("%s:/out", out);
	json_decref(create("s1", "-v", vol, NULL));
	probe_sh(&o, "s1", "stopnew 60 > /out/stops 2>&1 &"); // it waits a second before stopping
							      // anything: this exec ends first
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	char *stops_path = lbt_strdupf("%s/stops", out), *stops = NULL;
	for (int i = 0; i < 100 && !(stops && strstr(stops, "stopping")); i++) {
		usleep(100000);
		free(stops);
		stops = lbt_read_file(stops_path);
	}
	free(stops);
	// The probe stops a new command within microseconds, but a loaded machine may not run it
	// for longer than a command takes to start: one that started was not caught, try again.
	// A caught one that hangs the caller fails at lbt_wait's watchdog.
	int st = 0;
	for (int i = 0; i < 10; i++) {
		char id[16];
		snprintf(id, sizeof(id), "p%d", i);
		lbt_spawn(&p, "proc", "start", "s1", "--id", id, "--", "true", NULL);
		if ((st = lbt_wait(&p, &o, 40)) != 0)
			break;
		lbt_out_free(&o);
	}
	cr_assert_eq(st, 125, "proc start: %s", o.err);
	cr_assert(strstr(o.err, "did not start in time"), "%s", o.err);
	lbt_out_free(&o);
	for (int i = 0; i < 10; i++) {
		lbt_spawn(&p, "session", "exec", "s1", "--timeout", "2", "--json", "--", "true",
			  NULL);
		if ((st = lbt_wait(&p, &o, 30)) != 0)
			break;
		lbt_out_free(&o);
	}
	cr_assert_eq(st, 124, "session exec: %s", o.err);
	json_t *r = lbt_json(o.out);
	cr_assert_str_eq(lbt_json_str(r, "status"), "timed_out");
	cr_assert_str_eq(lbt_json_str(r, "stderr"), "Command timed out after 2 seconds.");
	json_decref(r);
	lbt_out_free(&o);
	// the probe did catch commands before their execve (the name is still lbbox's, not sh's
	// or true's): the hang was really met
	stops = lbt_read_file(stops_path);
	cr_assert(stops && strstr(stops, "stopped lbbox"), "stops: %s", stops ? stops : "(none)");
	free(stops);
	free(stops_path);
	lbt_run(&o, "session", "inspect", "s1", NULL);
	lbt_assert_error_line(&o, 125, "BoxSessionNotFoundError: session s1 not found");
	lbt_out_free(&o);
	free(vol);
	free(out);
}

static int lines(const char *s)
{
	int n = 0;
	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

// With fs.suid_dumpable=1 (hosts set it to get core dumps of setuid programs) a process that
// changes its uid becomes dumpable again: an exec's command, dropped to the session's user and
// not yet under its seccomp filter, could have its memory written by any process of that user
// (/proc/PID/mem) and go on unfiltered. It stays non-dumpable until its execve.
LBT_TEST(session, a_command_in_setup_cannot_be_written_by_the_session_user)
{
	struct lb_run_out o;
	if (geteuid() != 0)
		cr_skip("fs.suid_dumpable is the host's, root's to change");
	char *saved = lbt_read_file("/proc/sys/fs/suid_dumpable");
	cr_assert_not_null(saved);
	char *out = lbt_strdupf("%s/out", lbt_workdir());
	cr_assert_eq(mkdir(out, 0777), 0);
	chmod(out, 0777);
	char *vol = lbt_strdupf("%s:/out", out);
	json_decref(create("s1", "--user", "1000:1000", "-v", vol, NULL));
	probe_sh(&o, "s1", "memopen 30 > /out/mem 2>&1 &");
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	usleep(1500000);
	lbt_write_file("/proc/sys/fs/suid_dumpable", "1");
	char *mem_path = lbt_strdupf("%s/mem", out);
	char *mem = NULL;
	// five commands caught (a few in a hundred are: the setup is short, and shorter since an
	// exec joins the sandbox's own memory cgroup)
	for (int i = 0; i < 1500 && lines(mem) < 5; i++) {
		sh(&o, "s1", "true");
		lbt_out_free(&o);
		free(mem);
		mem = lbt_read_file(mem_path);
	}
	lbt_write_file("/proc/sys/fs/suid_dumpable", saved);
	cr_assert_geq(lines(mem), 5, "commands caught in their setup: %s", mem ? mem : "(none)");
	cr_assert_null(strstr(mem, "open\n"), "a command's memory opened for writing: %s", mem);
	lbt_session_rm("s1");
	free(mem), free(mem_path), free(vol), free(out), free(saved);
}

// A tree deeper than PATH_MAX on the host, built inside the workspace, still goes with the
// session; lbbox's own state cannot be mounted; an exec into a dead session names its class.
LBT_TEST(session, deep_trees_own_state_and_dead_sessions)
{
	struct lb_run_out o;
	json_decref(create("s1", NULL));
	// /workspace/ + 20 * 201 + 51 bytes: under PATH_MAX inside, over it on the host
	sh(&o, "s1",
	   "n=$(printf '%0200d' 0); i=0; while [ $i -lt 20 ]; do mkdir $n && cd $n || exit 1; "
	   "i=$((i+1)); done; mkdir $(printf '%050d' 0) && echo deep");
	LBT_ASSERT_OUT(o, "deep\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
	char *vol = lbt_strdupf("%s:/workspace", lbt_runroot());
	lbt_run(&o, "session", "create", "s2", "--rootfs", lbt_rootfs(), "-v", vol, NULL);
	lbt_assert_error_line(&o, 125, "overlaps lbbox's own state");
	lbt_out_free(&o);
	free(vol);
	json_t *a = create("s3", NULL);
	char *state = lbt_strdupf("%s/%s/state.json", lbt_runroot(),
				  lbt_json_str(a, "backend_session_id") + strlen("lbbox-"));
	json_t *st = json_load_file(state, 0, NULL);
	kill((pid_t)json_integer_value(json_object_get(st, "pid")), SIGKILL);
	json_decref(st), json_decref(a), free(state);
	usleep(200000);
	sh(&o, "s3", "true");
	lbt_assert_error_line(&o, 125, "BoxError: session s3 is not running");
	lbt_out_free(&o);
	lbt_session_rm("s3");
}

// exec-* cgroups below the sandbox's own, from its state: the most in any of its directories (on
// v1 an exec has none of its own in the hierarchies it shares with the sandbox: cgroup_child.c).
static int count_exec_cgroups(const char *sandbox)
{
	char *state = lbt_strdupf("%s/%s/state.json", lbt_runroot(), sandbox);
	json_t *st = json_load_file(state, 0, NULL);
	cr_assert_not_null(st, "no %s", state);
	json_t *dirs = json_object_get(st, "cgroups");
	cr_assert(json_array_size(dirs) > 0, "no cgroups in %s", state);
	int most = 0;
	for (size_t i = 0; i < json_array_size(dirs); i++) {
		DIR *d = opendir(json_string_value(json_array_get(dirs, i)));
		struct dirent *e;
		int n = 0;
		while (d && (e = readdir(d)))
			n += strncmp(e->d_name, "exec-", 5) == 0;
		if (d)
			closedir(d);
		most = n > most ? n : most;
	}
	json_decref(st);
	free(state);
	return most;
}

// An exec's background process keeps running (as with docker exec); its cgroup goes at a later
// exec once the process is gone, and finished execs leave no cgroup at all.
LBT_TEST(session, exec_cgroups_of_background_processes_are_swept)
{
	struct lb_run_out o;
	json_t *s = create("s1", NULL);
	const char *sandbox = lbt_json_str(s, "backend_session_id") + strlen("lbbox-");
	lbt_add_marker("987658");
	sh(&o, "s1", "sleep 987658 > /dev/null 2>&1 & echo $! > /tmp/bg");
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	/* the exec may return before its background child has exec'd sleep */
	cr_assert_eq(lbt_wait_procs_with_arg("987658", 1, 5), 1, "the background process runs on");
	cr_assert_eq(count_exec_cgroups(sandbox), 1);
	sh(&o, "s1", "kill $(cat /tmp/bg)");
	lbt_out_free(&o);
	cr_assert_eq(lbt_wait_procs_with_arg("987658", 0, 5), 0);
	sh(&o, "s1", "true");
	lbt_out_free(&o);
	cr_assert_eq(count_exec_cgroups(sandbox), 0, "the empty exec cgroup was removed");
	json_decref(s);
	lbt_session_rm("s1");
}

// Creates run outside the global lock: concurrent creates of one id end in one sandbox, of
// different ids in one each.
LBT_TEST(session, concurrent_creates)
{
	struct lbt_proc p[6];
	struct lb_run_out o;
	const char *ids[] = {"same", "same", "same", "a", "b", "c"};
	char *backend[6] = {0};
	for (int i = 0; i < 6; i++)
		lbt_spawn(&p[i], "session", "create", ids[i], "--rootfs", lbt_rootfs(), NULL);
	for (int i = 0; i < 6; i++) {
		lbt_wait(&p[i], &o, 60);
		LBT_ASSERT_EXIT(o, 0);
		json_t *j = lbt_json(o.out);
		backend[i] = strdup(lbt_json_str(j, "backend_session_id"));
		json_decref(j);
		lbt_out_free(&o);
	}
	cr_assert_str_eq(backend[0], backend[1]);
	cr_assert_str_eq(backend[0], backend[2]);
	cr_assert_str_neq(backend[3], backend[4]);
	cr_assert_str_neq(backend[4], backend[5]);
	for (int i = 0; i < 6; i++)
		free(backend[i]);
	lbt_run(&o, "session", "ls", NULL);
	cr_assert_eq(lbt_count_lines(o.out), 5, "%s", o.out); // header + 4 sessions
	lbt_out_free(&o);
	lbt_session_rm("same"), lbt_session_rm("a"), lbt_session_rm("b"), lbt_session_rm("c");
}

// `--help` where the name goes is help, and a name cannot start with '-' (it was a session
// named "--help").
LBT_TEST(session, help_and_option_like_names)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "create", "--help", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "usage: lbbox session create"), "%s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "session", "create", "-x", "--rootfs", lbt_rootfs(), NULL);
	lbt_assert_error_line(&o, 125, "cannot start with '-'");
	lbt_out_free(&o);
	lbt_run(&o, "session", "ls", NULL);
	cr_assert_eq(lbt_count_lines(o.out), 1, "sessions were created: %s", o.out);
	lbt_out_free(&o);
}
