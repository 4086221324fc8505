/*
 * The retention of exited managed processes reads RUNROOT/box/exited (index_exited.c), never the
 * session directories: the newest max_completed_processes records stay, older ones and those past
 * the retention time go; an entry that went stale never takes a newer record with it; a busy
 * session is left for the next prune; the reaper's reindex adds what a killed keeper left out.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "box/box_internal.h"
#include "box_fixture.h"
#include "lbbox/base/util.h"

static void setup(void)
{
	box_fixture_setup("exited");
}

TestSuite(box_exited, .init = setup, .fini = teardown);

static uint64_t sec_ago(uint64_t s)
{
	return lb_realtime_ns() - s * 1000000000ull;
}

static void sdir_of(const char *skey, char *out, size_t len)
{
	snprintf(out, len, "%s/sessions/%s", box.dir, skey);
}

static void json_of(const char *skey, const char *pid, char *out, size_t len)
{
	char sdir[LB_PATH_BUF];
	sdir_of(skey, sdir, sizeof(sdir));
	box_proc_paths(sdir, pid, out, NULL, len);
}

/* A record in sessions/<skey>/procs (and the session's procs.lock); exited at `at` (0: running),
 * with its entry if indexed. */
static void record(const char *skey, const char *pid, uint64_t at, bool indexed)
{
	char sdir[LB_PATH_BUF], procs[LB_PATH_BUF], json[LB_PATH_BUF];
	char *none[] = {NULL};
	sdir_of(skey, sdir, sizeof(sdir));
	snprintf(procs, sizeof(procs), "%s/procs", sdir);
	cr_assert_eq(lb_mkdir_p(procs, 0700, NULL), 0);
	int lock = -1; /* as lb_box_proc_start leaves it */
	cr_assert_eq(box_flock(sdir, "procs.lock", LOCK_SH, true, &lock, NULL), 0);
	close(lock);
	json_of(skey, pid, json, sizeof(json));
	struct lb_box_proc_info p = {.session_id = (char *)skey,
				     .process_id = (char *)pid,
				     .command = "true",
				     .cwd = "/",
				     .args = none,
				     .env_keys = none,
				     .running = at == 0,
				     .exited_ns = at,
				     .has_exit_code = at != 0};
	cr_assert_eq(box_proc_record_write(json, &p, getpid(), 1, NULL), 0);
	if (indexed)
		cr_assert_eq(box_exited_add(&box, skey, pid, at, NULL), 0);
}

static bool has_record(const char *skey, const char *pid)
{
	char json[LB_PATH_BUF];
	json_of(skey, pid, json, sizeof(json));
	return access(json, F_OK) == 0;
}

static size_t entries(void)
{
	char dir[LB_PATH_BUF];
	size_t n = 0;
	snprintf(dir, sizeof(dir), "%s/exited", box.dir);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

Test(box_exited, the_newest_stay_up_to_the_runtime_wide_maximum)
{
	box.limits.max_completed_processes = 2;
	record("s1", "old", sec_ago(30), true);
	record("s2", "mid", sec_ago(20), true);
	record("s1", "new", sec_ago(10), true);
	box_exited_prune(&box);
	cr_assert(!has_record("s1", "old"), "the oldest of three goes (across sessions)");
	cr_assert(has_record("s2", "mid") && has_record("s1", "new"));
	cr_assert_eq(entries(), 2);
}

Test(box_exited, records_past_the_retention_time_go)
{
	box.limits.completed_retention_sec = 300;
	record("s1", "stale", sec_ago(400), true);
	record("s1", "fresh", sec_ago(10), true);
	box_exited_prune(&box);
	cr_assert(!has_record("s1", "stale"));
	cr_assert(has_record("s1", "fresh"));
	cr_assert_eq(entries(), 1);
}

/* The retention reads the index only: a record without an entry is not its business (with the
 * full scan it replaced, this record went). */
Test(box_exited, no_session_directory_is_read)
{
	box.limits.completed_retention_sec = 300;
	record("s1", "unindexed", sec_ago(400), false);
	box_exited_prune(&box);
	cr_assert(has_record("s1", "unindexed"));
}

/* An entry whose record was replaced by a running process (or another exit) of the same id
 * never removes that record; the stale entry itself goes. */
Test(box_exited, a_stale_entry_never_takes_a_newer_record)
{
	box.limits.completed_retention_sec = 300;
	record("s1", "p", 0, false);			     /* running now */
	box_exited_add(&box, "s1", "p", sec_ago(400), NULL); /* its old exit's entry */
	record("s1", "q", sec_ago(5), false);		     /* exited again since */
	box_exited_add(&box, "s1", "q", sec_ago(500), NULL);
	box_exited_prune(&box);
	cr_assert(has_record("s1", "p") && has_record("s1", "q"));
	cr_assert_eq(entries(), 0);
}

/* A start or stop holding the session's procs.lock is not waited for, nor raced: the record and
 * its entry stay for the next prune. */
Test(box_exited, a_busy_session_is_left_for_the_next_prune)
{
	char sdir[LB_PATH_BUF];
	int lock = -1;
	box.limits.completed_retention_sec = 300;
	record("s1", "p", sec_ago(400), true);
	sdir_of("s1", sdir, sizeof(sdir));
	cr_assert_eq(box_flock(sdir, "procs.lock", LOCK_EX, true, &lock, NULL), 0);
	pid_t child = fork();
	if (child == 0) { /* flock is per open file: another process must try */
		box_exited_prune(&box);
		_exit(has_record("s1", "p") && entries() == 1 ? 0 : 1);
	}
	int status;
	waitpid(child, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "kept while locked");
	close(lock);
	box_exited_prune(&box);
	cr_assert(!has_record("s1", "p"));
	cr_assert_eq(entries(), 0);
}

Test(box_exited, a_session_drop_removes_its_entries_only)
{
	record("t-a", "p", sec_ago(5), true);
	record("t-a", "q", sec_ago(4), true);
	record("t-a1", "p", sec_ago(3), true);
	box_exited_remove(&box, "t-a", "p");
	cr_assert_eq(entries(), 2);
	box_exited_remove(&box, "t-a", NULL);
	cr_assert_eq(entries(), 1, "t-a1's entry stays");
}

/* The reaper's round indexes exits a keeper killed between its record and its entry left out;
 * running records, detached runs' histories and exits without a time get none. */
Test(box_exited, the_reindex_adds_missing_exits_only)
{
	char sdir[LB_PATH_BUF];
	record("s1", "exited", sec_ago(5), false);
	record("s1", "running", 0, false);
	record("s1", "twice", sec_ago(6), true);
	sdir_of("s1", sdir, sizeof(sdir));
	box_exited_reindex(&box, "s1", sdir);
	cr_assert_eq(entries(), 2, "one added, the existing one kept once");
	box.limits.max_completed_processes = 0;
	box_exited_prune(&box);
	cr_assert(!has_record("s1", "exited") && !has_record("s1", "twice"));
	cr_assert(has_record("s1", "running"));
	cr_assert_eq(entries(), 0);
}

/* Names that are not the index's own (planted, or damaged) are dropped without touching any
 * record: the name is never a path. */
Test(box_exited, foreign_names_touch_no_record)
{
	char path[LB_PATH_BUF];
	record("s1", "p", sec_ago(400), false);
	box.limits.completed_retention_sec = 300;
	char pkey[32];
	box_proc_key("p", pkey);
	const char *bad[] = {"junk", "00000000000000000001@..@x", "1@s1@", "x@s1@y"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		cr_assert_eq(box_index_add(&box, "exited", bad[i], "exited", NULL), 0);
	box_exited_prune(&box);
	cr_assert(has_record("s1", "p"));
	cr_assert_eq(entries(), 0);
	snprintf(path, sizeof(path), "%s/sessions/s1/procs/%s.json", box.dir, pkey);
	cr_assert_eq(access(path, F_OK), 0);
}
