/*
 * lbbox-image ROOT save [-o FILE] [--format docker-archive|oci-archive] REF...: the images as one
 * archive, on stdout or in FILE. FILE appears only complete: the tar is written beside it and
 * renamed into place, so a failed save leaves no half archive under the name asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imagetool.h"
#include "save_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/image/ref.h"

#define SAVE_MAX_IMAGES 64

/* The host platform's manifest behind digest: the one image a sandbox here would run. */
static int platform_manifest(struct lb_store *s, const char *digest, struct save_image *out,
			     struct lb_err **err)
{
	if (lb_store_manifest_of(s, digest, NULL, &out->m, out->digest, &out->size, err) < 0)
		return -1;
	out->media_type = strdup(out->m->media_type ? out->m->media_type : LB_MT_OCI_MANIFEST);
	return out->media_type ? 0 : lb_err_set(err, ENOMEM, "save");
}

static int read_config(struct lb_store *s, struct save_image *img, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	if (lb_store_blob_read(s, img->m->config.digest, LB_CONFIG_MAX, &buf, &len, err) < 0)
		return -1;
	return lb_image_config_parse(buf, len, &img->cfg, err);
}

/* An image asked for by name keeps that name in the archive; by ID or digest it has none. */
static int resolve(struct lb_store *s, const char *arg, struct save_image *out, struct lb_err **err)
{
	_cleanup_free_ char *name = NULL;
	struct lb_store_image img = {0};
	enum lb_store_match how;

	if (lb_image_name(arg, &name, err) < 0 || lb_store_lookup(s, name, &img, &how, err) < 0)
		return lb_err_wrap(err, "save");
	if (how == LB_STORE_MATCH_NAME && img.name)
		out->name = strdup(img.name);
	int r = platform_manifest(s, img.digest, out, err);
	lb_store_image_clear(&img);
	if (r == 0)
		r = read_config(s, out, err);
	return r < 0 ? lb_err_wrap(err, "save: image %s", arg) : 0;
}

static void images_free(struct save_image *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].media_type);
		lb_manifest_free(v[i].m);
		lb_image_config_free(v[i].cfg);
	}
}

static int write_archive(struct lb_store *s, int fd, bool oci, struct save_image *v, size_t n,
			 struct lb_err **err)
{
	struct save_tar t;
	int r = save_tar_open(&t, s, fd, err);
	if (r == 0)
		r = oci ? save_oci(&t, v, n, err) : save_docker(&t, v, n, err);
	if (r == 0)
		r = save_tar_finish(&t, err);
	save_tar_free(&t);
	return r;
}

/* FILE through a temporary name in its directory, renamed into place when complete. */
static int save_file(struct lb_store *s, const char *file, bool oci, struct save_image *v, size_t n,
		     struct lb_err **err)
{
	_cleanup_free_ char *tmp = NULL, *copy = strdup(file);
	if (!copy || asprintf(&tmp, "%s/.%s.lbbox-save-XXXXXX", dirname(copy),
			      strrchr(file, '/') ? strrchr(file, '/') + 1 : file) < 0)
		return lb_err_set(err, ENOMEM, "save");
	_cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "save: create %s", file);
	mode_t mask = umask(0);
	umask(mask);
	int r = fchmod(fd, 0666 & ~mask) < 0 ? lb_err_set(err, errno, "save: %s", file) : 0;
	if (r == 0)
		r = write_archive(s, fd, oci, v, n, err);
	if (r == 0 && fsync(fd) < 0)
		r = lb_err_set(err, errno, "save: write %s", file);
	if (r == 0 && rename(tmp, file) < 0)
		r = lb_err_set(err, errno, "save: rename to %s", file);
	if (r < 0)
		unlink(tmp);
	return r;
}

static int parse_format(const char *arg, bool *oci, struct lb_err **err)
{
	if (!strcmp(arg, "docker-archive"))
		*oci = false;
	else if (!strcmp(arg, "oci-archive"))
		*oci = true;
	else
		return lb_err_set(
		    err, 0, "save: unknown --format '%s' (docker-archive or oci-archive)", arg);
	return 0;
}

int tool_save(struct lb_store *s, int argc, char **argv, struct lb_err **err)
{
	static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
					     {"format", required_argument, NULL, 'f'},
					     {0}};
	const char *output = NULL;
	struct save_image v[SAVE_MAX_IMAGES] = {0};
	size_t n = 0;
	bool oci = false;
	int c, r = 0;

	optind = 1;
	opterr = 0; /* one line of lbbox's own, naming the option */
	for (int before = optind; (c = getopt_long(argc, argv, "+:o:", opts, NULL)) != -1;
	     before = optind) {
		if (c == 'o')
			output = optarg;
		else if (c == 'f' && parse_format(optarg, &oci, err) < 0)
			return -1;
		else if (c == ':')
			return lb_err_set(err, 0, "save: missing value for option '%s'",
					  argv[before]);
		else if (c == '?')
			return lb_err_set(err, 0, "save: unknown option '%s'", argv[before]);
	}
	if (optind >= argc)
		return lb_err_set(err, 0, "save: give at least one image");
	if (argc - optind > SAVE_MAX_IMAGES)
		return lb_err_set(err, 0, "save: at most %d images at once", SAVE_MAX_IMAGES);
	if (!output && isatty(STDOUT_FILENO))
		return lb_err_set(err, 0,
				  "save: refusing to write an archive to a terminal (use -o FILE, "
				  "or redirect stdout)");
	for (; r == 0 && optind < argc; optind++)
		r = resolve(s, argv[optind], &v[n++], err);
	if (r == 0)
		r = output ? save_file(s, output, oci, v, n, err)
			   : write_archive(s, STDOUT_FILENO, oci, v, n, err);
	images_free(v, n);
	return r;
}
