/*
 * Fuzz target: layer unpack (src/image/unpack*.c). The input is a layer blob (tar, or tar
 * compressed with gzip or zstd, detected from the content as when the media type is unknown),
 * read through a memfd by lb_unpack_layer_fd three ways, as lbbox unpacks layers:
 *   1. into a fresh directory, as root: an overlayfs lower layer (whiteouts become 0/0 devices,
 *      opaque directories a trusted.overlay.opaque xattr; devices, owners, setuid kept);
 *   2. onto that same tree again with LB_UNPACK_APPLY, as the copy fallback applies a layer onto
 *      the merged tree (whiteouts delete);
 *   3. into another fresh directory with LB_UNPACK_ROOTLESS | LB_UNPACK_USERXATTR.
 *
 * The scratch directory is a private tmpfs (see fuzz_common.h), laid out as
 *   S/canary/  S/victim  S/d/canary/  S/d/victim  S/d/root/  S/d/root2/
 * and the layers go into S/d/root and S/d/root2, removed after every input. The input must never
 * write outside them: after each input both canary directories are still empty, both victim
 * files untouched (content, mode, owner, one link: a hardlink to them would be an escape), and
 * S and S/d hold nothing else. Also checked: for an uncompressed layer, the DiffID is the sha256
 * of the input itself and the tar size its length (the store verifies layers by them).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "lbbox/base/hash.h"
#include "lbbox/image/unpack.h"

#define VICTIM "do not touch\n"

static char top[4200], mid[4300];
static int blob_fd = -1;
static bool verbose; /* FUZZ_VERBOSE=1: what each unpack did, for writing seeds */

static void put_canaries(const char *dir)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/canary", dir);
	if (mkdir(path, 0755) < 0)
		fuzz_setup_fail(path);
	snprintf(path, sizeof(path), "%s/victim", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, VICTIM, strlen(VICTIM)) != (ssize_t)strlen(VICTIM))
		fuzz_setup_fail(path);
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	snprintf(top, sizeof(top), "%s", fuzz_scratch("fuzz-unpack"));
	snprintf(mid, sizeof(mid), "%s/d", top);
	put_canaries(top);
	if (mkdir(mid, 0755) < 0)
		fuzz_setup_fail(mid);
	put_canaries(mid);
	blob_fd = memfd_create("fuzz-layer", MFD_CLOEXEC);
	if (blob_fd < 0)
		fuzz_setup_fail("memfd_create");
	return 0;
}

/* dir holds exactly the names in want (NULL-terminated). */
static void check_listing(const char *dir, const char *const *want)
{
	DIR *d = opendir(dir);
	size_t n = 0, nwant = 0;
	if (!d)
		fuzz_setup_fail(dir);
	while (want[nwant])
		nwant++;
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		bool known = false;
		for (size_t i = 0; i < nwant && !known; i++)
			known = !strcmp(e->d_name, want[i]);
		FUZZ_CHECK(known, "the layer created %s/%s, outside its directory", dir, e->d_name);
		n++;
	}
	closedir(d);
	FUZZ_CHECK(n == nwant, "%s holds %zu of its %zu entries: the layer removed one", dir, n,
		   nwant);
}

static void check_canaries(const char *dir)
{
	static const char *const none[] = {NULL};
	char path[4400], buf[64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/canary", dir);
	FUZZ_CHECK(lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755 &&
		       st.st_uid == geteuid(),
		   "%s was replaced, re-owned or chmod'ed", path);
	check_listing(path, none);
	snprintf(path, sizeof(path), "%s/victim", dir);
	FUZZ_CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0644 &&
		       st.st_nlink == 1 && st.st_uid == geteuid() &&
		       st.st_size == (off_t)strlen(VICTIM),
		   "%s was replaced, linked to, re-owned, chmod'ed or resized", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
	FUZZ_CHECK(n == (ssize_t)strlen(VICTIM) && !memcmp(buf, VICTIM, (size_t)n),
		   "%s was written to", path);
	close(fd);
}

static void remove_tree(const char *path)
{
	struct lb_err *err = NULL;
	if (lb_rm_rf(path, &err) < 0)
		fuzz_setup_fail(err->msg);
}

static void unpack_into(const char *dir, bool fresh, unsigned flags, const uint8_t *data,
			size_t size)
{
	struct lb_unpack_opts opts = {.flags = flags};
	struct lb_unpack_result res;
	struct lb_err *err = NULL;

	if (fresh && mkdir(dir, 0755) < 0)
		fuzz_setup_fail(dir);
	int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		fuzz_setup_fail(dir);
	if (lseek(blob_fd, 0, SEEK_SET) < 0)
		fuzz_setup_fail("lseek");
	if (lb_unpack_layer_fd(blob_fd, root, &opts, &res, &err) == 0) {
		bool compressed = (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) ||
				  (size >= 4 && !memcmp(data, "\x28\xb5\x2f\xfd", 4));
		char hex[65];
		lb_sha256_hex(data, size, hex);
		FUZZ_CHECK(
		    compressed || (!strcmp(res.diff_id + 7, hex) && res.tar_size == size),
		    "DiffID %s (%llu bytes) of an uncompressed layer of %zu bytes, sha256:%s",
		    res.diff_id, (unsigned long long)res.tar_size, size, hex);
	} else {
		FUZZ_CHECK(err && err->msg, "a refused layer without an error");
	}
	if (verbose)
		fprintf(stderr, "fuzz_unpack: flags %u: %s\n", flags, err ? err->msg : "unpacked");
	lb_err_free(&err);
	close(root);
}

/* The header size field: octal digits (spaces, NULs around); -1 for anything else. */
static int64_t header_size(const uint8_t *h)
{
	int64_t n = 0;
	int i = 124;
	while (i < 136 && (h[i] == ' ' || h[i] == '\0'))
		i++;
	for (; i < 136 && h[i] >= '0' && h[i] <= '7'; i++)
		n = n * 8 + (h[i] - '0');
	return i < 136 && h[i] != ' ' && h[i] != '\0' ? -1 : n;
}

/* Rewrites the checksum of every header block of an uncompressed tar, walking from header to
 * header by the size fields until a zero block or a size it cannot read. */
static void fix_tar_checksums(uint8_t *data, size_t size)
{
	static const uint8_t zero[512];
	for (size_t off = 0; off + 512 <= size;) {
		uint8_t *h = data + off;
		unsigned sum = 0;
		int64_t len = header_size(h);
		if (!memcmp(h, zero, sizeof(zero)) || len < 0)
			return;
		memset(h + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += h[i];
		snprintf((char *)h + 148, 7, "%06o", sum & 0777777);
		if ((uint64_t)len > size)
			return;
		off += 512 + ((size_t)len + 511) / 512 * 512;
	}
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/*
 * libarchive (not instrumented, so no comparison feedback from it) refuses a tar header whose
 * checksum is wrong: nearly every mutation of a header would stop there. After most mutations
 * the checksums are made right again, so the fuzzer gets to what lies behind the headers; the
 * input it keeps is still exactly what the unpacker reads.
 */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	size = LLVMFuzzerMutate(data, size, max_size);
	if (seed % 8 && !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b))
		fix_tar_checksums(data, size);
	return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const top_names[] = {"canary", "victim", "d", NULL};
	static const char *const mid_names[] = {"canary", "victim", "root", "root2", NULL};
	static const char *const mid_after[] = {"canary", "victim", NULL};
	char root[4400], root2[4400];

	if (ftruncate(blob_fd, 0) < 0 || pwrite(blob_fd, data, size, 0) != (ssize_t)size)
		fuzz_setup_fail("write the layer to the memfd");
	snprintf(root, sizeof(root), "%s/root", mid);
	snprintf(root2, sizeof(root2), "%s/root2", mid);
	unpack_into(root, true, 0, data, size);
	unpack_into(root, false, LB_UNPACK_APPLY, data, size);
	unpack_into(root2, true, LB_UNPACK_ROOTLESS | LB_UNPACK_USERXATTR, data, size);
	/* before the trees go: a hardlink to a victim from inside them would go with them */
	check_canaries(top);
	check_canaries(mid);
	check_listing(top, top_names);
	check_listing(mid, mid_names);
	remove_tree(root);
	remove_tree(root2);
	check_listing(mid, mid_after);
	return 0;
}
