/* lbbox load | images | inspect | tag | rmi | image prune: the image store from the CLI. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/image/ref.h"
#include "lbbox/image/snapshot.h"
#include "lbbox/image/store.h"
#include "lbbox/base/util.h"

/* load and pull run in lbbox-image, which links libarchive and libcurl. */
static int cmd_load(struct cli_globals *g, int argc, char **argv)
{
	const char *args[32] = {argv[0]};
	if (argc > 30) {
		cli_error("load: too many arguments");
		return LB_EXIT_SETUP;
	}
	for (int i = 1; i < argc; i++)
		args[i] = argv[i];
	_cleanup_err_ struct lb_err *err = NULL;
	int code = lb_image_tool(g->paths.root, args, false, &err);
	if (code < 0) {
		cli_error("%s", err->msg);
		return LB_EXIT_SETUP;
	}
	return code;
}

static int cmd_images(struct cli_globals *g, struct lb_err **err)
{
	struct lb_store *s = NULL;
	struct lb_store_image *v = NULL;
	size_t n = 0;
	if (lb_store_open_existing(g->paths.root, &s, err) < 0) {
		lb_err_free(err); /* no store yet: an empty list */
		printf("%-50s %-19s %s\n", "NAME", "DIGEST", "SIZE");
		return 0;
	}
	int r = lb_store_list(s, &v, &n, err);
	if (r == 0)
		printf("%-50s %-19s %s\n", "NAME", "DIGEST", "SIZE");
	for (size_t i = 0; r == 0 && i < n; i++)
		printf("%-50s %.19s %llu\n", v[i].name ? v[i].name : "<none>", v[i].digest,
		       (unsigned long long)v[i].size);
	lb_store_images_free(v, n);
	lb_store_close(s);
	return r;
}

static int cmd_inspect(struct cli_globals *g, const char *arg, struct lb_err **err)
{
	_cleanup_free_ char *name = NULL;
	struct lb_store *s = NULL;
	struct lb_manifest *m = NULL;
	struct lb_image_config *c = NULL;
	struct lb_store_image img = {0};
	if (lb_image_name(arg, &name, err) < 0 ||
	    lb_store_open_existing(g->paths.root, &s, err) < 0)
		return -1;
	int r = lb_store_resolve(s, name, &img, err);
	if (r == 0)
		r = lb_store_image_manifest(s, name, NULL, &m, &c, err);
	if (r == 0) {
		json_t *j = json_pack(
		    "{s:s, s:s, s:s?, s:s?, s:o, s:o, s:o, s:s?, s:s?, s:I}", "name", name,
		    "digest", img.digest, "os", c->os, "architecture", c->architecture, "env",
		    lb_json_from_strv(c->env), "entrypoint", lb_json_from_strv(c->entrypoint),
		    "cmd", lb_json_from_strv(c->cmd), "working_dir", c->working_dir, "user",
		    c->user, "layers", (json_int_t)m->n_layers);
		char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
		if (text)
			printf("%s\n", text);
		free(text);
		json_decref(j);
	}
	lb_store_image_clear(&img);
	lb_manifest_free(m);
	lb_image_config_free(c);
	lb_store_close(s);
	return r;
}

static int cmd_tag_rmi(struct cli_globals *g, const char *src, const char *dst, struct lb_err **err)
{
	_cleanup_free_ char *a = NULL, *b = NULL;
	struct lb_store *s = NULL;
	if (lb_image_name(src, &a, err) < 0 || (dst && lb_image_name(dst, &b, err) < 0) ||
	    lb_store_open_existing(g->paths.root, &s, err) < 0)
		return -1;
	int r = dst ? lb_store_tag(s, a, b, err) : lb_store_untag(s, a, err);
	if (r == 0 && !dst)
		printf("Untagged: %s\n", a);
	lb_store_close(s);
	return r;
}

static int cmd_prune(struct cli_globals *g, struct lb_err **err)
{
	struct lb_store *s = NULL;
	struct lb_store_prune_stats st = {0};
	if (lb_store_open_existing(g->paths.root, &s, err) < 0)
		return -1;
	size_t snaps = 0;
	int r = lb_store_prune(s, &st, err);
	if (r == 0)
		r = lb_snapshot_prune(s, g->paths.runroot, &snaps, err);
	if (r == 0)
		printf("Removed %zu blobs, %llu bytes, %zu unpacked layers\n", st.blobs,
		       (unsigned long long)st.bytes, snaps);
	lb_store_close(s);
	return r;
}

static int dispatch(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	const char *verb = argv[0];
	if (!strcmp(verb, "images") && argc == 1)
		return cmd_images(g, err);
	if (!strcmp(verb, "inspect") && argc == 2)
		return cmd_inspect(g, argv[1], err);
	if (!strcmp(verb, "tag") && argc == 3)
		return cmd_tag_rmi(g, argv[1], argv[2], err);
	if (!strcmp(verb, "rmi") && argc == 2)
		return cmd_tag_rmi(g, argv[1], NULL, err);
	if (!strcmp(verb, "image") && argc == 2 && !strcmp(argv[1], "prune"))
		return cmd_prune(g, err);
	return lb_err_set(err, 0, "%s: wrong arguments (see lbbox --help)", verb);
}

int cli_images(struct cli_globals *g, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	if (!strcmp(argv[0], "load") || !strcmp(argv[0], "pull"))
		return cmd_load(g, argc, argv);
	if (dispatch(g, argc, argv, &err) < 0) {
		cli_error("%s", err->msg);
		return LB_EXIT_SETUP;
	}
	return 0;
}
