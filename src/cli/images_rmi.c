/*
 * lbbox rmi [-f] REF... (also lbbox image rm), as podman: a name removes that name; an ID or
 * digest removes the image with all its names, refused when it has several unless -f; an image a
 * sandbox runs on is refused unless -f (the sandbox keeps working either way: its layers stay
 * until `image prune`, which never removes what a live sandbox uses).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "images_cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/image/ref.h"

/* Its names (a NULL-terminated vector; NULL when it has none), and how many. */
static size_t names_of(struct lb_store *s, const char *digest, char ***out, struct lb_err **err)
{
	struct lb_store_image *v = NULL;
	size_t n = 0, k = 0;
	*out = NULL;
	if (lb_store_list(s, &v, &n, err) < 0)
		return 0;
	char **names = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; names && i < n; i++)
		if (v[i].name && !strcmp(v[i].digest, digest))
			names[k++] = LB_TAKE_PTR(v[i].name);
	lb_store_images_free(v, n);
	*out = names;
	return k;
}

static void print_untagged(char **names)
{
	for (char **p = names; p && *p; p++) {
		printf("Untagged: ");
		cli_print_escaped(*p, 0);
		putchar('\n');
	}
}

/* By ID or digest: the whole image, every name with it. */
static int remove_image(struct lb_store *s, const char *arg, const struct lb_store_image *e,
			const char *id, bool force, struct lb_err **err)
{
	_cleanup_strv_ char **names = NULL;
	size_t n = names_of(s, e->digest, &names, err);
	if (!names)
		return lb_err_set(err, 0, "rmi %s: cannot list the image's names", arg);
	if (n > 1 && !force)
		return lb_err_set(err, 0,
				  "image %s has %zu names (%s, ...): remove them by name, or use "
				  "rmi -f to remove them all",
				  arg, n, names[0]);
	if (lb_store_remove(s, e->digest, err) < 0)
		return -1;
	print_untagged(names);
	printf("Deleted: %s\n", id + strlen("sha256:"));
	return 0;
}

static int rmi_one(struct cli_globals *g, struct lb_store *s, const char *arg, bool force,
		   struct lb_err **err)
{
	_cleanup_free_ char *name = NULL;
	struct lb_store_image e = {0};
	struct cli_image img = {0};
	enum lb_store_match how;
	char user[256];
	if (lb_image_name(arg, &name, err) < 0 || lb_store_lookup(s, name, &e, &how, err) < 0)
		return -1;
	int r = cli_image_read(s, e.digest, &img, err);
	if (r == 0 && !force &&
	    cli_image_in_use(g->paths.root, g->paths.runroot, img.cfg, user, sizeof(user)))
		r = lb_err_set(err, 0,
			       "image %s is in use by sandbox %s: stop it first, or use rmi -f "
			       "(the sandbox keeps running)",
			       arg, user);
	if (r == 0 && how == LB_STORE_MATCH_DIGEST)
		r = remove_image(s, arg, &e, img.id, force, err);
	else if (r == 0 && (r = lb_store_untag(s, e.name, err)) == 0) {
		char *one[] = {e.name, NULL};
		print_untagged(one);
	}
	cli_image_clear(&img);
	lb_store_image_clear(&e);
	return r;
}

static const char rmi_usage[] =
    "usage: lbbox rmi [-f] REF...   (also: lbbox image rm)\n"
    "\n"
    "Removes an image name; by image ID or digest, the image with all its names (-f when it has\n"
    "several). An image a sandbox runs on is refused unless -f. The layers stay on disk until\n"
    "`lbbox image prune`.\n";

int cli_images_rmi(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	struct lb_store *s = NULL;
	bool force = false;
	int i = 1, failed = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force"))
			force = true;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(rmi_usage, stdout);
			return 0;
		} else
			return lb_err_set(err, 0, "rmi: unknown option '%s' (see lbbox rmi --help)",
					  argv[i]);
	}
	if (i == argc)
		return lb_err_set(err, 0, "rmi: give an image reference (see lbbox rmi --help)");
	if (lb_store_open_existing(g->paths.root, &s, err) < 0)
		return -1;
	/* like podman: every reference is tried; each failure is one line */
	for (; i < argc; i++) {
		struct lb_err *e = NULL;
		if (rmi_one(g, s, argv[i], force, &e) < 0 && ++failed)
			cli_error("%s", e->msg);
		lb_err_free(&e);
	}
	lb_store_close(s);
	return failed ? 1 : 0; /* 1: failed, each failure already said */
}
