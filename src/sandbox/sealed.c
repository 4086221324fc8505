/*
 * Running from a sealed copy of lbbox (CVE-2019-5736, runc's "cloned binary"). A process that
 * joins a sandbox runs lbbox's image until it execve()s the command; if that command is a
 * script "#!/proc/self/exe" planted in a writable root, the kernel starts the host's lbbox
 * inside the sandbox, where a sandboxed root process could take /proc/PID/exe and later write
 * the host binary. From a sealed memfd copy, /proc/self/exe is that copy: it cannot be written
 * and is gone with the process. Used by the long-lived server always, and by the CLI for
 * sessions whose root is writable (one copy costs about a millisecond).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

#define MEMFD_NAME "lbbox-sealed"

extern char **environ;

static bool running_sealed(void)
{
	char exe[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	return strncmp(exe, "/memfd:" MEMFD_NAME, strlen("/memfd:" MEMFD_NAME)) == 0;
}

static int copy_self(int *out, struct lb_err **err)
{
	struct stat st;
	_cleanup_close_ int exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (exe < 0 || fstat(exe, &st) < 0)
		return lb_err_set(err, errno, "open /proc/self/exe");
	int fd = memfd_create(MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return lb_err_set(err, errno, "memfd_create");
	for (off_t done = 0; done < st.st_size;) {
		ssize_t n = sendfile(fd, exe, NULL, (size_t)(st.st_size - done));
		if (n <= 0) {
			close(fd);
			return lb_err_set(err, n < 0 ? errno : EIO, "copy lbbox");
		}
		done += n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
		close(fd);
		return lb_err_set(err, errno, "seal the copy of lbbox");
	}
	*out = fd;
	return 0;
}

int lb_reexec_sealed(char **argv, struct lb_err **err)
{
	char dir[LB_PATH_BUF];
	int fd = -1;
	if (running_sealed())
		return 0;
	if (lb_self_dir(dir, sizeof(dir), err) < 0 || copy_self(&fd, err) < 0)
		return -1;
	/* where lbbox-init and lbbox-image are, now that /proc/self/exe is the memfd */
	setenv("LBBOX_SELF_DIR", dir, 1);
	fexecve(fd, argv, environ);
	int e = errno;
	close(fd);
	return lb_err_set(err, e, "re-execute lbbox from its sealed copy");
}
