/* Seccomp profiles in the OCI/Docker JSON format, compiled with libseccomp and cached as BPF. */
#ifndef LBBOX_SECCOMP_H
#define LBBOX_SECCOMP_H

#include <stddef.h>
#include <stdint.h>

#include "lbbox/base/err.h"

struct sock_filter;

/* A compiled classic-BPF program ready for seccomp(SECCOMP_SET_MODE_FILTER). */
struct lb_seccomp_prog {
	struct sock_filter *filter;
	unsigned short len; /* number of instructions */
	int from_cache;	    /* 1 when loaded from the BPF cache without libseccomp */
};

/*
 * Reads the profile (profile_path NULL = the embedded seccomp/default.json), evaluates its
 * includes/excludes against caps (a bitmask of CAP_* numbers the sandbox keeps) and the native
 * architecture, and compiles it. When cache_dir is non-NULL the BPF is cached there under the
 * sha256 of (profile bytes, caps, arch, libseccomp version), so a repeated run skips libseccomp.
 */
int lb_seccomp_prepare(const char *profile_path, uint64_t caps, const char *cache_dir,
		       struct lb_seccomp_prog **out, struct lb_err **err);
/* Installs the program on the calling thread; PR_SET_NO_NEW_PRIVS must already be set. */
int lb_seccomp_install(const struct lb_seccomp_prog *prog, struct lb_err **err);
void lb_seccomp_prog_free(struct lb_seccomp_prog *prog);

/* The embedded default profile (seccomp/default.json), for tools and tests. */
extern const char lb_seccomp_default_json[];
extern const size_t lb_seccomp_default_json_len;
/* Its sha256 in hex, computed at build time: the cache key needs no hashing at run time. */
extern const char lb_seccomp_default_json_sha256[];

#endif
