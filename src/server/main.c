/*
 * lbbox-server: LangBot's Box runtime. `lbbox box -s --ws-control-port N [--host H]` (stdio, the
 * way LangBot starts `lbp box -s`: same argv and environment) and `lbbox serve --listen
 * HOST:PORT` (WebSocket) exec this program with their whole argv, global options included.
 * stdout carries only RPC lines; this file's messages go to stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/features.h"
#include "lbbox/base/util.h"
#include "server.h"

void server_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *text = lb_vformat_line(fmt, ap);
	va_end(ap);
	fprintf(stderr, "lbbox: %s\n", text ? text : "out of memory");
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
		return server_error("invalid port '%s'", v), -1;
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
			return server_error(
				   "unknown option '%s' (lbbox box -s --ws-control-port PORT "
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
			return server_error("unknown option '%s' (lbbox serve --listen HOST:PORT)",
					    argv[optind - 1]),
			       -1;
		if (!colon || colon == optarg || (size_t)(colon - optarg) >= len)
			return server_error("--listen wants HOST:PORT, got '%s'", optarg), -1;
		snprintf(host, len, "%.*s", (int)(colon - optarg), optarg);
		if (parse_port(colon + 1, &s->port) < 0)
			return -1;
		s->host = host;
	}
	if (optind < argc)
		return server_error("unexpected argument '%s'", argv[optind]), -1;
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
		server_error("warning: LANGBOT_BOX_CONFIG is not a JSON object (%s); ignored",
			     jerr.text);
		json_decref(j);
		return 0;
	}
	int r = lb_rpc_apply_config(&s->rt, j, &err);
	json_decref(j);
	if (r < 0)
		server_error("%s: %s", err->cls ? err->cls : "error", err->msg);
	return r;
}

static int start(struct server *s, const struct lb_paths *paths)
{
	_cleanup_err_ struct lb_err *err = NULL;
	char instance[13];
	if (lb_random_hex(instance, 12, &err) < 0 || lb_box_open_env(&s->rt.box, paths, &err) < 0)
		return server_error("%s", err->msg), -1;
	s->rt.features = lb_host_features();
	snprintf(s->rt.box.owner, sizeof(s->rt.box.owner), "%s", instance);
	if (lb_box_instance_hold(&s->rt.box, &s->instance_lock, &err) < 0)
		return server_error("%s", err->msg), -1;
	/* §3.8: sessions of runtimes that are gone (never of a live one) go in the reaper's first
	 * round, a job the loop starts at once (loop.c): not before this runtime listens, as a
	 * sandbox's pid 1 whose runtime was killed is the host init's to reap, which some inits do
	 * seconds late, and lbbox waits for that (destroy.c) */
	return load_env_config(s);
}

static struct server *server_new(void)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	const char *ping = getenv("LBBOX_BOX_WS_PING_SEC");
	const char *ttl = getenv("LBBOX_BOX_UPLOAD_TTL_SEC");
	lb_rpc_runtime_init(&s->rt);
	s->rt.skills = &server_skills; /* in lbbox-skill: skill_client.c */
	s->in_fd = s->out_fd = s->instance_lock = -1;
	s->port = 5410;
	/* LangBot reaches the relay at 127.0.0.1 in stdio mode (§7.1); wider is asked for with
	 * --host */
	s->host = "127.0.0.1";
	s->ping_sec = ping && atoi(ping) > 0 && atoi(ping) < 3600 ? atoi(ping) : 30;
	/* an upload no zip skill action read within the TTL goes */
	s->upload_ttl_ns =
	    (ttl && atoi(ttl) > 0 && atoi(ttl) <= 86400 ? (uint64_t)atoi(ttl) : 600) *
	    1000000000ull;
	return s;
}

static void server_delete(struct server *s)
{
	if (s->instance_lock >= 0)
		lb_box_instance_release(&s->rt.box, s->instance_lock);
	lb_rpc_runtime_fini(&s->rt);
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
		return server_error(
			   "LANGBOT_BOX_CONTROL_TOKEN must be at least 32 characters without "
			   "whitespace"),
		       -1;
	snprintf(s->token, sizeof(s->token), "%s", token ? token : "");
	snprintf(s->rt.trusted, sizeof(s->rt.trusted), "%s", trusted ? trusted : "");
	/* /rpc/ws runs commands as root and the relay (stdio mode too) writes to managed
	 * processes' stdin: without a token only this host may reach the listener */
	if (!s->token[0] && !loopback(s->host))
		return server_error("refusing to listen on %s without LANGBOT_BOX_CONTROL_TOKEN "
				    "(anyone reaching the port could run commands or attach to "
				    "managed processes); set a token or listen on 127.0.0.1",
				    s->host ? s->host : "every address"),
		       -1;
	return 0;
}

static int serve(const struct lb_paths *paths, char **argv, struct server *s)
{
	_cleanup_err_ struct lb_err *err = NULL;
	if (server_env(s) < 0)
		return 1;
	if (lb_reexec_sealed(argv, &err) < 0)
		return server_error("%s", err->msg), 1;
	return start(s, paths) == 0 ? server_run(s) : 1;
}

static int box_stdio(const struct lb_paths *paths, char **self, int argc, char **argv)
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
		s->rt.remote_peer = true;
	} else if (!trusted || !*trusted) {
		server_error("LANGBOT_BOX_TRUSTED_INSTANCE_UUID is required for stdio Box control");
		goto out;
	} else {
		s->in_fd = 0, s->out_fd = 1;
	}
	code = serve(paths, self, s);
out:
	if (s)
		server_delete(s);
	return code;
}

/* lbbox serve --listen HOST:PORT: the runtime for LangBot's box.runtime.endpoint. */
static int box_serve(const struct lb_paths *paths, char **self, int argc, char **argv)
{
	char host[256];
	struct server *s = server_new();
	int code = 1;
	if (s && parse_serve_args(argc, argv, s, host, sizeof(host)) == 0) {
		s->listen_required = true;
		s->rt.remote_peer = true; /* LangBot runs elsewhere, in a directory of its own */
		code = serve(paths, self, s);
	}
	if (s)
		server_delete(s);
	return code;
}

/* lbbox-server [--root DIR] [--runroot DIR] box|serve ...: lbbox's argv, as lbbox got it. */
int main(int argc, char **argv)
{
	/* an ignored SIGCHLD is inherited: children would be reaped by the kernel, and lbbox's
	 * waits (for its sandboxes' pid 1s, their commands) would never see them end */
	signal(SIGCHLD, SIG_DFL);
	static const struct option opts[] = {
	    {"root", required_argument, NULL, 'r'}, {"runroot", required_argument, NULL, 'R'}, {0}};
	static struct lb_default_paths defaults;
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_paths paths;
	int c;

	lb_paths_defaults(&defaults);
	paths = (struct lb_paths){.root = defaults.root, .runroot = defaults.runroot};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c == 'r')
			paths.root = optarg;
		else if (c == 'R')
			paths.runroot = optarg;
		else
			return server_error("unknown option '%s' (see lbbox --help)",
					    argv[optind - 1]),
			       LB_EXIT_SETUP;
	}
	const char *verb = optind < argc ? argv[optind] : "";
	if (strcmp(verb, "box") && strcmp(verb, "serve"))
		return server_error(
			   "usage: lbbox-server [--root DIR] [--runroot DIR] box|serve ..."),
		       LB_EXIT_SETUP;
	if (lb_paths_check_runroot(paths.runroot, &err) < 0 || lb_paths_secure(&paths, &err) < 0)
		return server_error("%s", err->msg), LB_EXIT_SETUP;
	int first = optind;
	if (!strcmp(verb, "box"))
		return box_stdio(&paths, argv, argc - first, argv + first);
	return box_serve(&paths, argv, argc - first, argv + first);
}
