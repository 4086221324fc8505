/*
 * pid 1 killing what it leaves behind (the hooks' processes, the command's once it ended).
 *
 * In a pid namespace of its own pid 1 is the namespace's init: kill(-1) reaches every other
 * process there and the kernel ends them all when it exits. In a pid namespace joined by path
 * (a pod's shared one, or any a bundle names, even the host's) it is not: kill(-1) would reach
 * the pod's other containers, or the host, and its exit ends nothing. There it is a subreaper,
 * so every orphan of its tree comes back to it, and it kills its own children until it has none.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"

/* The parent pid in a /proc/PID/stat opened through that process's directory, -1 if unreadable. */
static pid_t stat_ppid(int dirfd)
{
	char buf[512];
	_cleanup_close_ int fd = openat(dirfd, "stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* after the last ')': the comm is the process's own and may hold anything */
	char *p = strrchr(buf, ')');
	char state;
	int ppid;
	if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
		return -1;
	return ppid;
}

/*
 * SIGKILL to each child, found in /proc (whichever procfs pid 1 sees: the host's before
 * pivot_root, the container's after; both show pid 1 and its children, and pids are compared
 * in that procfs's numbering only). The signal goes through the /proc/PID directory that was
 * checked, which pins the process: a pid reused meanwhile is never signalled.
 */
static size_t kill_children(void)
{
	char self[32];
	size_t found = 0;
	ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
	if (n <= 0)
		return 0;
	self[n] = '\0';
	pid_t me = atoi(self);
	_cleanup_closedir_ DIR *d = opendir("/proc");
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		_cleanup_close_ int pfd =
		    openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd >= 0 && stat_ppid(pfd) == me) {
			syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
			found++;
		}
	}
	return found;
}

int lb_descendants_adopt(struct lb_err **err)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return lb_err_set(err, errno, "PR_SET_CHILD_SUBREAPER");
	return 0;
}

/* Bound of the search for children /proc does not show (a bundle's maskedPaths may hide /proc
 * itself): pid 1 then gives up on them, and the container's cgroup is what ends them. */
#define BLIND_ROUNDS 100

void lb_descendants_kill(const struct lb_spec *spec)
{
	for (unsigned blind = 0;;) {
		size_t found = 1;
		if (spec->pidns_path)
			found = kill_children();
		else
			kill(-1, SIGKILL); /* spares only the caller */
		pid_t w = waitpid(-1, NULL, found ? 0 : WNOHANG);
		if (w < 0 && errno == ECHILD)
			return;
		if (!found && w == 0) {
			if (++blind == BLIND_ROUNDS)
				return;
			usleep(10000);
		}
	}
}
