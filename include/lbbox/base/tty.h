/*
 * A terminal for lbbox's own users (run -t, session exec -t): the sandbox opens a pty on its own
 * devpts and sends the master over a socket pair (the console socket's protocol, console.h);
 * the caller relays it to its stdin and stdout and follows its terminal's window size.
 */
#ifndef LBBOX_TTY_H
#define LBBOX_TTY_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>

#include "lbbox/base/err.h"

#define LB_TTY_NFDS 4 /* the master (the socket until it came), stdin, signals, stdout */

struct lb_tty {
	int sock;	/* ours: the master arrives here */
	int child_sock; /* the sandbox's end (pid 1's or an exec's console socket) */
	int master;	/* -1 until it came; non-blocking */
	bool master_done;
	int in;		    /* the caller's stdin (-1: not read, as without -i) */
	int out, out_flags; /* lb_tty_stdout_open's (-1: gone) */
	int size_fd;	    /* the caller's terminal whose window size is followed; -1: none */
	bool has_size;
	struct winsize size; /* its size when opened: the pty starts with it */
	bool resized;	     /* SIGWINCH before the master came: its size is set on arrival */
	bool want_raw, raw;  /* raw mode of stdin (a terminal, with -i) while attached */
	struct termios saved;
	int sigfd; /* lb_tty_catch_signals; -1 */
	sigset_t oldmask;
	struct sigaction oldpipe; /* SIGPIPE is ignored while the relay is open */
	bool pipe_set;
	pid_t target; /* where caught signals go (not SIGWINCH) */
	/* lbbox had SIGINT, SIGTERM, SIGHUP or SIGQUIT: its command's output is not waited for */
	bool signalled;
	char buf[4096];
	size_t len, off; /* of buf, stdin's bytes still to be written to the master */
	char obuf[65536];
	size_t olen, ooff; /* of obuf, the master's bytes still to be written to out */
	struct pollfd pfd[LB_TTY_NFDS];
};

/* The socket pair and the caller's window size; interactive: stdin is relayed (and put in raw
 * mode once the master came, when it is a terminal). Nothing of the terminal changes yet. */
int lb_tty_open(struct lb_tty *t, bool interactive, struct lb_err **err);
/* The pty's starting size (NULL when the caller has no terminal). */
const struct winsize *lb_tty_size(const struct lb_tty *t);
/* For a caller with no signal handling of its own (an exec): SIGINT, SIGTERM, SIGHUP, SIGQUIT
 * go to pid, SIGWINCH resizes the pty, until lb_tty_close. */
int lb_tty_catch_signals(struct lb_tty *t, pid_t pid, struct lb_err **err);
/* lb_wait_exit's callback for t->pfd (LB_TTY_NFDS of them); ctx is t. */
void lb_tty_on_ready(void *ctx, struct pollfd *fd);
/* A signal the caller took: SIGWINCH resizes the pty (true: taken); others are not its. ctx is
 * the lb_tty (lb_run_io's on_signal). */
bool lb_tty_on_signal(void *ctx, int sig);
/* The command ended: what is left in the pty goes to stdout, and the terminal is restored.
 * wait: it ended by itself, so its output is owed in full even to a slow reader (until a
 * signal comes); else (timed out, killed) only what stdout takes at once. */
void lb_tty_finish(struct lb_tty *t, bool wait);
/* Restores the terminal and the signal mask, closes everything. Idempotent. */
void lb_tty_close(struct lb_tty *t);

/* The caller's stdout, non-blocking, for a relay that must never wait on its reader: a
 * descriptor of its own when it can (the user's open file is left as it is), else fd 1 with
 * O_NONBLOCK set and its flags in *flags; -1: no stdout. Undone by lb_tty_stdout_close. */
int lb_tty_stdout_open(int *flags);
void lb_tty_stdout_close(int fd, int flags);

#endif
