/*
 * lbbox-init: what a session's pid 1 becomes once its sandbox is built. lbbox sets the sandbox
 * up as a copy of itself, then executes this program so an idle session costs a few pages, not
 * a copy of lbbox's heap and libraries: it reaps whatever is reparented to it and ends the
 * sandbox on SIGTERM, SIGINT or SIGHUP from outside the sandbox. Linked statically: it runs inside
 * the sandbox's root.
 */
#include <sys/prctl.h>

#include "idle.h"

int main(void)
{
	/* exec made it dumpable again: keep /proc/1 closed to the sandbox */
	prctl(PR_SET_DUMPABLE, 0);
	lb_pid1_idle();
}
