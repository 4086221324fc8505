/* OCI / Docker image documents: index, manifest, image config; host platform selection. */
#ifndef LBBOX_MANIFEST_H
#define LBBOX_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/base/err.h"

#define LB_MT_OCI_INDEX	      "application/vnd.oci.image.index.v1+json"
#define LB_MT_OCI_MANIFEST    "application/vnd.oci.image.manifest.v1+json"
#define LB_MT_OCI_CONFIG      "application/vnd.oci.image.config.v1+json"
#define LB_MT_OCI_LAYER	      "application/vnd.oci.image.layer.v1.tar"
#define LB_MT_OCI_LAYER_GZIP  "application/vnd.oci.image.layer.v1.tar+gzip"
#define LB_MT_OCI_LAYER_ZSTD  "application/vnd.oci.image.layer.v1.tar+zstd"
#define LB_MT_DOCKER_LIST     "application/vnd.docker.distribution.manifest.list.v2+json"
#define LB_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define LB_MT_DOCKER_CONFIG   "application/vnd.docker.container.image.v1+json"
#define LB_MT_DOCKER_LAYER    "application/vnd.docker.image.rootfs.diff.tar"
#define LB_MT_DOCKER_LAYER_GZ "application/vnd.docker.image.rootfs.diff.tar.gzip"
#define LB_MT_DOCKER_FOREIGN  "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
#define LB_ANNOT_REF_NAME     "org.opencontainers.image.ref.name"
#define LB_ANNOT_CONTAINERD   "io.containerd.image.name"

/* Manifests and indexes larger than this are refused before parsing (registries use the same). */
#define LB_MANIFEST_MAX (4u << 20)
/* Image configs carry history and labels; still bounded, they are read into memory. */
#define LB_CONFIG_MAX (16u << 20)
/* "sha256:" + 64 hex digits + NUL. */
#define LB_DIGEST_BUF 72

enum lb_media_kind {
	LB_MEDIA_UNKNOWN = 0,
	LB_MEDIA_INDEX,	   /* OCI index, Docker manifest list */
	LB_MEDIA_MANIFEST, /* OCI manifest, Docker schema 2 */
	LB_MEDIA_CONFIG,
	LB_MEDIA_LAYER,
};

enum lb_compression {
	LB_COMPRESSION_NONE = 0,
	LB_COMPRESSION_GZIP,
	LB_COMPRESSION_ZSTD,
};

struct lb_platform {
	const char *os;
	const char *architecture;
	const char *variant; /* NULL: any */
};

struct lb_descriptor {
	char *media_type;
	char *digest; /* "sha256:<64 lowercase hex>" */
	uint64_t size;
	char *os, *architecture, *variant; /* index entries; NULL when absent */
	char **annotations;		   /* key, value, key, value, ..., NULL; may be NULL */
};

struct lb_index {
	char *media_type; /* as written; NULL when the document had none */
	size_t n_manifests;
	struct lb_descriptor *manifests;
	char **annotations;
};

struct lb_manifest {
	char *media_type;
	struct lb_descriptor config;
	size_t n_layers;
	struct lb_descriptor *layers;
	char **annotations;
};

struct lb_image_config {
	char *os, *architecture, *variant;
	char **env;	   /* NULL-terminated; may be NULL */
	char **entrypoint; /* NULL-terminated; may be NULL */
	char **cmd;	   /* NULL-terminated; may be NULL */
	char *working_dir;
	char *user;
	char **labels; /* config.Labels: key, value, ..., NULL; may be NULL */
	char *created; /* RFC 3339, as written; NULL when absent */
	size_t n_diff_ids;
	char **diff_ids; /* NULL-terminated */
};

/* Accepts only "sha256:" followed by 64 lowercase hex digits, the one algorithm the store keeps. */
int lb_oci_digest_check(const char *digest, struct lb_err **err);
/* Classifies a media type; LB_MEDIA_UNKNOWN for anything lbbox does not handle. */
enum lb_media_kind lb_media_kind(const char *media_type);
int lb_layer_compression(const char *media_type, enum lb_compression *out, struct lb_err **err);

/* Which kind of document buf holds: its mediaType, else inferred from its keys (OCI makes
 * mediaType optional). Unknown, schema 1 or oversized documents are errors. */
int lb_document_kind(const char *buf, size_t len, enum lb_media_kind *out, struct lb_err **err);

int lb_index_parse(const char *buf, size_t len, struct lb_index **out, struct lb_err **err);
void lb_index_free(struct lb_index *ix);
int lb_manifest_parse(const char *buf, size_t len, struct lb_manifest **out, struct lb_err **err);
void lb_manifest_free(struct lb_manifest *m);
int lb_image_config_parse(const char *buf, size_t len, struct lb_image_config **out,
			  struct lb_err **err);
void lb_image_config_free(struct lb_image_config *c);

/* Looks up an annotation of a descriptor; NULL when absent. */
const char *lb_descriptor_annotation(const struct lb_descriptor *d, const char *key);
void lb_descriptor_clear(struct lb_descriptor *d);

/* The platform lbbox runs on: linux + amd64, or arm64 with variant v8, ... */
void lb_platform_host(struct lb_platform *out);
bool lb_platform_matches(const struct lb_descriptor *d, const struct lb_platform *want);
/* Picks the manifest of an index for want (NULL: the host), skipping attestation entries
 * (unknown/unknown). *out points into ix. */
int lb_index_select(const struct lb_index *ix, const struct lb_platform *want,
		    const struct lb_descriptor **out, struct lb_err **err);

#endif
