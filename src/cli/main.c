/* lbbox: global options (--root, --runroot, as podman names them) and verb dispatch. */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "runc.h"
#include "runs_cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

static void usage(FILE *f)
{
	fputs(
	    "usage: lbbox [--root DIR] [--runroot DIR] COMMAND [OPTIONS]\n"
	    "\n"
	    "commands:\n"
	    "  run [OPTIONS] IMAGE [CMD...]      run a command in a new sandbox (run --help)\n"
	    "  run [OPTIONS] -- CMD [ARG...]     the same on the built-in image 'host'\n"
	    "  session create|exec|ls|inspect|rm|gc   long-lived sandboxes (LangBot Box sessions)\n"
	    "  proc start|attach|ls|inspect|stop      managed processes in a session\n"
	    "  ps [-a] [-q] [--json]             the detached runs (run -d, run --name)\n"
	    "  logs [-f] [--tail N] NAME         a run's output history\n"
	    "  stop [-t SECONDS] NAME... | kill [-s SIGNAL] NAME...   stop or signal a run\n"
	    "  rm [-f] NAME...                   remove runs (their session and state)\n"
	    "  exec [-i] NAME CMD [ARG...]       run a command in a running run\n"
	    "  box -s --ws-control-port PORT      LangBot's Box runtime over stdio (as `lbp box -s`)\n"
	    "  serve --listen HOST:PORT          the same runtime over WebSocket (ws://HOST:PORT/rpc/ws)\n"
	    "  network ls|inspect|prune          the networks of --network on\n"
	    "  info [--json]                     what this host really gives a sandbox\n"
	    "  version                           lbbox's version and commit, libseccomp, kernel\n"
	    "  runc COMMAND ...                  the OCI runtime (as lbbox-runc; runc --help)\n"
	    "  pull [--insecure-registry HOST] REF   pull an image from a registry\n"
	    "  load [-i FILE|-] | --oci-dir DIR[:TAG] [--name NAME]   import a docker-save/OCI\n"
	    "                                    archive (stdin when not a terminal) or layout\n"
	    "  images [-q] [--digests] [--json] | inspect REF... | tag SRC DST... | rmi [-f] REF...\n"
	    "  image ls|rm|inspect|tag|prune|load|pull   the image store, as podman names it\n"
	    "\n"
	    "global options:\n"
	    "  --root DIR      images and caches (default /var/lib/lbbox, env LBBOX_ROOT;\n"
	    "                  without root ~/.local/share/lbbox)\n"
	    "  --runroot DIR   runtime state (default /run/lbbox, env LBBOX_RUNROOT;\n"
	    "                  without root $XDG_RUNTIME_DIR/lbbox or /tmp/lbbox-run-UID)\n"
	    "  -h, --help      this help (COMMAND --help: the command's)\n"
	    "  --version       as lbbox version\n",
	    f);
}

/*
 * The OCI runtime runs from a sealed copy of itself, whatever the verb (CVE-2019-5736): a
 * container's pid 1 is this process forked, and an exec runs lbbox until its execve, so an
 * image's "#!/proc/self/exe" entrypoint would otherwise reach the host binary on disk.
 */
static int runc_sealed(int argc, char **argv, char **all)
{
	struct lb_err *err = NULL;
	if (lb_reexec_sealed(all, &err) < 0) {
		cli_error("lbbox-runc: %s", err->msg);
		lb_err_free(&err);
		return 1;
	}
	return cli_runc(argc, argv);
}

/*
 * Whether a verb may put a process in a sandbox, which it then must do from a sealed lbbox
 * (src/sandbox/sealed.c), whatever the root's mode: an image's own /bin/sh can be
 * "#!/proc/self/exe". Listed are the ones that never do, so they pay no re-execution; anything
 * else (run, exec, session create|exec, proc start, a verb added later) is sealed. box and serve
 * exec lbbox-server, which seals itself.
 */
static bool listed(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool enters_sandbox(int argc, char **argv)
{
	static const char *const outside[] = {"ps",  "logs",  "stop", "kill",	"rm",	   "info",
					      "box", "serve", "load", "images", "inspect", "tag",
					      "rmi", "image", "save", "pull"};
	static const char *const session_outside[] = {"ls", "inspect", "rm", "gc"};
	static const char *const proc_outside[] = {"attach", "ls", "rm", "inspect", "stop", "logs"};
	/* inspect runs nft inside a rootless sandbox's user and network namespaces */
	static const char *const network_outside[] = {"ls", "prune"};
	const char *sub = argc > 1 ? argv[1] : NULL;
	if (listed(argv[0], outside, COUNT(outside)))
		return false;
	if (!sub || cli_is_help(sub)) /* a usage or a help */
		return false;
	if (strcmp(argv[0], "session") == 0)
		return !listed(sub, session_outside, COUNT(session_outside));
	if (strcmp(argv[0], "proc") == 0)
		return !listed(sub, proc_outside, COUNT(proc_outside));
	if (strcmp(argv[0], "network") == 0)
		return !listed(sub, network_outside, COUNT(network_outside));
	return true;
}

int main(int argc, char **argv)
{
	/* an ignored SIGCHLD is inherited: children would be reaped by the kernel, and lbbox's
	 * waits (for its sandboxes' pid 1s, their commands) would never see them end */
	signal(SIGCHLD, SIG_DFL);
	static const struct option opts[] = {
	    {"root", required_argument, NULL, 'r'},
	    {"runroot", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	static struct lb_default_paths defaults;
	struct cli_globals g = {.argv = argv};
	struct lb_err *err = NULL;
	int c;

	/* lbbox-runc: the OCI runtime, runc's command line (a link to this program) */
	const char *self = strrchr(argv[0], '/');
	if (strcmp(self ? self + 1 : argv[0], "lbbox-runc") == 0)
		return runc_sealed(argc, argv, argv);
	lb_paths_defaults(&defaults);
	g.paths = (struct lb_paths){.root = defaults.root, .runroot = defaults.runroot};
	opterr = 0;
	for (int before = 1; (c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1;
	     before = optind) {
		switch (c) {
		case 'r':
			g.paths.root = optarg;
			break;
		case 'R':
			g.paths.runroot = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			return cli_version();
		default:
			cli_opt_error(c, argv[before], &err);
			cli_error("%s (see lbbox --help)", err->msg);
			lb_err_free(&err);
			return LB_EXIT_SETUP;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return LB_EXIT_SETUP;
	}
	if (strcmp(argv[optind], "version") == 0) /* touches no directory */
		return cli_version();
	if (strcmp(argv[optind], "runc") == 0) /* its own --root, apart from lbbox's */
		return runc_sealed(argc - optind, argv + optind, argv);
	/* before any verb touches them, whichever runs first on this host */
	if (lb_paths_check_runroot(g.paths.runroot, &err) < 0 ||
	    lb_paths_secure(&g.paths, &err) < 0) {
		cli_error("%s", err->msg);
		lb_err_free(&err);
		return LB_EXIT_SETUP;
	}
	if (enters_sandbox(argc - optind, argv + optind) && lb_reexec_sealed(argv, &err) < 0) {
		cli_error("%s", err->msg);
		lb_err_free(&err);
		return LB_EXIT_SETUP;
	}
	const char *verb = argv[optind];
	if (strcmp(verb, "run") == 0)
		return cli_run(&g, argc - optind, argv + optind);
	if (strcmp(verb, "session") == 0)
		return cli_session(&g, argc - optind, argv + optind);
	if (strcmp(verb, "info") == 0)
		return cli_info(&g, argc - optind, argv + optind);
	if (strcmp(verb, "box") == 0)
		return cli_box(&g, argc - optind, argv + optind);
	if (strcmp(verb, "serve") == 0)
		return cli_serve(&g, argc - optind, argv + optind);
	if (strcmp(verb, "proc") == 0)
		return cli_proc(&g, argc - optind, argv + optind);
	if (strcmp(verb, "network") == 0)
		return cli_network(&g, argc - optind, argv + optind);
	if (strcmp(verb, "ps") == 0)
		return cli_ps(&g, argc - optind, argv + optind);
	static const char *const run_verbs[] = {"logs", "stop", "kill", "rm", "exec"};
	for (size_t i = 0; i < sizeof(run_verbs) / sizeof(run_verbs[0]); i++)
		if (strcmp(verb, run_verbs[i]) == 0)
			return cli_run_verb(&g, argc - optind, argv + optind);
	static const char *const image_verbs[] = {"load", "pull", "images", "inspect",
						  "tag",  "rmi",  "image",  "save"};
	for (size_t i = 0; i < sizeof(image_verbs) / sizeof(image_verbs[0]); i++)
		if (strcmp(verb, image_verbs[i]) == 0)
			return cli_images(&g, argc - optind, argv + optind);
	cli_error("unknown command '%s' (see lbbox --help)", verb);
	return LB_EXIT_SETUP;
}
