// Signals from inside a sandbox: a session's pid 1 ends only on a signal really sent from outside.
// A command can kill(1) (refused by the kernel's rule for a namespace's init unless pid 1 takes
// the signal, and pid 1 ignores senders it can see) and rt_sigqueueinfo(1) with a forged siginfo
// (si_pid 0, as if from outside): neither may end the session.
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LBT_SUITE(signals);

static void create(const char *name)
{
	const char *args[] = {"session", "create",	  name, "--rootfs", lbt_rootfs(),
			      "-v",	 lbt_probe_vol(), NULL};
	json_decref(lbt_runv_json(args));
}

static void sh(struct lb_run_out *o, const char *script)
{
	char *full = lbt_strdupf("P=%s; %s", lbt_probe(), script);
	lbt_run(o, "session", "exec", "s1", "--", "sh", "-c", full, NULL);
	free(full);
}

static void expect_alive(void)
{
	struct lb_run_out o;
	sh(&o, "echo alive");
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "alive\n");
	lbt_out_free(&o);
}

LBT_TEST(signals, forged_signals_do_not_end_a_session)
{
	struct lb_run_out o;
	create("s1");
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		// SI_QUEUE (-1) and SI_MESGQ (-3) with si_pid 0: accepted by the kernel, delivered
		char *cmd = lbt_strdupf("$P sigqueue 1 %d -1; $P sigqueue 1 %d -3; kill -%d 1; "
					"sleep 0.2",
					sigs[i], sigs[i], sigs[i]);
		sh(&o, cmd);
		cr_assert_str_eq(o.out, "ok\nok\n", "signal %d: %s", sigs[i], o.out);
		lbt_out_free(&o);
		free(cmd);
		expect_alive();
	}
	// SI_USER (0) and SI_TKILL (-6) cannot be forged toward another process
	sh(&o, "$P sigqueue 1 15 0; $P sigqueue 1 15 -6");
	LBT_ASSERT_OUT(o, "EPERM\nEPERM\n");
	lbt_out_free(&o);
	expect_alive();
	lbt_session_rm("s1");
}
