// Integration-test harness: runs the built `lbbox` binary with a private --root and
// --runroot, captures its output under a watchdog, and checks after every test that
// nothing was left behind on the host (state dirs, cgroups, mounts, processes).
//
// Environment overrides (so the same binaries run inside a qemu guest):
//   LBBOX_BIN           the lbbox binary          (default: compile-time LBBOX_BIN)
//   LBBOX_PROBE         the static probe          (default: compile-time LBBOX_PROBE)
//   LBBOX_TEST_ROOTFS   a busybox rootfs dir      (default: <dir of
//   LBBOX_BIN>/images/busybox/rootfs)
#ifndef LBBOX_TEST_HARNESS_H
#define LBBOX_TEST_HARNESS_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

// Exit status as a shell reports it: the exit code, or 128+signal. -1 when the
// watchdog had to kill lbbox (the test then fails on its own assertion).
struct lb_run_out {
	int status;
	char *out;
	char *err;
	double secs; // wall time of the lbbox process
};

struct lbt_proc {
	pid_t pid;
	int outfd, errfd;
	double start;
};

#define LBT_WATCHDOG_SEC 60.0

// In an argument list, LBT_PROBE expands to `-v <probe dir>:/probe:ro -- /probe/<probe>`,
// so `lbt_run(&o, "run", "--pids", "32", LBT_PROBE, "forkbomb", "100", NULL)` runs the probe.
extern const char LBT_PROBE[];

void lbt_setup(void);
void lbt_teardown(void);

// Every suite uses the harness's setup/teardown and a Criterion timeout as a last resort.
#define LBT_SUITE(suite) TestSuite(suite, .init = lbt_setup, .fini = lbt_teardown, .timeout = 240)

// A test whose body is followed by the host-cleanliness assertion. (Criterion ignores
// assertion failures in .fini, so the check must run inside the test body.)
#define LBT_TEST(suite, name, ...)                                                                 \
	static void lbt_body_##suite##_##name(void);                                               \
	Test(suite, name, ##__VA_ARGS__)                                                           \
	{                                                                                          \
		lbt_body_##suite##_##name();                                                       \
		lbt_assert_clean();                                                                \
	}                                                                                          \
	static void lbt_body_##suite##_##name(void)

const char *lbt_bin(void);
// Runs every later lbbox through wrapper (argv: wrapper, lbbox, its arguments); NULL = none.
// The rootless tests run lbbox as another user, in a test network namespace, this way.
void lbt_set_wrapper(const char *wrapper);
// Hands the test's --root, --runroot and work directories to uid (rootless tests).
void lbt_chown_dirs(uid_t uid, gid_t gid);
// Delegates the test's private cgroups to uid, as systemd delegates a user's slice.
void lbt_delegate_cgroups(uid_t uid, gid_t gid);
const char *lbt_probe_host(void); // the probe's path on the host
const char *lbt_probe(void);	  // the probe's path inside a sandbox (/probe/<name>)
const char *lbt_probe_vol(void);  // "<probe dir>:/probe:ro"
const char *lbt_rootfs(void);	  // busybox rootfs; fails the test when missing
const char *lbt_root(void);
const char *lbt_runroot(void);
const char *lbt_workdir(void); // scratch dir for test data, removed at teardown

// Run `lbbox --root R --runroot RR ARG0 ...` (NULL-terminated) to completion.
int lbt_run(struct lb_run_out *o, const char *arg0, ...) __attribute__((sentinel));
int lbt_runv(struct lb_run_out *o, const char *const *args);
// Start lbbox without waiting; lbt_wait collects it (killing it after timeout seconds).
int lbt_spawn(struct lbt_proc *p, const char *arg0, ...) __attribute__((sentinel));
int lbt_spawnv(struct lbt_proc *p, const char *const *args);
// lbt_spawnv with lbbox's stdin read from in_fd and its stdout written to out_fd (-1: /dev/null,
// and the buffer lbt_wait collects). The caller's ends of its pipes must be O_CLOEXEC.
int lbt_spawnv_io(struct lbt_proc *p, int in_fd, int out_fd, const char *const *args);
int lbt_wait(struct lbt_proc *p, struct lb_run_out *o, double timeout);
void lbt_out_free(struct lb_run_out *o);

// Register a string that no host process may carry in its cmdline once lbbox returned.
void lbt_add_marker(const char *marker);
// SIGKILLs the `sleep <marker>` processes of a registered marker; returns how many.
int lbt_kill_marked(const char *marker);
// Host processes whose argv has an element equal to arg (e.g. "987651" for `sleep 987651`).
int lbt_count_procs_with_arg(const char *arg);
// Host processes whose cmdline (NULs as spaces) contains needle.
int lbt_count_procs_containing(const char *needle);
// Poll until lbt_count_procs_with_arg(arg) == want or timeout; returns the last count.
int lbt_wait_procs_with_arg(const char *arg, int want, double timeout);

// The private per-test cgroup that lbbox is started in, in the hierarchy holding controller
// ("memory", "pids", "cpu"; "" for the v2 hierarchy). NULL when there is none.
const char *lbt_cgroup_dir(const char *controller, bool *is_v2);

void lbt_assert_clean(void);

// harness_registry.c: tests/registry/registry.py serving the OCI layout on 127.0.0.1; its pid
// (SIGKILL it when done; it also dies with the test) and *port.
pid_t lbt_registry_start(const char *layout, int *port);

// harness_image.c: an OCI layout (in the workdir) of the busybox test rootfs as image NAME
// running CMD (shell words, NULL: none) as USER (NULL: the default); and `lbbox load` of one.
char *lbt_oci_layout(const char *user, const char *name, const char *cmd);
void lbt_load_layout(const char *layout);

// Small helpers.
char *lbt_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *lbt_read_file(const char *path);
void lbt_write_file(const char *path, const char *content);
char *lbt_mkdir_work(const char *name); // mkdir <workdir>/name, returns the path
int lbt_count_lines(const char *s);
const char *lbt_last_line(const char *s, char *buf, size_t len);
char *lbt_chomp(char *s);
double lbt_now(void);
int lbt_system(const char *const *argv); // fork+exec, returns exit status

// JSON printed by lbbox (fails the test when it is not JSON); a string member that must exist.
json_t *lbt_json(const char *text);
// lbbox ARGS..., which must succeed and print JSON.
json_t *lbt_runv_json(const char *const *args);
const char *lbt_json_str(json_t *j, const char *key);
// lbbox session rm NAME, which must succeed.
void lbt_session_rm(const char *name);

// Assertions with the full lbbox output in the message.
#define LBT_ASSERT_EXIT(o, code)                                                                   \
	cr_assert_eq((o).status, (code),                                                           \
		     "exit status %d, expected %d\n--- stdout:\n%s--- stderr:\n%s", (o).status,    \
		     (code), (o).out, (o).err)

#define LBT_ASSERT_OUT(o, text)                                                                    \
	cr_assert_str_eq((o).out, (text), "stdout %s, expected %s (exit %d)\n--- stderr:\n%s",     \
			 (o).out, (text), (o).status, (o).err)

// Exit status `status`, nothing on stdout, exactly one stderr line starting "lbbox: "
// (containing `what`, if given).
void lbt_assert_error_line(const struct lb_run_out *o, int status, const char *what);

#endif
