/*
 * `lbbox box` and `lbbox serve` in the lean lbbox binary: the Box runtime (its HTTP side links
 * libwebsockets and OpenSSL, ~5 MB) is a program of its own, lbbox-server, beside lbbox, so
 * every `lbbox run` and `session exec` stays small and quick to start. The same argv goes on.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

static int launch(struct cli_globals *g)
{
	_cleanup_err_ struct lb_err *err = NULL;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	if (lb_self_dir(dir, sizeof(dir), &err) < 0)
		return cli_error("%s", err->msg), LB_EXIT_SETUP;
	snprintf(path, sizeof(path), "%s/lbbox-server", dir);
	g->argv[0] = path;
	execv(path, g->argv);
	return cli_error("cannot run the Box runtime %s (%s): lbbox-server must be installed "
			 "beside lbbox",
			 path, strerror(errno)),
	       LB_EXIT_SETUP;
}

int cli_box(struct cli_globals *g, int argc, char **argv)
{
	(void)argc, (void)argv;
	return launch(g);
}

int cli_serve(struct cli_globals *g, int argc, char **argv)
{
	(void)argc, (void)argv;
	return launch(g);
}
