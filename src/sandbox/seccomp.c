/*
 * Seccomp: profile -> classic BPF with libseccomp (or from the cache), and installation
 * with the raw seccomp(2) syscall, so a cached program needs no libseccomp at run time.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/seccomp.h"
#include "lbbox/base/util.h"
#include "seccomp_internal.h"

static const char *arch_name(uint32_t arch)
{
	switch (arch) {
	case SCMP_ARCH_X86_64:
		return "x86_64";
	case SCMP_ARCH_X86:
		return "x86";
	case SCMP_ARCH_X32:
		return "x32";
	case SCMP_ARCH_AARCH64:
		return "aarch64";
	case SCMP_ARCH_ARM:
		return "arm";
	default:
		return "compat";
	}
}

static void ctx_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}
#define _cleanup_scmp_ _cleanup_(ctx_releasep)

static int ctx_new(const struct lb_scmp_profile *p, uint32_t arch, const char *source,
		   scmp_filter_ctx *out, struct lb_err **err)
{
	_cleanup_scmp_ scmp_filter_ctx ctx = seccomp_init(p->default_action);
	int rc;

	if (!ctx)
		return lb_err_set(err, EINVAL,
				  "seccomp profile %s: libseccomp refused the default action",
				  source);
	/* A syscall of an arch the profile does not list (int 0x80 when x86 is not listed)
	 * kills the process: a thread-only kill would leave it half dead. */
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* Binary search over syscall numbers instead of a linear chain of ~400 compares. */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (rc == 0 && arch != p->arches[0]) {
		rc = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE);
		if (rc == 0)
			rc = seccomp_arch_add(ctx, arch);
	}
	if (rc < 0)
		return lb_err_set(err, -rc, "seccomp profile %s: set up filter for %s", source,
				  arch_name(arch));
	*out = LB_TAKE_PTR(ctx);
	return 0;
}

static int ctx_add_rules(scmp_filter_ctx ctx, const struct lb_scmp_profile *p, uint32_t arch,
			 const char *source, struct lb_err **err)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct lb_scmp_rule *r = &p->rules[i];
		/* Not a syscall of this arch (socketcall on x86_64, set_tls on x86 ...). */
		if (seccomp_syscall_resolve_name_rewrite(arch, r->name) < 0)
			continue;
		int rc = seccomp_rule_add_array(ctx, r->action, r->nr, r->nargs, r->args);
		/* EEXIST: a more restrictive rule (added earlier, see rules_sort) already owns
		 * the same filter node; it wins. */
		if (rc == 0 || rc == -EEXIST)
			continue;
		return lb_err_set(
		    err, -rc, "seccomp profile %s: syscalls[%zu]: cannot add rule for '%s' on %s",
		    source, r->entry, r->name, arch_name(arch));
	}
	return 0;
}

/*
 * One libseccomp context per architecture, merged at the end: a rule that libseccomp must
 * degrade on a compat arch (x86 socketcall) then fails there alone instead of rolling back
 * the native rule as well, which is what a single multi-arch context does.
 */
static int build(const struct lb_scmp_profile *p, const char *source, scmp_filter_ctx *out,
		 struct lb_err **err)
{
	_cleanup_scmp_ scmp_filter_ctx merged = NULL;

	for (size_t i = 0; i < p->n_arches; i++) {
		_cleanup_scmp_ scmp_filter_ctx ctx = NULL;
		if (ctx_new(p, p->arches[i], source, &ctx, err) < 0)
			return -1;
		if (ctx_add_rules(ctx, p, p->arches[i], source, err) < 0)
			return -1;
		if (!merged) {
			merged = LB_TAKE_PTR(ctx);
			continue;
		}
		int rc = seccomp_merge(merged, ctx);
		if (rc < 0)
			return lb_err_set(err, -rc, "seccomp profile %s: merge %s filter", source,
					  arch_name(p->arches[i]));
		ctx = NULL; /* seccomp_merge released it */
	}
	*out = LB_TAKE_PTR(merged);
	return 0;
}

/* libseccomp 2.5 exports only to a file descriptor: go through a memfd. */
static int export_bpf(scmp_filter_ctx ctx, struct lb_seccomp_prog **out, struct lb_err **err)
{
	_cleanup_close_ int fd = memfd_create("lbbox-seccomp", MFD_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct stat st;

	if (fd < 0)
		return lb_err_set(err, errno, "seccomp: memfd_create");
	int rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0)
		return lb_err_set(err, -rc, "seccomp: export BPF");
	if (fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "seccomp: stat exported BPF");
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!buf)
		return lb_err_set(err, ENOMEM, "seccomp: export BPF");
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		return lb_err_set(err, errno ? errno : EIO, "seccomp: read exported BPF");
	return lb_scmp_prog_from_bytes(buf, (size_t)st.st_size, out, err);
}

int lb_scmp_compile(const struct lb_scmp_profile *p, const char *source,
		    struct lb_seccomp_prog **out, struct lb_err **err)
{
	_cleanup_scmp_ scmp_filter_ctx ctx = NULL;

	if (build(p, source, &ctx, err) < 0)
		return -1;
	if (export_bpf(ctx, out, err) < 0)
		return lb_err_wrap(err, "seccomp profile %s", source);
	return 0;
}

static int read_profile(const char *path, char **owned, const char **buf, size_t *len,
			struct lb_err **err)
{
	_cleanup_err_ struct lb_err *e = NULL;

	if (!path) {
		*buf = lb_seccomp_default_json;
		*len = lb_seccomp_default_json_len;
		return 0;
	}
	if (lb_read_file(path, LB_SCMP_PROFILE_MAX, owned, len, &e) < 0)
		return lb_err_set(err, e ? e->errnum : 0, "seccomp profile %s: cannot read", path);
	*buf = *owned;
	return 0;
}

int lb_seccomp_prepare(const char *profile_path, uint64_t caps, const char *cache_dir,
		       struct lb_seccomp_prog **out, struct lb_err **err)
{
	const char *source = profile_path ? profile_path : "(built-in default)";
	_cleanup_free_ char *owned = NULL;
	struct lb_scmp_profile *profile = NULL;
	struct lb_seccomp_prog *prog = NULL;
	const char *buf = NULL;
	size_t len = 0;
	char key[LB_SCMP_KEY_MAX];

	if (read_profile(profile_path, &owned, &buf, &len, err) < 0)
		return -1;
	if (cache_dir && lb_scmp_cache_key(buf, len, caps, key, err) < 0)
		return -1;
	if (cache_dir && lb_scmp_cache_load(cache_dir, key, out) == 0)
		return 0;
	if (lb_scmp_profile_parse(source, buf, len, caps, &profile, err) < 0)
		return -1;
	int r = lb_scmp_compile(profile, source, &prog, err);
	lb_scmp_profile_free(profile);
	if (r < 0)
		return -1;
	if (cache_dir)
		lb_scmp_cache_store(cache_dir, key, prog);
	*out = prog;
	return 0;
}

int lb_seccomp_install(const struct lb_seccomp_prog *prog, struct lb_err **err)
{
	if (!prog || !prog->filter || prog->len == 0)
		return lb_err_set(err, EINVAL, "install seccomp filter: empty program");
	struct sock_fprog fprog = {.len = prog->len, .filter = prog->filter};
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0)
		return 0;
	/* seccomp(2) arrived in 3.17; the prctl form does the same without flags. */
	if (errno == ENOSYS && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) == 0)
		return 0;
	if (errno == EACCES)
		return lb_err_set(
		    err, errno,
		    "install seccomp filter: no_new_privs is not set and CAP_SYS_ADMIN is missing");
	return lb_err_set(err, errno, "install seccomp filter");
}

void lb_seccomp_prog_free(struct lb_seccomp_prog *prog)
{
	if (!prog)
		return;
	free(prog->filter);
	free(prog);
}
