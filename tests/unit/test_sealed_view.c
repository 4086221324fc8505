/*
 * The sealed view (src/sandbox/sealed_view.c) shows exactly the directory lbbox runs from: its
 * second layer adds no file (a data-only layer, or a new empty directory on older kernels), and
 * making it leaves nothing behind. Root only: an overlay's fsopen needs CAP_SYS_ADMIN.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/err.h"
#include "sandbox/sealed.h"

/* qsort's comparator gets pointers to the elements */
static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names in directory fd (consumed), one per line. */
static char *names(int fd)
{
	DIR *d = fdopendir(fd);
	cr_assert_not_null(d);
	char *v[4096];
	size_t n = 0, len = 0;
	for (struct dirent *e; (e = readdir(d)) && n < 4096;)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			v[n++] = strdup(e->d_name);
	closedir(d);
	qsort(v, n, sizeof(*v), by_name);
	char *out = NULL;
	FILE *m = open_memstream(&out, &len);
	for (size_t i = 0; i < n; i++) {
		fprintf(m, "%s\n", v[i]);
		free(v[i]);
	}
	fclose(m);
	return out;
}

static int seal_dirs(void)
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

Test(sealed_view, shows_the_binary_s_directory_and_nothing_else)
{
	if (geteuid() != 0)
		cr_skip("an overlay's fsopen needs CAP_SYS_ADMIN");
	char exe[4096], marker[64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	/* a file in /dev/shm, where the data-only layer comes from, must not show */
	snprintf(marker, sizeof(marker), "/dev/shm/lbbox-unit-seal-%d", (int)getpid());
	int mk = open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert(mk >= 0);
	close(mk);
	int dirs = seal_dirs();
	struct lb_err *err = NULL;
	int fd = -1, dir = -1;
	int r = lb_sealed_view(&fd, &dir, &err);
	unlink(marker);
	cr_assert_eq(r, 0, "lb_sealed_view: %s", err ? err->msg : "");
	struct stat a, b;
	cr_assert(fstat(fd, &a) == 0 && stat("/proc/self/exe", &b) == 0);
	cr_assert(a.st_ino == b.st_ino && a.st_size == b.st_size, "the view's binary is another");
	char *seen = names(openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	char *want = names(open(exe, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	cr_assert_str_eq(seen, want, "the view shows other files than %s:\n%s\nagainst\n%s", exe,
			 seen, want);
	cr_assert_eq(seal_dirs(), dirs, "an lbbox-seal-* directory was left behind");
	/* read-only at the superblock */
	cr_assert_lt(openat(dir, "lbbox-unit-new", O_CREAT | O_WRONLY | O_CLOEXEC, 0600), 0);
	free(seen), free(want);
	close(fd), close(dir);
}
