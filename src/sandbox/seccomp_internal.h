/* Shared between the seccomp profile parser, the libseccomp compiler and the BPF cache. */
#ifndef LBBOX_SECCOMP_INTERNAL_H
#define LBBOX_SECCOMP_INTERNAL_H

#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/seccomp.h"

/* Profiles larger than this are refused: the default one is ~15 KiB. */
#define LB_SCMP_PROFILE_MAX (4u << 20)
/* Native arch plus its compat arches (x86_64 + x86 + x32 ...). */
#define LB_SCMP_MAX_ARCHES 4
/* Bumped whenever the compiler's output for the same profile changes, to invalidate caches. */
#define LB_SCMP_COMPILER_TAG "lbbox-seccomp-1"
#define LB_SCMP_KEY_MAX	     160

/* One syscall of one profile entry, after includes/excludes were evaluated. */
struct lb_scmp_rule {
	const char *name; /* points into the parsed JSON, owned by the profile */
	int nr;		  /* libseccomp's native (or pseudo) number */
	uint32_t action;
	unsigned int nargs;
	struct scmp_arg_cmp args[6];
	size_t entry; /* index in "syscalls", for error messages */
};

struct lb_scmp_profile {
	uint32_t default_action;
	uint32_t arches[LB_SCMP_MAX_ARCHES]; /* libseccomp tokens, native first */
	size_t n_arches;
	struct lb_scmp_rule *rules; /* sorted most restrictive action first */
	size_t n_rules;
	void *json; /* json_t root, keeps the rule names alive */
};

/* Whether the kernel runs x32 syscalls (profiles leave x32 out where it does not). */
bool lb_scmp_kernel_runs_x32(void);

/* Parses an OCI/Docker seccomp profile; source names it in error messages. */
int lb_scmp_profile_parse(const char *source, const char *buf, size_t len, uint64_t caps,
			  struct lb_scmp_profile **out, struct lb_err **err);
void lb_scmp_profile_free(struct lb_scmp_profile *p);

/* Compiles a parsed profile to classic BPF with libseccomp. */
int lb_scmp_compile(const struct lb_scmp_profile *p, const char *source,
		    struct lb_seccomp_prog **out, struct lb_err **err);

/* Checks a raw sock_filter array (size, jump targets, final return) and copies it into a prog. */
int lb_scmp_prog_from_bytes(const void *buf, size_t size, struct lb_seccomp_prog **out,
			    struct lb_err **err);

/* Hex sha256 over everything that determines the compiled program. */
int lb_scmp_cache_key(const char *profile, size_t len, uint64_t caps, char key[LB_SCMP_KEY_MAX],
		      struct lb_err **err);
/* Loads <dir>/<key>.bpf; returns < 0 (without an error value) on a miss or a bad file. */
int lb_scmp_cache_load(const char *dir, const char *key, struct lb_seccomp_prog **out);
/* Best effort: an unwritable cache never fails a run. */
void lb_scmp_cache_store(const char *dir, const char *key, const struct lb_seccomp_prog *prog);

#endif
