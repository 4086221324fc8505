// The session and proc verbs as a terminal user drives them: session exec streaming its bytes as
// they come and taking stdin with -i, LangBot's shape behind --langbot/--json, proc rm, proc ls
// --json, and proc attach waiting for the answer to its last input. Pipes are read as a user's
// shell would; nothing is judged by how long it took.
#include "harness.h"

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

LBT_SUITE(session_cli);

// A session whose workspace is a host directory the test can touch; returns that directory.
static char *create_with_workspace(const char *name)
{
	char *ws = lbt_mkdir_work(name);
	char *vol = lbt_strdupf("%s:/workspace", ws);
	struct lb_run_out o;
	lbt_run(&o, "session", "create", name, "--rootfs", lbt_rootfs(), "-v", vol, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	free(vol);
	return ws;
}

static void create(const char *name)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "create", name, "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}

// Reads from fd until buf holds want (or EOF); a watchdog, not a measurement: a broken stream
// would otherwise hang the test.
static void read_until(int fd, char *buf, size_t len, const char *want)
{
	size_t got = 0;
	buf[0] = '\0';
	while (!strstr(buf, want) && got + 1 < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		cr_assert_gt(poll(&p, 1, (int)(LBT_WATCHDOG_SEC * 1000)), 0,
			     "nothing arrived; so far: '%s'", buf);
		ssize_t n = read(fd, buf + got, len - got - 1);
		cr_assert_gt(n, 0, "EOF before '%s'; got '%s'", want, buf);
		got += (size_t)n;
		buf[got] = '\0';
	}
}

// lbbox ARGS with stdin fed from `input` (written, then closed: as `printf input | lbbox ...`).
static void run_with_stdin(struct lb_run_out *o, const char *input, const char *const *args)
{
	int in[2];
	struct lbt_proc p;
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	lbt_spawnv_io(&p, in[0], -1, args);
	close(in[0]);
	cr_assert_eq(write(in[1], input, strlen(input)), (ssize_t)strlen(input));
	close(in[1]);
	lbt_wait(&p, o, LBT_WATCHDOG_SEC);
}

LBT_TEST(session_cli, exec_streams_the_first_line_before_the_command_ends)
{
	char *ws = create_with_workspace("s1");
	int out[2];
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	// the command ends only once the test has seen its first line: no clock involved
	const char *args[] = {"session",
			      "exec",
			      "s1",
			      "--",
			      "sh",
			      "-c",
			      "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second",
			      NULL};
	struct lbt_proc p;
	lbt_spawnv_io(&p, -1, out[1], args);
	close(out[1]);
	char buf[256];
	read_until(out[0], buf, sizeof(buf), "first\n");
	cr_assert_str_eq(buf, "first\n");
	cr_assert_eq(waitpid(p.pid, NULL, WNOHANG), 0, "lbbox still runs the command");
	char *go = lbt_strdupf("%s/go", ws);
	lbt_write_file(go, "");
	read_until(out[0], buf, sizeof(buf), "second\n");
	cr_assert_str_eq(buf, "second\n");
	close(out[0]);
	struct lb_run_out o;
	lbt_wait(&p, &o, LBT_WATCHDOG_SEC);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	free(go), free(ws);
	lbt_session_rm("s1");
}

LBT_TEST(session_cli, exec_keeps_the_exact_bytes_and_the_exit_code)
{
	create("s1");
	struct lb_run_out o;
	lbt_run(&o, "session", "exec", "s1", "--", "sh", "-c",
		"printf '  lead\\n\\n\\ttail  '; printf ' e \\n' >&2; exit 3", NULL);
	LBT_ASSERT_EXIT(o, 3);
	LBT_ASSERT_OUT(o, "  lead\n\n\ttail  ");
	cr_assert_str_eq(o.err, " e \n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session_cli, exec_langbot_and_json_keep_langbots_shape)
{
	create("s1");
	struct lb_run_out o;
	lbt_run(&o, "session", "exec", "s1", "--langbot", "--", "printf", "  a  \\n\\n", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "a\n"); // stripped, one newline printed after it
	lbt_out_free(&o);
	lbt_run(&o, "session", "exec", "s1", "--json", "--", "printf", "  a  \\n\\n", NULL);
	LBT_ASSERT_EXIT(o, 0);
	json_t *j = lbt_json(o.out);
	cr_assert_str_eq(lbt_json_str(j, "stdout"), "a");
	cr_assert_str_eq(lbt_json_str(j, "status"), "completed");
	json_decref(j);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session_cli, exec_i_passes_stdin_and_without_it_stdin_is_empty)
{
	create("s1");
	struct lb_run_out o;
	const char *with_i[] = {"session", "exec", "-i", "s1", "cat", NULL};
	run_with_stdin(&o, "data\n", with_i);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "data\n");
	lbt_out_free(&o);
	const char *without[] = {"session", "exec", "s1", "--", "sh", "-c", "cat; echo end", NULL};
	run_with_stdin(&o, "data\n", without);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "end\n");
	lbt_out_free(&o);
	const char *json[] = {"session", "exec", "-i", "--json", "s1", "cat", NULL};
	run_with_stdin(&o, "to json\n", json);
	LBT_ASSERT_EXIT(o, 0);
	json_t *j = lbt_json(o.out);
	cr_assert_str_eq(lbt_json_str(j, "stdout"), "to json");
	json_decref(j);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// More than any pipe holds, fed from a file: the relay writes it in pieces, none lost.
LBT_TEST(session_cli, exec_i_relays_a_large_stdin_whole)
{
	create("s1");
	char *path = lbt_strdupf("%s/big", lbt_workdir());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	char block[4096];
	memset(block, 'x', sizeof(block));
	for (int i = 0; i < 256; i++)
		cr_assert_eq(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *args[] = {"session", "exec", "-i", "s1", "wc", "-c", NULL};
	struct lbt_proc p;
	struct lb_run_out o;
	lbt_spawnv_io(&p, fd, -1, args);
	close(fd);
	lbt_wait(&p, &o, LBT_WATCHDOG_SEC);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(atoi(o.out), 1048576, "wc -c said %s", o.out);
	lbt_out_free(&o);
	free(path);
	lbt_session_rm("s1");
}

static json_t *start(const char *session, const char *id, const char *script)
{
	const char *args[] = {"proc", "start", "--id", id, session, "--", "sh", "-c", script, NULL};
	return lbt_runv_json(args);
}

static const char *proc_status(const char *session, const char *id, json_t **keep)
{
	const char *args[] = {"proc", "inspect", session, id, NULL};
	*keep = lbt_runv_json(args);
	return lbt_json_str(*keep, "status");
}

static void wait_exited(const char *session, const char *id)
{
	for (int i = 0; i < 600; i++) { // exits are asynchronous: poll, with a watchdog
		json_t *j;
		bool exited = !strcmp(proc_status(session, id, &j), "exited");
		json_decref(j);
		if (exited)
			return;
		usleep(50000);
	}
	cr_assert_fail("process %s never exited", id);
}

LBT_TEST(session_cli, proc_rm_removes_exited_and_needs_f_for_running)
{
	create("s1");
	json_decref(start("s1", "done", "exit 4"));
	lbt_add_marker("987661");
	json_decref(start("s1", "busy", "sleep 987661"));
	wait_exited("s1", "done");
	struct lb_run_out o;
	lbt_run(&o, "proc", "rm", "s1", "done", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "done\n");
	lbt_out_free(&o);
	lbt_run(&o, "proc", "inspect", "s1", "done", NULL);
	lbt_assert_error_line(&o, 125, "BoxManagedProcessNotFoundError");
	lbt_out_free(&o);
	lbt_run(&o, "proc", "rm", "s1", "busy", NULL);
	lbt_assert_error_line(&o, 125,
			      "BoxManagedProcessConflictError: managed process busy in session s1 "
			      "is running");
	lbt_out_free(&o);
	json_t *j;
	cr_assert_str_eq(proc_status("s1", "busy", &j), "running", "a refused rm leaves it be");
	json_decref(j);
	lbt_run(&o, "proc", "rm", "-f", "s1", "busy", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(lbt_count_procs_with_arg("987661"), 0, "rm -f stopped it");
	lbt_run(&o, "proc", "inspect", "s1", "busy", NULL);
	lbt_assert_error_line(&o, 125, "BoxManagedProcessNotFoundError");
	lbt_out_free(&o);
	lbt_run(&o, "proc", "rm", "s1", "never", NULL);
	lbt_assert_error_line(&o, 125, "BoxManagedProcessNotFoundError");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

LBT_TEST(session_cli, proc_ls_json_is_one_object_a_line)
{
	create("s1");
	json_decref(start("s1", "b", "exit 0"));
	json_decref(start("s1", "a", "while true; do sleep 1; done"));
	wait_exited("s1", "b");
	struct lb_run_out o;
	lbt_run(&o, "proc", "ls", "--json", "s1", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(lbt_count_lines(o.out), 2, "%s", o.out);
	char *second = strchr(o.out, '\n') + 1;
	second[-1] = '\0';
	json_t *a = lbt_json(o.out), *b = lbt_json(second);
	cr_assert_str_eq(lbt_json_str(a, "process_id"), "a", "sorted by id");
	cr_assert_str_eq(lbt_json_str(a, "status"), "running");
	cr_assert_str_eq(lbt_json_str(b, "process_id"), "b");
	cr_assert_str_eq(lbt_json_str(b, "status"), "exited");
	cr_assert_eq(json_integer_value(json_object_get(b, "exit_code")), 0);
	json_decref(a), json_decref(b);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "ls", "s1", "--json", NULL); // the flag after the name too
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(lbt_count_lines(o.out), 2, "%s", o.out);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// `echo hi | lbbox proc attach`: stdin ends at once, the answer comes after; it must be printed.
LBT_TEST(session_cli, proc_attach_prints_the_answer_after_stdin_ends)
{
	create("s1");
	json_decref(start("s1", "echo", "while read l; do echo \"got $l\"; done"));
	struct lb_run_out o;
	const char *args[] = {"proc", "attach", "s1", "echo", NULL};
	for (int round = 0; round < 2; round++) { // the process outlives the client; again
		run_with_stdin(&o, "hi\nthere\n", args);
		LBT_ASSERT_EXIT(o, 0);
		LBT_ASSERT_OUT(o, "got hi\ngot there\n");
		lbt_out_free(&o);
		json_t *j;
		cr_assert_str_eq(proc_status("s1", "echo", &j), "running");
		json_decref(j);
	}
	lbt_session_rm("s1");
}
