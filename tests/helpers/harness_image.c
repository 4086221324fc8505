// OCI image layouts of the busybox test rootfs (rootfs-tools/oci-layout.sh), for the suites that
// load, run, save or pull images, and loading them into the test store.
#include "harness.h"

#include <stdlib.h>

char *lbt_oci_layout(const char *user, const char *name, const char *cmd)
{
	char *dir = lbt_strdupf("%s/layout-%d", lbt_workdir(), rand());
	char *opt = user ? lbt_strdupf("--user '%s' ", user) : lbt_strdupf("%s", "");
	char *sh = lbt_strdupf("%s/rootfs-tools/oci-layout.sh %s'%s' '%s' '%s' %s",
			       LBBOX_SOURCE_DIR, opt, lbt_rootfs(), dir, name, cmd ? cmd : "");
	cr_assert_eq(system(sh), 0, "%s failed", sh);
	free(sh);
	free(opt);
	return dir;
}

void lbt_load_layout(const char *layout)
{
	struct lb_run_out o;
	lbt_run(&o, "load", "--oci-dir", layout, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}
