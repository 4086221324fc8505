/* lbbox-runc exec: a process.json (-p) or CMD [ARG...] with --cwd, --env and --tty. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <unistd.h>

#include "cli.h"
#include "runc.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

struct exec_args {
	const char *process, *pid_file, *console, *cwd;
	char **env; /* borrowed from argv */
	size_t n_env;
	bool detach, tty;
	bool set_user;
	uint32_t uid, gid;
	uint64_t add_caps; /* --cap, repeatable */
	unsigned preserve_fds;
};

/* --cap CAP_NET_ADMIN (or cap_net_admin, as libcap names it) */
static int parse_cap(const char *s, uint64_t *caps)
{
	char name[64];
	cap_value_t v;
	if (strlen(s) >= sizeof(name))
		return -1;
	for (size_t i = 0; (name[i] = (char)tolower((unsigned char)s[i])); i++)
		;
	if (strncmp(name, "cap_", 4) || cap_from_name(name, &v) < 0 || v < 0 || v >= 64)
		return -1;
	*caps |= 1ULL << v;
	return 0;
}

/* --user UID[:GID], numeric (names would need the container's /etc/passwd) */
static int parse_user(const char *s, struct exec_args *a)
{
	char uid[32];
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	if (n == 0 || n >= sizeof(uid))
		return -1;
	memcpy(uid, s, n);
	uid[n] = '\0';
	if (lb_parse_id(uid, &a->uid, NULL) < 0 ||
	    (colon && lb_parse_id(colon + 1, &a->gid, NULL) < 0))
		return -1;
	if (!colon)
		a->gid = a->uid;
	a->set_user = true;
	return 0;
}

static char **strv_dup(char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	char **out = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = strdup(v[i]))) {
			lb_strvfreep(&out);
			return NULL;
		}
	return out;
}

static int from_flags(const struct exec_args *a, char **cmd, struct lb_oci_process *p)
{
	static char *const path[] = {
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	memset(p, 0, sizeof(*p));
	p->argv = strv_dup(cmd);
	p->env = strv_dup(a->n_env ? a->env : (char **)path);
	p->cwd = strdup(a->cwd ? a->cwd : "/");
	p->terminal = a->tty;
	p->set_user = a->set_user;
	p->uid = a->uid;
	p->gid = a->gid;
	return p->argv && p->env && p->cwd ? 0 : -1;
}

static int load_process(struct runc_globals *g, const struct exec_args *a, char **cmd,
			struct lb_oci_process *p)
{
	struct lb_err *err = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (!a->process)
		return *cmd ? (from_flags(a, cmd, p) < 0 ? runc_fail(g, "exec: out of memory") : 0)
			    : runc_fail(g, "exec: a command or --process is required");
	if (*cmd)
		return runc_fail(g, "exec: give either --process or a command, not both");
	if (lb_read_file(a->process, LB_OCI_CONFIG_MAX, &text, &len, &err) < 0 ||
	    lb_oci_process_parse(text, len, p, &err) < 0)
		return runc_fail_err(g, &err);
	if (a->tty)
		p->terminal = true;
	if (a->set_user) {
		p->set_user = true;
		p->uid = a->uid;
		p->gid = a->gid;
	}
	return 0;
}

int runc_exec(struct runc_globals *g, int argc, char **argv)
{
	enum { O_PIDFILE = 256, O_CONSOLE, O_CWD, O_NNP, O_PRESERVE, O_LABEL, O_APPARMOR, O_CG };
	static const struct option opts[] = {
	    {"process", required_argument, NULL, 'p'},
	    {"detach", no_argument, NULL, 'd'},
	    {"tty", no_argument, NULL, 't'},
	    {"pid-file", required_argument, NULL, O_PIDFILE},
	    {"console-socket", required_argument, NULL, O_CONSOLE},
	    {"cwd", required_argument, NULL, O_CWD},
	    {"env", required_argument, NULL, 'e'},
	    {"user", required_argument, NULL, 'u'},
	    {"cap", required_argument, NULL, 'c'},
	    {"additional-gids", required_argument, NULL, 'g'},
	    {"no-new-privs", no_argument, NULL, O_NNP},
	    {"preserve-fds", required_argument, NULL, O_PRESERVE},
	    {"process-label", required_argument, NULL, O_LABEL},
	    {"apparmor", required_argument, NULL, O_APPARMOR},
	    {"cgroup", required_argument, NULL, O_CG},
	    {0},
	};
	struct exec_args a = {0};
	_cleanup_free_ char **env = calloc((size_t)argc + 1, sizeof(char *));
	int c;
	if (!env)
		return runc_fail(g, "exec: out of memory");
	a.env = env;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:p:dte:u:c:g:", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			a.process = optarg;
			break;
		case 'd':
			a.detach = true;
			break;
		case 't':
			a.tty = true;
			break;
		case O_PIDFILE:
			a.pid_file = optarg;
			break;
		case O_CONSOLE:
			a.console = optarg;
			break;
		case O_CWD:
			if (optarg[0] != '/')
				return runc_fail(g, "exec: --cwd %s is not absolute", optarg);
			a.cwd = optarg;
			break;
		case 'e':
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return runc_fail(g, "exec: --env %s is not KEY=VALUE", optarg);
			a.env[a.n_env++] = optarg;
			break;
		case 'u':
			if (parse_user(optarg, &a) < 0)
				return runc_fail(g, "exec: --user %s is not UID[:GID]", optarg);
			break;
		case 'c':
			if (parse_cap(optarg, &a.add_caps) < 0)
				return runc_fail(g, "exec: --cap %s is not a capability", optarg);
			break;
		case 'g':
			/* the engine gives an exec no supplementary group */
			return runc_fail(g, "exec: --additional-gids is not supported");
		case O_PRESERVE:
			if (runc_preserve_fds(g, optarg, 3, &a.preserve_fds))
				return 1;
			break;
		case O_LABEL: /* lbbox applies no security label: refused, as in config.json */
			if (*optarg)
				return runc_fail(
				    g,
				    "exec: --process-label is set but lbbox-runc applies no SELinux label");
			break;
		case O_APPARMOR:
			if (*optarg && strcmp(optarg, "unconfined"))
				return runc_fail(
				    g,
				    "exec: --apparmor is set but lbbox-runc applies no AppArmor profile");
			break;
		case O_NNP: /* always set */
		case O_CG:
			break;
		default:
			return runc_fail(g, "exec: unknown or incomplete option '%s'",
					 argv[optind - 1]);
		}
	}
	struct lb_err *err = NULL;
	if (optind >= argc)
		return runc_fail(g, "exec: a container id is required");
	const char *id = argv[optind];
	if (lb_oci_check_id(id, &err) < 0)
		return runc_fail_err(g, &err);
	struct lb_oci_process p;
	if (load_process(g, &a, argv + optind + 1, &p))
		return 1;
	p.add_caps = a.add_caps;
	struct lb_oci_exec_opts o = {.proc = &p,
				     .console_socket = a.console,
				     .detach = a.detach,
				     .preserve_fds = a.preserve_fds};
	pid_t pid = 0;
	int code = 0;
	int rc = lb_oci_exec(&g->oci, id, &o, &pid, &code, &err);
	lb_oci_process_free(&p);
	if (rc < 0) {
		runc_fail_err(g, &err);
		return code ? code : 1;
	}
	if (a.pid_file && runc_write_pid_file(g, a.pid_file, pid))
		return 1;
	return a.detach ? 0 : code;
}
