/* The action table's facts, for the envelope checks (envelope.c). */
#ifndef LBBOX_RPC_ACTIONS_H
#define LBBOX_RPC_ACTIONS_H

#include <stdbool.h>

#include "lbbox/rpc/rpc.h"

/* The action exists at all. */
bool rpc_has_action(const char *action);
/* A tenant action (§6.7): it takes a context and passes the Workspace's fence. */
bool rpc_is_tenant_action(const char *action);
/* Answered at once, without sandbox work (lb_rpc_inline_action). */
bool rpc_is_inline_action(const char *action);
/* A tenant action the event loop answers itself (LB_RPC_QUICK). */
bool rpc_is_quick_action(const char *action);

/* skill_route.c: the eleven skill actions (tenant actions, run as jobs) through rt->skills. */
struct lb_skill_store;
bool rpc_is_skill_action(const char *action);
int rpc_skill_run(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req, json_t **out,
		  struct lb_err **err);
/* rt->config's local[key] as a string (NULL when absent). */
const char *rpc_config_local(const struct lb_rpc_runtime *rt, const char *key);
/* rt->box.skills_root from the config: the store no host path may overlap. */
int rpc_skill_fence(struct lb_rpc_runtime *rt, struct lb_err **err);
/* skill_name's package as a read-only extra mount of bs (§6.11). */
int rpc_skill_mount(struct lb_rpc_runtime *rt, const struct lb_rpc_context *ctx,
		    struct lb_box_spec *bs, struct lb_err **err);
/* skill_actions.c: the caller's skill store (its Workspace's; the whole store without a
 * context), locked. */
int rpc_skill_store(const struct lb_rpc_runtime *rt, const struct lb_rpc_context *ctx,
		    struct lb_skill_store *st, struct lb_err **err);

#endif
