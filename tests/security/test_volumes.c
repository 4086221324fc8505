// Volumes and host paths: nothing is created before every rule passed (a symlink planted by a
// sandbox in its workspace cannot turn a refused request into a directory in /etc), read-only
// volumes stay read-only whatever the host mounts under them later, nothing mounted inside
// leaks out.
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

LBT_SUITE(volumes);

static json_t *create(const char *name, const char *vol, const char *opt, const char *opt2)
{
	const char *args[16] = {"session",    "create", name,		"--rootfs",
				lbt_rootfs(), "-v",	lbt_probe_vol()};
	int n = 7;
	if (vol)
		args[n++] = "-v", args[n++] = vol;
	if (opt)
		args[n++] = opt;
	if (opt2)
		args[n++] = opt2;
	args[n] = NULL;
	return lbt_runv_json(args);
}

static void sh(struct lb_run_out *o, const char *session, const char *script)
{
	char *full = lbt_strdupf("P=%s; %s", lbt_probe(), script);
	lbt_run(o, "session", "exec", session, "--", "sh", "-c", full, NULL);
	free(full);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

// A sandbox plants /workspace/evil -> /etc in its host workspace; a later request for a workspace
// below that link is refused, and no directory appears in /etc.
LBT_TEST(volumes, planted_symlink_creates_nothing_outside)
{
	struct lb_run_out o;
	char *ws = lbt_mkdir_work("ws");
	char *vol = lbt_strdupf("%s:/workspace", ws);
	json_decref(create("s1", vol, NULL, NULL));
	sh(&o, "s1", "ln -s /etc /workspace/evil && echo planted");
	LBT_ASSERT_OUT(o, "planted\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");

	char *name = lbt_strdupf("lbt-%d-made", (int)getpid());
	char *in_etc = lbt_strdupf("/etc/%s", name);
	char *via = lbt_strdupf("%s/evil/%s/deeper:/workspace", ws, name);
	lbt_run(&o, "session", "create", "s2", "--rootfs", lbt_rootfs(), "-v", via, NULL);
	bool made = exists(in_etc);
	if (made) { // clean the host before failing
		char *deeper = lbt_strdupf("%s/deeper", in_etc);
		rmdir(deeper), rmdir(in_etc), free(deeper);
	}
	lbt_assert_error_line(&o, 125, "blocked for security");
	lbt_out_free(&o);
	cr_assert_not(made, "a refused request created %s", in_etc);
	free(ws), free(vol), free(name), free(in_etc), free(via);
}

// A workspace that does not exist yet is created (as LangBot does), below the link-free path.
LBT_TEST(volumes, missing_workspace_is_created_in_place)
{
	char *ws = lbt_strdupf("%s/new/a//b/", lbt_workdir());
	char *vol = lbt_strdupf("%s:/workspace", ws);
	json_t *s = create("s1", vol, NULL, NULL);
	json_decref(s);
	char *made = lbt_strdupf("%s/new/a/b", lbt_workdir());
	struct stat st;
	cr_assert_eq(stat(made, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	lbt_session_rm("s1");
	// "..": refused rather than interpreted, nothing created
	char *dots = lbt_strdupf("%s/x/../y:/workspace", lbt_workdir());
	struct lb_run_out o;
	lbt_run(&o, "session", "create", "s2", "--rootfs", lbt_rootfs(), "-v", dots, NULL);
	lbt_assert_error_line(&o, 125, "'..'");
	lbt_out_free(&o);
	char *x = lbt_strdupf("%s/x", lbt_workdir());
	cr_assert_not(exists(x));
	free(ws), free(vol), free(made), free(dots), free(x);
}

// A read-only volume whose host directory sits under a shared mount: what the host mounts
// below it afterwards must not appear inside (it would be writable there).
LBT_TEST(volumes, read_only_volume_stays_read_only_under_shared_mounts)
{
	struct lb_run_out o;
	char *shared = lbt_mkdir_work("shared");
	cr_assert_eq(mount("lbt-shared", shared, "tmpfs", 0, "size=1m"), 0);
	cr_assert_eq(mount(NULL, shared, NULL, MS_SHARED, NULL), 0);
	char *vol = lbt_strdupf("%s/vol", shared), *later = lbt_strdupf("%s/vol/later", shared);
	cr_assert_eq(mkdir(vol, 0755), 0);
	cr_assert_eq(mkdir(later, 0755), 0);
	char *spec = lbt_strdupf("%s:/vol:ro", vol);
	json_decref(create("s1", spec, NULL, NULL));
	cr_assert_eq(mount("lbt-later", later, "tmpfs", 0, "size=1m"), 0);
	sh(&o, "s1", "grep -c lbt-later /proc/self/mountinfo; $P write /vol/later/x");
	cr_assert_str_eq(o.out, "0\nEROFS\n", "a host mount appeared inside: %s", o.out);
	lbt_out_free(&o);
	char *x = lbt_strdupf("%s/x", later);
	cr_assert_not(exists(x), "the sandbox wrote into the host mount");
	lbt_session_rm("s1");
	cr_assert_eq(umount2(later, MNT_DETACH), 0);
	cr_assert_eq(umount2(shared, MNT_DETACH), 0);
	free(shared), free(vol), free(later), free(spec), free(x);
}

// With CAP_SYS_ADMIN and no seccomp filter (lbbox's profile refuses mount), the most a user can
// hand a sandbox: its mount inside a writable volume still stays inside.
LBT_TEST(volumes, mounts_inside_do_not_leak_out)
{
	struct lb_run_out o;
	char *shared = lbt_mkdir_work("shared");
	cr_assert_eq(mount("lbt-shared", shared, "tmpfs", 0, "size=1m"), 0);
	cr_assert_eq(mount(NULL, shared, NULL, MS_SHARED, NULL), 0);
	char *m = lbt_strdupf("%s/m", shared);
	cr_assert_eq(mkdir(m, 0755), 0);
	char *spec = lbt_strdupf("%s:/vol", shared);
	json_decref(create("s1", spec, "--cap-add=SYS_ADMIN", "--seccomp=unconfined"));
	sh(&o, "s1", "mount -t tmpfs lbt-inner /vol/m && grep -c lbt-inner /proc/self/mountinfo");
	LBT_ASSERT_OUT(o, "1\n");
	lbt_out_free(&o);
	char *mi = lbt_read_file("/proc/self/mountinfo");
	bool leaked = strstr(mi, "lbt-inner") != NULL;
	free(mi);
	lbt_session_rm("s1");
	umount2(m, MNT_DETACH); // only if it leaked
	cr_assert_eq(umount2(shared, MNT_DETACH), 0);
	cr_assert_not(leaked, "a mount made inside the sandbox appeared on the host");
	free(shared), free(m), free(spec);
}

// A writable --rootfs is bound, not overlaid: it must not receive the host's later mounts
// either (they would arrive writable, without nodev or nosuid).
LBT_TEST(volumes, bound_rootfs_does_not_receive_host_mounts)
{
	struct lb_run_out o;
	char *shared = lbt_mkdir_work("shared");
	cr_assert_eq(mount("lbt-shared", shared, "tmpfs", 0, "size=32m"), 0);
	cr_assert_eq(mount(NULL, shared, NULL, MS_SHARED, NULL), 0);
	char *rfs = lbt_strdupf("%s/rfs", shared);
	char *cmd = lbt_strdupf("cp -a %s %s && mkdir -p %s/w", lbt_rootfs(), rfs, rfs);
	cr_assert_eq(system(cmd), 0);
	const char *args[] = {
	    "session", "create",	"s1", "--rootfs", rfs, "--read-only=false",
	    "-v",      lbt_probe_vol(), NULL};
	json_decref(lbt_runv_json(args));
	char *w = lbt_strdupf("%s/w", rfs);
	cr_assert_eq(mount("lbt-later", w, "tmpfs", 0, "size=1m"), 0);
	sh(&o, "s1", "grep -c lbt-later /proc/self/mountinfo");
	cr_assert_str_eq(o.out, "0\n", "a host mount appeared in the sandbox's root: %s", o.out);
	lbt_out_free(&o);
	lbt_session_rm("s1");
	cr_assert_eq(umount2(w, MNT_DETACH), 0);
	cr_assert_eq(umount2(shared, MNT_DETACH), 0);
	free(shared), free(rfs), free(cmd), free(w);
}

// A sandbox swaps a directory of its workspace with a link out of the allowed roots, again and
// again, while another session is created below that directory: the roots were checked on one
// resolution of the path and the mount must be of that same path, never of the link's target.
LBT_TEST(volumes, swapped_link_never_mounts_outside_the_roots, .timeout = 200)
{
	free(lbt_mkdir_work("secret")), free(lbt_mkdir_work("allowed"));
	char *allowed = lbt_strdupf("%s/allowed", lbt_workdir()),
	     *secret = lbt_mkdir_work("secret/x");
	char *ws = lbt_mkdir_work("allowed/ws");
	free(lbt_mkdir_work("allowed/ws/d"));
	char *inside = lbt_mkdir_work("allowed/ws/d/x");
	char *who_in = lbt_strdupf("%s/WHO", inside), *who_secret = lbt_strdupf("%s/WHO", secret);
	lbt_write_file(who_in, "inside\n");
	lbt_write_file(who_secret, "SECRET\n");
	char *link = lbt_strdupf("%s/dl", ws), *target = lbt_strdupf("%s/secret", lbt_workdir());
	cr_assert_eq(symlink(target, link), 0);
	setenv("LBBOX_BOX_ALLOWED_ROOTS", allowed, 1);
	// the flipper runs the probe from its workspace: only the allowed roots may be mounted
	char *cp = lbt_strdupf("cp %s %s/probe", lbt_probe_host(), ws);
	cr_assert_eq(system(cp), 0);
	char *vol = lbt_strdupf("%s:/workspace", ws);
	const char *args[] = {"session",    "create", "flipper", "--rootfs",
			      lbt_rootfs(), "-v",     vol,	 NULL};
	json_decref(lbt_runv_json(args));
	struct lbt_proc flip;
	char *probe = lbt_strdupf("/workspace/probe");
	lbt_spawn(&flip, "session", "exec", "flipper", "--timeout", "60", "--", probe, "flip",
		  "/workspace", "d", "dl", "20", NULL);
	char *victim = lbt_strdupf("%s/d/x:/workspace:ro", ws);
	int mounted = 0;
	for (int i = 0; i < 100; i++) {
		struct lb_run_out o;
		lbt_run(&o, "session", "create", "v", "--rootfs", lbt_rootfs(), "-v", victim, NULL);
		bool made = o.status == 0;
		lbt_out_free(&o);
		if (!made)
			continue;
		mounted++;
		lbt_run(&o, "session", "exec", "v", "--", "cat", "/workspace/WHO", NULL);
		bool leaked = strstr(o.out, "SECRET") != NULL;
		lbt_out_free(&o);
		lbt_session_rm("v");
		cr_assert_not(leaked, "attempt %d mounted a directory outside the allowed roots",
			      i);
	}
	struct lb_run_out o;
	lbt_session_rm("flipper");
	lbt_wait(&flip, &o, 60);
	lbt_out_free(&o);
	unsetenv("LBBOX_BOX_ALLOWED_ROOTS");
	cr_log_info("%d of 100 creates went through (the others saw the swap)", mounted);
	free(allowed), free(secret), free(ws), free(inside), free(link), free(target), free(vol);
	free(probe), free(victim), free(cp), free(who_in), free(who_secret);
}

// The blocked directories are refused by what they are: /etc bound elsewhere, or a directory
// holding such a bind, is /etc.
LBT_TEST(volumes, blocked_directories_by_identity)
{
	struct lb_run_out o;
	char *alias = lbt_mkdir_work("etc-alias"), *holder = lbt_mkdir_work("holder");
	char *deep = lbt_mkdir_work("holder/in");
	cr_assert_eq(mount("/etc", alias, NULL, MS_BIND, NULL), 0);
	cr_assert_eq(mount("/etc", deep, NULL, MS_BIND, NULL), 0);
	const char *const vols[] = {alias, holder};
	for (int i = 0; i < 2; i++) {
		char *v = lbt_strdupf("%s:/x:ro", vols[i]);
		lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "-v", v, "--", "true", NULL);
		lbt_assert_error_line(&o, 125, "blocked for security");
		lbt_out_free(&o);
		free(v);
	}
	cr_assert_eq(umount2(alias, MNT_DETACH), 0);
	cr_assert_eq(umount2(deep, MNT_DETACH), 0);
	free(alias), free(holder), free(deep);
}

// A volume over /dev hides lbbox's /dev and stays as asked (read-write here): lbbox seals its
// own tmpfs below through that mount's handle, never by looking "/dev" up again, which would now
// reach the volume. The command sees the tmpfs read-only, the volume writable, on the host too.
LBT_TEST(volumes, volume_over_dev_stays_as_asked)
{
	char *vol = lbt_mkdir_work("devvol");
	char *v = lbt_strdupf("%s:/dev", vol), *made = lbt_strdupf("%s/made", vol);
	struct lb_run_out o;
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "-v", v, "--", "sh", "-c",
		"awk '$5 == \"/dev\" { split($6, o, \",\"); print o[1], $(NF - 2) }' "
		"/proc/self/mountinfo; echo hi >/dev/made && echo written",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(lbt_count_lines(o.out), 3, "%s", o.out);
	cr_assert(!strncmp(o.out, "ro tmpfs\nrw ", 12), "/dev's mounts: %s", o.out);
	cr_assert(strstr(o.out, "\nwritten\n"), "%s", o.out);
	char *text = lbt_read_file(made);
	cr_assert(text && !strcmp(text, "hi\n"), "the volume holds: %s", text ? text : "(nothing)");
	lbt_out_free(&o);
	free(text), free(vol), free(v), free(made);
}
