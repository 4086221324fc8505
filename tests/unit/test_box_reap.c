/*
 * The Box layer's bookkeeping that keeps a create from scanning every session: the session count
 * from the directory's link count (with the one-by-one count it replaces as the reference), and
 * the reaper's hint RUNROOT/box/reap.due.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box/box_internal.h"
#include "lbbox/base/util.h"

static char tmp[64]; /* tmpfs: the count from the link count */
static struct lb_box box;

static void setup(void)
{
	struct lb_paths paths = {.root = "/nonexistent", .runroot = tmp};
	char sessions[128];
	snprintf(tmp, sizeof(tmp), "/dev/shm/lbbox-unit-reap.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	cr_assert_eq(lb_box_init(&box, &paths, "unit", NULL), 0);
	snprintf(sessions, sizeof(sessions), "%s/box/sessions", tmp);
	cr_assert_eq(lb_mkdir_p(sessions, 0700, NULL), 0);
}

static void teardown(void)
{
	lb_box_fini(&box);
	lb_rm_rf(tmp, NULL);
}

static void session_dir(const char *key, bool make)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/box/sessions/%s", tmp, key);
	cr_assert_eq(make ? mkdir(path, 0700) : rmdir(path), 0, "%s", path);
}

static size_t count_by_reading(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "ls -A %s/box/sessions | wc -l", tmp);
	FILE *f = popen(cmd, "r");
	size_t n = 0;
	cr_assert_eq(fscanf(f, "%zu", &n), 1);
	pclose(f);
	return n;
}

TestSuite(box_reap, .init = setup, .fini = teardown);

Test(box_reap, count_follows_sessions_as_they_come_and_go)
{
	char key[16];
	cr_assert_eq(box_count_sessions(&box), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "s%d", i);
		session_dir(key, true);
	}
	cr_assert_eq(box_count_sessions(&box), 40);
	for (int i = 0; i < 40; i += 3) {
		snprintf(key, sizeof(key), "s%d", i);
		session_dir(key, false);
	}
	cr_assert_eq(box_count_sessions(&box), count_by_reading());
	cr_assert_eq(box_count_sessions(&box), 26);
}

static void write_hint(const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/box/reap.due", tmp);
	cr_assert_eq(lb_write_file_atomic(path, text, strlen(text), 0600, NULL), 0);
}

Test(box_reap, the_hint_says_when_a_create_must_reap)
{
	struct box_dropping d = {0};
	cr_assert(box_reap_if_due(&box, 1000, &d), "no hint must mean due now");
	/* nothing can expire: the full reap's hint is "never" */
	cr_assert_not(box_reap_if_due(&box, UINT64_MAX - 1, &d));
	struct lb_box_session s = {.last_used_ns = 5000000000ull};
	s.spec.persistent = true;
	box_reap_due_lower(&box, &s); /* a persistent session never expires */
	cr_assert_not(box_reap_if_due(&box, UINT64_MAX - 1, &d));
	s.spec.persistent = false;
	box_reap_due_lower(&box, &s); /* expires at last used + 300 s */
	uint64_t at = 5000000000ull + 300ull * 1000000000ull;
	cr_assert_not(box_reap_if_due(&box, at - 1, &d));
	cr_assert(box_reap_if_due(&box, at, &d));
	/* a later expiry never moves the hint later; garbage is "due now" */
	write_hint("100\n");
	box_reap_due_lower(&box, &s);
	cr_assert(box_reap_if_due(&box, 100, &d));
	write_hint("soon\n");
	cr_assert(box_reap_if_due(&box, 1, &d));
	cr_assert_eq(d.n, 0);
}
