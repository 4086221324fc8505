/* lbbox network ls | inspect | prune: the networks that `lbbox run --network on` creates. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/net.h"

static const char network_usage[] =
    "usage: lbbox network ls [--json] | inspect [--json] | prune\n"
    "  ls        the networks of this runroot, with the number of sandboxes using them\n"
    "  inspect   the network's leases, allowed hosts and counters of dropped traffic (JSON)\n"
    "  prune     remove every network no sandbox uses: bridge, nftables table, state\n"
    "environment: LBBOX_NET_BRIDGE (default lbbox0), LBBOX_NET_SUBNET (default 10.89.0.0/16),\n"
    "  LBBOX_NFT (the nft binary, default /usr/sbin/nft)\n";

static void print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2));
	if (s)
		printf("%s\n", s);
	free(s);
}

static void print_ls(json_t *list)
{
	size_t i;
	json_t *n;
	printf("%-16s %-20s %-16s %s\n", "BRIDGE", "SUBNET", "GATEWAY", "SANDBOXES");
	json_array_foreach(list, i, n)
	{
		printf("%-16s %-20s %-16s %lld\n", json_string_value(json_object_get(n, "bridge")),
		       json_string_value(json_object_get(n, "subnet")),
		       json_string_value(json_object_get(n, "gateway")),
		       (long long)json_integer_value(json_object_get(n, "sandboxes")));
	}
}

static int network_verb(struct cli_globals *g, const char *verb, bool json, struct lb_err **err)
{
	struct lb_net_opts opts = {0};
	json_t *out = NULL;
	if (lb_net_opts_env(&opts, err) < 0)
		return -1;
	if (strcmp(verb, "ls") == 0) {
		if (lb_net_list(&g->paths, &out, err) < 0)
			return -1;
		json ? print_json(out) : print_ls(out);
	} else if (strcmp(verb, "inspect") == 0) {
		if (lb_net_inspect(&g->paths, &opts, &out, err) < 0)
			return -1;
		print_json(out);
	} else if (strcmp(verb, "prune") == 0) {
		if (lb_net_prune(&g->paths, &opts, &out, err) < 0)
			return -1;
		size_t i;
		json_t *v;
		json_array_foreach(out, i, v)
		{
			printf("%s\n", json_string_value(v));
		}
	} else {
		return lb_err_set(err, 0, "unknown network command '%s' (ls, inspect, prune)",
				  verb);
	}
	json_decref(out);
	return 0;
}

int cli_network(struct cli_globals *g, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	bool json = false;
	/* -h anywhere (`network ls --help`) is help and nothing else */
	if (argc < 2 || cli_help_asked(argc, argv, NULL)) {
		fputs(network_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 125 : 0;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") != 0) {
			cli_error("unknown option '%s' (see lbbox network --help)", argv[i]);
			return 125;
		}
		json = true;
	}
	if (network_verb(g, argv[1], json, &err) < 0) {
		cli_error("%s", err->msg);
		return 125;
	}
	return 0;
}
