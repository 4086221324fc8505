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

#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "server.h"

#define RELAY_HIGH (1u << 20)	/* pause the producer above this */
#define RELAY_LOW  (256u << 10) /* and resume it below this */

struct relay {
	struct fdwatch w; /* the keeper socket */
	struct lws *ws;	  /* NULL once the client left */
	struct server *s;
	char sid[512], pid[512];
	lws_sorted_usec_list_t retry; /* the keeper's queue was full: attach again soon */
	struct wsq out;		      /* stdout lines for the client */
	struct sbuf line;	      /* a stdout line without its "\n" yet */
	struct sbuf pend;	      /* client messages (+ "\n") not yet taken by the keeper */
	size_t pend_off;
	struct sbuf in; /* the WebSocket message being received */
	bool eof, failed, keeper_paused, ws_paused;
};

#define ATTACH_RETRY_US 100000

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
	if (lb_box_proc_get(&s->rt.box, sid, pid, &info, &err) < 0)
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
	sbuf_free(&r->line);
	sbuf_free(&r->pend);
	sbuf_free(&r->in);
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

/* Stdout bytes: every complete line becomes a message; a partial one waits for its newline. */
static int feed(struct relay *r, const char *buf, size_t n)
{
	const char *p = buf, *end = buf + n, *nl;
	while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
		if (r->line.len) {
			if (sbuf_add(&r->line, p, (size_t)(nl - p)) < 0)
				return -1;
			push_line(r, r->line.p, r->line.len);
			r->line.len = 0;
		} else {
			push_line(r, p, (size_t)(nl - p));
		}
		p = nl + 1;
	}
	if (p < end && sbuf_add(&r->line, p, (size_t)(end - p)) < 0)
		return -1;
	if (r->line.len >= SERVER_MAX_MSG) { /* a message is at most 16 MiB: sent in pieces */
		push_line(r, r->line.p, r->line.len);
		r->line.len = 0;
	}
	return 0;
}

static int keeper_read(struct fdwatch *w)
{
	struct relay *r = (struct relay *)w;
	char buf[65536];
	ssize_t n = read(w->fd, buf, sizeof(buf));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0) /* the process exited (or the keeper went): keeper_closed sends the rest */
		return -1;
	if (feed(r, buf, (size_t)n) < 0)
		return -1;
	if (r->out.bytes > RELAY_HIGH && !r->keeper_paused) {
		lws_rx_flow_control(w->wsi, 0);
		r->keeper_paused = true;
	}
	return 0;
}

static int keeper_writable(struct fdwatch *w)
{
	struct relay *r = (struct relay *)w;
	while (r->pend_off < r->pend.len) {
		ssize_t n = write(w->fd, r->pend.p + r->pend_off, r->pend.len - r->pend_off);
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
	if (r->pend_off == r->pend.len)
		r->pend_off = r->pend.len = 0;
	if (r->ws_paused && r->pend.len - r->pend_off < RELAY_LOW && r->ws) {
		lws_rx_flow_control(r->ws, 1);
		r->ws_paused = false;
	}
	return 0;
}

/* Also after a hang-up seen while reading was paused: what the socket still holds is read here
 * (the descriptor is open until this returns), then the last partial line. */
static void keeper_closed(struct fdwatch *w)
{
	struct relay *r = (struct relay *)w;
	char buf[65536];
	ssize_t n;
	fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) | O_NONBLOCK);
	while ((n = read(w->fd, buf, sizeof(buf))) > 0 && feed(r, buf, (size_t)n) == 0)
		;
	push_line(r, r->line.p, r->line.len);
	r->line.len = 0;
	if (!r->ws) {
		relay_free(w->s, r);
		return;
	}
	r->eof = true;
	lws_callback_on_writable(r->ws);
}

static void retry_attach(lws_sorted_usec_list_t *sul);

/* Connects to the keeper without blocking the loop: a full queue (another client attached and
 * more waiting) is retried on a timer; the client waits, as LangBot's second client does. */
static void try_attach(struct relay *r)
{
	_cleanup_err_ struct lb_err *err = NULL;
	int fd;
	if (lb_box_proc_attach(&r->s->rt.box, r->sid, r->pid, true, &fd, &err) < 0) {
		if (err->errnum == EAGAIN) {
			lws_sul_schedule(r->s->lws, 0, &r->retry, retry_attach, ATTACH_RETRY_US);
			return;
		}
		r->failed = true; /* not running any more: closed from the writable callback */
		lws_callback_on_writable(r->ws);
		return;
	}
	r->w = (struct fdwatch){
	    .on_read = keeper_read, .on_writable = keeper_writable, .on_close = keeper_closed};
	if (server_watch(r->s, &r->w, fd) < 0) {
		r->failed = true;
		lws_callback_on_writable(r->ws);
		return;
	}
	if (r->pend.len)
		lws_callback_on_writable(r->w.wsi);
}

static void retry_attach(lws_sorted_usec_list_t *sul)
{
	try_attach(lws_container_of(sul, struct relay, retry));
}

static int attach(struct server *s, struct lws *wsi, struct relay **slot)
{
	char uri[1024];
	struct relay *r = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	r->s = s;
	r->ws = wsi;
	r->w.fd = -1;
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 ||
	    !parse_path(uri, r->sid, sizeof(r->sid), r->pid, sizeof(r->pid))) {
		free(r);
		return -1;
	}
	s->relays++;
	*slot = r;
	try_attach(r);
	return 0;
}

/* A whole text message from the client: to stdin with its newline. */
static int client_message(struct relay *r, struct lws *wsi, const void *in, size_t len)
{
	if (lws_frame_is_binary(wsi))
		return 0; /* ignored (§6.9) */
	int whole = ws_collect(&r->in, wsi, in, len);
	if (whole <= 0)
		return whole;
	if (sbuf_add(&r->pend, r->in.p, r->in.len) < 0 || sbuf_add(&r->pend, "\n", 1) < 0)
		return -1;
	r->in.len = 0;
	if (r->pend.len - r->pend_off > RELAY_HIGH && !r->ws_paused) {
		lws_rx_flow_control(wsi, 0);
		r->ws_paused = true;
	}
	return r->w.wsi ? keeper_writable(&r->w) : 0; /* else sent once attached */
}

static int client_writable(struct server *s, struct relay *r, struct lws *wsi)
{
	if (r->failed) {
		static const char why[] = "managed process is not running";
		lws_close_reason(wsi, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, (unsigned char *)why,
				 sizeof(why) - 1);
		return -1;
	}
	if (r->out.head && !s->shutting_down) {
		if (wsq_write(&r->out, wsi) < 0)
			return -1;
		if (r->keeper_paused && r->out.bytes < RELAY_LOW && r->w.wsi) {
			lws_rx_flow_control(r->w.wsi, 1);
			r->keeper_paused = false;
		}
		if (!r->out.head && r->eof)
			lws_callback_on_writable(wsi); /* for the close */
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
		lws_sul_cancel(&r->retry);
		server_unwatch(&r->w);
		relay_free(s, r);
		return 0;
	default:
		return 0;
	}
}
