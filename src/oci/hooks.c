/*
 * OCI hooks: programs the runtime runs at points of the life cycle with the container's state on
 * their stdin. prestart and createRuntime run in the runtime's namespaces while the container's
 * pid 1 waits with its mounts built, before pivot_root; createContainer then runs in the
 * container's namespaces (the engine's LB_HOOK_MOUNTED point) and startContainer inside the
 * container once start opened the gate (LB_HOOK_STARTED). poststart (after start) and poststop
 * (at delete) run in the runtime's namespaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

#define HOOK_MAX     64
#define HOOK_TIMEOUT 60 /* s, when the hook gives none */

static const char *const kinds[] = {"prestart", "createRuntime",   "poststart",
				    "poststop", "createContainer", "startContainer"};

static int check_hook(const char *kind, json_t *h, struct lb_err **err)
{
	const char *path;
	_cleanup_strv_ char **args = NULL, **env = NULL;
	int64_t t;
	bool set;
	if (!json_is_object(h))
		return lb_err_set(err, EINVAL, "config: hooks.%s entries must be objects", kind);
	if (lb_oci_get_string(h, "path", true, &path, err) < 0 ||
	    lb_oci_get_strv(h, "args", 1024, &args, err) < 0 ||
	    lb_oci_get_strv(h, "env", 1024, &env, err) < 0 ||
	    lb_oci_get_int(h, "timeout", 1, 3600, &set, &t, err) < 0)
		return -1;
	if (path[0] != '/')
		return lb_err_set(err, EINVAL, "config: hook path %.64s is not absolute", path);
	return 0;
}

int lb_oci_hooks_check(json_t *hooks, struct lb_err **err)
{
	const char *k;
	json_t *list, *h;
	json_object_foreach(hooks, k, list)
	{
		size_t n = sizeof(kinds) / sizeof(kinds[0]), i;
		for (i = 0; i < n && strcmp(k, kinds[i]); i++)
			;
		if (i == n)
			return lb_err_set(err, EINVAL, "config: unknown hook kind %.32s", k);
		if (json_is_null(list))
			continue;
		if (!json_is_array(list) || json_array_size(list) > HOOK_MAX)
			return lb_err_set(err, EINVAL, "config: hooks.%s must be an array (<= %d)",
					  k, HOOK_MAX);
		json_array_foreach(list, i, h)
		{
			if (check_hook(k, h, err) < 0)
				return -1;
		}
	}
	return 0;
}

/* Feeds the hook the state (in, non-blocking; closed once written or refused) while waiting for
 * it until timeout_s: a hook that neither reads nor exits is killed at the deadline, not left
 * blocking the writer. Its exit status, or -1 on timeout. */
static int wait_hook(pid_t pid, int pidfd, int in, const char *state, int timeout_s)
{
	size_t left = strlen(state);
	int64_t deadline = (int64_t)(lb_now_ns() / 1000000) + (int64_t)timeout_s * 1000;
	int status = 0, n = 1;
	for (;;) {
		struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN},
				      {.fd = in, .events = POLLOUT}};
		int64_t wait = deadline - (int64_t)(lb_now_ns() / 1000000);
		if (wait <= 0) {
			n = 0;
			break;
		}
		n = poll(p, in >= 0 ? 2 : 1, (int)wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (p[0].revents & POLLIN))
			break;
		if (in >= 0 && p[1].revents) {
			ssize_t w = write(in, state, left);
			if (w > 0)
				state += w, left -= (size_t)w;
			if ((w < 0 && errno != EAGAIN) || !left) {
				close(in);
				in = -1;
			}
		}
	}
	if (in >= 0)
		close(in);
	if (n == 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return n == 0 ? -1 : status;
}

static int run_hook(const char *kind, json_t *h, const char *state, struct lb_err **err)
{
	const char *path;
	_cleanup_strv_ char **args = NULL, **env = NULL;
	int64_t timeout = HOOK_TIMEOUT;
	bool set;
	int in[2];
	lb_oci_get_string(h, "path", true, &path, NULL);
	if (lb_oci_get_strv(h, "args", 1024, &args, err) < 0 ||
	    lb_oci_get_strv(h, "env", 1024, &env, err) < 0)
		return -1;
	lb_oci_get_int(h, "timeout", 1, 3600, &set, &timeout, NULL);
	if (pipe2(in, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		static char *none[] = {NULL};
		char *argv0[] = {(char *)path, NULL};
		sigset_t empty;
		/* not what its runner blocks or ignores (lbbox-runc's forwarded signals, SIGPIPE)
		 */
		sigemptyset(&empty);
		sigprocmask(SIG_SETMASK, &empty, NULL);
		signal(SIGPIPE, SIG_DFL);
		dup2(in[0], 0);
		/* stdio only: not lbbox-runc's descriptors, nor those --preserve-fds or LISTEN_FDS
		 * hand to the container's command */
		syscall(SYS_close_range, 3U, ~0U, 0U);
		execve(path, args && args[0] ? args : argv0, env ? env : none);
		_exit(127);
	}
	close(in[0]);
	if (pid < 0) {
		close(in[1]);
		return lb_err_set(err, errno, "fork hook");
	}
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	signal(SIGPIPE, SIG_IGN);
	if (pidfd < 0 || fcntl(in[1], F_SETFL, O_NONBLOCK) < 0) {
		int e = errno;
		close(in[1]);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (pidfd >= 0)
			close(pidfd);
		return lb_err_set(err, e, "%s hook %s", kind, path);
	}
	int status = wait_hook(pid, pidfd, in[1], state, (int)timeout);
	close(pidfd);
	if (status == -1)
		return lb_err_set(err, ETIMEDOUT, "%s hook %s timed out", kind, path);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return lb_err_set(err, 0, "%s hook %s failed (status %d)", kind, path,
				  lb_exit_code_of(status));
	return 0;
}

int lb_oci_hooks_run(json_t *hooks, const char *kind, json_t *state, struct lb_err **err)
{
	json_t *list = json_object_get(hooks, kind), *h;
	size_t i;
	if (!json_array_size(list))
		return 0;
	_cleanup_free_ char *text = json_dumps(state, JSON_COMPACT);
	if (!text)
		return lb_err_set(err, ENOMEM, "hook state");
	json_array_foreach(list, i, h)
	{
		if (run_hook(kind, h, text, err) < 0)
			return -1;
	}
	return 0;
}

bool lb_oci_hooks_has(json_t *hooks, const char *kind)
{
	return json_array_size(json_object_get(hooks, kind)) > 0;
}

unsigned lb_oci_hooks_timeout(json_t *hooks, const char *kind)
{
	json_t *list = json_object_get(hooks, kind), *h;
	unsigned total = 0;
	size_t i;
	json_array_foreach(list, i, h)
	{
		int64_t t = HOOK_TIMEOUT;
		bool set;
		lb_oci_get_int(h, "timeout", 1, 3600, &set, &t, NULL);
		total += (unsigned)t;
	}
	return total;
}
