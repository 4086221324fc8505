/*
 * BPF cache: a compiled profile stored as the raw sock_filter array under the sha256 of
 * everything that determines it, so a repeated run skips JSON parsing and libseccomp
 * (which dominate the cost of preparing a sandbox's seccomp filter).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "lbbox/hash.h"
#include "lbbox/util.h"
#include "sandbox/seccomp_internal.h"

/* Every jump must land inside the program and the program must end in a return: this
 * catches truncated or garbled files before the kernel sees them. */
static int bpf_check(const struct sock_filter *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (BPF_CLASS(f[i].code) != BPF_JMP)
			continue;
		if (BPF_OP(f[i].code) == BPF_JA) {
			if (f[i].k >= n - i - 1)
				return -1;
		} else if (f[i].jt >= n - i - 1 || f[i].jf >= n - i - 1) {
			return -1;
		}
	}
	return BPF_CLASS(f[n - 1].code) == BPF_RET ? 0 : -1;
}

int lb_scmp_prog_from_bytes(const void *buf, size_t size, struct lb_seccomp_prog **out,
			    struct lb_err **err)
{
	size_t n = size / sizeof(struct sock_filter);

	if (size == 0 || size % sizeof(struct sock_filter) != 0)
		return lb_err_set(err, EINVAL, "seccomp program of %zu bytes", size);
	if (n > BPF_MAXINSNS)
		return lb_err_set(err, E2BIG, "seccomp program of %zu instructions", n);
	if (bpf_check(buf, n) < 0)
		return lb_err_set(err, EINVAL, "seccomp program has a jump out of bounds");
	struct lb_seccomp_prog *p = calloc(1, sizeof(*p));
	if (!p)
		return lb_err_set(err, ENOMEM, "seccomp program");
	p->filter = malloc(size);
	if (!p->filter) {
		free(p);
		return lb_err_set(err, ENOMEM, "seccomp program");
	}
	memcpy(p->filter, buf, size);
	p->len = (unsigned short)n;
	*out = p;
	return 0;
}

/* The embedded profile's digest was computed at build time; others are hashed here. */
static int profile_sha256(const char *profile, size_t len, char hexout[65], struct lb_err **err)
{
	(void)err;
	if (profile == lb_seccomp_default_json)
		snprintf(hexout, 65, "%s", lb_seccomp_default_json_sha256);
	else
		lb_sha256_hex(profile, len, hexout);
	return 0;
}

int lb_scmp_cache_key(const char *profile, size_t len, uint64_t caps, char key[LB_SCMP_KEY_MAX],
		      struct lb_err **err)
{
	const struct scmp_version *v = seccomp_version();
	char digest[65];

	if (profile_sha256(profile, len, digest, err) < 0)
		return -1;
	/* everything else the compiled program depends on, in clear */
	snprintf(key, LB_SCMP_KEY_MAX, "%s-%s-caps%016llx-arch%08x-libseccomp%u.%u.%u", digest,
		 LB_SCMP_COMPILER_TAG, (unsigned long long)caps, seccomp_arch_native(),
		 v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0);
	return 0;
}

/* Only a regular file of ours that nobody else can write may become a seccomp filter. */
static int read_trusted(const char *path, char **out, size_t *size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -1;
	if (st.st_size <= 0 || (size_t)st.st_size > BPF_MAXINSNS * sizeof(struct sock_filter))
		return -1;
	_cleanup_free_ char *buf = malloc((size_t)st.st_size);
	if (!buf || lb_read_all(fd, buf, (size_t)st.st_size) != st.st_size)
		return -1;
	*size = (size_t)st.st_size;
	*out = LB_TAKE_PTR(buf);
	return 0;
}

int lb_scmp_cache_load(const char *dir, const char *key, struct lb_seccomp_prog **out)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	_cleanup_err_ struct lb_err *e = NULL;
	size_t size;

	if (asprintf(&path, "%s/%s.bpf", dir, key) < 0) {
		path = NULL;
		return -1;
	}
	if (read_trusted(path, &buf, &size) < 0)
		return -1;
	if (lb_scmp_prog_from_bytes(buf, size, out, &e) < 0)
		return -1;
	(*out)->from_cache = 1;
	return 0;
}

void lb_scmp_cache_store(const char *dir, const char *key, const struct lb_seccomp_prog *prog)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_err_ struct lb_err *e = NULL;

	if (asprintf(&path, "%s/%s.bpf", dir, key) < 0) {
		path = NULL;
		return;
	}
	if (lb_mkdir_p(dir, 0700, &e) < 0)
		return;
	/* Errors (read-only or full file system, a racing writer) only cost the next run
	 * a recompilation. */
	(void)lb_write_file_atomic(path, prog->filter, prog->len * sizeof(struct sock_filter), 0600,
				   &e);
}
