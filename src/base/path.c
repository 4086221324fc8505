/*
 * Host paths a caller gives that may not exist yet (a Box workspace): what they will be once
 * created, so every rule is checked on that before anything is made, and their creation without
 * following a link, so a symlink planted meanwhile (a sandbox can plant one in a workspace it
 * shares with the host) cannot send the creation elsewhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

/* The components after the existing ancestor must be plain names: "." and ".." are refused
 * rather than interpreted (Python's resolve() would, against a path that may not exist). */
static bool plain_rest(const char *rest)
{
	for (const char *c = rest; *c;) {
		size_t n = strcspn(c, "/");
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		c += strspn(c, "/");
	}
	return true;
}

/* "a//b/" (in the missing part) -> "a/b"; "/" stays. */
static void collapse_slashes(char *p)
{
	char *w = p;
	for (const char *c = p; *c; c++)
		if (!(*c == '/' && w > p && w[-1] == '/'))
			*w++ = *c;
	if (w > p + 1 && w[-1] == '/')
		w--;
	*w = '\0';
}

int lb_path_resolve_missing(const char *path, char **out, struct lb_err **err)
{
	if (path[0] != '/')
		return lb_err_set(err, EINVAL, "%s is not an absolute path", path);
	_cleanup_free_ char *head = strdup(path);
	if (!head)
		return lb_err_set(err, ENOMEM, "resolve %s", path);
	/* the deepest existing ancestor, by cutting components off the end */
	for (;;) {
		char *real = realpath(*head ? head : "/", NULL);
		if (real) {
			const char *rest = path + strlen(head);
			rest += strspn(rest, "/");
			if (!plain_rest(rest)) {
				free(real);
				return lb_err_set(err, EINVAL, "%s has '.' or '..' components",
						  path);
			}
			int r = *rest ? asprintf(out, "%s%s%s", real, strcmp(real, "/") ? "/" : "",
						 rest)
				      : asprintf(out, "%s", real);
			free(real);
			if (r < 0)
				return lb_err_set(err, ENOMEM, "resolve %s", path);
			collapse_slashes(*out);
			return 0;
		}
		if (errno != ENOENT)
			return lb_err_set(err, errno, "resolve %s", path);
		char *slash = strrchr(head, '/');
		if (!slash)
			return lb_err_set(err, ENOENT, "resolve %s", path);
		*slash = '\0';
	}
}

int lb_mkdir_nofollow(const char *canonical, mode_t mode, struct lb_err **err)
{
	_cleanup_close_ int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_free_ char *copy = strdup(canonical);
	char *save = NULL;
	if (dir < 0 || !copy)
		return lb_err_set(err, dir < 0 ? errno : ENOMEM, "create %s", canonical);
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (mkdirat(dir, c, mode) < 0 && errno != EEXIST)
			return lb_err_set(err, errno, "create %s", canonical);
		int next = openat(dir, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return lb_err_set(err, errno == ELOOP ? ENOTDIR : errno,
					  "create %s (a component is not a directory)", canonical);
		close(dir);
		dir = next;
	}
	return 0;
}
