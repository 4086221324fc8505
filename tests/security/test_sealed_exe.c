// CVE-2019-5736 against lbbox: a session whose root is writable replaces its /bin/sh with
// "#!/proc/self/exe load", so the next exec's shell is lbbox itself, started by the kernel inside
// the sandbox (its libraries are put in the root for that). That lbbox runs `load`, which waits
// for the image helper the sandbox also planted (LBBOX_IMAGE_TOOL); the helper takes
// /proc/<lbbox>/exe, waits until lbbox has exited, and writes to it. lbbox re-executes itself
// sealed first (src/sandbox/sealed.c): as root from a detached read-only overlayfs view of its
// binary, without root from a sealed memfd copy. Either way the write fails and the host binary
// is unchanged, and the view is mounted nowhere, inside or out.
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

LBT_SUITE(sealed_exe);

// The whole file, its size in *len.
static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && fstat(fd, &st) == 0, "open %s: %s", path, strerror(errno));
	char *buf = malloc((size_t)st.st_size + 1);
	size_t done = 0;
	for (ssize_t n; done < (size_t)st.st_size; done += (size_t)n) {
		n = read(fd, buf + done, (size_t)st.st_size - done);
		cr_assert(n > 0, "read %s", path);
	}
	close(fd);
	*len = done;
	return buf;
}

static void mkdirs(char *path)
{
	for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
}

static void put_file(const char *path, const char *data, size_t len, mode_t mode)
{
	char *tmp = strdup(path);
	mkdirs(tmp);
	free(tmp);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len, "write %s", path);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

// lbbox's dynamic loader and libraries, as its loader lists them, copied into root.
static void add_libraries(const char *root)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
		execl(lbt_bin(), lbt_bin(), (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	char line[1024];
	int copied = 0;
	while (fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, "=> "),
		     *path = arrow ? arrow + 3 : line + strspn(line, " \t");
		if (*path != '/')
			continue; /* the vDSO */
		path[strcspn(path, " \n")] = '\0';
		size_t len;
		char *data = slurp(path, &len);
		char *dst = lbt_strdupf("%s%s", root, path);
		put_file(dst, data, len, 0755);
		free(dst);
		free(data);
		copied++;
	}
	fclose(f);
	int status;
	waitpid(pid, &status, 0);
	cr_assert(copied > 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 1),
		  "lbbox's libraries not listed (status %d)", status);
}

// A copy of the busybox rootfs to write into. A user keeps no owner, and of the directories it
// may not read (root's home) copies an empty one.
static char *copy_rootfs(void)
{
	char *root = lbt_strdupf("%s/rootfs-copy", lbt_workdir());
	if (geteuid() == 0) {
		const char *cp[] = {"cp", "-a", lbt_rootfs(), root, NULL};
		cr_assert_eq(lbt_system(cp), 0, "cp -a %s %s failed", lbt_rootfs(), root);
		return root;
	}
	cr_assert_eq(mkdir(root, 0755), 0);
	DIR *d = opendir(lbt_rootfs());
	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *src = lbt_strdupf("%s/%s", lbt_rootfs(), e->d_name);
		char *dst = lbt_strdupf("%s/%s", root, e->d_name);
		if (e->d_type == DT_DIR && access(src, R_OK | X_OK) < 0) {
			cr_assert_eq(mkdir(dst, 0700), 0);
		} else {
			const char *cp[] = {"cp", "-R", src, dst, NULL};
			cr_assert_eq(lbt_system(cp), 0, "cp -R %s %s failed", src, dst);
		}
		free(src), free(dst);
	}
	closedir(d);
	return root;
}

// The planted image helper: what the sandbox learns about the lbbox that runs it, then the
// write to lbbox's executable once lbbox is gone (no "text file busy" then).
static const char helper[] =
    "#!/bin/busybox sh\n"
    "p=$PPID\n"
    "{ readlink /proc/$p/exe; stat -f -c %t /proc/$p/exe; grep -c overlay /proc/self/mountinfo\n"
    "} > /seal-probe\n"
    "exec 3</proc/$p/exe\n"
    "( while [ -e /proc/$p ]; do sleep 0.05; done\n"
    "  r=refused i=0\n" /* busy while the host's lbbox, the exec's caller, still runs */
    "  while [ $i -lt 100 ]; do\n"
    "    (echo pwned >> /proc/self/fd/3) 2>/seal-err && { r=written; break; }\n"
    "    grep -q busy /seal-err || break; i=$((i + 1)); sleep 0.05\n"
    "  done\n"
    "  echo $r > /seal-write.tmp && mv /seal-write.tmp /seal-write ) &\n";

// A copy of the busybox rootfs whose /bin/sh starts lbbox ("#!/proc/self/exe load"), which then
// runs the image helper given.
static char *script_root(const char *image_helper)
{
	char *root = copy_rootfs();
	add_libraries(root);
	char *path = lbt_strdupf("%s/lbbox-image", root);
	put_file(path, image_helper, strlen(image_helper), 0755);
	free(path);
	path = lbt_strdupf("%s/bin/sh", root);
	put_file(path, "#!/proc/self/exe load\n", 22, 0755);
	free(path);
	return root;
}

// A writable root with the attack in place.
static char *hostile_root(void)
{
	return script_root(helper);
}

static char *wait_file(const char *path, double timeout)
{
	for (double end = lbt_now() + timeout; lbt_now() < end; usleep(20000)) {
		char *s = lbt_read_file(path);
		if (s)
			return s;
	}
	return NULL;
}

// Overlay mounts of this mount namespace whose layers are given as /proc/self/fd/N, as the
// view's are: the view must never be attached.
static int attached_views(void)
{
	char *mi = lbt_read_file("/proc/self/mountinfo");
	int n = 0;
	for (char *l = mi; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		char *end = strchr(l, '\n');
		if (end)
			*end = '\0';
		if (strstr(l, " - overlay ") && strstr(l, "lowerdir=/proc/self/fd/"))
			n++;
		if (end)
			*end = '\n';
	}
	free(mi);
	return n;
}

// The view's empty layer, removed at once.
static int leftover_dirs(void)
{
	glob_t g;
	int n = 0;
	for (int i = 0; i < 2; i++) {
		if (glob(i ? "/tmp/lbbox-seal-*" : "/dev/shm/lbbox-seal-*", 0, NULL, &g) == 0)
			n += (int)g.gl_pathc;
		globfree(&g);
	}
	return n;
}

// The attack on a session (s1) of a hostile root, its exec run through wrapper (NULL: none); bin,
// when given, must be unchanged after it. Returns what the sandbox saw of the lbbox it ran: its
// exe link, filesystem type and the overlay mounts it can see.
static char *attack(const char *bin, const char *wrapper)
{
	struct lb_run_out o;
	size_t len = 0, len_after;
	char *before = bin ? slurp(bin, &len) : NULL;
	int views = attached_views(), dirs = leftover_dirs();
	char *root = hostile_root();
	json_decref(lbt_runv_json((const char *[]){"session", "create", "s1", "--rootfs", root,
						   "--read-only=false", NULL}));
	lbt_set_wrapper(wrapper);
	// (an ASan build's leak check cannot stop the world inside a sandbox: not for that lbbox)
	lbt_run(&o, "session", "exec", "s1", "-e", "LBBOX_IMAGE_TOOL=/lbbox-image", "-e",
		"ASAN_OPTIONS=detect_leaks=0", "--", "true", NULL);
	lbt_set_wrapper(NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	char *probe_path = lbt_strdupf("%s/seal-probe", root);
	char *write_path = lbt_strdupf("%s/seal-write", root);
	char *err_path = lbt_strdupf("%s/seal-err", root);
	char *probe = wait_file(probe_path, 5), *wrote = wait_file(write_path, 10);
	cr_assert_not_null(probe, "lbbox did not run the planted helper inside the sandbox");
	cr_assert_not_null(wrote, "the helper did not report its write");
	char *why = lbt_read_file(err_path);
	cr_assert_str_eq(wrote, "refused\n", "lbbox's executable was written to (%s)", probe);
	cr_assert_not_null(why);
	if (bin) {
		char *after = slurp(bin, &len_after);
		cr_assert(len == len_after && memcmp(before, after, len) == 0, "%s was changed",
			  bin);
		free(after);
	}
	cr_assert_eq(attached_views(), views, "a sealed view is attached on the host");
	cr_assert_eq(leftover_dirs(), dirs, "an lbbox-seal-* directory was left behind");
	lbt_session_rm("s1");
	free(before), free(root), free(wrote), free(why);
	free(probe_path), free(write_path), free(err_path);
	return probe;
}

LBT_TEST(sealed_exe, proc_self_exe_script_cannot_write_lbbox)
{
	char *bin = realpath(lbt_bin(), NULL), *probe = attack(bin, NULL);
	// and by what: a view as root, a copy without (an overlay's fsopen needs CAP_SYS_ADMIN)
	char *expect = geteuid() == 0 ? lbt_strdupf("/%s\n794c7630\n0\n", strrchr(bin, '/') + 1)
				      : lbt_strdupf("/memfd:lbbox-sealed (deleted)\n1021994\n0\n");
	cr_assert_str_eq(probe, expect, "lbbox inside the sandbox ran from %s", probe);
	free(bin), free(probe), free(expect);
}

// lbbox whose file was removed since it started (an upgrade replaces it): its directory no longer
// holds it, so no view can show it, and it seals itself with a copy instead, even as root.
LBT_TEST(sealed_exe, removed_binary_falls_back_to_a_copy)
{
	char *dir = lbt_mkdir_work("gone"), *wrap = lbt_strdupf("%s/run-removed", lbt_workdir());
	char *script =
	    lbt_strdupf("#!/bin/sh\n"
			"cp \"$1\" %s/lbbox && exec 9<%s/lbbox && rm %s/lbbox || exit 99\n"
			"shift\n"
			"exec /proc/self/fd/9 \"$@\"\n",
			dir, dir, dir);
	lbt_write_file(wrap, script);
	chmod(wrap, 0755);
	char *probe = attack(NULL, wrap);
	cr_assert_str_eq(probe, "/memfd:lbbox-sealed (deleted)\n1021994\n0\n",
			 "lbbox inside the sandbox ran from %s", probe);
	free(dir), free(wrap), free(script), free(probe);
}

// The re-execution checks that it got a sealed lbbox: an image that does not pass as sealed
// (here a marker that says it already re-executed) is one error, not a loop of re-executions.
LBT_TEST(sealed_exe, reexec_that_is_not_sealed_fails_once)
{
	struct lb_run_out o;
	char *root = copy_rootfs();
	json_decref(lbt_runv_json((const char *[]){"session", "create", "s2", "--rootfs", root,
						   "--read-only=false", NULL}));
	// the wrapper's own pid is lbbox's once it execs
	char *wrap = lbt_strdupf("%s/as-reexec", lbt_workdir());
	lbt_write_file(wrap, "#!/bin/sh\nLBBOX_SEALED_PID=$$ exec \"$@\"\n");
	chmod(wrap, 0755);
	lbt_set_wrapper(wrap);
	lbt_run(&o, "session", "exec", "s2", "--", "true", NULL);
	lbt_set_wrapper(NULL);
	lbt_assert_error_line(&o, 125, "re-executed itself sealed but is not running sealed");
	lbt_out_free(&o);
	lbt_session_rm("s2");
	free(wrap), free(root);
}

// ---- the paths that were not sealed: foreground run, a read-only root, lbbox-init ----------
// lbbox and lbbox-init are run from copies in the work directory (a wrapper execs the copy), so
// an lbbox that does not seal has only a copy written, which the test then sees.

// The wrapper that runs the copies; *dir: where they are.
static char *copies_wrapper(char **dir)
{
	*dir = lbt_mkdir_work("bin");
	char *wrap = lbt_strdupf("%s/run-copy", lbt_workdir());
	char *script =
	    lbt_strdupf("#!/bin/sh\n"
			"d=%s\n"
			"[ -e $d/lbbox ] || { cp \"$1\" $d/lbbox && "
			"cp \"$(dirname \"$1\")/lbbox-init\" $d/lbbox-init; } || exit 99\n"
			"shift\n"
			"exec $d/lbbox \"$@\"\n",
			*dir);
	lbt_write_file(wrap, script);
	chmod(wrap, 0755);
	free(script);
	return wrap;
}

// After the process whose executable fd holds has exited: writing through it must fail, and
// file (a copy lbbox ran from) be unchanged.
static void assert_unwritable(int fd, const char *file)
{
	size_t len, len_after;
	char *before = slurp(file, &len), *fdpath = lbt_strdupf("/proc/self/fd/%d", fd);
	int w = -1, e = 0;
	for (int i = 0; i < 100; i++, usleep(20000)) { /* busy while anything still runs it */
		w = open(fdpath, O_WRONLY | O_APPEND | O_CLOEXEC);
		e = errno;
		if (w >= 0 || e != ETXTBSY)
			break;
	}
	if (w >= 0) { /* a sealed memfd opens for writing, and refuses the write */
		ssize_t n = write(w, "pwned", 5);
		e = errno;
		close(w);
		cr_assert(n < 0, "the sandbox's executable was written to (%zd bytes)", n);
	}
	cr_assert(e == EROFS || e == EPERM, "reopen for writing: %s", strerror(e));
	char *after = slurp(file, &len_after);
	cr_assert(len == len_after && memcmp(before, after, len) == 0, "%s was changed", file);
	free(before), free(after), free(fdpath);
}

// The first bytes of a /proc file (whose size says nothing), NUL-terminated.
static size_t read_proc(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? (size_t)n : 0;
}

// The host pid of the process run as "/proc/self/exe load" whose environment holds mark.
static pid_t find_marked_lbbox(const char *mark)
{
	char buf[8192], path[64];
	for (double end = lbt_now() + 10; lbt_now() < end; usleep(20000)) {
		DIR *d = opendir("/proc");
		pid_t pid = 0;
		for (struct dirent *e; d && !pid && (e = readdir(d));) {
			snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
			size_t n = read_proc(path, buf, sizeof(buf));
			if (!memmem(buf, n, mark, strlen(mark)))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
			read_proc(path, buf, sizeof(buf));
			if (!strcmp(buf, "/proc/self/exe"))
				pid = atoi(e->d_name);
		}
		if (d)
			closedir(d);
		if (pid)
			return pid;
	}
	return 0;
}

// Read-only here: the sandbox's lbbox stays waiting for its image helper until told to go.
static const char holder[] = "#!/bin/busybox sh\n"
			     "while [ ! -e /out/go ]; do sleep 0.05; done\n";

static char *holding_root(void)
{
	char *root = script_root(holder);
	char *out = lbt_strdupf("%s/out", root);
	mkdir(out, 0755);
	free(out);
	return root;
}

// Runs args (lbbox's, through the copies) whose sandbox runs the hostile /bin/sh, takes the
// executable of the lbbox it starts, and checks it cannot be written once that lbbox is gone.
static void hold_and_write(const char *const *args, const char *wrap, const char *bindir,
			   const char *out)
{
	struct lbt_proc p;
	struct lb_run_out o;
	lbt_set_wrapper(wrap);
	cr_assert_eq(lbt_spawnv(&p, args), 0);
	lbt_set_wrapper(NULL);
	pid_t pid = find_marked_lbbox("SEAL_MARK=g7");
	if (!pid) {
		lbt_wait(&p, &o, 5);
		cr_assert_fail("no lbbox ran inside the sandbox (status %d, %s)", o.status, o.err);
	}
	char *exe = lbt_strdupf("/proc/%d/exe", (int)pid), link[256] = "";
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0, "open %s: %s", exe, strerror(errno));
	cr_assert(readlink(exe, link, sizeof(link) - 1) > 0);
	char *go = lbt_strdupf("%s/go", out);
	lbt_write_file(go, "");
	lbt_wait(&p, &o, 30);
	lbt_out_free(&o);
	char *copy = lbt_strdupf("%s/lbbox", bindir);
	assert_unwritable(fd, copy);
	const char *want = geteuid() == 0 ? "/lbbox" : "/memfd:lbbox-sealed (deleted)";
	cr_assert_str_eq(link, want, "lbbox in the sandbox ran from %s", link);
	close(fd);
	free(exe), free(go), free(copy);
}

// F1: a foreground `lbbox run` (read-only root, the default) of an image whose command is the
// "#!/proc/self/exe" script: the lbbox the kernel starts as its pid 1 is the sealed form.
LBT_TEST(sealed_exe, foreground_run_is_sealed)
{
	char *dir, *wrap = copies_wrapper(&dir), *root = holding_root();
	char *out = lbt_mkdir_work("out"), *vol = lbt_strdupf("%s:/out", out);
	const char *args[] = {"run",
			      "--rootfs",
			      root,
			      "-v",
			      vol,
			      "-e",
			      "SEAL_MARK=g7",
			      "-e",
			      "LBBOX_IMAGE_TOOL=/lbbox-image",
			      "-e",
			      "LBBOX_ROOT=/tmp/st",
			      "-e",
			      "LBBOX_RUNROOT=/tmp/rr",
			      "-e",
			      "ASAN_OPTIONS=detect_leaks=0",
			      "--",
			      "/bin/sh",
			      NULL};
	hold_and_write(args, wrap, dir, out);
	free(dir), free(wrap), free(root), free(out), free(vol);
}

// F2: `session exec` on a read-only session runs the image's own /bin/sh, the same script.
LBT_TEST(sealed_exe, exec_on_read_only_session_is_sealed)
{
	char *dir, *wrap = copies_wrapper(&dir), *root = holding_root();
	char *out = lbt_mkdir_work("out"), *vol = lbt_strdupf("%s:/out", out);
	json_decref(lbt_runv_json(
	    (const char *[]){"session", "create", "s3", "--rootfs", root, "-v", vol, NULL}));
	const char *args[] = {"session",
			      "exec",
			      "s3",
			      "-e",
			      "SEAL_MARK=g7",
			      "-e",
			      "LBBOX_IMAGE_TOOL=/lbbox-image",
			      "-e",
			      "LBBOX_ROOT=/tmp/st",
			      "-e",
			      "LBBOX_RUNROOT=/tmp/rr",
			      "-e",
			      "ASAN_OPTIONS=detect_leaks=0",
			      "--",
			      "true",
			      NULL};
	hold_and_write(args, wrap, dir, out);
	lbt_session_rm("s3");
	free(dir), free(wrap), free(root), free(out), free(vol);
}

// F3: a session's pid 1 runs lbbox-init from the view (root) or a sealed copy (a user), and
// its executable cannot be written once it has exited.
LBT_TEST(sealed_exe, session_init_is_sealed)
{
	char *dir, *wrap = copies_wrapper(&dir);
	lbt_set_wrapper(wrap);
	json_t *j = lbt_runv_json(
	    (const char *[]){"session", "create", "s4", "--rootfs", lbt_rootfs(), NULL});
	lbt_set_wrapper(NULL);
	const char *backend = json_string_value(json_object_get(j, "backend_session_id"));
	cr_assert(backend && !strncmp(backend, "lbbox-", 6), "no sandbox id");
	char *state = lbt_strdupf("%s/%s/state.json", lbt_runroot(), backend + 6);
	json_t *s = json_load_file(state, 0, NULL);
	cr_assert_not_null(s, "read %s", state);
	int pid = (int)json_integer_value(json_object_get(s, "pid"));
	char *exe = lbt_strdupf("/proc/%d/exe", pid), link[256] = "";
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0, "open %s: %s", exe, strerror(errno));
	cr_assert(readlink(exe, link, sizeof(link) - 1) > 0);
	lbt_session_rm("s4");
	char *copy = lbt_strdupf("%s/lbbox-init", dir);
	assert_unwritable(fd, copy);
	const char *want = geteuid() == 0 ? "/lbbox-init" : "/memfd:lbbox-sealed (deleted)";
	cr_assert_str_eq(link, want, "the session's pid 1 runs %s", link);
	close(fd);
	json_decref(j), json_decref(s);
	free(dir), free(wrap), free(state), free(exe), free(copy);
}

// Runs lbbox from a detached read-only overlay view of its directory that lbbox did not make
// (no re-execution marker names it): as a host where lbbox runs chrooted from some read-only
// overlay, whose mount its mountinfo does not list.
static const char foreign_view[] =
    "#!/usr/bin/python3\n"
    "import ctypes, os, sys, tempfile\n"
    "c = ctypes.CDLL(None, use_errno=True)\n"
    "b = os.path.realpath(sys.argv[1])\n"
    "fs = c.syscall(430, b'overlay', 1)\n" /* fsopen, FSOPEN_CLOEXEC */
    "e = tempfile.mkdtemp()\n"
    "top, emp = os.open(os.path.dirname(b), os.O_PATH), os.open(e, os.O_PATH)\n"
    "low = f'/proc/self/fd/{top}:/proc/self/fd/{emp}'.encode()\n"
    "ok = c.syscall(431, fs, 1, b'lowerdir', low, 0) == 0\n"  /* fsconfig SET_STRING */
    "ok = ok and c.syscall(431, fs, 6, None, None, 0) == 0\n" /* CMD_CREATE */
    "m = c.syscall(432, fs, 1, 1) if ok else -1\n"	      /* fsmount, RDONLY */
    "os.rmdir(e)\n"
    "if m < 0: sys.exit(98)\n"
    "fd = os.open(os.path.basename(b), os.O_PATH, dir_fd=m)\n"
    "os.execve(fd, [b] + sys.argv[2:], os.environ)\n";

// That lbbox does not take the view for one of its own: it re-executes from a form it made,
// here a memfd copy (its path names no file outside that view, so it cannot make a view), and a
// session's pid 1, without an lbbox-init at that path, stays that copy. Had it trusted the
// foreign view, pid 1 would run from it ("/lbbox").
LBT_TEST(sealed_exe, a_view_lbbox_did_not_make_is_not_trusted)
{
	if (geteuid() != 0)
		cr_skip("an overlay needs root");
	if (access("/usr/bin/python3", X_OK) != 0) /* the qemu guest has none */
		cr_skip("no python3 to make the view with");
	char *wrap = lbt_strdupf("%s/foreign-view", lbt_workdir());
	lbt_write_file(wrap, foreign_view);
	chmod(wrap, 0755);
	int views = attached_views();
	lbt_set_wrapper(wrap);
	json_t *j = lbt_runv_json(
	    (const char *[]){"session", "create", "s5", "--rootfs", lbt_rootfs(), NULL});
	lbt_set_wrapper(NULL);
	const char *backend = json_string_value(json_object_get(j, "backend_session_id"));
	cr_assert(backend && !strncmp(backend, "lbbox-", 6), "no sandbox id");
	char *state = lbt_strdupf("%s/%s/state.json", lbt_runroot(), backend + 6);
	json_t *s = json_load_file(state, 0, NULL);
	cr_assert_not_null(s, "read %s", state);
	char *exe = lbt_strdupf("/proc/%d/exe", (int)json_integer_value(json_object_get(s, "pid")));
	char link[256] = "";
	cr_assert(readlink(exe, link, sizeof(link) - 1) > 0);
	lbt_session_rm("s5");
	cr_assert_str_eq(link, "/memfd:lbbox-sealed (deleted)", "the session's pid 1 runs %s",
			 link);
	cr_assert_eq(attached_views(), views, "a view is attached on the host");
	json_decref(j), json_decref(s);
	free(wrap), free(state), free(exe);
}

// The parent (host pid) of the one process whose argv has arg, waiting up to 10 s for it.
static pid_t parent_of_marked(const char *arg)
{
	char buf[8192], path[64];
	for (double end = lbt_now() + 10; lbt_now() < end; usleep(20000)) {
		DIR *d = opendir("/proc");
		pid_t ppid = 0;
		for (struct dirent *e; d && !ppid && (e = readdir(d));) {
			snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
			size_t n = read_proc(path, buf, sizeof(buf));
			if (n < 6 || strcmp(buf, "sleep") || strcmp(buf + 6, arg))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
			read_proc(path, buf, sizeof(buf));
			char *close = strrchr(buf, ')');
			if (close)
				sscanf(close + 2, "%*c %d", &ppid);
		}
		if (d)
			closedir(d);
		if (ppid)
			return ppid;
	}
	return 0;
}

// A foreground run's pid 1 stays an lbbox (a tiny init) for the sandbox's life: it holds no
// handle on the sealed view, a read-only window on lbbox's whole install directory.
LBT_TEST(sealed_exe, pid_1_keeps_no_handle_on_the_view)
{
	struct lbt_proc p;
	struct lb_run_out o;
	lbt_add_marker("987654");
	cr_assert_eq(lbt_spawn(&p, "run", "--rootfs", lbt_rootfs(), "--", "sleep", "987654", NULL),
		     0);
	pid_t init = parent_of_marked("987654");
	cr_assert(init > 0, "no sandbox pid 1 found");
	char *fds = lbt_strdupf("/proc/%d/fd", (int)init);
	DIR *d = opendir(fds);
	cr_assert_not_null(d, "%s: %s", fds, strerror(errno));
	int seen = 0;
	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		struct statfs sf;
		char *fd = lbt_strdupf("%s/%s", fds, e->d_name);
		if (e->d_name[0] != '.' && stat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
		    statfs(fd, &sf) == 0 && sf.f_type == 0x794c7630 /* overlayfs */)
			cr_assert_fail("pid 1's fd %s is a directory on an overlay (the view)",
				       e->d_name);
		seen++;
		free(fd);
	}
	closedir(d);
	cr_assert_gt(seen, 2);
	cr_assert_eq(lbt_kill_marked("987654"), 1);
	lbt_wait(&p, &o, 20);
	lbt_out_free(&o);
	free(fds);
}
