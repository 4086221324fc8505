// Detached runs as a podman user drives them: run -d [--name], run --name in the foreground,
// ps, logs [-f] [--tail], stop, kill, rm, exec, proc logs, and run --json-file. A run is a
// session plus its managed process "main": session ls and proc ls see the same objects. The
// host is checked clean after every test (every run is removed by the test).
#include "harness.h"

#include <glob.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

LBT_SUITE(detach);

#define POLL_ROUNDS 600 // 0.1 s each: generous on a shared 2-core host, never a timing claim

// lbbox run -d --name NAME --rootfs BUSYBOX [extra...] -- sh -c SCRIPT; the name it printed.
static char *run_d(const char *name, const char *script, const char *extra)
{
	struct lb_run_out o;
	const char *args[16] = {"run", "-d"};
	int n = 2;
	if (name)
		args[n++] = "--name", args[n++] = name;
	args[n++] = "--rootfs", args[n++] = lbt_rootfs();
	if (extra)
		args[n++] = extra;
	args[n++] = "--", args[n++] = "sh", args[n++] = "-c", args[n++] = script;
	args[n] = NULL;
	lbt_runv(&o, args);
	LBT_ASSERT_EXIT(o, 0);
	char *out = strdup(lbt_chomp(o.out));
	lbt_out_free(&o);
	return out;
}

static char *ps_a_json(void)
{
	struct lb_run_out o;
	lbt_run(&o, "ps", "-a", "--json", NULL);
	LBT_ASSERT_EXIT(o, 0);
	char *out = strdup(o.out);
	lbt_out_free(&o);
	return out;
}

// The ps -a --json object of run name, NULL when it is not listed.
static json_t *ps_entry(const char *name)
{
	char *text = ps_a_json();
	json_t *arr = lbt_json(text), *v, *found = NULL;
	size_t i;
	free(text);
	json_array_foreach(arr, i, v)
	{
		if (!strcmp(json_string_value(json_array_get(json_object_get(v, "Names"), 0)),
			    name))
			found = json_incref(v);
	}
	json_decref(arr);
	return found;
}

// Polls until run name's State is want; its ps object.
static json_t *wait_state(const char *name, const char *want)
{
	for (int i = 0; i < POLL_ROUNDS; i++) {
		json_t *e = ps_entry(name);
		if (e && !strcmp(json_string_value(json_object_get(e, "State")), want))
			return e;
		json_decref(e);
		usleep(100000);
	}
	cr_assert_fail("run %s never became %s", name, want);
	return NULL;
}

// lbbox logs NAME (stdout and stderr apart).
static struct lb_run_out logs(const char *name, const char *tail)
{
	struct lb_run_out o;
	if (tail)
		lbt_run(&o, "logs", "--tail", tail, name, NULL);
	else
		lbt_run(&o, "logs", name, NULL);
	LBT_ASSERT_EXIT(o, 0);
	return o;
}

// Polls until the run's stdout history contains needle.
static void wait_logs(const char *name, const char *needle)
{
	for (int i = 0; i < POLL_ROUNDS; i++) {
		struct lb_run_out o = logs(name, NULL);
		bool found = strstr(o.out, needle) != NULL;
		lbt_out_free(&o);
		if (found)
			return;
		usleep(100000);
	}
	cr_assert_fail("the logs of %s never showed '%s'", name, needle);
}

static void rm_f(const char *name)
{
	struct lb_run_out o;
	lbt_run(&o, "rm", "-f", name, NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, lbt_strdupf("%s\n", name));
	lbt_out_free(&o);
}

static void assert_no_runs(void)
{
	char *text = ps_a_json();
	cr_assert_str_eq(text, "[]\n", "no run is left: %s", text);
	free(text);
	struct lb_run_out o;
	lbt_run(&o, "session", "ls", "--json", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "");
	lbt_out_free(&o);
}

LBT_TEST(detach, run_d_prints_the_name_and_main_runs_with_the_run_options)
{
	lbt_add_marker("987701");
	char *name = run_d("web", "echo \"$FOO\"; pwd; id -u; sleep 987701", NULL);
	cr_assert_str_eq(name, "web", "-d prints the name");
	json_t *e = wait_state("web", "running");
	cr_assert(strncmp(json_string_value(json_object_get(e, "Status")), "Up ", 3) == 0);
	json_decref(e);
	cr_assert_eq(lbt_wait_procs_with_arg("987701", 1, 60), 1, "the command runs");
	rm_f("web");
	free(name);

	// the run's options reach main: env, workdir, user
	lbt_add_marker("987702");
	struct lb_run_out o;
	lbt_run(&o, "run", "-d", "--name", "opts", "-e", "FOO=bar", "-w", "/tmp", "-u", "1234",
		"--memory", "64m", "--rootfs", lbt_rootfs(), "--", "sh", "-c",
		"echo \"$FOO\"; pwd; id -u; cat /sys/fs/cgroup/memory.max 2>/dev/null || cat "
		"/sys/fs/cgroup/memory/memory.limit_in_bytes; sleep 987702",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "opts\n");
	lbt_out_free(&o);
	wait_logs("opts", "1234\n");
	o = logs("opts", NULL);
	cr_assert(strncmp(o.out, "bar\n/tmp\n1234\n", 14) == 0, "env, workdir, user: %s", o.out);
	lbt_out_free(&o);
	// the same objects through the LangBot-shaped verbs
	lbt_run(&o, "proc", "ls", "opts", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "main") && strstr(o.out, "running"), "%s", o.out);
	lbt_out_free(&o);
	rm_f("opts");
	assert_no_runs();
}

LBT_TEST(detach, generated_name_and_name_in_use)
{
	lbt_add_marker("987703");
	char *name = run_d(NULL, "sleep 987703", NULL);
	regex_t re;
	cr_assert_eq(regcomp(&re, "^[a-z]+_[a-z]+$", REG_EXTENDED | REG_NOSUB), 0);
	cr_assert_eq(regexec(&re, name, 0, NULL, 0), 0, "a podman-like name: '%s'", name);
	regfree(&re);

	// the name is taken: refused in one line, nothing made, the first run untouched
	struct lb_run_out o;
	lbt_run(&o, "run", "-d", "--name", name, "--rootfs", lbt_rootfs(), "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "already in use");
	lbt_out_free(&o);
	lbt_run(&o, "ps", "-q", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, lbt_strdupf("%s\n", name));
	lbt_out_free(&o);
	rm_f(name);
	free(name);

	// a plain session holds its name too, and does not become a run
	lbt_run(&o, "session", "create", "plain", "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "run", "-d", "--name", "plain", "--rootfs", lbt_rootfs(), "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "already in use");
	lbt_out_free(&o);
	char *text = ps_a_json();
	cr_assert_str_eq(text, "[]\n", "ps lists runs only: %s", text);
	free(text);
	lbt_session_rm("plain");
	assert_no_runs();
}

LBT_TEST(detach, options_that_cannot_apply_and_bad_input_leave_nothing)
{
	static const char *const bad[][3] = {
	    {"--timeout", "5", "--timeout"},
	    {"--network", "host", "--network host"},
	    {"--json", NULL, "--json"},
	    {"--json-file", "/tmp/x", "--json-file"},
	    {"--rm", NULL, "--rm"},
	    {"--die-with-parent", NULL, "--die-with-parent"},
	    {"--name", "-x", "cannot start with '-'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lb_run_out o;
		const char *args[12] = {"run", "-d", bad[i][0]};
		int n = 3;
		if (bad[i][1])
			args[n++] = bad[i][1];
		args[n++] = "--rootfs", args[n++] = lbt_rootfs(), args[n++] = "--",
		args[n++] = "true", args[n] = NULL;
		lbt_runv(&o, args);
		lbt_assert_error_line(&o, 125, bad[i][2]);
		lbt_out_free(&o);
	}
	struct lb_run_out o;
	lbt_run(&o, "run", "-d", "--name", "nope", "--rootfs", lbt_rootfs(), "--", "/no/such",
		NULL);
	lbt_assert_error_line(&o, 125, "/no/such");
	lbt_out_free(&o);
	lbt_run(&o, "run", "-d", "--name", "nope", "--rootfs", "/no/such/dir", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "/no/such/dir");
	lbt_out_free(&o);
	assert_no_runs();
}

LBT_TEST(detach, ps_lists_running_runs_and_exited_ones_with_a)
{
	lbt_add_marker("987704");
	free(run_d("quick", "exit 7", NULL));
	free(run_d("slow", "sleep 987704", NULL));
	json_t *e = wait_state("quick", "exited");
	cr_assert_eq(json_integer_value(json_object_get(e, "ExitCode")), 7);
	const char *status = json_string_value(json_object_get(e, "Status"));
	cr_assert(strncmp(status, "Exited (7) ", 11) == 0 && strstr(status, " ago"), "%s", status);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "Command"), 0)), "sh");
	json_decref(e);

	struct lb_run_out o;
	lbt_run(&o, "ps", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "NAME") && strstr(o.out, "IMAGE") && strstr(o.out, "COMMAND") &&
		      strstr(o.out, "CREATED") && strstr(o.out, "STATUS"),
		  "header: %s", o.out);
	cr_assert(strstr(o.out, "slow") && strstr(o.out, "Up "), "%s", o.out);
	cr_assert_null(strstr(o.out, "quick"), "an exited run only with -a: %s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "ps", "-a", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "quick") && strstr(o.out, "Exited (7)"), "%s", o.out);
	lbt_out_free(&o);
	// an exited run is kept (not pruned like an exited Box process) until rm
	lbt_run(&o, "rm", "quick", "slow", NULL);
	cr_assert_eq(o.status, 125, "slow runs: refused without -f");
	LBT_ASSERT_OUT(o, "quick\n");
	cr_assert(strstr(o.err, "slow") && strstr(o.err, "running"), "%s", o.err);
	lbt_out_free(&o);
	lbt_run(&o, "ps", "-a", "-q", NULL);
	LBT_ASSERT_OUT(o, "slow\n");
	lbt_out_free(&o);
	rm_f("slow");
	cr_assert_eq(lbt_count_procs_with_arg("987704"), 0, "rm -f kills it");
	assert_no_runs();
}

LBT_TEST(detach, logs_history_tail_streams_and_follow)
{
	free(run_d("talk",
		   "for i in 1 2 3 4 5; do echo line $i; done; echo oops >&2; sleep 1; "
		   "echo last",
		   NULL));
	struct lb_run_out o;
	lbt_run(&o, "logs", "-f", "talk", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "line 1\nline 2\nline 3\nline 4\nline 5\nlast\n");
	cr_assert_str_eq(o.err, "oops\n", "stderr apart: %s", o.err);
	lbt_out_free(&o);
	// stdout and stderr are two pipes: which of "line 5" and "oops" the keeper read first is
	// not fixed, so the last two lines are "last" and one of them
	o = logs("talk", "2");
	cr_assert_eq(lbt_count_lines(o.out) + lbt_count_lines(o.err), 2, "--tail 2: %s / %s", o.out,
		     o.err);
	cr_assert(strlen(o.out) >= 5 && !strcmp(o.out + strlen(o.out) - 5, "last\n"), "%s", o.out);
	lbt_out_free(&o);
	o = logs("talk", "1");
	LBT_ASSERT_OUT(o, "last\n");
	cr_assert_str_eq(o.err, "");
	lbt_out_free(&o);
	o = logs("talk", "0");
	LBT_ASSERT_OUT(o, "");
	lbt_out_free(&o);
	// the same history as a managed process's
	lbt_run(&o, "proc", "logs", "--tail", "1", "talk", "main", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "last\n");
	lbt_out_free(&o);
	rm_f("talk");
	assert_no_runs();
}

LBT_TEST(detach, output_is_read_with_no_one_attached_and_the_history_is_bounded)
{
	// 1 MiB of output, far more than a pipe holds: main would block forever if its keeper
	// read stdout only while a client is attached
	free(run_d("flood",
		   "i=0; while [ $i -lt 16384 ]; do echo "
		   "0123456789012345678901234567890123456789012345678901234567890123; "
		   "i=$((i+1)); done; echo done",
		   NULL));
	json_t *e = wait_state("flood", "exited");
	cr_assert_eq(json_integer_value(json_object_get(e, "ExitCode")), 0);
	json_decref(e);
	struct lb_run_out o = logs("flood", NULL);
	size_t len = strlen(o.out);
	cr_assert(len > 64 * 1024 && len <= 256 * 1024, "bounded history: %zu bytes", len);
	cr_assert(len >= 5 && !strcmp(o.out + len - 5, "done\n"), "the latest output is kept");
	lbt_out_free(&o);
	// a Box managed process keeps no history: proc logs says so
	lbt_run(&o, "session", "create", "box1", "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "start", "--id", "p", "box1", "--", "sleep", "987705", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_add_marker("987705");
	lbt_run(&o, "proc", "logs", "box1", "p", NULL);
	lbt_assert_error_line(&o, 125, "no output history");
	lbt_out_free(&o);
	lbt_session_rm("box1");
	rm_f("flood");
	assert_no_runs();
}

LBT_TEST(detach, stop_kill_and_the_exit_they_leave)
{
	lbt_add_marker("987706");
	free(run_d("st", "sleep 987706", NULL));
	wait_state("st", "running");
	cr_assert_eq(lbt_wait_procs_with_arg("987706", 1, 60), 1);
	struct lb_run_out o;
	lbt_run(&o, "stop", "st", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "st\n");
	lbt_out_free(&o);
	json_t *e = ps_entry("st");
	cr_assert_not_null(e, "a stopped run stays listed");
	cr_assert_str_eq(json_string_value(json_object_get(e, "State")), "exited");
	cr_assert_eq(json_integer_value(json_object_get(e, "ExitCode")), 143, "SIGTERM");
	json_decref(e);
	cr_assert_eq(lbt_count_procs_with_arg("987706"), 0);
	rm_f("st");

	// SIGTERM ignored: SIGKILL to its whole cgroup after the grace, its children too
	lbt_add_marker("987707");
	free(run_d("stubborn", "trap '' TERM; sleep 987707 & sleep 987707", NULL));
	cr_assert_eq(lbt_wait_procs_with_arg("987707", 2, 60), 2);
	lbt_run(&o, "stop", "-t", "1", "stubborn", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	e = ps_entry("stubborn");
	cr_assert_eq(json_integer_value(json_object_get(e, "ExitCode")), 137, "SIGKILL");
	json_decref(e);
	cr_assert_eq(lbt_count_procs_with_arg("987707"), 0, "its children are gone too");
	rm_f("stubborn");

	// kill -s: the signal reaches main itself
	free(run_d("sig", "trap 'echo got USR1; exit 5' USR1; while true; do sleep 0.1; done",
		   NULL));
	wait_state("sig", "running");
	lbt_run(&o, "kill", "-s", "USR1", "sig", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "sig\n");
	lbt_out_free(&o);
	e = wait_state("sig", "exited");
	cr_assert_eq(json_integer_value(json_object_get(e, "ExitCode")), 5);
	json_decref(e);
	wait_logs("sig", "got USR1\n");
	lbt_run(&o, "kill", "sig", NULL);
	lbt_assert_error_line(&o, 125, "not running");
	lbt_out_free(&o);
	lbt_run(&o, "kill", "-s", "NOPE", "sig", NULL);
	lbt_assert_error_line(&o, 125, "NOPE");
	lbt_out_free(&o);
	rm_f("sig");
	assert_no_runs();
}

LBT_TEST(detach, exec_runs_in_the_run_and_returns_its_code)
{
	lbt_add_marker("987708");
	struct lb_run_out o;
	lbt_run(&o, "run", "-d", "--name", "ex", "-e", "FOO=bar", "-w", "/tmp", "--rootfs",
		lbt_rootfs(), "--", "sh", "-c", "echo made > /tmp/m; sleep 987708", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(lbt_wait_procs_with_arg("987708", 1, 60), 1);
	// the run's root, environment and workdir; stdout and stderr apart; its exit code
	lbt_run(&o, "exec", "ex", "sh", "-c",
		"cat /tmp/m; echo \"$FOO\" $X; pwd; echo e >&2; exit 4", NULL);
	cr_assert_eq(o.status, 4, "exit %d: %s %s", o.status, o.out, o.err);
	cr_assert_str_eq(o.out, "made\nbar\n/tmp\n");
	cr_assert_str_eq(o.err, "e\n");
	lbt_out_free(&o);
	lbt_run(&o, "exec", "-e", "X=y", "-w", "/", "ex", "sh", "-c", "echo $X; pwd", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "y\n/\n");
	lbt_out_free(&o);
	lbt_run(&o, "exec", "nosuch", "true", NULL);
	lbt_assert_error_line(&o, 125, "no run named nosuch");
	lbt_out_free(&o);
	lbt_run(&o, "stop", "-t", "0", "ex", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "exec", "ex", "true", NULL);
	lbt_assert_error_line(&o, 125, "not running");
	lbt_out_free(&o);
	rm_f("ex");
	assert_no_runs();
}

LBT_TEST(detach, name_without_d_runs_in_the_foreground_and_is_removed)
{
	struct lb_run_out o;
	lbt_run(&o, "run", "--name", "fg", "--rootfs", lbt_rootfs(), "--", "sh", "-c",
		"echo out; echo err >&2; exit 3", NULL);
	cr_assert_eq(o.status, 3, "its exit code: %d (%s)", o.status, o.err);
	cr_assert_str_eq(o.out, "out\n");
	cr_assert_str_eq(o.err, "err\n");
	lbt_out_free(&o);
	assert_no_runs();

	// listed while it runs; stopping it ends the foreground lbbox with the command's status
	lbt_add_marker("987709");
	struct lbt_proc p;
	lbt_spawn(&p, "run", "--name", "fg2", "--rootfs", lbt_rootfs(), "--", "sh", "-c",
		  "echo started; exec sleep 987709", NULL);
	wait_state("fg2", "running");
	cr_assert_eq(lbt_wait_procs_with_arg("987709", 1, 60), 1);
	lbt_run(&o, "stop", "fg2", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_wait(&p, &o, 60);
	cr_assert_eq(o.status, 143, "status %d: %s", o.status, o.err);
	LBT_ASSERT_OUT(o, "started\n");
	lbt_out_free(&o);
	assert_no_runs();
}

LBT_TEST(detach, help_prints_help_and_does_nothing_else)
{
	static const char *const verbs[][3] = {
	    {"ps", "--help", NULL},	{"logs", "--help", NULL}, {"stop", "-h", NULL},
	    {"kill", "--help", NULL},	{"rm", "--help", NULL},	  {"exec", "--help", NULL},
	    {"proc", "logs", "--help"},
	};
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		struct lb_run_out o;
		lbt_run(&o, verbs[i][0], verbs[i][1], verbs[i][2], NULL);
		LBT_ASSERT_EXIT(o, 0);
		cr_assert(strncmp(o.out, "usage: lbbox ", 13) == 0, "%s: %s", verbs[i][0], o.out);
		lbt_out_free(&o);
	}
	struct lb_run_out o;
	lbt_run(&o, "run", "-d", "--name", "h", "--help", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "--detach") && strstr(o.out, "--json-file"), "%s", o.out);
	lbt_out_free(&o);
	assert_no_runs();
}

LBT_TEST(detach, json_file_gets_the_result_object)
{
	char *path = lbt_strdupf("%s/result.json", lbt_workdir());
	struct lb_run_out o;
	lbt_run(&o, "run", "--json-file", path, "--rootfs", lbt_rootfs(), "--", "sh", "-c",
		"echo hi; exit 2", NULL);
	cr_assert_eq(o.status, 2);
	LBT_ASSERT_OUT(o, "hi\n"); // stdout stays the command's
	lbt_out_free(&o);
	char *text = lbt_read_file(path);
	json_t *j = lbt_json(text);
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 2);
	cr_assert(json_is_false(json_object_get(j, "timed_out")));
	json_decref(j);
	free(text);
	// with --json the object is on stdout too
	lbt_run(&o, "run", "--json", "--json-file", path, "--rootfs", lbt_rootfs(), "--", "true",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	j = lbt_json(o.out);
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 0);
	json_decref(j);
	lbt_out_free(&o);
	// no sandbox, no result: the old file does not stay to be mistaken for one
	lbt_run(&o, "run", "--json-file", path, "--rootfs", "/no/such/dir", "--", "true", NULL);
	cr_assert_eq(o.status, 125);
	lbt_out_free(&o);
	cr_assert_neq(access(path, F_OK), 0, "%s removed", path);
	free(path);
}

LBT_TEST(detach, a_foreground_named_run_delivers_all_of_its_output)
{
	// far more than the history keeps: the foreground reads main's output as it comes, and a
	// fast producer waits for it
	struct lb_run_out o;
	lbt_run(&o, "run", "--name", "many", "--rootfs", lbt_rootfs(), "--", "seq", "1", "200000",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(lbt_count_lines(o.out), 200000, "every line: %d", lbt_count_lines(o.out));
	char last[32];
	cr_assert_str_eq(lbt_last_line(o.out, last, sizeof(last)), "200000");
	cr_assert(strncmp(o.out, "1\n2\n3\n", 6) == 0, "in order from the first");
	cr_assert_str_eq(o.err, "");
	lbt_out_free(&o);
	assert_no_runs();
}

LBT_TEST(detach, logs_of_a_flooding_run_never_fail)
{
	// the history rotates thousands of times a second: a reader opening or following in the
	// middle of a rotation must find it
	lbt_add_marker("987712");
	free(
	    run_d("deluge", "while true; do head -c 50000000 /dev/zero; done; sleep 987712", NULL));
	wait_state("deluge", "running");
	for (int i = 0; i < 60; i++) {
		struct lb_run_out o = logs("deluge", NULL); // exit 0, or it fails here
		lbt_out_free(&o);
	}
	rm_f("deluge");
	assert_no_runs();
}

// The current half of the history of the only run (there is one at a time in these tests).
static char *history_file(void)
{
	char *pattern = lbt_strdupf("%s/box/sessions/*/procs/*.log", lbt_runroot());
	glob_t g;
	cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no history under %s", pattern);
	cr_assert_eq(g.gl_pathc, 1, "one history file");
	char *path = strdup(g.gl_pathv[0]);
	globfree(&g);
	free(pattern);
	return path;
}

static void append_bytes(const char *path, const void *buf, size_t n)
{
	FILE *f = fopen(path, "ab");
	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(buf, 1, n, f), n);
	fclose(f);
}

LBT_TEST(detach, a_damaged_history_is_not_parsed_as_output)
{
	free(run_d("dmg", "echo ok", NULL));
	json_t *e = wait_state("dmg", "exited");
	json_decref(e);
	char *path = history_file();
	// what a misaligned history would offer as headers: a stream that is none, reserved bytes
	// set, a length past any chunk's; none of it is output
	static const unsigned char bad_stream[] = {7,	0,   0,	  0,   0,   0,	 0,   7,
						   'F', 'O', 'R', 'G', 'E', 'D', '\n'};
	static const unsigned char bad_reserved[] = {2,	  1,   0,   0,	 0,   0,   0,	7,
						     'F', 'O', 'R', 'G', 'E', 'D', '\n'};
	static const unsigned char huge[] = {1, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 'x'};
	const struct {
		const unsigned char *b;
		size_t n;
	} cases[] = {{bad_stream, sizeof(bad_stream)},
		     {bad_reserved, sizeof(bad_reserved)},
		     {huge, sizeof(huge)}};
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	size_t good_len = (size_t)st.st_size;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(truncate(path, (off_t)good_len), 0);
		append_bytes(path, cases[i].b, cases[i].n);
		struct lb_run_out o;
		lbt_run(&o, "logs", "-f", "dmg", NULL);
		LBT_ASSERT_EXIT(o, 0);
		LBT_ASSERT_OUT(o, "ok\n");
		cr_assert_null(strstr(o.err, "FORGED"), "case %zu: %s", i, o.err);
		cr_assert_eq(lbt_count_lines(o.err), 1, "case %zu: one warning: %s", i, o.err);
		cr_assert(strstr(o.err, "damaged"), "case %zu: %s", i, o.err);
		lbt_out_free(&o);
	}
	free(path);
	rm_f("dmg");
	assert_no_runs();
}

LBT_TEST(detach, json_file_is_kept_when_refused_and_checked_before_the_run)
{
	char *keep = lbt_strdupf("%s/keep.json", lbt_workdir());
	lbt_write_file(keep, "{\"mine\":1}");
	struct lb_run_out o;
	lbt_run(&o, "run", "-d", "--json-file", keep, "--rootfs", lbt_rootfs(), "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "--json-file");
	lbt_out_free(&o);
	char *text = lbt_read_file(keep);
	cr_assert_str_eq(text, "{\"mine\":1}", "a refused run leaves the file alone");
	free(text);
	free(keep);
	// a result that cannot be written is known before the command runs
	lbt_run(&o, "run", "--json-file", "/nonexistent-dir/x.json", "--rootfs", lbt_rootfs(), "--",
		"echo", "ran", NULL);
	lbt_assert_error_line(&o, 125, "/nonexistent-dir/x.json");
	lbt_out_free(&o);
	assert_no_runs();
}

LBT_TEST(detach, a_plain_session_name_in_use_says_how_to_remove_it)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "create", "plain1", "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "run", "-d", "--name", "plain1", "--rootfs", lbt_rootfs(), "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "lbbox session rm plain1");
	lbt_out_free(&o);
	lbt_session_rm("plain1");
	// a run's name says lbbox rm
	free(run_d("runner1", "exit 0", NULL));
	lbt_run(&o, "run", "-d", "--name", "runner1", "--rootfs", lbt_rootfs(), "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "(lbbox rm runner1)");
	lbt_out_free(&o);
	rm_f("runner1");
	assert_no_runs();
}
