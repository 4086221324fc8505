/*
 * The managed-process relay (§6.9): a WebSocket bridged to the process's keeper socket
 * (lb_box_proc_attach). Each incoming text message goes to stdin followed by "\n"; stdout goes
 * out one line per text message, newline removed, which is what LangBot's MCP client parses
 * (one JSON-RPC message per WebSocket message). The relay holds at most ~1 MiB each way and
 * stops reading from the slower side's partner meanwhile. When the process exits the socket is
 * closed normally; when the client leaves, the process keeps running (the keeper detaches).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/box_text.h"
#include "lbbox/cleanup.h"
#include "server/server.h"

#define RELAY_HIGH (1u << 20)	/* pause the producer above this */
#define RELAY_LOW  (256u << 10) /* and resume it below this */

struct relay {
	struct fdwatch w; /* the keeper socket */
	struct lws *ws;	  /* NULL once the client left */
	struct wsq out;	  /* stdout lines for the client */
	char *line;	  /* a stdout line without its "\n" yet */
	size_t line_len;
	char *pend; /* client messages (+ "\n") not yet taken by the keeper */
	size_t pend_len, pend_off;
	char *in; /* the WebSocket message being received */
	size_t in_len;
	bool eof, keeper_paused, ws_paused;
};

/* /v1/sessions/{session}/managed-process/{process}/ws, or .../managed-process/ws = "default". */
static bool parse_path(const char *path, char *sid, size_t slen, char *pid, size_t plen)
{
	static const char pre[] = "/v1/sessions/", mid[] = "/managed-process/";
	if (strncmp(path, pre, sizeof(pre) - 1) != 0)
		return false;
	const char *a = path + sizeof(pre) - 1, *b = strchr(a, '/');
	if (!b || b == a || (size_t)(b - a) >= slen || strncmp(b, mid, sizeof(mid) - 1) != 0)
		return false;
	snprintf(sid, slen, "%.*s", (int)(b - a), a);
	const char *c = b + sizeof(mid) - 1;
	if (!strcmp(c, "ws")) {
		snprintf(pid, plen, "default");
		return true;
	}
	const char *d = strchr(c, '/');
	if (!d || d == c || strcmp(d, "/ws") != 0 || (size_t)(d - c) >= plen)
		return false;
	snprintf(pid, plen, "%.*s", (int)(d - c), c);
	return true;
}

bool relay_path(const char *path)
{
	char sid[512], pid[512];
	return parse_path(path, sid, sizeof(sid), pid, sizeof(pid));
}

static int bad_request(struct lws *wsi, const struct lb_err *err)
{
	json_t *j = json_pack("{s:{s:s, s:s}}", "error", "code", err->cls ? err->cls : LB_BOX_EBOX,
			      "message", err->msg);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return server_http_reject(wsi, 400, "application/json", text ? text : "{}");
}

/* §6.9's handshake: 401 for auth and context, 400 JSON when the process cannot be reached. */
int relay_check(struct server *s, struct lws *wsi, const char *path)
{
	char sid[512], pid[512], instance[160];
	struct lb_rpc_context ctx;
	_cleanup_err_ struct lb_err *err = NULL;
	if (!parse_path(path, sid, sizeof(sid), pid, sizeof(pid)))
		return -1;
	if (!auth_token_ok(s, wsi) ||
	    !auth_instance_ok(s, wsi, false, instance, sizeof(instance)) ||
	    auth_relay_context(s, wsi, instance, sid, &ctx) < 0)
		return server_http_reject(wsi, 401, "text/plain; charset=utf-8", "Unauthorized");
	struct lb_box_proc_info info;
	if (lb_box_proc_get(&s->box, sid, pid, &info, &err) < 0)
		return bad_request(wsi, err);
	bool running = info.running;
	lb_box_proc_info_free(&info);
	if (!running) {
		lb_err_box(&err, LB_BOX_EMPCONFLICT,
			   "managed process %s in session %s is not running", pid, sid);
		return bad_request(wsi, err);
	}
	return 0;
}

static void relay_free(struct server *s, struct relay *r)
{
	s->relays--;
	wsq_clear(&r->out);
	free(r->line);
	free(r->pend);
	free(r->in);
	free(r);
}

/* One stdout line as a text message (valid UTF-8: invalid bytes become U+FFFD). */
static void push_line(struct relay *r, const char *p, size_t n)
{
	size_t len;
	if (!n)
		return;
	_cleanup_free_ char *text = lb_box_utf8_replace(p, n, &len);
	if (text && wsq_push(&r->out, text, len) == 0 && r->ws)
		lws_callback_on_writable(r->ws);
}

static int keeper_read(struct fdwatch *w)
{
	struct relay *r = (struct relay *)w;
	char buf[65536];
	ssize_t n = read(lws_get_socket_fd(w->wsi), buf, sizeof(buf));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0) { /* the process exited (or the keeper went): the rest, then close */
		push_line(r, r->line, r->line_len);
		r->line_len = 0;
		return -1;
	}
	const char *p = buf, *end = buf + n, *nl;
	while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (r->line_len) {
			char *l = realloc(r->line, r->line_len + (size_t)(nl - p));
			if (!l)
				return -1;
			memcpy(l + r->line_len, p, (size_t)(nl - p));
			push_line(r, l, r->line_len + (size_t)(nl - p));
			r->line = l, r->line_len = 0;
		} else {
			push_line(r, p, (size_t)(nl - p));
		}
		p = nl + 1;
	}
	if (p < end) { /* a partial line: kept until its newline (a message is ≤ 16 MiB) */
		char *l = realloc(r->line, r->line_len + (size_t)(end - p));
		if (!l)
			return -1;
		memcpy(l + r->line_len, p, (size_t)(end - p));
		r->line = l, r->line_len += (size_t)(end - p);
		if (r->line_len >= SERVER_MAX_MSG) {
			push_line(r, r->line, r->line_len);
			r->line_len = 0;
		}
	}
	if (r->out.bytes > RELAY_HIGH && !r->keeper_paused) {
		lws_rx_flow_control(w->wsi, 0);
		r->keeper_paused = true;
	}
	return 0;
}

static int keeper_writable(struct fdwatch *w)
{
	struct relay *r = (struct relay *)w;
	while (r->pend_off < r->pend_len) {
		ssize_t n = write(lws_get_socket_fd(w->wsi), r->pend + r->pend_off,
				  r->pend_len - r->pend_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			lws_callback_on_writable(w->wsi);
			break;
		}
		if (n < 0)
			return -1;
		r->pend_off += (size_t)n;
	}
	if (r->pend_off == r->pend_len)
		r->pend_off = r->pend_len = 0;
	if (r->ws_paused && r->pend_len - r->pend_off < RELAY_LOW && r->ws) {
		lws_rx_flow_control(r->ws, 1);
		r->ws_paused = false;
	}
	return 0;
}

static void keeper_closed(struct fdwatch *w)
{
	struct relay *r = (struct relay *)w;
	if (!r->ws) {
		relay_free(w->s, r);
		return;
	}
	r->eof = true;
	lws_callback_on_writable(r->ws);
}

static int attach(struct server *s, struct lws *wsi, struct relay **slot)
{
	char uri[1024], sid[512], pid[512];
	_cleanup_err_ struct lb_err *err = NULL;
	int fd;
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 ||
	    !parse_path(uri, sid, sizeof(sid), pid, sizeof(pid)))
		return -1;
	if (lb_box_proc_attach(&s->box, sid, pid, &fd, &err) < 0) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION,
				 (unsigned char *)err->msg, strnlen(err->msg, 120));
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	struct relay *r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return -1;
	}
	r->w = (struct fdwatch){
	    .on_read = keeper_read, .on_writable = keeper_writable, .on_close = keeper_closed};
	r->ws = wsi;
	s->relays++;
	if (server_watch(s, &r->w, fd) < 0) {
		relay_free(s, r);
		return -1;
	}
	*slot = r;
	return 0;
}

/* A whole text message from the client: to stdin with its newline. */
static int client_message(struct relay *r, struct lws *wsi, const void *in, size_t len)
{
	if (lws_frame_is_binary(wsi))
		return 0; /* ignored (§6.9) */
	if (r->in_len + len > SERVER_MAX_MSG) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, NULL, 0);
		return -1;
	}
	char *b = realloc(r->in, r->in_len + len + 1);
	if (!b)
		return -1;
	memcpy(b + r->in_len, in, len);
	r->in = b, r->in_len += len;
	if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi))
		return 0;
	b = realloc(r->pend, r->pend_len + r->in_len + 1);
	if (!b)
		return -1;
	memcpy(b + r->pend_len, r->in, r->in_len);
	b[r->pend_len + r->in_len] = '\n';
	r->pend = b, r->pend_len += r->in_len + 1, r->in_len = 0;
	if (r->pend_len - r->pend_off > RELAY_HIGH && !r->ws_paused) {
		lws_rx_flow_control(wsi, 0);
		r->ws_paused = true;
	}
	return r->w.wsi ? keeper_writable(&r->w) : 0;
}

static int client_writable(struct server *s, struct relay *r, struct lws *wsi)
{
	if (r->out.head && !s->shutting_down) {
		if (wsq_write(&r->out, wsi) < 0)
			return -1;
		if (r->keeper_paused && r->out.bytes < RELAY_LOW && r->w.wsi) {
			lws_rx_flow_control(r->w.wsi, 1);
			r->keeper_paused = false;
		}
		return 0;
	}
	if (s->shutting_down) {
		static const char why[] = "Box runtime shutting down";
		lws_close_reason(wsi, LWS_CLOSE_STATUS_GOINGAWAY, (unsigned char *)why,
				 sizeof(why) - 1);
		return -1;
	}
	if (r->eof && !r->out.head) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		return -1;
	}
	return 0;
}

int relay_callback(struct server *s, struct lws *wsi, enum lws_callback_reasons reason, void **slot,
		   void *in, size_t len)
{
	struct relay *r = *slot;
	switch (reason) {
	case LWS_CALLBACK_ESTABLISHED:
		return attach(s, wsi, (struct relay **)slot);
	case LWS_CALLBACK_RECEIVE:
		return client_message(r, wsi, in, len);
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return client_writable(s, r, wsi);
	case LWS_CALLBACK_CLOSED:
		/* the client left: detach from the keeper, the process keeps running */
		*slot = NULL;
		server_unwatch(&r->w);
		relay_free(s, r);
		return 0;
	default:
		return 0;
	}
}
