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
