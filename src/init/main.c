/*
 * lbbox-init: what a session's pid 1 becomes once its sandbox is built. lbbox sets the sandbox
 * up as a copy of itself, then executes this program so an idle session costs a few pages, not
 * a copy of lbbox's heap and libraries: it reaps whatever is reparented to it and ends the
 * sandbox on SIGTERM, SIGINT or SIGHUP from outside the sandbox. Linked statically: it runs inside
 * the sandbox's root.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	sigset_t set;
	sigfillset(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	/* exec made it dumpable again: keep /proc/1 closed to the sandbox */
	prctl(PR_SET_DUMPABLE, 0);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		/* only from outside the sandbox (si_pid 0 there): `kill 1` inside ends nothing */
		if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && si.si_pid == 0)
			_exit(0);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}
