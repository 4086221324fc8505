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

#include "cli/cli.h"
#include "lbbox/cleanup.h"
#include "lbbox/util.h"

/* The file's text from the top-most layer holding it; NULL when absent or deleted (whiteout). */
static char *layer_file(const char *lowerdir, const char *path)
{
	_cleanup_free_ char *dirs = strdup(lowerdir);
	char *save = NULL, *text = NULL;
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	for (char *d = strtok_r(dirs, ":", &save); d && !text; d = strtok_r(NULL, ":", &save)) {
		_cleanup_close_ int root = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat st;
		if (root < 0 || fstatat(root, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISCHR(st.st_mode)) /* overlay whiteout: deleted in this layer */
			return NULL;
		_cleanup_close_ int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (fd < 0 || lb_read_file(proc, 1 << 20, &text, NULL, NULL) < 0)
			return NULL;
	}
	return text;
}

/* Field 3 (and 4) of the line whose first field is name, in passwd or group format. */
static int find_entry(const char *text, const char *name, unsigned long *id, unsigned long *gid)
{
	size_t n = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, name, n) != 0 || l[n] != ':')
			continue;
		const char *f = strchr(l + n + 1, ':'); /* skip the password field */
		if (!f || sscanf(f + 1, "%lu:%lu", id, gid) < 1)
			return -1;
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
	unsigned long id = 0, unused = 0;
	if (numeric(group)) {
		*gid = (gid_t)strtoul(group, NULL, 10);
		return 0;
	}
	_cleanup_free_ char *text = layer_file(lowerdir, "etc/group");
	if (!text || find_entry(text, group, &id, &unused) < 0)
		return lb_err_set(err, 0, "image group '%s' is not in the image's /etc/group",
				  group);
	*gid = (gid_t)id;
	return 0;
}

int cli_image_user(const char *lowerdir, const char *user, uid_t *uid, gid_t *gid,
		   struct lb_err **err)
{
	_cleanup_free_ char *copy = strdup(user);
	unsigned long u = 0, g = 0;
	if (!copy)
		return lb_err_set(err, ENOMEM, "user");
	char *group = strchr(copy, ':');
	if (group)
		*group++ = '\0';
	if (numeric(copy)) {
		u = strtoul(copy, NULL, 10);
		g = u;
	} else {
		_cleanup_free_ char *text = layer_file(lowerdir, "etc/passwd");
		if (!text || find_entry(text, copy, &u, &g) < 0)
			return lb_err_set(
			    err, 0, "image user '%s' is not in the image's /etc/passwd", copy);
	}
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return group ? group_id(lowerdir, group, gid, err) : 0;
}
