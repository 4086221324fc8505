/*
 * Fuzz target: an OCI bundle's config.json (src/oci/config*.c, hooks.c) as lbbox-runc create
 * reads it, and the same bytes as exec's process.json and as update's LinuxResources. Nothing
 * is built.
 *
 * Properties checked besides the sanitizers: a config that parses has a command, an absolute
 * cwd and root under the bundle or absolute, every mount target absolute and at most the
 * engine's mount count; cpu and node lists are the kernel's list format; extra devices pass the
 * engine's own check; a refusal always carries one line of error.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lbbox/oci/oci.h"
#include "lbbox/sandbox/cgroup.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	return 0;
}

/* An accepted cpu or node list ("" = none) passes the engine's own check. */
static bool list_ok(const char *list)
{
	struct lb_err *err = NULL;
	if (!list[0] || lb_cpuset_check(list, "cpus", &err) == 0)
		return true;
	lb_err_free(&err);
	return false;
}

static void check_config(const struct lb_oci_config *cfg)
{
	const struct lb_spec *s = &cfg->spec;
	FUZZ_CHECK(s->argv && s->argv[0] && s->argv[0][0], "a config without a command");
	FUZZ_CHECK(s->cwd && s->cwd[0] == '/', "a relative cwd");
	FUZZ_CHECK(s->rootfs && s->rootfs[0] == '/', "a relative root");
	FUZZ_CHECK(s->n_mounts <= LB_MAX_MOUNTS, "too many mounts");
	for (size_t i = 0; i < s->n_mounts; i++)
		FUZZ_CHECK(s->mounts[i].target && s->mounts[i].target[0] == '/',
			   "a relative mount target");
	FUZZ_CHECK(!s->netns_path || s->netns_path[0] == '/', "a relative netns path");
	FUZZ_CHECK(!s->limits.memory_bytes || s->limits.memory_bytes >= LB_MIN_MEMORY,
		   "a memory limit under the floor");
	FUZZ_CHECK(list_ok(s->limits.cpus) && list_ok(s->limits.mems), "a bad cpu or node list");
	struct lb_err *err = NULL;
	FUZZ_CHECK(s->n_devices <= LB_MAX_DEVICES && lb_spec_check_devices(s, &err) == 0,
		   "an extra device the engine refuses");
	lb_err_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lb_oci_config cfg;
	struct lb_oci_process p;
	struct lb_err *err = NULL;
	if (lb_oci_config_parse("/bundle", (const char *)data, size, &cfg, &err) == 0) {
		check_config(&cfg);
	} else {
		FUZZ_CHECK(err && err->msg && !strchr(err->msg, '\n'),
			   "a refusal without one line");
		lb_err_free(&err);
	}
	lb_oci_config_free(&cfg);
	if (lb_oci_process_parse((const char *)data, size, &p, &err) == 0)
		FUZZ_CHECK(p.argv && p.argv[0] && p.cwd && p.cwd[0] == '/', "a bad process");
	else
		lb_err_free(&err);
	lb_oci_process_free(&p);
	/* and as update's LinuxResources */
	struct lb_cgroup_update u;
	if (lb_oci_resources_parse((const char *)data, size, &u, &err) == 0) {
		FUZZ_CHECK(!u.memory || u.memory == -1 || (uint64_t)u.memory >= LB_MIN_MEMORY,
			   "an update's memory under the floor");
		FUZZ_CHECK(list_ok(u.cpus) && list_ok(u.mems), "an update's bad cpu or node list");
	} else {
		FUZZ_CHECK(err && err->msg && !strchr(err->msg, '\n'),
			   "an update refusal without one line");
		lb_err_free(&err);
	}
	return 0;
}
