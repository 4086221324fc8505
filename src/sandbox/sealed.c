/*
 * Running from a sealed lbbox (CVE-2019-5736). A process that joins a sandbox runs lbbox's
 * image until it execve()s the command; if that command is a script "#!/proc/self/exe" planted
 * in a writable root, the kernel starts lbbox again inside the sandbox, where a sandboxed root
 * process could take /proc/PID/exe and, once lbbox has exited, write the host binary through it.
 * So lbbox first re-executes itself from a form of its binary that cannot be written: a
 * read-only overlayfs view of it when it may make one (root: no copy; about 0.8 ms over running
 * the binary itself, making and tearing down the overlay included), else a sealed memfd copy
 * (2-3 ms over it for a 2-3 MB binary; scripts/bench_sealed.c). sealed_view.c makes both. Used by
 * the long-lived server always, by lbbox-runc, and by the CLI for sessions whose root is writable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "sealed.h"

#define OVERLAYFS_MAGIC 0x794c7630
/* set to our pid just before the re-execution: the new image checks it got what it asked for */
#define REEXEC_MARK "LBBOX_SEALED_PID"

extern char **environ;

/* Whether mount id is in this process's mount table: a detached mount is in none. */
static bool mount_listed(unsigned long long id)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	if (!f)
		return true; /* cannot tell: not sealed (the caller then fails, it does not loop) */
	while (fgets(line, sizeof(line), f)) {
		bool whole = strchr(line, '\n') != NULL;
		if (strtoull(line, NULL, 10) == id)
			return true;
		while (!whole && fgets(line, sizeof(line), f)) /* the rest of a long line */
			whole = strchr(line, '\n') != NULL;
	}
	return false;
}

/* A read-only overlayfs mounted nowhere: what lb_sealed_view makes. A host binary on an
 * overlay root (a container's) is on a listed mount, and its superblock may be writable. */
static bool detached_overlay(int fd)
{
	struct statfs sf;
	struct statx stx;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != OVERLAYFS_MAGIC || !(sf.f_flags & ST_RDONLY))
		return false;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return false;
	return !mount_listed(stx.stx_mnt_id);
}

/* By what the executable is, not by its name: a memfd with every seal, or a sealed view. */
static bool is_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals >= 0)
		return (seals & LB_SEALS) == LB_SEALS;
	return detached_overlay(fd);
}

static bool running_sealed(void)
{
	_cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	return fd >= 0 && is_sealed(fd);
}

/* The view, if this kernel lets us tell it is one once we run from it (STATX_MNT_ID: 5.8);
 * else the copy. */
static int sealed_fd(int *fd, struct lb_err **err)
{
	_cleanup_err_ struct lb_err *view_err = NULL;
	if (lb_sealed_view(fd, &view_err) == 0) {
		if (is_sealed(*fd))
			return 0;
		close(*fd);
		*fd = -1;
		lb_err_set(&view_err, 0, "it would not pass as sealed");
	}
	if (lb_sealed_copy(fd, err) < 0)
		return lb_err_wrap(err, "no sealed view of lbbox (%s), nor a copy", view_err->msg);
	return 0;
}

int lb_reexec_sealed(char **argv, struct lb_err **err)
{
	char dir[LB_PATH_BUF], pid[24];
	const char *mark = getenv(REEXEC_MARK);
	bool again = mark && strtol(mark, NULL, 10) == getpid();
	unsetenv(REEXEC_MARK); /* not for our children */
	if (running_sealed())
		return 0;
	if (again) /* the form we exec'd does not pass as sealed: fail rather than loop */
		return lb_err_set(err, 0,
				  "lbbox re-executed itself sealed but is not running sealed");
	_cleanup_close_ int fd = -1;
	if (lb_self_dir(dir, sizeof(dir), err) < 0 || sealed_fd(&fd, err) < 0)
		return -1;
	/* where lbbox-init and lbbox-image are, now that /proc/self/exe is the view or the copy */
	setenv("LBBOX_SELF_DIR", dir, 1);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv(REEXEC_MARK, pid, 1);
	fexecve(fd, argv, environ);
	int e = errno;
	unsetenv(REEXEC_MARK);
	return lb_err_set(err, e, "re-execute lbbox sealed");
}
