/*
 * Shared by the libFuzzer targets (tests/fuzz/fuzz_*.c, run by scripts/fuzz.sh): a property check
 * that crashes the run (so libFuzzer saves the input), and the scratch directory of the targets
 * that touch the file system.
 */
#ifndef LBBOX_FUZZ_COMMON_H
#define LBBOX_FUZZ_COMMON_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "lbbox/base/err.h"
#include "lbbox/base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A broken property is a finding like a sanitizer report: abort, and libFuzzer keeps the input. */
static inline __attribute__((format(printf, 1, 2), noreturn)) void fuzz_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("fuzz: property violated: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fuzz_fail(__VA_ARGS__);                                                    \
	} while (0)

/* The harness itself failing (not the code under test): stop without an artifact. */
static inline __attribute__((noreturn)) void fuzz_setup_fail(const char *what)
{
	fprintf(stderr, "fuzz: setup: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* The input as a NUL-terminated string (parsers of C strings stop at the first NUL anyway). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		fuzz_setup_fail("malloc");
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static char fuzz_scratch_path[4096];

static void fuzz_scratch_remove(void)
{
	struct lb_err *err = NULL;
	umount2(fuzz_scratch_path, MNT_DETACH);
	lb_rm_rf(fuzz_scratch_path, &err);
	lb_err_free(&err);
}

/*
 * A scratch directory for one fuzz process, under $TMPDIR. As root it is a private tmpfs (nodev,
 * nosuid, 1 GiB) in a mount namespace of this process's own: the device nodes and setuid files
 * an input may unpack are inert there, a full scratch cannot fill the host's disk, and whatever a
 * crash leaves behind vanishes with the process. Without root, a plain directory.
 */
static inline const char *fuzz_scratch(const char *name)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(fuzz_scratch_path, sizeof(fuzz_scratch_path), "%s/lbbox-%s-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp", name);
	if (!mkdtemp(fuzz_scratch_path))
		fuzz_setup_fail("mkdtemp");
	if (geteuid() == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("lbbox-fuzz", fuzz_scratch_path, "tmpfs", MS_NODEV | MS_NOSUID,
			  "size=1g,mode=0700") < 0)
			fuzz_setup_fail("private tmpfs");
	}
	atexit(fuzz_scratch_remove);
	return fuzz_scratch_path;
}

#endif
