/*
 * The runtime-wide indexes behind box_status and the managed-process capacity check (index.c):
 * the counts come from RUNROOT/box/live and RUNROOT/box/running alone, never from the session
 * directories; stale entries (a keeper killed outright) are validated away by the capacity
 * check; hashed session names still match their tenant's prefix.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "box/box_internal.h"
#include "box_fixture.h"
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"

static void setup(void)
{
	box_fixture_setup("index");
}

TestSuite(box_index, .init = setup, .fini = teardown);

/* A pid that existed and is gone (with the start time it had). */
static void dead_keeper(pid_t *pid, uint64_t *start)
{
	pid_t p = fork();
	if (p == 0) {
		pause();
		_exit(0);
	}
	cr_assert_gt(p, 0);
	*pid = p;
	*start = lb_proc_starttime(p);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static void live_session(const char *id)
{
	char key[BOX_KEY_MAX];
	box_session_key(id, key);
	cr_assert_eq(box_live_add(&box, key, id, NULL), 0);
}

static void running(const char *id, const char *proc)
{
	char key[BOX_KEY_MAX];
	box_session_key(id, key);
	cr_assert_eq(box_running_add(&box, key, proc, getpid(), lb_proc_starttime(getpid()), NULL),
		     0);
}

static void assert_status(const char *prefix, size_t sessions, size_t procs)
{
	size_t s = 99, r = 99;
	lb_box_status(&box, prefix, &s, &r);
	cr_assert_eq(s, sessions, "%s: %zu sessions, not %zu", prefix ? prefix : "all", s,
		     sessions);
	cr_assert_eq(r, procs, "%s: %zu running, not %zu", prefix ? prefix : "all", r, procs);
}

/* Session directories with records but no index entries count for nothing: box_status reads
 * no session directory (it did one access and one opendir per session). */
Test(box_index, status_reads_the_indexes_not_the_sessions)
{
	char sdir[LB_PATH_BUF], rec[LB_PATH_BUF + 16];
	for (int i = 0; i < 20; i++) {
		char id[16];
		snprintf(id, sizeof(id), "t-s%d", i);
		box_session_dir(&box, id, sdir, sizeof(sdir));
		cr_assert_eq(lb_mkdir_p(sdir, 0700, NULL), 0);
		snprintf(rec, sizeof(rec), "%s/session.json", sdir);
		cr_assert_eq(lb_write_file_atomic(rec, "{}", 2, 0600, NULL), 0);
	}
	assert_status(NULL, 0, 0);
	live_session("t-s1");
	live_session("t-s2");
	running("t-s1", "default");
	running("t-s1", "web");
	assert_status(NULL, 2, 2);
	assert_status("t", 2, 2);
	assert_status("u", 0, 0);
}

/* A running entry counts only while its session is live: not once its delete began. */
Test(box_index, processes_count_with_their_live_session_only)
{
	live_session("t-a");
	running("t-a", "p");
	running("t-gone", "p");
	assert_status("t", 1, 1);
	box_live_remove(&box, "t-a");
	assert_status("t", 0, 0);
}

/* Ids that are not file names are hashed: the prefix is matched on the id kept by the live
 * entry; two tenants whose prefixes one another's begins with stay apart. */
Test(box_index, hashed_session_ids_match_their_prefix)
{
	char long_a[200], long_b[200];
	snprintf(long_a, sizeof(long_a), "ws1-%0150d", 7);
	snprintf(long_b, sizeof(long_b), "ws12-%0150d", 7);
	const char *odd = "ws1-with/slash and space";
	live_session(long_a);
	live_session(long_b);
	live_session(odd);
	live_session("ws12-plain");
	running(long_a, "p");
	running(odd, "q");
	running(long_b, "p");
	running(long_b, "q");
	assert_status("ws1", 2, 2);
	assert_status("ws12", 2, 2);
	assert_status("ws", 0, 0);
	assert_status(NULL, 4, 4);
}

/* An id longer than the live entry keeps is matched on its record. */
Test(box_index, a_prefix_beyond_the_kept_id_reads_the_record)
{
	char prefix[BOX_LIVE_ID_MAX + 8], id[BOX_LIVE_ID_MAX + 16], key[BOX_KEY_MAX];
	memset(prefix, 'x', BOX_LIVE_ID_MAX + 4);
	prefix[BOX_LIVE_ID_MAX + 4] = '\0';
	snprintf(id, sizeof(id), "%s-1", prefix);
	live_session(id);
	assert_status(prefix, 0, 0); /* no record: not live after all */
	struct lb_box_session s = {.session_id = id, .owner = "", .sandbox = "0123456789ab"};
	lb_box_spec_init(&s.spec);
	char sdir[LB_PATH_BUF];
	box_session_dir(&box, id, sdir, sizeof(sdir));
	cr_assert_eq(lb_mkdir_p(sdir, 0700, NULL), 0);
	cr_assert_eq(box_record_write(sdir, &s, NULL), 0);
	lb_box_spec_free(&s.spec);
	assert_status(prefix, 1, 0);
	prefix[BOX_LIVE_ID_MAX + 2] = '\0';
	assert_status(prefix, 0, 0);
	box_session_key(id, key);
	cr_assert_eq(key[0], '~');
}

/* A keeper killed outright leaves its entry: box_status trusts names (counts it), the
 * capacity check validates and removes it, a live keeper's entry stays. */
Test(box_index, the_capacity_check_heals_stale_entries)
{
	pid_t dead;
	uint64_t start;
	dead_keeper(&dead, &start);
	live_session("t-a");
	running("t-a", "alive");
	cr_assert_eq(box_running_add(&box, "t-a", "killed", dead, start, NULL), 0);
	assert_status("t", 1, 2);
	cr_assert_eq(box_running_count(&box, false), 1);
	assert_status("t", 1, 2); /* a count without heal removes nothing */
	cr_assert_eq(box_running_count(&box, true), 1);
	assert_status("t", 1, 1);
	box_running_heal(&box);
	assert_status("t", 1, 1);
}

/* A keeper removes its own entry only: never a successor's of the same name. */
Test(box_index, a_keeper_removes_only_its_own_entry)
{
	pid_t dead;
	uint64_t start;
	dead_keeper(&dead, &start);
	live_session("t-a");
	running("t-a", "p"); /* the successor: this process */
	box_running_remove(&box, "t-a", "p", dead, start);
	assert_status("t", 1, 1);
	box_running_remove(&box, "t-a", "p", getpid(), lb_proc_starttime(getpid()));
	assert_status("t", 1, 0);
	running("t-a", "p");
	box_running_remove(&box, "t-a", "p", 0, 0); /* stop, replace: whoever's */
	assert_status("t", 1, 0);
}

/* A session's drop removes its entries, not those of a session whose key it begins. */
Test(box_index, a_dropped_session_takes_its_entries_only)
{
	live_session("t-a");
	live_session("t-a1");
	running("t-a", "p");
	running("t-a", "q");
	running("t-a1", "p");
	box_running_remove_session(&box, "t-a");
	assert_status("t", 2, 1);
	cr_assert_eq(box_running_count(&box, false), 1);
}
