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
#include <sys/mman.h>
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
	/* nothing unpacked is left in TMPDIR: only the store is there */
	DIR *d = opendir(top);
	struct dirent *e;
	cr_assert(d);
	while ((e = readdir(d)))
		cr_assert(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
			      !strcmp(e->d_name, "skills"),
			  "left in TMPDIR: %s", e->d_name);
	closedir(d);
}
