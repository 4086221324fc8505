/* Load entry points: an archive (docker-save or OCI) or an OCI layout directory, imported into
 * one store transaction. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "load_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

static int archive_import(struct load_src *src, int fd, struct lb_err **err)
{
	if (load_tar_stage(src, fd, err) < 0)
		return -1;
	if (load_src_lookup(src, "oci-layout") && load_src_lookup(src, "index.json"))
		return load_oci(src, err);
	if (load_src_lookup(src, "manifest.json"))
		return load_docker(src, err);
	return lb_err_set(
	    err, 0,
	    "neither a docker-save archive (no manifest.json) nor an OCI archive (no oci-layout and index.json)");
}

static int finish(struct load_src *src, struct lb_load_result *out, struct lb_err **err)
{
	if (src->result.n == 0)
		return lb_err_set(err, ENOENT, "no image to load");
	if (lb_store_txn_commit(src->t, err) < 0)
		return -1;
	*out = src->result;
	src->result = (struct lb_load_result){0};
	return 0;
}

static const struct lb_load_opts no_opts;

int lb_load_archive_fd(struct lb_store *s, int fd, const struct lb_load_opts *opts,
		       struct lb_load_result *out, struct lb_err **err)
{
	struct load_src src = {.opts = opts ? opts : &no_opts, .dir_fd = -1};
	int r = -1;

	if (lb_store_txn_begin(s, &src.t, err) == 0 && archive_import(&src, fd, err) == 0)
		r = finish(&src, out, err);
	load_src_clear(&src);
	return r < 0 ? lb_err_wrap(err, "load") : 0;
}

int lb_load_archive(struct lb_store *s, const char *path, const struct lb_load_opts *opts,
		    struct lb_load_result *out, struct lb_err **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return lb_err_set(err, errno, "load %s", path);
	if (lb_load_archive_fd(s, fd, opts, out, err) < 0)
		return lb_err_wrap(err, "%s", path);
	return 0;
}

int lb_load_oci_dir(struct lb_store *s, const char *dir, const struct lb_load_opts *opts,
		    struct lb_load_result *out, struct lb_err **err)
{
	struct load_src src = {.opts = opts ? opts : &no_opts};
	int r = -1;

	src.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src.dir_fd < 0)
		return lb_err_set(err, errno, "load %s", dir);
	if (lb_store_txn_begin(s, &src.t, err) == 0 && load_oci(&src, err) == 0)
		r = finish(&src, out, err);
	load_src_clear(&src);
	return r < 0 ? lb_err_wrap(err, "load %s", dir) : 0;
}

int lb_load_split_oci_dir(const char *arg, char **dir, char **tag, struct lb_err **err)
{
	const char *colon = strrchr(arg, ':');
	struct stat st;
	_cleanup_free_ char *d = NULL, *t = NULL;

	if (!*arg)
		return lb_err_set(err, EINVAL, "empty OCI layout path");
	if (!colon || strchr(colon, '/') || (stat(arg, &st) == 0 && S_ISDIR(st.st_mode))) {
		d = strdup(arg);
	} else {
		d = strndup(arg, (size_t)(colon - arg));
		if (!colon[1] || !(t = strdup(colon + 1)))
			return lb_err_set(err, colon[1] ? ENOMEM : EINVAL, "OCI layout '%s'", arg);
	}
	if (!d)
		return lb_err_set(err, ENOMEM, "OCI layout '%s'", arg);
	*dir = LB_TAKE_PTR(d);
	*tag = LB_TAKE_PTR(t);
	return 0;
}
