/* lbbox: global options (--root, --runroot, as podman names them) and verb dispatch. */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lbbox/cleanup.h"
#include "lbbox/util.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	/* messages carry ids and paths from requests: one line, no terminal escapes */
	_cleanup_free_ char *text = n < 0 ? NULL : lb_escape_ctl(msg);
	fprintf(stderr, "lbbox: %s\n", text ? text : "out of memory");
	free(msg);
}

int cli_box_error(const struct lb_err *err)
{
	if (err->cls)
		cli_error("%s: %s", err->cls, err->msg);
	else
		cli_error("%s", err->msg);
	return LB_EXIT_SETUP;
}

static void usage(FILE *f)
{
	fputs(
	    "usage: lbbox [--root DIR] [--runroot DIR] COMMAND [OPTIONS]\n"
	    "\n"
	    "commands:\n"
	    "  run [OPTIONS] [--] CMD [ARG...]   run a command in a new sandbox\n"
	    "  session create|exec|ls|inspect|rm|gc   long-lived sandboxes (LangBot Box sessions)\n"
	    "  proc start|attach|ls|inspect|stop      managed processes in a session\n"
	    "  box -s --ws-control-port PORT      LangBot's Box runtime over stdio (as `lbp box -s`)\n"
	    "  serve --listen HOST:PORT          the same runtime over WebSocket (ws://HOST:PORT/rpc/ws)\n"
	    "  network ls|inspect|prune          the networks of --network on\n"
	    "  info                              what this host really gives a sandbox (JSON)\n"
	    "  pull [--insecure-registry HOST] REF   pull an image from a registry\n"
	    "  load -i FILE | --oci-dir DIR[:TAG] [--name NAME]   import a docker-save/OCI archive or layout\n"
	    "  images | inspect REF | tag SRC DST | rmi REF | image prune   the image store\n"
	    "\n"
	    "global options:\n"
	    "  --root DIR      images and caches (default /var/lib/lbbox, env LBBOX_ROOT;\n"
	    "                  without root ~/.local/share/lbbox)\n"
	    "  --runroot DIR   runtime state (default /run/lbbox, env LBBOX_RUNROOT;\n"
	    "                  without root $XDG_RUNTIME_DIR/lbbox or /tmp/lbbox-run-UID)\n"
	    "  -h, --help      this help\n",
	    f);
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return v && *v ? v : def;
}

/*
 * Without root, podman's rootless places: the store under $XDG_DATA_HOME (~/.local/share), the
 * runtime state under $XDG_RUNTIME_DIR, or a per-user directory in /tmp that must be the user's.
 */
static void rootless_defaults(struct lb_paths *p)
{
	static char root[4096], runroot[4096];
	const char *data = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	const char *run = getenv("XDG_RUNTIME_DIR");
	const struct passwd *pw = home && *home ? NULL : getpwuid(geteuid());
	if (pw && pw->pw_dir && *pw->pw_dir)
		home = pw->pw_dir;
	if (run && *run)
		snprintf(runroot, sizeof(runroot), "%s/lbbox", run);
	else
		snprintf(runroot, sizeof(runroot), "/tmp/lbbox-run-%u", (unsigned)geteuid());
	if (data && *data)
		snprintf(root, sizeof(root), "%s/lbbox", data);
	else if (home && *home)
		snprintf(root, sizeof(root), "%s/.local/share/lbbox", home);
	else /* no home at all: beside the runtime state, whose directory is checked to be ours */
		snprintf(root, sizeof(root), "%s/store", runroot);
	p->root = root;
	p->runroot = runroot;
}

/* A runtime directory in /tmp could have been made by someone else first: it must be ours. */
static int check_tmp_runroot(const char *runroot)
{
	struct stat st;
	if (strncmp(runroot, "/tmp/lbbox-run-", 15) != 0)
		return 0;
	if ((mkdir(runroot, 0700) < 0 && errno != EEXIST) || lstat(runroot, &st) < 0) {
		cli_error("runtime directory %s: %s", runroot, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		cli_error("runtime directory %s is not a private directory of this user; set "
			  "XDG_RUNTIME_DIR or --runroot",
			  runroot);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"root", required_argument, NULL, 'r'},
	    {"runroot", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct cli_globals g = {
	    .argv = argv,
	    .paths = {.root = env_or("LBBOX_ROOT", "/var/lib/lbbox"),
		      .runroot = env_or("LBBOX_RUNROOT", "/run/lbbox")},
	};
	int c;

	if (geteuid() != 0) {
		struct lb_paths rl;
		rootless_defaults(&rl);
		g.paths.root = env_or("LBBOX_ROOT", rl.root);
		g.paths.runroot = env_or("LBBOX_RUNROOT", rl.runroot);
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
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
		default:
			cli_error("unknown option '%s' (see lbbox --help)", argv[optind - 1]);
			return LB_EXIT_SETUP;
		}
	}
	if (geteuid() != 0 && check_tmp_runroot(g.paths.runroot) < 0)
		return LB_EXIT_SETUP;
	if (optind >= argc) {
		usage(stderr);
		return LB_EXIT_SETUP;
	}
	/* before any verb touches them, whichever runs first on this host */
	struct lb_err *err = NULL;
	if (lb_paths_secure(&g.paths, &err) < 0) {
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
	static const char *const image_verbs[] = {"load", "pull", "images", "inspect",
						  "tag",  "rmi",  "image"};
	for (size_t i = 0; i < sizeof(image_verbs) / sizeof(image_verbs[0]); i++)
		if (strcmp(verb, image_verbs[i]) == 0)
			return cli_images(&g, argc - optind, argv + optind);
	cli_error("unknown command '%s' (see lbbox --help)", verb);
	return LB_EXIT_SETUP;
}
