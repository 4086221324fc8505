/*
 * One loop for "wait until a process ends or a deadline passes, serving other descriptors
 * meanwhile": lbbox waiting for a sandbox's pid 1 (forwarding signals) and for an exec's command
 * (draining its output) both are this.
 */
#include <errno.h>
#include <poll.h>

#include "lbbox/base/util.h"

bool lb_wait_exit(int pidfd, struct pollfd *fds, size_t n, uint64_t deadline,
		  void (*on_ready)(void *ctx, struct pollfd *fd), void *ctx)
{
	struct pollfd all[1 + LB_WAIT_MAX_FDS];
	if (n > LB_WAIT_MAX_FDS)
		n = LB_WAIT_MAX_FDS;
	for (;;) {
		int timeout = lb_poll_timeout(deadline);
		if (timeout == -2)
			return false;
		all[0] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		for (size_t i = 0; i < n; i++)
			all[i + 1] = (struct pollfd){
			    .fd = fds[i].fd, .events = fds[i].events ? fds[i].events : POLLIN};
		if (poll(all, n + 1, timeout) < 0 && errno != EINTR)
			return false;
		for (size_t i = 0; i < n; i++) {
			if (!all[i + 1].revents)
				continue;
			/* may change fds[i].fd (-1: poll skips it next) and .events */
			fds[i].revents = all[i + 1].revents;
			on_ready(ctx, &fds[i]);
		}
		if (all[0].revents)
			return true;
	}
}

int lb_poll_timeout(uint64_t deadline)
{
	if (!deadline)
		return -1;
	uint64_t now = lb_now_ns();
	if (now >= deadline)
		return -2;
	uint64_t ms = (deadline - now) / 1000000 + 1;
	return ms > 60000 ? 60000 : (int)ms;
}
