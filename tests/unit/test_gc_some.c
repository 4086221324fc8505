/*
 * A sandbox's start examines a few sandboxes for garbage (lb_gc_some), not every one: dead ones
 * (here: state directories of a creator that died before writing state.json, past the grace)
 * go a window at a time, and a runroot with no more than the window is examined whole.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/util.h"
#include "lbbox/sandbox/sandbox.h"
#include "sandbox/engine.h"

static char tmp[64];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/dev/shm/lbbox-unit-gc.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void teardown(void)
{
	lb_rm_rf(tmp, NULL);
}

/* n state directories of creators long dead, and a file that is no sandbox's */
static void dead_sandboxes(int n)
{
	struct timespec old[2] = {{.tv_sec = time(NULL) - 60}, {.tv_sec = time(NULL) - 60}};
	char path[128];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%012x", tmp, 0xabc000 + i);
		cr_assert_eq(mkdir(path, 0700), 0);
		cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	}
	snprintf(path, sizeof(path), "%s/not-a-sandbox", tmp);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
}

static int left(void)
{
	char cmd[128];
	int n = -1;
	snprintf(cmd, sizeof(cmd), "ls %s | wc -l", tmp);
	FILE *f = popen(cmd, "r");
	cr_assert_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n - 1; /* not-a-sandbox stays */
}

TestSuite(gc_some, .init = setup, .fini = teardown);

Test(gc_some, a_start_examines_a_window_and_the_next_ones_the_rest)
{
	struct lb_paths paths = {.root = "/nonexistent", .runroot = tmp};
	dead_sandboxes(50);
	lb_gc_some(&paths, 16);
	cr_assert_eq(left(), 34, "one window of 16 is examined, not every sandbox");
	for (int i = 0; i < 3; i++)
		lb_gc_some(&paths, 16);
	cr_assert_eq(left(), 0);
}

Test(gc_some, a_small_runroot_is_examined_whole)
{
	struct lb_paths paths = {.root = "/nonexistent", .runroot = tmp};
	dead_sandboxes(LB_GC_PER_RUN);
	lb_gc_some(&paths, LB_GC_PER_RUN);
	cr_assert_eq(left(), 0);
}
