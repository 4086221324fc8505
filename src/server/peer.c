/*
 * Control connections. A reply goes to the connection its request came from: the stdio pipe
 * (one JSON line, chunked beyond 16 KiB, §6.2) or a /rpc/ws client (one text message, §6.3).
 * Jobs name their peer by id, so a client that went away while its exec ran is simply not
 * answered.
 */
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "server.h"

/* Pieces of a big WebSocket message: every write stays small, so one client cannot stall the
 * loop and a peer's 64 KiB read buffer is enough. */
#define WS_FRAGMENT 65536

struct peer *peer_new(struct server *s, struct lws *wsi)
{
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->id = ++s->next_peer;
	p->s = s;
	p->wsi = wsi;
	p->next = s->peers;
	s->peers = p;
	return p;
}

struct peer *peer_find(struct server *s, uint64_t id)
{
	for (struct peer *p = s->peers; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

void peer_free(struct peer *p)
{
	server_uploads_drop(p); /* as LangBot's handler: a connection's uploads end with it */
	for (struct peer **pp = &p->s->peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	wsq_clear(&p->out);
	sbuf_free(&p->in);
	free(p);
}

void peer_send(struct peer *p, json_t *reply)
{
	_cleanup_free_ char *text = lb_rpc_dumps(reply);
	json_decref(reply);
	if (!text)
		return;
	if (p->wsi) {
		if (wsq_push(&p->out, text, strlen(text)) == 0)
			lws_callback_on_writable(p->wsi);
		return;
	}
	_cleanup_free_ char *framed = NULL;
	size_t len;
	if (p->s->out_fd >= 0 && lb_rpc_frame(text, strlen(text), &framed, &len, NULL) == 0)
		lb_write_all(p->s->out_fd, framed, len);
}

int sbuf_add(struct sbuf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p, b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

void sbuf_free(struct sbuf *b)
{
	free(b->p);
	*b = (struct sbuf){0};
}

int ws_collect(struct sbuf *b, struct lws *wsi, const void *in, size_t len)
{
	if (b->len + len > SERVER_MAX_MSG) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, NULL, 0);
		return -1;
	}
	if (sbuf_add(b, in, len) < 0)
		return -1;
	return lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi);
}

int wsq_push(struct wsq *q, const char *text, size_t len)
{
	struct wsmsg *m = calloc(1, sizeof(*m));
	if (!m || !(m->buf = malloc(LWS_PRE + len + 1))) {
		free(m);
		return -1;
	}
	memcpy(m->buf + LWS_PRE, text, len);
	m->len = len;
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->bytes += len;
	return 0;
}

static void wsq_pop(struct wsq *q)
{
	struct wsmsg *m = q->head;
	q->head = m->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= m->len;
	free(m->buf);
	free(m);
}

/* One fragment of the head message; asks for the next writable callback while more is left. */
int wsq_write(struct wsq *q, struct lws *wsi)
{
	struct wsmsg *m = q->head;
	if (!m)
		return 0;
	size_t n = m->len - m->off < WS_FRAGMENT ? m->len - m->off : WS_FRAGMENT;
	bool last = m->off + n == m->len;
	int flags = lws_write_ws_flags(LWS_WRITE_TEXT, m->off == 0, last);
	/* lws writes the frame header into the LWS_PRE bytes before the piece */
	unsigned char *piece = m->buf + LWS_PRE + m->off;
	unsigned char save[LWS_PRE] = {0};
	if (m->off)
		memcpy(save, piece - LWS_PRE, LWS_PRE);
	int w = lws_write(wsi, piece, n, (enum lws_write_protocol)flags);
	if (m->off)
		memcpy(piece - LWS_PRE, save, LWS_PRE);
	if (w < (int)n)
		return -1;
	m->off += n;
	if (last)
		wsq_pop(q);
	if (q->head)
		lws_callback_on_writable(wsi);
	return 0;
}

void wsq_clear(struct wsq *q)
{
	while (q->head)
		wsq_pop(q);
}
