/*
 * The Box runtime server (`lbbox box -s`, `lbbox serve`): the transport of LangBot's RPC (the
 * protocol itself is src/rpc/): stdio, HTTP / WebSocket, the relay, forked jobs, uploads.
 * One thread, one libwebsockets event loop: stdin, the signalfd, the actions' reply pipes and the
 * relays' keeper sockets are adopted as raw descriptors beside the HTTP/WebSocket listener, so
 * nothing blocks the loop and forking an action is safe.
 */
#ifndef LBBOX_SERVER_H
#define LBBOX_SERVER_H

#include <jansson.h>
#include <libwebsockets.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbbox/box/box.h"
#include "lbbox/rpc/rpc.h"

#define SERVER_MAX_JOBS (LB_RPC_MAX_INFLIGHT * 4 + 8)
#define SERVER_MAX_MSG	(16u << 20) /* §6.2 / §6.3: a message is at most 16 MiB */

struct server;

#define SERVER_MAX_UPLOADS 128 /* §6.6: a connection's uploads, in progress or not yet read */
/* A __file_chunk upload, owned by the connection that sent it: its file goes when it is read,
 * when it fails, when it lies unread past the upload TTL, and when that connection closes. */
struct upload {
	char key[256];
	char *path; /* the file, in the storage directory */
	size_t received;
	bool complete;	  /* every chunk is in */
	uint64_t touched; /* lb_now_ns() of its last chunk */
};

/* A descriptor the loop watches (adopted as an lws raw file); the callbacks get it back. */
struct fdwatch {
	int (*on_read)(struct fdwatch *w);     /* < 0: close it */
	int (*on_writable)(struct fdwatch *w); /* < 0: close it */
	void (*on_close)(struct fdwatch *w);   /* lws is about to close the descriptor */
	struct lws *wsi;
	int fd;
	struct server *s;
};

/* A growable byte buffer (capacity doubles: messages arrive in ~4 KiB pieces). */
struct sbuf {
	char *p;
	size_t len, cap;
};
int sbuf_add(struct sbuf *b, const void *data, size_t n);
void sbuf_free(struct sbuf *b);
/* A received piece of a WebSocket message into b: 1 once the message is whole, 0 while more is
 * to come, -1 beyond 16 MiB (close reason 1009 set) or without memory. */
int ws_collect(struct sbuf *b, struct lws *wsi, const void *in, size_t len);

/* An outgoing WebSocket message, sent in fragments. */
struct wsmsg {
	struct wsmsg *next;
	size_t len, off;
	unsigned char *buf; /* LWS_PRE bytes of headroom, then the text */
};

struct wsq {
	struct wsmsg *head, *tail;
	size_t bytes;
};

/* A control connection: the stdio pipe or one /rpc/ws client. Replies find it by id. */
struct peer {
	struct peer *next;
	uint64_t id;
	struct server *s;
	struct lws *wsi; /* NULL for stdio */
	struct wsq out;
	struct sbuf in; /* the WebSocket message being received */
	bool paused;	/* its requests are not read while too many replies wait for it */
	struct upload *uploads;
	size_t n_uploads;
};

/* An action running in a forked child; its reply comes back through its pipe. */
struct job {
	struct fdwatch w;
	pid_t pid;
	uint64_t peer;	   /* 0 = background work, no reply */
	struct sbuf reply; /* the child's reply text */
	json_t *seq_id;
	const char *action;
	char fence[80]; /* tenant actions: the namespace and generation they ran under */
	int64_t generation;
	bool wait_on_shutdown; /* creates, deletes, starts, stops: let them finish */
	bool reaped;	       /* waited for already, by server_reap_children */
};

struct server {
	struct lb_rpc_runtime rt; /* the protocol's state: the box, config, fences */
	char token[256];	  /* LANGBOT_BOX_CONTROL_TOKEN, "" = no auth on HTTP */
	struct job *jobs[SERVER_MAX_JOBS];
	size_t n_jobs;
	struct peer *peers;
	uint64_t upload_ttl_ns; /* an upload idle this long is removed (LBBOX_BOX_UPLOAD_TTL_SEC) */
	uint64_t next_peer;
	size_t relays;
	json_t *resources; /* /healthz's counts, recomputed at most once a second */
	uint64_t resources_at;
	/* transport */
	int in_fd, out_fd; /* stdio mode; -1 in serve mode */
	const char *host;  /* HTTP listener; NULL = all addresses */
	int port;	   /* 0 = no listener */
	bool listen_required;
	int ping_sec;
	lws_retry_bo_t retry; /* lws pings idle WebSockets by this policy */
	struct lws_context *lws;
	struct lws_vhost *fds_vh, *http_vh;
	lws_sorted_usec_list_t reap_timer, wake_timer;
	int instance_lock;
	bool stop, shutting_down;
};

/* main.c: "lbbox: <msg>" on stderr, control characters escaped (one line). */
void server_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* loop.c: serves until stdin EOF (stdio mode) or SIGTERM, then drops every session it owns.
 * Returns the process exit status. */
int server_run(struct server *s);

/* request.c: a request from a peer, answered inline or run in a job. */
void server_handle(struct server *s, struct peer *p, json_t *msg);
/* A received message (lb_rpc_msg_fn's arguments): handled, or, undecodable, answered with bad
 * when it has a seq_id and otherwise ignored with one line on stderr. */
void server_receive(struct server *s, struct peer *p, json_t *msg, json_t *seq_id,
		    const struct lb_err *bad);

/* jobs.c: watched descriptors and forked actions. */
/* Watch fd (the loop owns and closes it from now on); -1 when it cannot. */
int server_watch(struct server *s, struct fdwatch *w, int fd);
void server_unwatch(struct fdwatch *w);
int server_fd_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len);
/* fork + reply pipe: the job's pid in the parent; 0 in the child, with *fd the pipe to write
 * the reply to (server_job_finish). p = NULL: background work, no reply. */
/* The runtime is its sessions' subreaper: a sandbox's pid 1 or a keeper a job started outlives
 * the job and becomes the runtime's child; on SIGCHLD every child that ended is reaped here
 * (jobs included, marked), so none waits as a zombie for the host's init. */
void server_reap_children(struct server *s);
pid_t server_job_start(struct server *s, struct peer *p, json_t *seq_id, const char *action,
		       const char *fence, int64_t gen, int *fd);
__attribute__((noreturn)) void server_job_finish(int fd, json_t *reply);

/* peer.c: control connections. */
struct peer *peer_new(struct server *s, struct lws *wsi);
struct peer *peer_find(struct server *s, uint64_t id);
void peer_free(struct peer *p);
void peer_send(struct peer *p, json_t *reply); /* takes the reply */
/* wsq: queue a text message (copied); write the next fragment when writable (< 0: error). */
int wsq_push(struct wsq *q, const char *text, size_t len);
int wsq_write(struct wsq *q, struct lws *wsi);
void wsq_clear(struct wsq *q);

/* http.c: the listener (HTTP endpoints, /rpc/ws, the relay). */
int server_http_start(struct server *s, struct lb_err **err);
/* reject.c: a whole HTTP answer to an upgrade request (1: answered, -1: hang up). */
int server_http_reject(struct lws *wsi, unsigned status, const char *ctype, const char *body);
json_t *server_resources(struct server *s);

/* peercred.c: the uid owning the other end of a (loopback) TCP connection, -1 when unknown;
 * trusted: lbbox's own user or root. */
long server_peer_uid(int fd);
bool server_peer_trusted(int fd);

/* auth.c: §6.8 / §6.9 handshake checks. */
bool auth_token_ok(struct server *s, struct lws *wsi);
/* The instance header: true when absent-and-allowed or trusted (pins it when pin is set). */
bool auth_instance_ok(struct server *s, struct lws *wsi, bool pin, char *out, size_t len);
/* The relay's context headers -> the physical session id it may open; 1 = legacy (no
 * headers), 0 = checked, -1 = refused. */
int auth_relay_context(struct server *s, struct lws *wsi, const char *instance, const char *session,
		       struct lb_rpc_context *ctx);

/* relay.c: the managed-process relay (§6.9). */
struct relay;
/* The upgrade request for path: 1 = answered (400/401 written), 0 = accept, -1 = hang up. */
int relay_check(struct server *s, struct lws *wsi, const char *path);
int relay_callback(struct server *s, struct lws *wsi, enum lws_callback_reasons reason, void **slot,
		   void *in, size_t len);
bool relay_path(const char *path);

/* files.c: __file_chunk (§6.6), into uploads the peer owns. */
json_t *server_file_chunk(struct server *s, struct peer *p, json_t *data, json_t *seq_id);
/* The peer's complete upload named by data.file_key, opened read-only (-1: none); the upload
 * is removed either way. */
int server_upload_take(struct peer *p, const json_t *data);
/* Removes the uploads idle past the TTL, of every peer. */
void server_uploads_expire(struct server *s);
/* Removes every upload of p (it is closing). */
void server_uploads_drop(struct peer *p);

/* skill_client.c: the skill store's work, run in the helper lbbox-skill beside lbbox-server. */
extern const struct lb_rpc_skills server_skills;

#endif
