/*
 * Unit tests for a detached run's output history (src/box/proc_log.c): on a full filesystem
 * (the workspace shares it, and a sandbox can fill it) the file stays whole chunks; a reader
 * that keeps up sees every chunk in order across rotations, and one that falls behind is told
 * how many halves it lost.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box/box_internal.h"

static char dir[] = "/tmp/lbbox-proclog-XXXXXX";

static void setup_size(const char *opts)
{
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(mount("tmpfs", dir, "tmpfs", 0, opts), 0, "mount tmpfs");
}

static void setup_small(void)
{
	setup_size("size=64k,mode=700");
}

static void setup(void)
{
	setup_size("size=4m,mode=700");
}

static void teardown(void)
{
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

static char *json_path(void)
{
	char *p = NULL;
	cr_assert_neq(asprintf(&p, "%s/p.json", dir), -1);
	return p;
}

Test(proc_log, a_full_filesystem_leaves_whole_chunks, .init = setup_small, .fini = teardown)
{
	struct box_log l;
	struct lb_err *err = NULL;
	char *json = json_path(), fill[PATH_MAX], line[32];
	cr_assert_eq(box_log_open(&l, json, &err), 0);
	snprintf(fill, sizeof(fill), "%s/fill", dir);
	FILE *f = fopen(fill, "w");
	static const char z[4096];
	while (f && fwrite(z, 1, sizeof(z), f) == sizeof(z))
		;
	fclose(f);
	int dropped = 0;
	for (int i = 0; i < 2000; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i);
		uint64_t before = l.size;
		struct stat st;
		box_log_write(&l, 1, line, (size_t)n);
		cr_assert_eq(fstat(l.fd, &st), 0);
		cr_assert_eq((uint64_t)st.st_size, l.size,
			     "chunk %d: %lld bytes on disk, %llu whole", i, (long long)st.st_size,
			     (unsigned long long)l.size);
		dropped += l.size == before;
	}
	cr_assert_gt(dropped, 0, "the filesystem was full");
	unlink(fill);
	box_log_write(&l, 2, "after\n", 6);

	struct lb_box_log_reader r = {.fd = -1};
	box_proc_log_path(json, r.path, sizeof(r.path));
	char buf[LB_BOX_LOG_CHUNK_MAX], last[LB_BOX_LOG_CHUNK_MAX + 1] = "";
	int stream = 0, last_stream = 0;
	size_t n;
	while (lb_box_log_next(&r, &stream, buf, sizeof(buf), &n) == 1) {
		memcpy(last, buf, n);
		last[n] = '\0';
		last_stream = stream;
	}
	cr_assert_eq(r.damaged_halves, 0);
	cr_assert_str_eq(last, "after\n", "the chunks after the full filesystem are readable");
	cr_assert_eq(last_stream, 2);
	lb_box_log_close(&r);
	close(l.fd);
	free(json);
}

/* Writes chunks "<i>\n" for i in [from, to). */
static void write_lines(struct box_log *l, int from, int to)
{
	char line[512];
	for (int i = from; i < to; i++) {
		memset(line, 'x', sizeof(line));
		int n = snprintf(line, sizeof(line), "%d", i);
		line[n] = ' ';
		line[sizeof(line) - 1] = '\n';
		box_log_write(l, 1, line, sizeof(line));
	}
}

Test(proc_log, readers_across_rotations, .init = setup, .fini = teardown)
{
	struct box_log l;
	struct lb_err *err = NULL;
	char *json = json_path(), buf[LB_BOX_LOG_CHUNK_MAX];
	cr_assert_eq(box_log_open(&l, json, &err), 0);
	struct lb_box_log_reader r = {.fd = -1};
	box_proc_log_path(json, r.path, sizeof(r.path));
	int stream, want = 0;
	size_t n;
	// 20 chunks at a time, a reader that keeps up: every chunk, in order, none lost
	for (int round = 0; round < 40; round++) {
		write_lines(&l, round * 20, round * 20 + 20);
		while (lb_box_log_next(&r, &stream, buf, sizeof(buf), &n) == 1)
			cr_assert_eq(atoi(buf), want++, "in order");
		char log[PATH_MAX];
		snprintf(log, sizeof(log), "%s", r.path);
		cr_assert_eq(access(log, F_OK), 0, "the current half is always there");
	}
	cr_assert_eq(want, 800);
	cr_assert_eq(r.skipped, 0);
	// far behind: the rest of its half, then told how many halves went (and only where a gap
	// is), then on with the oldest still kept, to the last
	write_lines(&l, 800, 800 + 2000);
	uint64_t skipped = 0;
	while (lb_box_log_next(&r, &stream, buf, sizeof(buf), &n) == 1) {
		int got = atoi(buf);
		cr_assert_eq(got == want, r.skipped == skipped, "chunk %d (after %d): skipped %llu",
			     got, want - 1, (unsigned long long)r.skipped);
		cr_assert_geq(got, want);
		skipped = r.skipped;
		want = got + 1;
	}
	cr_assert_eq(want, 2800, "the latest is read");
	cr_assert_gt(r.skipped, 0, "the halves it missed are counted");
	lb_box_log_close(&r);
	close(l.fd);
	free(json);
}
