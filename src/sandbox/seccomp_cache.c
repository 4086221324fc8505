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

#include "lbbox/base/cleanup.h"
#include "lbbox/base/hash.h"
#include "lbbox/base/util.h"
#include "seccomp_internal.h"

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
	snprintf(key, LB_SCMP_KEY_MAX, "%s-%s-caps%016llx-arch%08x%s-libseccomp%u.%u.%u", digest,
		 LB_SCMP_COMPILER_TAG, (unsigned long long)caps, seccomp_arch_native(),
		 lb_scmp_kernel_runs_x32() ? "" : "-nox32", v ? v->major : 0, v ? v->minor : 0,
		 v ? v->micro : 0);
	return 0;
}

/*
 * A cached program is a filter every later sandbox installs, so it is trusted only as far as
 * its place is: the store is private to lbbox's user and no sandbox may mount it (paths.c). On
 * top of that, the directory and the file must be ours and closed to others, and the file
 * carries a checksum over its key and its program, which catches truncated, corrupted and
 * misplaced files (it is not a secret: it cannot stop a writer who can reach the file, which is
 * why nothing but lbbox may).
 */
#define CACHE_MAGIC "lbbpf01"

struct cache_header {
	char magic[8];
	uint64_t sum;
};

/* FNV-1a, 64 bits: cheap (no crypto library on the run path) and enough to catch damage. */
static uint64_t cache_sum(const char *key, const void *prog, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ ((const unsigned char *)prog)[i]) * 0x100000001b3ULL;
	return h;
}

static bool private_to_us(int fd, bool dir)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077))
		return false;
	return dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

static int read_trusted(const char *dir, const char *name, char **out, size_t *size)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || !private_to_us(dfd, true))
		return -1;
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || !private_to_us(fd, false) || fstat(fd, &st) < 0)
		return -1;
	if (st.st_size <= 0 || (size_t)st.st_size > sizeof(struct cache_header) +
							BPF_MAXINSNS * sizeof(struct sock_filter))
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
	_cleanup_free_ char *name = NULL, *buf = NULL;
	_cleanup_err_ struct lb_err *e = NULL;
	struct cache_header h;
	size_t size;

	if (asprintf(&name, "%s.bpf", key) < 0) {
		name = NULL;
		return -1;
	}
	if (read_trusted(dir, name, &buf, &size) < 0 || size <= sizeof(h))
		return -1;
	memcpy(&h, buf, sizeof(h));
	const char *prog = buf + sizeof(h);
	size -= sizeof(h);
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) || h.sum != cache_sum(key, prog, size))
		return -1;
	if (lb_scmp_prog_from_bytes(prog, size, out, &e) < 0)
		return -1;
	(*out)->from_cache = 1;
	return 0;
}

void lb_scmp_cache_store(const char *dir, const char *key, const struct lb_seccomp_prog *prog)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	_cleanup_err_ struct lb_err *e = NULL;
	size_t len = prog->len * sizeof(struct sock_filter);
	struct cache_header h = {.magic = CACHE_MAGIC, .sum = cache_sum(key, prog->filter, len)};

	if (asprintf(&path, "%s/%s.bpf", dir, key) < 0) {
		path = NULL;
		return;
	}
	if (lb_mkdir_p(dir, 0700, &e) < 0 || !(buf = malloc(sizeof(h) + len)))
		return;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), prog->filter, len);
	/* Errors (read-only or full file system, a racing writer) only cost the next run
	 * a recompilation. */
	(void)lb_write_file_atomic(path, buf, sizeof(h) + len, 0600, &e);
}
