/*
 * The devices a sandbox may open, enforced by its cgroup as a second fence behind nodev mounts
 * and a read-only /dev (as crun and runc do): v1 through the devices controller's allow list,
 * v2 through a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the sandbox's cgroup. Both come
 * from one table, the character devices lb_mount_dev binds into /dev. Should a command ever get
 * a device node in front of it (a mount it was allowed to make, a host bug), the kernel still
 * refuses to open it. Child cgroups (execs, managed processes) inherit the fence.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "cgroup_internal.h"

#define ANY_MINOR (-1)

static const struct {
	int major, minor;
} allowed[] = {
    {1, 3},	      {1, 5}, {1, 7}, {1, 8}, {1, 9}, /* null zero full random urandom */
    {5, 0},					      /* tty */
    {5, 2},					      /* ptmx */
    {136, ANY_MINOR},				      /* the sandbox's own devpts */
};
#define N_ALLOWED (sizeof(allowed) / sizeof(allowed[0]))

int cg_devices_v1(const struct cg_dir *d, struct lb_err **err)
{
	if (cg_write(d, "devices.deny", "a", err) < 0)
		return -1;
	for (size_t i = 0; i < N_ALLOWED; i++) {
		char rule[32];
		if (allowed[i].minor == ANY_MINOR)
			snprintf(rule, sizeof(rule), "c %d:* rwm", allowed[i].major);
		else
			snprintf(rule, sizeof(rule), "c %d:%d rwm", allowed[i].major,
				 allowed[i].minor);
		if (cg_write(d, "devices.allow", rule, err) < 0)
			return -1;
	}
	return 0;
}

/* ---- v2: the same table as a BPF program --------------------------------------------------- */

#define INSN(c, d, s, o, i)                                                                        \
	((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
/* r2 = type (access_type & 0xffff), r3 = major, r4 = minor; r0 = 1 allows, 0 refuses. */
#define LOAD_CTX(reg, off)     INSN(BPF_LDX | BPF_W | BPF_MEM, reg, BPF_REG_1, off, 0)
#define JNE_IMM(reg, imm, off) INSN(BPF_JMP | BPF_JNE | BPF_K, reg, 0, off, imm)
#define MOV_IMM(reg, imm)      INSN(BPF_ALU64 | BPF_MOV | BPF_K, reg, 0, 0, imm)
#define EXIT()		       INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* Each allowed entry: if the device matches, return 1; after the last, return 0. */
static size_t devices_program(struct bpf_insn *p)
{
	size_t n = 0;
	p[n++] = LOAD_CTX(BPF_REG_2, offsetof(struct bpf_cgroup_dev_ctx, access_type));
	p[n++] = INSN(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
	p[n++] = LOAD_CTX(BPF_REG_3, offsetof(struct bpf_cgroup_dev_ctx, major));
	p[n++] = LOAD_CTX(BPF_REG_4, offsetof(struct bpf_cgroup_dev_ctx, minor));
	p[n++] = MOV_IMM(BPF_REG_0, 0);
	/* not a character device: refused (r0 is 0) */
	size_t skip_all = n++;
	for (size_t i = 0; i < N_ALLOWED; i++) {
		bool any = allowed[i].minor == ANY_MINOR;
		p[n++] = JNE_IMM(BPF_REG_3, allowed[i].major, any ? 2 : 3);
		if (!any)
			p[n++] = JNE_IMM(BPF_REG_4, allowed[i].minor, 2);
		p[n++] = MOV_IMM(BPF_REG_0, 1);
		p[n++] = EXIT();
	}
	p[n++] = EXIT();
	p[skip_all] = JNE_IMM(BPF_REG_2, BPF_DEVCG_DEV_CHAR, (short)(n - 2 - skip_all));
	return n;
}

int cg_devices_v2(const struct cg_dir *d, struct lb_err **err)
{
	struct bpf_insn prog[8 + 4 * N_ALLOWED];
	size_t n = devices_program(prog);
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
