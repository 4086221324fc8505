/*
 * lbbox network ls / inspect without root. Rootless sandboxes share no network: each has pasta
 * and its own filter table ("inet lbbox") in its own namespace, so "the network" is the set of
 * live sandboxes whose state says pasta, and its counters are read from each of them (nft run
 * in the sandbox's user and network namespaces, which the caller owns).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"
#include "net_internal.h"

#define PASTA_NET "pasta"

/*
 * The live pasta sandbox whose state directory is dir: its state and a pidfd of its pid 1
 * (opened before the start time is checked, so it cannot name a reused pid); false otherwise.
 */
static bool pasta_sandbox(const char *dir, json_t **state, int *pidfd)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/state.json", dir);
	json_t *st = json_load_file(path, 0, NULL);
	const char *mode = json_string_value(json_object_get(json_object_get(st, "net"), "mode"));
	pid_t pid = (pid_t)json_integer_value(json_object_get(st, "pid"));
	uint64_t start = (uint64_t)json_integer_value(json_object_get(st, "pid_start"));
	*pidfd = mode && strcmp(mode, PASTA_NET) == 0 && pid > 0
		     ? (int)syscall(SYS_pidfd_open, pid, 0)
		     : -1;
	if (*pidfd < 0 || lb_proc_starttime(pid) != start) {
		if (*pidfd >= 0)
			close(*pidfd);
		json_decref(st);
		return false;
	}
	*state = st;
	return true;
}

typedef int (*pasta_fn)(json_t *state, int pidfd, void *arg);

static int each_pasta_sandbox(const char *runroot, pasta_fn fn, void *arg, struct lb_err **err)
{
	_cleanup_closedir_ DIR *d = opendir(runroot);
	struct dirent *de;
	if (!d)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "open %s", runroot);
	while ((de = readdir(d))) {
		char dir[LB_PATH_BUF];
		json_t *st;
		int pidfd;
		if (strlen(de->d_name) != 12 || strspn(de->d_name, "0123456789abcdef") != 12)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", runroot, de->d_name);
		if (!pasta_sandbox(dir, &st, &pidfd))
			continue;
		int r = fn(st, pidfd, arg);
		close(pidfd);
		json_decref(st);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int count_one(json_t *state, int pidfd, void *arg)
{
	(void)state, (void)pidfd;
	++*(int *)arg;
	return 0;
}

int lb_net_pasta_list(const struct lb_paths *paths, json_t **out, struct lb_err **err)
{
	int n = 0;
	if (each_pasta_sandbox(paths->runroot, count_one, &n, err) < 0)
		return -1;
	*out = json_pack("[{s:s, s:s, s:s, s:i}]", "bridge", PASTA_NET, "subnet", "(host's)",
			 "gateway", "(host's)", "sandboxes", n);
	return *out ? 0 : lb_err_set(err, ENOMEM, "network list");
}

struct inspect_arg {
	struct lb_net_cfg cfg;
	json_t *sandboxes, *total;
	struct lb_err **err;
};

/* Adds one sandbox's {"name": {"packets", "bytes"}} counters into the totals. */
static void add_counters(json_t *total, json_t *counters)
{
	const char *name;
	json_t *c;
	json_object_foreach(counters, name, c)
	{
		json_t *t = json_object_get(total, name);
		if (!t)
			json_object_set_new(total, name,
					    t = json_pack("{s:I, s:I}", "packets", (json_int_t)0,
							  "bytes", (json_int_t)0));
		static const char *const keys[] = {"packets", "bytes"};
		for (size_t i = 0; i < 2; i++)
			json_object_set_new(
			    t, keys[i],
			    json_integer(json_integer_value(json_object_get(t, keys[i])) +
					 json_integer_value(json_object_get(c, keys[i]))));
	}
}

static int inspect_one(json_t *state, int pidfd, void *arg)
{
	struct inspect_arg *a = arg;
	json_t *counters = NULL;
	struct lb_err *e = NULL;
	if (lb_nft_counters_in(pidfd, &a->cfg, "lbbox", &counters, &e) < 0) {
		/* a sandbox that ended meanwhile is simply no longer there */
		/* (a pidfd is readable once its process exited, reaped or not) */
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		bool gone = poll(&p, 1, 0) > 0;
		if (gone) {
			lb_err_free(&e);
			return 0;
		}
		if (a->err)
			*a->err = e;
		else
			lb_err_free(&e);
		return -1;
	}
	add_counters(a->total, counters);
	json_array_append_new(a->sandboxes,
			      json_pack("{s:O, s:O, s:o}", "id", json_object_get(state, "id"),
					"pid", json_object_get(state, "pid"), "dropped", counters));
	return 0;
}

int lb_net_pasta_inspect(const struct lb_paths *paths, const struct lb_net_opts *opts, json_t **out,
			 struct lb_err **err)
{
	struct inspect_arg a = {.sandboxes = json_array(), .total = json_object(), .err = err};
	lb_net_cfg_resolve(opts, paths->runroot, &a.cfg);
	if (each_pasta_sandbox(paths->runroot, inspect_one, &a, err) < 0) {
		json_decref(a.sandboxes);
		json_decref(a.total);
		return -1;
	}
	*out = json_pack("{s:s, s:s, s:o, s:o}", "bridge", PASTA_NET, "mode",
			 "rootless: pasta per sandbox, filter in each sandbox's namespace",
			 "sandboxes", a.sandboxes, "dropped", a.total);
	return *out ? 0 : lb_err_set(err, ENOMEM, "network inspect");
}
