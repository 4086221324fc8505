/* lbbox info [--json]: what this host really gives a sandbox, for a person (the default) or as
 * one JSON object (--json, the fields scripts and the Box runtime's health already read). */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/mountinfo.h"
#include "lbbox/box/box.h"
#include "lbbox/sandbox/features.h"

/* How the host mounts cgroups, which is not the version lbbox uses: a hybrid host has both and
 * lbbox takes v1 there when the controllers are not on the unified hierarchy. */
static const char *cgroup_mode(void)
{
	struct lb_mountinfo mi = {0};
	bool v1 = false, v2 = false;
	if (lb_mountinfo_read(&mi, NULL) < 0)
		return "unknown";
	for (size_t i = 0; i < mi.n; i++) {
		v1 |= !strcmp(mi.v[i].fstype, "cgroup");
		v2 |= !strcmp(mi.v[i].fstype, "cgroup2");
	}
	lb_mountinfo_free(&mi);
	return v1 && v2 ? "hybrid" : v2 ? "v2" : v1 ? "v1" : "none";
}

static const char *yes(json_t *obj, const char *key)
{
	return json_is_true(json_object_get(obj, key)) ? "yes" : "no";
}

static void print_line(const char *key, const char *value)
{
	printf("%-12s ", key);
	cli_print_escaped(value, 0); /* paths come from options and the environment */
	putchar('\n');
}

static void print_human(const struct cli_globals *g, json_t *f)
{
	struct utsname u;
	json_t *cg = json_object_get(f, "cgroups"), *net = json_object_get(f, "network");
	long long v = (long long)json_integer_value(json_object_get(cg, "version"));
	print_line("store:", g->paths.root);
	print_line("state:", g->paths.runroot);
	print_line("kernel:", uname(&u) == 0 ? u.release : "unknown");
	printf("%-12s %s (lbbox uses ", "cgroups:", cgroup_mode());
	if (v)
		printf("v%lld: memory %s, pids %s, cpu %s)\n", v, yes(cg, "memory"),
		       yes(cg, "pids"), yes(cg, "cpu"));
	else
		printf("none: no limit can be enforced)\n");
	printf("%-12s %s\n", "rootless:", yes(f, "rootless"));
	printf("%-12s %s\n", "namespaces:", yes(f, "namespaces"));
	printf("%-12s %s\n", "seccomp:", yes(f, "seccomp"));
	printf("%-12s %s\n", "overlayfs:", yes(f, "overlay"));
	printf("%-12s off %s, on %s, host %s\n", "network:", yes(net, "off"), yes(net, "on"),
	       yes(net, "host"));
	printf("%-12s %s\n", "box ready:", yes(f, "box_ready")); /* LangBot's default limits hold */
}

int cli_info(struct cli_globals *g, int argc, char **argv)
{
	bool json = false;
	if (cli_help_asked(argc, argv, NULL))
		return cli_print_help("info", NULL);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") != 0) {
			cli_error("unknown option '%s' (see lbbox info --help)", argv[i]);
			return LB_EXIT_SETUP;
		}
		json = true;
	}
	json_t *f = lb_host_features();
	json_object_set_new(f, "box_ready", json_boolean(lb_box_host_ready(f)));
	if (json) {
		cli_print_json(f);
		return 0;
	}
	print_human(g, f);
	json_decref(f);
	return 0;
}
