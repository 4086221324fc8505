/* Unit tests for the registry client (`lbbox pull`), against tests/registry/registry.py started
 * on 127.0.0.1 for each test: Bearer tokens, redirects, faults; every failure must leave the store
 * exactly as it was. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image/registry_internal.h"
#include "lbbox/image/registry.h"
#include "lbbox/image/store.h"
#include "lbbox/base/util.h"

#define MAX_SERVERS 2

static char work[64], root[96], layout[96];
static json_t *info;
static pid_t servers[MAX_SERVERS];
static int n_servers;

struct server {
	int port, blob_port;
	char log[128];
	char host[32]; /* "127.0.0.1:PORT" */
};

static void setup(void)
{
	snprintf(work, sizeof(work), "/tmp/lbbox-reg-XXXXXX");
	cr_assert_not_null(mkdtemp(work));
	snprintf(root, sizeof(root), "%s/store", work);
	snprintf(layout, sizeof(layout), "%s/layout", work);
}

/* Kills every registry this test started, whether it passed or not. */
static void teardown(void)
{
	struct lb_err *err = NULL;

	for (int i = 0; i < n_servers; i++) {
		kill(servers[i], SIGKILL);
		waitpid(servers[i], NULL, 0);
	}
	n_servers = 0;
	json_decref(info);
	info = NULL;
	lb_rm_rf(work, &err);
	lb_err_free(&err);
}

TestSuite(registry, .init = setup, .fini = teardown, .timeout = 60);

/* ---- the test registry ------------------------------------------------------------------ */

static const char *registry_py(void)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s", __FILE__);
	*strrchr(path, '/') = '\0'; /* tests/unit */
	*strrchr(path, '/') = '\0'; /* tests */
	strcat(path, "/registry/registry.py");
	return path;
}

static void make_layout_opts(int layer_size, const char *extra)
{
	char cmd[1024];
	json_error_t je;

	snprintf(cmd, sizeof(cmd), "python3 %s layout %s --layer-size %d %s", registry_py(), layout,
		 layer_size, extra);
	FILE *f = popen(cmd, "r");
	cr_assert_not_null(f);
	info = json_loadf(f, 0, &je);
	cr_assert_eq(pclose(f), 0);
	cr_assert_not_null(info, "layout summary: %s", je.text);
}

static void make_layout(int layer_size)
{
	make_layout_opts(layer_size, "");
}

static const char *digest_of(const char *key)
{
	const char *d = json_string_value(json_object_get(info, key));
	cr_assert_not_null(d, "%s", key);
	return d;
}

static void exec_registry(const char *ready, const char *log, const char *const *extra)
{
	const char *argv[32] = {"python3", registry_py(), "serve", "--layout", layout,
				"--ready", ready,	  "--log", log};
	int n = 9;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
	for (; extra && *extra && n < 30; extra++)
		argv[n++] = *extra;
	argv[n] = NULL;
	execvp("python3", (char *const *)argv);
	_exit(127);
}

/* Starts registry.py with extra arguments and waits until it listens. */
static void start_registry(struct server *s, const char *const *extra)
{
	char ready[128];
	static int seq;

	snprintf(ready, sizeof(ready), "%s/ready.%d", work, seq);
	snprintf(s->log, sizeof(s->log), "%s/log.%d", work, seq++);
	cr_assert_lt(n_servers, MAX_SERVERS);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		exec_registry(ready, s->log, extra);
	servers[n_servers++] = pid;
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(ready, "r");
		if (f) {
			int n = fscanf(f, "%d %d", &s->port, &s->blob_port);
			fclose(f);
			cr_assert_eq(n, 2);
			snprintf(s->host, sizeof(s->host), "127.0.0.1:%d", s->port);
			return;
		}
		cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "registry.py exited early");
		usleep(10000);
	}
	cr_assert_fail("registry.py not ready after 10 s");
}

/* Requests the registry logged, as a JSON array of {server, method, path, headers}. */
static json_t *server_log(const struct server *s)
{
	json_t *all = json_array();
	char line[65536];
	FILE *f = fopen(s->log, "r");

	while (f && fgets(line, sizeof(line), f))
		json_array_append_new(all, json_loads(line, 0, NULL));
	if (f)
		fclose(f);
	return all;
}

static int count_requests(const struct server *s, const char *server, const char *path_prefix)
{
	json_t *log = server_log(s), *e;
	size_t i;
	int n = 0;

	json_array_foreach(log, i, e)
	{
		const char *srv = json_string_value(json_object_get(e, "server"));
		const char *path = json_string_value(json_object_get(e, "path"));
		if (srv && path && strcmp(srv, server) == 0 &&
		    strncmp(path, path_prefix, strlen(path_prefix)) == 0)
			n++;
	}
	json_decref(log);
	return n;
}

/* ---- pulling ---------------------------------------------------------------------------- */

static struct lb_store *open_store(void)
{
	struct lb_store *s = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_open(root, &s, &err), 0, "%s", err ? err->msg : "");
	return s;
}

static int pull(struct lb_store *st, const struct server *s, const char *suffix,
		struct lb_pull_result *res, struct lb_err **err)
{
	char ref[256];
	const char *insecure[] = {s->host, NULL};
	struct lb_pull_opts opts = {.insecure_registries = insecure, .stall_timeout_s = 20};

	snprintf(ref, sizeof(ref), "%s/library/img%s", s->host, suffix);
	return lb_pull(st, ref, &opts, res, err);
}

static void pull_ok(struct lb_store *st, const struct server *s, const char *suffix,
		    struct lb_pull_result *res)
{
	struct lb_err *err = NULL;
	int r = pull(st, s, suffix, res, &err);
	cr_assert_eq(r, 0, "pull: %s", err ? err->msg : "");
}

/* ---- store snapshots -------------------------------------------------------------------- */

static char *snap;
static size_t snap_len;
static size_t root_len;

static int snap_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s %o %lld\n", path + root_len, st->st_mode,
			 S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size);
	snap = realloc(snap, snap_len + (size_t)n + 1);
	memcpy(snap + snap_len, line, (size_t)n + 1);
	snap_len += (size_t)n;
	return 0;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every path, mode and size under the store, sorted, plus index.json's content. */
static char *store_snapshot(void)
{
	char path[256], *idx = NULL, *out = NULL, *lines[4096];
	size_t n = 0, idx_len = 0, len = 0;
	struct lb_err *err = NULL;

	snap = NULL;
	snap_len = 0;
	root_len = strlen(root);
	cr_assert_eq(nftw(root, snap_entry, 16, FTW_PHYS), 0);
	for (char *save = NULL, *l = strtok_r(snap, "\n", &save); l && n < 4096;
	     l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof(*lines), cmp_lines);
	snprintf(path, sizeof(path), "%s/index.json", root);
	cr_assert_eq(lb_read_file(path, 1 << 20, &idx, &idx_len, &err), 0);
	FILE *f = open_memstream(&out, &len);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	fprintf(f, "%s", idx);
	fclose(f);
	free(idx);
	free(snap);
	return out;
}

static int count_dir(const char *sub)
{
	char path[256];
	int n = 0;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/%s", root, sub);
	DIR *d = opendir(path);
	cr_assert_not_null(d, "%s", path);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ---- end to end ------------------------------------------------------------------------- */

Test(registry, pull_end_to_end)
{
	struct server s;
	struct lb_pull_result res = {0};
	struct lb_store_image img = {0};
	struct lb_err *err = NULL;

	make_layout(4096);
	start_registry(&s, NULL);
	struct lb_store *st = open_store();
	pull_ok(st, &s, ":latest", &res);

	char name[128];
	snprintf(name, sizeof(name), "%s/library/img:latest", s.host);
	cr_assert_str_eq(res.name, name);
	cr_assert_str_eq(res.digest, digest_of("amd64"), "the host platform's manifest");
	cr_assert_eq(res.n_layers, 1);
	cr_assert_eq(lb_store_resolve(st, name, &img, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(img.digest, digest_of("amd64"));
	lb_store_image_clear(&img);
	cr_assert(lb_store_blob_exists(st, digest_of("amd64_layer")));
	cr_assert(lb_store_blob_exists(st, digest_of("amd64_config")));
	cr_assert_not(lb_store_blob_exists(st, digest_of("arm64_layer")));
	cr_assert_not(lb_store_blob_exists(st, digest_of("attestation")), "attestation skipped");
	cr_assert_eq(count_requests(&s, "main",
				    "/v2/library/img/manifests/"
				    "sha256"),
		     1);
	cr_assert_geq(count_requests(&s, "main", "/token"), 1);
	cr_assert_eq(count_dir("tmp"), 0);

	struct lb_store_image *list = NULL;
	size_t n = 0;
	cr_assert_eq(lb_store_list(st, &list, &n, &err), 0);
	cr_assert_eq(n, 1);
	lb_store_images_free(list, n);

	/* Pulled again: nothing but documents cross the network. */
	int blobs = count_requests(&s, "main", "/v2/library/img/blobs/");
	lb_pull_result_clear(&res);
	pull_ok(st, &s, ":latest", &res);
	cr_assert_eq(res.bytes_fetched, 0);
	cr_assert_eq(count_requests(&s, "main", "/v2/library/img/blobs/"), blobs);
	lb_pull_result_clear(&res);
	lb_store_close(st);
}

Test(registry, pull_by_digest_verified)
{
	struct server s;
	struct lb_pull_result res = {0};
	struct lb_store_image img = {0};
	struct lb_err *err = NULL;
	char suffix[128];

	make_layout(4096);
	start_registry(&s, NULL);
	struct lb_store *st = open_store();
	snprintf(suffix, sizeof(suffix), "@%s", digest_of("index"));
	pull_ok(st, &s, suffix, &res);
	cr_assert_str_eq(res.digest, digest_of("amd64"));
	cr_assert_not_null(strstr(res.name, digest_of("index")));
	cr_assert_eq(lb_store_resolve(st, res.name, &img, &err), 0);
	lb_store_image_clear(&img);
	lb_pull_result_clear(&res);

	/* A digest the registry does not hold. */
	snprintf(suffix, sizeof(suffix), "@sha256:%064d", 0);
	char *before = store_snapshot();
	cr_assert_neq(pull(st, &s, suffix, &res, &err), 0);
	cr_assert_not_null(strstr(err->msg, "not found"), "%s", err->msg);
	lb_err_free(&err);
	char *after = store_snapshot();
	cr_assert_str_eq(before, after);
	free(before);
	free(after);
	lb_store_close(st);
}

/* Tokens that expire during the pull: refreshed before use when expires_in says so, and after a
 * 401 when the server revokes them earlier than announced. */
static void token_refresh(const char *announce)
{
	struct server s;
	struct lb_pull_result res = {0};
	const char *args[] = {"--token-ttl", "1", "--announce-ttl", announce, "--delay",
			      "1.2",	     NULL};

	make_layout(4096);
	start_registry(&s, args);
	struct lb_store *st = open_store();
	pull_ok(st, &s, ":latest", &res);
	cr_assert_geq(count_requests(&s, "main", "/token"), 2, "token refreshed");
	lb_pull_result_clear(&res);
	lb_store_close(st);
}

Test(registry, token_expiry_refresh)
{
	token_refresh("1");
}

Test(registry, token_revoked_refresh_on_401)
{
	token_refresh("300");
}

Test(registry, access_token_key_accepted)
{
	struct server s;
	struct lb_pull_result res = {0};
	const char *args[] = {"--token-key", "access_token", "--announce-ttl", "0", NULL};

	make_layout(4096);
	start_registry(&s, args);
	struct lb_store *st = open_store();
	pull_ok(st, &s, ":latest", &res);
	lb_pull_result_clear(&res);
	lb_store_close(st);
}

Test(registry, redirect_drops_authorization)
{
	struct server s;
	struct lb_pull_result res = {0};
	const char *args[] = {"--redirect-blobs", NULL};
	json_t *log, *e;
	size_t i;
	int blob_hits = 0, authed_main = 0;

	make_layout(4096);
	start_registry(&s, args);
	struct lb_store *st = open_store();
	pull_ok(st, &s, ":latest", &res);
	log = server_log(&s);
	json_array_foreach(log, i, e)
	{
		const char *srv = json_string_value(json_object_get(e, "server"));
		json_t *auth = json_object_get(json_object_get(e, "headers"), "authorization");
		if (strcmp(srv, "blob") == 0) {
			blob_hits++;
			cr_assert_null(auth, "Authorization forwarded to %s",
				       json_string_value(json_object_get(e, "path")));
		} else if (auth) {
			authed_main++;
		}
	}
	json_decref(log);
	cr_assert_eq(blob_hits, 2, "config and layer fetched from the second port");
	cr_assert_geq(authed_main, 3);
	cr_assert(lb_store_blob_exists(st, digest_of("amd64_layer")));
	lb_pull_result_clear(&res);
	lb_store_close(st);
}

/* ---- failures leave the store as it was ------------------------------------------------- */

static void pull_fails(const char *const *args, const char *want1, const char *want2)
{
	struct server s;
	struct lb_pull_result res = {0};
	struct lb_err *err = NULL;

	start_registry(&s, args);
	struct lb_store *st = open_store();
	char *before = store_snapshot();
	cr_assert_neq(pull(st, &s, ":latest", &res, &err), 0, "pull succeeded");
	cr_assert_not_null(err);
	cr_log_info("%s", err->msg);
	cr_assert_null(strchr(err->msg, '\n'), "one line: %s", err->msg);
	cr_assert_not_null(strstr(err->msg, want1), "'%s' not in: %s", want1, err->msg);
	if (want2)
		cr_assert_not_null(strstr(err->msg, want2), "'%s' not in: %s", want2, err->msg);
	lb_err_free(&err);
	char *after = store_snapshot();
	cr_assert_str_eq(before, after, "store changed");
	cr_assert_eq(count_dir("tmp"), 0);
	free(before);
	free(after);
	lb_store_close(st);
}

static void layer_fault(const char *fault, const char *want)
{
	make_layout(4096);
	const char *args[] = {"--fault", fault, "--target", digest_of("amd64_layer"), NULL};
	pull_fails(args, want, digest_of("amd64_layer"));
}

Test(registry, digest_mismatch)
{
	layer_fault("digest", "digest mismatch");
}

Test(registry, truncated_blob)
{
	layer_fault("truncate", "truncated");
}

/* The Range headers of the requests for path, in order ("" for none), comma-separated. */
static char *ranges_of(const struct server *s, const char *path)
{
	json_t *log = server_log(s), *e;
	size_t i;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int seen = 0;
	json_array_foreach(log, i, e)
	{
		const char *p = json_string_value(json_object_get(e, "path"));
		if (!p || strcmp(p, path) != 0)
			continue;
		const char *r =
		    json_string_value(json_object_get(json_object_get(e, "headers"), "range"));
		fprintf(f, "%s%s", seen++ ? "," : "", r ? r : "");
	}
	fclose(f);
	json_decref(log);
	return out;
}

/* How the second request for the layer asks for it, and whether a third follows. */
enum recovery { AGAIN_WHOLE, RESUMED, RESUMED_THEN_WHOLE };

/* A layer cut off halfway is pulled again from where it stopped (Range), and verified whole. */
static void blob_recovers(const char *const *extra, enum recovery how)
{
	struct server s;
	struct lb_pull_result res = {0};
	make_layout(64 << 10);
	const char *layer = digest_of("amd64_layer");
	long long half = json_integer_value(json_object_get(info, "amd64_layer_size")) / 2;
	const char *args[16] = {"--fault-count", "1", "--target", layer};
	int n = 4;
	for (; *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	start_registry(&s, args);
	struct lb_store *st = open_store();
	pull_ok(st, &s, ":latest", &res);
	cr_assert(lb_store_blob_exists(st, layer));
	char path[256], want[128];
	snprintf(path, sizeof(path), "/v2/library/img/blobs/%s", layer);
	snprintf(want, sizeof(want), how == AGAIN_WHOLE ? "," : ",bytes=%lld-%s", half,
		 how == RESUMED_THEN_WHOLE ? "," : "");
	char *ranges = ranges_of(&s, path);
	cr_assert_str_eq(ranges, want);
	free(ranges);
	lb_pull_result_clear(&res);
	lb_store_close(st);
}

Test(registry, truncated_blob_is_resumed)
{
	const char *extra[] = {"--fault", "truncate", NULL};
	blob_recovers(extra, RESUMED);
}

/* A registry that ignores Range answers the whole blob: it is read again from the start. */
Test(registry, truncated_blob_restarts_without_range_support)
{
	const char *extra[] = {"--fault", "truncate", "--no-range", NULL};
	blob_recovers(extra, RESUMED_THEN_WHOLE);
}

Test(registry, blob_503_is_retried)
{
	const char *extra[] = {"--fault", "blob-503", NULL};
	blob_recovers(extra, AGAIN_WHOLE);
}

Test(registry, wrong_size)
{
	layer_fault("size", "announced");
}

/* The blob matches its digest but its uncompressed content is not what the config says. */
Test(registry, wrong_diff_id)
{
	const char *args[] = {NULL};
	make_layout_opts(4096, "--bad-diff-id");
	pull_fails(args, "does not match the image config", digest_of("amd64_layer"));
}

Test(registry, unknown_media_type)
{
	const char *args[] = {"--fault", "unknown-media", NULL};
	make_layout(4096);
	pull_fails(args, "unsupported manifest media type", NULL);
}

Test(registry, manifest_over_4mib)
{
	const char *args[] = {"--fault", "big-manifest", NULL};
	make_layout(4096);
	pull_fails(args, "over the limit", "manifest latest");
}

Test(registry, http_401)
{
	const char *args[] = {"--fault", "status-401", NULL};
	make_layout(4096);
	pull_fails(args, "authentication required (HTTP 401)", NULL);
}

Test(registry, http_403)
{
	const char *args[] = {"--fault", "status-403", NULL};
	make_layout(4096);
	pull_fails(args, "access denied (HTTP 403)", NULL);
}

Test(registry, http_404)
{
	const char *args[] = {"--fault", "status-404", NULL};
	make_layout(4096);
	pull_fails(args, "not found (HTTP 404)", "MANIFEST_UNKNOWN");
}

Test(registry, http_429_rate_limited)
{
	const char *args[] = {"--fault", "status-429", "--retry-after", "42", NULL};
	make_layout(4096);
	pull_fails(args, "rate limited", "retry after 42 s");
}

Test(registry, token_endpoint_429)
{
	const char *args[] = {"--fault", "token-429", NULL};
	make_layout(4096);
	pull_fails(args, "rate limited", "retry after 7 s");
}

Test(registry, connection_refused)
{
	struct lb_pull_result res = {0};
	struct lb_err *err = NULL;
	const char *insecure[] = {"127.0.0.1:1", NULL};
	struct lb_pull_opts opts = {.insecure_registries = insecure};

	struct lb_store *st = open_store();
	cr_assert_neq(lb_pull(st, "127.0.0.1:1/x/y:z", &opts, &res, &err), 0);
	cr_assert_not_null(strstr(err->msg, "cannot connect"), "%s", err->msg);
	cr_assert_eq(err->errnum, ECONNREFUSED);
	lb_err_free(&err);
	lb_store_close(st);
}

Test(registry, https_by_default)
{
	struct server s;
	struct lb_pull_result res = {0};
	struct lb_err *err = NULL;
	char ref[128];

	make_layout(4096);
	start_registry(&s, NULL);
	struct lb_store *st = open_store();
	snprintf(ref, sizeof(ref), "%s/library/img:latest", s.host);
	/* Not listed as insecure: TLS is attempted against a plain-HTTP server and fails. */
	cr_assert_neq(lb_pull(st, ref, NULL, &res, &err), 0);
	cr_assert_not_null(strstr(err->msg, "TLS"), "%s", err->msg);
	lb_err_free(&err);
	lb_store_close(st);
}

/* ---- concurrency and interruption ------------------------------------------------------- */

Test(registry, concurrent_pulls)
{
	struct server s;
	pid_t kids[2];
	struct lb_store_image *list = NULL;
	size_t n = 0;
	struct lb_err *err = NULL;
	const char *args[] = {"--delay", "0.2", NULL};

	make_layout(65536);
	start_registry(&s, args);
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		cr_assert_geq(kids[i], 0);
		if (kids[i] == 0) {
			struct lb_store *st = NULL;
			struct lb_pull_result res = {0};
			struct lb_err *e = NULL;
			int r = lb_store_open(root, &st, &e) < 0 ||
				pull(st, &s, ":latest", &res, &e) < 0;
			if (r)
				fprintf(stderr, "child pull: %s\n", e ? e->msg : "");
			_exit(r);
		}
	}
	for (int i = 0; i < 2; i++) {
		int status = 0;
		cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d failed", i);
	}
	struct lb_store *st = open_store();
	cr_assert_eq(lb_store_list(st, &list, &n, &err), 0);
	cr_assert_eq(n, 1, "one index entry, not two");
	lb_store_images_free(list, n);
	cr_assert_eq(count_dir("blobs/sha256"), 3, "manifest, config, layer");
	cr_assert_eq(count_dir("tmp"), 0);
	lb_store_close(st);
}

static bool layer_requested(const struct server *s)
{
	char prefix[128];
	snprintf(prefix, sizeof(prefix), "/v2/library/img/blobs/%s", digest_of("amd64_layer"));
	return count_requests(s, "main", prefix) > 0;
}

Test(registry, sigkill_mid_layer_then_repeat)
{
	struct server s;
	struct lb_pull_result res = {0};
	struct lb_store_image *list = NULL;
	size_t n = 0;
	struct lb_err *err = NULL;

	make_layout(256 << 10);
	const char *args[] = {"--fault",       "slow", "--target", digest_of("amd64_layer"),
			      "--fault-count", "1",    NULL};
	start_registry(&s, args);
	lb_store_close(open_store());
	pid_t kid = fork();
	cr_assert_geq(kid, 0);
	if (kid == 0) {
		struct lb_store *st = NULL;
		struct lb_err *e = NULL;
		_exit(lb_store_open(root, &st, &e) < 0 || pull(st, &s, ":latest", &res, &e) < 0);
	}
	for (int i = 0; i < 500 && !layer_requested(&s); i++)
		usleep(10000);
	cr_assert(layer_requested(&s), "the layer download never started");
	usleep(500000); /* well inside the ~3 s the slow layer takes */
	kill(kid, SIGKILL);
	int status = 0;
	cr_assert_eq(waitpid(kid, &status, 0), kid);
	cr_assert(WIFSIGNALED(status), "the pull finished before it was killed");

	struct lb_store *st = open_store(); /* a new open clears the dead pull's staging */
	cr_assert_eq(lb_store_list(st, &list, &n, &err), 0);
	cr_assert_eq(n, 0, "nothing half-visible");
	lb_store_images_free(list, n);
	cr_assert_eq(count_dir("blobs/sha256"), 0);
	cr_assert_eq(count_dir("tmp"), 0);
	pull_ok(st, &s, ":latest", &res);
	cr_assert_str_eq(res.digest, digest_of("amd64"));
	cr_assert_eq(count_dir("tmp"), 0);
	lb_pull_result_clear(&res);
	lb_store_close(st);
}

/* ---- parsing helpers -------------------------------------------------------------------- */

Test(registry, challenge_parse)
{
	struct reg_challenge ch = {0};
	struct lb_err *err = NULL;

	cr_assert_eq(reg_challenge_parse("Bearer realm=\"https://auth.docker.io/token\","
					 "service=\"registry.docker.io\", "
					 "scope=\"repository:library/alpine:pull\",error=x",
					 &ch, &err),
		     0);
	cr_assert_str_eq(ch.scheme, "Bearer");
	cr_assert_str_eq(ch.realm, "https://auth.docker.io/token");
	cr_assert_str_eq(ch.service, "registry.docker.io");
	cr_assert_str_eq(ch.scope, "repository:library/alpine:pull");
	cr_assert_str_eq(ch.error, "x");
	reg_challenge_clear(&ch);
}

/* Basic credentials from a Docker-style auth file reach the token service in a real pull. */
Test(registry, basic_credentials_from_auth_file)
{
	const char *args[] = {"--basic", "lbt-user:lbt-secret", NULL};
	struct server s;
	struct lb_pull_result res = {0};
	struct lb_err *err = NULL;
	char ref[256], auth[160];
	make_layout(4096);
	start_registry(&s, args);
	snprintf(ref, sizeof(ref), "%s/library/img:latest", s.host);
	const char *insecure[] = {s.host, NULL};
	struct lb_pull_opts opts = {.insecure_registries = insecure, .stall_timeout_s = 20};
	struct lb_store *st = open_store();

	cr_assert_neq(lb_pull(st, ref, &opts, &res, &err), 0, "pulled without credentials");
	cr_assert(strstr(err->msg, "401"), "%s", err->msg);
	lb_err_free(&err);
	snprintf(auth, sizeof(auth), "%s/auth.json", work);
	FILE *f = fopen(auth, "w");
	cr_assert_not_null(f);
	/* base64("lbt-user:lbt-secret") */
	fprintf(f, "{\"auths\":{\"%s\":{\"auth\":\"bGJ0LXVzZXI6bGJ0LXNlY3JldA==\"}}}", s.host);
	fclose(f);
	opts.auth_file = auth;
	cr_assert_eq(lb_pull(st, ref, &opts, &res, &err), 0, "pull: %s", err ? err->msg : "");
	lb_pull_result_clear(&res);
	lb_store_close(st);
}

Test(registry, auth_file_lookup)
{
	char path[160];
	char *cred = NULL;
	struct lb_err *err = NULL;
	const char *doc = "{\"auths\": {\"https://index.docker.io/v1/\": {\"auth\": \"dTpw\"},"
			  " \"127.0.0.1:5000\": {\"username\": \"u\", \"password\": \"p\"}}}";

	snprintf(path, sizeof(path), "%s/config.json", work);
	cr_assert_eq(lb_write_file_atomic(path, doc, strlen(doc), 0600, &err), 0);
	cr_assert_eq(reg_auth_file_lookup(path, "docker.io", &cred, &err), 0);
	cr_assert_str_eq(cred, "dTpw");
	free(cred);
	cr_assert_eq(reg_auth_file_lookup(path, "127.0.0.1:5000", &cred, &err), 0);
	cr_assert_str_eq(cred, "dTpw", "base64 of u:p");
	free(cred);
	cr_assert_eq(reg_auth_file_lookup(path, "ghcr.io", &cred, &err), 0);
	cr_assert_null(cred);
	snprintf(path, sizeof(path), "%s/missing.json", work);
	cr_assert_eq(reg_auth_file_lookup(path, "ghcr.io", &cred, &err), 0, "missing: anonymous");
	cr_assert_null(cred);
}

Test(registry, retry_after_forms)
{
	cr_assert_eq(reg_retry_after_seconds("120"), 120);
	cr_assert_eq(reg_retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), 0, "in the past");
	cr_assert_eq(reg_retry_after_seconds("soon"), -1);
	cr_assert_eq(reg_retry_after_seconds(NULL), -1);
}
