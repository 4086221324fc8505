/*
 * The skill store as the Box runtime sees it (§6.6, §6.11): which actions are the store's, where
 * the store is (no host path may overlap it), and skill_name's package as a mount. The store's
 * own work goes through rt->skills: lbbox-server runs it in the helper lbbox-skill, so this file
 * must not call into the store itself (it is linked where libarchive and libyaml are not).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/box/skill.h"
#include "lbbox/rpc/rpc.h"
#include "actions.h"

/* The same names as the table of skill_actions.c. */
static const char *const skill_action_names[] = {
    "box_list_skills",	     "box_get_skill",	      "box_create_skill",
    "box_update_skill",	     "box_delete_skill",      "box_scan_skill_directory",
    "box_list_skill_files",  "box_read_skill_file",   "box_write_skill_file",
    "box_preview_skill_zip", "box_install_skill_zip",
};

bool rpc_is_skill_action(const char *action)
{
	for (size_t i = 0; i < sizeof(skill_action_names) / sizeof(skill_action_names[0]); i++)
		if (!strcmp(skill_action_names[i], action))
			return true;
	return false;
}

bool lb_rpc_action_reads_upload(const char *action)
{
	return !strcmp(action, "box_preview_skill_zip") || !strcmp(action, "box_install_skill_zip");
}

const char *rpc_config_local(const struct lb_rpc_runtime *rt, const char *key)
{
	return json_string_value(json_object_get(json_object_get(rt->config, "local"), key));
}

int rpc_skill_fence(struct lb_rpc_runtime *rt, struct lb_err **err)
{
	return lb_skill_store_path(rpc_config_local(rt, "host_root"),
				   rpc_config_local(rt, "skills_root"), NULL, rt->box.skills_root,
				   sizeof(rt->box.skills_root), err);
}

int rpc_skill_run(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req, json_t **out,
		  struct lb_err **err)
{
	if (!rt->skills)
		return lb_err_box(err, LB_BOX_EVALIDATION, "the skill store is not available here");
	return rt->skills->action(rt, req, out, err);
}

/*
 * skill_name (§6.11): the Workspace's skill package, read-only at /workspace/.skills/<name>, as
 * an extra mount of the runtime's own (a LangBot that composes that mount itself has it there
 * already). The package path comes from the store's own discovery, never from the request.
 */
int rpc_skill_mount(struct lb_rpc_runtime *rt, const struct lb_rpc_context *ctx,
		    struct lb_box_spec *bs, struct lb_err **err)
{
	char target[LB_PATH_BUF];
	char *root = NULL;
	if (!bs->skill_name)
		return 0;
	snprintf(target, sizeof(target), "/workspace/.skills/%s", bs->skill_name);
	for (size_t i = 0; i < bs->n_extra_mounts; i++)
		if (bs->extra_mounts[i].mount_path &&
		    !strcmp(bs->extra_mounts[i].mount_path, target))
			return 0;
	if (!rt->skills)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "Skill \"%s\" is unavailable in this Workspace", bs->skill_name);
	if (rt->skills->package_root(rt, ctx, bs->skill_name, &root, err) < 0)
		return -1;
	struct lb_box_mount *v = realloc(bs->extra_mounts, (bs->n_extra_mounts + 1) * sizeof(*v));
	char *dst = strdup(target);
	if (!v || !dst) {
		free(root);
		free(dst);
		if (v)
			bs->extra_mounts = v;
		return lb_err_set(err, ENOMEM, "skill mount");
	}
	bs->extra_mounts = v;
	v[bs->n_extra_mounts++] = (struct lb_box_mount){
	    .host_path = root, .mount_path = dst, .mode = LB_BOX_MOUNT_RO, .runtime_owned = true};
	return 0;
}
