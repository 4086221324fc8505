/*
 * The devices a sandbox may open, enforced by its cgroup as a second fence behind nodev mounts
 * and a read-only /dev (as crun and runc do): v1 through the devices controller's allow list,
 * v2 through a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the sandbox's cgroup. Both come
 * from one list: the character devices lb_mount_dev binds into /dev, then the spec's extra
 * devices (lim->devices) with the access they were granted. Should a command ever get a device
 * node in front of it (a mount it was allowed to make, a host bug), the kernel still refuses to
 * open it. Child cgroups (execs, managed processes) inherit the fence.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "cgroup_internal.h"

#define ANY_MINOR UINT32_MAX

struct fence_entry {
	char type;
	uint32_t major, minor; /* minor ANY_MINOR: every minor */
	unsigned access;
};

static const struct fence_entry standard[] = {
    {'c', 1, 3, LB_DEV_RWM},	       {'c', 1, 5, LB_DEV_RWM}, /* null zero */
    {'c', 1, 7, LB_DEV_RWM},	       {'c', 1, 8, LB_DEV_RWM}, /* full random */
    {'c', 1, 9, LB_DEV_RWM},					/* urandom */
    {'c', 5, 0, LB_DEV_RWM},					/* tty */
    {'c', 5, 2, LB_DEV_RWM},					/* ptmx */
    {'c', 136, ANY_MINOR, LB_DEV_RWM},				/* the sandbox's own devpts */
};
#define N_STANDARD (sizeof(standard) / sizeof(standard[0]))

/* Entry i of the whole fence: the standard table, then the spec's devices. */
static struct fence_entry fence_at(const struct lb_cgroup_limits *lim, size_t i)
{
	if (i < N_STANDARD)
		return standard[i];
	const struct lb_cgroup_device *d = &lim->devices[i - N_STANDARD];
	return (struct fence_entry){d->type, d->major, d->minor, d->access & LB_DEV_RWM};
}

static size_t fence_len(const struct lb_cgroup_limits *lim)
{
	return N_STANDARD + (lim->devices ? lim->n_devices : 0);
}

/* "c 10:229 rw" */
static void v1_rule(const struct fence_entry *e, char *out, size_t size)
{
	char minor[16], acc[4];
	size_t n = 0;
	if (e->minor == ANY_MINOR)
		snprintf(minor, sizeof(minor), "*");
	else
		snprintf(minor, sizeof(minor), "%u", e->minor);
	if (e->access & LB_DEV_READ)
		acc[n++] = 'r';
	if (e->access & LB_DEV_WRITE)
		acc[n++] = 'w';
	if (e->access & LB_DEV_MKNOD)
		acc[n++] = 'm';
	acc[n] = '\0';
	snprintf(out, size, "%c %u:%s %s", e->type, e->major, minor, acc);
}

int cg_devices_v1(const struct cg_dir *d, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	if (cg_write(d, "devices.deny", "a", err) < 0)
		return -1;
	for (size_t i = 0; i < fence_len(lim); i++) {
		struct fence_entry e = fence_at(lim, i);
		char rule[48];
		if (!e.access)
			continue;
		v1_rule(&e, rule, sizeof(rule));
		if (cg_write(d, "devices.allow", rule, err) < 0)
			return -1;
	}
	return 0;
}

/* ---- v2: the same list as a BPF program ---------------------------------------------------- */

#define INSN(c, d, s, o, i)                                                                        \
	((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
/* r2 = type, r3 = major, r4 = minor, r5 = access asked; r0 = 1 allows, 0 refuses. */
#define LOAD_CTX(reg, off)     INSN(BPF_LDX | BPF_W | BPF_MEM, reg, BPF_REG_1, off, 0)
#define JNE_IMM(reg, imm, off) INSN(BPF_JMP | BPF_JNE | BPF_K, reg, 0, off, imm)
#define MOV_IMM(reg, imm)      INSN(BPF_ALU64 | BPF_MOV | BPF_K, reg, 0, 0, imm)
#define MOV_REG(dst, src)      INSN(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0)
#define AND_IMM(reg, imm)      INSN(BPF_ALU64 | BPF_AND | BPF_K, reg, 0, 0, imm)
#define RSH_IMM(reg, imm)      INSN(BPF_ALU64 | BPF_RSH | BPF_K, reg, 0, 0, imm)
#define EXIT()		       INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
/* The most instructions one entry takes, and the program's fixed part. */
#define ENTRY_MAX 8
#define FIXED_MAX 8

static int bpf_access(unsigned access)
{
	return ((access & LB_DEV_READ) ? BPF_DEVCG_ACC_READ : 0) |
	       ((access & LB_DEV_WRITE) ? BPF_DEVCG_ACC_WRITE : 0) |
	       ((access & LB_DEV_MKNOD) ? BPF_DEVCG_ACC_MKNOD : 0);
}

/* One entry's instructions; each test that fails jumps past the entry's end. */
struct entry_prog {
	struct bpf_insn insn[ENTRY_MAX];
	size_t n, tests[ENTRY_MAX], ntests;
};

static void emit(struct entry_prog *e, struct bpf_insn insn)
{
	e->insn[e->n++] = insn;
}

/* "if reg != imm: skip the entry", its jump offset set once the entry's length is known */
static void skip_unless(struct entry_prog *e, int reg, int imm)
{
	e->tests[e->ntests++] = e->n;
	emit(e, JNE_IMM(reg, imm, 0));
}

/* When type, major, minor match and every access asked is granted, return 1. */
static size_t entry_program(const struct fence_entry *f, struct bpf_insn *out)
{
	struct entry_prog e = {.n = 0};
	int acc = bpf_access(f->access);
	skip_unless(&e, BPF_REG_2, f->type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR);
	skip_unless(&e, BPF_REG_3, (int)f->major);
	if (f->minor != ANY_MINOR)
		skip_unless(&e, BPF_REG_4, (int)f->minor);
	if (acc != (BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD)) {
		emit(&e, MOV_REG(BPF_REG_1, BPF_REG_5)); /* the access asked, less the granted */
		emit(&e, AND_IMM(BPF_REG_1, ~acc));
		skip_unless(&e, BPF_REG_1, 0);
	}
	emit(&e, MOV_IMM(BPF_REG_0, 1));
	emit(&e, EXIT());
	for (size_t t = 0; t < e.ntests; t++)
		e.insn[e.tests[t]].off = (short)(e.n - 1 - e.tests[t]);
	memcpy(out, e.insn, e.n * sizeof(*out));
	return e.n;
}

static size_t devices_program(const struct lb_cgroup_limits *lim, struct bpf_insn *p)
{
	size_t n = 0;
	p[n++] = LOAD_CTX(BPF_REG_2, offsetof(struct bpf_cgroup_dev_ctx, access_type));
	p[n++] = MOV_REG(BPF_REG_5, BPF_REG_2);
	p[n++] = AND_IMM(BPF_REG_2, 0xffff);
	p[n++] = RSH_IMM(BPF_REG_5, 16);
	p[n++] = LOAD_CTX(BPF_REG_3, offsetof(struct bpf_cgroup_dev_ctx, major));
	p[n++] = LOAD_CTX(BPF_REG_4, offsetof(struct bpf_cgroup_dev_ctx, minor));
	p[n++] = MOV_IMM(BPF_REG_0, 0);
	for (size_t i = 0; i < fence_len(lim); i++) {
		struct fence_entry e = fence_at(lim, i);
		if (e.access)
			n += entry_program(&e, p + n);
	}
	p[n++] = EXIT();
	return n;
}

int cg_devices_v2(const struct cg_dir *d, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	size_t max = FIXED_MAX + ENTRY_MAX * fence_len(lim);
	_cleanup_free_ struct bpf_insn *prog = calloc(max, sizeof(*prog));
	if (!prog)
		return lb_err_set(err, ENOMEM, "device filter for %s", d->path);
	size_t n = devices_program(lim, prog);
	union bpf_attr load = {
	    .prog_type = BPF_PROG_TYPE_CGROUP_DEVICE,
	    .insns = (uint64_t)(uintptr_t)prog,
	    .insn_cnt = (uint32_t)n,
	    .license = (uint64_t)(uintptr_t) "GPL",
	};
	_cleanup_close_ int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load));
	if (fd < 0)
		return lb_err_set(err, errno, "load the device filter for %s", d->path);
	/* ALLOW_MULTI: a program lbbox's own parent cgroup may have keeps applying too */
	union bpf_attr attach = {
	    .target_fd = (uint32_t)d->fd,
	    .attach_bpf_fd = (uint32_t)fd,
	    .attach_type = BPF_CGROUP_DEVICE,
	    .attach_flags = BPF_F_ALLOW_MULTI,
	};
	if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attach, sizeof(attach)) < 0)
		return lb_err_set(err, errno, "attach the device filter to %s", d->path);
	return 0;
}
