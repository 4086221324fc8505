/*
 * Unit tests for the secure layer unpack. Every layer is generated here with libarchive's write
 * API, so hostile entries can be crafted at will. Each test unpacks into <tmp>/root next to a
 * sibling <tmp>/outside holding a canary file; hostile layers must leave the canary and the rest
 * of the host untouched.
 */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lbbox/image/unpack.h"
#include "lbbox/base/util.h"

enum filter { PLAIN, GZIP, ZSTD };

/* ---- a tar built in memory ---- */

struct tb {
	struct archive *a;
	char *buf;
	size_t len, cap;
};

static la_ssize_t tb_write_cb(struct archive *a, void *client, const void *p, size_t n)
{
	struct tb *t = client;
	if (t->len + n > t->cap) {
		t->cap = (t->len + n) * 2;
		t->buf = realloc(t->buf, t->cap);
		cr_assert_not_null(t->buf);
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	return (la_ssize_t)n;
}

static void tb_init(struct tb *t)
{
	*t = (struct tb){0};
	t->a = archive_write_new();
	cr_assert_eq(archive_write_set_format_pax_restricted(t->a), ARCHIVE_OK);
	cr_assert_eq(archive_write_add_filter_none(t->a), ARCHIVE_OK);
	cr_assert_eq(archive_write_open(t->a, t, NULL, tb_write_cb, NULL), ARCHIVE_OK);
}

static struct archive_entry *tb_new(const char *path, mode_t type, mode_t perm)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_mtime(e, 1600000000, 0);
	return e;
}

static void tb_add(struct tb *t, struct archive_entry *e, const void *data, size_t len)
{
	cr_assert_eq(archive_write_header(t->a, e), ARCHIVE_OK, "%s", archive_error_string(t->a));
	if (len)
		cr_assert_eq(archive_write_data(t->a, data, len), (la_ssize_t)len);
	archive_entry_free(e);
}

static void tb_file(struct tb *t, const char *path, const char *data, mode_t perm)
{
	struct archive_entry *e = tb_new(path, AE_IFREG, perm);
	archive_entry_set_size(e, (la_int64_t)strlen(data));
	tb_add(t, e, data, strlen(data));
}

static void tb_dir(struct tb *t, const char *path, mode_t perm)
{
	tb_add(t, tb_new(path, AE_IFDIR, perm), NULL, 0);
}

static void tb_symlink(struct tb *t, const char *path, const char *target)
{
	struct archive_entry *e = tb_new(path, AE_IFLNK, 0777);
	archive_entry_set_symlink(e, target);
	tb_add(t, e, NULL, 0);
}

static void tb_hardlink(struct tb *t, const char *path, const char *target)
{
	struct archive_entry *e = tb_new(path, AE_IFREG, 0644);
	archive_entry_set_hardlink(e, target);
	tb_add(t, e, NULL, 0);
}

static void tb_node(struct tb *t, const char *path, mode_t type, dev_t rdev)
{
	struct archive_entry *e = tb_new(path, type, 0666);
	archive_entry_set_rdev(e, rdev);
	tb_add(t, e, NULL, 0);
}

static void tb_finish(struct tb *t)
{
	cr_assert_eq(archive_write_close(t->a), ARCHIVE_OK);
	archive_write_free(t->a);
	t->a = NULL;
}

/* A raw ustar header (plus data), for names and sizes libarchive's writer would normalise. */
static void raw_entry(struct tb *t, const char *name, char type, uint64_t size, const char *link)
{
	unsigned char h[512] = {0};
	unsigned int sum = 0;

	strncpy((char *)h, name, 100);
	sprintf((char *)h + 100, "%07o", 0644);
	sprintf((char *)h + 108, "%07o", 0);
	sprintf((char *)h + 116, "%07o", 0);
	if (size < 077777777777ULL) {
		sprintf((char *)h + 124, "%011llo", (unsigned long long)size);
	} else { /* GNU base-256 */
		h[124] = 0x80;
		for (int i = 0; i < 8; i++)
			h[135 - i] = (unsigned char)(size >> (8 * i));
	}
	sprintf((char *)h + 136, "%011o", 1600000000);
	memset(h + 148, ' ', 8);
	h[156] = (unsigned char)type;
	if (link)
		strncpy((char *)h + 157, link, 100);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	sprintf((char *)h + 148, "%06o", sum);
	h[155] = ' ';
	tb_write_cb(NULL, t, h, sizeof(h));
}

static void raw_end(struct tb *t)
{
	static const char zeros[1024];
	tb_write_cb(NULL, t, zeros, sizeof(zeros));
}

/* ---- per-test directories ---- */

static char base[64], root[128], outside[128], blob[128];

static void setup(void)
{
	strcpy(base, "/tmp/lbbox-unpack-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	snprintf(blob, sizeof(blob), "%s/layer.blob", base);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mkdir(outside, 0755), 0);
	char canary[160];
	snprintf(canary, sizeof(canary), "%s/canary", outside);
	FILE *f = fopen(canary, "w");
	cr_assert_not_null(f);
	fputs("canary", f);
	fclose(f);
}

static void teardown(void)
{
	struct lb_err *err = NULL;
	lb_rm_rf(base, &err);
	lb_err_free(&err);
}

TestSuite(unpack, .init = setup, .fini = teardown);

/* The sibling directory still holds exactly the untouched canary. */
static void assert_outside_untouched(void)
{
	char path[192];
	snprintf(path, sizeof(path), "%s/canary", outside);
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_nlink, 1, "canary gained a hardlink");
	FILE *f = fopen(path, "r");
	char buf[32] = {0};
	cr_assert_not_null(f);
	cr_assert_eq(fread(buf, 1, sizeof(buf) - 1, f), 6);
	fclose(f);
	cr_assert_str_eq(buf, "canary");
	DIR *d = opendir(outside);
	int n = 0;
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	cr_assert_eq(n, 1, "something appeared next to the canary");
	cr_assert_eq(stat(root, &st), 0);
	cr_assert(S_ISDIR(st.st_mode), "the root was replaced");
}

/* Writes the tar (compressed with f) to blob. */
static void write_blob(const struct tb *t, enum filter f)
{
	struct archive *a = archive_write_new();
	cr_assert_eq(archive_write_set_format_raw(a), ARCHIVE_OK);
	if (f == GZIP)
		cr_assert_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	else if (f == ZSTD)
		cr_assert_eq(archive_write_add_filter_zstd(a), ARCHIVE_OK);
	cr_assert_eq(archive_write_set_bytes_in_last_block(a, 1), ARCHIVE_OK);
	cr_assert_eq(archive_write_open_filename(a, blob), ARCHIVE_OK);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "layer");
	archive_entry_set_filetype(e, AE_IFREG);
	cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK);
	if (t->len)
		cr_assert_eq(archive_write_data(a, t->buf, t->len), (la_ssize_t)t->len);
	archive_entry_free(e);
	cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static void write_raw_blob(const void *data, size_t len)
{
	struct lb_err *err = NULL;
	cr_assert_eq(lb_write_fileat(AT_FDCWD, blob, data, len, O_CREAT | O_TRUNC, 0644, &err), 0);
}

static int unpack_opts(const struct lb_unpack_opts *o, struct lb_unpack_result *res,
		       struct lb_err **err)
{
	return lb_unpack_layer(blob, root, o, res, err);
}

static int unpack_flags(unsigned flags, struct lb_unpack_result *res, struct lb_err **err)
{
	struct lb_unpack_opts o = {.flags = flags};
	return unpack_opts(&o, res, err);
}

/* Builds, writes and unpacks t; expects success. */
static void unpack_ok(struct tb *t, unsigned flags, struct lb_unpack_result *res)
{
	struct lb_err *err = NULL;
	struct lb_unpack_result r;
	tb_finish(t);
	write_blob(t, PLAIN);
	cr_assert_eq(unpack_flags(flags, res ? res : &r, &err), 0, "%s", err ? err->msg : "");
	free(t->buf);
}

/* Builds, writes and unpacks t; expects a failure mentioning want. */
static void unpack_fails(struct tb *t, unsigned flags, const char *want)
{
	struct lb_err *err = NULL;
	struct lb_unpack_result r;
	if (t->a) /* raw_entry() streams have no writer */
		tb_finish(t);
	write_blob(t, PLAIN);
	cr_assert_lt(unpack_flags(flags, &r, &err), 0, "hostile layer accepted");
	cr_assert_not_null(err);
	cr_assert(strstr(err->msg, want), "'%s' lacks '%s'", err->msg, want);
	lb_err_free(&err);
	free(t->buf);
}

static char *at_root(const char *rel)
{
	static char path[4][512];
	static int i;
	i = (i + 1) % 4;
	snprintf(path[i], sizeof(path[i]), "%s/%s", root, rel);
	return path[i];
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static void sha256_hex(const void *p, size_t n, char out[72])
{
	unsigned char md[32];
	unsigned int len = 0;
	cr_assert_eq(EVP_Digest(p, n, md, &len, EVP_sha256(), NULL), 1);
	char *o = out + sprintf(out, "sha256:");
	for (unsigned int i = 0; i < len; i++)
		o += sprintf(o, "%02x", md[i]);
}

static void read_to(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	size_t got = fread(buf, 1, n - 1, f);
	buf[got] = '\0';
	fclose(f);
}

/* ---- round trip ---- */

static void build_sample(struct tb *t)
{
	tb_init(t);
	struct archive_entry *e = tb_new("etc/", AE_IFDIR, 0755);
	archive_entry_set_mtime(e, 1500000000, 0);
	tb_add(t, e, NULL, 0);
	e = tb_new("etc/passwd", AE_IFREG, 0640);
	archive_entry_set_uid(e, 1234);
	archive_entry_set_gid(e, 5678);
	archive_entry_set_mtime(e, 1400000000, 123456789);
	archive_entry_set_size(e, 5);
	archive_entry_xattr_add_entry(e, "user.lbbox", "v1", 2);
	tb_add(t, e, "root\n", 5);
	/* a capability-carrying binary, as ping in many images */
	struct vfs_cap_data cap = {.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE};
	cap.data[0].permitted = 1u << CAP_NET_RAW;
	e = tb_new("bin/ping", AE_IFREG, 0755);
	archive_entry_set_size(e, 3);
	archive_entry_xattr_add_entry(e, "security.capability", &cap, sizeof(cap));
	tb_add(t, e, "elf", 3);
	tb_file(t, "bin/su", "su", 04755);
	tb_symlink(t, "bin/sh", "/bin/busybox");
	tb_hardlink(t, "etc/passwd-", "etc/passwd");
	tb_node(t, "run/fifo", AE_IFIFO, 0);
	e = tb_new("ro/", AE_IFDIR, 0555);
	archive_entry_set_mtime(e, 1300000000, 0);
	tb_add(t, e, NULL, 0);
	tb_file(t, "ro/inside", "x", 0444);
	e = tb_new("big", AE_IFREG, 0644);
	static char big[300000];
	memset(big, 'b', sizeof(big));
	archive_entry_set_size(e, sizeof(big));
	tb_add(t, e, big, sizeof(big));
	tb_finish(t);
}

static void check_sample(void)
{
	struct stat st;
	char buf[64];

	cr_assert_eq(lstat(at_root("etc/passwd"), &st), 0);
	cr_assert_eq(st.st_uid, 1234);
	cr_assert_eq(st.st_gid, 5678);
	cr_assert_eq(st.st_mode & 07777, 0640);
	cr_assert_eq(st.st_mtim.tv_sec, 1400000000);
	cr_assert_eq(st.st_mtim.tv_nsec, 123456789);
	cr_assert_eq(st.st_nlink, 2, "hardlink not restored");
	read_to(at_root("etc/passwd"), buf, sizeof(buf));
	cr_assert_str_eq(buf, "root\n");
	cr_assert_eq(getxattr(at_root("etc/passwd"), "user.lbbox", buf, sizeof(buf)), 2);
	cr_assert_eq(memcmp(buf, "v1", 2), 0);
	cr_assert_gt(getxattr(at_root("bin/ping"), "security.capability", buf, sizeof(buf)), 0);
	cr_assert_eq(lstat(at_root("bin/su"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 04755, "setuid dropped while privileged");
	cr_assert_eq(lstat(at_root("bin/sh"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	cr_assert_eq(st.st_mtim.tv_sec, 1600000000, "symlink mtime");
	cr_assert_eq(readlink(at_root("bin/sh"), buf, sizeof(buf)), 12);
	cr_assert_eq(memcmp(buf, "/bin/busybox", 12), 0);
	cr_assert_eq(lstat(at_root("run/fifo"), &st), 0);
	cr_assert(S_ISFIFO(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0666);
	/* directory metadata survives the entries written after it */
	cr_assert_eq(lstat(at_root("etc"), &st), 0);
	cr_assert_eq(st.st_mtim.tv_sec, 1500000000);
	cr_assert_eq(lstat(at_root("ro"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0555);
	cr_assert_eq(st.st_mtim.tv_sec, 1300000000);
	cr_assert(exists(at_root("ro/inside")));
	cr_assert_eq(lstat(at_root("big"), &st), 0);
	cr_assert_eq(st.st_size, 300000);
	/* parents missing from the tar are created */
	cr_assert_eq(lstat(at_root("run"), &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
}

static void round_trip(enum filter f)
{
	struct tb t;
	struct lb_unpack_result res;
	struct lb_err *err = NULL;
	char want[72];

	build_sample(&t);
	write_blob(&t, f);
	cr_assert_eq(unpack_flags(0, &res, &err), 0, "%s", err ? err->msg : "");
	check_sample();
	sha256_hex(t.buf, t.len, want);
	cr_assert_str_eq(res.diff_id, want, "DiffID is not the sha256 of the uncompressed tar");
	cr_assert_eq(res.tar_size, t.len);
	cr_assert_eq(res.entries, 10);
	cr_assert_eq(res.skipped, 0);
	free(t.buf);
}

Test(unpack, round_trip_plain)
{
	round_trip(PLAIN);
}

Test(unpack, round_trip_gzip)
{
	round_trip(GZIP);
}

Test(unpack, round_trip_zstd)
{
	round_trip(ZSTD);
}

Test(unpack, media_types)
{
	struct tb t;
	struct lb_err *err = NULL;
	struct lb_unpack_result res;
	build_sample(&t);
	write_blob(&t, ZSTD);
	struct lb_unpack_opts o = {.media_type = "application/vnd.oci.image.layer.v1.tar+zstd"};
	cr_assert_eq(unpack_opts(&o, &res, &err), 0, "%s", err ? err->msg : "");
	o.media_type = "application/vnd.oci.image.layer.v1.tar+gzip";
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "does not match its content (zstd)"), "%s", err->msg);
	lb_err_free(&err);
	o.media_type = "application/vnd.oci.image.config.v1+json";
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "unsupported layer media type"), "%s", err->msg);
	lb_err_free(&err);
	/* docker has shipped plain tars as .tar.gzip */
	write_blob(&t, PLAIN);
	o.media_type = "application/vnd.docker.image.rootfs.diff.tar.gzip";
	cr_assert_eq(unpack_opts(&o, &res, &err), 0, "%s", err ? err->msg : "");
	free(t.buf);
}

Test(unpack, not_a_tar)
{
	struct lb_err *err = NULL;
	struct lb_unpack_result res;
	char junk[4096];
	memset(junk, 'j', sizeof(junk));
	write_raw_blob(junk, sizeof(junk));
	cr_assert_lt(unpack_flags(0, &res, &err), 0);
	cr_assert(strstr(err->msg, "not a tar archive"), "%s", err->msg);
	lb_err_free(&err);

	write_raw_blob("", 0);
	cr_assert_lt(unpack_flags(0, &res, &err), 0);
	cr_assert(strstr(err->msg, "empty"), "%s", err->msg);
	lb_err_free(&err);

	memcpy(junk, "BZh91AY&SY", 10);
	write_raw_blob(junk, sizeof(junk));
	cr_assert_lt(unpack_flags(0, &res, &err), 0);
	cr_assert(strstr(err->msg, "unsupported layer compression bzip2"), "%s", err->msg);
	lb_err_free(&err);

	memcpy(junk,
	       "\xfd"
	       "7zXZ\0",
	       6);
	write_raw_blob(junk, sizeof(junk));
	cr_assert_lt(unpack_flags(0, &res, &err), 0);
	cr_assert(strstr(err->msg, "unsupported layer compression xz"), "%s", err->msg);
	lb_err_free(&err);
}

Test(unpack, truncated_gzip)
{
	struct tb t;
	struct lb_err *err = NULL;
	struct lb_unpack_result res;
	build_sample(&t);
	write_blob(&t, GZIP);
	struct stat st;
	cr_assert_eq(stat(blob, &st), 0);
	cr_assert_eq(truncate(blob, st.st_size / 2), 0);
	cr_assert_lt(unpack_flags(0, &res, &err), 0);
	cr_assert_not_null(err);
	lb_err_free(&err);
	free(t.buf);
}

/* ---- hostile corpus ---- */

Test(unpack, dotdot_is_neutralised)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, "../outside/evil", "x", 0644);
	tb_file(&t, "a/../../../../outside/evil2", "x", 0644);
	tb_file(&t, "./../canary", "x", 0644);
	unpack_ok(&t, 0, NULL);
	assert_outside_untouched();
	cr_assert(exists(at_root("outside/evil")));
	cr_assert(exists(at_root("outside/evil2")));
	cr_assert(exists(at_root("canary")));
}

Test(unpack, absolute_paths_stay_inside)
{
	char abs[128], entry[160];
	snprintf(abs, sizeof(abs), "/tmp/lbbox-unpack-abs-%d-%ld", getpid(), random());
	snprintf(entry, sizeof(entry), "%s/evil", abs);
	struct tb t;
	tb_init(&t);
	tb_file(&t, entry, "x", 0644);
	snprintf(entry, sizeof(entry), "%s/canary", outside);
	tb_file(&t, entry, "overwritten", 0644);
	unpack_ok(&t, 0, NULL);
	cr_assert(!exists(abs), "%s created on the host", abs);
	assert_outside_untouched();
	cr_assert(exists(at_root(abs + 1)));
	cr_assert(exists(at_root(entry + 1)));
}

Test(unpack, symlink_parent_to_host_is_refused)
{
	struct tb t;
	tb_init(&t);
	tb_symlink(&t, "etc", outside); /* stands for "etc -> /etc" */
	tb_file(&t, "etc/evil", "x", 0644);
	unpack_fails(&t, 0, "layer entry 'etc/evil'");
	assert_outside_untouched();
}

Test(unpack, symlink_parent_resolves_inside_root)
{
	/* the symlink's absolute target exists inside the root: writes go there, not to the host */
	char dir[160];
	snprintf(dir, sizeof(dir), "%s/", outside + 1);
	struct tb t;
	tb_init(&t);
	tb_dir(&t, dir, 0755);
	tb_symlink(&t, "etc", outside);
	tb_file(&t, "etc/evil", "x", 0644);
	tb_file(&t, "etc/canary", "overwritten", 0644);
	unpack_ok(&t, 0, NULL);
	assert_outside_untouched();
	snprintf(dir, sizeof(dir), "%s/evil", outside + 1);
	cr_assert(exists(at_root(dir)));
}

Test(unpack, dotdot_symlink_chains_stay_inside)
{
	struct tb t;
	tb_init(&t);
	tb_symlink(&t, "up", "..");
	tb_symlink(&t, "a/b", "../../..");
	tb_file(&t, "up/up/up/outside/evil", "x", 0644);
	tb_file(&t, "a/b/a/b/outside/evil2", "x", 0644);
	tb_symlink(&t, "abs", "/../../");
	tb_file(&t, "abs/outside/evil3", "x", 0644);
	unpack_ok(&t, 0, NULL);
	assert_outside_untouched();
	cr_assert(exists(at_root("outside/evil")));
	cr_assert(exists(at_root("outside/evil2")));
	cr_assert(exists(at_root("outside/evil3")));
}

Test(unpack, final_symlink_is_never_followed)
{
	char target[160];
	snprintf(target, sizeof(target), "%s/canary", outside);
	struct tb t;
	tb_init(&t);
	tb_symlink(&t, "link", target);
	tb_file(&t, "link", "overwritten", 0644); /* replaces the symlink, not its target */
	tb_symlink(&t, "dlink", outside);
	tb_dir(&t, "dlink", 0700);
	unpack_ok(&t, 0, NULL);
	assert_outside_untouched();
	struct stat st;
	cr_assert_eq(lstat(at_root("link"), &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(lstat(at_root("dlink"), &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
}

Test(unpack, hardlink_outside_is_refused)
{
	char target[160];
	snprintf(target, sizeof(target), "%s/canary", outside);
	struct tb t;
	tb_init(&t);
	tb_hardlink(&t, "shadow", "/etc/shadow");
	unpack_fails(&t, 0, "not a file inside the layer");
	cr_assert(!exists(at_root("shadow")));

	tb_init(&t);
	tb_hardlink(&t, "canary", target);
	unpack_fails(&t, 0, "not a file inside the layer");
	tb_init(&t);
	tb_hardlink(&t, "canary", "../outside/canary");
	unpack_fails(&t, 0, "not a file inside the layer");
	assert_outside_untouched();
}

Test(unpack, hardlink_dotdot_resolves_inside)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, "x", "data", 0644);
	tb_hardlink(&t, "d/link", "../../x");
	unpack_ok(&t, 0, NULL);
	struct stat a, b;
	cr_assert_eq(lstat(at_root("x"), &a), 0);
	cr_assert_eq(lstat(at_root("d/link"), &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino);
	assert_outside_untouched();
}

Test(unpack, hardlink_through_symlink_parent_stays_inside)
{
	struct tb t;
	tb_init(&t);
	tb_symlink(&t, "esc", outside);
	tb_hardlink(&t, "stolen", "esc/canary");
	unpack_fails(&t, 0, "not a file inside the layer");
	assert_outside_untouched();
}

Test(unpack, root_is_never_replaced)
{
	/* (a regular file named "x/" is a directory by old tar convention: not listed here) */
	const char *paths[] = {".", "..", "a/..", "./.", "/.", "a/../.."};
	const char types[] = {'0', '2', '1'};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		for (size_t j = 0; j < sizeof(types); j++) {
			struct tb t = {0};
			raw_entry(&t, "x", '0', 0, NULL);
			raw_entry(&t, paths[i], types[j], 0, "x");
			raw_end(&t);
			unpack_fails(&t, 0, "refusing to replace the layer root");
		}
	}
	assert_outside_untouched();
	/* a directory entry for the root sets its metadata */
	struct tb t;
	tb_init(&t);
	struct archive_entry *e = tb_new("./", AE_IFDIR, 0750);
	archive_entry_set_mtime(e, 1234567890, 0);
	tb_add(&t, e, NULL, 0);
	unpack_ok(&t, 0, NULL);
	struct stat st;
	cr_assert_eq(stat(root, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0750);
	cr_assert_eq(st.st_mtim.tv_sec, 1234567890);
}

Test(unpack, whiteouts_of_the_root_are_errors)
{
	const char *bad[] = {".wh.", "d/.wh.", ".wh..", ".wh...", "d/.wh.."};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tb t;
		tb_init(&t);
		tb_file(&t, bad[i], "", 0644);
		unpack_fails(&t, 0, "whiteout");
		tb_init(&t);
		tb_file(&t, bad[i], "", 0644);
		unpack_fails(&t, LB_UNPACK_APPLY, "whiteout");
	}
	cr_assert(exists(root));
	assert_outside_untouched();
}

// Device nodes never come from a layer, with privilege or without: a node for a host disk
// would be the host's disk. FIFOs are ordinary files to an image and stay.
Test(unpack, device_nodes_are_always_skipped)
{
	static const unsigned modes[] = {LB_UNPACK_ROOTLESS, 0};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct tb t;
		struct lb_unpack_result res;
		tb_init(&t);
		tb_node(&t, "dev/null", AE_IFCHR, makedev(1, 3));
		tb_node(&t, "dev/sda", AE_IFBLK, makedev(8, 0));
		tb_node(&t, "dev/kmsg", AE_IFCHR, makedev(1, 11));
		tb_node(&t, "dev/fifo", AE_IFIFO, 0);
		unpack_ok(&t, modes[i], &res);
		cr_assert_eq(res.skipped, 3, "flags %u: %llu skipped", modes[i],
			     (unsigned long long)res.skipped);
		cr_assert(!exists(at_root("dev/null")));
		cr_assert(!exists(at_root("dev/sda")));
		cr_assert(!exists(at_root("dev/kmsg")));
		struct stat st;
		cr_assert_eq(lstat(at_root("dev/fifo"), &st), 0);
		cr_assert(S_ISFIFO(st.st_mode));
	}
}

Test(unpack, setuid_dropped_when_rootless)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, "su", "x", 04755);
	tb_file(&t, "sg", "x", 02755);
	tb_dir(&t, "shared", 02775);
	unpack_ok(&t, LB_UNPACK_ROOTLESS, NULL);
	struct stat st;
	cr_assert_eq(lstat(at_root("su"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0755);
	cr_assert_eq(lstat(at_root("sg"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0755);
	cr_assert_eq(lstat(at_root("shared"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0775);
}

Test(unpack, forged_overlay_xattrs_are_dropped)
{
	struct tb t;
	tb_init(&t);
	struct archive_entry *e = tb_new("d/", AE_IFDIR, 0755);
	archive_entry_xattr_add_entry(e, "trusted.overlay.opaque", "y", 1);
	archive_entry_xattr_add_entry(e, "user.overlay.opaque", "y", 1);
	archive_entry_xattr_add_entry(e, "trusted.lbbox", "t", 1);
	tb_add(&t, e, NULL, 0);
	unpack_ok(&t, 0, NULL);
	char buf[8];
	cr_assert_lt(getxattr(at_root("d"), "trusted.overlay.opaque", buf, sizeof(buf)), 0);
	cr_assert_lt(getxattr(at_root("d"), "user.overlay.opaque", buf, sizeof(buf)), 0);
	cr_assert_eq(getxattr(at_root("d"), "trusted.lbbox", buf, sizeof(buf)), 1);

	/* trusted.* is privileged: dropped when rootless */
	tb_init(&t);
	e = tb_new("e/", AE_IFDIR, 0755);
	archive_entry_xattr_add_entry(e, "trusted.lbbox", "t", 1);
	tb_add(&t, e, NULL, 0);
	unpack_ok(&t, LB_UNPACK_ROOTLESS, NULL);
	cr_assert_lt(getxattr(at_root("e"), "trusted.lbbox", buf, sizeof(buf)), 0);
}

Test(unpack, file_as_parent_is_an_error)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, "f", "x", 0644);
	tb_file(&t, "f/x", "y", 0644);
	unpack_fails(&t, 0, "layer entry 'f/x'");
}

/* ---- limits ---- */

Test(unpack, limit_total_size)
{
	struct tb t;
	struct lb_err *err = NULL;
	struct lb_unpack_result res;
	tb_init(&t);
	struct archive_entry *e = tb_new("bomb", AE_IFREG, 0644);
	archive_entry_set_size(e, 2 << 20); /* libarchive pads the data with zeros */
	tb_add(&t, e, NULL, 0);
	tb_finish(&t);
	write_blob(&t, GZIP);
	struct lb_unpack_opts o = {.max_total_size = 1 << 20};
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "image too large"), "%s", err->msg);
	lb_err_free(&err);
	/* 2 MiB fit in 3 MiB, not after 1.5 MiB of lower layers */
	o = (struct lb_unpack_opts){.max_total_size = 3 << 20, .used_bytes = 3 << 19};
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "image too large"), "%s", err->msg);
	lb_err_free(&err);
	cr_assert(!exists(at_root("bomb")));
	free(t.buf);
}

Test(unpack, limit_huge_declared_size)
{
	/* a header declaring 100 GiB and no data: refused on the header, nothing written */
	struct tb t = {0};
	struct lb_err *err = NULL;
	struct lb_unpack_result res;
	raw_entry(&t, "bomb", '0', 100ULL << 30, NULL);
	write_blob(&t, ZSTD);
	cr_assert_lt(unpack_flags(0, &res, &err), 0);
	cr_assert(strstr(err->msg, "image too large"), "%s", err->msg);
	lb_err_free(&err);
	cr_assert(!exists(at_root("bomb")));
	free(t.buf);
}

Test(unpack, limit_entries_and_path)
{
	struct tb t;
	struct lb_err *err = NULL;
	struct lb_unpack_result res;
	tb_init(&t);
	for (int i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%d", i);
		tb_file(&t, name, "", 0644);
	}
	tb_finish(&t);
	write_blob(&t, PLAIN);
	struct lb_unpack_opts o = {.max_entries = 10};
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "more than 10 entries"), "%s", err->msg);
	lb_err_free(&err);
	/* lower layers of the same image count: 20 entries fit in 30, not with 11 already used */
	o = (struct lb_unpack_opts){.max_entries = 30, .used_entries = 11};
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "more than 30 entries"), "%s", err->msg);
	lb_err_free(&err);
	free(t.buf);

	char longp[200];
	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	tb_init(&t);
	tb_file(&t, longp, "", 0644);
	tb_finish(&t);
	write_blob(&t, PLAIN);
	o = (struct lb_unpack_opts){.max_path = 64};
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "longer than 64 bytes"), "%s", err->msg);
	lb_err_free(&err);
	free(t.buf);

	tb_init(&t);
	tb_symlink(&t, "l", longp);
	tb_finish(&t);
	write_blob(&t, PLAIN);
	cr_assert_lt(unpack_opts(&o, &res, &err), 0);
	cr_assert(strstr(err->msg, "longer than 64 bytes"), "%s", err->msg);
	lb_err_free(&err);
	free(t.buf);
}

/* ---- whiteouts: overlay representation ---- */

static bool is_whiteout_dev(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

static bool is_opaque(const char *path, const char *name)
{
	char v[4] = {0};
	return getxattr(path, name, v, sizeof(v)) == 1 && v[0] == 'y';
}

Test(unpack, overlay_whiteouts)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, ".wh.gone", "", 0644);
	tb_file(&t, "deep/er/.wh.x", "", 0644);
	tb_file(&t, "mine", "kept", 0644);
	tb_file(&t, ".wh.mine", "", 0644);     /* hides lower layers only, not this layer's file */
	tb_file(&t, ".wh..wh.plnk", "", 0644); /* aufs bookkeeping: ignored */
	unpack_ok(&t, 0, NULL);
	cr_assert(is_whiteout_dev(at_root("gone")));
	cr_assert(is_whiteout_dev(at_root("deep/er/x")));
	struct stat st;
	cr_assert_eq(lstat(at_root("mine"), &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert(!exists(at_root(".wh.gone")));
	cr_assert(!exists(at_root(".wh..wh.plnk")));
	cr_assert(!exists(at_root("plnk")));
}

Test(unpack, overlay_opaque_after_siblings)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, "d/a", "a", 0644);
	tb_dir(&t, "d/sub", 0755);
	tb_file(&t, "d/.wh..wh..opq", "", 0644);
	tb_file(&t, "d/b", "b", 0644);
	tb_file(&t, "e/.wh..wh..opq", "", 0644);
	tb_file(&t, ".wh..wh..opq", "", 0644);
	unpack_ok(&t, 0, NULL);
	cr_assert(is_opaque(at_root("d"), "trusted.overlay.opaque"));
	cr_assert(is_opaque(at_root("e"), "trusted.overlay.opaque"));
	cr_assert(is_opaque(root, "trusted.overlay.opaque"));
	cr_assert(exists(at_root("d/a")));
	cr_assert(exists(at_root("d/sub")));
	cr_assert(exists(at_root("d/b")));
	cr_assert(!exists(at_root("d/.wh..wh..opq")));
	cr_assert(!is_opaque(at_root("d/sub"), "trusted.overlay.opaque"));
}

Test(unpack, overlay_opaque_userxattr)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, "d/.wh..wh..opq", "", 0644);
	unpack_ok(&t, LB_UNPACK_USERXATTR, NULL);
	cr_assert(is_opaque(at_root("d"), "user.overlay.opaque"));
	cr_assert(!is_opaque(at_root("d"), "trusted.overlay.opaque"));
}

/* ---- whiteouts: apply mode onto a merged tree ---- */

static void lower_tree(void)
{
	struct tb t;
	tb_init(&t);
	tb_file(&t, "keep", "lower", 0644);
	tb_file(&t, "gone", "lower", 0644);
	tb_file(&t, "dir/x", "lower", 0644);
	tb_file(&t, "dir/y", "lower", 0644);
	tb_file(&t, "gonedir/deep/z", "lower", 0644);
	tb_file(&t, "opq/lower1", "lower", 0644);
	tb_file(&t, "opq/replaced", "lower", 0644);
	tb_file(&t, "opq/sub/lower2", "lower", 0644);
	tb_symlink(&t, "opq/sub/lowlink", "/etc");
	tb_file(&t, "opq2/lower", "lower", 0644);
	unpack_ok(&t, 0, NULL);
}

Test(unpack, apply_whiteouts)
{
	lower_tree();
	struct tb t;
	tb_init(&t);
	tb_file(&t, ".wh.gone", "", 0644);
	tb_file(&t, "dir/.wh.x", "", 0644);
	tb_file(&t, ".wh.gonedir", "", 0644);
	tb_file(&t, "nodir/.wh.y", "", 0644); /* nothing there: nothing to do, nothing created */
	tb_file(&t, "new", "upper", 0644);
	tb_file(&t, ".wh.new", "", 0644); /* this layer's own file stays */
	unpack_ok(&t, LB_UNPACK_APPLY, NULL);
	cr_assert(exists(at_root("keep")));
	cr_assert(!exists(at_root("gone")));
	cr_assert(!exists(at_root("dir/x")));
	cr_assert(exists(at_root("dir/y")));
	cr_assert(!exists(at_root("gonedir")));
	cr_assert(!exists(at_root("nodir")));
	cr_assert(exists(at_root("new")));
	cr_assert(!exists(at_root(".wh.gone")));
}

Test(unpack, apply_opaque_keeps_this_layers_entries)
{
	lower_tree();
	struct tb t;
	tb_init(&t);
	tb_file(&t, "opq/a", "upper", 0644);
	tb_file(&t, "opq/replaced", "upper", 0644);
	tb_file(&t, "opq/sub/new", "upper", 0644);
	tb_file(&t, "opq/.wh..wh..opq", "", 0644); /* after its siblings */
	tb_file(&t, "opq/b", "upper", 0644);
	tb_file(&t, "opq2/.wh..wh..opq", "", 0644);
	tb_file(&t, "fresh/.wh..wh..opq", "", 0644); /* no such directory below */
	unpack_ok(&t, LB_UNPACK_APPLY, NULL);
	char buf[16];
	cr_assert(exists(at_root("opq/a")));
	cr_assert(exists(at_root("opq/b")));
	read_to(at_root("opq/replaced"), buf, sizeof(buf));
	cr_assert_str_eq(buf, "upper");
	cr_assert(exists(at_root("opq/sub/new")));
	cr_assert(!exists(at_root("opq/lower1")));
	cr_assert(!exists(at_root("opq/sub/lower2")), "lower child of a kept directory survived");
	cr_assert(!exists(at_root("opq/sub/lowlink")));
	cr_assert(exists(at_root("opq2")));
	cr_assert(!exists(at_root("opq2/lower")));
	cr_assert(exists(at_root("keep")), "opaque leaked outside its directory");
	cr_assert(!is_opaque(at_root("opq"), "trusted.overlay.opaque"));
	assert_outside_untouched();
}

Test(unpack, apply_whiteout_through_symlink_stays_inside)
{
	/* a lower symlink to the host must not let a whiteout delete host files */
	struct tb t;
	tb_init(&t);
	tb_symlink(&t, "esc", outside);
	tb_symlink(&t, "up", "../..");
	unpack_ok(&t, 0, NULL);
	tb_init(&t);
	tb_file(&t, "esc/.wh.canary", "", 0644);
	tb_file(&t, "up/outside/.wh.canary", "", 0644);
	tb_file(&t, "esc/.wh..wh..opq", "", 0644);
	unpack_ok(&t, LB_UNPACK_APPLY, NULL);
	assert_outside_untouched();
}

Test(unpack, reads_from_a_pipe)
{
	struct tb t;
	struct lb_unpack_result res;
	struct lb_err *err = NULL;
	char want[72];
	int p[2];

	build_sample(&t);
	write_blob(&t, GZIP);
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		int fd = open(blob, O_RDONLY);
		char buf[4096];
		for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;)
			if (lb_write_all(p[1], buf, (size_t)n) < 0)
				_exit(1);
		_exit(0);
	}
	close(p[1]);
	int rootfd = open(root, O_RDONLY | O_DIRECTORY);
	int r = lb_unpack_layer_fd(p[0], rootfd, NULL, &res, &err);
	close(p[0]);
	close(rootfd);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(r, 0, "%s", err ? err->msg : "");
	check_sample();
	sha256_hex(t.buf, t.len, want);
	cr_assert_str_eq(res.diff_id, want);
	free(t.buf);
}
