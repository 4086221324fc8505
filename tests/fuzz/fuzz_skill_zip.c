/*
 * Fuzz target: a skill upload's zip (src/box/skill_zip.c), unpacked with libarchive under the
 * upload limits into a scratch directory.
 *
 * Properties checked besides the sanitizers: an accepted archive leaves only directories and
 * regular files of at most 16 MiB, 64 MiB in all, nothing outside the directory it was given,
 * and a refused one has an error.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box/skill_zip.h"
#include "fuzz_common.h"

static char top[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	snprintf(top, sizeof(top), "%s", fuzz_scratch("fuzz-skill-zip"));
	return 0;
}

/* Every entry below fd: directories and regular files only; their bytes added to *total. */
static void walk(int fd, int depth, unsigned long long *total)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;
	struct stat st;
	FUZZ_CHECK(d, "cannot read the unpacked tree");
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		FUZZ_CHECK(fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0, "stat %s",
			   e->d_name);
		FUZZ_CHECK(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode),
			   "%s is neither a file nor a "
			   "directory",
			   e->d_name);
		if (S_ISREG(st.st_mode)) {
			FUZZ_CHECK((unsigned long long)st.st_size <= SKILL_ZIP_ENTRY_MAX,
				   "%s is over the entry limit", e->d_name);
			*total += (unsigned long long)st.st_size;
			continue;
		}
		int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		FUZZ_CHECK(sub >= 0 && depth < 4096, "cannot enter %s", e->d_name);
		walk(sub, depth + 1, total);
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[4200];
	struct lb_err *err = NULL;
	int zfd = memfd_create("zip", MFD_CLOEXEC);
	if (zfd < 0 || (size && write(zfd, data, size) != (ssize_t)size))
		fuzz_setup_fail("memfd");
	snprintf(out, sizeof(out), "%s/out", top);
	if (mkdir(out, 0700) < 0)
		fuzz_setup_fail("mkdir");
	int dfd = open(out, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		fuzz_setup_fail("open");
	if (skill_unzip(zfd, dfd, &err) < 0) {
		FUZZ_CHECK(err && err->msg, "a refused archive without an error");
		lb_err_free(&err);
	} else {
		unsigned long long total = 0;
		walk(dup(dfd), 0, &total);
		FUZZ_CHECK(total <= SKILL_ZIP_TOTAL_MAX, "%llu bytes unpacked", total);
	}
	/* nothing beside out/ in the scratch directory */
	DIR *d = opendir(top);
	struct dirent *e;
	while (d && (e = readdir(d)))
		FUZZ_CHECK(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
			       !strcmp(e->d_name, "out"),
			   "%s was written outside the directory", e->d_name);
	if (d)
		closedir(d);
	close(dfd);
	close(zfd);
	lb_rm_rf(out, NULL);
	return 0;
}
