/*
 * LangBot Box's skill store (§6.6): skill packages (a directory with SKILL.md) under
 * <host_root>/<skills_root>, one tree per Workspace (tenants/<box_namespace>, §6.7). Skills are
 * JSON objects in LangBot's shape: name, display_name, description, instructions, package_root,
 * entry_file, python_project, created_at, updated_at. Every failure is a BoxValidationError.
 *
 * The tree is writable by the skills' own authors (files, zip uploads), so nothing here follows
 * a symbolic link: every path is opened beneath the store's directory descriptor with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, and paths a request names must lie under the store.
 */
#ifndef LBBOX_BOX_SKILL_H
#define LBBOX_BOX_SKILL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lbbox/base/err.h"
#include "lbbox/base/util.h"

#define LB_SKILL_TEXT_MAX (1024 * 1024) /* SKILL.md and the files read or written */

struct lb_skill_store {
	char root[LB_PATH_BUF]; /* canonical */
	int fd;			/* O_PATH directory descriptor of root */
	int lock;		/* flock()ed: one operation on a store at a time */
	/* The whole store (a caller without a context): tenants/ below it holds the Workspaces'
	 * stores, which are not its skills. */
	bool legacy;
};

/* The canonical path of that store (created or not). */
int lb_skill_store_path(const char *host_root, const char *skills_root, const char *ns, char *out,
			size_t len, struct lb_err **err);
/* The store of host_root (default "./data/box") / skills_root (default "skills"), relative ones
 * against the working directory; ns (may be NULL: the legacy protocol) adds tenants/<ns>. The
 * directory is created when missing and locked until lb_skill_store_close. */
int lb_skill_store_open(const char *host_root, const char *skills_root, const char *ns,
			struct lb_skill_store *st, struct lb_err **err);
void lb_skill_store_close(struct lb_skill_store *st);

/* {"skills": [...]}: every package to depth 6, newest SKILL.md first. */
int lb_skill_list(struct lb_skill_store *st, json_t **out, struct lb_err **err);
/* The skill called name, or JSON null. */
int lb_skill_get(struct lb_skill_store *st, const char *name, json_t **out, struct lb_err **err);
/* data: {name, display_name?, description?, instructions?, package_root?}. */
int lb_skill_create(struct lb_skill_store *st, json_t *data, json_t **out, struct lb_err **err);
/* Rewrites SKILL.md; a rename or another package_root is refused. */
int lb_skill_update(struct lb_skill_store *st, const char *name, json_t *data, json_t **out,
		    struct lb_err **err);
/* Removes the skill's top directory under the store (nothing outside it). */
int lb_skill_delete(struct lb_skill_store *st, const char *name, struct lb_err **err);
/* The one package at path or up to 2 levels below it (path inside the store). */
int lb_skill_scan(struct lb_skill_store *st, const char *path, json_t **out, struct lb_err **err);
/* The package directory of a skill, for a read-only mount (malloc'ed, canonical). */
int lb_skill_package_root(struct lb_skill_store *st, const char *name, char **out,
			  struct lb_err **err);

/* Files of a skill: a directory listing, a read, a write (paths relative to the package). */
int lb_skill_list_files(struct lb_skill_store *st, const char *name, const char *path,
			bool include_hidden, int64_t max_entries, json_t **out,
			struct lb_err **err);
int lb_skill_read_file(struct lb_skill_store *st, const char *name, const char *path, json_t **out,
		       struct lb_err **err);
int lb_skill_write_file(struct lb_skill_store *st, const char *name, const char *path,
			const char *content, size_t len, json_t **out, struct lb_err **err);

/* A zip upload (zipfd, read from its start): the skills it holds, or those installed.
 * opts: {filename, source_subdir, target_suffix[, source_paths, source_path]}. */
int lb_skill_zip_preview(struct lb_skill_store *st, int zipfd, json_t *opts, json_t **out,
			 struct lb_err **err);
int lb_skill_zip_install(struct lb_skill_store *st, int zipfd, json_t *opts, json_t **out,
			 struct lb_err **err);

/* Pure rules, exposed for the unit tests. */
/* SKILL.md's optional front matter: name, display_name, description between "---" lines
 * (YAML; NULL when absent or not a string-like scalar) and the instructions after it. */
struct lb_skill_meta {
	char *name, *display_name, *description;
	char *instructions;
};
int lb_skill_meta_parse(const char *text, size_t len, struct lb_skill_meta *out,
			struct lb_err **err);
void lb_skill_meta_free(struct lb_skill_meta *m);
/* SKILL.md's text for these fields (NULL or blank ones left out) and instructions. */
int lb_skill_meta_build(const struct lb_skill_meta *m, char **out, struct lb_err **err);
/* A JSON value as Python's str() gives it for a string-like value: strings as they are, null
 * (or absent) as NULL, numbers and booleans spelled out; objects and arrays refused. */
int lb_skill_text(const json_t *v, const char *what, char **out, struct lb_err **err);
/* A skill name stripped and checked (letters, digits, '-', '_'; at most 64 characters). */
int lb_skill_name_check(const char *raw, char **out, struct lb_err **err);

#endif
