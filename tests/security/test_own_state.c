// lbbox's own state: the store and the runtime directory are private to lbbox's user, and no
// sandbox can mount them (or a directory holding them), whatever the path says or aliases; the
// cached seccomp programs they hold are not trusted blindly.
#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

LBT_SUITE(own_state);

static void expect_volume_refused(const char *host)
{
	struct lb_run_out o;
	char *v = lbt_strdupf("%s:/x", host);
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "-v", v, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "overlaps lbbox's own state");
	lbt_out_free(&o);
	// the same through a session, the CLI's way to the Box's sandboxes
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "-v", v, NULL);
	lbt_assert_error_line(&o, 125, "overlaps lbbox's own state");
	lbt_out_free(&o);
	char *extra = lbt_strdupf("%s:/extra:ro", host);
	lbt_run(&o, "session", "create", "s1", "--rootfs", lbt_rootfs(), "-v", extra, NULL);
	lbt_assert_error_line(&o, 125, "overlaps lbbox's own state");
	lbt_out_free(&o);
	free(v), free(extra);
}

LBT_TEST(own_state, volumes_cannot_reach_the_store_or_the_runtime_state)
{
	struct lb_run_out o;
	// a run first, so the seccomp cache and the state directories exist
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--", "true", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	char *cache = lbt_strdupf("%s/cache/seccomp", lbt_root());
	char *parent = lbt_strdupf("%s/..", lbt_root()); // holds both the store and the state
	char *dotted = lbt_strdupf("%s/cache/../cache", lbt_root());
	const char *const paths[] = {lbt_root(), lbt_runroot(), cache, parent, dotted};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		expect_volume_refused(paths[i]);
	// a symlink to the store and a bind mount of it: the same directory by another name
	char *link = lbt_strdupf("%s/link", lbt_workdir());
	cr_assert_eq(symlink(lbt_root(), link), 0);
	expect_volume_refused(link);
	char *alias = lbt_mkdir_work("alias");
	cr_assert_eq(mount(lbt_root(), alias, NULL, MS_BIND, NULL), 0);
	char *alias_cache = lbt_strdupf("%s/cache", alias);
	expect_volume_refused(alias);
	expect_volume_refused(alias_cache);
	cr_assert_eq(umount2(alias, MNT_DETACH), 0);
	// a directory holding a bind mount of a store subdirectory further down
	char *holder = lbt_mkdir_work("holder");
	free(lbt_mkdir_work("holder/a"));
	char *deep = lbt_mkdir_work("holder/a/b");
	cr_assert_eq(mount(cache, deep, NULL, MS_BIND, NULL), 0);
	expect_volume_refused(holder);
	cr_assert_eq(umount2(deep, MNT_DETACH), 0);
	free(cache), free(parent), free(dotted), free(link), free(alias), free(alias_cache);
	free(holder), free(deep);
}

// The store moved to another disk and bound back to its path (an fstab line): the directory
// holding it on that disk is the store's parent, whatever its name.
LBT_TEST(own_state, a_moved_store_is_recognised)
{
	char *disk = lbt_mkdir_work("disk"), *real = lbt_mkdir_work("disk/lbbox");
	char *store = lbt_mkdir_work("store");
	cr_assert_eq(chmod(real, 0700), 0);
	cr_assert_eq(mount(real, store, NULL, MS_BIND, NULL), 0);
	struct lb_run_out o;
	char *v = lbt_strdupf("%s:/x", disk);
	lbt_run(&o, "--root", store, "run", "--rootfs", lbt_rootfs(), "-v", v, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "overlaps lbbox's own state");
	lbt_out_free(&o);
	cr_assert_eq(umount2(store, MNT_DETACH), 0);
	free(disk), free(real), free(store), free(v);
}

// Rewriting a cached program (as a sandbox that reached the store would) with one that allows
// everything must not switch seccomp off for the next sandboxes.
LBT_TEST(own_state, tampered_seccomp_cache_is_not_installed)
{
	struct lb_run_out o;
	lbt_run(&o, "run", LBT_PROBE, "syscall", "keyctl", NULL);
	LBT_ASSERT_OUT(o, "EPERM\n");
	lbt_out_free(&o);
	char *dir = lbt_strdupf("%s/cache/seccomp", lbt_root());
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "no seccomp cache in %s", dir);
	// BPF_RET | BPF_K, SECCOMP_RET_ALLOW: one instruction that allows every syscall
	static const unsigned char allow_all[8] = {0x06, 0, 0, 0, 0, 0, 0xff, 0x7f};
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strstr(e->d_name, ".bpf"))
			continue;
		char *f = lbt_strdupf("%s/%s", dir, e->d_name);
		FILE *w = fopen(f, "w");
		cr_assert_not_null(w);
		fwrite(allow_all, 1, sizeof(allow_all), w);
		fclose(w);
		chmod(f, 0600);
		free(f);
		n++;
	}
	closedir(d);
	cr_assert_gt(n, 0);
	lbt_run(&o, "run", LBT_PROBE, "syscall", "keyctl", NULL);
	LBT_ASSERT_OUT(o, "EPERM\n");
	lbt_out_free(&o);
	free(dir);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "stat %s", path);
	return st.st_mode & 07777;
}

// Whichever command runs first creates the store and the state private; an existing store that
// is plainly lbbox's is tightened; anything else too open, or someone else's, is refused.
LBT_TEST(own_state, store_and_state_are_private)
{
	struct lb_run_out o;
	char *store = lbt_strdupf("%s/new/store", lbt_workdir());
	char *state = lbt_strdupf("%s/new/run", lbt_workdir());
	lbt_run(&o, "--root", store, "--runroot", state, "images", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(mode_of(store), 0700);
	cr_assert_eq(mode_of(state), 0700);

	// an old store left open (0755) with lbbox's own entries: tightened
	char *old = lbt_mkdir_work("old");
	char *imgs = lbt_strdupf("%s/images", old);
	cr_assert_eq(mkdir(imgs, 0755), 0);
	lbt_write_file(lbt_strdupf("%s/oci-layout", old), "{}");
	cr_assert_eq(chmod(old, 0755), 0);
	lbt_run(&o, "--root", old, "images", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(mode_of(old), 0700);

	// open and holding something else (a user's --root /srv): not ours to chmod
	char *other = lbt_mkdir_work("other");
	lbt_write_file(lbt_strdupf("%s/notes.txt", other), "mine");
	lbt_run(&o, "--root", other, "images", NULL);
	lbt_assert_error_line(&o, 125, "open to other users");
	lbt_out_free(&o);
	cr_assert_eq(mode_of(other), 0755);
	// writable by others (like /tmp): refused
	char *tmp = lbt_mkdir_work("sticky");
	cr_assert_eq(chmod(tmp, 01777), 0);
	lbt_run(&o, "--runroot", tmp, "images", NULL);
	lbt_assert_error_line(&o, 125, "open to other users");
	lbt_out_free(&o);
	cr_assert_eq(mode_of(tmp), 01777);
	// another user's directory, private or not: refused
	char *theirs = lbt_mkdir_work("theirs");
	cr_assert_eq(chmod(theirs, 0700), 0);
	cr_assert_eq(chown(theirs, 1000, 1000), 0);
	lbt_run(&o, "--root", theirs, "images", NULL);
	lbt_assert_error_line(&o, 125, "belongs to uid 1000");
	lbt_out_free(&o);
	free(store), free(state), free(old), free(imgs), free(other), free(tmp), free(theirs);
}

// A directory image in the store (ROOT/images/NAME/rootfs) serves every later sandbox: a
// writable root on it gets a private upper layer, and a writable --rootfs pointing there is
// refused, so no sandbox can plant files for the next.
LBT_TEST(own_state, directory_images_are_never_written)
{
	char *dir = lbt_strdupf("%s/images/plain", lbt_root());
	char *cmd = lbt_strdupf("mkdir -p %s && cp -a %s %s/rootfs", dir, lbt_rootfs(), dir);
	cr_assert_eq(system(cmd), 0);
	struct lb_run_out o;
	lbt_run(&o, "run", "--image", "plain", "--read-only=false", "--", "sh", "-c",
		"echo planted > /etc/motd && echo wrote", NULL);
	LBT_ASSERT_OUT(o, "wrote\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "create", "w1", "--image", "plain", "--read-only=false", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "session", "exec", "w1", "--", "sh", "-c", "echo planted > /etc/issue", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_session_rm("w1");
	lbt_run(&o, "run", "--image", "plain", "--", "sh", "-c",
		"cat /etc/motd /etc/issue 2>/dev/null; echo end", NULL);
	LBT_ASSERT_OUT(o, "end\n");
	lbt_out_free(&o);
	char *motd = lbt_strdupf("%s/rootfs/etc/motd", dir);
	cr_assert_neq(access(motd, F_OK), 0, "the store's image was written");
	char *rootfs = lbt_strdupf("%s/rootfs", dir);
	lbt_run(&o, "run", "--rootfs", rootfs, "--read-only=false", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "cannot be writable");
	lbt_out_free(&o);
	free(dir), free(cmd), free(motd), free(rootfs);
}
