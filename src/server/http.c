/*
 * The runtime's HTTP side on libwebsockets (§6.3, §6.8, §6.9): GET /healthz and /readyz, the
 * control channel /rpc/ws (one JSON message per text message, the same actions as stdio) and
 * the managed-process relay (relay.c). Idle WebSockets are pinged every LBBOX_BOX_WS_PING_SEC
 * (30 s, aiohttp's heartbeat) by lws's validity policy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/features.h"
#include "lbbox/base/util.h"
#include "server.h"

/* Replies queued for a client that does not read: stop reading its requests above this. */
#define PEER_OUT_HIGH (64u << 20)
#define PEER_OUT_LOW  (16u << 20)

/* Per connection (lws allocates it per protocol, so it is set once the WebSocket is up). */
struct conn {
	struct peer *peer;   /* /rpc/ws */
	struct relay *relay; /* a relay */
};

static int server_http_respond(struct lws *wsi, unsigned status, const char *ctype,
			       const char *body)
{
	size_t len = strlen(body);
	unsigned char hdr[LWS_PRE + 1024], *start = hdr + LWS_PRE, *p = start;
	if (lws_add_http_common_headers(wsi, status, ctype, len, &p, hdr + sizeof(hdr) - 1) ||
	    lws_finalize_write_http_header(wsi, start, &p, hdr + sizeof(hdr) - 1))
		return -1;
	_cleanup_free_ unsigned char *b = malloc(LWS_PRE + len + 1);
	if (!b)
		return -1;
	memcpy(b + LWS_PRE, body, len);
	return lws_write(wsi, b + LWS_PRE, len, LWS_WRITE_HTTP_FINAL) < (int)len ? -1 : 0;
}

static int respond_json(struct lws *wsi, unsigned status, json_t *j)
{
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return server_http_respond(wsi, status, "application/json", text ? text : "{}");
}

static size_t count_jobs(struct server *s, const char *action, bool background)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_jobs; i++)
		n += background ? s->jobs[i]->peer == 0
				: (s->jobs[i]->action && !strcmp(s->jobs[i]->action, action));
	return n;
}

/* §6.9's resources: what this runtime holds. Counting reads every session's records, so an
 * unauthenticated health probe gets a copy at most a second old rather than a fresh walk. */
json_t *server_resources(struct server *s)
{
	size_t sessions, running, exited, peers = 0;
	uint64_t now = lb_now_ns();
	if (s->resources && now - s->resources_at < 1000000000ull)
		return json_deep_copy(s->resources);
	lb_box_count(&s->rt.box, &sessions, &running, &exited);
	for (struct peer *p = s->peers; p; p = p->next)
		peers++;
	size_t actions = s->n_jobs - count_jobs(s, NULL, true);
	json_decref(s->resources);
	s->resources = json_pack(
	    "{s:{s:I, s:I, s:I}, s:{s:I, s:I}, s:I, s:I, s:I, s:I, s:I, s:I}", "event_loop",
	    "connections", (json_int_t)peers, "relays", (json_int_t)s->relays, "jobs",
	    (json_int_t)s->n_jobs, "blocking_executor", "in_flight", (json_int_t)actions,
	    "max_per_connection", (json_int_t)LB_RPC_MAX_INFLIGHT, "sessions", (json_int_t)sessions,
	    "managed_processes", (json_int_t)running, "completed_processes", (json_int_t)exited,
	    "creating_session_tasks", (json_int_t)count_jobs(s, "box_create_session", false),
	    "closing_session_tasks", (json_int_t)count_jobs(s, "box_delete_session", false),
	    "background_tasks", (json_int_t)count_jobs(s, NULL, true));
	s->resources_at = now;
	return json_deep_copy(s->resources);
}

/* §3.7, plus the features this host really gives (beyond LangBot). */
static int readyz(struct server *s, struct lws *wsi)
{
	json_t *backend = lb_rpc_backend_info(&s->rt);
	bool ready = json_is_true(json_object_get(backend, "available"));
	return respond_json(wsi, ready ? 200 : 503,
			    json_pack("{s:b, s:s, s:o, s:{s:b}, s:o, s:O}", "ready", ready, "mode",
				      "standard", "backend", backend, "checks", "backend_available",
				      ready, "resources", server_resources(s), "features",
				      s->rt.features));
}

static int http_get(struct server *s, struct lws *wsi, const char *uri)
{
	int r;
	if (!strcmp(uri, "/healthz"))
		r = respond_json(
		    wsi, 200, json_pack("{s:b, s:o}", "live", 1, "resources", server_resources(s)));
	else if (!strcmp(uri, "/readyz"))
		r = readyz(s, wsi);
	else if (!strcmp(uri, "/rpc/ws") || relay_path(uri))
		r = server_http_respond(wsi, 400, "text/plain; charset=utf-8",
					"Expected a WebSocket upgrade");
	else
		r = server_http_respond(wsi, 404, "text/plain; charset=utf-8", "Not Found");
	if (r < 0 || lws_http_transaction_completed(wsi))
		return -1;
	return 0;
}

static int unauthorized(struct lws *wsi)
{
	return server_http_reject(wsi, 401, "text/plain; charset=utf-8", "Unauthorized");
}

/* Before a WebSocket is accepted: auth, and for a relay whether its process can be reached. */
static int confirm_upgrade(struct server *s, struct lws *wsi)
{
	char uri[1024], instance[160];
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0)
		return -1;
	if (s->shutting_down)
		return server_http_reject(wsi, 503, "text/plain; charset=utf-8",
					  "Box runtime shutting down");
	/* in stdio mode LangBot never uses /rpc/ws: only with a token is it a second way in */
	if (!strcmp(uri, "/rpc/ws") && s->in_fd >= 0 && !s->token[0])
		return unauthorized(wsi);
	if (!strcmp(uri, "/rpc/ws"))
		return auth_token_ok(s, wsi) &&
			       auth_instance_ok(s, wsi, true, instance, sizeof(instance))
			   ? 0
			   : unauthorized(wsi);
	if (relay_path(uri))
		return relay_check(s, wsi, uri);
	return server_http_reject(wsi, 404, "text/plain; charset=utf-8", "Not Found");
}

/* One /rpc/ws text message, possibly in many pieces. */
static int rpc_receive(struct peer *p, struct lws *wsi, const void *in, size_t len)
{
	if (lws_frame_is_binary(wsi)) {
		static const char why[] = "Unexpected message type";
		lws_close_reason(wsi, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, (unsigned char *)why,
				 sizeof(why) - 1);
		return -1;
	}
	int whole = ws_collect(&p->in, wsi, in, len);
	if (whole <= 0)
		return whole;
	json_t *msg = NULL, *seq_id = NULL;
	struct lb_err *bad = NULL;
	if (lb_rpc_decode(p->in.p, p->in.len, &msg, &bad) < 0)
		seq_id = lb_rpc_recover_seq_id(p->in.p, p->in.len);
	p->in.len = 0;
	server_receive(p->s, p, msg, seq_id, bad);
	json_decref(msg);
	json_decref(seq_id);
	lb_err_free(&bad);
	if (p->out.bytes > PEER_OUT_HIGH && !p->paused) { /* a client that does not read */
		lws_rx_flow_control(wsi, 0);
		p->paused = true;
	}
	return 0;
}

static int rpc_writable(struct server *s, struct peer *p, struct lws *wsi)
{
	if (s->shutting_down && !p->out.head) {
		static const char why[] = "Box runtime shutting down";
		lws_close_reason(wsi, LWS_CLOSE_STATUS_GOINGAWAY, (unsigned char *)why,
				 sizeof(why) - 1);
		return -1;
	}
	if (wsq_write(&p->out, wsi) < 0)
		return -1;
	if (p->paused && p->out.bytes < PEER_OUT_LOW) {
		lws_rx_flow_control(wsi, 1);
		p->paused = false;
	}
	if (!p->out.head && s->shutting_down)
		lws_callback_on_writable(wsi); /* for the close */
	return 0;
}

static int rpc_callback(struct server *s, struct lws *wsi, enum lws_callback_reasons reason,
			struct conn *c, void *in, size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_ESTABLISHED:
		c->peer = peer_new(s, wsi);
		return c->peer ? 0 : -1;
	case LWS_CALLBACK_RECEIVE:
		return c->peer ? rpc_receive(c->peer, wsi, in, len) : -1;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return c->peer ? rpc_writable(s, c->peer, wsi) : -1;
	case LWS_CALLBACK_CLOSED:
		if (c->peer)
			peer_free(c->peer); /* its running jobs' replies go nowhere */
		c->peer = NULL;
		return 0;
	default:
		return 0;
	}
}

static bool is_relay(struct lws *wsi)
{
	char uri[1024];
	return lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) > 0 && relay_path(uri);
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		    size_t len)
{
	struct server *s = lws_context_user(lws_get_context(wsi));
	struct conn *c = user;
	switch (reason) {
	case LWS_CALLBACK_HTTP:
		return http_get(s, wsi, in);
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		return confirm_upgrade(s, wsi);
	case LWS_CALLBACK_ESTABLISHED:
		if (is_relay(wsi))
			return relay_callback(s, wsi, reason, (void **)&c->relay, in, len);
		return rpc_callback(s, wsi, reason, c, in, len);
	case LWS_CALLBACK_RECEIVE:
	case LWS_CALLBACK_SERVER_WRITEABLE:
	case LWS_CALLBACK_CLOSED:
		if (c && c->relay)
			return relay_callback(s, wsi, reason, (void **)&c->relay, in, len);
		if (c && c->peer)
			return rpc_callback(s, wsi, reason, c, in, len);
		/* a connection whose set-up failed, asked to write during shutdown */
		return reason == LWS_CALLBACK_SERVER_WRITEABLE && s->shutting_down ? -1 : 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static const struct lws_protocols protocols[] = {
    {"http", callback, sizeof(struct conn), 65536, 0, NULL, 0},
    {"mcp", callback, sizeof(struct conn), 65536, 0, NULL, 0}, /* §6.9's subprotocol */
    {"lbbox-fd", server_fd_callback, 0, 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

static void log_line(int level, const char *line)
{
	(void)level;
	/* lws may quote what a peer sent: escaped, one line */
	_cleanup_free_ char *copy = strndup(line, strcspn(line, "\n"));
	_cleanup_free_ char *text = copy ? lb_escape_ctl(copy) : NULL;
	fprintf(stderr, "lbbox: websockets: %s\n", text ? text : "?");
}

int server_http_start(struct server *s, struct lb_err **err)
{
	struct lws_context_creation_info info = {0};
	lws_set_log_level(LLL_ERR, log_line);
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_VALIDATE_UTF8;
	info.user = s;
	info.max_http_header_data = 8192;
	info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	info.protocols = protocols;
	s->lws = lws_create_context(&info);
	if (!s->lws)
		return lb_err_set(err, 0, "cannot create the event loop");
	info.vhost_name = "fds";
	s->fds_vh = lws_create_vhost(s->lws, &info);
	if (!s->fds_vh)
		return lb_err_set(err, 0, "cannot create the event loop's descriptor host");
	if (s->port < 0)
		return 0;
	s->retry = (lws_retry_bo_t){.secs_since_valid_ping = (uint16_t)s->ping_sec,
				    .secs_since_valid_hangup = (uint16_t)(s->ping_sec * 2 + 10)};
	info.vhost_name = "http";
	info.port = s->port;
	/* libwebsockets takes a name as an interface name ("localhost" would bind nothing) */
	info.iface = s->host && !strcmp(s->host, "localhost") ? "127.0.0.1" : s->host;
	if (s->host && !strchr(s->host, ':'))
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6; /* an IPv4 address: IPv4 only */
	info.retry_and_idle_policy = &s->retry;
	lws_set_log_level(0, log_line); /* a port in use is reported below, in one line */
	s->http_vh = lws_create_vhost(s->lws, &info);
	lws_set_log_level(LLL_ERR, log_line);
	if (!s->http_vh) {
		if (s->listen_required)
			return lb_err_set(err, 0, "cannot listen on %s:%d (in use?)",
					  s->host ? s->host : "0.0.0.0", s->port);
		fprintf(stderr,
			"lbbox: warning: cannot listen on %s:%d; the relay, /rpc/ws and the health "
			"endpoints are unavailable\n",
			s->host ? s->host : "0.0.0.0", s->port);
		return 0;
	}
	fprintf(stderr, "lbbox: listening on %s:%d\n", s->host ? s->host : "0.0.0.0",
		lws_get_vhost_listen_port(s->http_vh));
	return 0;
}
