/*
 * The eleven skill actions (§6.6) on the box layer's skill store, in this process
 * (lb_rpc_skills_local: lbbox-skill, the tests; the Box runtime runs them in lbbox-skill, see
 * skill_route.c): the caller's Workspace store
 * (tenants/<box_namespace>, §6.7; the store itself for a legacy caller without a context), one
 * operation on it at a time. As in the SDK, every failure is a BoxValidationError, except a
 * missing "name" in box_get_skill (KeyError). The zip actions read the upload the transport
 * handed over (req->upload_fd), which it has already removed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/skill.h"
#include "lbbox/rpc/rpc.h"
#include "actions.h"

int rpc_skill_store(const struct lb_rpc_runtime *rt, const struct lb_rpc_context *ctx,
		    struct lb_skill_store *st, struct lb_err **err)
{
	char ns[80];
	if (ctx)
		lb_rpc_namespace_of(ctx, ns, sizeof(ns));
	return lb_skill_store_open(rpc_config_local(rt, "host_root"),
				   rpc_config_local(rt, "skills_root"), ctx ? ns : NULL, st, err);
}

/* data[key] as text ('key' when missing: Python's KeyError text). */
static int field(json_t *data, const char *key, char **out, struct lb_err **err)
{
	json_t *v = json_object_get(data, key);
	if (!v)
		return lb_err_set(err, 0, "'%s'", key);
	if (lb_skill_text(v, key, out, err) < 0)
		return -1;
	return *out ? 0 : (*out = strdup("None")) ? 0 : lb_err_set(err, ENOMEM, "%s", key);
}

/* Python's bool(): null, false, 0, "", [] and {} are false. */
static bool truthy(const json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return false;
	if (json_is_number(v))
		return json_number_value(v) != 0;
	if (json_is_string(v))
		return json_string_length(v) > 0;
	if (json_is_array(v))
		return json_array_size(v) > 0;
	return !json_is_object(v) || json_object_size(v) > 0;
}

/* Python's int() of max_entries (default 200). */
static int int_of(const json_t *v, int64_t *out, struct lb_err **err)
{
	char *end;
	if (!v)
		return *out = 200, 0;
	if (json_is_boolean(v))
		return *out = json_is_true(v), 0;
	if (json_is_integer(v))
		return *out = json_integer_value(v), 0;
	if (json_is_real(v) && json_real_value(v) > -9e18 && json_real_value(v) < 9e18)
		return *out = (int64_t)json_real_value(v), 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		long long n = strtoll(s, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\n')
			end++;
		if (*s && end != s && !*end)
			return *out = n, 0;
		return lb_err_set(err, 0, "invalid literal for int() with base 10: '%s'", s);
	}
	return lb_err_set(err, 0, "max_entries must be a positive integer");
}

typedef int (*skill_fn)(struct lb_skill_store *st, json_t *data, int upload_fd, json_t **out,
			struct lb_err **err);

static int list_skills(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
		       struct lb_err **err)
{
	return lb_skill_list(st, out, err);
}

static int get_skill(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
		     struct lb_err **err)
{
	const char *name = json_string_value(json_object_get(data, "name"));
	if (!name) /* a name that is no string matches no skill */
		return *out = json_pack("{s:n}", "skill"), 0;
	return lb_skill_get(st, name, out, err);
}

static int create_skill(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			struct lb_err **err)
{
	json_t *skill = json_object_get(data, "skill");
	json_t *made = NULL;
	if (!skill)
		return lb_err_set(err, 0, "'skill'");
	if (lb_skill_create(st, skill, &made, err) < 0)
		return -1;
	*out = json_pack("{s:o}", "skill", made);
	return 0;
}

static int update_skill(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			struct lb_err **err)
{
	_cleanup_free_ char *name = NULL;
	json_t *skill = json_object_get(data, "skill"), *made = NULL;
	if (field(data, "name", &name, err) < 0)
		return -1;
	if (!skill)
		return lb_err_set(err, 0, "'skill'");
	if (lb_skill_update(st, name, skill, &made, err) < 0)
		return -1;
	*out = json_pack("{s:o}", "skill", made);
	return 0;
}

static int delete_skill(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			struct lb_err **err)
{
	_cleanup_free_ char *name = NULL;
	if (field(data, "name", &name, err) < 0 || lb_skill_delete(st, name, err) < 0)
		return -1;
	*out = json_pack("{s:s}", "deleted", name);
	return 0;
}

static int scan_skill_directory(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
				struct lb_err **err)
{
	_cleanup_free_ char *path = NULL;
	if (field(data, "path", &path, err) < 0)
		return -1;
	return lb_skill_scan(st, path, out, err);
}

static int list_skill_files(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			    struct lb_err **err)
{
	_cleanup_free_ char *name = NULL, *path = NULL;
	json_t *p = json_object_get(data, "path");
	int64_t max = 0;
	if (field(data, "name", &name, err) < 0 ||
	    int_of(json_object_get(data, "max_entries"), &max, err) < 0 ||
	    (p && lb_skill_text(p, "path", &path, err) < 0))
		return -1;
	return lb_skill_list_files(st, name, p ? path : ".",
				   truthy(json_object_get(data, "include_hidden")), max, out, err);
}

static int read_skill_file(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			   struct lb_err **err)
{
	_cleanup_free_ char *name = NULL, *path = NULL;
	if (field(data, "name", &name, err) < 0 || field(data, "path", &path, err) < 0)
		return -1;
	return lb_skill_read_file(st, name, path, out, err);
}

static int write_skill_file(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			    struct lb_err **err)
{
	_cleanup_free_ char *name = NULL, *path = NULL;
	json_t *content = json_object_get(data, "content");
	if (field(data, "name", &name, err) < 0 || field(data, "path", &path, err) < 0)
		return -1;
	if (content && !json_is_string(content))
		return lb_err_set(err, 0, "content must be a string");
	return lb_skill_write_file(st, name, path, content ? json_string_value(content) : "",
				   content ? json_string_length(content) : 0, out, err);
}

/* The upload named by file_key, as the transport handed it over. */
static int upload_of(json_t *data, int fd, struct lb_err **err)
{
	const char *key = json_string_value(json_object_get(data, "file_key"));
	if (!json_object_get(data, "file_key"))
		return lb_err_set(err, 0, "'file_key'");
	if (!key || !lb_rpc_name_valid(key, "._-", 255))
		return lb_err_set(err, 0, "Invalid file_key");
	if (fd < 0)
		return lb_err_set(err, 0, "[Errno 2] No such file or directory: '%s'", key);
	return 0;
}

static int preview_skill_zip(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			     struct lb_err **err)
{
	if (upload_of(data, fd, err) < 0)
		return -1;
	return lb_skill_zip_preview(st, fd, data, out, err);
}

static int install_skill_zip(struct lb_skill_store *st, json_t *data, int fd, json_t **out,
			     struct lb_err **err)
{
	if (upload_of(data, fd, err) < 0)
		return -1;
	return lb_skill_zip_install(st, fd, data, out, err);
}

static const struct {
	const char *name;
	skill_fn fn;
} skill_actions[] = {
    {"box_list_skills", list_skills},
    {"box_get_skill", get_skill},
    {"box_create_skill", create_skill},
    {"box_update_skill", update_skill},
    {"box_delete_skill", delete_skill},
    {"box_scan_skill_directory", scan_skill_directory},
    {"box_list_skill_files", list_skill_files},
    {"box_read_skill_file", read_skill_file},
    {"box_write_skill_file", write_skill_file},
    {"box_preview_skill_zip", preview_skill_zip},
    {"box_install_skill_zip", install_skill_zip},
};

static int local_action(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req, json_t **out,
			struct lb_err **err)
{
	const struct lb_rpc_context *ctx = req->has_ctx ? &req->ctx : NULL;
	struct lb_skill_store st;
	size_t i = 0, n = sizeof(skill_actions) / sizeof(skill_actions[0]);
	while (i < n && strcmp(skill_actions[i].name, req->action))
		i++;
	if (i == n)
		return lb_err_box(err, LB_BOX_EVALIDATION, "unknown skill action %s", req->action);
	if (!strcmp(req->action, "box_get_skill") && !json_object_get(req->data, "name"))
		return lb_err_box(err, "KeyError", "'name'");
	int r = rpc_skill_store(rt, ctx, &st, err);
	if (r == 0) {
		r = skill_actions[i].fn(&st, req->data, req->upload_fd, out, err);
		lb_skill_store_close(&st);
	}
	if (r < 0 && !(*err)->cls)
		(*err)->cls = LB_BOX_EVALIDATION;
	return r;
}

/* The package directory skill_name names (§6.11), from the store's own discovery; a store that
 * cannot be opened says so, a skill it does not have is "unavailable". */
static int local_package_root(struct lb_rpc_runtime *rt, const struct lb_rpc_context *ctx,
			      const char *name, char **out, struct lb_err **err)
{
	struct lb_skill_store st;
	if (rpc_skill_store(rt, ctx, &st, err) < 0)
		return -1;
	int r = lb_skill_package_root(&st, name, out, err);
	lb_skill_store_close(&st);
	if (r < 0)
		return lb_err_reclass(err, LB_BOX_EVALIDATION,
				      "Skill \"%s\" is unavailable in this Workspace", name);
	return 0;
}

const struct lb_rpc_skills lb_rpc_skills_local = {.action = local_action,
						  .package_root = local_package_root};
