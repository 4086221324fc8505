/* `lbbox save` as a podman user types it: docker-archive (the default) and oci-archive, to -o
 * FILE or to stdout, several images in one archive; what it writes loads back with `lbbox load`
 * and reads with skopeo; a terminal on stdout and bad arguments are refused with one line. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

LBT_SUITE(image_save);

static void run_ok(const char *const *args)
{
	struct lb_run_out o;
	lbt_runv(&o, args);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}

/* A shell command line's status, its stdout and stderr together in *out. */
static int sh(const char *cmd, char **out)
{
	char *full = lbt_strdupf("(%s) > %s/sh.out 2>&1", cmd, lbt_workdir());
	int st = system(full);
	char *path = lbt_strdupf("%s/sh.out", lbt_workdir());
	*out = lbt_read_file(path);
	free(full), free(path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *lbbox_cmd(void)
{
	return lbt_strdupf("%s --root %s --runroot %s", lbt_bin(), lbt_root(), lbt_runroot());
}

static void assert_runs(const char *ref, const char *want)
{
	struct lb_run_out o;
	lbt_run(&o, "run", "--image", ref, NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, want);
	lbt_out_free(&o);
}

static void assert_skopeo_reads(const char *transport, const char *file)
{
	char *out = NULL;
	char *cmd = lbt_strdupf("skopeo inspect %s:%s", transport, file);
	cr_assert_eq(sh(cmd, &out), 0, "%s: %s", cmd, out);
	cr_assert(strstr(out, "\"Layers\"") && strstr(out, "\"Os\": \"linux\""), "%s", out);
	free(cmd), free(out);
}

/* The default format to -o FILE: a docker-archive skopeo reads; it loads back and runs. */
LBT_TEST(image_save, docker_archive_round_trip)
{
	char *dir = lbt_oci_layout(NULL, "localhost/lbt-sv:1", "/bin/echo saved");
	char *file = lbt_strdupf("%s/sv.tar", lbt_workdir());
	run_ok((const char *[]){"load", "--oci-dir", dir, NULL});
	run_ok((const char *[]){"save", "-o", file, "lbt-sv:1", NULL});
	assert_skopeo_reads("docker-archive", file);
	char *lb = lbbox_cmd(), *out = NULL;
	char *cmd = lbt_strdupf("tar -xOf %s manifest.json", file);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert(strstr(out, "\"RepoTags\":[\"localhost/lbt-sv:1\"]"), "%s", out);
	free(cmd), free(out);

	run_ok((const char *[]){"rmi", "lbt-sv:1", NULL});
	cmd = lbt_strdupf("%s load -i %s", lb, file);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert(strstr(out, "Loaded image: localhost/lbt-sv:1\n"), "%s", out);
	assert_runs("lbt-sv:1", "saved\n");
	free(cmd), free(out), free(lb), free(file), free(dir);
}

/* --format oci-archive to stdout (podman's `save > file`), through `image save`. */
LBT_TEST(image_save, oci_archive_to_stdout)
{
	char *dir = lbt_oci_layout(NULL, "localhost/lbt-so:2", "/bin/echo oci-saved");
	char *file = lbt_strdupf("%s/so.tar", lbt_workdir());
	char *lb = lbbox_cmd(), *out = NULL;
	run_ok((const char *[]){"load", "--oci-dir", dir, NULL});
	char *cmd = lbt_strdupf("%s image save --format oci-archive lbt-so:2 > %s", lb, file);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert_str_eq(out, "", "nothing but the archive, on stdout");
	free(cmd), free(out);
	assert_skopeo_reads("oci-archive", file);

	run_ok((const char *[]){"rmi", "lbt-so:2", NULL});
	cmd = lbt_strdupf("%s load < %s", lb, file);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert(strstr(out, "Loaded image: localhost/lbt-so:2\n"), "%s", out);
	assert_runs("lbt-so:2", "oci-saved\n");
	free(cmd), free(out), free(lb), free(file), free(dir);
}

/* Two images over the same layer: one archive, the layer written once, both load back. */
LBT_TEST(image_save, several_images_share_layers)
{
	char *a = lbt_oci_layout(NULL, "localhost/lbt-m1:1", "/bin/echo one");
	char *b = lbt_oci_layout(NULL, "localhost/lbt-m2:1", "/bin/echo two");
	char *file = lbt_strdupf("%s/m.tar", lbt_workdir());
	char *lb = lbbox_cmd(), *out = NULL;
	run_ok((const char *[]){"load", "--oci-dir", a, NULL});
	run_ok((const char *[]){"load", "--oci-dir", b, NULL});
	run_ok((const char *[]){"save", "-o", file, "lbt-m1:1", "localhost/lbt-m2:1", NULL});
	char *cmd = lbt_strdupf("tar -tf %s | grep -c '\\.tar$'", file);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert_str_eq(out, "1\n", "the shared layer once");
	free(cmd), free(out);

	run_ok((const char *[]){"rmi", "lbt-m1:1", "lbt-m2:1", NULL});
	cmd = lbt_strdupf("%s load -i %s", lb, file);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert(strstr(out, "localhost/lbt-m1:1") && strstr(out, "localhost/lbt-m2:1"), "%s",
		  out);
	assert_runs("lbt-m1:1", "one\n");
	assert_runs("lbt-m2:1", "two\n");
	free(cmd), free(out), free(lb), free(file), free(a), free(b);
}

/* A terminal on stdout without -o, an unknown format or image: one line, exit 125, and no file
 * left under -o's name. */
LBT_TEST(image_save, refusals_are_one_line)
{
	char *dir = lbt_oci_layout(NULL, "localhost/lbt-sr:1", "/bin/true");
	char *file = lbt_strdupf("%s/none.tar", lbt_workdir());
	char *lb = lbbox_cmd(), *out = NULL;
	struct lb_run_out o;
	struct stat st;
	run_ok((const char *[]){"load", "--oci-dir", dir, NULL});

	char *cmd = lbt_strdupf("script -qec '%s save lbt-sr:1' /dev/null < /dev/null", lb);
	cr_assert_eq(sh(cmd, &out), 125, "%s", out);
	cr_assert(strstr(out, "lbbox: save: refusing to write an archive to a terminal") &&
		      lbt_count_lines(out) == 1,
		  "%s", out);
	free(cmd), free(out);

	lbt_run(&o, "save", "-o", NULL);
	lbt_assert_error_line(&o, 125, "missing value for option '-o'");
	lbt_out_free(&o);
	lbt_run(&o, "save", "--lbt-bogus", "lbt-sr:1", NULL);
	lbt_assert_error_line(&o, 125, "unknown option '--lbt-bogus'");
	lbt_out_free(&o);
	lbt_run(&o, "save", "--format", "tarball", "-o", file, "lbt-sr:1", NULL);
	lbt_assert_error_line(&o, 125, "--format 'tarball'");
	lbt_out_free(&o);
	lbt_run(&o, "save", "-o", file, "lbt-sr:1", "lbt-nosuch:1", NULL);
	lbt_assert_error_line(&o, 125, "not found");
	lbt_out_free(&o);
	cr_assert(stat(file, &st) < 0, "a failed save left %s", file);
	lbt_run(&o, "save", "-o", file, NULL);
	lbt_assert_error_line(&o, 125, "give at least one image");
	lbt_out_free(&o);
	free(lb), free(file), free(dir);
}
