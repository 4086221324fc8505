/*
 * Namespaced sysctls (an OCI bundle's linux.sysctl, e.g. podman's default
 * net.ipv4.ping_group_range): only those that live in a namespace of the sandbox's own, as runc
 * allows them: net.* with a network namespace that is not the host's, and the IPC namespace's
 * kernel.msg*, kernel.sem, kernel.shm* and fs.mqueue.*. pid 1 writes them before it builds the
 * root, through the /proc it still shares with the host: a net or IPC sysctl file there acts on
 * the namespace of the process that writes it, pid 1's. Afterwards /proc/sys is read-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "engine.h"

#define SYSCTL_KEY_MAX	 128
#define SYSCTL_VALUE_MAX 1024

static const char *const ipc_keys[] = {"kernel.msgmax", "kernel.msgmnb",	 "kernel.msgmni",
				       "kernel.sem",	"kernel.shmall",	 "kernel.shmmax",
				       "kernel.shmmni", "kernel.shm_rmid_forced"};

static bool is_ipc(const char *key)
{
	for (size_t i = 0; i < sizeof(ipc_keys) / sizeof(ipc_keys[0]); i++)
		if (!strcmp(key, ipc_keys[i]))
			return true;
	return !strncmp(key, "fs.mqueue.", 10);
}

/* Dotted words of [A-Za-z0-9_-]: nothing that could leave /proc/sys once dots are slashes. */
static bool key_well_formed(const char *key)
{
	size_t len = strlen(key);
	if (len == 0 || key[0] == '.' || key[len - 1] == '.' || strstr(key, ".."))
		return false;
	for (const char *p = key; *p; p++)
		if (!(*p == '.' || *p == '_' || *p == '-' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

/* A namespace joined by path that is lbbox's own (the host's): its sysctls are the host's. */
static bool joins_own(const char *path, const char *proc)
{
	char self[32];
	struct stat a, b;
	snprintf(self, sizeof(self), "/proc/self/ns/%s", proc);
	return path && stat(path, &a) == 0 && stat(self, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int check_one(const struct lb_spec *spec, const char *kv, struct lb_err **err)
{
	const char *eq = strchr(kv, '=');
	size_t len = eq ? (size_t)(eq - kv) : strlen(kv);
	char key[SYSCTL_KEY_MAX + 1];
	if (!eq || len > SYSCTL_KEY_MAX)
		return lb_err_set(err, 0, "sysctl %.64s: not a sysctl name", kv);
	memcpy(key, kv, len);
	key[len] = '\0';
	if (!key_well_formed(key))
		return lb_err_set(err, 0, "sysctl %.64s: not a sysctl name", key);
	if (strlen(eq + 1) > SYSCTL_VALUE_MAX)
		return lb_err_set(err, 0, "sysctl %s: value longer than %d bytes", key,
				  SYSCTL_VALUE_MAX);
	for (const char *p = eq + 1; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return lb_err_set(err, 0, "sysctl %s: control character in the value", key);
	if (!strncmp(key, "net.", 4)) {
		if (spec->net == LB_NET_HOST || joins_own(spec->netns_path, "net"))
			return lb_err_set(err, 0,
					  "sysctl %s needs a network namespace that is not the "
					  "host's (it would change the host's)",
					  key);
		return 0;
	}
	if (is_ipc(key)) {
		if (joins_own(spec->ipcns_path, "ipc"))
			return lb_err_set(err, 0,
					  "sysctl %s needs an IPC namespace that is not the host's "
					  "(it would change the host's)",
					  key);
		return 0;
	}
	return lb_err_set(err, 0,
			  "sysctl %s is not supported (only net.* and the IPC namespace's are: "
			  "the others would change the host)",
			  key);
}

bool lb_sysctls_in(const struct lb_spec *spec, int clone_type)
{
	for (char **kv = spec->sysctls; kv && *kv; kv++) {
		size_t len = strcspn(*kv, "=");
		char key[SYSCTL_KEY_MAX + 1];
		snprintf(key, sizeof(key), "%.*s", (int)len, *kv);
		if (clone_type == CLONE_NEWNET	 ? !strncmp(key, "net.", 4)
		    : clone_type == CLONE_NEWIPC ? is_ipc(key)
						 : false)
			return true;
	}
	return false;
}

int lb_spec_check_sysctls(const struct lb_spec *spec, struct lb_err **err)
{
	size_t n = 0;
	for (char **kv = spec->sysctls; kv && *kv; kv++, n++)
		if (n == LB_MAX_SYSCTLS)
			return lb_err_set(err, E2BIG, "more than %d sysctls", LB_MAX_SYSCTLS);
		else if (check_one(spec, *kv, err) < 0)
			return -1;
	return 0;
}

static int write_one(int sysdir, const char *kv, struct lb_err **err)
{
	const char *eq = strchr(kv, '=');
	char rel[SYSCTL_KEY_MAX + 1];
	snprintf(rel, sizeof(rel), "%.*s", (int)(eq - kv), kv);
	for (char *p = rel; *p; p++)
		if (*p == '.')
			*p = '/';
	struct open_how how = {.flags = O_WRONLY | O_CLOEXEC | O_NOCTTY,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, sysdir, rel, &how, sizeof(how));
	if (fd < 0)
		return lb_err_set(err, errno, "sysctl %.*s", (int)(eq - kv), kv);
	size_t len = strlen(eq + 1);
	if (write(fd, eq + 1, len) != (ssize_t)len)
		return lb_err_set(err, errno, "sysctl %.*s = %s", (int)(eq - kv), kv, eq + 1);
	return 0;
}

int lb_sysctls_apply(const struct lb_spec *spec, struct lb_err **err)
{
	if (!spec->sysctls || !*spec->sysctls)
		return 0;
	_cleanup_close_ int sysdir = open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sysdir < 0)
		return lb_err_set(err, errno, "open /proc/sys");
	for (char **kv = spec->sysctls; *kv; kv++)
		if (write_one(sysdir, *kv, err) < 0)
			return -1;
	return 0;
}
