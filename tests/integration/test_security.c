// Privileges: capability sets, no_new_privs, the seccomp filter's deny list.
#include "harness.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

LBT_SUITE(security);

// CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6, SETUID 7,
// NET_BIND_SERVICE 10: 0x1 + 0x2 + 0x8 + 0x10 + 0x20 + 0x40 + 0x80 + 0x400.
#define DEFAULT_CAPS	"00000000000004fb"
#define CAP_NET_RAW_BIT 13

// Value of a /proc/self/status field as the probe sees it inside the sandbox.
static char *status_field(const char *key, const char *const *opts)
{
	const char *args[32] = {"run"};
	int n = 1;
	struct lb_run_out o;
	char *v;

	for (; opts && *opts; opts++)
		args[n++] = *opts;
	args[n++] = LBT_PROBE;
	args[n++] = "status";
	args[n++] = key;
	args[n] = NULL;
	lbt_runv(&o, args);
	LBT_ASSERT_EXIT(o, 0);
	v = strdup(lbt_chomp(o.out));
	lbt_out_free(&o);
	return v;
}

static void expect_status(const char *key, const char *want, const char *const *opts)
{
	char *v = status_field(key, opts);

	cr_assert_str_eq(v, want, "%s is %s, expected %s", key, v, want);
	free(v);
}

LBT_TEST(security, default_capabilities)
{
	expect_status("CapEff", DEFAULT_CAPS, NULL);
	expect_status("CapPrm", DEFAULT_CAPS, NULL);
	expect_status("CapBnd", DEFAULT_CAPS, NULL);
	expect_status("CapAmb", "0000000000000000", NULL);
}

LBT_TEST(security, cap_add_net_raw)
{
	static const char *const plain[] = {"--cap-add", "NET_RAW", NULL};
	static const char *const prefixed[] = {"--cap-add", "CAP_NET_RAW", NULL};
	char *want = lbt_strdupf("%016llx", 0x4fbULL | (1ULL << CAP_NET_RAW_BIT));

	expect_status("CapEff", want, plain);
	expect_status("CapBnd", want, plain);
	expect_status("CapEff", want, prefixed);
	free(want);
}

LBT_TEST(security, cap_drop_one)
{
	static const char *const opts[] = {"--cap-drop", "CHOWN", NULL};

	expect_status("CapEff", "00000000000004fa", opts);
}

LBT_TEST(security, cap_drop_all)
{
	static const char *const opts[] = {"--cap-drop", "ALL", NULL};

	expect_status("CapEff", "0000000000000000", opts);
	expect_status("CapBnd", "0000000000000000", opts);
}

LBT_TEST(security, non_root_user_has_no_capabilities)
{
	static const char *const opts[] = {"--user", "1000", NULL};

	expect_status("CapEff", "0000000000000000", opts);
	expect_status("CapPrm", "0000000000000000", opts);
	expect_status("Uid", "1000\t1000\t1000\t1000", opts);
}

LBT_TEST(security, no_new_privs_and_seccomp)
{
	expect_status("NoNewPrivs", "1", NULL);
	expect_status("Seccomp", "2", NULL);
}

LBT_TEST(security, seccomp_unconfined)
{
	static const char *const opts[] = {"--seccomp", "unconfined", NULL};

	expect_status("Seccomp", "0", opts);
	expect_status("NoNewPrivs", "1", opts);
}

LBT_TEST(security, busybox_rootfs_has_same_confinement)
{
	const char *opts[] = {"--rootfs", lbt_rootfs(), NULL};

	expect_status("CapEff", DEFAULT_CAPS, opts);
	expect_status("Seccomp", "2", opts);
}

static void expect_syscall(const char *name, const char *want, const char *opt)
{
	struct lb_run_out o;
	char *line = lbt_strdupf("%s\n", want);

	if (opt)
		lbt_run(&o, "run", "--seccomp", opt, LBT_PROBE, "syscall", name, NULL);
	else
		lbt_run(&o, "run", LBT_PROBE, "syscall", name, NULL);
	cr_assert_str_eq(o.out, line, "syscall %s: got %s expected %s (exit %d)\n%s", name, o.out,
			 want, o.status, o.err);
	free(line);
	lbt_out_free(&o);
}

#define DENIED(sc, err)                                                                            \
	LBT_TEST(security, syscall_##sc)                                                           \
	{                                                                                          \
		expect_syscall(#sc, err, NULL);                                                    \
	}

DENIED(keyctl, "EPERM")
DENIED(add_key, "EPERM")
DENIED(bpf, "EPERM")
DENIED(perf_event_open, "EPERM")
DENIED(userfaultfd, "EPERM")
DENIED(unshare, "EPERM")
DENIED(setns, "EPERM")
DENIED(mount, "EPERM")
DENIED(umount2, "EPERM")
DENIED(pivot_root, "EPERM")
DENIED(ptrace, "EPERM")
DENIED(io_uring_setup, "EPERM")
DENIED(kexec_load, "EPERM")
DENIED(clone_newuser, "EPERM")
DENIED(socket_vsock, "EPERM")
DENIED(clone3, "ENOSYS")
DENIED(unknown, "ENOSYS")

LBT_TEST(security, allowed_syscall_works)
{
	expect_syscall("getpid", "ok", NULL);
}

// Where the kernel runs no x32 program the filter has no x32 part (seccomp_profile.c): an x32
// syscall ends the command (the filter's bad-arch kill) instead of reaching the kernel. Where it
// does, the x32 part is kept and allows what the x86_64 one allows.
LBT_TEST(security, x32_syscalls_follow_the_kernel)
{
	struct lb_run_out o;
	bool x32 = syscall(0x40000000L | SYS_getpid) >= 0;
	lbt_run(&o, "run", LBT_PROBE, "syscall", "x32_getpid", NULL);
	if (x32)
		LBT_ASSERT_OUT(o, "ok\n");
	else
		cr_assert_eq(o.status, 128 + SIGSYS, "x32 getpid: exit %d, out %s err %s", o.status,
			     o.out, o.err);
	lbt_out_free(&o);
	// unconfined, the kernel answers
	lbt_run(&o, "run", "--seccomp", "unconfined", LBT_PROBE, "syscall", "x32_getpid", NULL);
	LBT_ASSERT_OUT(o, x32 ? "ok\n" : "ENOSYS\n");
	lbt_out_free(&o);
}

LBT_TEST(security, unconfined_allows_keyctl)
{
	// Proves the probe itself can tell a filtered syscall from an unfiltered one.
	expect_syscall("keyctl", "ok", "unconfined");
}

LBT_TEST(security, raw_socket_needs_net_raw)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "python3", "-c",
		"import socket\n"
		"try:\n"
		"    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\n"
		"    print('ok')\n"
		"except OSError as e:\n"
		"    print(e.errno)\n",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "1\n"); // EPERM: no CAP_NET_RAW by default
	lbt_out_free(&o);
}

LBT_TEST(security, host_fds_not_inherited)
{
	struct lb_run_out o;
	int fd = open("/etc/hostname", O_RDONLY); // deliberately without O_CLOEXEC

	cr_assert_geq(fd, 0);
	// Only stdio, plus the directory fd the probe's scandir holds while listing.
	lbt_run(&o, "run", LBT_PROBE, "ls", "/proc/self/fd", NULL);
	close(fd);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "0 1 2 3\n");
	lbt_out_free(&o);
}
