/*
 * An image as a sandbox's root, the one way lbbox run, sessions and the Box turn an image into
 * an engine spec: the built-in "host" image, a directory image (ROOT/images/NAME/rootfs), or a
 * store image (its unpacked layers, unpacked first by lbbox-image when missing; their flattened
 * tree where the kernel has no overlayfs). Then the image config's defaults, where the caller
 * left a field unset, as docker and podman apply them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/image/manifest.h"
#include "lbbox/image/snapshot.h"
#include "lbbox/spec/image.h"
#include "lbbox/image/ref.h"
#include "lbbox/image/store.h"
#include "lbbox/base/util.h"

#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

bool lb_overlay_available(void)
{
	_cleanup_free_ char *fs = NULL;
	const char *no = getenv("LBBOX_NO_OVERLAY");
	if (no && strcmp(no, "1") == 0)
		return false;
	if (lb_read_file("/proc/filesystems", 1 << 16, &fs, NULL, NULL) < 0)
		return false;
	return strstr(fs, "\toverlay\n") != NULL;
}

static int set_string(char **dst, const char *v, struct lb_err **err)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : lb_err_set(err, ENOMEM, "spec");
}

/* Missing layers are unpacked by lbbox-image (libarchive stays out of this process). */
static int lowerdir(const char *root, const char *name, const struct lb_image_config *cfg,
		    char **out, struct lb_err **err)
{
	size_t missing = 0;
	if (lb_snapshot_lowerdir(root, cfg, out, &missing, err) < 0)
		return -1;
	if (!missing)
		return 0;
	const char *args[] = {"prepare", name, NULL};
	if (lb_image_tool(root, args, true, err) < 0 ||
	    lb_snapshot_lowerdir(root, cfg, out, &missing, err) < 0)
		return -1;
	return missing ? lb_err_set(err, 0, "image %s: %zu layers still missing", name, missing)
		       : 0;
}

/* Without overlayfs: the flattened tree, unpacked once by lbbox-image. */
static int flat_dir(const char *root, const char *name, const struct lb_image_config *cfg,
		    char **out, struct lb_err **err)
{
	bool exists = false;
	if (lb_snapshot_flat_dir(root, cfg, out, &exists, err) < 0)
		return -1;
	if (exists)
		return 0;
	const char *args[] = {"prepare", "--flat", name, NULL};
	return lb_image_tool(root, args, true, err);
}

/* A store image: its layers as the root, or its flattened tree (read-only, or copied when the
 * root is writable). */
static int store_image(const struct lb_paths *paths, const char *ref, struct lb_spec *spec,
		       struct lb_image_config **cfg, struct lb_err **err)
{
	_cleanup_free_ char *name = NULL, *flat = NULL;
	struct lb_store *s = NULL;
	struct lb_manifest *m = NULL;
	if (lb_image_name(ref, &name, err) < 0)
		return -1;
	if (lb_store_open_existing(paths->root, &s, err) < 0)
		return lb_err_wrap(err, "image '%s' not found", ref);
	int r = lb_store_image_manifest(s, name, NULL, &m, cfg, err);
	lb_store_close(s);
	lb_manifest_free(m);
	if (r < 0)
		return -1;
	if (lb_overlay_available())
		return lowerdir(paths->root, name, *cfg, &spec->layers, err);
	if (flat_dir(paths->root, name, *cfg, &flat, err) < 0)
		return -1;
	spec->copy_rootfs = !spec->readonly_root;
	spec->rootfs = LB_TAKE_PTR(flat);
	return 0;
}

/* A directory image ROOT/images/NAME/rootfs (rootfs-tools' output), if NAME names one. */
static bool directory_image(const struct lb_paths *paths, const char *image, char *path, size_t len)
{
	struct stat st;
	if (strchr(image, '/') || image[0] == '.')
		return false;
	snprintf(path, len, "%s/images/%s/rootfs", paths->root, image);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* An image like the others: under a private upper layer, never written (a writable bind would
 * let one sandbox rewrite it for every later one). */
static int directory_root(const char *path, struct lb_spec *spec, struct lb_err **err)
{
	if (lb_overlay_available() && !strpbrk(path, ",:\\"))
		return set_string(&spec->layers, path, err);
	spec->copy_rootfs = !spec->readonly_root;
	return set_string(&spec->rootfs, path, err);
}

static bool has_env(char *const *env, const char *kv)
{
	size_t klen = strcspn(kv, "=");
	for (; env && *env; env++)
		if (strncmp(*env, kv, klen) == 0 && (*env)[klen] == '=')
			return true;
	return false;
}

/* spec->env with add's entries whose keys it lacks appended (copies). */
static int env_add_missing(struct lb_spec *spec, char *const *add, struct lb_err **err)
{
	size_t n = 0, k = 0;
	for (char **e = spec->env; e && *e; e++)
		n++;
	for (char *const *e = add; e && *e; e++)
		k++;
	char **env = reallocarray(spec->env, n + k + 1, sizeof(char *));
	if (!env)
		return lb_err_set(err, ENOMEM, "environment");
	spec->env = env;
	env[n] = NULL;
	for (char *const *e = add; e && *e; e++) {
		if (has_env(env, *e))
			continue;
		if (!(env[n] = strdup(*e)))
			return lb_err_set(err, ENOMEM, "environment");
		env[++n] = NULL;
	}
	return 0;
}

/* argv = Entrypoint + (the command given, or Cmd), as docker and podman do; a caller's
 * --entrypoint replaces the image's and drops its Cmd. */
static int image_argv(struct lb_spec *spec, const struct lb_image_config *cfg,
		      const struct lb_image_opts *o, struct lb_err **err)
{
	char **entry = o->entrypoint_set ? o->entrypoint : cfg->entrypoint;
	char **tail = spec->argv ? spec->argv : o->entrypoint_set ? NULL : cfg->cmd;
	size_t n = 0, k = 0;
	for (char **p = entry; p && *p; p++)
		n++;
	for (char **p = tail; p && *p; p++)
		n++;
	char **argv = calloc(n + 1, sizeof(char *));
	if (!argv)
		return lb_err_set(err, ENOMEM, "argv");
	for (char **p = entry; p && *p; p++)
		argv[k++] = strdup(*p);
	for (char **p = tail; p && *p; p++)
		argv[k++] = strdup(*p);
	for (size_t i = 0; i < k; i++)
		if (!argv[i]) {
			lb_strvfreep(&argv);
			return lb_err_set(err, ENOMEM, "argv");
		}
	lb_strvfreep(&spec->argv);
	spec->argv = argv;
	return 0;
}

/* The image config's defaults; what the caller set wins. */
static int apply_config(struct lb_spec *spec, const struct lb_image_config *cfg,
			const struct lb_image_opts *o, struct lb_err **err)
{
	bool user_set = o->user_set || o->user;

	if (env_add_missing(spec, cfg->env, err) < 0)
		return -1;
	if (!spec->cwd && cfg->working_dir && *cfg->working_dir &&
	    set_string(&spec->cwd, cfg->working_dir, err) < 0)
		return -1;
	if (!user_set && cfg->user && *cfg->user &&
	    lb_image_user(spec->layers ? spec->layers : spec->rootfs, cfg->user, &spec->uid,
			  &spec->gid, err) < 0)
		return -1;
	return image_argv(spec, cfg, o, err);
}

/* PATH as docker's, HOME as the user's, when neither the caller nor the image set them. */
static int env_defaults(struct lb_spec *spec, struct lb_err **err)
{
	char *defaults[] = {DEFAULT_PATH, spec->uid == 0 ? "HOME=/root" : "HOME=/", NULL};
	return env_add_missing(spec, defaults, err);
}

/* Without an image config (the host image, a directory image, --rootfs) only an
 * --entrypoint applies: it goes before the command given. */
static int plain_argv(struct lb_spec *spec, const struct lb_image_opts *o, struct lb_err **err)
{
	static const struct lb_image_config none = {0};
	if (!o->entrypoint_set)
		return 0;
	return image_argv(spec, &none, o, err);
}

/* --user NAME[:GROUP] through the root's own /etc/passwd and /etc/group (the host's for the
 * host image). */
static int user_by_name(struct lb_spec *spec, const char *user, struct lb_err **err)
{
	const char *root = spec->layers ? spec->layers : spec->rootfs ? spec->rootfs : "/";
	if (lb_image_user(root, user, &spec->uid, &spec->gid, err) < 0)
		return lb_err_wrap(err, "--user %s", user);
	return 0;
}

int lb_spec_image_unpacked(const struct lb_paths *paths, const char *image, bool *unpacked,
			   struct lb_err **err)
{
	_cleanup_free_ char *name = NULL, *lower = NULL;
	struct lb_store *s = NULL;
	struct lb_manifest *m = NULL;
	struct lb_image_config *cfg = NULL;
	size_t missing = 0;
	*unpacked = true;
	if (lb_spec_image_is_local(paths, image))
		return 0;
	if (lb_image_name(image, &name, err) < 0 ||
	    lb_store_open_existing(paths->root, &s, err) < 0)
		return -1;
	int r = lb_store_image_manifest(s, name, NULL, &m, &cfg, err);
	lb_store_close(s);
	if (r == 0)
		r = lb_snapshot_lowerdir(paths->root, cfg, &lower, &missing, err);
	*unpacked = missing == 0;
	lb_manifest_free(m);
	lb_image_config_free(cfg);
	return r;
}

bool lb_spec_image_is_local(const struct lb_paths *paths, const char *image)
{
	char path[LB_PATH_BUF];
	return !image || !strcmp(image, "host") ||
	       directory_image(paths, image, path, sizeof(path));
}

int lb_spec_image(const struct lb_paths *paths, const struct lb_image_opts *o, struct lb_spec *spec,
		  struct lb_err **err)
{
	char path[LB_PATH_BUF];
	struct lb_image_config *cfg = NULL;
	const char *image = o->image;
	if (image && spec->rootfs)
		return lb_err_set(err, 0, "--image and --rootfs are mutually exclusive");
	int r = 0;
	if (!image || !strcmp(image, "host") || spec->rootfs)
		r = plain_argv(spec, o, err);
	else if (directory_image(paths, image, path, sizeof(path)))
		r = directory_root(path, spec, err) < 0 ? -1 : plain_argv(spec, o, err);
	else if ((r = store_image(paths, image, spec, &cfg, err)) == 0)
		r = apply_config(spec, cfg, o, err);
	lb_image_config_free(cfg);
	if (r == 0 && o->user)
		r = user_by_name(spec, o->user, err);
	return r < 0 ? -1 : env_defaults(spec, err);
}
