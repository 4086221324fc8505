/*
 * Checks of a spec that refuse before anything runs: rlimits the command could not set, and
 * namespaced sysctls aimed at lbbox's own (the host's) namespaces, refused by the descriptor
 * that is joined, not by a path that may have changed since it was checked.
 */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/spec.h"
#include "sandbox/engine.h"

static void expect_refused(int r, struct lb_err **err, const char *want)
{
	cr_assert_lt(r, 0, "accepted, wanted '%s'", want);
	cr_assert_not_null(*err);
	cr_assert_not_null(strstr((*err)->msg, want), "'%s' lacks '%s'", (*err)->msg, want);
	lb_err_free(err);
}

Test(spec_rlimits, a_resource_given_twice_is_refused)
{
	struct lb_spec spec;
	struct lb_err *err = NULL;
	lb_spec_init(&spec);
	spec.rlimits[0] = (struct lb_rlimit){RLIMIT_NOFILE, 64, 64};
	spec.rlimits[1] = (struct lb_rlimit){RLIMIT_NOFILE, 128, 128};
	spec.n_rlimits = 2;
	expect_refused(lb_spec_check_rlimits(&spec, &err), &err, "rlimit nofile given twice");
	spec.n_rlimits = 1;
	cr_assert_eq(lb_spec_check_rlimits(&spec, &err), 0, "%s", err ? err->msg : "");
	lb_spec_free(&spec);
}

Test(spec_rlimits, nofile_above_nr_open_is_refused)
{
	struct lb_spec spec;
	struct lb_err *err = NULL;
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");
	unsigned long long nr = 0;
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%llu", &nr), 1);
	fclose(f);
	lb_spec_init(&spec);
	spec.rlimits[0] = (struct lb_rlimit){RLIMIT_NOFILE, 64, (rlim_t)nr + 1};
	spec.n_rlimits = 1;
	expect_refused(lb_spec_check_rlimits(&spec, &err), &err, "above the kernel's fs.nr_open");
	lb_spec_free(&spec);
}

/* The path names lbbox's own namespace at open time: the descriptor says so, whatever the
 * spec's earlier check saw. */
Test(ns_join, sysctls_are_refused_in_lbbox_own_namespace_by_the_joined_descriptor)
{
	if (geteuid() != 0)
		cr_skip_test("setns needs root");
	static const struct {
		const char *sysctl, *path, *want;
		int type;
	} cases[] = {
	    {"net.ipv4.ip_forward=1", "/proc/self/ns/net", "network namespace", CLONE_NEWNET},
	    {"kernel.shmmni=1", "/proc/self/ns/ipc", "ipc namespace", CLONE_NEWIPC}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lb_spec spec;
		struct lb_ns_join j;
		struct lb_err *err = NULL;
		lb_spec_init(&spec);
		spec.net = LB_NET_OFF;
		char **path = cases[i].type == CLONE_NEWNET ? &spec.netns_path : &spec.ipcns_path;
		*path = strdup(cases[i].path);
		/* without sysctls the same join is fine */
		cr_assert_eq(lb_ns_join_open(&spec, &j, &err), 0, "%s", err ? err->msg : "");
		lb_ns_join_close(&j);
		spec.sysctls = calloc(2, sizeof(char *));
		spec.sysctls[0] = strdup(cases[i].sysctl);
		int r = lb_ns_join_open(&spec, &j, &err);
		lb_ns_join_close(&j);
		expect_refused(r, &err, "is lbbox's own");
		lb_spec_free(&spec);
	}
}
