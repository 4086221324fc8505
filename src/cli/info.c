/* lbbox info: what this host really gives a sandbox (one JSON object). */
#include "cli.h"
#include "lbbox/box/box.h"
#include "lbbox/sandbox/features.h"

int cli_info(struct cli_globals *g, int argc, char **argv)
{
	json_t *f = lb_host_features();
	json_object_set_new(f, "box_ready", json_boolean(lb_box_host_ready(f)));
	cli_print_json(f);
	return 0;
}
