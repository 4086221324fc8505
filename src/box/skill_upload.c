/*
 * Zip uploads of skills (§6.6): the archive is unpacked into a private temporary directory
 * (skill_zip.c), its packages found to depth 2 below the archive's root (its one top directory
 * when it has only that, or source_subdir), and previewed with the directory each would get in
 * the store (<filename stem>[-<leaf>][-<target_suffix>]), or copied there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/text.h"
#include "skill_internal.h"
#include "skill_zip.h"
#include "text_internal.h"

struct staged {
	char dir[LB_PATH_BUF]; /* the temporary directory; "extracted" in it holds the archive */
	int fd;
	char *root; /* the archive's root, relative to fd */
};

static void unstage(struct staged *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->dir[0])
		lb_rm_rf(s->dir, NULL);
	free(s->root);
}

/* "extracted/<top>" when the archive holds one directory and nothing else. */
static int archive_root(struct staged *s, struct lb_err **err)
{
	_cleanup_close_ int fd = skill_openat(s->fd, "extracted", O_RDONLY | O_DIRECTORY, 0);
	int dup_fd = fd >= 0 ? dup(fd) : -1;
	_cleanup_closedir_ DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *e;
	char top[256] = "";
	size_t n = 0;
	struct stat st;
	if (!d)
		return lb_err_set(err, errno, "unzip");
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && n++ == 0)
			snprintf(top, sizeof(top), "%s", e->d_name);
	bool one_dir =
	    n == 1 && fstatat(fd, top, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
	if (one_dir ? asprintf(&s->root, "extracted/%s", top) < 0
		    : !(s->root = strdup("extracted")))
		return lb_err_set(err, ENOMEM, "unzip");
	return 0;
}

static int apply_subdir(struct staged *s, json_t *opts, struct lb_err **err)
{
	_cleanup_free_ char *raw = NULL, *sub = NULL, *norm = NULL, *joined = NULL;
	if (lb_skill_text(json_object_get(opts, "source_subdir"), "source_subdir", &raw, err) < 0)
		return -1;
	if (!(sub = skill_norm_source(raw ? raw : "")))
		return lb_err_set(err, ENOMEM, "source_subdir");
	if (!*sub)
		return 0;
	if (!(norm = skill_normpath(sub)))
		return lb_err_set(err, ENOMEM, "source_subdir");
	if (!strncmp(norm, "..", 2))
		return lb_err_set(err, 0, "source_subdir must stay within the uploaded archive");
	if (asprintf(&joined, "%s/%s", s->root, norm) < 0)
		return lb_err_set(err, ENOMEM, "source_subdir");
	_cleanup_close_ int fd = skill_openat(s->fd, joined, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return lb_err_set(err, 0,
				  "source_subdir does not exist in the uploaded archive: %s", sub);
	free(s->root);
	s->root = joined;
	joined = NULL;
	return 0;
}

static int stage(int zipfd, json_t *opts, struct staged *s, struct lb_err **err)
{
	const char *tmp = getenv("TMPDIR");
	*s = (struct staged){.fd = -1};
	snprintf(s->dir, sizeof(s->dir), "%s/lbbox-skill-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir)) {
		s->dir[0] = '\0';
		return lb_err_set(err, errno, "temporary directory");
	}
	s->fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->fd < 0 || mkdirat(s->fd, "extracted", 0700) < 0)
		return lb_err_set(err, errno, "temporary directory");
	_cleanup_close_ int ex = skill_openat(s->fd, "extracted", O_RDONLY | O_DIRECTORY, 0);
	if (ex < 0)
		return lb_err_set(err, errno, "temporary directory");
	if (skill_unzip(zipfd, ex, err) < 0 || archive_root(s, err) < 0)
		return -1;
	return apply_subdir(s, opts, err);
}

/* The upload's file name as a directory name: its stem, other characters as '-'. */
static char *target_stem(json_t *opts)
{
	json_t *v = json_object_get(opts, "filename");
	_cleanup_free_ char *raw = NULL, *name = NULL;
	if (lb_skill_text(v, "filename", &raw, NULL) < 0)
		return strdup("uploaded-skill");
	if (!(name = lb_box_py_strip_dup(!v ? "skill.zip" : raw ? raw : "")))
		return NULL;
	char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	char *dot = strrchr(base, '.');
	if (dot && dot > base + strspn(base, "."))
		*dot = '\0'; /* os.path.splitext: a leading dot starts no extension */
	size_t len = strlen(base), pos = 0, w = 0;
	char *out = malloc(len + 1);
	while (out && pos < len) {
		size_t start = pos;
		uint32_t cp = lb_box_utf8_next(base, len, &pos);
		if (lb_box_py_isalnum(cp) || cp == '-' || cp == '_') {
			memcpy(out + w, base + start, pos - start);
			w += pos - start;
		} else
			out[w++] = '-';
	}
	if (!out)
		return NULL;
	out[w] = '\0';
	size_t lead = strspn(out, "-_");
	while (w > lead && strchr("-_", out[w - 1]))
		out[--w] = '\0';
	memmove(out, out + lead, w - lead + 1);
	if (!*out) {
		free(out);
		return strdup("uploaded-skill");
	}
	return out;
}

/* <stem>[-<leaf of source_path>][-<suffix>]: one directory name in the store. */
static int target_name(const char *stem, const char *source, json_t *opts, char **out,
		       struct lb_err **err)
{
	json_t *v = json_object_get(opts, "target_suffix");
	_cleanup_free_ char *suffix = NULL;
	if (!v)
		suffix = strdup("upload");
	else if (lb_skill_text(v, "target_suffix", &suffix, err) < 0)
		return -1;
	const char *leaf = strrchr(source, '/') ? strrchr(source, '/') + 1 : source;
	bool add_leaf = *leaf && strcmp(leaf, stem);
	if (asprintf(out, "%s%s%s%s%s", stem, add_leaf ? "-" : "", add_leaf ? leaf : "",
		     suffix && *suffix ? "-" : "", suffix && *suffix ? suffix : "") < 0)
		return lb_err_set(err, ENOMEM, "target");
	if (strchr(*out, '/') || !strcmp(*out, "..") || !strcmp(*out, "."))
		return lb_err_set(err, 0, "target_suffix must not make a path: %s", *out);
	return 0;
}

static int cmp_source(const void *a, const void *b)
{
	json_t *const *x = a, *const *y = b;
	return strcmp(json_string_value(json_object_get(*x, "source_path")),
		      json_string_value(json_object_get(*y, "source_path")));
}

/* One package of the archive as previewed: its skill, package_root its directory to be. */
static int preview_one(struct lb_skill_store *st, struct staged *s, const struct skill_found *f,
		       const char *stem, json_t *opts, json_t **out, struct lb_err **err)
{
	size_t n = strlen(s->root);
	const char *source = !strcmp(f->rel, s->root) ? "" : f->rel + n + 1;
	_cleanup_free_ char *target = NULL, *root = NULL;
	if (skill_load(s->fd, s->dir, f->rel, f->entry, out, err) < 0 ||
	    target_name(stem, source, opts, &target, err) < 0 ||
	    asprintf(&root, "%s/%s", st->root, target) < 0)
		return -1;
	json_object_set_new(*out, "package_root", json_string(root));
	json_object_set_new(*out, "source_path", json_string(source));
	return 0;
}

static int previews(struct lb_skill_store *st, struct staged *s, json_t *opts, json_t **out,
		    struct lb_err **err)
{
	struct skill_found *f = NULL;
	size_t n = 0;
	_cleanup_free_ char *stem = target_stem(opts);
	if (!stem || skill_discover(s->fd, s->root, 2, false, &f, &n, err) < 0)
		return stem ? -1 : lb_err_set(err, ENOMEM, "preview");
	if (!n)
		return lb_err_set(err, 0,
				  "No SKILL.md found in the uploaded archive or its subdirectories "
				  "(max depth: 2)");
	_cleanup_free_ json_t **v = calloc(n, sizeof(*v));
	int r = v ? 0 : lb_err_set(err, ENOMEM, "preview");
	size_t made = 0;
	for (; r == 0 && made < n; made++)
		r = preview_one(st, s, &f[made], stem, opts, &v[made], err);
	skill_found_free(f, n);
	if (r == 0)
		qsort(v, n, sizeof(*v), cmp_source);
	*out = r == 0 ? json_array() : NULL;
	for (size_t i = 0; v && i < made; i++) {
		if (*out && v[i])
			json_array_append(*out, v[i]);
		json_decref(v[i]);
	}
	return r;
}

int lb_skill_zip_preview(struct lb_skill_store *st, int zipfd, json_t *opts, json_t **out,
			 struct lb_err **err)
{
	struct staged s;
	json_t *list = NULL;
	int r = stage(zipfd, opts, &s, err) < 0 || previews(st, &s, opts, &list, err) < 0 ? -1 : 0;
	unstage(&s);
	if (r == 0)
		*out = json_pack("{s:o}", "skills", list);
	return r;
}

/* v normalised into want, unless it is there already (or empty, and skip_empty). */
static void want_path(json_t *want, const json_t *v, bool skip_empty)
{
	_cleanup_free_ char *raw = NULL, *norm = NULL;
	size_t i;
	json_t *w;
	if (lb_skill_text(v, "source_path", &raw, NULL) < 0 ||
	    !(norm = skill_norm_source(raw ? raw : "")) || (skip_empty && !*norm))
		return;
	json_array_foreach(want, i, w)
	{
		if (!strcmp(json_string_value(w), norm))
			return;
	}
	json_array_append_new(want, json_string(norm));
}

/* source_paths (and the older source_path, when not empty), normalised, each once. */
static json_t *wanted_paths(json_t *opts)
{
	json_t *want = json_array(), *v, *paths = json_object_get(opts, "source_paths");
	size_t i;
	if (json_is_array(paths))
		json_array_foreach(paths, i, v) want_path(want, v, false);
	want_path(want, json_object_get(opts, "source_path"), true);
	return want;
}

/* A comma-separated list of the previews' source paths ("." for the root). */
static void candidates(json_t *list, char *buf, size_t len)
{
	size_t i, n = 0;
	json_t *v;
	buf[0] = '\0';
	json_array_foreach(list, i, v)
	{
		const char *p = json_string_value(json_object_get(v, "source_path"));
		if (n < len)
			n +=
			    (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", *p ? p : ".");
	}
}

/* The preview whose source_path is path, or NULL. */
static json_t *by_source(json_t *list, const char *path)
{
	size_t i;
	json_t *p;
	json_array_foreach(list, i, p)
	{
		if (!strcmp(json_string_value(json_object_get(p, "source_path")), path))
			return p;
	}
	return NULL;
}

static int select_previews(json_t *list, json_t *opts, json_t **out, struct lb_err **err)
{
	json_t *want = wanted_paths(opts), *w;
	char names[4096];
	size_t i;
	candidates(list, names, sizeof(names));
	if (!json_array_size(want)) {
		json_decref(want);
		if (json_array_size(list) == 1)
			return *out = json_incref(list), 0;
		return lb_err_set(
		    err, 0, "Multiple skills found. Please choose one or more source_paths: %s",
		    names);
	}
	*out = json_array();
	json_array_foreach(want, i, w)
	{
		json_t *hit = by_source(list, json_string_value(w));
		if (!hit) {
			lb_err_set(err, 0, "Invalid source_path \"%s\". Available: %s",
				   json_string_value(w), names);
			json_decref(want);
			json_decref(*out);
			*out = NULL;
			return -1;
		}
		json_array_append(*out, hit);
	}
	json_decref(want);
	return 0;
}

static const char *target_of(struct lb_skill_store *st, json_t *preview)
{
	return skill_rel_of(st, json_string_value(json_object_get(preview, "package_root")));
}

/* An earlier choice than chosen[i] goes to the same directory. */
static bool target_repeats(struct lb_skill_store *st, json_t *chosen, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(target_of(st, json_array_get(chosen, j)),
			    target_of(st, json_array_get(chosen, i))))
			return true;
	return false;
}

static int check_targets(struct lb_skill_store *st, json_t *chosen, struct lb_err **err)
{
	size_t i;
	json_t *p;
	struct stat s;
	json_array_foreach(chosen, i, p)
	{
		const char *root = json_string_value(json_object_get(p, "package_root"));
		if (target_repeats(st, chosen, i))
			return lb_err_set(err, 0, "Duplicate target directory selected: %s", root);
		if (fstatat(st->fd, target_of(st, p), &s, AT_SYMLINK_NOFOLLOW) == 0 ||
		    errno != ENOENT)
			return lb_err_set(err, 0, "Skill directory already exists: %s", root);
	}
	return 0;
}

/* Copies the chosen packages into the store; all or none: a failure removes the directories
 * this call made, and only those (one that appeared since check_targets is someone else's). */
static int copy_in(struct lb_skill_store *st, struct staged *s, json_t *chosen, json_t **out,
		   struct lb_err **err)
{
	size_t i, n = json_array_size(chosen);
	json_t *p;
	_cleanup_free_ bool *made = calloc(n ? n : 1, sizeof(bool));
	int r = made ? check_targets(st, chosen, err) : lb_err_set(err, ENOMEM, "install");
	*out = json_array();
	json_array_foreach(chosen, i, p)
	{
		const char *src = json_string_value(json_object_get(p, "source_path"));
		_cleanup_free_ char *from = NULL;
		json_t *skill = NULL;
		if (r < 0)
			break;
		if (asprintf(&from, "%s%s%s", s->root, *src ? "/" : "", src) < 0)
			r = lb_err_set(err, ENOMEM, "install");
		else
			r = skill_copytree(s->fd, from, st->fd, target_of(st, p), &made[i], err);
		if (r == 0)
			r = lb_skill_scan(st, json_string_value(json_object_get(p, "package_root")),
					  &skill, err);
		if (r == 0)
			json_array_append_new(*out, skill);
	}
	if (r < 0) {
		for (i = 0; made && i < n; i++)
			if (made[i])
				skill_rmtree(st->fd, target_of(st, json_array_get(chosen, i)),
					     NULL);
		json_decref(*out);
		*out = NULL;
	}
	return r;
}

/* Each installed skill as the store lists it (or as scanned, when its name repeats one). */
static json_t *as_listed(struct lb_skill_store *st, json_t *scanned)
{
	json_t *out = json_array(), *v;
	size_t i;
	json_array_foreach(scanned, i, v)
	{
		json_t *found = NULL;
		struct lb_err *e = NULL;
		skill_find(st, json_string_value(json_object_get(v, "name")), &found, &e);
		lb_err_free(&e);
		json_array_append_new(out, found ? found : json_incref(v));
	}
	return out;
}

int lb_skill_zip_install(struct lb_skill_store *st, int zipfd, json_t *opts, json_t **out,
			 struct lb_err **err)
{
	struct staged s;
	json_t *list = NULL, *chosen = NULL, *scanned = NULL;
	int r = stage(zipfd, opts, &s, err) < 0 || previews(st, &s, opts, &list, err) < 0 ||
			select_previews(list, opts, &chosen, err) < 0 ||
			copy_in(st, &s, chosen, &scanned, err) < 0
		    ? -1
		    : 0;
	unstage(&s);
	if (r == 0)
		*out = json_pack("{s:o}", "skills", as_listed(st, scanned));
	json_decref(list);
	json_decref(chosen);
	json_decref(scanned);
	return r;
}
