/*
 * A session's pid 1 once the sandbox is built, in lbbox-init and in lbbox's own pid 1 when
 * lbbox-init is missing: reap whatever is reparented to it, and end on SIGTERM, SIGINT or SIGHUP
 * sent from outside the sandbox only, so `kill 1` in an exec ends nothing. A kill() from an
 * ancestor pid namespace arrives as SI_USER with si_pid 0 (the sender has no pid here); one from
 * inside carries the sender's pid, and rt_sigqueueinfo can forge si_pid 0 but not SI_USER: the
 * kernel refuses a non-negative si_code from another process.
 */
#ifndef LBBOX_INIT_IDLE_H
#define LBBOX_INIT_IDLE_H

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noreturn)) static inline void lb_pid1_idle(void)
{
	sigset_t set;
	sigfillset(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && si.si_code == SI_USER &&
		    si.si_pid == 0)
			_exit(0);
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

#endif
