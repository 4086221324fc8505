// Managed processes (lbbox proc), the session reaper and the workspace quota, against real
// sandboxes; the host is checked clean after every test.
#include "harness.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void create(const char *name, const char *extra)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "create", name, "--rootfs", lbt_rootfs(), extra ? extra : "--pids",
		extra ? NULL : "128", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}

static json_t *proc_json(const char *verb, const char *session, const char *id, ...)
{
	const char *args[32] = {"proc", verb, session};
	int n = 3;
	if (!strcmp(verb, "start")) {
		args[n++] = "--id";
	}
	args[n++] = id;
	va_list ap;
	va_start(ap, id);
	for (const char *a; (a = va_arg(ap, const char *)) && n < 30;)
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return lbt_runv_json(args);
}

static const char *status(json_t *j)
{
	return json_string_value(json_object_get(j, "status"));
}

// Polls proc inspect until the status is want (managed processes exit asynchronously).
static json_t *wait_status(const char *session, const char *id, const char *want)
{
	json_t *j = NULL;
	for (int i = 0; i < 100; i++) {
		json_decref(j);
		j = proc_json("inspect", session, id, NULL);
		if (!strcmp(status(j), want))
			return j;
		usleep(50000);
	}
	cr_assert_fail("process %s never became %s", id, want);
	return j;
}

LBT_SUITE(proc);

LBT_TEST(proc, loop_is_running_and_queryable)
{
	create("s1", NULL);
	json_t *j = proc_json("start", "s1", "loop", "-e", "B=2", "-e", "A=1", "--", "sh", "-c",
			      "while true; do sleep 1; done", NULL);
	cr_assert_str_eq(status(j), "running");
	cr_assert(json_is_null(json_object_get(j, "exit_code")));
	cr_assert(json_is_null(json_object_get(j, "exited_at")));
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "env_keys"), 0)), "A",
			 "env_keys are sorted");
	json_decref(j);
	usleep(300000);
	j = proc_json("inspect", "s1", "loop", NULL);
	cr_assert_str_eq(status(j), "running");
	json_decref(j);
	lbt_session_rm("s1"); // terminates it: the host check below finds no keeper or process
}

LBT_TEST(proc, exited_with_its_code)
{
	create("s1", NULL);
	json_decref(
	    proc_json("start", "s1", "done", "--", "sh", "-c", "echo done && exit 0", NULL));
	json_t *j = wait_status("s1", "done", "exited");
	cr_assert(json_is_integer(json_object_get(j, "exit_code")));
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 0);
	cr_assert(json_is_string(json_object_get(j, "exited_at")));
	json_decref(j);
	json_decref(proc_json("start", "s1", "bad", "--", "sh", "-c", "exit 7", NULL));
	j = wait_status("s1", "bad", "exited");
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 7);
	json_decref(j);
	lbt_session_rm("s1");
}

LBT_TEST(proc, cat_echoes_through_attach_and_survives_detach)
{
	create("s1", NULL);
	json_decref(proc_json("start", "s1", "cat", "--", "cat", NULL));
	char *out = lbt_strdupf("%s/attach.out", lbt_workdir());
	for (int round = 0; round < 2; round++) { // detach, then re-attach
		char *script = lbt_strdupf(
		    "(printf 'hello %d\\nworld\\n'; sleep 0.5) | %s --root %s --runroot %s proc "
		    "attach s1 cat > %s",
		    round, lbt_bin(), lbt_root(), lbt_runroot(), out);
		const char *argv[] = {"sh", "-c", script, NULL};
		cr_assert_eq(lbt_system(argv), 0);
		char *got = lbt_read_file(out);
		char *want = lbt_strdupf("hello %d\nworld\n", round);
		cr_assert_str_eq(got, want);
		free(got), free(want), free(script);
		json_t *j = proc_json("inspect", "s1", "cat", NULL);
		cr_assert_str_eq(status(j), "running", "the process outlives its client");
		json_decref(j);
	}
	free(out);
	struct lb_run_out o;
	lbt_run(&o, "proc", "stop", "s1", "cat", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "inspect", "s1", "cat", NULL);
	lbt_assert_error_line(&o, 125, "BoxManagedProcessNotFoundError");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(proc, attach_to_exited_is_a_conflict)
{
	create("s1", NULL);
	json_decref(proc_json("start", "s1", "x", "--", "true", NULL));
	json_decref(wait_status("s1", "x", "exited"));
	struct lb_run_out o;
	lbt_run(&o, "proc", "attach", "s1", "x", NULL);
	lbt_assert_error_line(&o, 125,
			      "BoxManagedProcessConflictError: managed process x in session s1 is "
			      "not running");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(proc, stop_ignoring_sigterm_kills_after_grace)
{
	create("s1", NULL);
	lbt_add_marker("987652");
	json_decref(proc_json("start", "s1", "stubborn", "--", "sh", "-c",
			      "trap '' TERM; sleep 987652 & while true; do sleep 1; done", NULL));
	usleep(300000);
	double t0 = lbt_now();
	struct lb_run_out o;
	lbt_run(&o, "proc", "stop", "s1", "stubborn", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	double took = lbt_now() - t0;
	cr_assert(took >= 4.5, "SIGKILL came before the 5 s grace (%.1f s)", took);
	cr_assert_eq(lbt_count_procs_with_arg("987652"), 0, "its whole cgroup is killed");
	lbt_session_rm("s1");
}

LBT_TEST(proc, session_shows_processes_only_once_there_are_any)
{
	create("s1", NULL);
	struct lb_run_out o;
	lbt_run(&o, "session", "inspect", "s1", NULL);
	json_t *s = lbt_json(o.out);
	cr_assert_null(json_object_get(s, "managed_processes"));
	json_decref(s);
	lbt_out_free(&o);
	json_decref(proc_json("start", "s1", "default", "--", "sleep", "1000", NULL));
	lbt_run(&o, "session", "inspect", "s1", NULL);
	s = lbt_json(o.out);
	cr_assert_not_null(json_object_get(json_object_get(s, "managed_processes"), "default"));
	cr_assert_not_null(json_object_get(s, "managed_process"));
	json_decref(s);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(proc, stderr_preview_keeps_the_last_4000_characters)
{
	create("s1", NULL);
	// 300 lines of 40 characters each, one write per line
	json_decref(proc_json(
	    "start", "s1", "noisy", "--", "sh", "-c",
	    "i=0; while [ $i -lt 300 ]; do printf 'line %03d xxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\n' "
	    "$i >&2; i=$((i+1)); done; sleep 1000",
	    NULL));
	json_t *j = NULL;
	const char *p = NULL;
	for (int i = 0; i < 100; i++) {
		json_decref(j);
		j = proc_json("inspect", "s1", "noisy", NULL);
		p = json_string_value(json_object_get(j, "stderr_preview"));
		if (p && strstr(p, "line 299"))
			break;
		usleep(50000);
	}
	cr_assert(p && strstr(p, "line 299"), "preview lacks the last line: %s", p);
	cr_assert_leq(strlen(p), 4000);
	cr_assert_null(strstr(p, "line 000"), "the oldest lines were dropped");
	cr_assert(strncmp(p, "line ", 5) == 0, "trimmed at a chunk boundary: %.40s", p);
	json_decref(j);
	lbt_session_rm("s1");
}

LBT_TEST(proc, reaper_skips_persistent_and_busy_sessions)
{
	struct lb_run_out o;
	create("idle", NULL);
	create("keep", "--persistent");
	create("busy", NULL);
	json_decref(proc_json("start", "busy", "p", "--", "sleep", "1000", NULL));
	sleep(2);
	lbt_run(&o, "session", "gc", "--ttl", "1", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "1\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "ls", NULL);
	cr_assert_null(strstr(o.out, "idle"), "%s", o.out);
	cr_assert_not_null(strstr(o.out, "keep"));
	cr_assert_not_null(strstr(o.out, "busy"));
	lbt_out_free(&o);
	lbt_session_rm("keep");
	lbt_session_rm("busy");
}

// A host_path workspace keeps the soft quota: one file cannot outgrow it (RLIMIT_FSIZE), and the
// total is measured after each exec, as LangBot does (§5.6).
LBT_TEST(proc, workspace_quota_on_a_host_path_caps_files_and_is_checked_after_exec)
{
	struct lb_run_out o;
	char *vol = lbt_strdupf("%s:/workspace", lbt_mkdir_work("ws"));
	lbt_run(&o, "session", "create", "s2", "--rootfs", lbt_rootfs(), "--workspace-quota=1",
		"-v", vol, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "session", "exec", "s2", "--", "sh", "-c",
		"dd if=/dev/zero of=big bs=1024 count=2048 2>/dev/null; echo $?; wc -c < big",
		NULL);
	LBT_ASSERT_OUT(o, "153\n1048576\n"); // SIGXFSZ (128 + 25)
	lbt_out_free(&o);
	lbt_run(&o, "session", "exec", "s2", "--", "sh", "-c", "rm big", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	// two files can, and then the session goes, as LangBot deletes it
	lbt_run(&o, "session", "exec", "s2", "--", "sh", "-c",
		"dd if=/dev/zero of=a bs=1024 count=700 2>/dev/null; cp a b", NULL);
	lbt_assert_error_line(&o, 125,
			      "BoxValidationError: workspace quota exceeded after execution");
	lbt_out_free(&o);
	lbt_run(&o, "session", "inspect", "s2", NULL);
	lbt_assert_error_line(&o, 125, "BoxSessionNotFoundError");
	lbt_out_free(&o);
	free(vol);
}

// A managed process on a host_path writes under the same cap as an exec: it runs for long,
// unwatched by the before/after measurement.
LBT_TEST(proc, workspace_quota_on_a_host_path_caps_managed_processes_too)
{
	struct lb_run_out o;
	char *vol = lbt_strdupf("%s:/workspace", lbt_mkdir_work("ws"));
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "--workspace-quota=1",
		"-v", vol, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	json_decref(proc_json("start", "s1", "w1", "--", "sh", "-c",
			      "dd if=/dev/zero of=/workspace/big bs=1024 count=3072; echo $? >&2",
			      NULL));
	json_t *j = wait_status("s1", "w1", "exited");
	json_decref(j);
	lbt_run(&o, "session", "exec", "s1", "--", "sh", "-c", "wc -c < /workspace/big", NULL);
	LBT_ASSERT_OUT(o, "1048576\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
	free(vol);
}

// The session's own workspace under a quota is a tmpfs of that size: past it, writes fail with
// ENOSPC (no per-file cap: two files or one, the total is what counts), for execs and managed
// processes alike, the session lives on, and nothing is mounted on the host.
LBT_TEST(proc, workspace_quota_on_the_own_workspace_is_hard)
{
	struct lb_run_out o;
	create("s1", "--workspace-quota=1");
	lbt_run(&o, "session", "exec", "s1", "--", "sh", "-c",
		"dd if=/dev/zero of=a bs=1024 count=700 2>/dev/null; echo $?; "
		"dd if=/dev/zero of=b bs=1024 count=700 2>&1 | grep -c 'No space left'; "
		"cat a b | wc -c; grep -c ' /workspace .* - tmpfs ' /proc/self/mountinfo",
		NULL);
	LBT_ASSERT_OUT(o, "0\n1\n1048576\n1\n");
	lbt_out_free(&o);
	// a managed process meets the same wall, and a freed workspace takes writes again
	json_decref(proc_json("start", "s1", "w1", "--", "sh", "-c",
			      "rm b; dd if=/dev/zero of=/workspace/c bs=1024 count=3072", NULL));
	json_t *j = wait_status("s1", "w1", "exited");
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 1, "dd fails");
	cr_assert_not_null(strstr(lbt_json_str(j, "stderr_preview"), "No space left on device"),
			   "%s", lbt_json_str(j, "stderr_preview"));
	json_decref(j);
	lbt_run(&o, "session", "exec", "s1", "--", "sh", "-c", "cat a c | wc -c", NULL);
	LBT_ASSERT_OUT(o, "1048576\n");
	lbt_out_free(&o);
	char *mounts = lbt_read_file("/proc/self/mountinfo");
	cr_assert_null(strstr(mounts, lbt_runroot()), "a mount in the runtime's state: %s", mounts);
	free(mounts);
	lbt_session_rm("s1");
}

// memory_mb of a managed process is its own cgroup's limit (the session's stays on the sandbox):
// beyond it only that process is OOM-killed (137), the session and its other processes live on.
LBT_TEST(proc, memory_limit_is_the_process_own_and_an_oom_kill_spares_the_session)
{
	struct lb_run_out o;
	create("s1", NULL);
	json_decref(proc_json("start", "s1", "other", "--", "sleep", "1000", NULL));
	json_decref(
	    proc_json("start", "s1", "small", "--memory", "40m", "--", "sleep", "1000", NULL));
	// the sandbox's view of its cgroups (its cgroup namespace): each managed process's own
	// cgroup below the session's (on the host, v2 puts the sandbox beside the harness's leaf)
	lbt_run(&o, "session", "exec", "s1", "--", "sh", "-c",
		"cat /sys/fs/cgroup/memory/proc-*/memory.limit_in_bytes 2>/dev/null || "
		"cat /sys/fs/cgroup/proc-*/memory.max",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_not_null(strstr(o.out, "41943040\n"), "no 40 MiB limit: %s", o.out);
	// v1: only the process with a limit of its own has a memory cgroup, the other shares the
	// session's (cgroup_child.c); v2: every child has memory.max once the session enables it
	bool v2 = false;
	cr_assert_not_null(lbt_cgroup_dir("memory", &v2));
	cr_assert_eq(lbt_count_lines(o.out), v2 ? 2 : 1, "%s", o.out);
	lbt_out_free(&o);
	// dd's 100 MiB buffer, filled from /dev/zero, is more than its 40 MiB
	json_decref(proc_json("start", "s1", "hog", "--memory", "40m", "--", "dd", "if=/dev/zero",
			      "of=/dev/null", "bs=100M", "count=1", NULL));
	json_t *j = wait_status("s1", "hog", "exited");
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 137);
	json_decref(j);
	j = proc_json("inspect", "s1", "other", NULL);
	cr_assert_str_eq(status(j), "running");
	json_decref(j);
	lbt_run(&o, "session", "exec", "s1", "--", "echo", "alive", NULL);
	LBT_ASSERT_OUT(o, "alive\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// Above the session's memory it is refused in one line, before a running process of the same id
// is replaced; 0 or less is the session's (LangBot has no validator).
LBT_TEST(proc, memory_limit_above_the_session_is_refused)
{
	struct lb_run_out o;
	create("s1", "--memory=64m");
	json_decref(proc_json("start", "s1", "p", "--", "sleep", "1000", NULL));
	lbt_run(&o, "proc", "start", "s1", "--id", "p", "--memory", "65m", "--", "true", NULL);
	lbt_assert_error_line(
	    &o, 125, "BoxValidationError: memory_mb=65 exceeds the session's memory_mb=64");
	lbt_out_free(&o);
	json_t *j = proc_json("inspect", "s1", "p", NULL);
	cr_assert_str_eq(status(j), "running", "the old process stays");
	cr_assert_str_eq(lbt_json_str(j, "command"), "sleep");
	json_decref(j);
	lbt_run(&o, "proc", "start", "s1", "--id", "p", "--memory", "1k", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "invalid --memory '1k': at least 1m");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// §3.8: sessions of an instance that is gone are removed; a live instance's (it holds its
// lock) and the CLI's own (no owner) never are.
LBT_TEST(proc, orphans_of_dead_instances_are_removed)
{
	struct lb_run_out o;
	char *dir = lbt_strdupf("%s/box/instances", lbt_runroot());
	char *lock = lbt_strdupf("%s/inst-live.lock", dir);
	char *box = lbt_strdupf("%s/box", lbt_runroot());
	mkdir(box, 0700);
	mkdir(dir, 0700);
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert(fd >= 0 && flock(fd, LOCK_EX) == 0);
	setenv("LBBOX_BOX_OWNER", "inst-live", 1);
	create("live", NULL);
	unsetenv("LBBOX_BOX_OWNER");
	create("mine", "--persistent");
	setenv("LBBOX_BOX_OWNER", "inst-dead", 1); // never held by anyone
	create("dead", NULL);
	unsetenv("LBBOX_BOX_OWNER");
	lbt_run(&o, "session", "gc", NULL);
	LBT_ASSERT_OUT(o, "1\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "ls", NULL);
	cr_assert_null(strstr(o.out, "dead"), "%s", o.out);
	cr_assert_not_null(strstr(o.out, "live"));
	cr_assert_not_null(strstr(o.out, "mine"));
	lbt_out_free(&o);
	close(fd);
	unlink(lock);
	rmdir(dir);
	free(lock), free(dir), free(box);
	lbt_session_rm("live");
	lbt_session_rm("mine");
}

LBT_TEST(proc, idle_session_pid1_is_lbbox_init_and_closed)
{
	struct lb_run_out o;
	create("s1", NULL);
	lbt_run(&o, "session", "exec", "s1", "--", "sh", "-c",
		"tr '\\0' ' ' < /proc/1/cmdline; cat /proc/1/environ 2>/dev/null || echo closed",
		NULL);
	LBT_ASSERT_OUT(o, "lbbox-init closed\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(proc, restart_replaces_the_running_process)
{
	create("s1", NULL);
	lbt_add_marker("987653");
	json_decref(proc_json("start", "s1", "p", "--", "sleep", "987653", NULL));
	cr_assert_eq(lbt_wait_procs_with_arg("987653", 1, 5), 1);
	json_t *j = proc_json("start", "s1", "p", "--", "sleep", "987654", NULL);
	cr_assert_str_eq(status(j), "running");
	json_decref(j);
	cr_assert_eq(lbt_wait_procs_with_arg("987653", 0, 10), 0, "the old process was replaced");
	lbt_session_rm("s1");
}

LBT_TEST(proc, completed_records_are_bounded)
{
	struct lb_run_out o;
	setenv("LBBOX_BOX_MAX_COMPLETED", "1", 1);
	create("s1", NULL);
	json_decref(proc_json("start", "s1", "first", "--", "true", NULL));
	json_decref(wait_status("s1", "first", "exited"));
	json_decref(proc_json("start", "s1", "second", "--", "true", NULL));
	json_decref(wait_status("s1", "second", "exited"));
	lbt_run(&o, "proc", "inspect", "s1", "first", NULL);
	lbt_assert_error_line(&o, 125, "BoxManagedProcessNotFoundError");
	lbt_out_free(&o);
	unsetenv("LBBOX_BOX_MAX_COMPLETED");
	lbt_session_rm("s1");
}

// A delete killed half-way (its managed process ignores SIGTERM, so it is still in the grace
// period) leaves deleting.json; the next delete or reap finishes it: no sandbox survives.
LBT_TEST(proc, interrupted_delete_is_finished_later)
{
	struct lb_run_out o;
	struct lbt_proc p;
	create("s1", NULL);
	json_decref(proc_json("start", "s1", "stubborn", "--", "sh", "-c",
			      "trap '' TERM; while true; do sleep 1; done", NULL));
	usleep(300000);
	lbt_spawn(&p, "session", "rm", "s1", NULL);
	usleep(1000000);
	kill(p.pid, SIGKILL);
	lbt_wait(&p, &o, 10);
	lbt_out_free(&o);
	lbt_run(&o, "session", "gc", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "1\n");
	lbt_out_free(&o);
	// the host check below: no sandbox, cgroup or process of s1 is left
}

// A delete waits out a stubborn managed process's 5 s grace without the runtime-wide lock:
// another session is looked up (create = get-or-create, as each box_exec does, under that
// lock) while that delete is still running, and the same id can be created again after it.
// The same for the reaper: an orphan (its instance is gone) with a managed process that ignores
// SIGTERM takes the grace period to go; another session's create does not wait for it (it used
// to wait under the runtime-wide lock).
LBT_TEST(proc, a_slow_reap_holds_up_no_create)
{
	struct lb_run_out o;
	struct lbt_proc gc;
	int st;
	setenv("LBBOX_BOX_OWNER", "lbt-gone-instance", 1); /* no such instance holds its lock */
	create("s1", NULL);
	json_decref(proc_json("start", "s1", "stubborn", "--", "sh", "-c",
			      "trap '' TERM; while true; do sleep 1; done", NULL));
	unsetenv("LBBOX_BOX_OWNER");
	usleep(300000);
	lbt_spawn(&gc, "session", "gc", NULL);
	for (int i = 0; i < 100; i++) { /* the reap has begun: s1's record is gone */
		lbt_run(&o, "session", "inspect", "s1", NULL);
		int status = o.status;
		lbt_out_free(&o);
		if (status != 0)
			break;
		usleep(20000);
	}
	create("s2", NULL);
	cr_assert_eq(waitpid(gc.pid, &st, WNOHANG), 0,
		     "creating s2 waited for the reap of s1 to end");
	lbt_wait(&gc, &o, 20);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_session_rm("s2");
}

LBT_TEST(proc, a_slow_delete_holds_up_no_other_session)
{
	struct lb_run_out o;
	struct lbt_proc rm;
	int st;
	create("s1", NULL);
	create("s2", NULL);
	json_decref(proc_json("start", "s1", "stubborn", "--", "sh", "-c",
			      "trap '' TERM; while true; do sleep 1; done", NULL));
	usleep(300000);
	lbt_spawn(&rm, "session", "rm", "s1", NULL);
	for (int i = 0; i < 100; i++) { /* the delete has begun: s1's record is gone */
		lbt_run(&o, "session", "inspect", "s1", NULL);
		int status = o.status;
		lbt_out_free(&o);
		if (status != 0)
			break;
		usleep(20000);
	}
	create("s2", NULL);
	cr_assert_eq(waitpid(rm.pid, &st, WNOHANG), 0,
		     "looking s2 up waited for the delete of s1 to end");
	lbt_wait(&rm, &o, 20);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	create("s1", NULL);
	lbt_session_rm("s1");
	lbt_session_rm("s2");
}

LBT_TEST(proc, concurrent_starts_of_one_id_leave_one_process)
{
	struct lbt_proc p[3];
	struct lb_run_out o;
	create("s1", NULL);
	lbt_add_marker("987656");
	for (int i = 0; i < 3; i++)
		lbt_spawn(&p[i], "proc", "start", "s1", "--id", "dup", "--", "sleep", "987656",
			  NULL);
	for (int i = 0; i < 3; i++) {
		lbt_wait(&p[i], &o, 30);
		LBT_ASSERT_EXIT(o, 0);
		lbt_out_free(&o);
	}
	cr_assert_eq(lbt_wait_procs_with_arg("987656", 1, 10), 1);
	lbt_session_rm("s1");
}

// The runtime-wide managed-process capacity holds for starts racing in different sessions.
LBT_TEST(proc, concurrent_starts_in_different_sessions_respect_the_capacity)
{
	enum { N = 4 };
	struct lbt_proc p[N];
	struct lb_run_out o;
	char id[N][8];
	int started = 0, refused = 0;
	setenv("LBBOX_BOX_MAX_PROCESSES", "1", 1);
	for (int i = 0; i < N; i++) {
		snprintf(id[i], sizeof(id[i]), "c%d", i);
		create(id[i], NULL);
	}
	lbt_add_marker("987655");
	for (int i = 0; i < N; i++)
		lbt_spawn(&p[i], "proc", "start", id[i], "--id", "p", "--", "sleep", "987655",
			  NULL);
	for (int i = 0; i < N; i++) {
		lbt_wait(&p[i], &o, 30);
		if (o.status == 0)
			started++;
		else if (strstr(o.err, "Box managed process capacity reached (1)"))
			refused++;
		lbt_out_free(&o);
	}
	unsetenv("LBBOX_BOX_MAX_PROCESSES");
	cr_assert_eq(started, 1, "%d of %d racing starts got the one slot", started, N);
	cr_assert_eq(refused, N - 1);
	cr_assert_eq(lbt_wait_procs_with_arg("987655", 1, 10), 1);
	for (int i = 0; i < N; i++)
		lbt_session_rm(id[i]);
}

// A keeper killed outright leaves its process unmanaged: stop still kills it (by its cgroup).
LBT_TEST(proc, stop_after_the_keeper_died_kills_the_process)
{
	struct lb_run_out o;
	create("s1", NULL);
	lbt_add_marker("987657");
	json_decref(proc_json("start", "s1", "p", "--", "sleep", "987657", NULL));
	cr_assert_eq(lbt_wait_procs_with_arg("987657", 1, 5), 1);
	char *glob_dir = lbt_strdupf("%s/box/sessions/s1/procs", lbt_runroot());
	DIR *d = opendir(glob_dir);
	struct dirent *e;
	pid_t keeper = 0;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".json")) {
			char *path = lbt_strdupf("%s/%s", glob_dir, e->d_name);
			json_t *r = json_load_file(path, 0, NULL);
			keeper = (pid_t)json_integer_value(json_object_get(r, "keeper"));
			json_decref(r), free(path);
		}
	if (d)
		closedir(d);
	free(glob_dir);
	cr_assert_gt(keeper, 0);
	kill(keeper, SIGKILL);
	usleep(200000);
	lbt_run(&o, "proc", "stop", "s1", "p", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(lbt_wait_procs_with_arg("987657", 0, 5), 0, "the orphaned process was killed");
	lbt_session_rm("s1");
}

/* RUNROOT/box/reap.due, the reaper's hint: no create scans the sessions before it. */
static void write_due(const char *text)
{
	char *path = lbt_strdupf("%s/box/reap.due", lbt_runroot());
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
	free(path);
}

static bool listed(const char *name)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "inspect", name, NULL);
	bool found = o.status == 0;
	lbt_out_free(&o);
	return found;
}

// A session idle past the TTL (its exec.lock's mtime set back 400 s) is not reaped by a create
// while the hint says nothing can have expired yet (no create scans every session), and is once
// the hint has passed; a missing hint is "due now", and the full reap writes it again.
LBT_TEST(proc, create_reaps_only_once_the_hint_is_due)
{
	struct timespec old[2] = {{.tv_sec = time(NULL) - 400}, {.tv_sec = time(NULL) - 400}};
	char *lock = lbt_strdupf("%s/box/sessions/idle/exec.lock", lbt_runroot());
	create("idle", NULL);
	cr_assert_eq(utimensat(AT_FDCWD, lock, old, 0), 0, "%s", strerror(errno));
	create("s2", NULL);
	cr_assert(listed("idle"), "a create scanned the sessions before the hint");
	write_due("1\n");
	create("s3", NULL);
	cr_assert(!listed("idle"), "the hint passed, yet the idle session was not reaped");
	create("idle", NULL);
	cr_assert_eq(utimensat(AT_FDCWD, lock, old, 0), 0, "%s", strerror(errno));
	char *due = lbt_strdupf("%s/box/reap.due", lbt_runroot());
	cr_assert_eq(unlink(due), 0);
	create("s4", NULL);
	cr_assert(!listed("idle"), "a missing hint must mean due now");
	cr_assert_eq(access(due, F_OK), 0, "the full reap wrote no hint");
	free(lock);
	free(due);
	lbt_session_rm("s2");
	lbt_session_rm("s3");
	lbt_session_rm("s4");
}

// Capacity is counted without reading the sessions, and a full runtime reaps before it refuses
// even when nothing is due (orphans, whose instance is gone, make room); the count stays right
// as sessions come and go.
LBT_TEST(proc, a_full_runtime_reaps_orphans_before_refusing)
{
	struct lb_run_out o;
	char name[32];
	setenv("LBBOX_BOX_MAX_SESSIONS", "12", 1);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		create(name, "--persistent");
	}
	setenv("LBBOX_BOX_OWNER", "lbt-gone-instance", 1);
	create("orphan1", "--persistent");
	create("orphan2", "--persistent");
	unsetenv("LBBOX_BOX_OWNER");
	write_due("18446744073709551615\n"); /* nothing due: only the capacity path reaps */
	create("x", "--persistent");
	cr_assert(!listed("orphan1") && !listed("orphan2"), "the orphans were not reaped");
	create("y", "--persistent");
	lbt_run(&o, "session", "create", "z", "--rootfs", lbt_rootfs(), NULL);
	cr_assert_neq(o.status, 0, "a 13th session was made");
	cr_assert_not_null(strstr(o.err, "capacity reached (12)"), "%s", o.err);
	lbt_out_free(&o);
	lbt_run(&o, "session", "ls", NULL);
	int lines = 0;
	for (const char *p = o.out; (p = strchr(p, '\n')); p++)
		lines++;
	cr_assert_eq(lines, 13, "ls: %s", o.out); /* a header and 12 sessions */
	lbt_out_free(&o);
	lbt_session_rm("x");
	create("z", "--persistent"); /* room again */
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		lbt_session_rm(name);
	}
	lbt_session_rm("y");
	lbt_session_rm("z");
	unsetenv("LBBOX_BOX_MAX_SESSIONS");
}
