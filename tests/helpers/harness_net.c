// Test hosts in network namespaces: shell commands, background servers, a DNS responder.
#include "harness_net.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MAX_SRV 12

static pid_t srv[MAX_SRV];
static int n_srv;

int lbt_sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;

	va_start(ap, fmt);
	cr_assert_geq(vasprintf(&cmd, fmt, ap), 0);
	va_end(ap);
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	int r = lbt_system(argv);
	free(cmd);
	return r;
}

char *lbt_sh_out(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int c;

	while (p && (c = fgetc(p)) != EOF)
		fputc(c, m);
	fclose(m);
	if (p)
		pclose(p);
	return buf;
}

void lbt_serve(const char *cmd)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setpgid(0, 0);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	cr_assert_lt(n_srv, MAX_SRV);
	srv[n_srv++] = pid;
}

void lbt_serve_stop_all(void)
{
	for (int i = 0; i < n_srv; i++) {
		kill(-srv[i], SIGKILL);
		kill(srv[i], SIGKILL);
		waitpid(srv[i], NULL, 0);
	}
	n_srv = 0;
}

void lbt_wait_ready(const char *cmd)
{
	for (int i = 0; i < 100; i++) {
		if (lbt_sh("%s >/dev/null 2>&1", cmd) == 0)
			return;
		usleep(50000);
	}
	cr_assert_fail("not ready: %s", cmd);
}

void lbt_run_net(struct lb_run_out *o, const char *net, const char *script, const char *opt1,
		 const char *opt2)
{
	const char *args[16];
	int n = 0;

	args[n++] = "run";
	args[n++] = "--rootfs";
	args[n++] = lbt_rootfs();
	args[n++] = "--network";
	args[n++] = net;
	if (opt1)
		args[n++] = opt1;
	if (opt2)
		args[n++] = opt2;
	args[n++] = "--";
	args[n++] = "sh";
	args[n++] = "-c";
	args[n++] = script;
	args[n] = NULL;
	lbt_runv(o, args);
}

void lbt_run_on_parallel(int n, const char *script, struct lb_run_out *out, double timeout)
{
	struct lbt_proc *p = calloc((size_t)n, sizeof(*p));

	cr_assert_not_null(p);
	for (int i = 0; i < n; i++)
		lbt_spawn(&p[i], "run", "--rootfs", lbt_rootfs(), "--network", "on", "--", "sh",
			  "-c", script, NULL);
	for (int i = 0; i < n; i++)
		lbt_wait(&p[i], &out[i], timeout);
	free(p);
}

static const char dns_py[] =
    "import socket, sys\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "s.bind((sys.argv[1], 53))\n"
    "ip = bytes(int(x) for x in sys.argv[2].split('.'))\n"
    "while True:\n"
    "    q, a = s.recvfrom(512)\n"
    "    end = q.index(b'\\0', 12) + 5\n"
    "    qtype = q[end - 4:end - 2]\n"
    "    ans = b'\\xc0\\x0c\\0\\x01\\0\\x01\\0\\0\\0\\x3c\\0\\x04' + ip if qtype == b'\\0\\x01' else b''\n"
    "    r = q[:2] + b'\\x81\\x80' + q[4:6] + (b'\\0\\x01' if ans else b'\\0\\0') + b'\\0\\0\\0\\0'\n"
    "    s.sendto(r + q[12:end] + ans, a)\n";

char *lbt_dns_responder(void)
{
	char *py = lbt_strdupf("%s/dns.py", lbt_workdir());
	lbt_write_file(py, dns_py);
	return py;
}
