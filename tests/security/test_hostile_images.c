// Hostile images: device nodes and setuid files in layers, ids that overflow, id files that are
// FIFOs, huge or full of wrapping numbers. Each image is built here, member by member, as an
// attacker would write it (tests/security/mkimage.py), on top of the busybox test rootfs.
#include "harness.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

LBT_SUITE(hostile_images);

#define IMG "localhost/lbt-hostile:1"

// Builds and loads IMG: the busybox rootfs, then one layer of the given members.
static void load_image(const char *user, const char *const *members)
{
	char *dest = lbt_strdupf("%s/layout-%d", lbt_workdir(), rand());
	const char *argv[64] = {"python3", LBBOX_SOURCE_DIR "/tests/security/mkimage.py",
				dest,	   IMG,
				"--base",  lbt_rootfs()};
	int n = 6;
	if (user) {
		argv[n++] = "--user";
		argv[n++] = user;
	}
	for (; *members && n < 62; members++)
		argv[n++] = *members;
	argv[n] = NULL;
	cr_assert_eq(lbt_system(argv), 0, "mkimage.py failed");
	struct lb_run_out o;
	lbt_run(&o, "load", "--oci-dir", dest, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	free(dest);
}

// lbbox run --image IMG OPTS..., the probe mounted, then sh -c script (the probe is $P).
static void run_sh(struct lb_run_out *o, const char *const *opts, const char *script)
{
	char *full = lbt_strdupf("P=%s; %s", lbt_probe(), script);
	const char *args[32] = {"run", "--image", IMG, "-v", lbt_probe_vol()};
	int n = 5;
	for (; opts && *opts; opts++)
		args[n++] = *opts;
	args[n++] = "--", args[n++] = "sh", args[n++] = "-c", args[n++] = full, args[n] = NULL;
	lbt_runv(o, args);
	free(full);
}

static int devices_found;
static int count_device(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path, (void)flag, (void)ftw;
	/* overlay whiteouts are 0:0 character devices lbbox makes itself */
	if ((S_ISCHR(st->st_mode) && st->st_rdev != 0) || S_ISBLK(st->st_mode))
		devices_found++;
	return 0;
}

static char *host_disk(void)
{
	struct stat st;
	cr_assert_eq(stat("/", &st), 0);
	return lbt_strdupf("%u:%u", major(st.st_dev), minor(st.st_dev));
}

LBT_TEST(hostile_images, device_nodes_in_layers_are_never_created)
{
	char *disk = host_disk();
	char *blk = lbt_strdupf("blk:disk:%s", disk), *blk2 = lbt_strdupf("blk:etc/disk:%s", disk);
	const char *const members[] = {
	    blk, blk2, "chr:kmsg:1:11", "chr:mem:1:1", "chr:console:5:1", "fifo:afifo", NULL};
	load_image(NULL, members);
	struct lb_run_out o;
	run_sh(&o, NULL,
	       "for f in /disk /etc/disk /kmsg /mem /console; do $P openr $f; done; "
	       "test -p /afifo && echo fifo");
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ENOENT\nENOENT\nENOENT\nENOENT\nENOENT\nfifo\n");
	lbt_out_free(&o);
	// and from the outside: the unpacked layers hold no device at all
	char *snaps = lbt_strdupf("%s/snapshots", lbt_root());
	devices_found = 0;
	cr_assert_eq(nftw(snaps, count_device, 16, FTW_PHYS), 0);
	cr_assert_eq(devices_found, 0, "%d device nodes in %s", devices_found, snaps);
	free(snaps), free(blk), free(blk2), free(disk);
}

// A device node that is in a rootfs directory or a volume (made on the host, by anyone who
// could write there) is not usable inside: both are mounted nodev.
LBT_TEST(hostile_images, device_nodes_in_rootfs_and_volumes_are_inert)
{
	char *rfs = lbt_mkdir_work("rfs"), *vol = lbt_mkdir_work("vol");
	char *disk = host_disk();
	unsigned ma, mi;
	cr_assert_eq(sscanf(disk, "%u:%u", &ma, &mi), 2);
	char *n1 = lbt_strdupf("%s/disk", rfs), *n2 = lbt_strdupf("%s/disk", vol);
	char *n3 = lbt_strdupf("%s/null", vol);
	cr_assert_eq(mknod(n1, S_IFBLK | 0600, makedev(ma, mi)), 0);
	cr_assert_eq(mknod(n2, S_IFBLK | 0600, makedev(ma, mi)), 0);
	cr_assert_eq(mknod(n3, S_IFCHR | 0666, makedev(1, 3)), 0);
	char *v = lbt_strdupf("%s:/vol", vol);
	static const char *const modes[] = {"--read-only=true", "--read-only=false"};
	for (int i = 0; i < 2; i++) {
		struct lb_run_out o;
		lbt_run(&o, "run", "--rootfs", rfs, modes[i], "-v", v, LBT_PROBE, "openr", "/disk",
			NULL);
		LBT_ASSERT_EXIT(o, 1);
		LBT_ASSERT_OUT(o, "EACCES\n");
		lbt_out_free(&o);
		lbt_run(&o, "run", "--rootfs", rfs, modes[i], "-v", v, LBT_PROBE, "openr",
			"/vol/disk", NULL);
		LBT_ASSERT_OUT(o, "EACCES\n");
		lbt_out_free(&o);
		lbt_run(&o, "run", "--rootfs", rfs, modes[i], "-v", v, LBT_PROBE, "openr",
			"/vol/null", NULL);
		LBT_ASSERT_OUT(o, "EACCES\n");
		lbt_out_free(&o);
		// lbbox's own /dev/null works
		lbt_run(&o, "run", "--rootfs", rfs, modes[i], LBT_PROBE, "openr", "/dev/null",
			NULL);
		LBT_ASSERT_OUT(o, "ok\n");
		lbt_out_free(&o);
	}
	free(v), free(n1), free(n2), free(n3), free(disk), free(rfs), free(vol);
}

// Given CAP_MKNOD, a command still cannot make a usable device: /dev is read-only, every
// writable place (/tmp, /dev/shm, a writable root) is nodev, and the cgroup's device fence
// refuses the node itself. Each place's line is "<mknod> <open>": never an open that works.
LBT_TEST(hostile_images, mknod_capability_gives_no_device)
{
	const char *const none[] = {NULL};
	load_image(NULL, none);
	char *disk = host_disk();
	char *script = lbt_strdupf("for d in /dev /tmp /dev/shm /; do echo $($P mknod $d/d b %s) "
				   "$($P openr $d/d); done",
				   disk);
	struct lb_run_out o;
	static const char *const opts[] = {"--read-only=false", "--cap-add", "MKNOD", NULL};
	run_sh(&o, opts, script);
	LBT_ASSERT_EXIT(o, 0);
	// /dev: read-only; elsewhere the fence refuses the node (EPERM), or, where there is no
	// fence (a host without a devices controller), nodev refuses its use (EACCES)
	char *want = strdup("EROFS ENOENT\n");
	for (const char *l = strchr(o.out, '\n') + 1; l && *l; l = strchr(l, '\n') + 1) {
		cr_assert(!strncmp(l, "EPERM ENOENT\n", 13) || !strncmp(l, "ok EACCES\n", 10),
			  "a device became usable: %s", o.out);
		if (!strchr(l, '\n'))
			break;
	}
	cr_assert(!strncmp(o.out, want, strlen(want)), "/dev: %s", o.out);
	cr_assert_eq(lbt_count_lines(o.out), 4, "%s", o.out);
	lbt_out_free(&o);
	free(script), free(disk), free(want);
}

// A setuid-root file of an image stays setuid inside (a sandbox needs su, ping...), but no user
// of the host can reach it in the store: the store lbbox creates is private.
LBT_TEST(hostile_images, setuid_files_unreachable_from_the_host)
{
	// the static probe, setuid root: run by another user, it would report euid 0
	char *member = lbt_strdupf("copy:bin/suid-probe:4755:%s", lbt_probe_host());
	char *store = lbt_strdupf("%s/fresh-store", lbt_workdir());
	char *layout = lbt_strdupf("%s/layout-suid", lbt_workdir());
	const char *argv[] = {"python3", LBBOX_SOURCE_DIR "/tests/security/mkimage.py",
			      layout,	 IMG,
			      "--base",	 lbt_rootfs(),
			      member,	 NULL};
	cr_assert_eq(lbt_system(argv), 0);
	struct lb_run_out o;
	lbt_run(&o, "--root", store, "load", "--oci-dir", layout, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "--root", store, "run", "--image", IMG, "--", "stat", "-c", "%a",
		"/bin/suid-probe", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "4755\n");
	lbt_out_free(&o);
	struct stat st;
	cr_assert_eq(stat(store, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700, "store mode %o", st.st_mode & 0777);
	// nobody, with no capability at all, tries every unpacked copy of the file
	char *cmd = lbt_strdupf("for f in %s/snapshots/*/fs/bin/suid-probe; do "
				"setpriv --reuid=65534 --regid=65534 --clear-groups /bin/sh -c "
				"'exec \"$0\" status Uid' $f 2>/dev/null && exit 1; done; exit 0",
				store);
	const char *sh[] = {"sh", "-c", cmd, NULL};
	cr_assert_eq(lbt_system(sh), 0, "a host user ran the image's setuid file");
	free(cmd), free(store), free(layout), free(member);
}

static void expect_user_refused(const char *user, const char *const *members, const char *what)
{
	struct lb_run_out o;
	load_image(user, members);
	lbt_run(&o, "run", "--image", IMG, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, what);
	lbt_out_free(&o);
}

// A numeric User past the id range would wrap to 0 (root, with root's capabilities), and
// 4294967295 is (uid_t)-1, "unchanged" to setresuid: both keep uid 0 today's way. Refused.
LBT_TEST(hostile_images, numeric_user_out_of_range)
{
	const char *const none[] = {NULL};
	expect_user_refused("4294967296", none, "out of range");
	expect_user_refused("4294967295", none, "out of range");
	expect_user_refused("1000:4294967296", none, "out of range");
	expect_user_refused("99999999999999999999999", none, "image user");
	// the same through the image's own /etc/passwd
	const char *const wrap[] = {"file:etc/passwd:644:evil:x:4294967296:0::/:/bin/sh\n", NULL};
	expect_user_refused("evil", wrap, "evil");
}

// An /etc/passwd or /etc/group that is a FIFO would block lbbox forever in open(); one that is
// huge would be read whole. Each is refused at once, in one line.
LBT_TEST(hostile_images, id_files_must_be_small_regular_files)
{
	const char *const fifo[] = {"fifo:etc/passwd", NULL};
	expect_user_refused("nobody", fifo, "not a regular file");
	const char *const gfifo[] = {"fifo:etc/group", NULL};
	expect_user_refused("root:wheel", gfifo, "not a regular file");
	const char *const dir[] = {"dir:etc/passwd:755", NULL};
	expect_user_refused("nobody", dir, "passwd");
	// 5 MiB of comments: above the 4 MiB cap
	char *path = lbt_strdupf("%s/big-passwd", lbt_workdir());
	char *big = malloc(5 << 20);
	memset(big, '#', 5 << 20);
	big[(5 << 20) - 1] = '\0';
	lbt_write_file(path, big);
	char *member = lbt_strdupf("copy:etc/passwd:644:%s", path);
	const char *const huge[] = {member, NULL};
	expect_user_refused("nobody", huge, "larger than");
	free(big), free(member), free(path);
}

// The same FIFO through a session (the Box's path to an image): refused, nothing left.
LBT_TEST(hostile_images, session_with_fifo_passwd_is_refused)
{
	const char *const fifo[] = {"fifo:etc/passwd", NULL};
	struct lb_run_out o;
	load_image("nobody", fifo);
	lbt_run(&o, "session", "create", "s1", "--image", IMG, NULL);
	lbt_assert_error_line(&o, 125, "not a regular file");
	lbt_out_free(&o);
}

// What an image names (its ref name, media types, digests) reaches the user's terminal only
// escaped: a name carrying an escape sequence is shown as \x1b..., never raw.
LBT_TEST(hostile_images, image_names_are_printed_escaped)
{
	char *dest = lbt_strdupf("%s/layout-esc", lbt_workdir());
	const char *argv[] = {"python3",   LBBOX_SOURCE_DIR "/tests/security/mkimage.py",
			      dest,	   "evil\x1b]0;pwned\x07:1",
			      "dir:d:755", NULL};
	cr_assert_eq(lbt_system(argv), 0);
	struct lb_run_out o;
	lbt_run(&o, "load", "-q", "--oci-dir", dest, NULL); /* -q: no progress lines */
	lbt_assert_error_line(&o, 125, "\\x1b]0;pwned\\x07");
	cr_assert_null(strchr(o.err, '\x1b'), "a raw escape reached the terminal: %s", o.err);
	lbt_out_free(&o);
	free(dest);
}

// A FIFO where a layout has a file would block `load --oci-dir` forever in open().
LBT_TEST(hostile_images, fifo_in_a_layout_is_refused)
{
	char *dest = lbt_strdupf("%s/layout-fifo", lbt_workdir());
	const char *argv[] = {
	    "python3", LBBOX_SOURCE_DIR "/tests/security/mkimage.py", dest, IMG, "dir:d:755", NULL};
	cr_assert_eq(lbt_system(argv), 0);
	char *index = lbt_strdupf("%s/index.json", dest);
	cr_assert_eq(unlink(index), 0);
	cr_assert_eq(mkfifo(index, 0644), 0);
	struct lb_run_out o;
	lbt_run(&o, "load", "--oci-dir", dest, NULL);
	lbt_assert_error_line(&o, 125, "not a regular file");
	lbt_out_free(&o);
	free(dest), free(index);
}

// A root whose /dev is a chain of links through a directory a volume covers later: lbbox's /dev
// tmpfs (the one mount without nodev) went where the chain led first, and the seal, looked up by
// name after the volumes, landed on /proc and left that tmpfs writable to a command with
// CAP_MKNOD. The root's /dev is never followed now: such a root (or image) is refused, in one
// line.
LBT_TEST(hostile_images, dev_symlink_is_refused)
{
	char *rfs = lbt_strdupf("%s/rfs", lbt_workdir());
	const char *cp[] = {"cp", "-a", lbt_rootfs(), rfs, NULL};
	cr_assert_eq(lbt_system(cp), 0);
	char *dev = lbt_strdupf("%s/dev", rfs), *m = lbt_strdupf("%s/m", rfs);
	char *qproc = lbt_strdupf("%s/q/proc", rfs), *mz = lbt_strdupf("%s/m/z", rfs);
	const char *rm[] = {"rm", "-rf", dev, NULL};
	const char *mk[] = {"mkdir", "-p", m, qproc, NULL};
	cr_assert_eq(lbt_system(rm), 0);
	cr_assert_eq(lbt_system(mk), 0);
	// the image: /dev -> /m/z/proc -> /q/proc; the volume's content: z -> /
	cr_assert_eq(symlink("/m/z/proc", dev), 0);
	cr_assert_eq(symlink("/q", mz), 0);
	char *vol = lbt_mkdir_work("vol"), *vz = lbt_strdupf("%s/z", vol);
	cr_assert_eq(symlink("/", vz), 0);
	char *v = lbt_strdupf("%s:/m", vol);
	struct lb_run_out o;
	lbt_run(&o, "run", "--rootfs", rfs, "--cap-add", "MKNOD", "-v", v, "--", "sh", "-c",
		"grep ' /q/proc ' /proc/self/mountinfo; "
		"mknod /q/proc/n c 1 3 && echo hi >/q/proc/n && echo USABLE",
		NULL);
	lbt_assert_error_line(&o, 125, "/dev is a symlink");
	lbt_out_free(&o);
	// a /dev that is a file is no mount point for it either
	cr_assert_eq(unlink(dev), 0);
	lbt_write_file(dev, "not a directory\n");
	lbt_run(&o, "run", "--rootfs", rfs, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "/dev: Not a directory");
	lbt_out_free(&o);
	// an image whose layer makes /dev a symlink: the same, on its overlay root
	const char *const members[] = {"symlink:dev:/tmp", NULL};
	load_image(NULL, members);
	lbt_run(&o, "run", "--image", IMG, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "/dev is a symlink");
	lbt_out_free(&o);
	free(rfs), free(dev), free(m), free(qproc), free(mz), free(vol), free(vz), free(v);
}

// A root whose /proc (or /sys) is a link to "/": proc went over the root itself, the masks went
// to the image's own files by a second lookup, and pivot_root made that unmasked procfs the
// sandbox's root (a writable sys/kernel/core_pattern in a writable session). Such a root, or an
// image whose layer makes the link, is refused in one line.
LBT_TEST(hostile_images, proc_and_sys_symlinks_are_refused)
{
	static const char *const names[] = {"proc", "sys"};
	for (size_t i = 0; i < 2; i++) {
		char *rfs = lbt_strdupf("%s/rfs-%s", lbt_workdir(), names[i]);
		const char *cp[] = {"cp", "-a", lbt_rootfs(), rfs, NULL};
		cr_assert_eq(lbt_system(cp), 0);
		char *dir = lbt_strdupf("%s/%s", rfs, names[i]);
		char *want = lbt_strdupf("/%s is a symlink", names[i]);
		const char *rm[] = {"rm", "-rf", dir, NULL};
		cr_assert_eq(lbt_system(rm), 0);
		cr_assert_eq(symlink("/", dir), 0);
		struct lb_run_out o;
		lbt_run(&o, "run", "--rootfs", rfs, "--", "sh", "-c", "ls /; cat /version", NULL);
		lbt_assert_error_line(&o, 125, want);
		lbt_out_free(&o);
		// a session with a writable root, where the procfs root was writable
		lbt_run(&o, "session", "create", "hostile-proc", "--rootfs", rfs,
			"--read-only=false", NULL);
		lbt_assert_error_line(&o, 125, want);
		lbt_out_free(&o);
		free(rfs), free(dir), free(want);
	}
	const char *const members[] = {"symlink:proc:/", NULL};
	load_image(NULL, members);
	struct lb_run_out o;
	lbt_run(&o, "run", "--image", IMG, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "/proc is a symlink");
	lbt_out_free(&o);
}

// An image's link to the root itself ("w -> /", "w -> .", "u -> ../..", "a/b -> ../") with a
// volume or tmpfs on it, or a volume on "/": the mount went over the root, and pivot_root made
// the volume the sandbox's root (the image's layout silently gone). Each is refused in one line;
// so is a root whose /tmp (lbbox's tmpfs) leads there. A volume elsewhere still works.
LBT_TEST(hostile_images, mounts_over_the_root_are_refused)
{
	char *rfs = lbt_strdupf("%s/rfs-links", lbt_workdir());
	const char *cp[] = {"cp", "-a", lbt_rootfs(), rfs, NULL};
	cr_assert_eq(lbt_system(cp), 0);
	static const char *const links[][2] = {
	    {"lbt-w", "/"}, {"lbt-d", "."}, {"lbt-u", "../.."}, {"lbt-a/b", "../"}};
	char *a = lbt_strdupf("%s/lbt-a", rfs);
	cr_assert_eq(mkdir(a, 0755), 0);
	for (size_t i = 0; i < 4; i++) {
		char *l = lbt_strdupf("%s/%s", rfs, links[i][0]);
		cr_assert_eq(symlink(links[i][1], l), 0);
		free(l);
	}
	char *vol = lbt_mkdir_work("vol-root"), *marker = lbt_strdupf("%s/marker", vol);
	lbt_write_file(marker, "from-the-volume\n");
	const char *const targets[] = {"/lbt-w", "/lbt-d", "/lbt-u", "/lbt-a/b", "/", "/lbt-w/"};
	struct lb_run_out o;
	for (size_t i = 0; i < 6; i++) {
		char *v = lbt_strdupf("%s:%s", vol, targets[i]);
		lbt_run(&o, "run", "--rootfs", rfs, "-v", v, "--", "cat", "/marker", NULL);
		lbt_assert_error_line(&o, 125, "leads to the sandbox's root itself");
		lbt_out_free(&o);
		free(v);
	}
	lbt_run(&o, "run", "--rootfs", rfs, "--mount", "type=tmpfs,dst=/lbt-w", "--", "ls",
		"/bin/sh", NULL);
	lbt_assert_error_line(&o, 125, "leads to the sandbox's root itself");
	lbt_out_free(&o);
	// a session (writable root), as a Box session with a mount is made
	char *v = lbt_strdupf("%s:/lbt-u", vol);
	lbt_run(&o, "session", "create", "hostile-root", "--rootfs", rfs, "--read-only=false", "-v",
		v, NULL);
	lbt_assert_error_line(&o, 125, "leads to the sandbox's root itself");
	lbt_out_free(&o);
	free(v);
	v = lbt_strdupf("%s:/lbt-x", vol);
	lbt_run(&o, "run", "--rootfs", rfs, "-v", v, "--", "cat", "/lbt-x/marker", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_expect_str_eq(o.out, "from-the-volume\n");
	lbt_out_free(&o);
	// lbbox's own /tmp tmpfs, through the image's "tmp -> /"
	char *tmp = lbt_strdupf("%s/tmp", rfs);
	const char *rm[] = {"rm", "-rf", tmp, NULL};
	cr_assert_eq(lbt_system(rm), 0);
	cr_assert_eq(symlink("/", tmp), 0);
	lbt_run(&o, "run", "--rootfs", rfs, "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "/tmp leads to the sandbox's root itself");
	lbt_out_free(&o);
	free(rfs), free(a), free(vol), free(marker), free(v), free(tmp);
}

// The ":ro", nosuid and nodev of a volume were set by a second lookup of its target, made after
// the bind and so through the volume's own contents: the image's "rvvol -> /rvw/s" and
// "rvw/s -> ." first lead to /rvw, then the volume's "s -> /tmp" sent the attributes to lbbox's
// /tmp while the volume stayed writable. They are set on the bind itself, before it is attached.
// (Names of their own: a volume on a missing mountpoint, /w in other tests, creates it in the
// shared rootfs.)
LBT_TEST(hostile_images, a_read_only_volume_is_read_only_whatever_it_holds)
{
	char *rfs = lbt_strdupf("%s/rfs-ro", lbt_workdir());
	const char *cp[] = {"cp", "-a", lbt_rootfs(), rfs, NULL};
	cr_assert_eq(lbt_system(cp), 0);
	char *w = lbt_strdupf("%s/rvw", rfs), *ws = lbt_strdupf("%s/rvw/s", rfs),
	     *link = lbt_strdupf("%s/rvvol", rfs);
	cr_assert_eq(mkdir(w, 0755), 0);
	cr_assert_eq(symlink(".", ws), 0);
	cr_assert_eq(symlink("/rvw/s", link), 0);
	char *vol = lbt_mkdir_work("vol-ro"), *s = lbt_strdupf("%s/s", vol),
	     *file = lbt_strdupf("%s/file", vol);
	cr_assert_eq(symlink("/tmp", s), 0);
	lbt_write_file(file, "kept\n");
	char *v = lbt_strdupf("%s:/rvvol:ro", vol);
	struct lb_run_out o;
	lbt_run(&o, "run", "--rootfs", rfs, "-v", v, "--", "sh", "-c",
		"echo x 2>/dev/null >/rvw/file || echo refused; touch /tmp/t && echo tmp-ok;"
		"awk '$5 == \"/rvw\" || $5 == \"/tmp\" { print $5, $6 }' /proc/self/mountinfo",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_expect(strstr(o.out, "refused\ntmp-ok\n") == o.out, "out: %s", o.out);
	cr_expect(strstr(o.out, "\n/rvw ro,nosuid,nodev") != NULL, "out: %s", o.out);
	cr_expect(strstr(o.out, "\n/tmp rw,nosuid,nodev") != NULL, "out: %s", o.out);
	lbt_out_free(&o);
	char *got = lbt_read_file(file);
	cr_expect_str_eq(got, "kept\n");
	free(rfs), free(w), free(ws), free(link), free(vol), free(s), free(file), free(v),
	    free(got);
}
