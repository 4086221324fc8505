/* state.json: what a later lbbox process needs to find, inspect or clean up a sandbox. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lbbox/cleanup.h"
#include "lbbox/util.h"
#include "sandbox/engine.h"

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();
	for (; v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

int lb_state_write(const char *statedir, const char *id, pid_t pid, const struct lb_spec *spec,
		   const struct lb_cgroup *cg, struct lb_err **err)
{
	char path[4096];
	json_t *st = json_object();
	if (!st)
		return lb_err_set(err, ENOMEM, "state");
	json_object_set_new(st, "id", json_string(id));
	json_object_set_new(st, "pid", json_integer(pid));
	json_object_set_new(st, "created", json_integer((json_int_t)time(NULL)));
	json_object_set_new(st, "rootfs", spec->rootfs ? json_string(spec->rootfs) : json_string("host"));
	json_object_set_new(st, "cgroup_version", json_integer(lb_cgroup_version(cg)));
	json_object_set_new(st, "cgroups", strv_json((char *const *)lb_cgroup_paths(cg)));
	json_object_set_new(st, "argv", strv_json(spec->argv));
	_cleanup_free_ char *text = json_dumps(st, JSON_COMPACT);
	json_decref(st);
	if (!text)
		return lb_err_set(err, ENOMEM, "state");
	snprintf(path, sizeof(path), "%s/state.json", statedir);
	return lb_write_file_atomic(path, text, strlen(text), 0600, err);
}
