/* lbbox-runc's life-cycle verbs: create, run, start, state, kill, delete, list, ps, spec. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "runc.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/util.h"

/* getopt_long over a verb's argv (argv[0] is the verb); '?' and ':' become one error line. */
static int bad_option(const struct runc_globals *g, const char *verb, char **argv)
{
	return runc_fail(g, "%s: unknown or incomplete option '%s'", verb, argv[optind - 1]);
}

/* Exactly one ID left after the options. */
static const char *one_id(const struct runc_globals *g, const char *verb, int argc, char **argv,
			  bool extra_ok)
{
	struct lb_err *err = NULL;
	if (optind >= argc) {
		runc_fail(g, "%s: a container id is required", verb);
		return NULL;
	}
	if (!extra_ok && optind + 1 < argc) {
		runc_fail(g, "%s: unexpected argument '%s'", verb, argv[optind + 1]);
		return NULL;
	}
	if (lb_oci_check_id(argv[optind], &err) < 0) {
		runc_fail_err(g, &err);
		return NULL;
	}
	return argv[optind];
}

int runc_preserve_fds(const struct runc_globals *g, const char *arg, unsigned first, unsigned *out)
{
	uint64_t n;
	if (lb_parse_u64(arg, &n, NULL) < 0 || n > LB_MAX_PRESERVE_FDS)
		return runc_fail(g, "--preserve-fds %s is not a count", arg);
	/* as runc: each must exist (nothing of ours is open yet to take their numbers) */
	for (unsigned fd = first; fd < first + n; fd++)
		if (fcntl((int)fd, F_GETFD) < 0)
			return runc_fail(g, "--preserve-fds %s: fd %u is not open", arg, fd);
	*out = (unsigned)n;
	return 0;
}

/* systemd socket activation, as runc: the LISTEN_FDS descriptors meant for this very process
 * (LISTEN_PID) go to the command first, the --preserve-fds ones after them. */
static int listen_fds(const struct runc_globals *g, unsigned *out)
{
	const char *n = getenv("LISTEN_FDS"), *pid = getenv("LISTEN_PID");
	uint64_t v, p;
	*out = 0;
	if (!n || !pid || lb_parse_u64(pid, &p, NULL) < 0 || p != (uint64_t)getpid())
		return 0;
	if (lb_parse_u64(n, &v, NULL) < 0 || v > LB_MAX_PRESERVE_FDS)
		return runc_fail(g, "LISTEN_FDS %s is not a count", n);
	for (unsigned fd = 3; fd < 3 + v; fd++)
		if (fcntl((int)fd, F_GETFD) < 0)
			return runc_fail(g, "LISTEN_FDS %s: fd %u is not open", n, fd);
	*out = (unsigned)v;
	return 0;
}

int runc_write_pid_file(const struct runc_globals *g, const char *path, pid_t pid)
{
	char buf[32];
	struct lb_err *err = NULL;
	int n = snprintf(buf, sizeof(buf), "%d", pid);
	if (lb_write_file_atomic(path, buf, (size_t)n, 0644, &err) < 0)
		return runc_fail_err(g, &err);
	return 0;
}

static int print_json(json_t *j, size_t flags)
{
	_cleanup_free_ char *s = j ? json_dumps(j, flags) : NULL;
	if (!s)
		return 1;
	puts(s);
	return 0;
}

/* run: the container in the foreground (its pid 1 is our child), deleted after unless -d. */
static int run_foreground(struct runc_globals *g, const char *id, pid_t pid)
{
	struct lb_err *err = NULL;
	int status = 0;
	if (lb_oci_start(&g->oci, id, &err) < 0) {
		lb_oci_delete(&g->oci, id, true, NULL);
		return runc_fail_err(g, &err);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (lb_oci_delete(&g->oci, id, true, &err) < 0)
		runc_fail_err(g, &err);
	return lb_exit_code_of(status);
}

int runc_create(struct runc_globals *g, int argc, char **argv, bool run)
{
	enum { O_PIDFILE = 256, O_CONSOLE, O_NOPIVOT, O_NOKEYRING, O_PRESERVE, O_KEEP, O_NOSUB };
	static const struct option opts[] = {
	    {"bundle", required_argument, NULL, 'b'},
	    {"pid-file", required_argument, NULL, O_PIDFILE},
	    {"console-socket", required_argument, NULL, O_CONSOLE},
	    {"no-pivot", no_argument, NULL, O_NOPIVOT},
	    {"no-new-keyring", no_argument, NULL, O_NOKEYRING},
	    {"preserve-fds", required_argument, NULL, O_PRESERVE},
	    {"detach", no_argument, NULL, 'd'},
	    {"keep", no_argument, NULL, O_KEEP},
	    {"no-subreaper", no_argument, NULL, O_NOSUB},
	    {0},
	};
	const char *bundle = ".", *pid_file = NULL, *preserve = "0";
	struct lb_oci_create_opts o = {0};
	bool detach = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:b:d", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			bundle = optarg;
			break;
		case O_PIDFILE:
			pid_file = optarg;
			break;
		case O_CONSOLE:
			o.console_socket = optarg;
			break;
		case O_PRESERVE:
			preserve = optarg;
			break;
		case 'd':
			detach = true;
			break;
		case O_NOPIVOT:	  /* the engine always pivots: stricter, never weaker */
		case O_NOKEYRING: /* no keyring is ever created inside */
		case O_KEEP:
		case O_NOSUB:
			break;
		default:
			return bad_option(g, argv[0], argv);
		}
	}
	const char *id = one_id(g, argv[0], argc, argv, false);
	if (!id || listen_fds(g, &o.listen_fds) ||
	    runc_preserve_fds(g, preserve, 3 + o.listen_fds, &o.preserve_fds))
		return 1;
	_cleanup_free_ char *abs = realpath(bundle, NULL);
	if (!abs)
		return runc_fail(g, "bundle %s: %s", bundle, strerror(errno));
	o.bundle = abs;
	struct lb_err *err = NULL;
	pid_t pid;
	if (lb_oci_create(&g->oci, id, &o, &pid, &err) < 0)
		return runc_fail_err(g, &err);
	if (pid_file && runc_write_pid_file(g, pid_file, pid)) {
		lb_oci_delete(&g->oci, id, true, NULL);
		return 1;
	}
	if (!run)
		return 0;
	if (detach) {
		if (lb_oci_start(&g->oci, id, &err) < 0) {
			lb_oci_delete(&g->oci, id, true, NULL);
			return runc_fail_err(g, &err);
		}
		return 0;
	}
	return run_foreground(g, id, pid);
}

/* Verbs whose only option is none: start ID, state ID. */
static const char *plain_id(struct runc_globals *g, int argc, char **argv)
{
	static const struct option none[] = {{0}};
	optind = 1;
	if (getopt_long(argc, argv, "+:", none, NULL) != -1) {
		bad_option(g, argv[0], argv);
		return NULL;
	}
	return one_id(g, argv[0], argc, argv, false);
}

int runc_start(struct runc_globals *g, int argc, char **argv)
{
	struct lb_err *err = NULL;
	const char *id = plain_id(g, argc, argv);
	if (!id)
		return 1;
	return lb_oci_start(&g->oci, id, &err) < 0 ? runc_fail_err(g, &err) : 0;
}

int runc_pause(struct runc_globals *g, int argc, char **argv)
{
	struct lb_err *err = NULL;
	const char *id = plain_id(g, argc, argv);
	if (!id)
		return 1;
	return lb_oci_pause(&g->oci, id, !strcmp(argv[0], "pause"), &err) < 0
		   ? runc_fail_err(g, &err)
		   : 0;
}

int runc_state(struct runc_globals *g, int argc, char **argv)
{
	struct lb_err *err = NULL;
	struct lb_oci_state st;
	const char *id = plain_id(g, argc, argv);
	if (!id)
		return 1;
	if (lb_oci_state_load(&g->oci, id, &st, &err) < 0)
		return runc_fail_err(g, &err);
	_cleanup_json_ json_t *j = lb_oci_state_json(&st);
	lb_oci_state_free(&st);
	return print_json(j, JSON_INDENT(2));
}

int runc_kill(struct runc_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {{"all", no_argument, NULL, 'a'}, {0}};
	struct lb_err *err = NULL;
	bool all = false;
	int c, sig = SIGTERM;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:a", opts, NULL)) != -1) {
		if (c != 'a')
			return bad_option(g, argv[0], argv);
		all = true;
	}
	const char *id = one_id(g, argv[0], argc, argv, true);
	if (!id)
		return 1;
	if (optind + 2 < argc)
		return runc_fail(g, "kill: unexpected argument '%s'", argv[optind + 2]);
	if (optind + 1 < argc && (sig = cli_parse_signal(argv[optind + 1])) < 0)
		return runc_fail(g, "kill: unknown signal '%s'", argv[optind + 1]);
	return lb_oci_kill(&g->oci, id, sig, all, &err) < 0 ? runc_fail_err(g, &err) : 0;
}

int runc_delete(struct runc_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {{"force", no_argument, NULL, 'f'}, {0}};
	struct lb_err *err = NULL;
	bool force = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:f", opts, NULL)) != -1) {
		if (c != 'f')
			return bad_option(g, argv[0], argv);
		force = true;
	}
	const char *id = one_id(g, argv[0], argc, argv, false);
	if (!id)
		return 1;
	return lb_oci_delete(&g->oci, id, force, &err) < 0 ? runc_fail_err(g, &err) : 0;
}

/* --format table|json (-f) and --quiet (-q) of list; ps shares --format. */
static int parse_format(struct runc_globals *g, int argc, char **argv, bool *json, bool *quiet)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'}, {"quiet", no_argument, NULL, 'q'}, {0}};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:f:q", opts, NULL)) != -1) {
		if (c == 'q' && quiet) {
			*quiet = true;
		} else if (c == 'f' && (!strcmp(optarg, "json") || !strcmp(optarg, "table"))) {
			*json = !strcmp(optarg, "json");
		} else if (c == 'f') {
			return runc_fail(g, "%s: --format must be table or json", argv[0]);
		} else {
			return bad_option(g, argv[0], argv);
		}
	}
	return 0;
}

int runc_list(struct runc_globals *g, int argc, char **argv)
{
	struct lb_err *err = NULL;
	bool json = false, quiet = false;
	_cleanup_strv_ char **ids = NULL;
	if (parse_format(g, argc, argv, &json, &quiet))
		return 1;
	if (optind < argc)
		return runc_fail(g, "list: unexpected argument '%s'", argv[optind]);
	if (lb_oci_list(&g->oci, &ids, &err) < 0)
		return runc_fail_err(g, &err);
	_cleanup_json_ json_t *arr = json_array();
	if (!json && !quiet)
		printf("%-20s %-8s %-10s %-40s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED");
	for (char **id = ids; id && *id; id++) {
		struct lb_oci_state st;
		if (lb_oci_state_load(&g->oci, *id, &st, NULL) < 0)
			continue;
		pid_t pid = st.status == LB_OCI_STOPPED ? 0 : st.pid;
		if (quiet)
			puts(*id);
		else if (!json)
			printf("%-20s %-8d %-10s %-40s %s\n", *id, pid,
			       lb_oci_status_name(st.status), st.bundle, st.created);
		else
			json_array_append_new(arr, lb_oci_state_json(&st));
		lb_oci_state_free(&st);
	}
	return json ? print_json(arr, JSON_COMPACT) : 0;
}

int runc_ps(struct runc_globals *g, int argc, char **argv)
{
	struct lb_err *err = NULL;
	bool json = false;
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;
	if (parse_format(g, argc, argv, &json, NULL))
		return 1;
	/* ps ID [PS_ARGS...]: the ps arguments are not used, the pids are listed */
	const char *id = one_id(g, argv[0], argc, argv, true);
	if (!id)
		return 1;
	if (lb_oci_pids(&g->oci, id, &pids, &n, &err) < 0)
		return runc_fail_err(g, &err);
	if (!json) {
		puts("PID");
		for (size_t i = 0; i < n; i++)
			printf("%d\n", pids[i]);
		return 0;
	}
	_cleanup_json_ json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_integer(pids[i]));
	return print_json(arr, JSON_COMPACT);
}

int runc_spec(struct runc_globals *g, int argc, char **argv)
{
	enum { O_ROOTLESS = 256 };
	static const struct option opts[] = {{"bundle", required_argument, NULL, 'b'},
					     {"rootless", no_argument, NULL, O_ROOTLESS},
					     {0}};
	const char *bundle = ".";
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:b:", opts, NULL)) != -1) {
		if (c == 'b')
			bundle = optarg;
		else if (c == O_ROOTLESS)
			return runc_fail(g, "spec --rootless is not supported");
		else
			return bad_option(g, argv[0], argv);
	}
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	_cleanup_json_ json_t *j = lb_oci_default_spec();
	_cleanup_free_ char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	if (!s)
		return runc_fail(g, "spec: out of memory");
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return runc_fail(g, "spec: %s: %s", path, strerror(errno));
	int r = lb_write_all(fd, s, strlen(s)) < 0 || lb_write_all(fd, "\n", 1) < 0;
	close(fd);
	return r ? runc_fail(g, "spec: write %s", path) : 0;
}
