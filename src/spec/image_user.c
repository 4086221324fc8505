/*
 * The image config's User by name: looked up in the image's own /etc/passwd and /etc/group,
 * the top-most layer that has (or deletes) the file winning, as overlayfs will show it. Every
 * open stays inside its layer (openat2 RESOLVE_IN_ROOT): an image cannot point us at the host's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/spec/image.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

/* Larger than any real passwd or group file; bounds what a hostile image can make us read. */
#define ID_FILE_MAX (4u << 20)

/* The file's text from the top-most layer holding it; NULL when absent or deleted (whiteout).
 * A layer's file that is not a regular file (a FIFO, a device, a directory) is an error. */
static int layer_file(const char *lowerdir, const char *path, char **text, struct lb_err **err)
{
	_cleanup_free_ char *dirs = strdup(lowerdir);
	char *save = NULL;
	*text = NULL;
	if (!dirs)
		return lb_err_set(err, ENOMEM, "read /%s", path);
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		_cleanup_close_ int root = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
		_cleanup_close_ int fd =
		    root < 0 ? -1 : (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			continue;
		if (S_ISCHR(st.st_mode) && st.st_rdev == 0) /* overlay whiteout: deleted here */
			return 0;
		if (lb_read_file_in_root(root, path, ID_FILE_MAX, text, NULL, err) < 0)
			return lb_err_wrap(err, "the image's /%s", path);
		return 0;
	}
	return 0;
}

/* Field 3 (and 4) of the line whose first field is name, in passwd or group format: 0, or -1
 * when there is no such line, or -2 when its ids are not valid ids. */
static int find_entry(const char *text, const char *name, uint32_t *id, uint32_t *gid)
{
	size_t n = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, n) != 0 || l[n] != ':')
			continue;
		const char *f = strchr(l + n + 1, ':'); /* skip the password field */
		char num[2][24] = {"", ""};
		if (!f || sscanf(f + 1, "%23[0-9]:%23[0-9]", num[0], num[1]) < 1 ||
		    lb_parse_id(num[0], id, NULL) < 0)
			return -2;
		if (gid && num[1][0] && lb_parse_id(num[1], gid, NULL) < 0)
			return -2;
		return 0;
	}
	return -1;
}

static bool numeric(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static int group_id(const char *lowerdir, const char *group, gid_t *gid, struct lb_err **err)
{
	uint32_t id = 0;
	if (numeric(group)) {
		if (lb_parse_id(group, &id, err) < 0)
			return lb_err_wrap(err, "image group '%s'", group);
		*gid = id;
		return 0;
	}
	_cleanup_free_ char *text = NULL;
	if (layer_file(lowerdir, "etc/group", &text, err) < 0)
		return -1;
	int r = text ? find_entry(text, group, &id, NULL) : -1;
	if (r == -2)
		return lb_err_set(
		    err, 0, "image group '%s' has no valid id in the image's /etc/group", group);
	if (r < 0)
		return lb_err_set(err, 0, "image group '%s' is not in the image's /etc/group",
				  group);
	*gid = id;
	return 0;
}

int lb_image_user(const char *lowerdir, const char *user, uid_t *uid, gid_t *gid,
		  struct lb_err **err)
{
	_cleanup_free_ char *copy = strdup(user);
	uint32_t u = 0, g = 0;
	if (!copy)
		return lb_err_set(err, ENOMEM, "user");
	char *group = strchr(copy, ':');
	if (group)
		*group++ = '\0';
	if (numeric(copy)) {
		if (lb_parse_id(copy, &u, err) < 0)
			return lb_err_wrap(err, "image user '%s'", copy);
		g = u;
	} else {
		_cleanup_free_ char *text = NULL;
		if (layer_file(lowerdir, "etc/passwd", &text, err) < 0)
			return -1;
		int r = text ? find_entry(text, copy, &u, &g) : -1;
		if (r == -2)
			return lb_err_set(
			    err, 0, "image user '%s' has no valid id in the image's /etc/passwd",
			    copy);
		if (r < 0)
			return lb_err_set(
			    err, 0, "image user '%s' is not in the image's /etc/passwd", copy);
	}
	*uid = u;
	*gid = g;
	return group ? group_id(lowerdir, group, gid, err) : 0;
}
