/* The skill store on a private directory, driven directly (the conformance suite drives it over
 * the RPC, in jobs that end with _exit): in the ASan build, a leak on any of these paths fails. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/util.h"
#include "lbbox/box/skill.h"

static char top[256];
static struct lb_skill_store st;

static void setup(void)
{
	struct lb_err *err = NULL;
	snprintf(top, sizeof(top), "/tmp/lbbox-skill-test-XXXXXX");
	cr_assert(mkdtemp(top));
	setenv("TMPDIR", top, 1);
	cr_assert_eq(lb_skill_store_open(top, NULL, "ws-test", &st, &err), 0, "%s",
		     err ? err->msg : "");
}

static void teardown(void)
{
	lb_skill_store_close(&st);
	lb_rm_rf(top, NULL);
	unsetenv("TMPDIR");
}

/* The call's error text (and it failed), freed after the next call. */
static const char *failed(int r, struct lb_err **err)
{
	static char msg[512];
	cr_assert_lt(r, 0);
	snprintf(msg, sizeof(msg), "%s", (*err)->msg);
	lb_err_free(err);
	return msg;
}

TestSuite(skill_store, .init = setup, .fini = teardown);

Test(skill_store, catalogue_and_files)
{
	struct lb_err *err = NULL;
	json_t *out = NULL, *data = json_pack("{s:s, s:s}", "name", "k", "description", "d");
	cr_assert_eq(lb_skill_create(&st, data, &out, &err), 0);
	cr_assert_str_eq(json_string_value(json_object_get(out, "description")), "d");
	json_decref(out);
	cr_assert_str_eq(failed(lb_skill_create(&st, data, &out, &err), &err),
			 "Skill with name \"k\" already exists");
	json_decref(data);
	data = json_pack("{s:s}", "instructions", "new");
	cr_assert_eq(lb_skill_update(&st, "k", data, &out, &err), 0);
	json_decref(out);
	json_decref(data);
	cr_assert_eq(lb_skill_write_file(&st, "k", "a/b.txt", "x", 1, &out, &err), 0);
	json_decref(out);
	cr_assert_eq(lb_skill_read_file(&st, "k", "a/b.txt", &out, &err), 0);
	cr_assert_str_eq(json_string_value(json_object_get(out, "content")), "x");
	json_decref(out);
	cr_assert_eq(lb_skill_list_files(&st, "k", ".", true, 1, &out, &err), 0);
	cr_assert(json_is_true(json_object_get(out, "truncated")));
	json_decref(out);
	cr_assert_str_eq(failed(lb_skill_read_file(&st, "k", "../x", &out, &err), &err),
			 "path must stay within the skill package root");
	cr_assert_eq(lb_skill_list(&st, &out, &err), 0);
	cr_assert_eq(json_array_size(json_object_get(out, "skills")), 1);
	json_decref(out);
	char path[512];
	snprintf(path, sizeof(path), "%s/k", st.root);
	cr_assert_eq(lb_skill_scan(&st, path, &out, &err), 0);
	json_decref(out);
	char *root = NULL;
	cr_assert_eq(lb_skill_package_root(&st, "k", &root, &err), 0);
	cr_assert_str_eq(root, path);
	free(root);
	cr_assert_eq(lb_skill_delete(&st, "k", &err), 0);
	cr_assert_eq(lb_skill_get(&st, "k", &out, &err), 0);
	cr_assert(json_is_null(json_object_get(out, "skill")));
	json_decref(out);
}

/* A zip of (name, data, mode) entries in a memfd, written by libarchive. */
static int zip_fd(const char *const (*entries)[2], const mode_t *modes, size_t n)
{
	int fd = memfd_create("zip", 0);
	struct archive *a = archive_write_new();
	cr_assert(fd >= 0 && a);
	archive_write_set_format_zip(a);
	cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, entries[i][0]);
		archive_entry_set_mode(e, modes[i]);
		if (S_ISLNK(modes[i]))
			archive_entry_set_symlink(e, entries[i][1]);
		else
			archive_entry_set_size(e, (la_int64_t)strlen(entries[i][1]));
		cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK);
		if (S_ISREG(modes[i]))
			archive_write_data(a, entries[i][1], strlen(entries[i][1]));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	return fd;
}

/* Nothing but the store is left in TMPDIR (the unpack directories are gone). */
static void tmpdir_clean(void)
{
	DIR *d = opendir(top);
	struct dirent *e;
	cr_assert(d);
	while ((e = readdir(d)))
		cr_assert(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
			      !strcmp(e->d_name, "skills"),
			  "left in TMPDIR: %s", e->d_name);
	closedir(d);
}

Test(skill_store, zip_preview_install_and_refusals)
{
	static const char *const good[][2] = {{"p/SKILL.md", "---\nname: z\n---\nx"},
					      {"p/run.sh", "echo\n"}};
	static const mode_t good_modes[] = {S_IFREG | 0644, S_IFREG | 0755};
	struct lb_err *err = NULL;
	json_t *out = NULL, *opts = json_pack("{s:s}", "filename", "up.zip");
	int fd = zip_fd(good, good_modes, 2);
	cr_assert_eq(lb_skill_zip_preview(&st, fd, opts, &out, &err), 0, "%s", err ? err->msg : "");
	json_decref(out);
	cr_assert_eq(lb_skill_zip_install(&st, fd, opts, &out, &err), 0, "%s", err ? err->msg : "");
	json_t *s = json_array_get(json_object_get(out, "skills"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(s, "name")), "z");
	json_decref(out);
	const char *m = failed(lb_skill_zip_install(&st, fd, opts, &out, &err), &err);
	cr_assert(!strncmp(m, "Skill directory already exists: ", 32), "%s", m);
	close(fd);
	static const char *const link[][2] = {{"l/SKILL.md", "x"}, {"l/s", "/etc/passwd"}};
	static const mode_t link_modes[] = {S_IFREG | 0644, S_IFLNK | 0777};
	fd = zip_fd(link, link_modes, 2);
	cr_assert_str_eq(failed(lb_skill_zip_preview(&st, fd, opts, &out, &err), &err),
			 "Archive contains a symbolic link: l/s");
	close(fd);
	json_decref(opts);
	tmpdir_clean();
}

/* A zip of regular files named names[0..n), each holding "x". */
static int zip_of(char **names, size_t n)
{
	const char *(*entries)[2] = calloc(n, sizeof(*entries));
	mode_t *modes = calloc(n, sizeof(*modes));
	cr_assert(entries && modes);
	for (size_t i = 0; i < n; i++) {
		entries[i][0] = names[i];
		entries[i][1] = "x";
		modes[i] = S_IFREG | 0644;
	}
	int fd = zip_fd((const char *const(*)[2])entries, modes, n);
	free(entries);
	free(modes);
	return fd;
}

/* "<first>/" followed by levels components "a/" and then "f". */
static char *deep_name(const char *first, int levels)
{
	char *s = malloc(strlen(first) + 2 * (size_t)levels + 3), *w = s;
	cr_assert(s);
	w += sprintf(w, "%s/", first);
	for (int i = 0; i < levels; i++)
		w += sprintf(w, "a/");
	strcpy(w, "f");
	return s;
}

static const char *zip_refusal(char **names, size_t n)
{
	struct lb_err *err = NULL;
	json_t *out = NULL, *opts = json_pack("{s:s}", "filename", "up.zip");
	int fd = zip_of(names, n);
	const char *m = failed(lb_skill_zip_preview(&st, fd, opts, &out, &err), &err);
	close(fd);
	json_decref(opts);
	return m;
}

/* A few entries 2000 levels deep were minutes of CPU and a million directories to unpack (and
 * one descriptor per level to clean up): names are bounded in depth and length, and the
 * directories they imply count toward a cap on what an archive creates. */
Test(skill_store, zip_deep_and_long_names_refused, .timeout = 60)
{
	char *names[80];
	names[0] = deep_name("k", 40);
	const char *m = zip_refusal(names, 1);
	cr_assert(!strncmp(m, "Archive contains a path deeper than 32 levels: k/a/a/", 53), "%s",
		  m);
	free(names[0]);
	names[0] = deep_name("k", 600);
	cr_assert_str_eq(zip_refusal(names, 1), "Archive contains a path longer than 1024 bytes");
	free(names[0]);
	/* 31 levels each, within the depth limit: 80 x 31 directories implied */
	for (int i = 0; i < 80; i++) {
		char first[16];
		snprintf(first, sizeof(first), "d%d", i);
		names[i] = deep_name(first, 30);
	}
	cr_assert_str_eq(zip_refusal(names, 80),
			 "Archive creates too many files and directories (maximum 2048)");
	for (int i = 0; i < 80; i++)
		free(names[i]);
	tmpdir_clean();
}

/* The package's SKILL.md, made a FIFO by a sandbox that has the package mounted (a regular
 * skill.md keeps it a package): an update replaced it instead of blocking forever in open. */
Test(skill_store, fifo_skill_md_replaced_not_opened, .timeout = 20)
{
	struct lb_err *err = NULL;
	json_t *out = NULL, *data = json_pack("{s:s, s:s}", "name", "f", "instructions", "x");
	char md[512], lower[512], fifo[512];
	cr_assert_eq(lb_skill_create(&st, data, &out, &err), 0);
	json_decref(out);
	json_decref(data);
	snprintf(md, sizeof(md), "%s/f/SKILL.md", st.root);
	snprintf(lower, sizeof(lower), "%s/f/skill.md", st.root);
	cr_assert_eq(rename(md, lower), 0);
	cr_assert_eq(mkfifo(md, 0644), 0);
	data = json_pack("{s:s}", "description", "y");
	cr_assert_eq(lb_skill_update(&st, "f", data, &out, &err), 0, "%s", err ? err->msg : "");
	json_decref(out);
	json_decref(data);
	struct stat s;
	cr_assert_eq(lstat(md, &s), 0);
	cr_assert(S_ISREG(s.st_mode));
	/* and no temporary file is left next to it */
	snprintf(fifo, sizeof(fifo), "%s/f", st.root);
	DIR *d = opendir(fifo);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(n, 2);
	/* write_skill_file does not write into a FIFO someone reads */
	snprintf(fifo, sizeof(fifo), "%s/f/p", st.root);
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	int rd = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert(rd >= 0);
	cr_assert_str_eq(failed(lb_skill_write_file(&st, "f", "p", "x", 1, &out, &err), &err),
			 "cannot write the skill file: p is not a regular file");
	close(rd);
}

/* depth directories "d" nested below dirfd, a file at the bottom. */
static void deep_tree(int dirfd, int depth)
{
	int cur = dup(dirfd);
	for (int i = 0; i < depth; i++) {
		cr_assert_eq(mkdirat(cur, "d", 0755), 0);
		int next = openat(cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert(next >= 0);
		close(cur);
		cur = next;
	}
	int f = openat(cur, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	cr_assert(f >= 0);
	close(f);
	close(cur);
}

/* A tree a sandbox built in its package, deeper than any cap: delete removes all of it. */
Test(skill_store, delete_removes_a_deep_tree, .timeout = 60)
{
	struct lb_err *err = NULL;
	json_t *out = NULL, *data = json_pack("{s:s}", "name", "k");
	char pkg[512];
	cr_assert_eq(lb_skill_create(&st, data, &out, &err), 0);
	json_decref(out);
	json_decref(data);
	snprintf(pkg, sizeof(pkg), "%s/k", st.root);
	int fd = open(pkg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(fd >= 0);
	deep_tree(fd, 3000);
	close(fd);
	cr_assert_eq(lb_skill_delete(&st, "k", &err), 0, "%s", err ? err->msg : "");
	struct stat s;
	cr_assert(lstat(pkg, &s) < 0 && errno == ENOENT);
}

TestSuite(rm_rf);

/* lb_rm_rf removes a tree deeper than the descriptors it may open (it took one per level). */
Test(rm_rf, deep_tree_with_few_descriptors, .timeout = 60)
{
	char dir[] = "/tmp/lbbox-rmrf-XXXXXX";
	struct lb_err *err = NULL;
	struct rlimit old, low;
	cr_assert(mkdtemp(dir));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(fd >= 0);
	deep_tree(fd, 3000);
	cr_assert_eq(mkdirat(fd, "wide", 0755), 0); /* and a sibling, with files */
	for (int i = 0; i < 50; i++) {
		char name[32];
		snprintf(name, sizeof(name), "wide/%d", i);
		cr_assert_eq(mkdirat(fd, name, 0755), 0);
		if (i % 10 == 0) { /* deeper than the streams it keeps open: "wide" is read again */
			int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			cr_assert(sub >= 0);
			deep_tree(sub, 40);
			close(sub);
		}
	}
	close(fd);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	int r = lb_rm_rf(dir, &err);
	setrlimit(RLIMIT_NOFILE, &old);
	cr_assert_eq(r, 0, "%s", err ? err->msg : "");
	struct stat s;
	cr_assert(lstat(dir, &s) < 0 && errno == ENOENT);
	/* its contract otherwise: a missing path is fine, a file is unlinked */
	cr_assert_eq(lb_rm_rf(dir, &err), 0);
	int f = open(dir, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert(f >= 0);
	close(f);
	cr_assert_eq(lb_rm_rf(dir, &err), 0);
	cr_assert(lstat(dir, &s) < 0 && errno == ENOENT);
}

/* A mount point in the tree is not crossed (EXDEV) and everything else still goes: lb_rm_rf's
 * contract for the session and state directories. In a mount namespace of this test's own. */
Test(rm_rf, mount_point_left_rest_removed, .timeout = 30)
{
	char dir[] = "/tmp/lbbox-rmrf-XXXXXX", path[64];
	struct lb_err *err = NULL;
	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		cr_skip("needs root for a mount namespace");
	cr_assert(mkdtemp(dir));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(mkdirat(fd, "m", 0755), 0);
	deep_tree(fd, 5);
	close(fd);
	snprintf(path, sizeof(path), "%s/m", dir);
	cr_assert_eq(mount("tmpfs", path, "tmpfs", 0, NULL), 0);
	cr_assert_lt(lb_rm_rf(dir, &err), 0);
	cr_assert_eq(err->errnum, EXDEV, "%s", err->msg);
	lb_err_free(&err);
	struct stat s;
	snprintf(path, sizeof(path), "%s/d", dir);
	cr_assert(lstat(path, &s) < 0 && errno == ENOENT);
	snprintf(path, sizeof(path), "%s/m", dir);
	cr_assert_eq(umount(path), 0);
	cr_assert_eq(lb_rm_rf(dir, &err), 0);
}
