/*
 * lb_pivot_root checks that the new root's path still leads to the directory lbbox mounted
 * there (lb_rootfs_prepare's record): a mount stacked on it since (a volume through an image's
 * link to "/", anything that slipped past the target checks) would otherwise become the
 * sandbox's root. Each case runs in a child with a mount namespace of its own.
 */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/err.h"
#include "sandbox/engine.h"

/* 0: pivoted; 1: refused with the expected message; 2: the test's own setup failed;
 * 3: refused with another message. */
static int pivot_in_child(bool stack_over_root)
{
	char dir[] = "/tmp/lbbox-unit-pivot.XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	pid_t pid = fork();
	if (pid == 0) {
		struct stat st;
		struct lb_err *err = NULL;
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("root", dir, "tmpfs", 0, "size=64k") < 0 || stat(dir, &st) < 0)
			_exit(2);
		struct lb_root_id id = {.dev = st.st_dev, .ino = st.st_ino};
		if (stack_over_root && mount("over", dir, "tmpfs", 0, "size=64k") < 0)
			_exit(2);
		int r = lb_pivot_root(dir, &id, false, &err);
		if (r == 0)
			_exit(0);
		_exit(strstr(err->msg, "mounted over the sandbox's root") ? 1 : 3);
	}
	int status = -1;
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	rmdir(dir);
	cr_assert(WIFEXITED(status), "child status %#x", status);
	return WEXITSTATUS(status);
}

Test(pivot_root, the_root_lbbox_mounted_is_pivoted_to)
{
	cr_expect_eq(pivot_in_child(false), 0);
}

Test(pivot_root, a_mount_stacked_on_the_root_is_refused)
{
	cr_expect_eq(pivot_in_child(true), 1);
}
