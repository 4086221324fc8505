/* Running lbbox-image, the helper that holds the image code needing libarchive and libcurl:
 * lbbox and lbbox-server link only the light part of the image code (store, manifests). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/image/store.h"
#include "lbbox/base/util.h"

/* Next to the lbbox binary (build/ or the install's bin/), or $LBBOX_IMAGE_TOOL. */
static int tool_path(char *out, size_t len, struct lb_err **err)
{
	const char *env = getenv("LBBOX_IMAGE_TOOL");
	char self[PATH_MAX];
	if (env && *env) {
		snprintf(out, len, "%s", env);
		return 0;
	}
	if (lb_self_dir(self, sizeof(self), err) < 0)
		return lb_err_wrap(err, "find lbbox-image");
	snprintf(out, len, "%s/lbbox-image", self);
	if (access(out, X_OK) < 0)
		return lb_err_set(err, 0,
				  "the image helper %s is missing (%s): lbbox-image must be "
				  "installed beside lbbox",
				  out, strerror(errno));
	return 0;
}

static void child_exec(const char *path, const char *root, const char *const *args, int errfd)
{
	const char *argv[64] = {"lbbox-image", root};
	size_t n = 2;
	for (; args[n - 2] && n < 63; n++)
		argv[n] = args[n - 2];
	argv[n] = NULL;
	if (errfd >= 0)
		dup2(errfd, STDERR_FILENO);
	execv(path, (char *const *)argv);
	dprintf(STDERR_FILENO, "lbbox: exec %s: %s\n", path, strerror(errno));
	_exit(125);
}

/* Its one "lbbox: ..." line becomes our error, so the user still sees exactly one line. */
static void read_message(int fd, char *buf, size_t len)
{
	ssize_t n = lb_read_all(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (strncmp(buf, "lbbox: ", 7) == 0)
		memmove(buf, buf + 7, strlen(buf + 7) + 1);
}

int lb_image_tool(const char *root, const char *const *args, bool capture_err, struct lb_err **err)
{
	char path[PATH_MAX], msg[1024] = "";
	int pipefd[2] = {-1, -1}, status = 0;

	if (tool_path(path, sizeof(path), err) < 0)
		return -1;
	if (capture_err && pipe2(pipefd, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	pid_t pid = fork();
	if (pid == 0)
		child_exec(path, root, args, pipefd[1]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	_cleanup_close_ int rfd = pipefd[0];
	if (pid < 0)
		return lb_err_set(err, errno, "fork");
	if (capture_err)
		read_message(rfd, msg, sizeof(msg));
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 125;
	if (!capture_err || code == 0)
		return code;
	return lb_err_set(err, 0, "%s", *msg ? msg : "lbbox-image failed");
}
