// Filesystem isolation: read-only root, /tmp, volumes, /proc masking, /sys, /dev, cgroupfs.
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

LBT_SUITE(isolation);

// Run the probe in the default sandbox and assert its single output line.
static void probe_expect(const char *expect, const char *cmd, const char *arg)
{
	struct lb_run_out o;
	char *want = lbt_strdupf("%s\n", expect);

	lbt_run(&o, "run", LBT_PROBE, cmd, arg, NULL);
	cr_assert_str_eq(o.out, want, "probe %s %s: got \"%s\", expected %s (exit %d)\n%s", cmd,
			 arg, o.out, expect, o.status, o.err);
	free(want);
	lbt_out_free(&o);
}

LBT_TEST(isolation, root_is_read_only)
{
	probe_expect("EROFS", "write", "/lbbox-test-file");
	probe_expect("EROFS", "write", "/usr/lbbox-test-file");
	probe_expect("EROFS", "write", "/etc/hosts");
}

LBT_TEST(isolation, tmp_is_writable)
{
	struct lb_run_out o;

	probe_expect("ok", "write", "/tmp/lbbox-test-file");
	lbt_run(&o, "run", "--", "sh", "-c", "grep ' /tmp ' /proc/self/mounts", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "tmpfs"), "/tmp is not a tmpfs: %s", o.out);
	lbt_out_free(&o);
}

LBT_TEST(isolation, tmp_is_not_the_hosts)
{
	struct lb_run_out o;
	char *host_file = lbt_strdupf("/tmp/lbt-visible-%d", (int)getpid());
	char *check = lbt_strdupf("test -e %s && echo visible || echo hidden", host_file);

	lbt_write_file(host_file, "x");
	lbt_run(&o, "run", "--", "sh", "-c", check, NULL);
	unlink(host_file);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "hidden\n");
	free(check);
	free(host_file);
	lbt_out_free(&o);
}

LBT_TEST(isolation, tmp_size_flag)
{
	struct lb_run_out o;

	// 16 MiB tmpfs: writing 20 MiB must fail with ENOSPC.
	lbt_run(&o, "run", "--tmp-size", "16m", "--", "sh", "-c",
		"dd if=/dev/zero of=/tmp/big bs=1M count=20 2>&1; echo rc=$?", NULL);
	cr_assert(strstr(o.out, "No space left"), "tmpfs not limited to 16m: %s%s", o.out, o.err);
	lbt_out_free(&o);
}

static char *copy_rootfs(void)
{
	char *dst = lbt_strdupf("%s/rootfs-copy", lbt_workdir());
	const char *cp[] = {"cp", "-a", lbt_rootfs(), dst, NULL};

	cr_assert_eq(lbt_system(cp), 0, "cp -a %s %s failed", lbt_rootfs(), dst);
	return dst;
}

LBT_TEST(isolation, read_only_false_makes_rootfs_writable)
{
	struct lb_run_out o;
	char *rootfs = copy_rootfs();
	char *host_path = lbt_strdupf("%s/written-inside", rootfs);
	char *content;

	lbt_run(&o, "run", "--rootfs", rootfs, "--read-only=false", LBT_PROBE, "write",
		"/written-inside", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ok\n");
	content = lbt_read_file(host_path);
	cr_assert_not_null(content, "the write did not reach %s", host_path);
	cr_assert_str_eq(content, "lbbox-probe\n");
	free(content);
	free(host_path);
	free(rootfs);
	lbt_out_free(&o);
}

LBT_TEST(isolation, busybox_rootfs_read_only_by_default)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), LBT_PROBE, "write", "/bin/lbbox-test", NULL);
	LBT_ASSERT_OUT(o, "EROFS\n");
	lbt_out_free(&o);
}

// A masked path reads as empty (a /dev/null bind), whatever the sandbox's capabilities.
static void assert_masked(const char *path)
{
	if (access(path, F_OK) != 0)
		return; // not on this kernel: nothing to mask
	probe_expect("bytes=0", "read", path);
}

LBT_TEST(isolation, proc_kcore_reads_empty)
{
	assert_masked("/proc/kcore");
}

LBT_TEST(isolation, proc_keys_reads_empty)
{
	assert_masked("/proc/keys");
}

LBT_TEST(isolation, proc_timer_list_reads_empty)
{
	assert_masked("/proc/timer_list");
}

LBT_TEST(isolation, proc_sched_debug_reads_empty)
{
	assert_masked("/proc/sched_debug");
}

LBT_TEST(isolation, sys_firmware_is_empty)
{
	struct lb_run_out o;

	if (access("/sys/firmware", F_OK) != 0)
		return;
	lbt_run(&o, "run", LBT_PROBE, "ls", "/sys/firmware", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "\n");
	lbt_out_free(&o);
}

LBT_TEST(isolation, proc_sys_is_read_only)
{
	probe_expect("EROFS", "openw", "/proc/sys/kernel/hostname");
	probe_expect("EROFS", "openw", "/proc/sys/vm/drop_caches");
}

LBT_TEST(isolation, proc_sysrq_trigger_is_read_only)
{
	if (access("/proc/sysrq-trigger", F_OK) != 0)
		return; // kernel without CONFIG_MAGIC_SYSRQ
	// Only opened, never written: nothing happens even if the assertion fails.
	probe_expect("EROFS", "openw", "/proc/sysrq-trigger");
}

LBT_TEST(isolation, proc_mount_options)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "sh", "-c", "grep '^proc /proc ' /proc/self/mounts", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "nosuid") && strstr(o.out, "nodev") && strstr(o.out, "noexec"),
		  "/proc mount options: %s", o.out);
	lbt_out_free(&o);
}

LBT_TEST(isolation, sys_is_read_only)
{
	// Only opened, never written. sysfs is global: it must not be writable.
	probe_expect("EROFS", "openw", "/sys/kernel/mm/transparent_hugepage/enabled");
	probe_expect("EROFS", "openw", "/sys/class/net/lo/mtu");
}

LBT_TEST(isolation, cgroupfs_is_read_only)
{
	probe_expect("EROFS", "write", "/sys/fs/cgroup/lbbox-test-file");
}

LBT_TEST(isolation, cgroup_namespace_hides_host_path)
{
	struct lb_run_out o;

	// In its own cgroup namespace every line of /proc/self/cgroup ends in "/".
	lbt_run(&o, "run", "--", "sh", "-c", "grep -v ':/$' /proc/self/cgroup || echo none", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "none\n");
	lbt_out_free(&o);
}

static bool dev_entry_allowed(const char *name)
{
	static const char *const ok[] = {
	    "null", "zero",  "full",   "random", "urandom", "tty",    "pts",  "shm", "ptmx",
	    "fd",   "stdin", "stdout", "stderr", "console", "mqueue", "core", NULL};

	for (int i = 0; ok[i]; i++)
		if (strcmp(name, ok[i]) == 0)
			return true;
	return false;
}

LBT_TEST(isolation, dev_has_only_expected_entries)
{
	static const char *const need[] = {"null", "zero", "full", "random", "urandom",
					   "tty",  "pts",  "shm",  NULL};
	struct lb_run_out o;
	char *save = NULL, *list;

	lbt_run(&o, "run", LBT_PROBE, "ls", "/dev", NULL);
	LBT_ASSERT_EXIT(o, 0);
	list = strdup(lbt_chomp(o.out));
	for (char *t = strtok_r(list, " ", &save); t; t = strtok_r(NULL, " ", &save))
		cr_assert(dev_entry_allowed(t), "unexpected /dev/%s (all: %s)", t, o.out);
	for (int i = 0; need[i]; i++) {
		char *word = lbt_strdupf(" %s ", need[i]);
		char *padded = lbt_strdupf(" %s ", o.out);

		cr_assert(strstr(padded, word), "/dev/%s missing (all: %s)", need[i], o.out);
		free(word);
		free(padded);
	}
	free(list);
	lbt_out_free(&o);
}

LBT_TEST(isolation, dev_null_works)
{
	struct lb_run_out o;

	probe_expect("ok", "write", "/dev/null");
	lbt_run(&o, "run", "--", "sh", "-c",
		"echo x > /dev/null && wc -c < /dev/null && head -c 5 /dev/zero | wc -c", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "0\n5\n");
	lbt_out_free(&o);
}

LBT_TEST(isolation, dev_shm_and_pts_are_dirs)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "sh", "-c",
		"test -d /dev/shm && test -d /dev/pts && echo x > /dev/shm/f && cat /dev/shm/f",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "x\n");
	lbt_out_free(&o);
}

LBT_TEST(isolation, no_host_devices)
{
	probe_expect("ENOENT", "read", "/dev/mem");
	probe_expect("ENOENT", "read", "/dev/kmsg");
}

LBT_TEST(isolation, etc_files_exist)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "sh", "-c",
		"test -f /etc/resolv.conf && test -f /etc/hosts && echo ok", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ok\n");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--", "sh", "-c",
		"test -f /etc/resolv.conf && test -f /etc/hosts && echo ok", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ok\n");
	lbt_out_free(&o);
}

LBT_TEST(isolation, host_dirs_not_visible)
{
	// The host image exposes /usr, /bin, /lib*: not /root, not the work tree, not /home.
	probe_expect("ENOENT", "ls", "/work");
	probe_expect("ENOENT", "ls", "/home");
	probe_expect("ENOENT", "read", "/etc/shadow");
}

LBT_TEST(isolation, volume_ro)
{
	struct lb_run_out o;
	char *dir = lbt_mkdir_work("vol-ro");
	char *file = lbt_strdupf("%s/hello", dir);
	char *vol = lbt_strdupf("%s:/data:ro", dir);

	lbt_write_file(file, "from host\n");
	lbt_run(&o, "run", "-v", vol, "--", "cat", "/data/hello", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "from host\n");
	lbt_out_free(&o);
	lbt_run(&o, "run", "-v", vol, LBT_PROBE, "write", "/data/new", NULL);
	LBT_ASSERT_OUT(o, "EROFS\n");
	lbt_out_free(&o);
	lbt_run(&o, "run", "-v", vol, LBT_PROBE, "write", "/data/hello", NULL);
	LBT_ASSERT_OUT(o, "EROFS\n");
	lbt_out_free(&o);
	free(vol);
	free(file);
	free(dir);
}

LBT_TEST(isolation, volume_rw)
{
	struct lb_run_out o;
	char *dir = lbt_mkdir_work("vol-rw");
	char *vol = lbt_strdupf("%s:/data:rw", dir);
	char *file = lbt_strdupf("%s/new", dir);
	char *content;

	lbt_run(&o, "run", "-v", vol, LBT_PROBE, "write", "/data/new", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ok\n");
	content = lbt_read_file(file);
	cr_assert_not_null(content, "%s not written through the volume", file);
	cr_assert_str_eq(content, "lbbox-probe\n");
	free(content);
	free(file);
	free(vol);
	free(dir);
	lbt_out_free(&o);
}

LBT_TEST(isolation, volume_default_mode_is_rw)
{
	struct lb_run_out o;
	char *dir = lbt_mkdir_work("vol-default");
	char *vol = lbt_strdupf("%s:/data", dir);

	lbt_run(&o, "run", "-v", vol, LBT_PROBE, "write", "/data/new", NULL);
	LBT_ASSERT_OUT(o, "ok\n");
	free(vol);
	free(dir);
	lbt_out_free(&o);
}

LBT_TEST(isolation, volume_on_busybox_rootfs)
{
	struct lb_run_out o;
	char *dir = lbt_mkdir_work("vol-bb");
	char *vol = lbt_strdupf("%s:/lbbox-vol-data:ro", dir);
	char *file = lbt_strdupf("%s/f", dir);
	char *leak = lbt_strdupf("%s/lbbox-vol-data", lbt_rootfs());

	lbt_write_file(file, "bb\n");
	// /lbbox-vol-data does not exist in the rootfs: lbbox must create the mount point
	// without writing to the (read-only) rootfs on the host.
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "-v", vol, "--", "cat", "/lbbox-vol-data/f",
		NULL);
	cr_assert_neq(access(leak, F_OK), 0, "lbbox created %s in the host's rootfs", leak);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "bb\n");
	free(leak);
	free(file);
	free(vol);
	free(dir);
	lbt_out_free(&o);
}
