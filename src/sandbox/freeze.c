/*
 * Pausing a live sandbox (an OCI runtime's pause / resume): every task of its cgroup stopped by
 * the freezer (v1 freezer.state, v2 cgroup.freeze), children included, and thawed again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/sandbox/sandbox.h"
#include "engine.h"

/* The freezer's control file of cg: v2's cgroup.freeze, or the v1 freezer hierarchy's state. */
static bool freezer_file(const struct lb_cgroup *cg, char *out, size_t len, bool *v2)
{
	struct lb_cgroup_dir_info dirs[LB_CGROUP_MAX_DIRS];
	size_t n = lb_cgroup_dir_info(cg, dirs, LB_CGROUP_MAX_DIRS);
	for (size_t i = 0; i < n; i++) {
		*v2 = !dirs[i].hier;
		if (*v2 || strstr(dirs[i].hier, "freezer")) {
			snprintf(out, len, "%s/%s", dirs[i].path,
				 *v2 ? "cgroup.freeze" : "freezer.state");
			return access(out, F_OK) == 0;
		}
	}
	return false;
}

static bool is_frozen(const char *file, bool v2, bool want)
{
	_cleanup_free_ char *s = NULL;
	if (v2) { /* cgroup.events' "frozen 1" says when it is done */
		char events[LB_PATH_BUF];
		snprintf(events, sizeof(events), "%.*s/cgroup.events",
			 (int)(strrchr(file, '/') - file), file);
		if (lb_read_file(events, 4096, &s, NULL, NULL) < 0)
			return false;
		return strstr(s, want ? "frozen 1" : "frozen 0") != NULL;
	}
	if (lb_read_file(file, 64, &s, NULL, NULL) < 0)
		return false;
	return !strncmp(s, want ? "FROZEN" : "THAWED", 6);
}

int lb_sandbox_freeze(const struct lb_paths *paths, const char *id, bool freeze,
		      struct lb_err **err)
{
	struct lb_sandbox *sb = NULL;
	char file[LB_PATH_BUF];
	bool v2 = false;
	if (lb_sandbox_open(paths, id, &sb, err) < 0)
		return -1;
	bool found = freezer_file(sb->cg, file, sizeof(file), &v2);
	lb_sandbox_close(sb);
	if (!found)
		return lb_err_set(err, ENOTSUP, "sandbox %s has no freezer cgroup", id);
	const char *v = v2 ? (freeze ? "1" : "0") : (freeze ? "FROZEN" : "THAWED");
	if (lb_write_fileat(AT_FDCWD, file, v, strlen(v), 0, 0, err) < 0)
		return -1;
	for (int i = 0; i < 500; i++) { /* 5 s: a task in uninterruptible sleep delays it */
		if (is_frozen(file, v2, freeze))
			return 0;
		usleep(10000);
	}
	return lb_err_set(err, ETIMEDOUT, "sandbox %s did not %s", id, freeze ? "freeze" : "thaw");
}

bool lb_sandbox_frozen(const struct lb_paths *paths, const char *id)
{
	struct lb_sandbox *sb = NULL;
	char file[LB_PATH_BUF];
	bool v2 = false;
	if (lb_sandbox_open(paths, id, &sb, NULL) < 0)
		return false;
	bool found = freezer_file(sb->cg, file, sizeof(file), &v2);
	lb_sandbox_close(sb);
	return found && is_frozen(file, v2, true);
}
