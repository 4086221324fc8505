/* lbbox run: options -> spec -> engine -> exit status (or one JSON result object). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/spec/image.h"
#include "lbbox/sandbox/net.h"
#include "lbbox/base/util.h"

#define MAX_ENV 256

enum {
	OPT_IMAGE = 256,
	OPT_ROOTFS,
	OPT_READ_ONLY,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPUS,
	OPT_TIMEOUT,
	OPT_NETWORK,
	OPT_USER,
	OPT_HOSTNAME,
	OPT_TMP_SIZE,
	OPT_SECCOMP,
	OPT_CAP_ADD,
	OPT_CAP_DROP,
	OPT_ULIMIT,
	OPT_DIE_WITH_PARENT,
	OPT_CGROUP_PARENT,
	OPT_JSON,
	OPT_PROFILE,
	OPT_ALLOW_HOST,
	OPT_DNS,
};

static const struct option run_opts[] = {
    {"image", required_argument, NULL, OPT_IMAGE},
    {"rootfs", required_argument, NULL, OPT_ROOTFS},
    {"read-only", optional_argument, NULL, OPT_READ_ONLY},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"network", required_argument, NULL, OPT_NETWORK},
    {"volume", required_argument, NULL, 'v'},
    {"workdir", required_argument, NULL, 'w'},
    {"env", required_argument, NULL, 'e'},
    {"user", required_argument, NULL, OPT_USER},
    {"hostname", required_argument, NULL, OPT_HOSTNAME},
    {"tmp-size", required_argument, NULL, OPT_TMP_SIZE},
    {"seccomp", required_argument, NULL, OPT_SECCOMP},
    {"cap-add", required_argument, NULL, OPT_CAP_ADD},
    {"cap-drop", required_argument, NULL, OPT_CAP_DROP},
    {"ulimit", required_argument, NULL, OPT_ULIMIT},
    {"die-with-parent", no_argument, NULL, OPT_DIE_WITH_PARENT},
    {"cgroup-parent", required_argument, NULL, OPT_CGROUP_PARENT},
    {"json", no_argument, NULL, OPT_JSON},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
    {"dns", required_argument, NULL, OPT_DNS},
    {"help", no_argument, NULL, 'h'},
    {0},
};

struct run_opts {
	struct lb_spec spec;
	const char *image;
	char *env[MAX_ENV + 1];
	size_t n_env;
	bool json;
	bool user_set;
	bool network_set;
	const char *profile; /* --profile: a LangBot Box profile (run_profile.c) */
};

static const char run_usage[] =
    "usage: lbbox run [OPTIONS] [--] CMD [ARG...]\n"
    "  --image NAME            built-in 'host' (default) or an image in ROOT/images\n"
    "  --rootfs DIR            any directory as the root filesystem\n"
    "  --read-only[=BOOL]      read-only root (default true); /tmp is a tmpfs\n"
    "  --tmp-size SIZE         size of the /tmp tmpfs (default 64m)\n"
    "  --memory SIZE           memory limit, no swap (>= 32m)\n"
    "  --pids N                process limit\n"
    "  --cpus N                cpu quota in cpus (0.5 = half a cpu)\n"
    "  --timeout SECONDS       kill every process of the sandbox at the deadline (exit 124)\n"
    "  --network off|on|host   off: loopback only (default); on: NAT to the internet, no\n"
    "                          access to the host or private ranges; host: unsafe\n"
    "  --allow-host IP[:PORT]  with --network on: allow this (private) address\n"
    "  --dns IP                with --network on: nameserver (default: the host's)\n"
    "  -v, --volume H:S[:ro|rw] bind a host path\n"
    "  -w, --workdir DIR       working directory\n"
    "  -e, --env K=V           environment variable (K alone copies lbbox's value)\n"
    "  --user UID[:GID]        run as this user (default 0 with reduced capabilities)\n"
    "  --hostname NAME         hostname (default lbbox)\n"
    "  --seccomp FILE|unconfined  seccomp profile in OCI/Docker format\n"
    "  --cap-add CAP, --cap-drop CAP   adjust the capability set (ALL allowed)\n"
    "  --ulimit NAME=SOFT[:HARD]  resource limit (default nofile=1024, core=0)\n"
    "  --die-with-parent       kill the sandbox when lbbox dies\n"
    "  --cgroup-parent PATH    create the sandbox cgroup under PATH\n"
    "  --json                  print one JSON result object instead of lbbox's messages\n"
    "  --profile NAME          a LangBot Box profile: default, offline_readonly,\n"
    "                          network_basic, network_extended (limits, timeout, locks)\n";

static int add_env(struct run_opts *o, const char *kv, struct lb_err **err)
{
	if (o->n_env >= MAX_ENV)
		return lb_err_set(err, 0, "too many environment variables");
	char *copy = NULL;
	if (strchr(kv, '='))
		copy = strdup(kv);
	else if (getenv(kv) && asprintf(&copy, "%s=%s", kv, getenv(kv)) < 0)
		copy = NULL;
	else if (!getenv(kv))
		return 0;
	if (!copy)
		return lb_err_set(err, ENOMEM, "environment");
	/* a later -e KEY=... replaces an earlier one */
	size_t klen = strcspn(copy, "=");
	for (size_t i = 0; i < o->n_env; i++) {
		if (strncmp(o->env[i], copy, klen) == 0 && o->env[i][klen] == '=') {
			free(o->env[i]);
			o->env[i] = copy;
			return 0;
		}
	}
	o->env[o->n_env++] = copy;
	return 0;
}

static int parse_user(const char *s, struct lb_spec *spec, struct lb_err **err)
{
	uint32_t uid, gid;
	_cleanup_free_ char *copy = strdup(s);
	if (!copy)
		return lb_err_set(err, ENOMEM, "user");
	char *g = strchr(copy, ':');
	if (g)
		*g++ = '\0';
	if (lb_parse_id(copy, &uid, err) < 0 || (g && lb_parse_id(g, &gid, err) < 0))
		return lb_err_wrap(err, "invalid --user '%s' (numeric UID[:GID])", s);
	spec->uid = (uid_t)uid;
	spec->gid = g ? (gid_t)gid : (gid_t)uid;
	return 0;
}

static int parse_timeout(const char *s, uint64_t *ms, struct lb_err **err)
{
	char *end = NULL;
	errno = 0;
	double sec = strtod(s, &end);
	if (errno || end == s || *end || !(sec > 0) || sec > 1e7)
		return lb_err_set(err, 0, "invalid --timeout '%s': expected seconds > 0", s);
	*ms = (uint64_t)(sec * 1000.0 + 0.5);
	return 0;
}

static int parse_pids(const char *s, uint64_t *out, struct lb_err **err)
{
	if (lb_parse_u64(s, out, err) < 0)
		return lb_err_wrap(err, "invalid --pids");
	if (*out == 0)
		return lb_err_set(err, 0, "invalid --pids '%s': must be at least 1", s);
	return 0;
}

static int parse_memory(const char *s, uint64_t *out, struct lb_err **err)
{
	if (lb_parse_size(s, out, err) < 0)
		return lb_err_wrap(err, "invalid --memory");
	if (*out < LB_MIN_MEMORY)
		return lb_err_set(err, 0, "invalid --memory '%s': must be at least 32m", s);
	return 0;
}

static int parse_network(const char *s, struct lb_spec *spec, struct lb_err **err)
{
	if (strcmp(s, "off") == 0 || strcmp(s, "none") == 0)
		spec->net = LB_NET_OFF;
	else if (strcmp(s, "host") == 0)
		spec->net = LB_NET_HOST;
	else if (strcmp(s, "on") == 0)
		spec->net = LB_NET_ON;
	else
		return lb_err_set(err, 0, "invalid --network '%s': expected off, on or host", s);
	return 0;
}

static int parse_one(struct run_opts *o, int c, const char *arg, struct lb_err **err)
{
	struct lb_spec *spec = &o->spec;
	uint64_t mask;

	switch (c) {
	case OPT_IMAGE:
		o->image = arg;
		return 0;
	case OPT_ROOTFS:
		return cli_set_string(&spec->rootfs, arg, err);
	case OPT_READ_ONLY:
		return cli_parse_bool(arg, &spec->readonly_root, err);
	case OPT_MEMORY:
		return parse_memory(arg, &spec->limits.memory_bytes, err);
	case OPT_PIDS:
		return parse_pids(arg, &spec->limits.pids, err);
	case OPT_CPUS:
		return cli_parse_cpus(arg, &spec->limits.cpu_quota_us, &spec->limits.cpu_period_us,
				      err);
	case OPT_TIMEOUT:
		return parse_timeout(arg, &spec->timeout_ms, err);
	case OPT_NETWORK:
		o->network_set = true;
		return parse_network(arg, spec, err);
	case OPT_PROFILE:
		o->profile = arg;
		return 0;
	case 'v':
		if (spec->n_mounts >= LB_MAX_MOUNTS)
			return lb_err_set(err, 0, "too many volumes (at most %d)", LB_MAX_MOUNTS);
		return cli_parse_mount(arg, &spec->mounts[spec->n_mounts++], err);
	case 'w':
		return cli_set_string(&spec->cwd, arg, err);
	case 'e':
		return add_env(o, arg, err);
	case OPT_USER:
		o->user_set = true;
		return parse_user(arg, spec, err);
	case OPT_HOSTNAME:
		return cli_set_string(&spec->hostname, arg, err);
	case OPT_TMP_SIZE:
		return lb_parse_size(arg, &spec->tmp_size, err) < 0 ? lb_err_wrap(err, "--tmp-size")
								    : 0;
	case OPT_SECCOMP:
		return cli_set_string(&spec->seccomp_profile, arg, err);
	case OPT_CAP_ADD:
	case OPT_CAP_DROP:
		if (cli_parse_cap(arg, &mask, err) < 0)
			return -1;
		spec->caps = c == OPT_CAP_ADD ? spec->caps | mask : spec->caps & ~mask;
		return 0;
	case OPT_ULIMIT:
		if (spec->n_rlimits >= LB_MAX_RLIMITS)
			return lb_err_set(err, 0, "too many --ulimit options");
		return cli_parse_rlimit(arg, &spec->rlimits[spec->n_rlimits++], err);
	case OPT_DIE_WITH_PARENT:
		spec->die_with_parent = true;
		return 0;
	case OPT_CGROUP_PARENT:
		return cli_set_string(&spec->cgroup_parent, arg, err);
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_ALLOW_HOST:
		return lb_net_opts_add_allow(&spec->net_opts, arg, err);
	case OPT_DNS:
		return lb_net_opts_add_dns(&spec->net_opts, arg, err);
	default:
		return lb_err_set(err, 0, "unknown option '%s' (see lbbox run --help)", arg);
	}
}

static int parse_args(struct run_opts *o, int argc, char **argv, struct lb_err **err)
{
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hv:w:e:", run_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(run_usage, stdout);
			exit(0);
		}
		if (c == '?' || c == ':')
			return lb_err_set(err, 0, "%s option '%s' (see lbbox run --help)",
					  c == ':' ? "missing value for" : "unknown",
					  argv[optind - 1]);
		if (parse_one(o, c, optarg, err) < 0)
			return -1;
	}
	if (optind >= argc)
		return 0; /* an image's Entrypoint/Cmd, or "no command given" from the spec check */
	o->spec.argv = calloc((size_t)(argc - optind + 1), sizeof(char *));
	if (!o->spec.argv)
		return lb_err_set(err, ENOMEM, "argv");
	for (int i = optind; i < argc; i++)
		if (!(o->spec.argv[i - optind] = strdup(argv[i])))
			return lb_err_set(err, ENOMEM, "argv");
	return 0;
}

/* The -e entries become the spec's environment (the image's and the defaults come after). */
static int finish_env(struct run_opts *o, struct lb_err **err)
{
	char **env = calloc(o->n_env + 1, sizeof(char *));
	if (!env)
		return lb_err_set(err, ENOMEM, "environment");
	for (size_t i = 0; i < o->n_env; i++) {
		env[i] = o->env[i];
		o->env[i] = NULL;
	}
	o->spec.env = env;
	return 0;
}

/* Network options that only make sense with "on", and the network chosen by the environment. */
static int finish_network(struct run_opts *o, struct lb_err **err)
{
	struct lb_net_opts *n = &o->spec.net_opts;
	if (o->spec.net != LB_NET_ON) {
		if (n->n_allow || n->n_dns)
			return lb_err_set(err, 0, "--allow-host and --dns need --network on");
		return 0;
	}
	return lb_net_opts_env(n, err);
}

static void print_json(const struct lb_result *res)
{
	json_t *j = json_pack("{s:s, s:i, s:i, s:b, s:b, s:I, s:I, s:I}", "id", res->id,
			      "exit_code", res->exit_code, "signal", res->signal, "timed_out",
			      res->timed_out, "oom_killed", res->oom_killed, "duration_ms",
			      (json_int_t)res->duration_ms, "memory_peak_bytes",
			      (json_int_t)res->memory_peak, "cpu_usec", (json_int_t)res->cpu_usec);
	cli_print_json(j);
}

static int report(const struct run_opts *o, const struct lb_result *res)
{
	int code = res->timed_out ? LB_EXIT_TIMEOUT : res->exit_code;
	if (o->json) {
		print_json(res);
		return code;
	}
	if (res->timed_out)
		cli_error("command timed out after %.3gs; every process of the sandbox was killed",
			  (double)o->spec.timeout_ms / 1000.0);
	else if (res->oom_killed)
		cli_error("command was killed by the OOM killer (memory limit %llu MiB reached)",
			  (unsigned long long)(o->spec.limits.memory_bytes >> 20));
	return code;
}

static void run_opts_free(struct run_opts *o)
{
	for (size_t i = 0; i < o->n_env; i++)
		free(o->env[i]);
	lb_spec_free(&o->spec);
}

/* argv -> o->spec: options, profile, image, environment, network. */
static int prepare(struct run_opts *o, struct cli_globals *g, int argc, char **argv,
		   struct lb_err **err)
{
	lb_spec_init(&o->spec);
	if (parse_args(o, argc, argv, err) < 0 ||
	    (o->profile && cli_run_profile(o->profile, &o->spec, o->network_set, err) < 0) ||
	    finish_env(o, err) < 0 ||
	    lb_spec_image(&g->paths, o->image, o->user_set, &o->spec, err) < 0 ||
	    finish_network(o, err) < 0)
		return -1;
	return 0;
}

int cli_build_spec(struct cli_globals *g, int argc, char **argv, struct lb_spec *out,
		   struct lb_err **err)
{
	struct run_opts o = {.n_env = 0};
	if (prepare(&o, g, argc, argv, err) < 0) {
		run_opts_free(&o);
		return -1;
	}
	*out = o.spec;
	lb_spec_init(&o.spec);
	run_opts_free(&o);
	return 0;
}

int cli_run(struct cli_globals *g, int argc, char **argv)
{
	struct run_opts o = {.n_env = 0};
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_result res;
	int setup_exit = LB_EXIT_SETUP, code;

	if (prepare(&o, g, argc, argv, &err) < 0 || lb_spec_check(&o.spec, &g->paths, &err) < 0) {
		cli_error("%s", err->msg);
		run_opts_free(&o);
		return LB_EXIT_SETUP;
	}
	if (o.spec.net == LB_NET_HOST && !o.json)
		cli_error(
		    "warning: --network host is unsafe: the sandbox shares the host's network "
		    "and reaches every service on it and on the local network");
	if (lb_rootless()) {
		if (lb_rootless_check(&o.spec, &err) < 0) {
			cli_error("%s", err->msg);
			run_opts_free(&o);
			return LB_EXIT_SETUP;
		}
		if (o.spec.net == LB_NET_ON && !o.json)
			cli_error("note: rootless --network on goes through pasta (user-mode "
				  "networking, IPv4 only) behind lbbox's egress filter");
	}
	if (lb_sandbox_run(&o.spec, &g->paths, &res, &setup_exit, &err) < 0) {
		cli_error("%s", err->msg);
		code = setup_exit;
	} else {
		code = report(&o, &res);
	}
	run_opts_free(&o);
	return code;
}
