/* Images end to end through the CLI: load, run from the store, reuse, defaults, tag/rmi/prune,
 * errors, and a pull from the test registry (tests/registry/registry.py on 127.0.0.1). */
#include "harness.h"

#include <dirent.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMG "localhost/lbt-busybox:1"

LBT_SUITE(images);

static int count_snapshots(void)
{
	char *path = lbt_strdupf("%s/snapshots", lbt_root());
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.' && strlen(e->d_name) == 64;
	if (d)
		closedir(d);
	free(path);
	return n;
}

LBT_TEST(images, load_and_run_read_only)
{
	struct lb_run_out o;
	char *layout = lbt_oci_layout(NULL, IMG, NULL);
	lbt_load_layout(layout);
	lbt_run(&o, "images", NULL);
	LBT_ASSERT_EXIT(o, 0);
	/* podman's columns: REPOSITORY and TAG apart */
	cr_assert(strstr(o.out, "\nlocalhost/lbt-busybox  1  "), "images: %s", o.out);
	lbt_out_free(&o);

	lbt_run(&o, "run", "--image", IMG, "--", "sh", "-c",
		"cat /etc/hostname; touch /x 2>&1 | grep -c 'Read-only'", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "lbbox\n1\n");
	lbt_out_free(&o);
	cr_assert_eq(count_snapshots(), 1);
	free(layout);
}

/* The second run of an image neither unpacks nor even starts the image tool. */
LBT_TEST(images, second_run_reuses_the_snapshot)
{
	struct lb_run_out o;
	struct stat a, b;
	char *layout = lbt_oci_layout(NULL, IMG, NULL);
	lbt_load_layout(layout);
	lbt_run(&o, "run", "--image", IMG, "--", "true", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	char *snaps = lbt_strdupf("%s/snapshots", lbt_root());
	cr_assert_eq(stat(snaps, &a), 0);

	setenv("LBBOX_IMAGE_TOOL", "/bin/false", 1);
	lbt_run(&o, "run", "--image", IMG, "--", "echo", "again", NULL);
	unsetenv("LBBOX_IMAGE_TOOL");
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "again\n");
	lbt_out_free(&o);
	cr_assert_eq(stat(snaps, &b), 0);
	cr_assert(a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec,
		  "snapshots directory changed");
	cr_assert_eq(count_snapshots(), 1);
	free(snaps);
	free(layout);
}

LBT_TEST(images, config_cmd_is_the_default_command)
{
	struct lb_run_out o;
	char *layout = lbt_oci_layout(NULL, IMG, "/bin/echo from-cmd");
	lbt_load_layout(layout);
	lbt_run(&o, "run", "--image", IMG, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "from-cmd\n");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", IMG, "--", "echo", "given", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "given\n");
	lbt_out_free(&o);
	free(layout);
}

/* Writes go to the sandbox's own upper layer, never into the shared snapshot. */
LBT_TEST(images, writable_root_leaves_the_snapshot_alone)
{
	struct lb_run_out o;
	char *layout = lbt_oci_layout(NULL, IMG, NULL);
	lbt_load_layout(layout);
	lbt_run(&o, "run", "--image", IMG, "--read-only=false", "--", "sh", "-c",
		"echo x > /lbt-written && cat /lbt-written", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "x\n");
	lbt_out_free(&o);
	char *find = lbt_strdupf("find %s/snapshots -name lbt-written | grep -q .", lbt_root());
	cr_assert_neq(system(find), 0, "the write reached the snapshot");
	free(find);
	lbt_run(&o, "run", "--image", IMG, "--", "sh", "-c", "test -e /lbt-written || echo gone",
		NULL);
	cr_assert_str_eq(o.out, "gone\n");
	lbt_out_free(&o);
	free(layout);
}

LBT_TEST(images, tag_rmi_prune_inspect)
{
	struct lb_run_out o;
	char *layout = lbt_oci_layout(NULL, IMG, NULL);
	lbt_load_layout(layout);
	lbt_run(&o, "tag", IMG, "localhost/lbt-other:2", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "inspect", "localhost/lbt-other:2", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "\"Cmd\""), "inspect: %s", o.out);
	lbt_out_free(&o);
	/* a sandbox still running on the image keeps its snapshot through rmi + prune */
	struct lbt_proc p;
	lbt_add_marker("876601");
	lbt_spawn(&p, "run", "--image", "localhost/lbt-other:2", "--timeout", "3", "--", "sleep",
		  "876601", NULL);
	cr_assert_eq(lbt_wait_procs_with_arg("876601", 1, 10.0), 1, "sandbox did not start");
	/* as podman: an image in use is removed only by force */
	lbt_run(&o, "rmi", IMG, NULL);
	lbt_assert_error_line(&o, 125, "in use by sandbox");
	lbt_out_free(&o);
	lbt_run(&o, "rmi", "-f", IMG, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", IMG, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "not found");
	lbt_out_free(&o);
	lbt_run(&o, "rmi", "-f", "localhost/lbt-other:2", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "image", "prune", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "Removed 3 blobs"), "prune: %s", o.out);
	cr_assert(strstr(o.out, " 0 unpacked layers"), "prune while in use: %s", o.out);
	lbt_out_free(&o);
	cr_assert_eq(count_snapshots(), 1, "a snapshot in use was removed");
	lbt_wait(&p, &o, 20.0);
	LBT_ASSERT_EXIT(o, 124);
	lbt_out_free(&o);

	lbt_run(&o, "image", "prune", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, " 1 unpacked layers"), "prune: %s", o.out);
	lbt_out_free(&o);
	cr_assert_eq(count_snapshots(), 0, "the unused snapshot is still there");
	free(layout);
}

/* Where the kernel has no overlayfs: a flattened tree read-only, a private copy when writable. */
LBT_TEST(images, copy_fallback_without_overlayfs)
{
	struct lb_run_out o;
	char *layout = lbt_oci_layout(NULL, IMG, NULL);
	lbt_load_layout(layout);
	setenv("LBBOX_NO_OVERLAY", "1", 1);
	lbt_run(&o, "run", "--image", IMG, "--", "sh", "-c",
		"grep -c ' - overlay ' /proc/self/mountinfo; touch /x 2>&1 | grep -c Read-only",
		NULL);
	cr_assert_str_eq(o.out, "0\n1\n", "read-only: %s %s", o.out, o.err);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", IMG, "--read-only=false", "--", "sh", "-c",
		"echo y > /lbt-copy && cat /lbt-copy", NULL);
	unsetenv("LBBOX_NO_OVERLAY");
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "y\n");
	lbt_out_free(&o);
	char *find = lbt_strdupf("find %s/snapshots -name lbt-copy | grep -q .", lbt_root());
	cr_assert_neq(system(find), 0, "the write reached the flattened snapshot");
	free(find);
	char *flat = lbt_strdupf("ls -d %s/snapshots/*.flat/fs/bin >/dev/null", lbt_root());
	cr_assert_eq(system(flat), 0, "no flattened snapshot");
	free(flat);
	free(layout);
}

/* User by name, through the image's own /etc/passwd (busybox rootfs: sandbox = 1000). */
LBT_TEST(images, user_name_from_the_image)
{
	struct lb_run_out o;
	char *layout = lbt_oci_layout("sandbox", IMG, "id -u");
	lbt_load_layout(layout);
	lbt_run(&o, "run", "--image", IMG, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "1000\n");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", IMG, "--user", "0", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "0\n");
	lbt_out_free(&o);
	free(layout);

	layout = lbt_oci_layout("nosuchuser", IMG, "id -u");
	lbt_load_layout(layout);
	lbt_run(&o, "run", "--image", IMG, NULL);
	lbt_assert_error_line(&o, 125, "not in the image's /etc/passwd");
	lbt_out_free(&o);
	free(layout);
}

/* lbbox load -i takes an OCI archive (a tar of a layout), as podman load does. */
LBT_TEST(images, load_oci_archive)
{
	struct lb_run_out o;
	char *layout = lbt_oci_layout(NULL, IMG, "/bin/echo from-archive");
	char *tar = lbt_strdupf("%s/image.tar", lbt_workdir());
	char *sh = lbt_strdupf("tar -C '%s' -cf '%s' .", layout, tar);
	cr_assert_eq(system(sh), 0);
	lbt_run(&o, "load", "-i", tar, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "Loaded image: " IMG), "load: %s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", IMG, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "from-archive\n");
	lbt_out_free(&o);
	free(sh);
	free(tar);
	free(layout);
}

LBT_TEST(images, bad_references_and_missing_images)
{
	struct lb_run_out o;
	lbt_run(&o, "run", "--image", "UPPER/Case", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "invalid image reference");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", "a:b:c", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "invalid image reference");
	lbt_out_free(&o);
	/* never a registry outside this machine: --pull never */
	lbt_run(&o, "run", "--pull", "never", "--image", "lbt-nosuch:1", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "not found");
	lbt_out_free(&o);
	char *missing = lbt_strdupf("%s/no-layout", lbt_workdir());
	lbt_run(&o, "load", "--oci-dir", missing, NULL);
	lbt_assert_error_line(&o, 125, NULL);
	lbt_out_free(&o);
	free(missing);
}

/* The Python sandbox image as scripts/setup.sh packages it (rootfs-tools), loaded and run. */
LBT_TEST(images, python_image_from_its_oci_layout)
{
	struct lb_run_out o;
	const char *env = getenv("LBBOX_TEST_PYTHON_OCI");
	char *bin = strdup(lbt_bin());
	char *layout =
	    env && *env ? strdup(env) : lbt_strdupf("%s/images/python-oci", dirname(bin));
	char *index = lbt_strdupf("%s/index.json", layout);
	cr_assert_eq(access(index, R_OK), 0, "no %s: run scripts/setup.sh", index);
	lbt_load_layout(layout);
	lbt_run(&o, "run", "--image", "localhost/python:latest", "--", "sh", "-c",
		"python3 -c 'import ssl, venv, sys; print(sys.version_info[0])' && pip --version",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strncmp(o.out, "3\npip ", 6), "python image: %s", o.out);
	lbt_out_free(&o);
	free(index);
	free(layout);
	free(bin);
}

LBT_TEST(images, pull_from_a_registry_then_run)
{
	struct lb_run_out o;
	int port = 0;
	char *layout = lbt_oci_layout(NULL, "latest", "/bin/echo pulled-and-ran");
	pid_t reg = lbt_registry_start(layout, &port);
	char *host = lbt_strdupf("127.0.0.1:%d", port);
	char *ref = lbt_strdupf("%s/lbt/busybox:latest", host);

	lbt_run(&o, "pull", "--insecure-registry", host, ref, NULL);
	kill(reg, SIGKILL);
	waitpid(reg, NULL, 0);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "Pulled"), "pull: %s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", ref, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, "pulled-and-ran\n");
	lbt_out_free(&o);
	free(ref);
	free(host);
	free(layout);
}
