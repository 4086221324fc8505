/*
 * Fuzz target: the OCI/Docker seccomp profile parser (src/sandbox/seccomp_profile.c), as
 * `--seccomp FILE` feeds it, and libseccomp's compilation of what it accepts. Nothing is
 * installed: the target only builds the BPF program.
 *
 * Properties checked besides the sanitizers: a profile that parses for the sandbox's default
 * capabilities (uid 0) has its rules sorted most restrictive first, as the compiler relies on;
 * when it compiles, the program is non-empty and passes the BPF cache's own checks.
 */
#include <linux/filter.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lbbox/sandbox/spec.h"
#include "sandbox/seccomp_internal.h"

static void check_sorted(const struct lb_scmp_profile *p)
{
	for (size_t i = 1; i < p->n_rules; i++)
		FUZZ_CHECK((int32_t)(p->rules[i - 1].action & 0xffff0000u) <=
			       (int32_t)(p->rules[i].action & 0xffff0000u),
			   "rules %zu and %zu out of order", i - 1, i);
}

static void parse_and_compile(const char *buf, size_t len, uint64_t caps, bool compile)
{
	struct lb_scmp_profile *p = NULL;
	struct lb_seccomp_prog *prog = NULL, *copy = NULL;
	struct lb_err *err = NULL;

	if (lb_scmp_profile_parse("fuzz.json", buf, len, caps, &p, &err) < 0) {
		FUZZ_CHECK(err && err->msg, "a refused profile without an error");
		lb_err_free(&err);
		return;
	}
	check_sorted(p);
	if (compile && lb_scmp_compile(p, "fuzz.json", &prog, &err) == 0) {
		FUZZ_CHECK(prog->filter && prog->len > 0, "an empty program");
		FUZZ_CHECK(lb_scmp_prog_from_bytes(prog->filter, prog->len * sizeof(*prog->filter),
						   &copy, &err) == 0,
			   "the cache would refuse the compiled program: %s", err ? err->msg : "?");
		lb_seccomp_prog_free(copy);
		lb_seccomp_prog_free(prog);
	}
	lb_err_free(&err);
	lb_scmp_profile_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* as lb_seccomp_prepare reads a profile file: bounded, handed over with its length */
	if (size > LB_SCMP_PROFILE_MAX)
		return 0;
	parse_and_compile((const char *)data, size, lb_default_caps(), true);
	/* a sandbox user other than root keeps no capabilities: other includes/excludes apply */
	parse_and_compile((const char *)data, size, 0, false);
	/* the BPF cache's loader on arbitrary bytes (a corrupt cache file) */
	struct lb_seccomp_prog *prog = NULL;
	struct lb_err *err = NULL;
	if (lb_scmp_prog_from_bytes(data, size, &prog, &err) == 0)
		lb_seccomp_prog_free(prog);
	lb_err_free(&err);
	return 0;
}
