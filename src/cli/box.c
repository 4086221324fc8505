/*
 * lbbox box -s --ws-control-port N [--host H]: LangBot's Box runtime over stdio, started the way
 * LangBot starts `lbp box -s` (same argv and environment). stdout carries only RPC lines; this
 * file's messages go to stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lbbox/cleanup.h"
#include "lbbox/features.h"
#include "lbbox/util.h"
#include "server/server.h"

struct images {
	struct cli_globals *g;
	char *aliases; /* LBBOX_BOX_IMAGE_ALIASES: "ref=local,ref2=local2" */
	bool pull;     /* LBBOX_BOX_PULL=0 turns pulling missing images off */
};

/* The local image an alias maps ref to, or ref itself. */
static const char *alias_of(const struct images *im, const char *ref, char *buf, size_t len)
{
	size_t n = strlen(ref);
	for (const char *p = im->aliases; p && *p;) {
		const char *end = strchr(p, ',');
		size_t item = end ? (size_t)(end - p) : strlen(p);
		if (item > n + 1 && !strncmp(p, ref, n) && p[n] == '=') {
			snprintf(buf, len, "%.*s", (int)(item - n - 1), p + n + 1);
			return buf;
		}
		p = end ? end + 1 : p + item;
	}
	return ref;
}

static int resolve(struct images *im, const char *image, struct lb_spec *out, struct lb_err **err)
{
	char *argv[] = {"run", "--image", (char *)image, NULL};
	lb_spec_free(out);
	return cli_build_spec(im->g, 3, argv, out, err);
}

/* Box sessions name an image: an alias first, then the store, then a pull (§ issue 5). */
static int build(void *ctx, const struct lb_box_spec *bs, struct lb_spec *out, struct lb_err **err)
{
	struct images *im = ctx;
	char buf[512];
	const char *image = alias_of(im, bs->image, buf, sizeof(buf));
	if (resolve(im, image, out, NULL) == 0)
		return 0;
	if (im->pull) {
		const char *args[] = {"pull", image, NULL};
		struct lb_err *perr = NULL;
		if (cli_image_tool(im->g, args, true, &perr) == 0 &&
		    resolve(im, image, out, err) == 0)
			return 0;
		lb_err_free(&perr);
	}
	return lb_err_box(
	    err, LB_BOX_EBOX,
	    "image %s is not available: pull it (lbbox pull %s), load it (lbbox load), "
	    "or map it to a local image with LBBOX_BOX_IMAGE_ALIASES=%s=<image>",
	    bs->image, bs->image, bs->image);
}

static bool token_ok(const char *t)
{
	if (strlen(t) < 32)
		return false;
	for (; *t; t++)
		if (*t == ' ' || (*t >= '\t' && *t <= '\r'))
			return false;
	return true;
}

/* A TCP port 1..65535 (0 for serve's "any free port", tests use it). */
static int parse_port(const char *v, int *out)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n < 0 || n > 65535)
		return cli_error("invalid port '%s'", v), -1;
	*out = (int)n;
	return 0;
}

static int parse_args(int argc, char **argv, bool *stdio_mode, struct server *s)
{
	static const struct option opts[] = {{"ws-control-port", required_argument, NULL, 'p'},
					     {"host", required_argument, NULL, 'H'},
					     {"stdio", no_argument, NULL, 's'},
					     {0}};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+s", opts, NULL)) != -1) {
		if (c == 's')
			*stdio_mode = true;
		else if (c == 'p') {
			if (parse_port(optarg, &s->port) < 0)
				return -1;
		} else if (c == 'H')
			s->host = optarg;
		else
			return cli_error("unknown option '%s' (lbbox box -s --ws-control-port PORT "
					 "[--host HOST])",
					 argv[optind - 1]),
			       -1;
	}
	return 0;
}

/* --listen HOST:PORT */
static int parse_serve_args(int argc, char **argv, struct server *s, char *host, size_t len)
{
	static const struct option opts[] = {{"listen", required_argument, NULL, 'l'}, {0}};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		const char *colon = c == 'l' ? strrchr(optarg, ':') : NULL;
		if (c != 'l')
			return cli_error("unknown option '%s' (lbbox serve --listen HOST:PORT)",
					 argv[optind - 1]),
			       -1;
		if (!colon || colon == optarg || (size_t)(colon - optarg) >= len)
			return cli_error("--listen wants HOST:PORT, got '%s'", optarg), -1;
		snprintf(host, len, "%.*s", (int)(colon - optarg), optarg);
		if (parse_port(colon + 1, &s->port) < 0)
			return -1;
		s->host = host;
	}
	if (optind < argc)
		return cli_error("unexpected argument '%s'", argv[optind]), -1;
	return 0;
}

static int load_env_config(struct server *s)
{
	_cleanup_err_ struct lb_err *err = NULL;
	const char *cfg = getenv("LANGBOT_BOX_CONFIG");
	json_error_t jerr;
	if (!cfg || !*cfg)
		return 0;
	json_t *j = json_loads(cfg, 0, &jerr);
	if (!json_is_object(j)) {
		cli_error("warning: LANGBOT_BOX_CONFIG is not a JSON object (%s); ignored",
			  jerr.text);
		json_decref(j);
		return 0;
	}
	int r = server_apply_config(s, j, &err);
	json_decref(j);
	if (r < 0)
		cli_error("%s: %s", err->cls ? err->cls : "error", err->msg);
	return r;
}

static int start(struct server *s, struct cli_globals *g, struct images *im)
{
	_cleanup_err_ struct lb_err *err = NULL;
	char instance[13];
	size_t removed;
	if (lb_random_hex(instance, 12, &err) < 0 || cli_open_box(g, &s->box, &err) < 0)
		return cli_error("%s", err->msg), -1;
	snprintf(s->box.owner, sizeof(s->box.owner), "%s", instance);
	if (lb_box_instance_hold(&s->box, &s->instance_lock, &err) < 0)
		return cli_error("%s", err->msg), -1;
	/* §3.8: sessions of runtimes that are gone (never of a live one) */
	lb_box_session_reap(&s->box, 0, &removed, NULL);
	s->images = (struct server_images){.build = build, .ctx = im};
	s->features = lb_host_features();
	return load_env_config(s);
}

static struct server *server_new(void)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	const char *ping = getenv("LBBOX_BOX_WS_PING_SEC");
	const char *ttl = getenv("LBBOX_BOX_UPLOAD_TTL_SEC");
	s->in_fd = s->out_fd = s->instance_lock = -1;
	s->port = 5410;
	/* LangBot reaches the relay at 127.0.0.1 in stdio mode (§7.1); wider is asked for with
	 * --host */
	s->host = "127.0.0.1";
	s->max_file_bytes = 20971520; /* §3.1's default */
	s->ping_sec = ping && atoi(ping) > 0 && atoi(ping) < 3600 ? atoi(ping) : 30;
	/* nothing in lbbox reads an upload (LangBot's zip skill actions would): unread ones go */
	s->upload_ttl_ns =
	    (ttl && atoi(ttl) > 0 && atoi(ttl) <= 86400 ? (uint64_t)atoi(ttl) : 600) *
	    1000000000ull;
	return s;
}

static void server_delete(struct server *s)
{
	if (s->instance_lock >= 0)
		lb_box_instance_release(&s->box, s->instance_lock);
	json_decref(s->config);
	json_decref(s->features);
	lb_box_fini(&s->box);
	free(s);
}

/* A listener only this host can reach: an address in 127.0.0.0/8, ::1, or the name "localhost".
 * Anything else can be reached from the network: 0.0.0.0, ::, NULL (every address), other
 * addresses, other names (they may resolve anywhere; "127.x.example" is one), and interface
 * names (lws binds those to the interface's address). */
static bool loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (!host)
		return false;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return ntohl(a4.s_addr) >> 24 == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return !strcmp(host, "localhost");
}

/* The environment both modes read (§6.8, §7.2). */
static int server_env(struct server *s)
{
	const char *trusted = getenv("LANGBOT_BOX_TRUSTED_INSTANCE_UUID");
	const char *token = getenv("LANGBOT_BOX_CONTROL_TOKEN");
	if (token && *token && (!token_ok(token) || strlen(token) >= sizeof(s->token)))
		return cli_error("LANGBOT_BOX_CONTROL_TOKEN must be at least 32 characters without "
				 "whitespace"),
		       -1;
	snprintf(s->token, sizeof(s->token), "%s", token ? token : "");
	snprintf(s->trusted, sizeof(s->trusted), "%s", trusted ? trusted : "");
	/* /rpc/ws runs commands as root and the relay (stdio mode too) writes to managed
	 * processes' stdin: without a token only this host may reach the listener */
	if (!s->token[0] && !loopback(s->host))
		return cli_error("refusing to listen on %s without LANGBOT_BOX_CONTROL_TOKEN "
				 "(anyone reaching the port could run commands or attach to "
				 "managed processes); set a token or listen on 127.0.0.1",
				 s->host ? s->host : "every address"),
		       -1;
	return 0;
}

static int serve(struct cli_globals *g, struct server *s)
{
	const char *pull = getenv("LBBOX_BOX_PULL");
	struct images im = {.g = g,
			    .aliases = getenv("LBBOX_BOX_IMAGE_ALIASES"),
			    .pull = !pull || strcmp(pull, "0") != 0};
	_cleanup_err_ struct lb_err *err = NULL;
	if (server_env(s) < 0)
		return 1;
	if (cli_reexec_sealed(g->argv, &err) < 0)
		return cli_error("%s", err->msg), 1;
	return start(s, g, &im) == 0 ? server_run(s) : 1;
}

int cli_box(struct cli_globals *g, int argc, char **argv)
{
	bool stdio_mode = false;
	const char *trusted = getenv("LANGBOT_BOX_TRUSTED_INSTANCE_UUID");
	struct server *s = server_new();
	int code = 1;
	if (!s || parse_args(argc, argv, &stdio_mode, s) < 0)
		goto out;
	if (!stdio_mode) {
		/* §7.1: LangBot connects to ws://HOST:PORT/rpc/ws itself */
		s->listen_required = true;
	} else if (!trusted || !*trusted) {
		cli_error("LANGBOT_BOX_TRUSTED_INSTANCE_UUID is required for stdio Box control");
		goto out;
	} else {
		s->in_fd = 0, s->out_fd = 1;
	}
	code = serve(g, s);
out:
	if (s)
		server_delete(s);
	return code;
}

/* lbbox serve --listen HOST:PORT: the runtime for LangBot's box.runtime.endpoint. */
int cli_serve(struct cli_globals *g, int argc, char **argv)
{
	char host[256];
	struct server *s = server_new();
	int code = 1;
	if (s && parse_serve_args(argc, argv, s, host, sizeof(host)) == 0) {
		s->listen_required = true;
		code = serve(g, s);
	}
	if (s)
		server_delete(s);
	return code;
}
