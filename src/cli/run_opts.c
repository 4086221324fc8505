/* lbbox run's command line: podman's options and its IMAGE [CMD...] form, with lbbox's own
 * (--image/--rootfs, "-- CMD" on the host image) kept. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/util.h"
#include "lbbox/sandbox/net.h"
#include "run_internal.h"

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
	OPT_ENTRYPOINT,
	OPT_PULL,
	OPT_TLS_VERIFY,
	OPT_ENV_FILE,
	OPT_MOUNT,
	OPT_RM,
	OPT_NAME,
	OPT_JSON_FILE,
	OPT_CPU_SHARES,
	OPT_MEMORY_RESERVATION,
	OPT_CPUSET_CPUS,
	OPT_CPUSET_MEMS,
	OPT_DEVICE,
};

static const struct option run_opts[] = {
    {"image", required_argument, NULL, OPT_IMAGE},
    {"rootfs", required_argument, NULL, OPT_ROOTFS},
    {"read-only", optional_argument, NULL, OPT_READ_ONLY},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"cpu-shares", required_argument, NULL, OPT_CPU_SHARES},
    {"memory-reservation", required_argument, NULL, OPT_MEMORY_RESERVATION},
    {"cpuset-cpus", required_argument, NULL, OPT_CPUSET_CPUS},
    {"cpuset-mems", required_argument, NULL, OPT_CPUSET_MEMS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"network", required_argument, NULL, OPT_NETWORK},
    {"volume", required_argument, NULL, 'v'},
    {"workdir", required_argument, NULL, 'w'},
    {"env", required_argument, NULL, 'e'},
    {"env-file", required_argument, NULL, OPT_ENV_FILE},
    {"mount", required_argument, NULL, OPT_MOUNT},
    {"user", required_argument, NULL, 'u'},
    {"entrypoint", required_argument, NULL, OPT_ENTRYPOINT},
    {"pull", required_argument, NULL, OPT_PULL},
    {"tls-verify", optional_argument, NULL, OPT_TLS_VERIFY},
    {"rm", no_argument, NULL, OPT_RM},
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
    {"publish", required_argument, NULL, 'p'},
    {"interactive", no_argument, NULL, 'i'},
    {"tty", no_argument, NULL, 't'},
    {"detach", no_argument, NULL, 'd'},
    {"name", required_argument, NULL, OPT_NAME},
    {"json-file", required_argument, NULL, OPT_JSON_FILE},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static const char run_usage[] =
    "usage: lbbox run [OPTIONS] IMAGE [CMD [ARG...]]\n"
    "       lbbox run [OPTIONS] [--image IMAGE | --rootfs DIR] [--] CMD [ARG...]\n"
    "       lbbox run [OPTIONS] -- CMD [ARG...]    (the built-in image 'host')\n"
    "  IMAGE                   'host' (the host's /usr, read-only), a directory image in\n"
    "                          ROOT/images, or an image reference (pulled when missing)\n"
    "  --image IMAGE           the same, as an option\n"
    "  --rootfs DIR            any directory as the root filesystem\n"
    "  --pull missing|always|never  fetch IMAGE from its registry first (default missing)\n"
    "  --tls-verify=false      pull over plain HTTP (a test registry)\n"
    "  --entrypoint CMD|JSON   replace the image's ENTRYPOINT ('' clears it, and its CMD)\n"
    "  --read-only[=BOOL]      read-only root (default true); /tmp is a tmpfs\n"
    "  --tmp-size SIZE         size of the /tmp tmpfs (default 64m)\n"
    "  --memory SIZE           memory limit, no swap (>= 32m)\n"
    "  --pids N                process limit\n"
    "  --cpus N                cpu quota in cpus (0.5 = half a cpu)\n"
    "  --cpu-shares N          relative cpu weight, 2 to 262144 (1024 = the default share)\n"
    "  --memory-reservation SIZE  soft memory limit: use above it is reclaimed first\n"
    "  --cpuset-cpus LIST      run only on these cpus (0-2,4)\n"
    "  --cpuset-mems LIST      allocate only on these memory nodes\n"
    "  --timeout SECONDS       kill every process of the sandbox at the deadline (exit 124)\n"
    "  --network off|on|host   off: loopback only (default); on: NAT to the internet, no\n"
    "                          access to the host or private ranges; host: unsafe\n"
    "  --allow-host IP[:PORT]  with --network on: allow this (private) address\n"
    "  --dns IP                with --network on: nameserver (default: the host's)\n"
    "  -p, --publish [IP:][HOST_PORT:]PORT[/tcp|udp]  with --network on: forward a host port\n"
    "                          to PORT (on 127.0.0.1 unless IP is given; 0.0.0.0: every\n"
    "                          address; HOST_PORT = PORT unless given)\n"
    "  -v, --volume H:S[:OPTS] bind host path H (absolute, or ./relative) at S; OPTS: ro, rw,\n"
    "                          z, Z (z/Z accepted: no SELinux relabelling here)\n"
    "  --mount type=bind,src=H,dst=S[,ro]   the same as -v\n"
    "  --mount type=tmpfs,dst=S[,tmpfs-size=SIZE][,tmpfs-mode=MODE]   a tmpfs (default 64m)\n"
    "  --device HOST[:CONTAINER][:PERMS]  the host's device node in /dev (PERMS: r, w, m;\n"
    "                          default rwm); not for -d or --name\n"
    "  -w, --workdir DIR       working directory\n"
    "  -e, --env K=V           environment variable (K alone copies lbbox's value)\n"
    "  --env-file FILE         K=V lines (blank lines and # comments skipped)\n"
    "  -u, --user USER[:GROUP] uid/gid, or names from the image's /etc/passwd and /etc/group\n"
    "                          (default: the image's USER, else 0 with reduced capabilities)\n"
    "  --rm                    accepted: every run is removed when it ends\n"
    "  -t, --tty               a pseudo-terminal for the command (the sandbox's own): its\n"
    "                          stdin, stdout and stderr; this terminal in raw mode with -i,\n"
    "                          its window size followed; not for -d or --name\n"
    "  -i, --interactive       with -t: stdin goes to the pty (without -i it is not read);\n"
    "                          without -t stdin is always passed to the command (not to a\n"
    "                          named run's, whose stdin is its managed process's: proc attach)\n"
    "  --hostname NAME         hostname (default lbbox)\n"
    "  --seccomp FILE|unconfined  seccomp profile in OCI/Docker format\n"
    "  --cap-add CAP, --cap-drop CAP   adjust the capability set (ALL allowed)\n"
    "  --ulimit NAME=SOFT[:HARD]  resource limit (default nofile=1024, core=0)\n"
    "  --die-with-parent       kill the sandbox when lbbox dies\n"
    "  --cgroup-parent PATH    create the sandbox cgroup under PATH\n"
    "  --json                  print the JSON result object on stdout (after the command's\n"
    "                          own output) instead of lbbox's messages\n"
    "  --json-file PATH        write the same object to PATH (replaced; absent when the\n"
    "                          sandbox could not be built); stdout stays the command's own\n"
    "  -d, --detach            run in the background as a detached run: prints its name and\n"
    "                          returns (lbbox ps, logs, stop, kill, rm, exec NAME)\n"
    "  --name NAME             the run's name (with -d: default a generated one; without\n"
    "                          -d: a foreground run listed by lbbox ps while it runs)\n"
    "  --profile NAME          a LangBot Box profile: default, offline_readonly,\n"
    "                          network_basic, network_extended (limits, timeout, locks)\n";

static int parse_user(const char *s, struct run_opts *o, struct lb_err **err)
{
	uint32_t uid, gid;
	_cleanup_free_ char *copy = strdup(s);
	if (!copy)
		return lb_err_set(err, ENOMEM, "user");
	char *g = strchr(copy, ':');
	if (g)
		*g++ = '\0';
	bool numeric = copy[strspn(copy, "0123456789")] == '\0' && *copy &&
		       (!g || (g[strspn(g, "0123456789")] == '\0' && *g));
	if (!numeric) { /* names: looked up in the image's own files */
		if (!*copy || (g && !*g))
			return lb_err_set(err, 0, "invalid --user '%s'", s);
		o->img.user = s;
		o->img.user_set = false;
		return 0;
	}
	if (lb_parse_id(copy, &uid, err) < 0 || (g && lb_parse_id(g, &gid, err) < 0))
		return lb_err_wrap(err, "invalid --user '%s'", s);
	o->spec.uid = (uid_t)uid;
	o->spec.gid = g ? (gid_t)gid : (gid_t)uid;
	o->img.user = NULL;
	o->img.user_set = true;
	return 0;
}

/* A word, or a JSON array of strings as podman takes it; '' clears the image's ENTRYPOINT. */
static int parse_entrypoint(const char *s, struct run_opts *o, struct lb_err **err)
{
	lb_strvfreep(&o->img.entrypoint);
	o->img.entrypoint_set = true;
	if (s[0] == '[') {
		json_error_t jerr;
		_cleanup_json_ json_t *j = json_loads(s, 0, &jerr);
		size_t i;
		json_t *v;
		bool strings = json_is_array(j);
		json_array_foreach(j, i, v) strings = strings && json_is_string(v);
		if (!strings)
			return lb_err_set(
			    err, 0, "invalid --entrypoint '%s': expected a JSON array of strings",
			    s);
		o->img.entrypoint = lb_json_to_strv(j);
		return o->img.entrypoint ? 0 : lb_err_set(err, ENOMEM, "entrypoint");
	}
	o->img.entrypoint = calloc(2, sizeof(char *));
	if (!o->img.entrypoint || (*s && !(o->img.entrypoint[0] = strdup(s))))
		return lb_err_set(err, ENOMEM, "entrypoint");
	return 0;
}

static int parse_pull(const char *s, struct run_opts *o, struct lb_err **err)
{
	if (!strcmp(s, "missing"))
		o->pull = RUN_PULL_MISSING;
	else if (!strcmp(s, "always"))
		o->pull = RUN_PULL_ALWAYS;
	else if (!strcmp(s, "never"))
		o->pull = RUN_PULL_NEVER;
	else
		return lb_err_set(err, 0, "invalid --pull '%s': expected missing, always or never",
				  s);
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

/* podman's --cpu-shares (v1 cpu.shares; v2 cpu.weight by runc's mapping) */
static int parse_shares(const char *s, uint64_t *out, struct lb_err **err)
{
	if (lb_parse_u64(s, out, err) < 0)
		return lb_err_wrap(err, "invalid --cpu-shares");
	if (*out < 2 || *out > 262144)
		return lb_err_set(err, 0, "invalid --cpu-shares '%s': must be 2 to 262144", s);
	return 0;
}

static int parse_reservation(const char *s, uint64_t *out, struct lb_err **err)
{
	if (lb_parse_size(s, out, err) < 0)
		return lb_err_wrap(err, "invalid --memory-reservation");
	if (*out == 0)
		return lb_err_set(err, 0, "invalid --memory-reservation '%s': must be above 0", s);
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

static int add_mount(struct lb_spec *spec, const char *arg, bool mount_syntax, struct lb_err **err)
{
	if (spec->n_mounts >= LB_MAX_MOUNTS)
		return lb_err_set(err, 0, "too many volumes (at most %d)", LB_MAX_MOUNTS);
	struct lb_mount *m = &spec->mounts[spec->n_mounts++];
	return mount_syntax ? cli_parse_mount_spec(arg, m, err) : cli_parse_volume(arg, m, err);
}

/* The options podman has too (or spells the same way). */
static int parse_podman(struct run_opts *o, int c, const char *arg, struct lb_err **err)
{
	struct lb_spec *spec = &o->spec;
	switch (c) {
	case OPT_IMAGE:
		o->img.image = arg;
		return 0;
	case OPT_READ_ONLY:
		return cli_parse_bool(arg, &spec->readonly_root, err);
	case OPT_MEMORY:
		return parse_memory(arg, &spec->limits.memory_bytes, err);
	case OPT_CPUS:
		return cli_parse_cpus(arg, &spec->limits.cpu_quota_us, &spec->limits.cpu_period_us,
				      err);
	case OPT_CPU_SHARES:
		return parse_shares(arg, &spec->limits.cpu_shares, err);
	case OPT_MEMORY_RESERVATION:
		return parse_reservation(arg, &spec->limits.memory_reservation, err);
	case OPT_CPUSET_CPUS:
		return lb_cpuset_set(spec->limits.cpus, arg, "cpus", err);
	case OPT_CPUSET_MEMS:
		return lb_cpuset_set(spec->limits.mems, arg, "mems", err);
	case OPT_NETWORK:
		o->network_set = true;
		return parse_network(arg, spec, err);
	case 'v':
	case OPT_MOUNT:
		return add_mount(spec, arg, c == OPT_MOUNT, err);
	case 'w':
		return cli_set_string(&spec->cwd, arg, err);
	case 'e':
		return run_add_env(o, arg, err);
	case OPT_ENV_FILE:
		return run_env_file(o, arg, err);
	case 'u':
		return parse_user(arg, o, err);
	case OPT_ENTRYPOINT:
		return parse_entrypoint(arg, o, err);
	case OPT_PULL:
		return parse_pull(arg, o, err);
	case OPT_TLS_VERIFY: {
		bool verify = true;
		if (cli_parse_bool(arg, &verify, err) < 0)
			return -1;
		o->tls_verify_off = !verify;
		return 0;
	}
	case OPT_RM:
		o->rm = true; /* every foreground run is removed when it ends */
		return 0;
	case OPT_HOSTNAME:
		return cli_set_string(&spec->hostname, arg, err);
	case 'p':
		return lb_net_opts_add_publish(&spec->net_opts, arg, err);
	case OPT_DEVICE:
		return run_add_device(spec, arg, err);
	default:
		return 1;
	}
}

/* lbbox's own options, and podman's that lbbox spells its own way. */

/* --ulimit: a later one for the same resource replaces the earlier one, as docker's does. */
static int add_ulimit(struct lb_spec *spec, const char *arg, struct lb_err **err)
{
	struct lb_rlimit r;
	if (cli_parse_rlimit(arg, &r, err) < 0)
		return -1;
	for (size_t i = 0; i < spec->n_rlimits; i++)
		if (spec->rlimits[i].resource == r.resource) {
			spec->rlimits[i] = r;
			return 0;
		}
	if (spec->n_rlimits >= LB_MAX_RLIMITS)
		return lb_err_set(err, 0, "too many --ulimit options");
	spec->rlimits[spec->n_rlimits++] = r;
	return 0;
}

static int parse_lbbox(struct run_opts *o, int c, const char *arg, struct lb_err **err)
{
	struct lb_spec *spec = &o->spec;
	uint64_t mask;
	switch (c) {
	case OPT_ROOTFS:
		return cli_set_string(&spec->rootfs, arg, err);
	case OPT_PIDS:
		return parse_pids(arg, &spec->limits.pids, err);
	case OPT_TIMEOUT:
		return parse_timeout(arg, &spec->timeout_ms, err);
	case OPT_PROFILE:
		o->profile = arg;
		return 0;
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
		return add_ulimit(spec, arg, err);
	case OPT_DIE_WITH_PARENT:
		spec->die_with_parent = o->die_given = true;
		return 0;
	case OPT_CGROUP_PARENT:
		return cli_set_string(&spec->cgroup_parent, arg, err);
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_ALLOW_HOST:
		o->allow_given = true;
		return lb_net_opts_add_allow(&spec->net_opts, arg, err);
	case OPT_DNS:
		o->allow_given = true;
		return lb_net_opts_add_dns(&spec->net_opts, arg, err);
	case OPT_NAME:
		o->name = arg;
		return 0;
	case OPT_JSON_FILE:
		o->json_file = arg;
		return 0;
	default:
		return lb_err_set(err, 0, "unknown option (see lbbox run --help)");
	}
}

/* The exact token getopt refused (word: the argument it was reading): "-t" inside "-it" names
 * both. */
static int bad_option(int c, const char *word, struct lb_err **err)
{
	bool bundled = word[0] == '-' && word[1] != '-' && optopt && strlen(word) > 2;
	const char *what = c == ':' ? "missing value for option" : "unknown option";
	if (bundled)
		return lb_err_set(err, 0, "%s '-%c' (in '%s') (see lbbox run --help)", what, optopt,
				  word);
	return lb_err_set(err, 0, "%s '%s' (see lbbox run --help)", what, word);
}

static int copy_argv(struct run_opts *o, int argc, char **argv, int from, struct lb_err **err)
{
	if (from >= argc)
		return 0; /* an image's Entrypoint/Cmd, or "no command given" from the spec check */
	o->spec.argv = calloc((size_t)(argc - from + 1), sizeof(char *));
	if (!o->spec.argv)
		return lb_err_set(err, ENOMEM, "argv");
	for (int i = from; i < argc; i++)
		if (!(o->spec.argv[i - from] = strdup(argv[i])))
			return lb_err_set(err, ENOMEM, "argv");
	return 0;
}

int run_parse_args(struct run_opts *o, int argc, char **argv, struct lb_err **err)
{
	int c;
	const char *last_arg = NULL;
	optind = 1;
	opterr = 0;
	/* ':' first: a missing value is reported as such, not as an unknown option */
	for (int before = optind;
	     (c = getopt_long(argc, argv, "+:hitdv:w:e:u:p:", run_opts, NULL)) != -1;
	     before = optind) {
		if (c == 'h') {
			fputs(run_usage, stdout);
			exit(0);
		}
		if (c == '?' || c == ':')
			return bad_option(c, argv[before], err);
		if (c == 'i' || c == 't') {
			*(c == 'i' ? &o->interactive : &o->tty) = true;
			continue;
		}
		if (c == 'd') {
			o->detach = true;
			continue;
		}
		last_arg = optarg;
		int r = parse_podman(o, c, optarg, err);
		if (r < 0 || (r > 0 && parse_lbbox(o, c, optarg, err) < 0))
			return -1;
	}
	/* "--" ended the options (and was not an option's value): the rest is the command */
	bool dashdash =
	    optind > 1 && !strcmp(argv[optind - 1], "--") && last_arg != argv[optind - 1];
	if (dashdash || o->img.image || o->spec.rootfs || optind >= argc)
		return copy_argv(o, argc, argv, optind, err);
	o->img.image = argv[optind++]; /* podman's form: IMAGE [CMD...] */
	if (optind < argc && !strcmp(argv[optind], "--"))
		optind++;
	return copy_argv(o, argc, argv, optind, err);
}
