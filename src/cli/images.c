/*
 * lbbox load | save | pull | images | inspect | tag | rmi | image SUBCOMMAND: the image store from
 * the CLI, with podman's verbs and aliases (image ls|list|rm|inspect|tag|prune|load|save|pull).
 * Listing, inspect and rmi live in images_list.c, images_inspect.c and images_rmi.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "images_cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/image/ref.h"
#include "lbbox/image/snapshot.h"

static const char load_usage[] =
    "usage: lbbox load [-q] [-i FILE|-] | --oci-dir DIR[:TAG] [--name NAME]   (also: lbbox image "
    "load)\n"
    "\n"
    "Imports a docker-save or OCI archive (tar, optionally gzip/zstd compressed) or an OCI layout\n"
    "directory. Without -i or --oci-dir the archive is read from stdin (lbbox load < image.tar),\n"
    "never from a terminal. An OCI image whose ref.name is only a tag (\"v2\") is named\n"
    "localhost/<file or directory name>:v2; --name NAME names it (a short NAME is localhost/NAME).\n"
    "Progress goes to stderr, a line per blob (rewritten in place on a terminal); -q: none.\n"
    "\n"
    "options:\n"
    "  -i, --input FILE|-            the archive (-: stdin)\n"
    "  --oci-dir DIR[:TAG]           an OCI layout directory (only the image(s) tagged TAG)\n"
    "  --name NAME                   store the image under NAME\n"
    "  -q, --quiet                   no progress, only the Loaded image lines\n";

static const char pull_usage[] =
    "usage: lbbox pull [-q] [--insecure-registry HOST]... REF   (also: lbbox image pull)\n"
    "\n"
    "Pulls an image from a registry into the store. Progress goes to stderr, as podman shows it:\n"
    "one line per blob rewritten in place on a terminal, a line per finished blob otherwise.\n"
    "\n"
    "options:\n"
    "  -q, --quiet                   no progress, only the result line\n"
    "  --insecure-registry HOST      talk plain HTTP to HOST[:PORT] (repeatable)\n";

static const char save_usage[] =
    "usage: lbbox save [-o FILE] [--format docker-archive|oci-archive] REF...   (also: lbbox image "
    "save)\n"
    "\n"
    "Writes the image(s) as one archive that lbbox load, podman load, docker load and skopeo read\n"
    "(docker-archive: layers uncompressed; oci-archive: an OCI layout, blobs as stored). An image\n"
    "given by name keeps that name; by image ID it is saved untagged. Without -o the archive goes\n"
    "to stdout, which must not be a terminal.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE             write FILE (complete or not at all) instead of stdout\n"
    "  --format docker-archive|oci-archive   the archive's layout (default docker-archive)\n";

static const char tag_usage[] =
    "usage: lbbox tag SRC DST...   (also: lbbox image tag)\n"
    "\n"
    "Gives the image SRC (a name, NAME@DIGEST or an image ID prefix) more names. A DST without a\n"
    "registry is local, as in podman: lbbox tag X mydemo names it localhost/mydemo:latest.\n";

static const char image_usage[] =
    "usage: lbbox image ls|list|inspect|tag|rm|prune|load|save|pull [ARGS]\n"
    "\n"
    "podman's `image` subcommands: ls = images, rm = rmi, the others as the top-level verbs;\n"
    "prune removes every blob no image uses and every unpacked layer no image or sandbox uses.\n";

static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

static bool has_output(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "-o", 2) || !strncmp(argv[i], "--output", 8))
			return true;
	return false;
}

static bool has_input(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "-i", 2) || !strncmp(argv[i], "--input", 7) ||
		    !strncmp(argv[i], "--oci-dir", 9))
			return true;
	return false;
}

/* load, save and pull run in lbbox-image, which links libarchive and libcurl. Without an input,
 * load reads stdin (podman's `load < file`), which must then not be a terminal. */
static int cmd_load(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	const char *args[34] = {argv[0]};
	int n = 1;
	bool load = !strcmp(argv[0], "load"), save = !strcmp(argv[0], "save");
	if (argc > 30)
		return lb_err_set(err, 0, "%s: too many arguments", argv[0]);
	if (wants_help(argc, argv)) {
		fputs(load ? load_usage : save ? save_usage : pull_usage, stdout);
		return 0;
	}
	if (save && !has_output(argc, argv) && isatty(STDOUT_FILENO))
		return lb_err_set(err, 0,
				  "save: refusing to write an archive to a terminal (use -o FILE, "
				  "or redirect stdout)");
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	if (load && !has_input(argc, argv)) {
		if (isatty(STDIN_FILENO))
			return lb_err_set(
			    err, 0,
			    "load: no input: give -i FILE or --oci-dir DIR, or redirect "
			    "an archive to stdin (lbbox load < image.tar)");
		args[n++] = "-i";
		args[n++] = "-";
	}
	int code = lb_image_tool(g->paths.root, args, false, err);
	return code < 0 ? -1 : code > 0 ? 1 : 0;
}

static int cmd_tag(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	_cleanup_free_ char *src = NULL;
	struct lb_store *s = NULL;
	if (wants_help(argc, argv)) {
		fputs(tag_usage, stdout);
		return 0;
	}
	if (argc < 3)
		return lb_err_set(err, 0, "tag: give SRC and DST (see lbbox tag --help)");
	if (lb_image_name(argv[1], &src, err) < 0 ||
	    lb_store_open_existing(g->paths.root, &s, err) < 0)
		return -1;
	int r = 0;
	for (int i = 2; r == 0 && i < argc; i++) {
		_cleanup_free_ char *dst = NULL;
		r = lb_image_tag_name(argv[i], &dst, err);
		if (r == 0)
			r = lb_store_tag(s, src, dst, err);
	}
	lb_store_close(s);
	return r;
}

static int cmd_prune(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	struct lb_store *s = NULL;
	struct lb_store_prune_stats st = {0};
	if (wants_help(argc, argv)) {
		fputs(image_usage, stdout);
		return 0;
	}
	if (argc > 1)
		return lb_err_set(err, 0, "image prune: unexpected argument '%s'", argv[1]);
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

static int dispatch(struct cli_globals *g, const char *verb, int argc, char **argv,
		    struct lb_err **err);

/* podman's `image SUBCOMMAND`: the same verbs under their image-scoped names. */
static int cmd_image(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	static const char *const alias[][2] = {
	    {"ls", "images"},	    {"list", "images"}, {"rm", "rmi"},
	    {"inspect", "inspect"}, {"tag", "tag"},	{"prune", "prune"},
	    {"load", "load"},	    {"pull", "pull"},	{"save", "save"},
	};
	if (argc < 2)
		return lb_err_set(err, 0, "image: give a subcommand (see lbbox image --help)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(image_usage, stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(argv[1], alias[i][0]))
			return dispatch(g, alias[i][1], argc - 1, argv + 1, err);
	return lb_err_set(err, 0, "image: unknown subcommand '%s' (see lbbox image --help)",
			  argv[1]);
}

static int dispatch(struct cli_globals *g, const char *verb, int argc, char **argv,
		    struct lb_err **err)
{
	if (!strcmp(verb, "images"))
		return cli_images_list(g, argc, argv, err);
	if (!strcmp(verb, "inspect"))
		return cli_images_inspect(g, argc, argv, err);
	if (!strcmp(verb, "rmi"))
		return cli_images_rmi(g, argc, argv, err);
	if (!strcmp(verb, "tag"))
		return cmd_tag(g, argc, argv, err);
	if (!strcmp(verb, "prune"))
		return cmd_prune(g, argc, argv, err);
	if (!strcmp(verb, "load") || !strcmp(verb, "pull") || !strcmp(verb, "save"))
		return cmd_load(g, argc, argv, err);
	if (!strcmp(verb, "image"))
		return cmd_image(g, argc, argv, err);
	return lb_err_set(err, 0, "unknown command '%s' (see lbbox --help)", verb);
}

int cli_images(struct cli_globals *g, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	int r = dispatch(g, argv[0], argc, argv, &err);
	if (r < 0)
		cli_error("%s", err->msg);
	return r == 0 ? 0 : LB_EXIT_SETUP;
}
