// Faults: lbbox killed at any moment of a create or a run, a store that fills up during a pull
// or an unpack, a cgroup hierarchy that turns read-only. Each leaves one clear error and nothing
// behind, and the next command works.
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

LBT_SUITE(faults);

static void sigkill_after(struct lbt_proc *p, int max_us)
{
	usleep((useconds_t)(rand() % max_us));
	kill(p->pid, SIGKILL);
	struct lb_run_out o;
	lbt_wait(p, &o, 30);
	lbt_out_free(&o);
}

// After a while (the GC's grace for a state directory without its state), any command collects
// what killed sandboxes left.
static void collect_leftovers(void)
{
	struct lb_run_out o;
	sleep(6);
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--", "true", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}

// `session create` SIGKILLed at random moments (before, during and after the sandbox starts):
// `session gc` removes every half-made session with its sandbox; the whole ones are ordinary.
LBT_TEST(faults, killed_session_creates_leave_nothing, .timeout = 200)
{
	srand((unsigned)getpid());
	for (int i = 0; i < 30; i++) {
		struct lbt_proc p;
		char name[16];
		snprintf(name, sizeof(name), "k%d", i);
		lbt_spawn(&p, "session", "create", name, "--rootfs", lbt_rootfs(), NULL);
		sigkill_after(&p, 40000);
	}
	struct lb_run_out o;
	lbt_run(&o, "session", "gc", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	// the creates that finished are ordinary sessions (one JSON object per line)
	lbt_run(&o, "session", "ls", "--json", NULL);
	LBT_ASSERT_EXIT(o, 0);
	for (char *save = NULL, *l = strtok_r(o.out, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		json_t *s = lbt_json(l);
		lbt_session_rm(lbt_json_str(s, "session_id"));
		json_decref(s);
	}
	lbt_out_free(&o);
	collect_leftovers();
}

LBT_TEST(faults, killed_runs_leave_nothing, .timeout = 200)
{
	srand((unsigned)getpid() + 1);
	for (int i = 0; i < 30; i++) {
		struct lbt_proc p;
		lbt_spawn(&p, "run", "--rootfs", lbt_rootfs(), "--memory", "64m", "--", "true",
			  NULL);
		sigkill_after(&p, 20000);
	}
	collect_leftovers();
}

// A store on a small tmpfs: the store and the test's own files live under the test directory.
static char *small_store(const char *size)
{
	char *dir = lbt_mkdir_work("small-store");
	char *opts = lbt_strdupf("size=%s,mode=0700", size);
	cr_assert_eq(mount("lbt-small-store", dir, "tmpfs", 0, opts), 0);
	free(opts);
	return dir;
}

static void resize(const char *dir, const char *size)
{
	char *opts = lbt_strdupf("size=%s", size);
	cr_assert_eq(mount(NULL, dir, NULL, MS_REMOUNT, opts), 0);
	free(opts);
}

// Nothing in the store's staging area, and the store still answers.
static void assert_store_consistent(const char *store)
{
	char *tmp = lbt_strdupf("%s/tmp", store);
	char *cmd = lbt_strdupf("ls -A %s | wc -l", tmp);
	FILE *f = popen(cmd, "r");
	int n = -1;
	cr_assert_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	cr_assert_eq(n, 0, "staging left in %s", tmp);
	struct lb_run_out o;
	lbt_run(&o, "--root", store, "images", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	free(tmp), free(cmd);
}

// 12 MiB of incompressible layer into a 4 MiB store: one line naming the full disk, the store
// as it was; with room again, the same pull succeeds.
LBT_TEST(faults, store_full_during_pull)
{
	char *store = small_store("4m");
	char *layout = lbt_strdupf("%s/layout", lbt_workdir());
	char *cmd = lbt_strdupf("python3 %s/tests/registry/registry.py layout %s --layer-size %d "
				">/dev/null",
				LBBOX_SOURCE_DIR, layout, 12 << 20);
	cr_assert_eq(system(cmd), 0);
	int port;
	pid_t reg = lbt_registry_start(layout, &port);
	char *host = lbt_strdupf("127.0.0.1:%d", port);
	char *ref = lbt_strdupf("%s/lbt/big:latest", host);
	struct lb_run_out o;
	/* -q: the progress lines of what was copied before the disk filled are not the error */
	lbt_run(&o, "--root", store, "pull", "-q", "--insecure-registry", host, ref, NULL);
	lbt_assert_error_line(&o, 125, "No space left on device");
	lbt_out_free(&o);
	assert_store_consistent(store);
	resize(store, "64m");
	lbt_run(&o, "--root", store, "pull", "--insecure-registry", host, ref, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	kill(reg, SIGKILL);
	waitpid(reg, NULL, 0);
	cr_assert_eq(umount2(store, MNT_DETACH), 0);
	free(store), free(layout), free(cmd), free(host), free(ref);
}

// A layer that compresses to almost nothing but unpacks to 24 MiB, in an 8 MiB store: the run
// fails in one line, no half snapshot stays; with room, the same run works.
LBT_TEST(faults, store_full_during_unpack)
{
	char *store = small_store("8m");
	char *zeros = lbt_strdupf("%s/zeros", lbt_workdir());
	char *cmd = lbt_strdupf("head -c %d /dev/zero > %s", 24 << 20, zeros);
	cr_assert_eq(system(cmd), 0);
	char *layout = lbt_strdupf("%s/layout", lbt_workdir());
	char *member = lbt_strdupf("copy:zeros:644:%s", zeros);
	const char *argv[] = {"python3", LBBOX_SOURCE_DIR "/tests/security/mkimage.py",
			      layout,	 "localhost/lbt-zeros:1",
			      "--base",	 lbt_rootfs(),
			      member,	 NULL};
	cr_assert_eq(lbt_system(argv), 0);
	struct lb_run_out o;
	lbt_run(&o, "--root", store, "load", "--oci-dir", layout, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "--root", store, "run", "--image", "localhost/lbt-zeros:1", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "No space left on device");
	lbt_out_free(&o);
	char *snaps = lbt_strdupf("ls -A %s/snapshots | grep -v '^.lock$' | wc -l", store);
	FILE *f = popen(snaps, "r");
	int n = -1;
	cr_assert_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	cr_assert_eq(n, 1, "only the first (complete) layer may be unpacked, found %d entries", n);
	assert_store_consistent(store);
	resize(store, "64m");
	lbt_run(&o, "--root", store, "run", "--image", "localhost/lbt-zeros:1", "--", "stat", "-c",
		"%s", "/zeros", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "25165824\n");
	lbt_out_free(&o);
	cr_assert_eq(umount2(store, MNT_DETACH), 0);
	free(store), free(zeros), free(cmd), free(layout), free(member), free(snaps);
}

// A cgroup hierarchy lbbox would use turns read-only (here: in lbbox's own mount namespace):
// limits are refused with the reason, never dropped; without limits lbbox still runs.
LBT_TEST(faults, unwritable_cgroup_refuses_limits)
{
	bool v2 = false;
	const char *dir = lbt_cgroup_dir("memory", &v2);
	cr_assert_not_null(dir, "no memory cgroup on this host");
	const char *mnt = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
	char *wrap = lbt_strdupf("%s/ro-cgroup", lbt_workdir());
	char *text = lbt_strdupf("#!/bin/sh\nexec unshare -m --propagation private /bin/sh -c "
				 "'mount -o remount,bind,ro %s && exec \"$@\"' sh \"$@\"\n",
				 mnt);
	lbt_write_file(wrap, text);
	cr_assert_eq(chmod(wrap, 0755), 0);
	lbt_set_wrapper(wrap);
	struct lb_run_out o;
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--memory", "64m", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "memory");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--pids", "16", "--", "echo", "ran", NULL);
	lbt_set_wrapper(NULL);
	if (v2) { // one hierarchy holds every controller: pids is refused as well
		lbt_assert_error_line(&o, 125, "pids");
	} else {
		LBT_ASSERT_EXIT(o, 0);
		LBT_ASSERT_OUT(o, "ran\n");
	}
	lbt_out_free(&o);
	free(wrap), free(text);
}

// A session fills the file system of its own workspace (lbbox's runtime directory, often a small
// tmpfs): it can still be deleted, and the next session created.
LBT_TEST(faults, full_runtime_directory_still_deletes)
{
	char *run = lbt_mkdir_work("small-run");
	cr_assert_eq(mount("lbt-small-run", run, "tmpfs", 0, "size=16m,mode=0700"), 0);
	struct lb_run_out o;
	lbt_run(&o, "--runroot", run, "session", "create", "hog", "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "--runroot", run, "session", "exec", "hog", "--", "sh", "-c",
		"dd if=/dev/zero of=/workspace/fill bs=1M count=64 2>/dev/null; df -k /workspace | "
		"tail -1",
		NULL);
	lbt_out_free(&o);
	lbt_run(&o, "--runroot", run, "session", "rm", "hog", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "--runroot", run, "session", "create", "next", "--rootfs", lbt_rootfs(), NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "--runroot", run, "session", "rm", "next", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(umount2(run, MNT_DETACH), 0);
	free(run);
}
