/*
 * Who may use the HTTP side (§6.8, §6.9): the control token (compared in constant time), the
 * LangBot instance header (pinned by the first /rpc/ws client when none was configured), and
 * for the relay the Workspace context whose prefix must own the session. With no token
 * configured, header-less peers are LangBot 0.4.x and are let in (§6.10), if they run on this
 * host as lbbox's user or root.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

#define H_TOKEN	     "x-langbot-box-control-token:"
#define H_INSTANCE   "x-langbot-instance-id:"
#define H_WORKSPACE  "x-langbot-workspace-id:"
#define H_GENERATION "x-langbot-placement-generation:"

/* A custom header's value; 0 when absent, -1 when too long for out. */
static int header(struct lws *wsi, const char *name, char *out, size_t len)
{
	int n = lws_hdr_custom_length(wsi, name, (int)strlen(name));
	if (n <= 0)
		return 0;
	if ((size_t)n >= len)
		return -1;
	if (lws_hdr_custom_copy(wsi, out, (int)len, name, (int)strlen(name)) < 0)
		return -1;
	return 1;
}

bool auth_token_ok(struct server *s, struct lws *wsi)
{
	char got[sizeof(s->token)];
	/* without a token only loopback is served, where any local user could connect: the peer
	 * must run as lbbox's own user, or as root (a Box request mounts host paths) */
	if (!s->token[0])
		return server_peer_trusted(lws_get_socket_fd(wsi));
	if (header(wsi, H_TOKEN, got, sizeof(got)) != 1)
		return false;
	size_t a = strlen(got), b = strlen(s->token);
	/* constant time in the token's content; its length is not secret */
	return a == b && CRYPTO_memcmp(got, s->token, b) == 0;
}

bool auth_instance_ok(struct server *s, struct lws *wsi, bool pin, char *out, size_t len)
{
	int h = header(wsi, H_INSTANCE, out, len);
	if (h == 0) {
		out[0] = '\0';
		return !s->token[0]; /* a 0.4.x peer: only without a token */
	}
	if (h < 0 || !lb_rpc_name_valid(out, "._:-", 128) /* §6.8's regex */)
		return false;
	if (!s->rt.trusted[0] && pin) {
		snprintf(s->rt.trusted, sizeof(s->rt.trusted), "%s", out);
		fprintf(stderr, "lbbox: trusted LangBot instance %s (first /rpc/ws client)\n",
			s->rt.trusted);
		return true;
	}
	return s->rt.trusted[0] && strcmp(out, s->rt.trusted) == 0;
}

/* A canonical decimal integer: no sign, no leading zero, no spaces. */
static bool canonical_int(const char *v, int64_t *out)
{
	size_t n = strlen(v);
	if (n == 0 || n > 18 || (n > 1 && v[0] == '0'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			return false;
	*out = strtoll(v, NULL, 10);
	return true;
}

int auth_relay_context(struct server *s, struct lws *wsi, const char *instance, const char *session,
		       struct lb_rpc_context *ctx)
{
	char ws[258], gen[32];
	int hw = header(wsi, H_WORKSPACE, ws, sizeof(ws));
	int hg = header(wsi, H_GENERATION, gen, sizeof(gen));
	int64_t g;
	if (hw == 0 && hg == 0)
		return s->token[0] ? -1 : 1;
	if (hw != 1 || hg != 1 || !instance[0] || strlen(ws) > 256 || !canonical_int(gen, &g))
		return -1;
	json_t *c = json_pack("{s:s, s:s, s:I}", "instance_uuid", instance, "workspace_uuid", ws,
			      "placement_generation", (json_int_t)g);
	int r = c ? lb_rpc_context_parse(c, ctx, NULL) : -1;
	json_decref(c);
	if (r < 0)
		return -1;
	/* the Workspace's current generation, and a session under its prefix */
	char ns[80];
	lb_rpc_namespace_of(ctx, ns, sizeof(ns));
	struct lb_rpc_fence *f = lb_rpc_fence(&s->rt, ns, false);
	size_t pl = strlen(ctx->prefix);
	if (!f || f->generation != ctx->generation || strncmp(session, ctx->prefix, pl) != 0 ||
	    session[pl] != '-')
		return -1;
	return 0;
}
