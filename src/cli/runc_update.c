/* lbbox-runc update: --resources FILE|- (a LinuxResources object) and runc's limit flags. */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runc.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

/* "-1" (no limit), or bytes with an optional unit: 512m, 1g. */
static int parse_bytes(const char *s, int64_t *out)
{
	uint64_t v;
	if (!strcmp(s, "-1")) {
		*out = -1;
		return 0;
	}
	if (lb_parse_size(s, &v, NULL) < 0 || v > INT64_MAX)
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* "-1" or a decimal count. */
static int parse_i64(const char *s, int64_t *out)
{
	uint64_t v;
	if (!strcmp(s, "-1")) {
		*out = -1;
		return 0;
	}
	if (lb_parse_u64(s, &v, NULL) < 0 || v > INT64_MAX)
		return -1;
	*out = (int64_t)v;
	return 0;
}

static int read_resources(struct runc_globals *g, const char *path, struct lb_cgroup_update *u)
{
	struct lb_err *err = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	const char *file = strcmp(path, "-") ? path : "/dev/stdin";
	if (lb_read_file(file, LB_OCI_CONFIG_MAX, &text, &len, &err) < 0)
		return runc_fail(g, "update: --resources %s: %s", path, err ? err->msg : "");
	if (lb_oci_resources_parse(text, len, u, &err) < 0)
		return runc_fail_err(g, &err);
	return 0;
}

enum {
	O_MEM = 256,
	O_SWAP,
	O_RESV,
	O_PIDS,
	O_QUOTA,
	O_PERIOD,
	O_SHARES,
	O_CPUS,
	O_MEMS,
	O_REFUSED,
};

/* One flag onto u (after --resources: a flag wins over the file). */
static int apply_flag(struct runc_globals *g, int c, const char *name, const char *v,
		      struct lb_cgroup_update *u)
{
	_cleanup_err_ struct lb_err *err = NULL;
	int64_t n = 0;
	int bad = 0;
	switch (c) {
	case O_MEM:
		bad = parse_bytes(v, &u->memory);
		break;
	case O_SWAP:
		bad = parse_bytes(v, &u->memory_swap);
		break;
	case O_RESV:
		bad = parse_bytes(v, &u->memory_reservation);
		break;
	case O_PIDS:
		bad = parse_i64(v, &u->pids);
		break;
	case O_QUOTA:
		bad = parse_i64(v, &u->cpu_quota);
		break;
	case O_PERIOD:
	case O_SHARES:
		bad = parse_i64(v, &n) < 0 || n < 0;
		*(c == O_PERIOD ? &u->cpu_period : &u->cpu_shares) = (uint64_t)n;
		break;
	case O_CPUS:
	case O_MEMS:
		if (lb_cpuset_set(c == O_CPUS ? u->cpus : u->mems, v, c == O_CPUS ? "cpus" : "mems",
				  &err) < 0)
			return runc_fail_err(g, &err);
		break;
	default: /* blkio, realtime, idle, burst, kernel memory, RDT: nothing to apply them to */
		if (strcmp(v, "0") && strcmp(v, ""))
			return runc_fail(g, "update: --%s is not supported by lbbox-runc", name);
	}
	return bad ? runc_fail(g, "update: --%s %s is not a valid value", name, v) : 0;
}

int runc_update(struct runc_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"resources", required_argument, NULL, 'r'},
	    {"memory", required_argument, NULL, O_MEM},
	    {"memory-swap", required_argument, NULL, O_SWAP},
	    {"memory-reservation", required_argument, NULL, O_RESV},
	    {"pids-limit", required_argument, NULL, O_PIDS},
	    {"cpu-quota", required_argument, NULL, O_QUOTA},
	    {"cpu-period", required_argument, NULL, O_PERIOD},
	    {"cpu-share", required_argument, NULL, O_SHARES},
	    {"cpu-shares", required_argument, NULL, O_SHARES},
	    {"cpuset-cpus", required_argument, NULL, O_CPUS},
	    {"cpuset-mems", required_argument, NULL, O_MEMS},
	    {"blkio-weight", required_argument, NULL, O_REFUSED},
	    {"kernel-memory", required_argument, NULL, O_REFUSED},
	    {"kernel-memory-tcp", required_argument, NULL, O_REFUSED},
	    {"cpu-rt-period", required_argument, NULL, O_REFUSED},
	    {"cpu-rt-runtime", required_argument, NULL, O_REFUSED},
	    {"cpu-idle", required_argument, NULL, O_REFUSED},
	    {"cpu-burst", required_argument, NULL, O_REFUSED},
	    {"l3-cache-schema", required_argument, NULL, O_REFUSED},
	    {"mem-bw-schema", required_argument, NULL, O_REFUSED},
	    {0},
	};
	struct lb_cgroup_update u = {0};
	struct lb_err *err = NULL;
	const char *resources = NULL;
	int c, idx = 0;
	/* flags are applied after the file: first pass finds --resources */
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:r:", opts, &idx)) != -1) {
		if (c == '?' || c == ':')
			return runc_fail(g, "update: unknown or incomplete option '%s'",
					 argv[optind - 1]);
		if (c == 'r')
			resources = optarg;
	}
	if (resources && read_resources(g, resources, &u))
		return 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:r:", opts, &idx)) != -1)
		if (c != 'r' && apply_flag(g, c, opts[idx].name, optarg, &u))
			return 1;
	if (optind >= argc)
		return runc_fail(g, "update: a container id is required");
	if (optind + 1 < argc)
		return runc_fail(g, "update: unexpected argument '%s'", argv[optind + 1]);
	const char *id = argv[optind];
	if (lb_oci_check_id(id, &err) < 0 || lb_oci_update(&g->oci, id, &u, &err) < 0)
		return runc_fail_err(g, &err);
	return 0;
}
