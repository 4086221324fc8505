/* Pull and load progress as podman shows it, on stderr: one "Copying blob <12 hex> 2.0 MiB /
 * 2.0 MiB" line per blob when stderr is not a terminal, the line rewritten in place on one, and
 * nothing with -q; stdout keeps only the result lines. */
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

LBT_SUITE(image_progress);

static void run_ok(const char *const *args)
{
	struct lb_run_out o;
	lbt_runv(&o, args);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}

/* Every line of err is a complete "Copying KIND <12 hex> N UNIT / N UNIT" (or "skipped")
 * line, none drawn over with \r; returns how many there are. */
static int progress_lines(const char *err, const char *kind_want, bool skipped)
{
	int n = 0;
	cr_assert_null(strchr(err, '\r'), "no carriage returns off a terminal: %s", err);
	char *copy = strdup(err), *save = NULL;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++) {
		char kind[16], hex[16], rest[64];
		cr_assert_eq(sscanf(l, "Copying %15s %15s %63[^\n]", kind, hex, rest), 3, "%s", l);
		cr_assert(!strcmp(kind, "blob") || !strcmp(kind, "config"), "%s", l);
		cr_assert_eq(strspn(hex, "0123456789abcdef"), 12, "%s", l);
		if (skipped) {
			cr_assert_str_eq(rest, "skipped: already exists");
			continue;
		}
		char *slash = strstr(rest, " / ");
		cr_assert_not_null(slash, "%s", l);
		cr_assert(!strncmp(rest, slash + 3, (size_t)(slash - rest)), "done == total: %s",
			  l);
	}
	if (kind_want)
		cr_assert(strstr(err, kind_want), "%s", err);
	free(copy);
	return n;
}

/* A docker-archive of the busybox test image: its config and one layer. */
static char *saved_archive(const char *name)
{
	char *dir = lbt_oci_layout(NULL, name, "/bin/true");
	char *file = lbt_strdupf("%s/img-%d.tar", lbt_workdir(), rand());
	run_ok((const char *[]){"load", "-q", "--oci-dir", dir, NULL});
	run_ok((const char *[]){"save", "-o", file, name, NULL});
	run_ok((const char *[]){"rmi", name, NULL});
	free(dir);
	return file;
}

LBT_TEST(image_progress, load_a_line_per_blob_or_quiet)
{
	struct lb_run_out o;
	char *file = saved_archive("localhost/lbt-pr:1");
	lbt_run(&o, "load", "-i", file, NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "Loaded image: localhost/lbt-pr:1\n");
	cr_assert_eq(progress_lines(o.err, "Copying config ", false), 2, "%s", o.err);
	cr_assert(strstr(o.err, " MiB / "), "human units: %s", o.err);
	lbt_out_free(&o);

	run_ok((const char *[]){"rmi", "lbt-pr:1", NULL});
	lbt_run(&o, "load", "-q", "-i", file, NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "Loaded image: localhost/lbt-pr:1\n");
	cr_assert_str_eq(o.err, "", "-q: no progress");
	lbt_out_free(&o);
	free(file);
}

/* On a terminal (script gives lbbox a pty) the line is drawn over in place. */
LBT_TEST(image_progress, load_on_a_terminal_rewrites_in_place)
{
	char *file = saved_archive("localhost/lbt-pt:1");
	char *out = lbt_strdupf("%s/tty.out", lbt_workdir());
	char *cmd = lbt_strdupf("script -qec '%s --root %s --runroot %s load -i %s' /dev/null "
				"< /dev/null > %s",
				lbt_bin(), lbt_root(), lbt_runroot(), file, out);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	char *text = lbt_read_file(out);
	cr_assert(strstr(text, "\r\033[KCopying blob "), "%s", text);
	cr_assert(strstr(text, "Loaded image: localhost/lbt-pt:1"), "%s", text);
	free(text), free(cmd), free(out), free(file);
}

/* pull: the config and the layer, a line each; pulled again, both skipped; -q: nothing. */
LBT_TEST(image_progress, pull_a_line_per_blob_or_quiet)
{
	struct lb_run_out o;
	int port = 0;
	char *layout = lbt_oci_layout(NULL, "latest", "/bin/true");
	pid_t reg = lbt_registry_start(layout, &port);
	char *host = lbt_strdupf("127.0.0.1:%d", port);
	char *ref = lbt_strdupf("%s/lbt/progress:latest", host);

	lbt_run(&o, "pull", "--insecure-registry", host, ref, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "Pulled"), "%s", o.out);
	cr_assert_eq(progress_lines(o.err, "Copying blob ", false), 2, "%s", o.err);
	lbt_out_free(&o);
	lbt_run(&o, "pull", "--insecure-registry", host, ref, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(progress_lines(o.err, NULL, true), 2, "%s", o.err);
	lbt_out_free(&o);
	run_ok((const char *[]){"rmi", ref, NULL});
	run_ok((const char *[]){"image", "prune", NULL});
	lbt_run(&o, "pull", "-q", "--insecure-registry", host, ref, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.err, "", "-q: no progress");
	lbt_out_free(&o);
	kill(reg, SIGKILL);
	waitpid(reg, NULL, 0);
	free(ref), free(host), free(layout);
}
