/* Processes: the failure report of forked children, and start times that tell a pid's process
 * from a later one reusing the pid. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/process.h"
#include "lbbox/base/util.h"

void lb_child_fail(int fd, int code, const struct lb_err *e)
{
	struct lb_child_msg msg = {.exit_code = code};
	snprintf(msg.msg, sizeof(msg.msg), "%s", e && e->msg ? e->msg : "sandbox setup failed");
	if (fd >= 0)
		(void)!write(fd, &msg, sizeof(msg));
	_exit(code);
}

int lb_child_read_fail(int fd, struct lb_child_msg *msg, const char *fallback)
{
	ssize_t n = lb_read_all(fd, msg, sizeof(*msg));
	if (n <= 0)
		return 0;
	if (n != (ssize_t)sizeof(*msg)) {
		msg->exit_code = LB_EXIT_SETUP;
		snprintf(msg->msg, sizeof(msg->msg), "%s", fallback);
	}
	msg->msg[sizeof(msg->msg) - 1] = '\0';
	return 1;
}

uint64_t lb_proc_starttime(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long start = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* field 22, counted after "(comm)" which may itself hold spaces; a zombie is gone already
	 */
	char *p = strrchr(buf, ')');
	if (p && (p[2] == 'Z' || p[2] == 'X'))
		return 0;
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1)
		return 0;
	return start;
}
