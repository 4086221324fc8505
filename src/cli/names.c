/*
 * The names a user gives new objects on the command line (session create, proc start --id).
 * Only creation is checked: lookups take any existing id, such as the Box runtime's
 * "ws-<hex>-g<N>-<id>", so nothing made elsewhere becomes unreachable from the CLI.
 */
#include <string.h>

#include "cli.h"
#include "lbbox/box/spec.h"

/* Room for the Box runtime's own prefix ("ws-" 24 hex "-g" N "-") and a long logical id, well
 * under a file name's 255 bytes. */
#define CLI_NAME_MAX 200

/* The message names the bad name as given: cli_error escapes it when it is printed. */
int cli_check_name(const char *what, const char *name, struct lb_err **err)
{
	size_t len = strlen(name);
	if (!len)
		return lb_err_set(err, 0, "invalid %s name '': a name cannot be empty", what);
	if (name[0] == '-') /* an option where the name goes is a mistake, not a name */
		return lb_err_set(err, 0, "invalid %s name '%s': a name cannot start with '-'",
				  what, name);
	if (strchr(name, '/'))
		return lb_err_set(err, 0, "invalid %s name '%s': a name cannot contain '/'", what,
				  name);
	if (lb_box_check_id(name, what, NULL) < 0) /* the runtime's own rule for ids */
		return lb_err_set(err, 0,
				  "invalid %s name '%s': a name cannot contain control characters",
				  what, name);
	if (len > CLI_NAME_MAX)
		return lb_err_set(err, 0, "invalid %s name '%.20s...': longer than %d bytes", what,
				  name, CLI_NAME_MAX);
	return 0;
}
