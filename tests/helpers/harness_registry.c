// The test registry (tests/registry/registry.py) serving an OCI layout on 127.0.0.1, for the
// suites that pull: started once per test, gone with the test process (even when an assertion
// ends the test early).
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

pid_t lbt_registry_start(const char *layout, int *port)
{
	char *ready = lbt_strdupf("%s/ready", lbt_workdir());
	char *log = lbt_strdupf("%s/registry.log", lbt_workdir());
	char *script = lbt_strdupf("%s/tests/registry/registry.py", LBBOX_SOURCE_DIR);
	unlink(ready);
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("python3", "python3", script, "serve", "--layout", layout, "--ready", ready,
		       "--log", log, (char *)NULL);
		_exit(127);
	}
	FILE *f = NULL;
	for (int i = 0; i < 200 && !(f = fopen(ready, "re")); i++)
		usleep(50000);
	cr_assert_not_null(f, "registry did not start");
	cr_assert_eq(fscanf(f, "%d", port), 1);
	fclose(f);
	free(ready), free(log), free(script);
	return pid;
}
