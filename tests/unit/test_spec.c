/* Unit tests for the argument parsers and the spec checks that run before anything is built. */
#include <criterion/criterion.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/sandbox/spec.h"
#include "lbbox/base/util.h"

// No store or runtime directory: these tests are about the other rules.
static const struct lb_paths test_paths = {"/nonexistent-lbbox-test-root",
					   "/nonexistent-lbbox-test-run"};

static void mount_free(struct lb_mount *m)
{
	free(m->source);
	free(m->target);
}

Test(parse_size, units)
{
	struct {
		const char *in;
		uint64_t want;
	} ok[] = {
	    {"0", 0},		{"4096", 4096},	     {"64m", 64ULL << 20}, {"64M", 64ULL << 20},
	    {"1g", 1ULL << 30}, {"512k", 512 << 10}, {"2MiB", 2ULL << 20}, {"3mb", 3ULL << 20},
	    {"7b", 7}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct lb_err *err = NULL;
		uint64_t v = 1;
		cr_assert_eq(lb_parse_size(ok[i].in, &v, &err), 0, "%s", ok[i].in);
		cr_assert_eq(v, ok[i].want, "%s -> %llu", ok[i].in, (unsigned long long)v);
	}
}

Test(parse_size, rejects)
{
	const char *bad[] = {
	    "", "m", "-1", "12q", "1.5g", "64mx", "99999999999999999999", "18446744073709551615g"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lb_err *err = NULL;
		uint64_t v = 42;
		cr_assert_lt(lb_parse_size(bad[i], &v, &err), 0, "'%s' accepted", bad[i]);
		cr_assert_not_null(err);
		cr_assert_eq(v, 42, "output touched on failure");
		lb_err_free(&err);
	}
}

Test(parse_mount, forms)
{
	struct lb_mount m = {0};
	struct lb_err *err = NULL;
	cr_assert_eq(cli_parse_volume("/srv/data:/workspace:ro", &m, &err), 0);
	cr_assert_str_eq(m.source, "/srv/data");
	cr_assert_str_eq(m.target, "/workspace");
	cr_assert(m.readonly);
	mount_free(&m);
	cr_assert_eq(cli_parse_volume("/a:/b", &m, &err), 0);
	cr_assert_not(m.readonly);
	mount_free(&m);
	cr_assert_eq(cli_parse_volume("/a:/b:rw", &m, &err), 0);
	cr_assert_not(m.readonly);
	mount_free(&m);
	cr_assert_eq(cli_parse_volume("/a:/b:z,ro,Z", &m, &err), 0);
	cr_assert(m.readonly);
	mount_free(&m);
	/* relative host paths from the current directory, as podman */
	char *cwd = getcwd(NULL, 0), *want = NULL;
	cr_assert_eq(cli_parse_volume("./x:/d", &m, &err), 0);
	cr_assert_geq(asprintf(&want, "%s/./x", cwd), 0);
	cr_assert_str_eq(m.source, want);
	mount_free(&m);
	free(want);
	cr_assert_eq(cli_parse_volume("sub/dir:/d", &m, &err), 0);
	cr_assert_geq(asprintf(&want, "%s/sub/dir", cwd), 0);
	cr_assert_str_eq(m.source, want);
	mount_free(&m);
	free(want);
	free(cwd);
}

Test(parse_mount, rejects)
{
	const char *bad[] = {"/a",	 ":/b",	       "rel:/b", "/a:rel",
			     "/a:/b:rx", "/a:/b:ro:x", "",	 "/a:/b:ro,exec"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lb_mount m = {0};
		struct lb_err *err = NULL;
		cr_assert_lt(cli_parse_volume(bad[i], &m, &err), 0, "'%s' accepted", bad[i]);
		cr_assert(strstr(err->msg, "invalid volume"), "%s", err->msg);
		lb_err_free(&err);
		mount_free(&m);
	}
}

Test(parse_rlimit, forms)
{
	struct lb_rlimit r;
	struct lb_err *err = NULL;
	cr_assert_eq(cli_parse_rlimit("nofile=256", &r, &err), 0);
	cr_assert_eq(r.resource, RLIMIT_NOFILE);
	cr_assert_eq(r.soft, 256);
	cr_assert_eq(r.hard, 256);
	cr_assert_eq(cli_parse_rlimit("nproc=10:20", &r, &err), 0);
	cr_assert_eq(r.resource, RLIMIT_NPROC);
	cr_assert_eq(r.soft, 10);
	cr_assert_eq(r.hard, 20);
	cr_assert_eq(cli_parse_rlimit("core=unlimited", &r, &err), 0);
	cr_assert_eq(r.soft, RLIM_INFINITY);
	const char *bad[] = {"nofile", "bogus=1", "nofile=x", "nofile=20:10", "=5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_lt(cli_parse_rlimit(bad[i], &r, &err), 0, "'%s' accepted", bad[i]);
		lb_err_free(&err);
	}
}

Test(parse_cpus, quota)
{
	uint64_t q, p;
	struct lb_err *err = NULL;
	cr_assert_eq(cli_parse_cpus("0.5", &q, &p, &err), 0);
	cr_assert_eq(q, 50000);
	cr_assert_eq(p, 100000);
	cr_assert_eq(cli_parse_cpus("2", &q, &p, &err), 0);
	cr_assert_eq(q, 200000);
	const char *bad[] = {"0", "-1", "abc", "", "0.001", "1x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_lt(cli_parse_cpus(bad[i], &q, &p, &err), 0, "'%s' accepted", bad[i]);
		lb_err_free(&err);
	}
}

Test(parse_cap, names)
{
	uint64_t m;
	struct lb_err *err = NULL;
	cr_assert_eq(cli_parse_cap("NET_RAW", &m, &err), 0);
	cr_assert_eq(m, 1ULL << CAP_NET_RAW);
	cr_assert_eq(cli_parse_cap("cap_sys_admin", &m, &err), 0);
	cr_assert_eq(m, 1ULL << CAP_SYS_ADMIN);
	cr_assert_eq(cli_parse_cap("ALL", &m, &err), 0);
	cr_assert(m & (1ULL << CAP_SYS_ADMIN));
	cr_assert_lt(cli_parse_cap("NOT_A_CAP", &m, &err), 0);
	cr_assert(strstr(err->msg, "NOT_A_CAP"));
	lb_err_free(&err);
}

Test(default_caps, podman_minus_three)
{
	uint64_t want = (1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_FOWNER) |
			(1ULL << CAP_FSETID) | (1ULL << CAP_KILL) | (1ULL << CAP_SETGID) |
			(1ULL << CAP_SETUID) | (1ULL << CAP_NET_BIND_SERVICE);
	cr_assert_eq(lb_default_caps(), want);
	cr_assert_eq(want, 0x4fb);
}

Test(host_path, blocked_list)
{
	const char *blocked[] = {"/etc",
				 "/etc/passwd",
				 "/proc/1",
				 "/sys",
				 "/dev/sda",
				 "/root",
				 "/boot/x",
				 "/run",
				 "/run/user/0",
				 "/var/run",
				 "/var/run/docker.sock",
				 "/",
				 "/srv/docker.sock",
				 "/home/u/podman.sock"};
	const char *allowed[] = {
	    "/home", "/usr", "/tmp", "/etcetera", "/srv/data", "/runx", "/srv/docker.sock.d/x"};
	for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++) {
		struct lb_err *err = NULL;
		cr_assert_lt(lb_check_host_path(blocked[i], blocked[i], &err), 0, "%s", blocked[i]);
		cr_assert(strstr(err->msg, "is blocked for security"), "%s", err->msg);
		lb_err_free(&err);
	}
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		cr_assert_eq(lb_check_host_path(allowed[i], allowed[i], NULL), 0, "%s", allowed[i]);
}

Test(spec_check, symlink_into_blocked_path_is_refused)
{
	char dir[] = "/tmp/lbbox-spec-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char link[64];
	snprintf(link, sizeof(link), "%s/l", dir);
	cr_assert_eq(symlink("/etc", link), 0);

	struct lb_spec spec;
	lb_spec_init(&spec);
	char *argv[] = {strdup("true"), NULL};
	spec.argv = calloc(2, sizeof(char *));
	spec.argv[0] = argv[0];
	spec.mounts[0].source = strdup(link);
	spec.mounts[0].target = strdup("/x");
	spec.n_mounts = 1;
	struct lb_err *err = NULL;
	cr_assert_lt(lb_spec_check(&spec, &test_paths, &err), 0);
	cr_assert(strstr(err->msg, "is blocked for security"), "%s", err->msg);
	cr_assert(strstr(err->msg, link), "message names the path given: %s", err->msg);
	lb_err_free(&err);
	lb_spec_free(&spec);
	unlink(link);
	rmdir(dir);
}

Test(spec_check, limits_and_paths)
{
	struct lb_spec spec;
	struct lb_err *err = NULL;
	lb_spec_init(&spec);
	spec.argv = calloc(2, sizeof(char *));
	spec.argv[0] = strdup("true");
	spec.limits.memory_bytes = 16ULL << 20;
	cr_assert_lt(lb_spec_check(&spec, &test_paths, &err), 0);
	cr_assert(strstr(err->msg, "32 MiB"), "%s", err->msg);
	lb_err_free(&err);
	spec.limits.memory_bytes = 64ULL << 20;
	spec.rootfs = strdup("/nonexistent-lbbox-rootfs");
	cr_assert_lt(lb_spec_check(&spec, &test_paths, &err), 0);
	cr_assert(strstr(err->msg, "/nonexistent-lbbox-rootfs"), "%s", err->msg);
	lb_err_free(&err);
	free(spec.rootfs);
	spec.rootfs = NULL;
	spec.cwd = strdup("relative");
	cr_assert_lt(lb_spec_check(&spec, &test_paths, &err), 0);
	lb_err_free(&err);
	free(spec.cwd);
	spec.cwd = strdup("/workspace");
	cr_assert_eq(lb_spec_check(&spec, &test_paths, &err), 0);
	lb_spec_free(&spec);
}
