/*
 * bench_sealed.c - what each way of running a sealed lbbox costs (src/sandbox/sealed.c):
 *   plain    the binary itself (no protection: the baseline)
 *   memfd    a sealed memfd copy (sendfile of the whole binary, then F_ADD_SEALS)
 *   bind     a detached read-only bind mount of the binary (open_tree + mount_setattr)
 *   overlay  a detached lower-only overlayfs of its directory (what lbbox uses as root)
 * For each: the time to make the executable's descriptor alone, and fork + make + fexecve of
 * `BINARY version` (output discarded) + wait, in interleaved rounds; medians and p90 in ms.
 *
 *   cc -O2 -o /tmp/bench_sealed scripts/bench_sealed.c && /tmp/bench_sealed build/lbbox [N]
 * Needs root (the bind and overlay forms).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bin;
static char dir[4096], base[256];

static int plain(void)
{
	return open(bin, O_PATH | O_CLOEXEC);
}

static int memfd(void)
{
	struct stat st;
	int in = open(bin, O_RDONLY | O_CLOEXEC),
	    fd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (in < 0 || fd < 0 || fstat(in, &st) < 0)
		return -1;
	for (off_t done = 0; done < st.st_size;) {
		ssize_t n = sendfile(fd, in, NULL, (size_t)(st.st_size - done));
		if (n <= 0)
			return -1;
		done += n;
	}
	close(in);
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		return -1;
	return fd;
}

static int bind(void)
{
	struct mount_attr attr = {.attr_set =
				      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID};
	int fd = (int)syscall(SYS_open_tree, AT_FDCWD, bin, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0 || syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
		return -1;
	return fd;
}

static int overlay(void)
{
	char empty[] = "/tmp/bench-seal-XXXXXX", lower[64];
	int fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fs < 0 || !mkdtemp(empty))
		return -1;
	int top = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC),
	    low = open(empty, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(lower, sizeof(lower), "/proc/self/fd/%d:/proc/self/fd/%d", top, low);
	int r = (int)syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir", lower, 0);
	syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "xino", "off", 0);
	if (r == 0)
		r = (int)syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
	rmdir(empty);
	close(top), close(low);
	int mnt = r < 0 ? -1
			: (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				       MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID);
	close(fs);
	if (mnt < 0)
		return -1;
	int fd = openat(mnt, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	close(mnt);
	return fd;
}

static const struct {
	const char *name;
	int (*make)(void);
} forms[] = {{"plain", plain}, {"memfd", memfd}, {"bind", bind}, {"overlay", overlay}};
#define NFORMS (sizeof(forms) / sizeof(forms[0]))

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double make_only(int i)
{
	double t = now();
	int fd = forms[i].make();
	t = now() - t;
	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", forms[i].name, strerror(errno));
		exit(1);
	}
	close(fd);
	return t;
}

static double make_and_exec(int i)
{
	double t = now();
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = {"lbbox", "version", NULL}, *envp[] = {NULL};
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		fexecve(forms[i].make(), argv, envp);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s: exec failed (status %d)\n", forms[i].name, status);
		exit(1);
	}
	return now() - t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s BINARY [N]\n", argv[0]);
		return 2;
	}
	static char real[4096];
	bin = realpath(argv[1], real);
	int n = argc > 2 ? atoi(argv[2]) : 200;
	snprintf(dir, sizeof(dir), "%s", bin);
	*strrchr(dir, '/') = '\0';
	snprintf(base, sizeof(base), "%s", strrchr(bin, '/') + 1);
	double *t[2][NFORMS];
	for (size_t f = 0; f < NFORMS; f++)
		for (int k = 0; k < 2; k++)
			t[k][f] = calloc((size_t)n, sizeof(double));
	for (int r = 0; r < n; r++)
		for (size_t f = 0; f < NFORMS; f++) {
			t[0][f][r] = make_only((int)f);
			t[1][f][r] = make_and_exec((int)f);
		}
	printf("%-8s %14s %14s %16s %16s   (N=%d, %s)\n", "form", "make med ms", "make p90 ms",
	       "+exec med ms", "+exec p90 ms", n, bin);
	for (size_t f = 0; f < NFORMS; f++) {
		qsort(t[0][f], (size_t)n, sizeof(double), cmp);
		qsort(t[1][f], (size_t)n, sizeof(double), cmp);
		printf("%-8s %14.3f %14.3f %16.3f %16.3f\n", forms[f].name, t[0][f][n / 2],
		       t[0][f][n * 9 / 10], t[1][f][n / 2], t[1][f][n * 9 / 10]);
	}
	return 0;
}
