/* The Box runtime server (`lbbox box -s`): LangBot's RPC on top of the box layer. */
#ifndef LBBOX_SERVER_H
#define LBBOX_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbbox/box.h"
#include "lbbox/rpc.h"

#define SERVER_MAX_FENCES 1024

/* The highest placement generation seen per instance + Workspace (§6.7). */
struct fence {
	char key[80]; /* the Workspace's namespace "ws-<sha256[:24]>" */
	int64_t generation;
};

/* An action running in a forked child; its reply comes back through fd. */
struct job {
	pid_t pid;
	int fd;
	char *buf;
	size_t len, cap;
	json_t *seq_id;
	char fence[80]; /* tenant actions: the namespace and generation they ran under */
	int64_t generation;
	bool wait_on_shutdown; /* creates, deletes, starts, stops: let them finish */
};

/* Image -> engine spec for new sessions (given by cli/box.c: images, pulls, aliases). */
struct server_images {
	lb_box_spec_fn build;
	void *ctx;
};

struct server {
	struct lb_box box;
	char trusted[256]; /* the trusted LangBot instance, "" = legacy peer (no context) */
	json_t *config;	   /* LANGBOT_BOX_CONFIG merged with box_init payloads */
	json_t *features;  /* lb_host_features() at start */
	struct server_images images;
	struct fence fences[SERVER_MAX_FENCES];
	size_t n_fences;
	struct job jobs[LB_RPC_MAX_INFLIGHT + 8];
	size_t n_jobs;
	int in_fd, out_fd;
	int instance_lock;
	bool shutting_down;
};

/* stdio.c: serves the peer on in_fd/out_fd until EOF or SIGTERM, then drops every session it
 * owns. Returns the process exit status. */
int server_run_stdio(struct server *s);

/* actions.c: runs one request in the current (child) process; returns the whole reply. */
json_t *server_run_action(struct server *s, const char *action, json_t *data,
			  const struct lb_rpc_context *ctx, json_t *seq_id);
/* Actions answered in the server process itself (no sandbox work); NULL when not one. */
json_t *server_inline_action(struct server *s, const char *action, json_t *data, json_t *seq_id);
/* True for the tenant actions that need a context (§6.7). */
bool server_is_tenant_action(const char *action);
/* True when the action exists at all. */
bool server_has_action(const char *action);
bool server_action_waits_on_shutdown(const char *action);

/* config.c: box_init / LANGBOT_BOX_CONFIG (§3.1). */
int server_apply_config(struct server *s, json_t *update, struct lb_err **err);

/* shutdown.c: every session this instance owns, managed processes first (in parallel). */
void server_drop_owned(struct server *s);

#endif
