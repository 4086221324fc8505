/*
 * lbbox-image: the image operations that need libarchive (and later libcurl), kept out of the
 * lbbox binary whose start they would slow down by milliseconds. lbbox runs it as
 *   lbbox-image ROOT load [-q] -i FILE|- | --oci-dir DIR[:TAG] [--name NAME]
 *   lbbox-image ROOT sizes
 *   lbbox-image ROOT prepare [--flat] REF
 *   lbbox-image ROOT pull [-q] [--insecure-registry HOST]... REF
 *   lbbox-image ROOT save [-o FILE] [--format docker-archive|oci-archive] REF...
 * It prints one "lbbox: ..." line on failure, like lbbox, and exits 125.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imagetool.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/image/ref.h"
#include "lbbox/image/load.h"
#include "lbbox/image/registry.h"
#include "lbbox/image/snapshot.h"
#include "lbbox/image/store.h"
#include "lbbox/image/unpack.h"
#include "lbbox/base/util.h"

#define EXIT_FAIL 125

/* Names, digests and media types in the message come from images: never printed raw. */
static int fail(struct lb_err *err)
{
	_cleanup_free_ char *safe = lb_escape_ctl(err && err->msg ? err->msg : "failed");
	fprintf(stderr, "lbbox: %s\n", safe ? safe : "failed");
	lb_err_free(&err);
	return EXIT_FAIL;
}

/* A docker RepoTag or an OCI ref.name with no '/', ':' or '@' ("v2", "latest"): skopeo, umoci
 * and buildah write just the tag there (the OCI spec allows either), so it is a tag, not a name. */
static bool tag_only(const char *in)
{
	return !strpbrk(in, "/:@");
}

/* "/x/myapp.oci.tar.gz" -> "myapp": what a tag-only image is called when loaded from it. */
static char *base_repo(const char *src)
{
	_cleanup_free_ char *copy = strdup(src ? src : "");
	if (!copy)
		return NULL;
	size_t n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0';
	const char *slash = strrchr(copy, '/');
	char *base = strdup(slash ? slash + 1 : copy);
	for (char *p = base; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	char *dot = base ? strchr(base, '.') : NULL;
	if (dot && dot != base)
		*dot = '\0';
	return base;
}

/* Names in archives ("alpine:3.20") are stored canonical ("docker.io/library/alpine:3.20"); a
 * tag-only OCI name becomes localhost/<file or directory name>:<tag> (podman's localhost/ for an
 * image that comes from no registry). ctx: the path loaded from, or NULL (stdin). */
static int normalize(const char *in, char **out, void *ctx, struct lb_err **err)
{
	_cleanup_free_ char *repo = NULL, *local = NULL;
	struct lb_image_ref ref;
	if (tag_only(in)) {
		if (!ctx || !(repo = base_repo(ctx)) || !*repo)
			return lb_err_set(
			    err, 0,
			    "the image is tagged '%s' but has no name: give one with --name", in);
		if (asprintf(&local, "localhost/%s:%s", repo, in) < 0)
			return lb_err_set(err, ENOMEM, "image name");
		if (lb_image_ref_parse(local, &ref, err) < 0)
			return lb_err_wrap(
			    err, "name for the image tagged '%s' (give one with --name)", in);
		lb_image_ref_clear(&ref);
		*out = LB_TAKE_PTR(local);
		return 0;
	}
	if (lb_image_ref_parse(in, &ref, err) < 0)
		return -1;
	int r = lb_image_ref_canonical(&ref, out, err);
	lb_image_ref_clear(&ref);
	return r;
}

/* `-i -` (or no input when lbbox passes its stdin on): the archive from stdin. */
static int load_input(struct lb_store *s, const char *input, struct lb_load_opts *lo,
		      struct lb_load_result *res, struct lb_err **err)
{
	if (strcmp(input, "-") != 0) {
		lo->normalize_ctx = (void *)input;
		return lb_load_archive(s, input, lo, res, err);
	}
	if (isatty(STDIN_FILENO))
		return lb_err_set(
		    err, 0,
		    "load: refusing to read an archive from a terminal (use -i FILE, or "
		    "redirect stdin)");
	if (lb_load_archive_fd(s, STDIN_FILENO, lo, res, err) < 0)
		return lb_err_wrap(err, "stdin");
	return 0;
}

static int do_load(struct lb_store *s, int argc, char **argv, struct lb_err **err)
{
	static const struct option opts[] = {{"input", required_argument, NULL, 'i'},
					     {"oci-dir", required_argument, NULL, 'o'},
					     {"name", required_argument, NULL, 'n'},
					     {"quiet", no_argument, NULL, 'q'},
					     {0}};
	const char *input = NULL, *ocidir = NULL;
	struct tool_progress tp;
	struct lb_load_opts lo = {
	    .normalize = normalize, .progress = tool_progress, .progress_ctx = &tp};
	struct lb_load_result res = {0};
	_cleanup_free_ char *dir = NULL, *tag = NULL, *name = NULL;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "i:q", opts, NULL)) != -1) {
		if (c == 'q')
			lo.progress = NULL;
		else if (c == 'i')
			input = optarg;
		else if (c == 'o')
			ocidir = optarg;
		else if (c == 'n' && lb_image_tag_name(optarg, &name, err) < 0)
			return -1;
		else if (c == '?')
			return lb_err_set(err, 0, "load: unknown option '%s'", argv[optind - 1]);
	}
	if (!input == !ocidir)
		return lb_err_set(
		    err, 0,
		    "load: give exactly one of -i FILE (- for stdin) or --oci-dir DIR[:TAG]");
	lo.name = name;
	tool_progress_init(&tp);
	if (input) {
		r = load_input(s, input, &lo, &res, err);
	} else {
		if (lb_load_split_oci_dir(ocidir, &dir, &tag, err) < 0)
			return -1;
		lo.tag = tag;
		lo.normalize_ctx = dir;
		r = lb_load_oci_dir(s, dir, &lo, &res, err);
	}
	tool_progress_end(&tp);
	for (size_t i = 0; r == 0 && i < res.n; i++)
		printf("Loaded image: %s\n",
		       res.images[i].name ? res.images[i].name : res.images[i].digest);
	lb_load_result_clear(&res);
	return r;
}

/* How this user unpacks, and the limits from the environment lbbox passes on (unset: the
 * defaults). */
static int unpack_opts(struct lb_unpack_opts *o, struct lb_err **err)
{
	const char *size = getenv("LBBOX_UNPACK_MAX_SIZE"),
		   *entries = getenv("LBBOX_UNPACK_MAX_ENTRIES");
	/* Without root nothing but the user's own uid can own a file (no subordinate ids are
	 * mapped): ownership is not kept, setuid bits dropped, and the overlay markers are the
	 * user.overlay.* ones a rootless overlay mount ("userxattr") reads. */
	*o = (struct lb_unpack_opts){
	    .flags = geteuid() == 0 ? 0 : LB_UNPACK_ROOTLESS | LB_UNPACK_USERXATTR};
	if (size && *size &&
	    (lb_parse_size(size, &o->max_total_size, err) < 0 || !o->max_total_size))
		return lb_err_set(err, 0, "invalid LBBOX_UNPACK_MAX_SIZE '%s' (e.g. 20g)", size);
	if (entries && *entries &&
	    (lb_parse_u64(entries, &o->max_entries, err) < 0 || !o->max_entries))
		return lb_err_set(err, 0, "invalid LBBOX_UNPACK_MAX_ENTRIES '%s'", entries);
	return 0;
}

static int do_prepare(struct lb_store *s, const char *name, bool flat, struct lb_err **err)
{
	struct lb_manifest *m = NULL;
	struct lb_image_config *cfg = NULL;
	struct lb_unpack_opts limits;
	if (unpack_opts(&limits, err) < 0 ||
	    lb_store_image_manifest(s, name, NULL, &m, &cfg, err) < 0)
		return -1;
	int r = flat ? lb_snapshot_prepare_flat(s, m, cfg, &limits, err)
		     : lb_snapshot_prepare(s, m, cfg, &limits, err);
	lb_manifest_free(m);
	lb_image_config_free(cfg);
	return r;
}

static int do_pull(struct lb_store *s, int argc, char **argv, struct lb_err **err)
{
	static const struct option opts[] = {{"insecure-registry", required_argument, NULL, 'k'},
					     {"quiet", no_argument, NULL, 'q'},
					     {0}};
	const char *insecure[17] = {0};
	size_t n = 0;
	struct tool_progress tp;
	struct lb_pull_opts po = {
	    .insecure_registries = insecure, .progress = tool_progress, .progress_ctx = &tp};
	struct lb_pull_result res = {0};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "q", opts, NULL)) != -1) {
		if (c == 'q')
			po.progress = NULL;
		else if (c != 'k' || n >= 16)
			return lb_err_set(err, 0, "pull: bad option '%s'", argv[optind - 1]);
		else
			insecure[n++] = optarg;
	}
	if (optind != argc - 1)
		return lb_err_set(err, 0, "pull: give exactly one image reference");
	tool_progress_init(&tp);
	int r = lb_pull(s, argv[optind], &po, &res, err);
	tool_progress_end(&tp);
	if (r < 0)
		return -1;
	printf("Pulled %s (%s)\n", res.name, res.digest);
	lb_pull_result_clear(&res);
	return 0;
}

int main(int argc, char **argv)
{
	struct lb_err *err = NULL;
	struct lb_store *s = NULL;
	int r = -1;

	if (argc < 3) {
		fputs("usage: lbbox-image ROOT load|prepare ...\n", stderr);
		return EXIT_FAIL;
	}
	if (lb_store_open(argv[1], &s, &err) < 0)
		return fail(err);
	if (strcmp(argv[2], "load") == 0)
		r = do_load(s, argc - 2, argv + 2, &err);
	else if (strcmp(argv[2], "pull") == 0)
		r = do_pull(s, argc - 2, argv + 2, &err);
	else if (strcmp(argv[2], "save") == 0)
		r = tool_save(s, argc - 2, argv + 2, &err);
	else if (strcmp(argv[2], "sizes") == 0 && argc == 3)
		r = tool_sizes(s, &err);
	else if (strcmp(argv[2], "prepare") == 0 && argc == 4)
		r = do_prepare(s, argv[3], false, &err);
	else if (strcmp(argv[2], "prepare") == 0 && argc == 5 && strcmp(argv[3], "--flat") == 0)
		r = do_prepare(s, argv[4], true, &err);
	else
		lb_err_set(&err, 0, "lbbox-image: unknown command '%s'", argv[2]);
	lb_store_close(s);
	return r < 0 ? fail(err) : 0;
}
