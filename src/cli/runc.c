/*
 * lbbox-runc: `RUNTIME [global flags] VERB [flags] ID`, as podman, conmon and containerd's runc
 * shim call runc. The same program as lbbox, entered by that name (a link installed beside it)
 * or as `lbbox runc VERB ...`; the container's state lives under --root, apart from lbbox's.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "runc.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/util.h"

#define RUNC_DEFAULT_ROOT "/run/lbbox-runc"

static void log_line(const struct runc_globals *g, const char *text)
{
	FILE *f = g->log ? fopen(g->log, "ae") : NULL;
	if (!f)
		return;
	char ts[64];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (g->log_json) {
		_cleanup_json_ json_t *j =
		    json_pack("{s:s, s:s, s:s}", "level", "error", "msg", text, "time", ts);
		_cleanup_free_ char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		if (s)
			fprintf(f, "%s\n", s);
	} else {
		fprintf(f, "time=\"%s\" level=error msg=\"%s\"\n", ts, text);
	}
	fclose(f);
}

int runc_fail(const struct runc_globals *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *text = lb_vformat_line(fmt, ap);
	va_end(ap);
	fprintf(stderr, "lbbox-runc: %s\n", text ? text : "out of memory");
	if (text)
		log_line(g, text);
	return 1;
}

int runc_fail_err(const struct runc_globals *g, struct lb_err **err)
{
	int r = runc_fail(g, "%s", *err ? (*err)->msg : "failed");
	lb_err_free(err);
	return r;
}

int runc_open_root(struct runc_globals *g)
{
	struct lb_err *err = NULL;
	if (lb_oci_root_init(&g->oci, g->root, &err) < 0)
		return runc_fail_err(g, &err);
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: lbbox-runc [--root DIR] [--log FILE] [--log-format text|json] COMMAND ...\n"
	      "\n"
	      "An OCI runtime (runc's command line) on lbbox's sandbox engine.\n"
	      "\n"
	      "commands:\n"
	      "  create [-b BUNDLE] [--pid-file F] [--console-socket S] [--preserve-fds N] ID\n"
	      "  start ID | state ID | kill [-a] ID [SIGNAL] | delete [-f] ID\n"
	      "  run [-b BUNDLE] [-d] [--pid-file F] ID   create + start (+ wait, delete)\n"
	      "  exec [-p process.json | CMD...] [-d] [-t] [--pid-file F] [--cwd D] [-e K=V]\n"
	      "       [-u UID[:GID]] [--cap CAP]... [--preserve-fds N] ID\n"
	      "  list [-f table|json] [-q] | ps [-f table|json] ID | features | spec [-b BUNDLE]\n"
	      "  pause ID | resume ID\n"
	      "  update [-r RESOURCES.json|-] [--memory N] [--memory-swap N]\n"
	      "         [--memory-reservation N] [--pids-limit N] [--cpu-quota N]\n"
	      "         [--cpu-period N] [--cpu-share N] ID   new limits for a container\n"
	      "\n"
	      "global options:\n"
	      "  --root DIR   container state (default " RUNC_DEFAULT_ROOT ")\n"
	      "  --log FILE, --log-format text|json   also write errors there\n"
	      "  --systemd-cgroup is refused: lbbox manages cgroupfs itself\n",
	      f);
}

static int features(void)
{
	_cleanup_json_ json_t *j = lb_oci_features();
	_cleanup_free_ char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	if (!s)
		return 1;
	puts(s);
	return 0;
}

static int refuse_verb(const struct runc_globals *g, const char *verb)
{
	return runc_fail(g, "'%s' is not supported by lbbox-runc", verb);
}

static int dispatch(struct runc_globals *g, int argc, char **argv)
{
	const char *verb = argv[0];
	static const struct {
		const char *name;
		int (*fn)(struct runc_globals *, int, char **);
	} verbs[] = {{"start", runc_start},   {"state", runc_state},  {"kill", runc_kill},
		     {"delete", runc_delete}, {"list", runc_list},    {"ps", runc_ps},
		     {"exec", runc_exec},     {"spec", runc_spec},    {"pause", runc_pause},
		     {"resume", runc_pause},  {"update", runc_update}};
	if (!strcmp(verb, "features"))
		return features();
	if (!strcmp(verb, "create") || !strcmp(verb, "run")) {
		int r = runc_open_root(g);
		return r ? r : runc_create(g, argc, argv, !strcmp(verb, "run"));
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(verb, verbs[i].name)) {
			int r = strcmp(verb, "spec") ? runc_open_root(g) : 0;
			return r ? r : verbs[i].fn(g, argc, argv);
		}
	static const char *const refused[] = {"checkpoint", "restore", "events", "ps-all"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (!strcmp(verb, refused[i]))
			return refuse_verb(g, verb);
	return runc_fail(g, "unknown command '%s'", verb);
}

int cli_runc(int argc, char **argv)
{
	enum { O_LOG = 256, O_LOGFMT, O_ROOT, O_SYSTEMD, O_DEBUG, O_CRIU, O_ROOTLESS };
	static const struct option opts[] = {
	    {"root", required_argument, NULL, O_ROOT},
	    {"log", required_argument, NULL, O_LOG},
	    {"log-format", required_argument, NULL, O_LOGFMT},
	    {"systemd-cgroup", no_argument, NULL, O_SYSTEMD},
	    {"debug", no_argument, NULL, O_DEBUG},
	    {"criu", required_argument, NULL, O_CRIU},
	    {"rootless", required_argument, NULL, O_ROOTLESS},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'v'},
	    {0},
	};
	struct runc_globals g = {.root = getenv("LBBOX_RUNC_ROOT")};
	int c;
	bool systemd = false;
	if (!g.root || !*g.root)
		g.root = RUNC_DEFAULT_ROOT;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
		switch (c) {
		case O_ROOT:
			g.root = optarg;
			break;
		case O_LOG:
			g.log = optarg;
			break;
		case O_LOGFMT:
			if (strcmp(optarg, "json") && strcmp(optarg, "text"))
				return runc_fail(&g, "--log-format must be text or json");
			g.log_json = !strcmp(optarg, "json");
			break;
		case O_SYSTEMD:
			systemd = true;
			break;
		case O_DEBUG:
			g.debug = true;
			break;
		case O_CRIU:
			break;
		case O_ROOTLESS:
			if (!strcmp(optarg, "true"))
				return runc_fail(&g, "--rootless true is not supported");
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
			printf("lbbox-runc version %s\nspec: %s\n", cli_version_string(),
			       LB_OCI_VERSION);
			return 0;
		default:
			return runc_fail(&g, "unknown or incomplete global option '%s'",
					 argv[optind - 1]);
		}
	}
	if (systemd)
		return runc_fail(&g, access("/run/systemd/system", F_OK) == 0
					 ? "--systemd-cgroup is not supported: use cgroupfs"
					 : "--systemd-cgroup: this host does not run systemd; use "
					   "cgroupfs");
	if (optind >= argc) {
		usage(stderr);
		return 1;
	}
	return dispatch(&g, argc - optind, argv + optind);
}
