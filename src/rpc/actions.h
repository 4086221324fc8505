/* The action table's facts, for the envelope checks (envelope.c). */
#ifndef LBBOX_RPC_ACTIONS_H
#define LBBOX_RPC_ACTIONS_H

#include <stdbool.h>

/* The action exists at all. */
bool rpc_has_action(const char *action);
/* A tenant action (§6.7): it takes a context and passes the Workspace's fence. */
bool rpc_is_tenant_action(const char *action);
/* Answered at once, without sandbox work (lb_rpc_inline_action). */
bool rpc_is_inline_action(const char *action);

#endif
