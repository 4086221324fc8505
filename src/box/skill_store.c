/*
 * The skill store (§6.6): where it is, and the skill catalogue actions (list, get, create,
 * update, delete, scan) with LangBot's rules and messages. A store is one directory per
 * Workspace; every path a request names must lie in it (a shared runtime serves Workspaces that
 * do not trust each other, and the legacy protocol gets the same rule for its one store).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/text.h"
#include "skill_internal.h"

int lb_skill_store_open(const char *host_root, const char *skills_root, const char *ns,
			struct lb_skill_store *st, struct lb_err **err)
{
	*st = (struct lb_skill_store){.fd = -1, .lock = -1, .legacy = !ns};
	if (lb_skill_store_path(host_root, skills_root, ns, st->root, sizeof(st->root), err) < 0 ||
	    lb_mkdir_nofollow(st->root, 0755, err) < 0)
		return -1;
	st->fd = open(st->root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	st->lock = open(st->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (st->fd < 0 || st->lock < 0 || flock(st->lock, LOCK_EX) < 0) {
		lb_err_set(err, errno, "skill store %s", st->root);
		lb_skill_store_close(st);
		return -1;
	}
	return 0;
}

void lb_skill_store_close(struct lb_skill_store *st)
{
	if (st->fd >= 0)
		close(st->fd);
	if (st->lock >= 0)
		close(st->lock);
	st->fd = st->lock = -1;
}

const char *skill_rel_of(const struct lb_skill_store *st, const char *canonical)
{
	size_t n = strlen(st->root);
	if (strncmp(canonical, st->root, n))
		return NULL;
	if (!canonical[n])
		return ".";
	if (canonical[n] != '/')
		return NULL;
	const char *rel = canonical + n + 1;
	/* the legacy store does not reach into the Workspaces' stores */
	if (st->legacy && !strncmp(rel, "tenants", 7) && (!rel[7] || rel[7] == '/'))
		return NULL;
	return rel;
}

int skill_scoped(const struct lb_skill_store *st, const char *path, const char *label,
		 char **canonical, struct lb_err **err)
{
	char cwd[LB_PATH_BUF], abs[LB_PATH_BUF];
	_cleanup_free_ char *p = lb_box_py_strip_dup(path ? path : "");
	struct lb_err *e = NULL;
	if (!p || !getcwd(cwd, sizeof(cwd)))
		return lb_err_set(err, errno ? errno : ENOMEM, "%s", label);
	if (!*p || skill_joined(cwd, p, abs, sizeof(abs)) < 0 ||
	    lb_path_resolve_missing(abs, canonical, &e) < 0 || !skill_rel_of(st, *canonical)) {
		lb_err_free(&e);
		free(*canonical);
		*canonical = NULL;
		return lb_err_set(err, 0, "%s must stay within the Workspace skill root", label);
	}
	return 0;
}

static int cmp_updated(const void *a, const void *b)
{
	json_t *const *x = a, *const *y = b;
	const char *ux = json_string_value(json_object_get(*x, "updated_at"));
	const char *uy = json_string_value(json_object_get(*y, "updated_at"));
	int c = strcmp(uy, ux);
	/* stable, as Python's sort: discovery order breaks ties */
	return c ? c
		 : (int)(json_integer_value(json_object_get(*x, "_i")) -
			 json_integer_value(json_object_get(*y, "_i")));
}

static size_t text_bytes(json_t *skill)
{
	const char *k;
	json_t *v;
	size_t n = 0;
	json_object_foreach(skill, k, v)
	{
		if (json_is_string(v))
			n += json_string_length(v);
	}
	return n;
}

int skill_all(struct lb_skill_store *st, json_t **out, struct lb_err **err)
{
	struct skill_found *found = NULL;
	size_t n = 0, kept = 0, bytes = 0;
	if (skill_discover(st->fd, ".", 6, st->legacy, &found, &n, err) < 0)
		return -1;
	_cleanup_free_ json_t **v = calloc(n ? n : 1, sizeof(*v));
	int r = v ? 0 : lb_err_set(err, ENOMEM, "skills");
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct lb_err *e = NULL;
		json_t *s = NULL;
		if (skill_load(st->fd, st->root, found[i].rel, found[i].entry, &s, &e) < 0) {
			lb_err_free(&e); /* a package that does not load is not listed */
			continue;
		}
		if ((bytes += text_bytes(s)) > SKILL_MAX_LIST_TEXT)
			r = lb_err_set(err, 0, "Skill listing exceeds the configured text limit");
		json_object_set_new(s, "_i", json_integer((json_int_t)i));
		v[kept++] = s;
	}
	skill_found_free(found, n);
	qsort(v, kept, sizeof(*v), cmp_updated);
	*out = r == 0 ? json_array() : NULL;
	for (size_t i = 0; i < kept; i++) {
		json_object_del(v[i], "_i");
		if (*out)
			json_array_append(*out, v[i]);
		json_decref(v[i]);
	}
	return r;
}

int skill_find(struct lb_skill_store *st, const char *name, json_t **out, struct lb_err **err)
{
	json_t *all, *s;
	size_t i;
	*out = NULL;
	if (skill_all(st, &all, err) < 0)
		return -1;
	json_array_foreach(all, i, s)
	{
		if (!strcmp(json_string_value(json_object_get(s, "name")), name)) {
			*out = json_incref(s);
			break;
		}
	}
	json_decref(all);
	return 0;
}

int lb_skill_list(struct lb_skill_store *st, json_t **out, struct lb_err **err)
{
	json_t *all;
	if (skill_all(st, &all, err) < 0)
		return -1;
	*out = json_pack("{s:o}", "skills", all);
	return 0;
}

int lb_skill_get(struct lb_skill_store *st, const char *name, json_t **out, struct lb_err **err)
{
	json_t *s;
	if (skill_find(st, name, &s, err) < 0)
		return -1;
	*out = json_pack("{s:o}", "skill", s ? s : json_null());
	return 0;
}

/* The skill called name, or 'Skill "name" not found'. */
static int require(struct lb_skill_store *st, const char *name, json_t **out, struct lb_err **err)
{
	if (skill_find(st, name, out, err) < 0)
		return -1;
	return *out ? 0 : lb_err_set(err, 0, "Skill \"%s\" not found", name);
}

/* The package directory of a skill, relative to the store. */
static const char *package_rel(const struct lb_skill_store *st, json_t *skill)
{
	return skill_rel_of(st, json_string_value(json_object_get(skill, "package_root")));
}

/* text into a new file in the package's directory, renamed over SKILL.md: whatever a sandbox
 * left there under that name (a FIFO would block an open for writing forever, holding the
 * store's lock) is replaced, never opened. */
static int replace_md(int pkg, const char *rel, const char *text, struct lb_err **err)
{
	char tmp[32] = ".SKILL.md.";
	if (lb_random_hex(tmp + 10, 16, err) < 0)
		return -1;
	_cleanup_close_ int fd =
	    skill_openat(pkg, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	if (fd < 0)
		return lb_err_set(err, errno, "write %s/SKILL.md", rel);
	if (lb_write_all(fd, text, strlen(text)) < 0 || renameat(pkg, tmp, pkg, "SKILL.md") < 0) {
		int e = errno;
		unlinkat(pkg, tmp, 0);
		return lb_err_set(err, e, "write %s/SKILL.md", rel);
	}
	return 0;
}

int skill_write_md(struct lb_skill_store *st, const char *rel, const struct lb_skill_meta *m,
		   struct lb_err **err)
{
	_cleanup_free_ char *text = NULL;
	if (lb_skill_meta_build(m, &text, err) < 0 || skill_mkdirs(st->fd, rel, NULL, err) < 0)
		return -1;
	_cleanup_close_ int pkg = skill_openat(st->fd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (pkg < 0)
		return lb_err_set(err, errno, "open %s", rel);
	return replace_md(pkg, rel, text, err);
}

/* The top directory under the store holding a package: what delete may remove. NULL for the
 * store itself. */
static char *managed_top(const char *rel)
{
	if (!rel || !strcmp(rel, "."))
		return NULL;
	return strndup(rel, strcspn(rel, "/"));
}

/* _resolve_create_field: the request's value, else the imported package's, else "". */
static int create_field(json_t *data, const char *key, json_t *imported, char **out,
			struct lb_err **err)
{
	json_t *v = json_object_get(data, key);
	const char *from = json_string_value(json_object_get(imported, key));
	if (lb_skill_text(v, key, out, err) < 0)
		return -1;
	if (!*out || (imported && lb_skill_is_blank(*out))) {
		free(*out);
		*out = strdup(imported && from ? from : "");
	}
	return *out ? 0 : lb_err_set(err, ENOMEM, "%s", key);
}

/* Where a new skill goes: its managed directory, or an existing package in the store. */
static int create_target(struct lb_skill_store *st, const char *name, json_t *data, char **rel,
			 json_t **imported, struct lb_err **err)
{
	_cleanup_free_ char *pr = NULL, *canonical = NULL;
	struct stat s;
	if (lb_skill_text(json_object_get(data, "package_root"), "package_root", &pr, err) < 0)
		return -1;
	if ((!pr || lb_skill_is_blank(pr)) && st->legacy && !strcmp(name, "tenants"))
		return lb_err_set(err, 0,
				  "Skill name tenants is reserved for the Workspace stores");
	if (!pr || lb_skill_is_blank(pr))
		return (*rel = strdup(name)) ? 0 : lb_err_set(err, ENOMEM, "skill");
	if (skill_scoped(st, pr, "package_root", &canonical, err) < 0)
		return -1;
	const char *r = skill_rel_of(st, canonical);
	if (!strcmp(r, "."))
		return lb_err_set(err, 0, "package_root must be a directory inside the skill root");
	_cleanup_close_ int fd = skill_openat(st->fd, r, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0 || fstat(fd, &s) < 0)
		return lb_err_set(err, 0, "Directory does not exist: %s", canonical);
	struct skill_found *f = NULL;
	size_t n = 0;
	if (skill_discover(st->fd, r, 0, false, &f, &n, err) < 0)
		return -1;
	int ret = n ? skill_load(st->fd, st->root, r, f[0].entry, imported, err)
		    : lb_err_set(err, 0, "No SKILL.md found in %s", canonical);
	skill_found_free(f, n);
	if (ret == 0 && !(*rel = strdup(r)))
		ret = lb_err_set(err, ENOMEM, "skill");
	return ret;
}

int lb_skill_create(struct lb_skill_store *st, json_t *data, json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *raw = NULL, *name = NULL, *rel = NULL;
	struct lb_skill_meta m = {0};
	json_t *imported = NULL, *existing = NULL;
	if (!json_is_object(data))
		return lb_err_set(err, 0, "skill must be an object");
	if (lb_skill_text(json_object_get(data, "name"), "name", &raw, err) < 0 ||
	    lb_skill_name_check(raw, &name, err) < 0 || skill_find(st, name, &existing, err) < 0)
		return -1;
	if (existing) {
		json_decref(existing);
		return lb_err_set(err, 0, "Skill with name \"%s\" already exists", name);
	}
	if (create_target(st, name, data, &rel, &imported, err) < 0)
		return -1;
	int r = 0;
	m.name = strdup(name);
	if (create_field(data, "display_name", imported, &m.display_name, err) < 0 ||
	    create_field(data, "description", imported, &m.description, err) < 0 ||
	    create_field(data, "instructions", imported, &m.instructions, err) < 0 ||
	    skill_write_md(st, rel, &m, err) < 0 || skill_find(st, name, out, err) < 0)
		r = -1;
	else if (!*out)
		r = lb_err_set(err, 0, "Failed to create skill \"%s\"", name);
	lb_skill_meta_free(&m);
	json_decref(imported);
	return r;
}

/* data[key] when present (a string-like value), else the skill's own. */
static int update_field(json_t *data, json_t *skill, const char *key, char **out,
			struct lb_err **err)
{
	json_t *v = json_object_get(data, key);
	return lb_skill_text(v ? v : json_object_get(skill, key), key, out, err);
}

static int check_unchanged(struct lb_skill_store *st, json_t *skill, json_t *data,
			   struct lb_err **err)
{
	_cleanup_free_ char *req_name = NULL, *name = NULL, *pr = NULL, *canonical = NULL;
	const char *own = json_string_value(json_object_get(skill, "name"));
	if (lb_skill_text(json_object_get(data, "name"), "name", &req_name, err) < 0 ||
	    lb_skill_text(json_object_get(data, "package_root"), "package_root", &pr, err) < 0)
		return -1;
	name = lb_box_py_strip_dup(req_name && *req_name ? req_name : own);
	if (!name || strcmp(name, own))
		return lb_err_set(err, 0, "Renaming skills is not supported");
	if (!pr || lb_skill_is_blank(pr))
		return 0;
	struct lb_err *e = NULL;
	bool same = skill_scoped(st, pr, "package_root", &canonical, &e) == 0 &&
		    !strcmp(canonical, json_string_value(json_object_get(skill, "package_root")));
	lb_err_free(&e);
	return same ? 0
		    : lb_err_set(err, 0,
				 "Updating package_root is not supported; recreate the skill to "
				 "import a different package");
}

int lb_skill_update(struct lb_skill_store *st, const char *name, json_t *data, json_t **out,
		    struct lb_err **err)
{
	json_t *skill = NULL;
	struct lb_skill_meta m = {0};
	if (!json_is_object(data))
		return lb_err_set(err, 0, "skill must be an object");
	if (require(st, name, &skill, err) < 0)
		return -1;
	int r = check_unchanged(st, skill, data, err);
	if (r == 0 && (!(m.name = strdup(json_string_value(json_object_get(skill, "name")))) ||
		       update_field(data, skill, "display_name", &m.display_name, err) < 0 ||
		       update_field(data, skill, "description", &m.description, err) < 0 ||
		       update_field(data, skill, "instructions", &m.instructions, err) < 0 ||
		       skill_write_md(st, package_rel(st, skill), &m, err) < 0 ||
		       skill_find(st, name, out, err) < 0))
		r = -1;
	if (r == 0 && !*out)
		r = lb_err_set(err, 0, "Skill \"%s\" not found after update", name);
	lb_skill_meta_free(&m);
	json_decref(skill);
	return r;
}

int lb_skill_delete(struct lb_skill_store *st, const char *name, struct lb_err **err)
{
	json_t *skill = NULL;
	if (require(st, name, &skill, err) < 0)
		return -1;
	_cleanup_free_ char *top = managed_top(package_rel(st, skill));
	json_decref(skill);
	if (!top)
		return lb_err_set(err, 0,
				  "Only managed skills under the Box skills root can be deleted");
	return skill_rmtree(st->fd, top, err);
}

int lb_skill_scan(struct lb_skill_store *st, const char *path, json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *canonical = NULL;
	struct skill_found *f = NULL;
	size_t n = 0;
	if (skill_scoped(st, path, "scan path", &canonical, err) < 0)
		return -1;
	const char *rel = skill_rel_of(st, canonical);
	_cleanup_close_ int fd = skill_openat(st->fd, rel, O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return lb_err_set(err, 0, "Directory does not exist: %s", canonical);
	if (skill_discover(st->fd, rel, 2, st->legacy, &f, &n, err) < 0)
		return -1;
	int r = 0;
	if (!n)
		r = lb_err_set(err, 0,
			       "No SKILL.md found in %s or its subdirectories (max depth: 2)",
			       canonical);
	else if (n > 1) {
		char list[4096];
		size_t len = 0;
		for (size_t i = 0; i < n && len < sizeof(list); i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s/%s",
						i ? ", " : "", st->root,
						strcmp(f[i].rel, ".") ? f[i].rel : "");
		r = lb_err_set(err, 0,
			       "Multiple skill directories found in %s. Please choose a more "
			       "specific path: %s",
			       canonical, list);
	} else
		r = skill_load(st->fd, st->root, f[0].rel, f[0].entry, out, err);
	skill_found_free(f, n);
	return r;
}

int lb_skill_package_root(struct lb_skill_store *st, const char *name, char **out,
			  struct lb_err **err)
{
	json_t *skill = NULL;
	if (require(st, name, &skill, err) < 0)
		return -1;
	*out = strdup(json_string_value(json_object_get(skill, "package_root")));
	json_decref(skill);
	return *out ? 0 : lb_err_set(err, ENOMEM, "skill");
}
