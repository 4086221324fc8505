/* lbbox command line: global options and one entry point per verb. */
#ifndef LBBOX_CLI_H
#define LBBOX_CLI_H

#include "lbbox/sandbox.h"

struct cli_globals {
	struct lb_paths paths;
};

/* Prints "lbbox: <msg>" on stderr: the one place lbbox's own messages are written. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cli_run(struct cli_globals *g, int argc, char **argv);
int cli_network(struct cli_globals *g, int argc, char **argv);

/* The network chosen by LBBOX_NET_BRIDGE, LBBOX_NET_SUBNET and LBBOX_NFT (network.c). */
struct lb_net_opts;
struct lb_err;
int cli_net_env(struct lb_net_opts *n, struct lb_err **err);

#endif
