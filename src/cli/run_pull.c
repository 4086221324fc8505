/* lbbox run --pull missing|always|never: a store image fetched from its registry first, as
 * podman does (default missing), through lbbox-image like lbbox pull. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/image/ref.h"
#include "lbbox/image/store.h"
#include "run_internal.h"

static bool in_store(const char *root, const char *ref)
{
	_cleanup_free_ char *name = NULL;
	struct lb_store *s = NULL;
	struct lb_store_image img = {0};
	if (lb_image_name(ref, &name, NULL) < 0 || lb_store_open_existing(root, &s, NULL) < 0)
		return false;
	bool found = lb_store_resolve(s, name, &img, NULL) == 0;
	lb_store_image_clear(&img);
	lb_store_close(s);
	return found;
}

/* --tls-verify=false: plain HTTP to the reference's registry (its first component). */
static int pull(const struct cli_globals *g, const struct run_opts *o, struct lb_err **err)
{
	const char *ref = o->img.image;
	char host[256] = "";
	const char *slash = strchr(ref, '/');
	if (o->tls_verify_off && slash && (size_t)(slash - ref) < sizeof(host))
		snprintf(host, sizeof(host), "%.*s", (int)(slash - ref), ref);
	const char *plain[] = {"pull", ref, NULL};
	const char *insecure[] = {"pull", "--insecure-registry", host, ref, NULL};
	/* the command's stdout is the sandbox's alone: lbbox-image's report goes to stderr */
	fflush(stdout);
	_cleanup_close_ int saved = dup(STDOUT_FILENO);
	if (saved < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return lb_err_set(err, errno, "image %s: pull", ref);
	int r = lb_image_tool(g->paths.root, *host ? insecure : plain, true, err);
	if (dup2(saved, STDOUT_FILENO) < 0 && r == 0)
		return lb_err_set(err, errno, "image %s: pull", ref);
	return r < 0 ? -1 : 0;
}

/* localhost/ names images from no registry (podman's convention): there is none to ask. */
static bool local_name(const char *ref)
{
	_cleanup_free_ char *name = NULL;
	return !strncmp(ref, "localhost/", 10) ||
	       (lb_image_name(ref, &name, NULL) == 0 && !strncmp(name, "localhost/", 10));
}

int run_pull_image(const struct cli_globals *g, const struct run_opts *o, struct lb_err **err)
{
	const char *ref = o->img.image;
	_cleanup_free_ char *name = NULL;
	if (o->spec.rootfs || lb_spec_image_is_local(&g->paths, ref))
		return 0;
	if (lb_image_name(ref, &name, err) < 0) /* a bad reference never reaches a registry */
		return -1;
	if (o->pull == RUN_PULL_ALWAYS && !local_name(ref))
		return pull(g, o, err);
	if (in_store(g->paths.root, ref))
		return 0;
	if (local_name(ref))
		return lb_err_set(err, 0,
				  "image %s not found in %s (a localhost/ image comes from lbbox "
				  "load or lbbox tag, not from a registry)",
				  ref, g->paths.root);
	if (o->pull == RUN_PULL_NEVER)
		return lb_err_set(err, 0,
				  "image %s not found in %s: pull it (lbbox pull %s), load it "
				  "(lbbox load), or run with --pull missing",
				  ref, g->paths.root, ref);
	if (pull(g, o, err) < 0)
		return lb_err_wrap(err, "image %s not found in %s, and pulling it failed", ref,
				   g->paths.root);
	return 0;
}
