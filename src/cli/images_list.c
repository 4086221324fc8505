/*
 * lbbox images [-q] [--digests] [--no-trunc] [--json]: podman's columns (REPOSITORY, TAG, IMAGE
 * ID, CREATED, SIZE) for the store's images, one row per name, newest first; then the directory
 * images (ROOT/images/NAME/rootfs, what `--image NAME` also runs) with the TAG <dir>, so a user
 * sees every image `run --image` takes in one list.
 */
#include <dirent.h>
#include <errno.h>
#include <fts.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "images_cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

struct list_opts {
	bool quiet, digests, no_trunc, json;
};

struct row {
	const char *name; /* NULL: <none> */
	struct cli_image *img;
};

struct listing {
	struct lb_store_image *entries;
	size_t n_entries;
	struct cli_image *imgs;
	size_t n_imgs;
	struct row *rows;
	size_t n_rows;
};

static void listing_clear(struct listing *l)
{
	for (size_t i = 0; i < l->n_imgs; i++)
		cli_image_clear(&l->imgs[i]);
	free(l->imgs);
	free(l->rows);
	lb_store_images_free(l->entries, l->n_entries);
}

static struct cli_image *image_of(struct listing *l, const char *digest)
{
	for (size_t i = 0; i < l->n_imgs; i++)
		if (strcmp(l->imgs[i].digest, digest) == 0)
			return &l->imgs[i];
	return NULL;
}

static bool has_named_entry(const struct listing *l, const char *digest)
{
	for (size_t i = 0; i < l->n_entries; i++)
		if (l->entries[i].name && strcmp(l->entries[i].digest, digest) == 0)
			return true;
	return false;
}

/* One image per digest; one row per name (an untagged entry only when its image has none). */
static int listing_read(struct lb_store *s, struct listing *l, struct lb_err **err)
{
	if (lb_store_list(s, &l->entries, &l->n_entries, err) < 0)
		return -1;
	l->imgs = calloc(l->n_entries + 1, sizeof(*l->imgs));
	l->rows = calloc(l->n_entries + 1, sizeof(*l->rows));
	if (!l->imgs || !l->rows)
		return lb_err_set(err, ENOMEM, "images");
	for (size_t i = 0; i < l->n_entries; i++) {
		const struct lb_store_image *e = &l->entries[i];
		struct cli_image *img = image_of(l, e->digest);
		if (!img) {
			img = &l->imgs[l->n_imgs];
			if (cli_image_read(s, e->digest, img, err) < 0)
				return -1;
			l->n_imgs++;
		}
		if (e->name || !has_named_entry(l, e->digest))
			l->rows[l->n_rows++] = (struct row){.name = e->name, .img = img};
	}
	return 0;
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	if (a->img->created != b->img->created)
		return a->img->created < b->img->created ? 1 : -1;
	if (!a->name || !b->name)
		return !a->name - !b->name;
	return strcmp(a->name, b->name);
}

/* A directory image: its rootfs's apparent size (regular files and symlinks, this filesystem). */
static uint64_t dir_size(const char *path)
{
	char *paths[] = {(char *)path, NULL};
	uint64_t total = 0;
	FTS *f = fts_open(paths, FTS_PHYSICAL | FTS_XDEV | FTS_NOCHDIR, NULL);
	for (FTSENT *e; f && (e = fts_read(f));)
		if (e->fts_info == FTS_F || e->fts_info == FTS_SL)
			total += (uint64_t)e->fts_statp->st_size;
	if (f)
		fts_close(f);
	return total;
}

struct dir_image {
	char name[256];
	char path[LB_PATH_BUF];
	time_t created;
};

/* ROOT/images/NAME/rootfs directories (what `run --image NAME` takes without a store). */
static size_t dir_images(const char *root, struct dir_image *out, size_t max)
{
	char dir[LB_PATH_BUF];
	struct stat st;
	size_t n = 0;
	snprintf(dir, sizeof(dir), "%s/images", root);
	_cleanup_closedir_ DIR *d = opendir(dir);
	for (struct dirent *e; d && n < max && (e = readdir(d));) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(out->name))
			continue;
		snprintf(out[n].path, sizeof(out[n].path), "%s/%s/rootfs", dir, e->d_name);
		if (stat(out[n].path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s", e->d_name);
		out[n++].created = st.st_mtime;
	}
	return n;
}

#define MAX_DIR_IMAGES 256

static void print_short_id(const char *id, bool full)
{
	const char *hex = strchr(id, ':') ? strchr(id, ':') + 1 : id;
	printf("%.*s", full ? 64 : 12, hex);
}

static void print_quiet(const struct listing *l, bool full)
{
	for (size_t i = 0; i < l->n_imgs; i++) {
		print_short_id(l->imgs[i].id, full);
		putchar('\n');
	}
}

struct widths {
	int repo, tag;
};

static void row_repo_tag(const char *name, char **repo, char **tag)
{
	const char *t = NULL;
	size_t tn = 0, rn = name ? cli_image_repo(name, &t, &tn) : 0;
	_cleanup_free_ char *r = name ? strndup(name, rn) : strdup("<none>");
	_cleanup_free_ char *g = t ? strndup(t, tn) : strdup("<none>");
	*repo = r ? lb_escape_ctl(r) : NULL;
	*tag = g ? lb_escape_ctl(g) : NULL;
}

static void print_row(const char *repo, const char *tag, const char *id, const char *digest,
		      const char *created, const char *size, const struct widths *w,
		      const struct list_opts *o)
{
	printf("%-*s  %-*s  ", w->repo, repo, w->tag, tag);
	if (o->digests)
		printf("%-71s  ", digest);
	printf("%-*s  %-18s  %s\n", o->no_trunc ? 71 : 12, id, created, size);
}

static void print_store_row(const struct row *r, const struct widths *w, const struct list_opts *o,
			    time_t now)
{
	_cleanup_free_ char *repo = NULL, *tag = NULL;
	char created[64], size[32], id[LB_DIGEST_BUF];
	row_repo_tag(r->name, &repo, &tag);
	cli_human_ago(r->img->created, now, created, sizeof(created));
	if (r->img->size_known)
		cli_human_size(r->img->size, size, sizeof(size));
	else
		snprintf(size, sizeof(size), "-");
	snprintf(id, sizeof(id), "%.*s", o->no_trunc ? 71 : 12,
		 o->no_trunc ? r->img->id : r->img->id + strlen("sha256:"));
	print_row(repo ? repo : "?", tag ? tag : "?", id, r->img->digest, created, size, w, o);
}

static void print_table(const struct listing *l, const struct dir_image *dirs, size_t n_dirs,
			const struct list_opts *o)
{
	struct widths w = {(int)strlen("REPOSITORY"), (int)strlen("<none>")};
	time_t now = time(NULL);
	for (size_t i = 0; i < l->n_rows; i++) {
		_cleanup_free_ char *repo = NULL, *tag = NULL;
		row_repo_tag(l->rows[i].name, &repo, &tag);
		w.repo = repo && (int)strlen(repo) > w.repo ? (int)strlen(repo) : w.repo;
		w.tag = tag && (int)strlen(tag) > w.tag ? (int)strlen(tag) : w.tag;
	}
	for (size_t i = 0; i < n_dirs; i++)
		w.repo = (int)strlen(dirs[i].name) > w.repo ? (int)strlen(dirs[i].name) : w.repo;
	print_row("REPOSITORY", "TAG", "IMAGE ID", "DIGEST", "CREATED", "SIZE", &w, o);
	for (size_t i = 0; i < l->n_rows; i++)
		print_store_row(&l->rows[i], &w, o, now);
	for (size_t i = 0; i < n_dirs; i++) {
		char created[64], size[32];
		_cleanup_free_ char *name = lb_escape_ctl(dirs[i].name);
		cli_human_ago(dirs[i].created, now, created, sizeof(created));
		cli_human_size(dir_size(dirs[i].path), size, sizeof(size));
		print_row(name ? name : "?", "<dir>", "-", "-", created, size, &w, o);
	}
}

static json_t *store_image_json(const struct listing *l, const struct cli_image *img)
{
	json_t *names = json_array();
	for (size_t i = 0; i < l->n_entries; i++)
		if (l->entries[i].name && !strcmp(l->entries[i].digest, img->digest))
			json_array_append_new(names, json_string(l->entries[i].name));
	char created[32] = "";
	if (img->created)
		strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime(&img->created));
	return json_pack("{s:s, s:s, s:o, s:O, s:I, s:s?, s:o}", "Id", img->id + strlen("sha256:"),
			 "Digest", img->digest, "RepoTags", names, "Names", names, "Created",
			 (json_int_t)img->created, "CreatedAt", *created ? created : NULL, "Size",
			 img->size_known ? json_integer((json_int_t)img->size) : json_null());
}

static void print_json(const struct listing *l, const struct dir_image *dirs, size_t n_dirs)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < l->n_imgs; i++)
		json_array_append_new(arr, store_image_json(l, &l->imgs[i]));
	for (size_t i = 0; i < n_dirs; i++)
		json_array_append_new(arr, json_pack("{s:[s], s:[], s:s, s:I, s:I}", "Names",
						     dirs[i].name, "RepoTags", "Dir", dirs[i].path,
						     "Created", (json_int_t)dirs[i].created, "Size",
						     (json_int_t)dir_size(dirs[i].path)));
	char *text = json_dumps(arr, JSON_INDENT(4));
	if (text)
		printf("%s\n", text);
	free(text);
	json_decref(arr);
}

static const char images_usage[] =
    "usage: lbbox images [-q] [--digests] [--no-trunc] [--json]   (also: lbbox image ls)\n"
    "\n"
    "Lists the images: REPOSITORY, TAG, IMAGE ID (the first 12 hex digits of the image's config\n"
    "digest, as podman; any unique prefix of 3 or more digits names the image), CREATED and SIZE\n"
    "(its layers uncompressed, in podman's decimal units). Directory images (ROOT/images/NAME/rootfs,\n"
    "run with --image NAME) are listed after them with the TAG <dir> and no ID.\n"
    "\n"
    "  -q, --quiet    image IDs only, one per image (directory images have none)\n"
    "  --digests      add the DIGEST column (the manifest digest, for NAME@DIGEST)\n"
    "  --no-trunc     full image IDs\n"
    "  --json         a JSON array, one object per image\n";

static int parse_opts(int argc, char **argv, struct list_opts *o, struct lb_err **err)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			o->quiet = true;
		else if (!strcmp(a, "--digests"))
			o->digests = true;
		else if (!strcmp(a, "--no-trunc"))
			o->no_trunc = true;
		else if (!strcmp(a, "--json") || !strcmp(a, "--format=json"))
			o->json = true;
		else if (!strcmp(a, "-a") || !strcmp(a, "--all"))
			continue; /* there are no intermediate images to hide */
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(images_usage, stdout);
			return 1;
		} else
			return lb_err_set(err, 0,
					  "images: unknown %s '%s' (see lbbox images --help)",
					  a[0] == '-' ? "option" : "argument", a);
	}
	return 0;
}

int cli_images_list(struct cli_globals *g, int argc, char **argv, struct lb_err **err)
{
	struct list_opts o = {0};
	struct listing l = {0};
	struct lb_store *s = NULL;
	_cleanup_free_ struct dir_image *dirs = calloc(MAX_DIR_IMAGES, sizeof(*dirs));
	int r = parse_opts(argc, argv, &o, err);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (!dirs)
		return lb_err_set(err, ENOMEM, "images");
	if (lb_store_open_existing(g->paths.root, &s, NULL) == 0) {
		r = listing_read(s, &l, err);
		if (r == 0 && !o.quiet)
			r = cli_image_sizes(g, s, l.imgs, l.n_imgs, err);
	}
	size_t n_dirs = r == 0 && !o.quiet ? dir_images(g->paths.root, dirs, MAX_DIR_IMAGES) : 0;
	if (l.n_rows)
		qsort(l.rows, l.n_rows, sizeof(*l.rows), row_cmp);
	if (r == 0 && o.quiet)
		print_quiet(&l, o.no_trunc);
	else if (r == 0 && o.json)
		print_json(&l, dirs, n_dirs);
	else if (r == 0)
		print_table(&l, dirs, n_dirs, &o);
	listing_clear(&l);
	lb_store_close(s);
	return r;
}
