// Bad input: every refusal is exit 125 with exactly one "lbbox: " line and leaves nothing
// behind; a missing command is 127, a non-executable one 126.
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

LBT_SUITE(errors);

static void expect_refusal(const char *what, const char *const *opts)
{
	const char *args[32] = {"run"};
	int n = 1;
	struct lb_run_out o;

	for (; *opts; opts++)
		args[n++] = *opts;
	args[n++] = "--";
	args[n++] = "true";
	args[n] = NULL;
	lbt_runv(&o, args);
	lbt_assert_error_line(&o, 125, what);
	lbt_out_free(&o);
}

#define REFUSED(name, what, ...)                                                                   \
	LBT_TEST(errors, name)                                                                     \
	{                                                                                          \
		static const char *const opts[] = {__VA_ARGS__, NULL};                             \
		expect_refusal(what, opts);                                                        \
	}

REFUSED(unknown_flag, NULL, "--no-such-flag")
REFUSED(missing_image, NULL, "--pull", "never", "--image", "nosuch") /* no registry outside */
REFUSED(nonexistent_rootfs, NULL, "--rootfs", "/nonexistent/lbbox-rootfs")
REFUSED(nonexistent_host_path, NULL, "-v", "/nonexistent/lbbox-vol:/data")
REFUSED(memory_too_small, NULL, "--memory", "16m")
REFUSED(memory_garbage, NULL, "--memory", "lots")
REFUSED(pids_zero, NULL, "--pids", "0")
REFUSED(cpus_garbage, NULL, "--cpus", "fast")
REFUSED(cpuset_reversed, "cpuset cpus '1-0'", "--cpuset-cpus", "1-0")
REFUSED(cpuset_beyond_host, "not within", "--cpuset-cpus", "0-4095")
REFUSED(cpuset_detached, "not with -d", "-d", "--cpuset-cpus", "0")
REFUSED(network_unknown_mode, NULL, "--network", "bogus")
REFUSED(missing_seccomp_profile, NULL, "--seccomp", "/nonexistent/profile.json")
REFUSED(seccomp_profile_is_a_directory, NULL, "--seccomp", "/tmp")
REFUSED(unknown_capability, NULL, "--cap-add", "NOT_A_CAP")
REFUSED(unknown_ulimit, NULL, "--ulimit", "bogus=1")
REFUSED(read_only_bad_value, NULL, "--read-only=maybe")
REFUSED(volume_relative_sandbox_path, NULL, "-v", "/tmp:relative")
REFUSED(volume_bad_mode, NULL, "-v", "/tmp:/data:rx")

LBT_TEST(errors, invalid_seccomp_profile)
{
	char *path = lbt_strdupf("%s/bad.json", lbt_workdir());
	const char *opts[] = {"--seccomp", path, NULL};

	lbt_write_file(path, "{ this is not json");
	expect_refusal(NULL, opts);
	free(path);
}

LBT_TEST(errors, no_command)
{
	struct lb_run_out o;

	lbt_run(&o, "run", NULL);
	lbt_assert_error_line(&o, 125, NULL);
	lbt_out_free(&o);
}

static void expect_blocked(const char *host_path)
{
	char *vol = lbt_strdupf("%s:/data:ro", host_path);
	const char *opts[] = {"-v", vol, NULL};

	expect_refusal("is blocked for security", opts);
	free(vol);
}

LBT_TEST(errors, blocked_host_paths)
{
	static const char *const blocked[] = {
	    "/etc", "/etc/hostname", "/proc",	   "/sys",	     "/dev",	   "/root", "/boot",
	    "/run", "/var/run",	     "/proc/self", "/sys/fs/cgroup", "/run/lbbox", NULL};

	for (int i = 0; blocked[i]; i++)
		if (access(blocked[i], F_OK) == 0)
			expect_blocked(blocked[i]);
}

LBT_TEST(errors, blocked_root_filesystem)
{
	expect_blocked("/");
}

LBT_TEST(errors, blocked_via_symlink)
{
	char *link = lbt_strdupf("%s/innocent", lbt_workdir());

	cr_assert_eq(symlink("/etc", link), 0);
	expect_blocked(link);
	free(link);
}

LBT_TEST(errors, blocked_docker_socket)
{
	char *dir = lbt_mkdir_work("fake-docker");
	char *sock = lbt_strdupf("%s/docker.sock", dir);

	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	// A docker socket anywhere is refused, not only /var/run/docker.sock.
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind %s", sock);
	expect_blocked(sock);
	close(fd);
	free(sock);
	free(dir);
}

LBT_TEST(errors, command_not_found)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--", "lbbox-no-such-command", NULL);
	lbt_assert_error_line(&o, 127, "lbbox-no-such-command");
	lbt_out_free(&o);
}

LBT_TEST(errors, command_not_found_in_rootfs)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--", "/bin/lbbox-no-such-command", NULL);
	lbt_assert_error_line(&o, 127, "lbbox-no-such-command");
	lbt_out_free(&o);
}

LBT_TEST(errors, command_not_executable)
{
	struct lb_run_out o;
	char *dir = lbt_mkdir_work("noexec");
	char *file = lbt_strdupf("%s/script", dir);
	char *vol = lbt_strdupf("%s:/data:ro", dir);

	lbt_write_file(file, "#!/bin/sh\necho should not run\n");
	chmod(file, 0644);
	lbt_run(&o, "run", "-v", vol, "--", "/data/script", NULL);
	lbt_assert_error_line(&o, 126, "/data/script");
	free(vol);
	free(file);
	free(dir);
	lbt_out_free(&o);
}

LBT_TEST(errors, missing_workdir_is_created_inside_only)
{
	struct lb_run_out o;
	char *leak = lbt_strdupf("%s/lbbox-new-workdir", lbt_rootfs());

	// Like docker: a missing workdir is created, but never in the host's rootfs dir.
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "-w", "/lbbox-new-workdir/sub", "--", "pwd",
		NULL);
	cr_assert_neq(access(leak, F_OK), 0, "lbbox created %s on the host", leak);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "/lbbox-new-workdir/sub\n");
	free(leak);
	lbt_out_free(&o);
}

// lbbox alone, without the helpers it runs from beside itself: each verb that needs one says
// which, in one line, exit 125 (an installation that forgot one).
LBT_TEST(errors, a_missing_helper_is_one_line)
{
	char *dir = lbt_mkdir_work("lonely");
	char *cmd = lbt_strdupf("cp %s %s/lbbox", lbt_bin(), dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	static const char *const verbs[][2] = {{"load -i /dev/null", "lbbox-image"},
					       {"serve --listen 127.0.0.1:1", "lbbox-server"}};
	for (size_t i = 0; i < 2; i++) {
		cmd = lbt_strdupf("%s/lbbox --root %s --runroot %s %s 2>&1; echo \"exit $?\"", dir,
				  lbt_root(), lbt_runroot(), verbs[i][0]);
		FILE *f = popen(cmd, "r");
		char out[4096] = "";
		size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
		out[n] = '\0';
		if (f)
			pclose(f);
		char *want = lbt_strdupf("%s must be installed beside lbbox", verbs[i][1]);
		cr_assert(strstr(out, want) && strstr(out, "exit 125") && lbt_count_lines(out) == 2,
			  "%s: %s", verbs[i][0], out);
		free(want), free(cmd);
	}
	free(dir);
}
