// `lbbox run` basics: output, exit status, pid 1, env/workdir/user/hostname/ulimit, --json.
#include "harness.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

LBT_SUITE(run_basic);

LBT_TEST(run_basic, echo_host_image)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "echo", "hello", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "hello\n");
	cr_assert_str_empty(o.err, "stderr: %s", o.err);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, echo_busybox_rootfs)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--", "echo", "hello", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "hello\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, host_image_has_python)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "python3", "-c", "print(6*7)", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "42\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, exit_code_propagates)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "sh", "-c", "exit 7", NULL);
	LBT_ASSERT_EXIT(o, 7);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, signal_death_is_128_plus_signal)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "sh", "-c", "kill -TERM $$", NULL);
	LBT_ASSERT_EXIT(o, 143);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, command_is_not_pid1)
{
	struct lb_run_out o;

	lbt_run(&o, "run", LBT_PROBE, "pid", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_neq(atoi(o.out), 1, "the command runs as pid %s", o.out);
	cr_assert_gt(atoi(o.out), 1, "probe pid output: %s", o.out);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, pid1_is_lbbox_init)
{
	struct lb_run_out o;

	lbt_run(&o, "run", LBT_PROBE, "cmdline", "1", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "lbbox"), "/proc/1/cmdline is not lbbox's init: %s", o.out);
	cr_assert_null(strstr(o.out, "lbbox-probe"), "pid 1 is the probe: %s", o.out);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, pid_namespace_is_private)
{
	struct lb_run_out o;

	// The shell expands the glob itself: lbbox's init, the shell, perhaps one helper.
	lbt_run(&o, "run", "--", "sh", "-c", "set -- /proc/[0-9]*; echo $# $*", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_leq(atoi(o.out), 3, "too many processes visible: %s", o.out);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, env_flag)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "-e", "FOO=bar baz", "--env", "X=1", "--", "sh", "-c",
		"echo \"$FOO/$X\"", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "bar baz/1\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, host_env_not_leaked)
{
	struct lb_run_out o;

	setenv("LBT_SECRET_HOST_VAR", "leak", 1);
	lbt_run(&o, "run", "--", "sh", "-c", "echo \"[$LBT_SECRET_HOST_VAR]\"", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "[]\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, workdir_flag)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "-w", "/tmp", "--", "pwd", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "/tmp\n");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--workdir", "/usr/bin", "--", "pwd", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "/usr/bin\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, user_flag)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--user", "1000:1000", "--", "sh", "-c", "echo $(id -u):$(id -g)", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "1000:1000\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, default_user_is_root)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "id", "-u", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "0\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, hostname_flag)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--hostname", "box-test-1", "--", "cat", "/proc/sys/kernel/hostname",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "box-test-1\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, default_hostname_is_not_the_hosts)
{
	struct lb_run_out o;
	char *host = lbt_read_file("/proc/sys/kernel/hostname");

	lbt_run(&o, "run", "--", "cat", "/proc/sys/kernel/hostname", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_neq(o.out, host, "sandbox sees the host's hostname %s", host);
	cr_assert_str_neq(o.out, "", "empty hostname");
	free(host);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, ulimit_nofile_default_1024)
{
	struct lb_run_out o;

	lbt_run(&o, "run", LBT_PROBE, "rlimit", "nofile", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strncmp(o.out, "1024 ", 5) == 0, "nofile soft limit: %s", o.out);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, ulimit_core_default_0)
{
	struct lb_run_out o;

	lbt_run(&o, "run", LBT_PROBE, "rlimit", "core", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strncmp(o.out, "0 ", 2) == 0, "core soft limit: %s", o.out);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, ulimit_nofile_flag)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--ulimit", "nofile=256", "--", "sh", "-c", "ulimit -n", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "256\n");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--ulimit", "nofile=128:512", LBT_PROBE, "rlimit", "nofile", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "128 512\n");
	lbt_out_free(&o);
	// a later --ulimit of the same resource replaces the earlier one, as docker's does
	lbt_run(&o, "run", "--ulimit", "nofile=100", "--ulimit", "nofile=200", "--", "sh", "-c",
		"ulimit -n", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "200\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, stdout_and_stderr_are_separate)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "sh", "-c", "echo out; echo err >&2", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "out\n");
	cr_assert_str_eq(o.err, "err\n");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, background_children_die_with_command)
{
	struct lb_run_out o;

	lbt_add_marker("987656");
	lbt_run(&o, "run", "--", "sh", "-c", "sleep 987656 & echo started", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "started\n");
	cr_assert_lt(o.secs, 20.0, "lbbox waited %.1f s for a background child", o.secs);
	cr_assert_eq(lbt_count_procs_with_arg("987656"), 0, "background sleep survived");
	lbt_out_free(&o);
}

static json_t *last_json(const struct lb_run_out *o)
{
	char line[4096];
	json_error_t jerr;
	json_t *j = json_loads(lbt_last_line(o->out, line, sizeof(line)), 0, &jerr);

	cr_assert_not_null(j, "last stdout line is not JSON (%s): %s", jerr.text, o->out);
	cr_assert(json_is_object(j), "not an object: %s", line);
	return j;
}

static void assert_json_fields(json_t *j)
{
	static const char *const keys[] = {"id",	"exit_code",	     "signal",
					   "timed_out", "oom_killed",	     "duration_ms",
					   "cpu_usec",	"memory_peak_bytes", NULL};

	for (int i = 0; keys[i]; i++)
		cr_assert_not_null(json_object_get(j, keys[i]), "JSON lacks \"%s\"", keys[i]);
	cr_assert(json_is_string(json_object_get(j, "id")), "id is not a string");
	cr_assert(json_is_integer(json_object_get(j, "exit_code")), "exit_code not an integer");
	cr_assert(json_is_boolean(json_object_get(j, "timed_out")), "timed_out not a boolean");
	cr_assert(json_is_boolean(json_object_get(j, "oom_killed")), "oom_killed not a boolean");
	cr_assert(json_is_number(json_object_get(j, "duration_ms")), "duration_ms not a number");
	cr_assert(json_is_number(json_object_get(j, "cpu_usec")), "cpu_usec not a number");
	cr_assert(json_is_number(json_object_get(j, "memory_peak_bytes")),
		  "memory_peak_bytes not a number");
}

LBT_TEST(run_basic, json_result)
{
	struct lb_run_out o;
	json_t *j;

	lbt_run(&o, "run", "--json", "--", "sh", "-c", "echo hi; exit 3", NULL);
	LBT_ASSERT_EXIT(o, 3);
	cr_assert(strncmp(o.out, "hi\n", 3) == 0, "command output not first: %s", o.out);
	cr_assert_eq(lbt_count_lines(o.out), 2, "stdout: %s", o.out);
	cr_assert_str_empty(o.err, "lbbox wrote to stderr with --json: %s", o.err);
	j = last_json(&o);
	assert_json_fields(j);
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 3);
	cr_assert(json_is_false(json_object_get(j, "timed_out")));
	cr_assert(json_is_false(json_object_get(j, "oom_killed")));
	cr_assert(!json_is_true(json_object_get(j, "signal")) &&
		      json_number_value(json_object_get(j, "signal")) == 0,
		  "signal should be null/0 for a normal exit");
	cr_assert_gt(strlen(json_string_value(json_object_get(j, "id"))), 0);
	json_decref(j);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, json_signal_and_usage)
{
	struct lb_run_out o;
	json_t *j;

	/* 0.6 s of CPU time, not of wall time: on a loaded machine the two differ */
	lbt_run(&o, "run", "--json", LBT_PROBE, "burn", "0.6", NULL);
	LBT_ASSERT_EXIT(o, 0);
	j = last_json(&o);
	assert_json_fields(j);
	cr_assert_geq(json_number_value(json_object_get(j, "duration_ms")), 600.0);
	cr_assert_geq(json_number_value(json_object_get(j, "cpu_usec")), 600000.0,
		      "cpu_usec below the 0.6 s of CPU the command used: %s", o.out);
	cr_assert_gt(json_number_value(json_object_get(j, "memory_peak_bytes")), 0.0);
	json_decref(j);
	lbt_out_free(&o);

	lbt_run(&o, "run", "--json", "--", "sh", "-c", "kill -KILL $$", NULL);
	LBT_ASSERT_EXIT(o, 137);
	j = last_json(&o);
	cr_assert_eq(json_integer_value(json_object_get(j, "signal")), 9, "%s", o.out);
	json_decref(j);
	lbt_out_free(&o);
}

LBT_TEST(run_basic, stdin_is_not_the_terminal)
{
	struct lb_run_out o;

	// The harness gives lbbox /dev/null as stdin: the command must see EOF, not hang.
	lbt_run(&o, "run", "--", "cat", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "");
	lbt_out_free(&o);
}

LBT_TEST(run_basic, large_output_is_complete)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(strlen(o.out), 3000001, "got %zu bytes of stdout", strlen(o.out));
	lbt_out_free(&o);
}

LBT_TEST(run_basic, parallel_runs_are_independent)
{
	enum { N = 8 };
	struct lbt_proc p[N];
	char *cmd[N];

	for (int i = 0; i < N; i++) {
		cmd[i] = lbt_strdupf("echo run-%d", i);
		lbt_spawn(&p[i], "run", "--memory", "64m", "--", "sh", "-c", cmd[i], NULL);
	}
	for (int i = 0; i < N; i++) {
		struct lb_run_out o;
		char *want = lbt_strdupf("run-%d\n", i);

		lbt_wait(&p[i], &o, LBT_WATCHDOG_SEC);
		LBT_ASSERT_EXIT(o, 0);
		LBT_ASSERT_OUT(o, want);
		free(want);
		free(cmd[i]);
		lbt_out_free(&o);
	}
}
