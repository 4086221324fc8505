/*
 * A skill upload's zip (§6.6) unpacked into a private directory with libarchive, its limits
 * enforced while it streams: at most 20 MiB compressed, 512 entries, 16 MiB per entry and
 * 64 MiB in all, counted on the bytes really decompressed (headers may lie), and an expansion
 * of at most 100 times; names of at most 1 KiB and 32 components, and 2048 files and
 * directories created in all (the directories a name implies count); no links, devices, absolute or
 * ".." paths, or a name given twice.
 *
 * The per-entry ratio is measured on the input libarchive consumed while decompressing the
 * entry. The input is handed to it in small blocks so that count is close; an entry may still
 * expand up to 100 times one block from input read ahead for it.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "skill_internal.h"
#include "skill_zip.h"

#define ZIP_BLOCK 4096

struct zin {
	int fd;
	char buf[ZIP_BLOCK];
};

static la_ssize_t zin_read(struct archive *a, void *data, const void **out)
{
	struct zin *z = data;
	ssize_t n;
	(void)a;
	while ((n = read(z->fd, z->buf, sizeof(z->buf))) < 0 && errno == EINTR)
		;
	*out = z->buf;
	return n;
}

/* The zip's central directory is read (it alone holds the entries' Unix modes, so links). */
static la_int64_t zin_seek(struct archive *a, void *data, la_int64_t off, int whence)
{
	struct zin *z = data;
	(void)a;
	return lseek(z->fd, off, whence);
}

struct unzip {
	struct archive *a;
	int dirfd;
	uint64_t input; /* the upload's size */
	uint64_t total; /* bytes decompressed so far */
	size_t entries;
	size_t inodes; /* files and directories created */
	char **seen;   /* normalised names */
};

/* A name as the archive gives it: backslashes as slashes, normalised; NULL when it is empty,
 * absolute, climbs out, or names a drive. */
static char *safe_name(const char *raw)
{
	_cleanup_free_ char *p = strdup(raw);
	if (!p || !*p)
		return NULL;
	for (char *c = p; *c; c++)
		if (*c == '\\')
			*c = '/';
	if (p[0] == '/' || (p[0] && p[1] == ':'))
		return NULL;
	char *n = skill_normpath(p);
	if (n && (!strcmp(n, ".") || !strcmp(n, "..") || !strncmp(n, "../", 3))) {
		free(n);
		return NULL;
	}
	return n;
}

static int remember(struct unzip *u, char *name, const char *raw, struct lb_err **err)
{
	for (size_t i = 0; i < u->entries - 1; i++)
		if (!strcmp(u->seen[i], name)) {
			free(name);
			return lb_err_set(err, 0, "Archive contains a duplicate path: %s", raw);
		}
	u->seen[u->entries - 1] = name;
	return 0;
}

/* The directories of name (all of it, or its parents), counted against the inode cap. */
static int make_dirs(struct unzip *u, const char *name, bool parents, struct lb_err **err)
{
	_cleanup_free_ char *dir = strdup(name);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (!dir)
		return lb_err_set(err, ENOMEM, "unzip");
	if (parents && !slash)
		return 0;
	if (parents)
		*slash = '\0';
	if (skill_mkdirs(u->dirfd, dir, &u->inodes, err) < 0)
		return -1;
	if (u->inodes > SKILL_ZIP_INODES)
		return lb_err_set(err, 0,
				  "Archive creates too many files and directories (maximum %d)",
				  SKILL_ZIP_INODES);
	return 0;
}

/* The normalised name is at most SKILL_ZIP_DEPTH components deep. */
static int depth_limit(const char *raw, const char *name, struct lb_err **err)
{
	size_t depth = 1;
	for (const char *c = name; *c; c++)
		depth += *c == '/';
	if (depth > SKILL_ZIP_DEPTH)
		return lb_err_set(err, 0, "Archive contains a path deeper than %d levels: %s",
				  SKILL_ZIP_DEPTH, raw);
	return 0;
}

/* The entry's data into its file, counted and bounded as it comes. */
static int copy_data(struct unzip *u, int out, const char *raw, struct lb_err **err)
{
	const void *block;
	size_t size;
	la_int64_t off;
	uint64_t mine = 0;
	la_int64_t before = archive_filter_bytes(u->a, -1);
	int r;
	while ((r = archive_read_data_block(u->a, &block, &size, &off)) == ARCHIVE_OK) {
		mine += size;
		u->total += size;
		if (mine > SKILL_ZIP_ENTRY_MAX)
			return lb_err_set(
			    err, 0, "Archive entry exceeds the uncompressed size limit: %s", raw);
		if (u->total > SKILL_ZIP_TOTAL_MAX)
			return lb_err_set(err, 0,
					  "Archive exceeds the total uncompressed size limit");
		la_int64_t now = archive_filter_bytes(u->a, -1);
		uint64_t used = now > before ? (uint64_t)(now - before) : 0;
		if (mine > SKILL_ZIP_RATIO * (used + ZIP_BLOCK))
			return lb_err_set(
			    err, 0, "Archive entry exceeds the compression ratio limit: %s", raw);
		if (u->total > SKILL_ZIP_RATIO * u->input)
			return lb_err_set(err, 0,
					  "Archive exceeds the aggregate compression ratio limit");
		if (lb_write_all(out, block, size) < 0)
			return lb_err_set(err, errno, "unzip %s", raw);
	}
	if (r != ARCHIVE_EOF)
		return lb_err_set(err, 0, "Uploaded file must be a valid .zip archive: %s",
				  archive_error_string(u->a) ? archive_error_string(u->a) : raw);
	return 0;
}

static int entry(struct unzip *u, struct archive_entry *e, struct lb_err **err)
{
	/* the name as UTF-8 whatever the locale (the zip's UTF-8 flag or its code page) */
	const char *raw = archive_entry_pathname_utf8(e) ? archive_entry_pathname_utf8(e)
							 : archive_entry_pathname(e);
	mode_t type = archive_entry_filetype(e);
	if (++u->entries > SKILL_ZIP_ENTRIES)
		return lb_err_set(err, 0, "Archive contains too many entries (maximum %d)",
				  SKILL_ZIP_ENTRIES);
	if (!raw || !*raw)
		return lb_err_set(err, 0, "Archive contains an unsafe empty or NUL path");
	if (!skill_utf8_valid(raw, strlen(raw)))
		return lb_err_set(err, 0, "Archive contains a path that is not valid UTF-8");
	if (strlen(raw) > SKILL_ZIP_NAME_MAX)
		return lb_err_set(err, 0, "Archive contains a path longer than %d bytes",
				  SKILL_ZIP_NAME_MAX);
	char *name = safe_name(raw);
	if (!name)
		return lb_err_set(err, 0, "Archive contains an unsafe path: %s", raw);
	if (depth_limit(raw, name, err) < 0) {
		free(name);
		return -1;
	}
	if (remember(u, name, raw, err) < 0)
		return -1;
	if (type == AE_IFLNK || archive_entry_symlink(e) || archive_entry_hardlink(e))
		return lb_err_set(err, 0, "Archive contains a symbolic link: %s", raw);
	if (type != AE_IFREG && type != AE_IFDIR && type != 0)
		return lb_err_set(err, 0, "Archive contains a non-regular entry: %s", raw);
	if (archive_entry_size_is_set(e) && (uint64_t)archive_entry_size(e) > SKILL_ZIP_ENTRY_MAX)
		return lb_err_set(err, 0, "Archive entry exceeds the uncompressed size limit: %s",
				  raw);
	if (type == AE_IFDIR)
		return make_dirs(u, name, false, err);
	if (make_dirs(u, name, true, err) < 0)
		return -1;
	if (++u->inodes > SKILL_ZIP_INODES)
		return lb_err_set(err, 0,
				  "Archive creates too many files and directories (maximum %d)",
				  SKILL_ZIP_INODES);
	mode_t mode = archive_entry_perm(e) & 0111 ? 0755 : 0644;
	_cleanup_close_ int out =
	    skill_openat(u->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
	if (out < 0)
		return lb_err_set(err, 0, "Archive contains a conflicting path: %s", raw);
	return copy_data(u, out, raw, err);
}

static int unzip(int zipfd, int dirfd, struct lb_err **err);

/* libarchive converts names to the locale's charset: under "C" a UTF-8 name (the zip's UTF-8
 * flag) would not convert. The unpacking runs under C.UTF-8, for this thread only. */
int skill_unzip(int zipfd, int dirfd, struct lb_err **err)
{
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	locale_t old = utf8 ? uselocale(utf8) : (locale_t)0;
	int r = unzip(zipfd, dirfd, err);
	if (utf8) {
		uselocale(old);
		freelocale(utf8);
	}
	return r;
}

static int unzip(int zipfd, int dirfd, struct lb_err **err)
{
	struct stat st;
	struct zin *in = malloc(sizeof(*in));
	struct unzip u = {.dirfd = dirfd, .seen = calloc(SKILL_ZIP_ENTRIES + 1, sizeof(char *))};
	struct archive_entry *e;
	int r = 0;
	if (!in || !u.seen || fstat(zipfd, &st) < 0 || lseek(zipfd, 0, SEEK_SET) < 0) {
		r = lb_err_set(err, errno ? errno : ENOMEM, "read the upload");
		goto out;
	}
	if (!st.st_size) {
		r = lb_err_set(err, 0, "Uploaded file is empty");
		goto out;
	}
	if (st.st_size > SKILL_ZIP_COMPRESSED_MAX) {
		r = lb_err_set(err, 0,
			       "Uploaded archive exceeds the compressed size limit (%d bytes)",
			       SKILL_ZIP_COMPRESSED_MAX);
		goto out;
	}
	u.input = (uint64_t)st.st_size;
	in->fd = zipfd;
	u.a = archive_read_new();
	if (!u.a || archive_read_support_format_zip_seekable(u.a) != ARCHIVE_OK ||
	    archive_read_set_callback_data(u.a, in) != ARCHIVE_OK ||
	    archive_read_set_read_callback(u.a, zin_read) != ARCHIVE_OK ||
	    archive_read_set_seek_callback(u.a, zin_seek) != ARCHIVE_OK ||
	    archive_read_open1(u.a) != ARCHIVE_OK) {
		r = lb_err_set(err, 0, "Uploaded file must be a valid .zip archive");
		goto out;
	}
	int h;
	/* ARCHIVE_WARN: a name that does not convert to the locale's charset (entry() reads the
	 * UTF-8 form) */
	while (r == 0 &&
	       ((h = archive_read_next_header(u.a, &e)) == ARCHIVE_OK || h == ARCHIVE_WARN))
		r = entry(&u, e, err);
	if (r == 0 && h != ARCHIVE_EOF)
		r = lb_err_set(err, 0, "Uploaded file must be a valid .zip archive");
out:
	if (u.a)
		archive_read_free(u.a);
	for (size_t i = 0; u.seen && i < u.entries && i < SKILL_ZIP_ENTRIES; i++)
		free(u.seen[i]);
	free(u.seen);
	free(in);
	return r;
}
