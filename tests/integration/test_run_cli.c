/* lbbox run as a podman user types it: IMAGE [CMD...], --entrypoint, --user NAME[:GROUP],
 * --pull, -e/--env-file, relative -v with options, --mount bind|tmpfs, --rm, --read-only, and
 * errors that name the exact token. */
#include "harness.h"
#include "harness_net.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMG "localhost/lbt-cli:1"

LBT_SUITE(run_cli);

/* The busybox test rootfs as IMG (CMD: echo from-cmd), loaded into the test store. */
static void load_image(const char *name)
{
	char *dir = lbt_oci_layout(NULL, name, "/bin/echo from-cmd");
	lbt_load_layout(dir);
	free(dir);
}

/* lbbox ARGS... must fail with exit 125 and one line on stderr containing want. */
static void assert_refused(const char *want, const char *const *args)
{
	struct lb_run_out o;
	lbt_runv(&o, args);
	LBT_ASSERT_EXIT(o, 125);
	cr_assert(strstr(o.err, want), "expected '%s' in: %s", want, o.err);
	cr_assert_eq(lbt_count_lines(o.err), 1, "not one line: %s", o.err);
	lbt_out_free(&o);
}

static void assert_output(const char *want, const char *const *args)
{
	struct lb_run_out o;
	lbt_runv(&o, args);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_eq(o.out, want);
	lbt_out_free(&o);
}

LBT_TEST(run_cli, image_then_command_as_podman_takes_them)
{
	load_image(IMG);
	assert_output("hi\n", (const char *[]){"run", IMG, "echo", "hi", NULL});
	assert_output("from-cmd\n", (const char *[]){"run", IMG, NULL});
	assert_output("x\n", (const char *[]){"run", IMG, "--", "echo", "x", NULL});
	/* lbbox's own forms stay: --image, --rootfs, and "-- CMD" on the host image */
	assert_output("y\n", (const char *[]){"run", "--image", IMG, "echo", "y", NULL});
	assert_output("z\n", (const char *[]){"run", "--rootfs", lbt_rootfs(), "echo", "z", NULL});
	assert_output("host\n", (const char *[]){"run", "--", "echo", "host", NULL});
	/* a command after the image is the command, even when it looks like an option */
	assert_output("--memory\n", (const char *[]){"run", IMG, "echo", "--memory", NULL});
}

LBT_TEST(run_cli, entrypoint_replaces_the_image_command)
{
	load_image(IMG);
	assert_output("bypassed\n",
		      (const char *[]){"run", "--entrypoint", "/bin/echo", IMG, "bypassed", NULL});
	/* the image's CMD goes with its ENTRYPOINT, as podman */
	assert_output("\n", (const char *[]){"run", "--entrypoint", "/bin/echo", IMG, NULL});
	assert_output("a b c\n", (const char *[]){"run", "--entrypoint", "[\"/bin/echo\",\"a\"]",
						  IMG, "b", "c", NULL});
	assert_output("given\n",
		      (const char *[]){"run", "--entrypoint", "", IMG, "echo", "given", NULL});
	assert_output("on-host\n",
		      (const char *[]){"run", "--entrypoint", "echo", "--", "on-host", NULL});
	assert_refused("no command", (const char *[]){"run", "--entrypoint", "", IMG, NULL});
	assert_refused("invalid --entrypoint",
		       (const char *[]){"run", "--entrypoint", "[\"a\",1]", IMG, NULL});
}

LBT_TEST(run_cli, user_names_come_from_the_image)
{
	load_image(IMG);
	assert_output("65534 65534\n", (const char *[]){"run", "-u", "nobody", IMG, "sh", "-c",
							"echo $(id -u) $(id -g)", NULL});
	assert_output("65534 0\n", (const char *[]){"run", "--user", "nobody:root", IMG, "sh", "-c",
						    "echo $(id -u) $(id -g)", NULL});
	assert_output("65534 0\n", (const char *[]){"run", "--user", "nobody:0", IMG, "sh", "-c",
						    "echo $(id -u) $(id -g)", NULL});
	assert_output("123 45\n", (const char *[]){"run", "--user", "123:45", IMG, "sh", "-c",
						   "echo $(id -u) $(id -g)", NULL});
	assert_refused("lbt-no-such-user",
		       (const char *[]){"run", "--user", "lbt-no-such-user", IMG, "true", NULL});
	assert_refused("4294967296",
		       (const char *[]){"run", "--user", "4294967296", IMG, "true", NULL});
}

LBT_TEST(run_cli, pull_missing_always_never)
{
	char *layout = lbt_oci_layout(NULL, "latest", "/bin/echo pulled");
	int port = 0;
	pid_t reg = lbt_registry_start(layout, &port);
	char *ref = lbt_strdupf("127.0.0.1:%d/lbt/cli:latest", port);

	/* never: not in the store, and the error says how to get it */
	assert_refused("lbbox pull", (const char *[]){"run", "--pull", "never", ref, NULL});
	/* missing (the default): pulled, then run */
	assert_output("pulled\n", (const char *[]){"run", "--tls-verify=false", ref, NULL});
	assert_output("pulled\n", (const char *[]){"run", "--pull", "never", ref, NULL});
	/* always: goes to the registry even though the image is here */
	assert_output("pulled\n",
		      (const char *[]){"run", "--pull", "always", "--tls-verify=false", ref, NULL});
	kill(reg, SIGKILL);
	waitpid(reg, NULL, 0);
	assert_refused(
	    "pull", (const char *[]){"run", "--pull", "always", "--tls-verify=false", ref, NULL});
	/* missing: present, so the registry being gone does not matter */
	assert_output("pulled\n", (const char *[]){"run", "--tls-verify=false", ref, NULL});
	assert_refused("invalid --pull", (const char *[]){"run", "--pull", "newer", ref, NULL});
	free(ref);
	free(layout);
}

LBT_TEST(run_cli, environment_from_flags_and_files)
{
	char *file = lbt_strdupf("%s/env", lbt_workdir());
	lbt_write_file(file, "# a comment\n\nA=from-file\n  B=two words\nLBT_COPIED\nC=1\r\n");
	setenv("LBT_COPIED", "copied", 1);
	assert_output("from-file|two words|copied|1|flag\n",
		      (const char *[]){"run", "--rootfs", lbt_rootfs(), "--env-file", file, "-e",
				       "D=flag", "--", "sh", "-c",
				       "echo \"$A|$B|$LBT_COPIED|$C|$D\"", NULL});
	/* a later -e wins over the file's */
	assert_output("flag\n",
		      (const char *[]){"run", "--rootfs", lbt_rootfs(), "--env-file", file, "-e",
				       "A=flag", "--", "sh", "-c", "echo $A", NULL});
	unsetenv("LBT_COPIED");
	lbt_write_file(file, "OK=1\n=nope\n");
	assert_refused("line 2", (const char *[]){"run", "--rootfs", lbt_rootfs(), "--env-file",
						  file, "--", "true", NULL});
	assert_refused("--env-file", (const char *[]){"run", "--rootfs", lbt_rootfs(), "--env-file",
						      "/nonexistent/lbt-env", "--", "true", NULL});
	free(file);
}

LBT_TEST(run_cli, relative_volumes_options_and_mounts)
{
	char *old = getcwd(NULL, 0);
	char *dir = lbt_mkdir_work("vol");
	char *f = lbt_strdupf("%s/in", dir);
	lbt_write_file(f, "data\n");
	cr_assert_eq(chdir(lbt_workdir()), 0);
	const char *r = lbt_rootfs();
	assert_output("data\n", (const char *[]){"run", "--rootfs", r, "-v", "./vol:/d:ro,Z", "--",
						 "cat", "/d/in", NULL});
	assert_output("ro\n",
		      (const char *[]){"run", "--rootfs", r, "-v", "vol/:/d:z,ro", "--", "sh", "-c",
				       "touch /d/x 2>/dev/null || echo ro", NULL});
	assert_output("data\n", (const char *[]){"run", "--rootfs", r, "--mount",
						 "type=bind,src=./vol,dst=/m,ro", "--", "cat",
						 "/m/in", NULL});
	assert_output("ro\n", (const char *[]){"run", "--rootfs", r, "--mount",
					       "type=bind,src=./vol,dst=/m,ro", "--", "sh", "-c",
					       "touch /m/x 2>/dev/null || echo ro", NULL});
	/* a tmpfs: its size, its mode, writable, nothing of it on the host */
	assert_output("1024 1777 ok\n",
		      (const char *[]){"run", "--rootfs", r, "--mount",
				       "type=tmpfs,dst=/scratch,tmpfs-size=1m", "--", "sh", "-c",
				       "echo $(df -k /scratch | tail -1 | awk '{print $2}') "
				       "$(stat -c %a /scratch) $(touch /scratch/f && echo ok)",
				       NULL});
	assert_output("700\n", (const char *[]){"run", "--rootfs", r, "--mount",
						"type=tmpfs,destination=/s,tmpfs-mode=700", "--",
						"stat", "-c", "%a", "/s", NULL});
	assert_refused("named volumes",
		       (const char *[]){"run", "--rootfs", r, "-v", "vol:/d", "--", "true", NULL});
	assert_refused(
	    "unknown option 'exec'",
	    (const char *[]){"run", "--rootfs", r, "-v", "./vol:/d:exec", "--", "true", NULL});
	assert_refused("type volume",
		       (const char *[]){"run", "--rootfs", r, "--mount", "type=volume,src=x,dst=/d",
					"--", "true", NULL});
	assert_refused("dst", (const char *[]){"run", "--rootfs", r, "--mount", "type=tmpfs", "--",
					       "true", NULL});
	assert_refused("blocked",
		       (const char *[]){"run", "--rootfs", r, "--mount",
					"type=bind,src=/etc,dst=/e", "--", "true", NULL});
	cr_assert_eq(access(lbt_strdupf("%s/x", dir), F_OK), -1, "a read-only volume was written");
	cr_assert_eq(chdir(old), 0);
	free(old);
	free(f);
	free(dir);
}

LBT_TEST(run_cli, rm_and_read_only_as_podman_spells_them)
{
	const char *r = lbt_rootfs();
	assert_output("gone\n",
		      (const char *[]){"run", "--rm", "--rootfs", r, "--", "echo", "gone", NULL});
	assert_output("ro\n", (const char *[]){"run", "--read-only", "--rootfs", r, "--", "sh",
					       "-c", "touch /x 2>/dev/null || echo ro", NULL});
	assert_output("rw\n", (const char *[]){"run", "--read-only=false", "--rootfs", r, "--",
					       "sh", "-c", "touch /x && rm /x && echo rw", NULL});
}

LBT_TEST(run_cli, errors_name_the_exact_token)
{
	assert_refused("'-q' (in '-tq')", (const char *[]){"run", "-tq", IMG, "sh", NULL});
	assert_refused("'-x' (in '-ix')", (const char *[]){"run", "-ix", IMG, "sh", NULL});
	assert_refused("missing value for option '--memory'",
		       (const char *[]){"run", "--memory", NULL});
	assert_refused("unknown option '--lbt-bogus'",
		       (const char *[]){"run", "--lbt-bogus", IMG, NULL});
	/* -i is podman's: stdin reaches the command */
	struct lb_run_out o;
	lbt_run(&o, "run", "-i", "--rootfs", lbt_rootfs(), "--", "sh", "-c", "echo in", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}

// What the host refuses names the capability: CAP_SYS_RESOURCE is not in this machine's
// bounding set (where it is, the same requests succeed).
LBT_TEST(run_cli, host_refusals_name_the_capability)
{
	struct rlimit rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	bool has = prctl(PR_CAPBSET_READ, CAP_SYS_RESOURCE, 0, 0, 0) > 0;
	/* a value under lbbox's own hard limit, above the default 1024 */
	assert_output("2048\n",
		      (const char *[]){"run", "--ulimit", "nofile=2048", "--rootfs", lbt_rootfs(),
				       "--", "sh", "-c", "ulimit -n", NULL});
	if (rl.rlim_max == RLIM_INFINITY || has)
		return;
	char *above = lbt_strdupf("nofile=%llu", (unsigned long long)rl.rlim_max + 1);
	assert_refused("CAP_SYS_RESOURCE", (const char *[]){"run", "--ulimit", above, "--rootfs",
							    lbt_rootfs(), "--", "true", NULL});
	assert_refused("CAP_SYS_RESOURCE",
		       (const char *[]){"run", "--cap-add", "SYS_RESOURCE", "--rootfs",
					lbt_rootfs(), "--", "true", NULL});
	free(above);
}

// On a terminal (script gives lbbox a pty), the first run of an image says it unpacks; later
// runs, and runs without a terminal, do not.
LBT_TEST(run_cli, first_unpack_says_so_on_a_terminal)
{
	load_image(IMG);
	char *cmd = lbt_strdupf("script -qec '%s --root %s --runroot %s run %s true' /dev/null",
				lbt_bin(), lbt_root(), lbt_runroot(), IMG);
	char *out = lbt_sh_out(cmd);
	cr_assert(out && strstr(out, "unpacking " IMG), "first run: %s", out ?: "");
	free(out);
	out = lbt_sh_out(cmd);
	cr_assert(out && !strstr(out, "unpacking"), "second run: %s", out);
	free(out), free(cmd);
	assert_output("x\n", (const char *[]){"run", IMG, "echo", "x", NULL});
}

/* --device HOST[:CONTAINER][:PERMS] as podman: the node in /dev with the host's numbers, opened
 * as PERMS allow (the device fence: EPERM beyond them); bad forms refused with one line. */
LBT_TEST(run_cli, device_as_podman_takes_it)
{
	const char *rfs = lbt_rootfs();
	assert_output(
	    "a:e5\nrw\n",
	    (const char *[]){"run", "--rootfs", rfs, "--device", "/dev/fuse", "--", "sh", "-c",
			     "stat -c %t:%T /dev/fuse; (exec 3<>/dev/fuse) && echo rw", NULL});
	assert_output(
	    "a:e5\nr\nOperation not permitted\n",
	    (const char *[]){"run", "--rootfs", rfs, "--device", "/dev/fuse:/dev/f/x:r", "--", "sh",
			     "-c",
			     "stat -c %t:%T /dev/f/x; (exec 3</dev/f/x) && echo r; "
			     "(exec 3<>/dev/f/x) 2>&1 | grep -o 'Operation not permitted'",
			     NULL});
	/* a device not given is not there */
	assert_output("absent\n", (const char *[]){"run", "--rootfs", rfs, "--", "sh", "-c",
						   "[ -e /dev/fuse ] || echo absent", NULL});
	static const struct {
		const char *arg, *want;
	} bad[] = {
	    {"/etc/passwd", "is not a device node"},
	    {"/dev/lbbox-no-such-device", "No such file"},
	    {"/dev/fuse:/etc/fuse", "below /dev/"},
	    {"/dev/fuse:/dev/../fuse", "below /dev/"},
	    {"/dev/fuse:/dev/null", "another node is there"},
	    {"/dev/fuse:/dev/x:rwx", "PERMS is made of r, w, m"},
	    {"/dev/fuse:/dev/x:rw:m", "HOST[:CONTAINER][:PERMS]"},
	    {"dev/fuse", "paths must be absolute"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_refused(bad[i].want, (const char *[]){"run", "--rootfs", rfs, "--device",
							     bad[i].arg, "--", "true", NULL});
	assert_refused("--device does not apply",
		       (const char *[]){"run", "-d", "--rootfs", rfs, "--device", "/dev/fuse", "--",
					"true", NULL});
}
