/*
 * Seccomp: profile parsing, the BPF cache, and the behaviour of the default profile once
 * installed (checked in forked children, which report through a pipe and their exit code).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/audit.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/seccomp.h"
#include "lbbox/base/util.h"
#include "sandbox/seccomp_internal.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#define CLONE_NS_FLAGS                                                                             \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
	 CLONE_NEWPID | CLONE_NEWNET)

/* ---- helpers ---------------------------------------------------------------------------- */

static char *tmpdir_new(void)
{
	char *d = strdup("/tmp/lbbox-test-seccomp-XXXXXX");
	cr_assert(d && mkdtemp(d), "mkdtemp");
	return d;
}

static void tmpdir_free(char *d)
{
	struct lb_err *err = NULL;
	lb_rm_rf(d, &err);
	lb_err_free(&err);
	free(d);
}

static char *write_tmp(const char *dir, const char *name, const char *content)
{
	char *path = NULL;
	struct lb_err *err = NULL;
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	cr_assert_eq(lb_write_file_atomic(path, content, strlen(content), 0644, &err), 0, "%s",
		     err ? err->msg : "");
	return path;
}

static struct lb_seccomp_prog *prepare_ok(const char *path, uint64_t caps, const char *cache)
{
	struct lb_seccomp_prog *prog = NULL;
	struct lb_err *err = NULL;
	int r = lb_seccomp_prepare(path, caps, cache, &prog, &err);
	cr_assert_eq(r, 0, "prepare %s: %s", path ? path : "(default)", err ? err->msg : "");
	cr_assert(prog && prog->filter && prog->len > 0);
	return prog;
}

/* Returns the error message of a failing prepare of a profile given as text. */
static char *prepare_fail(const char *json)
{
	char *dir = tmpdir_new(), *path = write_tmp(dir, "p.json", json), *msg;
	struct lb_seccomp_prog *prog = NULL;
	struct lb_err *err = NULL;
	cr_assert_lt(lb_seccomp_prepare(path, 0, NULL, &prog, &err), 0, "profile accepted: %s",
		     json);
	cr_assert(err && err->msg);
	cr_assert(strstr(err->msg, path), "message does not name the file: %s", err->msg);
	msg = strdup(err->msg);
	lb_err_free(&err);
	free(path);
	tmpdir_free(dir);
	return msg;
}

static struct lb_scmp_profile *parse_ok(const char *json, uint64_t caps)
{
	struct lb_scmp_profile *p = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_scmp_profile_parse("t.json", json, strlen(json), caps, &p, &err), 0, "%s",
		     err ? err->msg : "");
	return p;
}

static bool has_rule(const struct lb_scmp_profile *p, const char *name, uint32_t action)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (strcmp(p->rules[i].name, name) == 0 && p->rules[i].action == action)
			return true;
	return false;
}

/* ---- children --------------------------------------------------------------------------- */

static int report_fd = -1;

static int fail(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		(void)!write(report_fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	return 1;
}

#define EXPECT_ERRNO(call, want)                                                                   \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _r = (long)(call);                                                            \
		if (_r != -1 || errno != (want))                                                   \
			return fail("%s = %ld, errno %d (%s); want errno %d", #call, _r, errno,    \
				    strerror(errno), (want));                                      \
	} while (0)

#define EXPECT_OK(call)                                                                            \
	do {                                                                                       \
		errno = 0;                                                                         \
		long _r = (long)(call);                                                            \
		if (_r < 0)                                                                        \
			return fail("%s = %ld, errno %d (%s)", #call, _r, errno, strerror(errno)); \
	} while (0)

/* Forks; the child sets no_new_privs, installs prog (unless NULL) and runs fn. */
static void run_child(const struct lb_seccomp_prog *prog, int (*fn)(void))
{
	int fds[2];
	char msg[512] = "";
	int status;

	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct lb_err *err = NULL;
		close(fds[0]);
		report_fd = fds[1];
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(fail("PR_SET_NO_NEW_PRIVS: %s", strerror(errno)));
		if (prog && lb_seccomp_install(prog, &err) < 0)
			_exit(fail("%s", err->msg));
		_exit(fn());
	}
	close(fds[1]);
	ssize_t n = lb_read_all(fds[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child killed by signal %d", WTERMSIG(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "%s", msg);
}

/* Clone through the raw syscall; a child that should not exist leaves at once. */
static long raw_clone(unsigned long flags)
{
	long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

/*
 * Calls the default profile must refuse with EPERM. The arguments are chosen so that the
 * call fails harmlessly with another errno if the filter let it through (see the control
 * test), and never changes the host.
 */
static long p_keyctl(void)
{
	return syscall(SYS_keyctl, 9999, 0, 0, 0, 0);
}
static long p_add_key(void)
{
	return syscall(SYS_add_key, NULL, NULL, NULL, 0, 0);
}
static long p_request_key(void)
{
	return syscall(SYS_request_key, NULL, NULL, NULL, 0);
}
static long p_bpf(void)
{
	return syscall(SYS_bpf, 9999, NULL, 0);
}
static long p_perf(void)
{
	return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
}
static long p_userfaultfd(void)
{
	return syscall(SYS_userfaultfd, ~0);
}
static long p_ptrace(void)
{
	return syscall(SYS_ptrace, 9999, 0, NULL, NULL);
}
static long p_mount(void)
{
	return syscall(SYS_mount, NULL, NULL, NULL, 0, NULL);
}
static long p_umount2(void)
{
	return syscall(SYS_umount2, NULL, 0);
}
static long p_pivot_root(void)
{
	return syscall(SYS_pivot_root, NULL, NULL);
}
static long p_unshare(void)
{
	return syscall(SYS_unshare, 0);
}
static long p_setns(void)
{
	return syscall(SYS_setns, -1, 0);
}
static long p_io_uring_setup(void)
{
	return syscall(SYS_io_uring_setup, 0, NULL);
}
static long p_io_uring_enter(void)
{
	return syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
}
static long p_open_by_handle_at(void)
{
	return syscall(SYS_open_by_handle_at, -1, NULL, 0);
}
static long p_fsopen(void)
{
	return syscall(SYS_fsopen, NULL, 0);
}
static long p_open_tree(void)
{
	return syscall(SYS_open_tree, -1, NULL, 0);
}
static long p_finit_module(void)
{
	return syscall(SYS_finit_module, -1, NULL, 0);
}
static long p_delete_module(void)
{
	return syscall(SYS_delete_module, NULL, 0);
}
static long p_swapon(void)
{
	return syscall(SYS_swapon, NULL, 0);
}
static long p_reboot(void)
{
	return syscall(SYS_reboot, 0, 0, 0, NULL); /* bad magic */
}
static long p_ioctl_tiocsti(void)
{
	return syscall(SYS_ioctl, -1, TIOCSTI, "x");
}
static long p_ioctl_tiocsti_hi(void)
{
	return syscall(SYS_ioctl, -1, (1UL << 32) | TIOCSTI, "x");
}
static long p_clone_newuser(void)
{
	return raw_clone(CLONE_NEWUSER);
}

static const struct probe {
	const char *name;
	long (*call)(void);
} eperm_probes[] = {
    {"keyctl", p_keyctl},
    {"add_key", p_add_key},
    {"request_key", p_request_key},
    {"bpf", p_bpf},
    {"perf_event_open", p_perf},
    {"userfaultfd", p_userfaultfd},
    {"ptrace", p_ptrace},
    {"mount", p_mount},
    {"umount2", p_umount2},
    {"pivot_root", p_pivot_root},
    {"unshare", p_unshare},
    {"setns", p_setns},
    {"io_uring_setup", p_io_uring_setup},
    {"io_uring_enter", p_io_uring_enter},
    {"open_by_handle_at", p_open_by_handle_at},
    {"fsopen", p_fsopen},
    {"open_tree", p_open_tree},
    {"finit_module", p_finit_module},
    {"delete_module", p_delete_module},
    {"swapon", p_swapon},
    {"reboot", p_reboot},
    {"ioctl(TIOCSTI)", p_ioctl_tiocsti},
    {"ioctl(TIOCSTI | 1 << 32)", p_ioctl_tiocsti_hi},
    {"clone(CLONE_NEWUSER)", p_clone_newuser},
};

static int check_eperm_probes(void)
{
	for (size_t i = 0; i < sizeof(eperm_probes) / sizeof(eperm_probes[0]); i++) {
		errno = 0;
		long r = eperm_probes[i].call();
		if (r != -1 || errno != EPERM)
			return fail("%s = %ld, errno %d (%s); want EPERM", eperm_probes[i].name, r,
				    errno, strerror(errno));
	}
	return 0;
}

/* Without a filter none of the probes may fail with EPERM, or the test proves nothing. */
static int check_probes_discriminate(void)
{
	for (size_t i = 0; i < sizeof(eperm_probes) / sizeof(eperm_probes[0]); i++) {
		if (eperm_probes[i].call == p_clone_newuser)
			continue; /* would really create a user namespace */
		errno = 0;
		long r = eperm_probes[i].call();
		if (r == -1 && errno == EPERM)
			return fail("%s fails with EPERM even without a filter",
				    eperm_probes[i].name);
	}
	return 0;
}

static int check_clone(void)
{
	static const unsigned long ns[] = {CLONE_NEWNS,	 CLONE_NEWCGROUP, CLONE_NEWUTS,
					   CLONE_NEWIPC, CLONE_NEWUSER,	  CLONE_NEWPID,
					   CLONE_NEWNET};
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		errno = 0;
		long r = raw_clone(ns[i]);
		if (r != -1 || errno != EPERM)
			return fail("clone(%#lx) = %ld, errno %d; want EPERM", ns[i], r, errno);
	}
	/* The kernel only looks at the lower 32 bits: so must the filter. */
	EXPECT_ERRNO(raw_clone((1UL << 32) | CLONE_NEWUSER), EPERM);
	EXPECT_ERRNO(raw_clone(CLONE_NS_FLAGS), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone3, NULL, 0), ENOSYS);
	return 0;
}

static int check_fork_and_exec(void)
{
	int status;

	pid_t pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		return fail("forked child did not exit 7 (status %#x)", status);
	pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(99);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail("/bin/true did not exit 0 (status %#x)", status);
	EXPECT_ERRNO(execl("/nonexistent/lbbox", "x", (char *)NULL), ENOENT);
	return 0;
}

static void *thread_fn(void *arg)
{
	return arg;
}

static int check_basics(void)
{
	void *ret = NULL;
	pthread_t t;

	EXPECT_OK(write(report_fd, "", 0));
	if (getpid() <= 0 || syscall(SYS_getpid) != getpid())
		return fail("getpid");
	/* glibc tries clone3 first and must fall back to clone on ENOSYS. */
	int e = pthread_create(&t, NULL, thread_fn, (void *)0x1234);
	if (e != 0)
		return fail("pthread_create: %s", strerror(e));
	pthread_join(t, &ret);
	if (ret != (void *)0x1234)
		return fail("thread result");
	return 0;
}

static int check_sockets(void)
{
	int fd, sv[2];

	EXPECT_ERRNO(socket(AF_VSOCK, SOCK_STREAM, 0), EPERM);
	EXPECT_ERRNO(socket(AF_ALG, SOCK_SEQPACKET, 0), EPERM);
	/* The kernel truncates the family to an int: the upper half must not matter. */
	EXPECT_ERRNO(syscall(SYS_socket, (1UL << 32) | AF_VSOCK, SOCK_STREAM, 0), EPERM);
	EXPECT_OK(fd = socket(AF_INET, SOCK_STREAM, 0));
	close(fd);
	EXPECT_OK(fd = socket(AF_UNIX, SOCK_DGRAM, 0));
	close(fd);
	EXPECT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	close(sv[0]);
	close(sv[1]);
	return 0;
}

static int check_unknown(void)
{
	EXPECT_ERRNO(syscall(1000), ENOSYS);
	EXPECT_ERRNO(syscall(4095), ENOSYS);
#ifdef SYS_modify_ldt
	/* a real syscall the profile does not list */
	char buf[16];
	EXPECT_ERRNO(syscall(SYS_modify_ldt, 0, buf, sizeof(buf)), ENOSYS);
#endif
	return 0;
}

static int check_cap_gated_without(void)
{
	EXPECT_ERRNO(klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_kcmp, getpid(), getpid(), KCMP_VM, 0, 0), EPERM);
	return 0;
}

static int check_cap_gated_with(void)
{
	EXPECT_OK(klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0));
	EXPECT_OK(syscall(SYS_kcmp, getpid(), getpid(), KCMP_VM, 0, 0));
	return 0;
}

#ifdef __x86_64__
/* A 32-bit syscall from a 64-bit process: seccomp sees AUDIT_ARCH_I386 and x86 numbers. */
static long int80(long nr, long a, long b, long c)
{
	long r;
	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "cc", "r8", "r9", "r10", "r11");
	return r;
}

enum { X86_GETPID = 20, X86_MOUNT = 21, X86_IOCTL = 54, X86_SOCKETCALL = 102, X86_CLONE = 120 };
enum { X86_KEYCTL = 288, X86_SOCKET = 359, X86_CLONE3 = 435 };

static int check_x86(void)
{
	/* socketcall reads its arguments through a pointer the 32-bit ABI can hold */
	unsigned int *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	long r;

	if (args == MAP_FAILED)
		return fail("mmap MAP_32BIT: %s", strerror(errno));
	if (int80(X86_GETPID, 0, 0, 0) != getpid())
		return fail("x86 getpid");
	if ((r = int80(X86_KEYCTL, 9999, 0, 0)) != -EPERM)
		return fail("x86 keyctl = %ld", r);
	if ((r = int80(X86_MOUNT, 0, 0, 0)) != -EPERM)
		return fail("x86 mount = %ld", r);
	if ((r = int80(X86_IOCTL, -1, TIOCSTI, 0)) != -EPERM)
		return fail("x86 ioctl(TIOCSTI) = %ld", r);
	if ((r = int80(X86_CLONE3, 0, 0, 0)) != -ENOSYS)
		return fail("x86 clone3 = %ld", r);
	r = int80(X86_CLONE, CLONE_NEWUSER | SIGCHLD, 0, 0);
	if (r == 0)
		_exit(0);
	if (r != -EPERM)
		return fail("x86 clone(CLONE_NEWUSER) = %ld", r);
	if ((r = int80(X86_SOCKET, AF_VSOCK, SOCK_STREAM, 0)) != -EPERM)
		return fail("x86 socket(AF_VSOCK) = %ld", r);
	if ((r = int80(X86_SOCKET, AF_ALG, SOCK_SEQPACKET, 0)) != -EPERM)
		return fail("x86 socket(AF_ALG) = %ld", r);
	/* socketcall(SYS_SOCKET) hides the family: refused whatever the family */
	args[0] = AF_VSOCK, args[1] = SOCK_STREAM, args[2] = 0;
	if ((r = int80(X86_SOCKETCALL, 1, (long)args, 0)) != -EPERM)
		return fail("x86 socketcall(SYS_SOCKET, AF_VSOCK) = %ld", r);
	args[0] = AF_INET;
	if ((r = int80(X86_SOCKETCALL, 1, (long)args, 0)) != -EPERM)
		return fail("x86 socketcall(SYS_SOCKET, AF_INET) = %ld", r);
	/* other socket operations still work through socketcall */
	args[0] = AF_UNIX, args[1] = SOCK_STREAM, args[2] = 0,
	args[3] = (unsigned int)(long)&args[8];
	if ((r = int80(X86_SOCKETCALL, 8 /* SYS_SOCKETPAIR */, (long)args, 0)) != 0)
		return fail("x86 socketcall(SYS_SOCKETPAIR) = %ld", r);
	close((int)args[8]);
	close((int)args[9]);
	if ((r = int80(1000, 0, 0, 0)) != -ENOSYS)
		return fail("x86 syscall 1000 = %ld", r);
	return 0;
}
#endif

/* ---- parser ----------------------------------------------------------------------------- */

static const char good_profile[] =
    "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38,"
    " \"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\", \"SCMP_ARCH_AARCH64\"],"
    " \"syscalls\": ["
    "  {\"names\": [\"read\", \"write\", \"exit_group\"], \"action\": \"SCMP_ACT_ALLOW\"},"
    "  {\"name\": \"getpid\", \"action\": \"SCMP_ACT_LOG\"},"
    "  {\"names\": [\"kill\"], \"action\": \"SCMP_ACT_KILL_PROCESS\"},"
    "  {\"names\": [\"socket\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 13,"
    "   \"args\": [{\"index\": 0, \"value\": 40, \"op\": \"SCMP_CMP_EQ\"}]},"
    "  {\"names\": [\"socket\"], \"action\": \"SCMP_ACT_ALLOW\","
    "   \"args\": [{\"index\": 0, \"value\": 40, \"op\": \"SCMP_CMP_NE\"}]},"
    "  {\"names\": [\"clone\"], \"action\": \"SCMP_ACT_ALLOW\","
    "   \"args\": [{\"index\": 0, \"value\": 2114060288, \"valueTwo\": 0, \"op\": "
    "\"SCMP_CMP_MASKED_EQ\"}]},"
    "  {\"names\": [\"tkill\"], \"action\": \"SCMP_ACT_TRAP\"},"
    "  {\"names\": [\"tgkill\"], \"action\": \"SCMP_ACT_KILL\"},"
    "  {\"names\": [\"ptrace\"], \"action\": \"SCMP_ACT_TRACE\", \"errnoRet\": 5},"
    "  {\"names\": [\"gettid\"], \"action\": \"SCMP_ACT_KILL_THREAD\", \"comment\": \"x\"}"
    " ]}";

Test(seccomp_profile, good_profile_compiles)
{
	char *dir = tmpdir_new(), *path = write_tmp(dir, "good.json", good_profile);
	struct lb_seccomp_prog *prog = prepare_ok(path, 0, NULL);
	cr_assert_eq(prog->from_cache, 0);
	lb_seccomp_prog_free(prog);
	free(path);
	tmpdir_free(dir);
}

Test(seccomp_profile, parsed_rules)
{
	struct lb_scmp_profile *p = parse_ok(good_profile, 0);
	cr_assert_eq(p->default_action, SCMP_ACT_ERRNO(38));
	cr_assert(has_rule(p, "socket", SCMP_ACT_ERRNO(13)));
	cr_assert(has_rule(p, "ptrace", SCMP_ACT_TRACE(5)));
	cr_assert(has_rule(p, "getpid", SCMP_ACT_LOG));
	/* most restrictive first, profile order kept within one action */
	cr_assert_eq(p->rules[0].action, SCMP_ACT_KILL_PROCESS);
	cr_assert_eq(p->rules[p->n_rules - 1].action, SCMP_ACT_ALLOW);
	for (size_t i = 1; i < p->n_rules; i++)
		cr_assert_leq((int32_t)(p->rules[i - 1].action & 0xffff0000u),
			      (int32_t)(p->rules[i].action & 0xffff0000u), "rule %zu", i);
	cr_assert_str_eq(p->rules[p->n_rules - 5].name, "read");
	/* the native arch first; aarch64 dropped on x86_64 (and x86 on aarch64) */
	cr_assert_eq(p->arches[0], seccomp_arch_native());
#ifdef __x86_64__
	cr_assert_eq(p->n_arches, 2);
	cr_assert_eq(p->arches[1], SCMP_ARCH_X86);
#endif
	lb_scmp_profile_free(p);
}

#ifdef __x86_64__
/* The test's own answer, independent of lbbox's: getpid by its x32 number. */
static bool kernel_runs_x32(void)
{
	return syscall(0x40000000L | SYS_getpid) >= 0;
}
#endif

Test(seccomp_profile, default_profile)
{
	struct lb_scmp_profile *p = parse_ok(lb_seccomp_default_json, 0);
	cr_assert_eq(p->default_action, SCMP_ACT_ERRNO(ENOSYS));
	cr_assert(has_rule(p, "keyctl", SCMP_ACT_ERRNO(EPERM)));
	cr_assert(has_rule(p, "read", SCMP_ACT_ALLOW));
	/* same as the default action: dropped (libseccomp would refuse it) */
	cr_assert_not(has_rule(p, "clone3", SCMP_ACT_ERRNO(ENOSYS)));
#ifdef __x86_64__
	/* x86 always, x32 only where the kernel runs it (the probe is this test's own) */
	bool x32 = kernel_runs_x32();
	cr_assert_eq(p->n_arches, x32 ? 3 : 2);
	cr_assert_eq(p->arches[1], SCMP_ARCH_X86);
	cr_assert_eq(lb_scmp_kernel_runs_x32(), x32);
#endif
	lb_scmp_profile_free(p);
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, NULL);
	cr_assert_leq(prog->len, BPF_MAXINSNS);
	lb_seccomp_prog_free(prog);
}

static bool same_prog(const struct lb_seccomp_prog *a, const struct lb_seccomp_prog *b);

#ifdef __x86_64__
/* The x32 part costs a third of the filter; where the kernel runs no x32 program the compiled
 * default is exactly the profile without x32, and the cache keeps the two apart. */
Test(seccomp_profile, x32_part_only_where_the_kernel_runs_x32)
{
	bool x32 = kernel_runs_x32();
	const char *sub = "\"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"";
	const char *at = strstr(lb_seccomp_default_json, sub);
	cr_assert_not_null(at, "the default profile lists x86 and x32 for x86_64");
	char *dir = tmpdir_new(), *path = NULL, *text = NULL;
	cr_assert(asprintf(&text, "%.*s\"SCMP_ARCH_X86\"%s", (int)(at - lb_seccomp_default_json),
			   lb_seccomp_default_json, at + strlen(sub)) > 0);
	cr_assert(asprintf(&path, "%s/no-x32.json", dir) > 0);
	cr_assert_eq(lb_write_file_atomic(path, text, strlen(text), 0600, NULL), 0);
	struct lb_seccomp_prog *def = prepare_ok(NULL, 0, NULL),
			       *no_x32 = prepare_ok(path, 0, NULL);
	if (x32)
		cr_assert_gt(def->len, no_x32->len);
	else
		cr_assert(same_prog(def, no_x32), "default %u insns, without x32 %u", def->len,
			  no_x32->len);
	char key[LB_SCMP_KEY_MAX];
	cr_assert_eq(
	    lb_scmp_cache_key(lb_seccomp_default_json, lb_seccomp_default_json_len, 0, key, NULL),
	    0);
	cr_assert_eq(strstr(key, "-nox32") != NULL, !x32, "%s", key);
	lb_seccomp_prog_free(def), lb_seccomp_prog_free(no_x32);
	free(path), free(text);
	tmpdir_free(dir);
}

/* lbbox under a filter of its own (lbbox in an lbbox sandbox, systemd's
 * SystemCallArchitectures=native) must not probe x32: that filter kills x32 numbers. It keeps
 * the x32 part instead. */
Test(seccomp_profile, x32_is_not_probed_under_a_filter)
{
	struct sock_filter kill_x32[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {.len = 4, .filter = kill_x32};
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
			_exit(2);
		_exit(lb_scmp_kernel_runs_x32() ? 0 : 1);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x (SIGSYS: the probe ran)", st);
}
#endif

Test(seccomp_profile, bad_json)
{
	char *msg = prepare_fail("{\"defaultAction\": \"SCMP_ACT_ALLOW\",");
	cr_assert(strstr(msg, "invalid JSON"), "%s", msg);
	free(msg);
}

Test(seccomp_profile, unknown_action)
{
	char *msg = prepare_fail("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
				 "{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ERRNO\"},"
				 "{\"names\": [\"write\"], \"action\": \"FOO\"}]}");
	cr_assert(strstr(msg, ": syscalls[1].action: unknown action 'FOO'"), "%s", msg);
	free(msg);
	msg = prepare_fail("{\"defaultAction\": \"SCMP_ACT_BAR\"}");
	cr_assert(strstr(msg, "defaultAction: unknown action 'SCMP_ACT_BAR'"), "%s", msg);
	free(msg);
	msg = prepare_fail("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
			   "{\"names\": [\"read\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}");
	cr_assert(strstr(msg, "syscalls[0].action: SCMP_ACT_NOTIFY is not supported"), "%s", msg);
	free(msg);
}

Test(seccomp_profile, bad_op)
{
	char *msg = prepare_fail(
	    "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"],"
	    " \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 1, \"op\": "
	    "\"SCMP_CMP_XX\"}]}]}");
	cr_assert(strstr(msg, "syscalls[0].args[0].op: unknown operator 'SCMP_CMP_XX'"), "%s", msg);
	free(msg);
	msg = prepare_fail(
	    "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"],"
	    " \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 6, \"value\": 1, \"op\": "
	    "\"SCMP_CMP_EQ\"}]}]}");
	cr_assert(strstr(msg, "syscalls[0].args[0].index"), "%s", msg);
	free(msg);
}

Test(seccomp_profile, other_errors)
{
	struct {
		const char *json, *want;
	} cases[] = {
	    {"[]", "expected a JSON object"},
	    {"{}", "defaultAction: missing"},
	    {"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 5000}",
	     "defaultErrnoRet: expected an errno"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_VAX\"]}",
	     "architectures[0]: unknown architecture 'SCMP_ARCH_VAX'"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [], \"archMap\": []}",
	     "both 'architectures' and 'archMap' are set"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"action\": "
	     "\"SCMP_ACT_LOG\"}]}",
	     "syscalls[0]: neither 'names' nor 'name' is set"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [1], \"action\": "
	     "\"SCMP_ACT_LOG\"}]}",
	     "syscalls[0].names[0]: expected a string"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
	     "\"action\": \"SCMP_ACT_LOG\", \"includes\": {\"caps\": \"CAP_X\"}}]}",
	     "syscalls[0].includes.caps: expected an array of strings"},
	    {"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, \"syscalls\": ["
	     "{\"names\": [\"socket\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0,"
	     " \"value\": 40, \"op\": \"SCMP_CMP_EQ\"}]},"
	     "{\"names\": [\"read\", \"socket\"], \"action\": \"SCMP_ACT_ALLOW\"}]}",
	     "syscalls[1]: the unconditional rule for 'socket' would override the more "
	     "restrictive conditional rule of syscalls[0]"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *msg = prepare_fail(cases[i].json);
		cr_assert(strstr(msg, cases[i].want), "case %zu: %s", i, msg);
		free(msg);
	}
}

Test(seccomp_profile, missing_file_names_path)
{
	struct lb_seccomp_prog *prog = NULL;
	struct lb_err *err = NULL;
	cr_assert_lt(lb_seccomp_prepare("/nonexistent/lbbox/profile.json", 0, NULL, &prog, &err),
		     0);
	cr_assert(strstr(err->msg, "/nonexistent/lbbox/profile.json"), "%s", err->msg);
	cr_assert_eq(err->errnum, ENOENT);
	cr_assert_null(prog);
	lb_err_free(&err);
}

Test(seccomp_profile, unknown_syscall_skipped)
{
	const char *json =
	    "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\":"
	    " [\"getpid\", \"lbbox_no_such_syscall\"], \"action\": \"SCMP_ACT_ALLOW\"}]}";
	struct lb_scmp_profile *p = parse_ok(json, 0);
	cr_assert_eq(p->n_rules, 1);
	cr_assert_str_eq(p->rules[0].name, "getpid");
	lb_scmp_profile_free(p);
	char *dir = tmpdir_new(), *path = write_tmp(dir, "p.json", json);
	lb_seccomp_prog_free(prepare_ok(path, 0, NULL));
	free(path);
	tmpdir_free(dir);
}

Test(seccomp_profile, includes_excludes)
{
	const char *json =
	    "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, \"syscalls\": ["
	    " {\"names\": [\"chroot\"], \"action\": \"SCMP_ACT_ALLOW\","
	    "  \"includes\": {\"caps\": [\"CAP_SYS_CHROOT\"]}},"
	    " {\"names\": [\"chroot\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1,"
	    "  \"excludes\": {\"caps\": [\"CAP_SYS_CHROOT\"]}},"
	    " {\"names\": [\"mount\"], \"action\": \"SCMP_ACT_ALLOW\","
	    "  \"includes\": {\"caps\": [\"CAP_SYS_ADMIN\", \"CAP_SYS_CHROOT\"]}},"
	    " {\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\","
	    "  \"includes\": {\"caps\": [\"CAP_LBBOX_FUTURE\"]}},"
	    " {\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\","
	    "  \"includes\": {\"arches\": [\"amd64\", \"arm64\"], \"minKernel\": \"4.8\"}},"
	    " {\"names\": [\"write\"], \"action\": \"SCMP_ACT_ALLOW\","
	    "  \"excludes\": {\"arches\": [\"SCMP_ARCH_X86_64\", \"aarch64\"]}}"
	    "]}";
	struct lb_scmp_profile *none = parse_ok(json, 0);
	struct lb_scmp_profile *chroot = parse_ok(json, 1ULL << CAP_SYS_CHROOT);
	struct lb_scmp_profile *both =
	    parse_ok(json, (1ULL << CAP_SYS_CHROOT) | (1ULL << CAP_SYS_ADMIN));

	cr_assert_not(has_rule(none, "chroot", SCMP_ACT_ALLOW));
	cr_assert(has_rule(none, "chroot", SCMP_ACT_ERRNO(1)));
	cr_assert(has_rule(chroot, "chroot", SCMP_ACT_ALLOW));
	cr_assert_not(has_rule(chroot, "chroot", SCMP_ACT_ERRNO(1)));
	cr_assert_not(has_rule(chroot, "mount", SCMP_ACT_ALLOW)); /* needs every listed cap */
	cr_assert(has_rule(both, "mount", SCMP_ACT_ALLOW));
	cr_assert_not(has_rule(both, "getpid", SCMP_ACT_ALLOW)); /* unknown cap: not held */
#if defined(__x86_64__) || defined(__aarch64__)
	cr_assert(has_rule(none, "read", SCMP_ACT_ALLOW));
	cr_assert_not(has_rule(none, "write", SCMP_ACT_ALLOW));
#endif
	lb_scmp_profile_free(none);
	lb_scmp_profile_free(chroot);
	lb_scmp_profile_free(both);
}

static int check_dup_1000(void)
{
	EXPECT_ERRNO(dup(1000), EACCES);
	EXPECT_ERRNO(dup(1001), EBADF);
	return 0;
}

/* Two rules on the same condition: libseccomp keeps the first one added, and the compiler
 * adds the more restrictive first, whatever the profile order. */
Test(seccomp_profile, conflicting_rules_restrictive_wins)
{
	const char *json =
	    "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
	    " {\"names\": [\"dup\"], \"action\": \"SCMP_ACT_LOG\","
	    "  \"args\": [{\"index\": 0, \"value\": 1000, \"op\": \"SCMP_CMP_EQ\"}]},"
	    " {\"names\": [\"dup\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 13,"
	    "  \"args\": [{\"index\": 0, \"value\": 1000, \"op\": \"SCMP_CMP_EQ\"}]}]}";
	char *dir = tmpdir_new(), *path = write_tmp(dir, "p.json", json);
	struct lb_seccomp_prog *prog = prepare_ok(path, 0, NULL);
	run_child(prog, check_dup_1000);
	lb_seccomp_prog_free(prog);
	free(path);
	tmpdir_free(dir);
}

/* ---- cache ------------------------------------------------------------------------------ */

static char *cache_file(const char *cache, uint64_t caps)
{
	char key[LB_SCMP_KEY_MAX], *path = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_scmp_cache_key(lb_seccomp_default_json, lb_seccomp_default_json_len, caps,
				       key, &err),
		     0);
	cr_assert(asprintf(&path, "%s/%s.bpf", cache, key) > 0);
	return path;
}

static bool same_prog(const struct lb_seccomp_prog *a, const struct lb_seccomp_prog *b)
{
	return a->len == b->len && memcmp(a->filter, b->filter, a->len * sizeof(*a->filter)) == 0;
}

/* The build-time digest of the embedded profile must equal a run-time sha256 of its bytes. */
Test(seccomp_cache, embedded_digest_matches_runtime_hash)
{
	char a[LB_SCMP_KEY_MAX], b[LB_SCMP_KEY_MAX];
	char *copy = malloc(lb_seccomp_default_json_len);
	cr_assert_not_null(copy);
	memcpy(copy, lb_seccomp_default_json, lb_seccomp_default_json_len);
	cr_assert_eq(
	    lb_scmp_cache_key(lb_seccomp_default_json, lb_seccomp_default_json_len, 0, a, NULL), 0);
	cr_assert_eq(lb_scmp_cache_key(copy, lb_seccomp_default_json_len, 0, b, NULL), 0);
	cr_assert_str_eq(a, b);
	cr_assert_eq(strlen(lb_seccomp_default_json_sha256), 64);
	free(copy);
}

Test(seccomp_cache, second_prepare_hits)
{
	char *dir = tmpdir_new(), *cache = NULL;
	cr_assert(asprintf(&cache, "%s/a/b/cache", dir) > 0);
	struct lb_seccomp_prog *first = prepare_ok(NULL, 0, cache);
	struct lb_seccomp_prog *second = prepare_ok(NULL, 0, cache);
	struct lb_seccomp_prog *other_caps = prepare_ok(NULL, 1ULL << CAP_SYSLOG, cache);
	struct lb_seccomp_prog *uncached = prepare_ok(NULL, 0, NULL);
	struct stat st;
	char *file = cache_file(cache, 0);

	cr_assert_eq(first->from_cache, 0);
	cr_assert_eq(second->from_cache, 1);
	cr_assert_eq(other_caps->from_cache, 0);
	cr_assert(same_prog(first, second));
	cr_assert(same_prog(first, uncached));
	cr_assert_not(same_prog(first, other_caps));
	cr_assert_eq(stat(file, &st), 0);
	/* a 16-byte header (magic, checksum), then the program */
	cr_assert_eq((size_t)st.st_size, 16 + first->len * sizeof(struct sock_filter));
	lb_seccomp_prog_free(first);
	lb_seccomp_prog_free(second);
	lb_seccomp_prog_free(other_caps);
	lb_seccomp_prog_free(uncached);
	free(file);
	free(cache);
	tmpdir_free(dir);
}

static void corrupt_and_check(const char *cache, const void *junk, size_t len)
{
	struct lb_err *err = NULL;
	char *file = cache_file(cache, 0);
	struct lb_seccomp_prog *good = prepare_ok(NULL, 0, NULL);

	cr_assert_eq(lb_write_file_atomic(file, junk, len, 0600, &err), 0);
	struct lb_seccomp_prog *p = prepare_ok(NULL, 0, cache);
	cr_assert_eq(p->from_cache, 0, "corrupt cache file (%zu bytes) was used", len);
	cr_assert(same_prog(p, good));
	lb_seccomp_prog_free(p);
	/* ... and overwritten with the good program */
	p = prepare_ok(NULL, 0, cache);
	cr_assert_eq(p->from_cache, 1);
	cr_assert(same_prog(p, good));
	lb_seccomp_prog_free(p);
	lb_seccomp_prog_free(good);
	free(file);
}

Test(seccomp_cache, corrupt_file_recompiled)
{
	char *dir = tmpdir_new();
	lb_seccomp_prog_free(prepare_ok(NULL, 0, dir));

	corrupt_and_check(dir, "junk!", 5); /* not a multiple of 8 */
	struct sock_filter jump_out[2] = {BPF_JUMP(BPF_JMP | BPF_JA, 7, 0, 0),
					  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	corrupt_and_check(dir, jump_out, sizeof(jump_out));
	struct sock_filter no_ret[1] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};
	corrupt_and_check(dir, no_ret, sizeof(no_ret));
	corrupt_and_check(dir, "", 0);
	tmpdir_free(dir);
}

/* The program a sandbox would most like to plant: allow everything. */
static const struct sock_filter allow_all[1] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};

static void expect_not_loaded(const char *dir, const struct lb_seccomp_prog *good, const char *why)
{
	struct lb_seccomp_prog *p = prepare_ok(NULL, 0, dir);
	cr_assert_eq(p->from_cache, 0, "%s: loaded from the cache", why);
	cr_assert(same_prog(p, good));
	lb_seccomp_prog_free(p);
}

Test(seccomp_cache, untrusted_file_ignored)
{
	char *dir = tmpdir_new(), *file = cache_file(dir, 0);
	struct lb_seccomp_prog *good = prepare_ok(NULL, 0, dir);
	struct lb_err *err = NULL;

	/* a valid program without the header (as a writer who knows only the old format) */
	cr_assert_eq(lb_write_file_atomic(file, allow_all, sizeof(allow_all), 0600, &err), 0);
	expect_not_loaded(dir, good, "headerless program");
	/* a valid program, but readable or writable by others: never loaded */
	cr_assert_eq(lb_write_file_atomic(file, allow_all, sizeof(allow_all), 0666, &err), 0);
	cr_assert_eq(chmod(file, 0666), 0);
	expect_not_loaded(dir, good, "mode 0666");
	lb_seccomp_prog_free(good);
	free(file);
	tmpdir_free(dir);
}

/* A genuine cache file of another key (other capabilities) copied over this key's name. */
Test(seccomp_cache, file_of_another_key_ignored)
{
	char *dir = tmpdir_new(), *mine = cache_file(dir, 0),
	     *other = cache_file(dir, 1ULL << CAP_SYSLOG);
	struct lb_seccomp_prog *good = prepare_ok(NULL, 0, NULL);
	lb_seccomp_prog_free(prepare_ok(NULL, 1ULL << CAP_SYSLOG, dir));
	cr_assert_eq(rename(other, mine), 0);
	expect_not_loaded(dir, good, "another key's file");
	lb_seccomp_prog_free(good);
	free(mine);
	free(other);
	tmpdir_free(dir);
}

/* The directory others may enter or write: nothing in it is trusted. */
Test(seccomp_cache, open_directory_ignored)
{
	char *dir = tmpdir_new();
	struct lb_seccomp_prog *good = prepare_ok(NULL, 0, dir);
	cr_assert_eq(chmod(dir, 0755), 0);
	expect_not_loaded(dir, good, "directory 0755");
	cr_assert_eq(chmod(dir, 0700), 0);
	struct lb_seccomp_prog *p = prepare_ok(NULL, 0, dir);
	cr_assert_eq(p->from_cache, 1, "a private directory's file is used");
	lb_seccomp_prog_free(p);
	lb_seccomp_prog_free(good);
	tmpdir_free(dir);
}

Test(seccomp_cache, unwritable_cache_dir_is_not_fatal)
{
	char *dir = tmpdir_new(), *file = write_tmp(dir, "not-a-dir", "x"), *sub = NULL;
	cr_assert(asprintf(&sub, "%s/below", file) > 0);
	struct lb_seccomp_prog *a = prepare_ok(NULL, 0, file);
	struct lb_seccomp_prog *b = prepare_ok(NULL, 0, sub);
	cr_assert_eq(a->from_cache, 0);
	cr_assert_eq(b->from_cache, 0);
	lb_seccomp_prog_free(a);
	lb_seccomp_prog_free(b);
	free(sub);
	free(file);
	tmpdir_free(dir);
}

/* ---- behaviour of the default profile ---------------------------------------------------- */

Test(seccomp_default, probes_discriminate)
{
	if (geteuid() != 0)
		cr_skip_test("the probes are chosen for root");
	run_child(NULL, check_probes_discriminate);
}

Test(seccomp_default, dangerous_syscalls_eperm)
{
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, NULL);
	run_child(prog, check_eperm_probes);
	lb_seccomp_prog_free(prog);
}

Test(seccomp_default, clone_flags)
{
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, NULL);
	run_child(prog, check_clone);
	lb_seccomp_prog_free(prog);
}

Test(seccomp_default, fork_exec_threads)
{
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, NULL);
	run_child(prog, check_fork_and_exec);
	run_child(prog, check_basics);
	lb_seccomp_prog_free(prog);
}

Test(seccomp_default, socket_families)
{
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, NULL);
	run_child(prog, check_sockets);
	lb_seccomp_prog_free(prog);
}

Test(seccomp_default, unknown_syscalls_enosys)
{
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, NULL);
	run_child(prog, check_unknown);
	lb_seccomp_prog_free(prog);
}

Test(seccomp_default, caps_gate_rules)
{
	struct lb_seccomp_prog *without = prepare_ok(NULL, 0, NULL);
	struct lb_seccomp_prog *with =
	    prepare_ok(NULL, (1ULL << CAP_SYSLOG) | (1ULL << CAP_SYS_PTRACE), NULL);
	run_child(without, check_cap_gated_without);
	if (geteuid() == 0)
		run_child(with, check_cap_gated_with);
	lb_seccomp_prog_free(without);
	lb_seccomp_prog_free(with);
}

Test(seccomp_default, cached_program_enforces)
{
	char *dir = tmpdir_new();
	lb_seccomp_prog_free(prepare_ok(NULL, 0, dir));
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, dir);
	cr_assert_eq(prog->from_cache, 1);
	run_child(prog, check_eperm_probes);
	run_child(prog, check_sockets);
	lb_seccomp_prog_free(prog);
	tmpdir_free(dir);
}

#ifdef __x86_64__
Test(seccomp_default, x86_compat_syscalls)
{
	struct lb_seccomp_prog *prog = prepare_ok(NULL, 0, NULL);
	run_child(prog, check_x86);
	lb_seccomp_prog_free(prog);
}
#endif

Test(seccomp_install, empty_program_rejected)
{
	struct lb_seccomp_prog empty = {0};
	struct lb_err *err = NULL;
	cr_assert_lt(lb_seccomp_install(&empty, &err), 0);
	cr_assert(err && strstr(err->msg, "seccomp"));
	lb_err_free(&err);
}
