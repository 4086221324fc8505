/* Shared between the loader's files: the input being imported and what it has produced. */
#ifndef LBBOX_LOAD_INTERNAL_H
#define LBBOX_LOAD_INTERNAL_H

#include "lbbox/image/load.h"

/* Bounds on what an archive may make lbbox do. */
#define LOAD_MAX_ENTRIES    100000
#define LOAD_MAX_LINK_DEPTH 8

/* One file of an archive, staged in the transaction under the digest of its content. */
struct load_file {
	char *path; /* normalised: no leading "./" or "/" */
	char *link; /* symlink or hardlink target path (normalised), else NULL */
	char digest[LB_DIGEST_BUF];
	uint64_t size;
};

struct load_src {
	struct lb_store_txn *t;
	const struct lb_load_opts *opts;
	int dir_fd; /* OCI layout directory, or -1 for an archive */
	struct load_file *files;
	size_t n_files;
	struct lb_load_result result;
};

/* Streams every regular file of the tar on fd into the transaction (archive sources). */
int load_tar_stage(struct load_src *src, int fd, struct lb_err **err);
const struct load_file *load_src_lookup(const struct load_src *src, const char *path);
/* load_src.c: frees what the input holds (files, result, transaction, directory). */
void load_src_clear(struct load_src *src);
/* Reads a (small) file of the input whole. */
int load_src_read(struct load_src *src, const char *path, size_t max, char **buf, size_t *len,
		  struct lb_err **err);
/* Makes sure the blob digest/size of the input is staged (or stored), verified, and when keep,
 * part of what the commit publishes. */
int load_src_blob(struct load_src *src, const char *digest, uint64_t size, bool keep,
		  struct lb_err **err);
/* Records name -> manifest in the transaction and the result, after opts' name handling. */
int load_src_tag(struct load_src *src, const char *found_name, const char *media_type,
		 const char *digest, uint64_t size, struct lb_err **err);
/* sha256 of the decompressed stream of a staged layer (the DiffID). */
int load_diff_id(struct load_src *src, const char *digest, char diff_id[LB_DIGEST_BUF],
		 struct lb_err **err);

/* Importers: an OCI layout (dir or archive), and `docker save` output (archive). */
int load_oci(struct load_src *src, struct lb_err **err);
int load_docker(struct load_src *src, struct lb_err **err);

#endif
