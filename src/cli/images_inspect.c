/*
 * lbbox inspect REF...: a JSON array, one object per image in podman's field names (Id, Digest,
 * RepoTags, RepoDigests, Created, Size, Architecture, Os, Config, RootFS, Labels), so scripts
 * written against `podman image inspect` read it unchanged.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "images_cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/image/ref.h"

/* key, value, ..., NULL -> {"key": "value", ...} */
static json_t *json_from_map(char *const *kv)
{
	json_t *o = json_object();
	for (; o && kv && kv[0] && kv[1]; kv += 2)
		json_object_set_new(o, kv[0], json_string(kv[1]));
	return o;
}

/* The image's names, and NAME-repository@digest for each (podman's RepoDigests). */
static int names_json(struct lb_store *s, const char *digest, json_t **tags, json_t **digests,
		      struct lb_err **err)
{
	struct lb_store_image *v = NULL;
	size_t n = 0;
	if (lb_store_list(s, &v, &n, err) < 0)
		return -1;
	*tags = json_array();
	*digests = json_array();
	for (size_t i = 0; i < n; i++) {
		const char *tag = NULL;
		size_t tag_len = 0;
		if (!v[i].name || strcmp(v[i].digest, digest) != 0)
			continue;
		json_array_append_new(*tags, json_string(v[i].name));
		size_t rn = cli_image_repo(v[i].name, &tag, &tag_len);
		char *rd = NULL;
		if (asprintf(&rd, "%.*s@%s", (int)rn, v[i].name, digest) >= 0)
			json_array_append_new(*digests, json_string(rd));
		free(rd);
	}
	lb_store_images_free(v, n);
	return 0;
}

/* podman's null for what the config leaves out (lb_json_from_strv gives []). */
static json_t *strv_json(char *const *v)
{
	return v ? lb_json_from_strv(v) : json_null();
}

static json_t *config_json(const struct lb_image_config *c)
{
	return json_pack("{s:o, s:o, s:o, s:s?, s:s?, s:o}", "Env", strv_json(c->env), "Entrypoint",
			 strv_json(c->entrypoint), "Cmd", strv_json(c->cmd), "WorkingDir",
			 c->working_dir, "User", c->user, "Labels",
			 c->labels ? json_from_map(c->labels) : json_null());
}

static json_t *image_json(const struct cli_image *img, json_t *tags, json_t *digests)
{
	const struct lb_image_config *c = img->cfg;
	json_t *rootfs =
	    json_pack("{s:s, s:o}", "Type", "layers", "Layers", lb_json_from_strv(c->diff_ids));
	return json_pack("{s:s, s:s, s:o, s:o, s:s?, s:o, s:s?, s:s?, s:s?, s:o, s:o, s:o, s:s?}",
			 "Id", img->id + strlen("sha256:"), "Digest", img->digest, "RepoTags", tags,
			 "RepoDigests", digests, "Created", c->created, "Size",
			 img->size_known ? json_integer((json_int_t)img->size) : json_null(),
			 "Architecture", c->architecture, "Variant", c->variant, "Os", c->os,
			 "Config", config_json(c), "RootFS", rootfs, "Labels",
			 c->labels ? json_from_map(c->labels) : json_null(), "ManifestType",
			 img->m->media_type);
}

static int inspect_one(struct cli_globals *g, struct lb_store *s, const char *arg, json_t *out,
		       struct lb_err **err)
{
	_cleanup_free_ char *name = NULL;
	struct lb_store_image e = {0};
	struct cli_image img = {0};
	json_t *tags = NULL, *digests = NULL;
	if (lb_image_name(arg, &name, err) < 0 || lb_store_resolve(s, name, &e, err) < 0)
		return -1;
	int r = cli_image_read(s, e.digest, &img, err);
	if (r == 0)
		r = cli_image_sizes(g, s, &img, 1, err);
	if (r == 0)
		r = names_json(s, e.digest, &tags, &digests, err);
	json_t *j = r == 0 ? image_json(&img, tags, digests) : NULL;
	if (r == 0 && (!j || json_array_append_new(out, j) < 0))
		r = lb_err_set(err, ENOMEM, "inspect %s", arg);
	cli_image_clear(&img);
	lb_store_image_clear(&e);
	return r;
}

static const char inspect_usage[] =
    "usage: lbbox inspect REF...   (also: lbbox image inspect)\n"
    "\n"
    "Prints a JSON array with one object per image, in podman's field names: Id, Digest,\n"
    "RepoTags, RepoDigests, Created, Size, Architecture, Os, Config {Env, Entrypoint, Cmd,\n"
    "WorkingDir, User, Labels}, RootFS {Type, Layers}, Labels. REF is a name (a short name is\n"
    "looked up as localhost/NAME, then docker.io's), NAME@sha256:DIGEST, or an image ID prefix.\n";

int cli_images_inspect(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	struct lb_store *s = NULL;
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(inspect_usage, stdout);
		return 0;
	}
	if (argc < 2)
		return lb_err_set(err, 0,
				  "inspect: give an image reference (see lbbox inspect --help)");
	if (lb_store_open_existing(g->paths.root, &s, err) < 0)
		return -1;
	_cleanup_json_ json_t *out = json_array();
	int r = out ? 0 : lb_err_set(err, ENOMEM, "inspect");
	for (int i = 1; r == 0 && i < argc; i++)
		r = inspect_one(g, s, argv[i], out, err);
	lb_store_close(s);
	_cleanup_free_ char *text = r == 0 ? json_dumps(out, JSON_INDENT(4)) : NULL;
	if (r == 0 && !text)
		return lb_err_set(err, ENOMEM, "inspect");
	if (r == 0)
		printf("%s\n", text);
	return r;
}
