/* lbbox --version / lbbox version: what a bug report needs first, lbbox's own version and commit
 * (fixed when the build was configured) and what it runs on: libseccomp and the kernel. */
#include <seccomp.h>
#include <stdio.h>
#include <sys/utsname.h>

#include "cli.h"

#ifndef LBBOX_VERSION
#define LBBOX_VERSION "unknown"
#endif
#ifndef LBBOX_COMMIT
#define LBBOX_COMMIT "unknown"
#endif

const char *cli_version_string(void)
{
	return LBBOX_VERSION " (" LBBOX_COMMIT ")";
}

int cli_version(void)
{
	const struct scmp_version *sv = seccomp_version();
	struct utsname u;
	printf("lbbox version %s\n", LBBOX_VERSION);
	printf("commit:     %s\n", LBBOX_COMMIT);
	if (sv)
		printf("libseccomp: %u.%u.%u\n", sv->major, sv->minor, sv->micro);
	else
		printf("libseccomp: unknown\n");
	printf("kernel:     %s\n", uname(&u) == 0 ? u.release : "unknown");
	return 0;
}
