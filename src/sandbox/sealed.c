/*
 * Running from a sealed lbbox (CVE-2019-5736). A process that joins a sandbox runs lbbox's
 * image until it execve()s the command; if that command is a script "#!/proc/self/exe" planted
 * in a writable root, the kernel starts lbbox again inside the sandbox, where a sandboxed root
 * process could take /proc/PID/exe and, once lbbox has exited, write the host binary through it.
 * So lbbox first re-executes itself from a form of its binary that cannot be written: a
 * read-only overlayfs view of it when it may make one (root: no copy; about 0.8 ms over running
 * the binary itself, making and tearing down the overlay included), else a sealed memfd copy
 * (2-3 ms over it for a 2-3 MB binary; scripts/bench_sealed.c). sealed_view.c makes both. A
 * read-only root does not protect: the image's own /bin/sh can be that script. So every program
 * that puts a process in a sandbox seals first, whatever the root: the server, lbbox-runc, and the
 * CLI's verbs that run something in one (src/cli/main.c).
 *
 * A session's pid 1 then execs lbbox-init, whose /proc/1/exe is as exposed: lb_sealed_helper
 * opens it through the view (which holds lbbox's whole directory; its root is handed over the
 * re-execution), else copies it into a sealed memfd.
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
/* "PID:MNT", our pid and the view's mount id (0: a copy), set just before the re-execution:
 * the new image checks it got what it asked for */
#define REEXEC_MARK "LBBOX_SEALED_PID"
/* the view's root, inherited over the re-execution; trusted only once checked (adopt_view_dir) */
#define VIEW_DIR_ENV "LBBOX_SEALED_DIR_FD"

/* The view's root when running from it and lbbox's helpers are the ones beside it; else -1. */
static int view_dir = -1;

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

static int mount_id(int fd, unsigned long long *id)
{
	struct statx stx;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return -1;
	*id = stx.stx_mnt_id;
	return 0;
}

/* A read-only overlayfs mounted nowhere (its mount id in *mnt): what lb_sealed_view makes. A
 * host binary on an overlay root (a container's) is on a listed mount, and its superblock may
 * be writable. */
static bool detached_overlay(int fd, unsigned long long *mnt)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != OVERLAYFS_MAGIC || !(sf.f_flags & ST_RDONLY))
		return false;
	return mount_id(fd, mnt) == 0 && !mount_listed(*mnt);
}

/* By what the executable is, not by its name: a memfd with every seal, or a sealed view
 * (*view then true, its mount id in *mnt; 0 for a memfd). */
static bool is_sealed(int fd, bool *view, unsigned long long *mnt)
{
	int seals = fcntl(fd, F_GET_SEALS);
	*view = seals < 0;
	*mnt = 0;
	if (seals >= 0)
		return (seals & LB_SEALS) == LB_SEALS;
	return detached_overlay(fd, mnt);
}

/*
 * *mnt: the mount the executable is on (0 when unknown). A view passes only as the one our own
 * re-execution made (want: its mount id, which stays ours while we run from it): mountinfo
 * lists no mount outside a chroot, so a chrooted lbbox run from some read-only overlay would
 * otherwise pass; it makes its own view instead.
 */
static bool running_sealed(unsigned long long want, unsigned long long *mnt)
{
	_cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	bool view;
	*mnt = 0;
	if (fd < 0 || !is_sealed(fd, &view, mnt))
		return false;
	return !view || (*mnt && *mnt == want);
}

/*
 * The descriptor VIEW_DIR_ENV names, kept (close-on-exec from now on) only after our own
 * re-execution and only if it is the root of the very overlay we run from: the variable may come
 * from anyone, and a descriptor it names that is anything else is left alone.
 */
static void adopt_view_dir(const char *env, bool again, unsigned long long exe_mnt)
{
	char *end;
	struct stat st;
	unsigned long long mnt;
	long fd = env ? strtol(env, &end, 10) : -1;
	if (!again || !exe_mnt || fd < 3 || fd > 65535 || *end || view_dir >= 0)
		return;
	/* on the very mount we run from, which running_sealed found a detached overlay */
	if (fstat((int)fd, &st) < 0 || !S_ISDIR(st.st_mode) || mount_id((int)fd, &mnt) < 0 ||
	    mnt != exe_mnt)
		return;
	if (fcntl((int)fd, F_SETFD, FD_CLOEXEC) == 0)
		view_dir = (int)fd;
}

/* The view, if this kernel lets us tell it is one once we run from it (STATX_MNT_ID: 5.8),
 * its root in *dir and its mount id in *mnt; else the copy (*dir -1, *mnt 0). */
static int sealed_fd(int *fd, int *dir, unsigned long long *mnt, struct lb_err **err)
{
	_cleanup_err_ struct lb_err *view_err = NULL;
	bool view;
	if (lb_sealed_view(fd, dir, &view_err) == 0) {
		if (is_sealed(*fd, &view, mnt) && *mnt)
			return 0;
		close(LB_TAKE_FD(*fd));
		close(LB_TAKE_FD(*dir));
		lb_err_set(&view_err, 0, "it would not pass as sealed");
	}
	*mnt = 0;
	if (lb_sealed_copy(fd, err) < 0)
		return lb_err_wrap(err, "no sealed view of lbbox (%s), nor a copy", view_err->msg);
	return 0;
}

/* Whether lbbox's helpers are looked for in the directory of its executable, which the view
 * holds (LBBOX_SELF_DIR may name another). */
static bool helpers_beside(const char *self_dir)
{
	char exe[LB_PATH_BUF];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return strcmp(exe[0] ? exe : "/", self_dir) == 0;
}

int lb_reexec_sealed(char **argv, struct lb_err **err)
{
	char dir[LB_PATH_BUF], pid[48], num[24], *end = NULL;
	const char *mark = getenv(REEXEC_MARK);
	bool again = mark && strtol(mark, &end, 10) == getpid();
	unsigned long long exe_mnt,
	    view_mnt = again && *end == ':' ? strtoull(end + 1, NULL, 10) : 0;
	unsetenv(REEXEC_MARK); /* not for our children */
	bool sealed = running_sealed(view_mnt, &exe_mnt);
	adopt_view_dir(getenv(VIEW_DIR_ENV), again && sealed, exe_mnt);
	unsetenv(VIEW_DIR_ENV);
	if (sealed)
		return 0;
	if (again) /* the form we exec'd does not pass as sealed: fail rather than loop */
		return lb_err_set(err, 0,
				  "lbbox re-executed itself sealed but is not running sealed");
	_cleanup_close_ int fd = -1, view = -1;
	if (lb_self_dir(dir, sizeof(dir), err) < 0 || sealed_fd(&fd, &view, &view_mnt, err) < 0)
		return -1;
	/* where lbbox-init and lbbox-image are, now that /proc/self/exe is the view or the copy */
	bool beside = view >= 0 && helpers_beside(dir);
	setenv("LBBOX_SELF_DIR", dir, 1);
	snprintf(pid, sizeof(pid), "%d:%llu", (int)getpid(), view_mnt);
	setenv(REEXEC_MARK, pid, 1);
	if (view >= 0 && beside && fcntl(view, F_SETFD, 0) == 0) {
		snprintf(num, sizeof(num), "%d", view);
		setenv(VIEW_DIR_ENV, num, 1);
	}
	fexecve(fd, argv, environ);
	int e = errno;
	unsetenv(REEXEC_MARK);
	unsetenv(VIEW_DIR_ENV);
	return lb_err_set(err, e, "re-execute lbbox sealed");
}

int lb_sealed_helper(const char *name, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	if (view_dir >= 0) {
		int fd = openat(view_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return lb_err_set(err, errno, "open %s in lbbox's sealed view", name);
		return fd;
	}
	if (lb_self_dir(path, sizeof(path), err) < 0)
		return -1;
	if (strlen(path) + 1 + strlen(name) >= sizeof(path))
		return lb_err_set(err, ENAMETOOLONG, "%s/%s", path, name);
	strcat(strcat(path, "/"), name);
	_cleanup_close_ int src = open(path, O_RDONLY | O_CLOEXEC);
	if (src < 0)
		return lb_err_set(err, errno, "open %s", path);
	int fd;
	if (lb_sealed_copy_of(src, name, &fd, err) < 0)
		return -1;
	return fd;
}

void lb_sealed_forget(void)
{
	if (view_dir >= 0)
		close(view_dir);
	view_dir = -1;
}
