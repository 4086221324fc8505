// Hostile callers of the Box runtime and the Box CLI: a runtime that would open its HTTP side
// (the relay, /rpc/ws) to the network without a control token refuses to start; ids carrying
// terminal escapes are refused or printed escaped, never raw.
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LBT_SUITE(rpc_hostile);

// Addresses and names reachable from beyond this host, as --host / --listen would take them.
static const char *const open_hosts[] = {"0.0.0.0",
					 "::",
					 "10.1.2.3",
					 "192.0.2.1",
					 "::ffff:127.0.0.1",
					 "fe80::1",
					 "127.0.0.1.example.org",
					 "127.example",
					 "lo",
					 "example.org",
					 "LOCALHOST.example",
					 NULL};

static void runtime_env(void)
{
	setenv("LANGBOT_BOX_TRUSTED_INSTANCE_UUID", "inst-1", 1);
	unsetenv("LANGBOT_BOX_CONTROL_TOKEN");
	unsetenv("LANGBOT_BOX_CONFIG");
}

// The runtime must refuse at once: a runtime that started instead is killed by the short
// watchdog and fails the assertion (status -1).
static void expect_refused(const char *const *args)
{
	struct lbt_proc p;
	struct lb_run_out o;
	lbt_spawnv(&p, args);
	lbt_wait(&p, &o, 10);
	lbt_assert_error_line(&o, 1, "without LANGBOT_BOX_CONTROL_TOKEN");
	lbt_out_free(&o);
}

LBT_TEST(rpc_hostile, stdio_runtime_on_open_address_without_token_refused)
{
	runtime_env();
	for (const char *const *h = open_hosts; *h; h++) {
		const char *args[] = {"box", "-s", "--ws-control-port", "0", "--host", *h, NULL};
		expect_refused(args);
	}
}

LBT_TEST(rpc_hostile, serve_on_open_address_without_token_refused)
{
	runtime_env();
	for (const char *const *h = open_hosts; *h; h++) {
		char *listen = lbt_strdupf("%s:0", *h);
		const char *args[] = {"serve", "--listen", listen, NULL};
		expect_refused(args);
		free(listen);
	}
}

// Loopback listeners need no token: the stdio runtime starts (and ends at stdin EOF, exit 0).
LBT_TEST(rpc_hostile, stdio_runtime_on_loopback_without_token_starts)
{
	static const char *const loop_hosts[] = {"127.0.0.1", "127.0.0.2", "::1", "localhost",
						 NULL};
	runtime_env();
	for (const char *const *h = loop_hosts; *h; h++) {
		struct lb_run_out o;
		lbt_run(&o, "box", "-s", "--ws-control-port", "0", "--host", *h, NULL);
		LBT_ASSERT_EXIT(o, 0);
		cr_assert_null(strstr(o.err, "refusing"), "%s refused: %s", *h, o.err);
		lbt_out_free(&o);
	}
}

// No raw byte of a terminal escape in a text: ESC, BEL, CSI (0x9b, alone or as U+009B's UTF-8).
static void assert_no_escape(const char *what, const char *text)
{
	cr_assert_null(strpbrk(text, "\x1b\x07\x9b"), "raw escape in %s: %s", what, text);
}

LBT_TEST(rpc_hostile, ids_with_control_characters_refused)
{
	static const char *const ids[] = {"s\x1b[31m", "s\x07", "s\x7f", "s\x01x", NULL};
	for (const char *const *id = ids; *id; id++) {
		struct lb_run_out o;
		lbt_run(&o, "session", "create", *id, "--rootfs", lbt_rootfs(), NULL);
		/* the CLI's own name rule (the Box RPC answers BoxValidationError: conformance) */
		lbt_assert_error_line(&o, 125, "a name cannot contain control characters");
		assert_no_escape("the error", o.err);
		lbt_out_free(&o);
	}
	struct lb_run_out o;
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "start", "s1", "--id", "p\x1b]0;pwned\x07", "--", "sleep", "1000",
		NULL);
	lbt_assert_error_line(&o, 125, "a name cannot contain control characters");
	assert_no_escape("the error", o.err);
	lbt_out_free(&o);
	// a lookup by such an id: the error names it, escaped
	lbt_run(&o, "session", "inspect", "gone\x1b[2J", NULL);
	lbt_assert_error_line(&o, 125, "gone\\x1b[2J");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// Ids LangBot accepts that a terminal would still act on (U+009B is the 8-bit CSI), and a
// command: printed escaped by every listing.
LBT_TEST(rpc_hostile, listings_print_ids_escaped)
{
	const char *sid = "s\xc2\x9b"
			  "2J",
		   *pid = "p\xc2\x9b"
			  "31m";
	struct lb_run_out o;
	lbt_run(&o, "session", "create", sid, "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "start", sid, "--id", pid, "--", "sleep", "1000", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "session", "ls", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "s\\xc2\\x9b2J "), "session ls: %s", o.out);
	assert_no_escape("session ls", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "ls", sid, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "p\\xc2\\x9b31m "), "proc ls: %s", o.out);
	assert_no_escape("proc ls", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "proc", "stop", sid, pid, NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "p\\xc2\\x9b31m\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "rm", sid, NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "s\\xc2\\x9b2J\n");
	lbt_out_free(&o);
}
