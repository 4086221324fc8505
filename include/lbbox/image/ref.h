/* Image references ("alpine", "ghcr.io/org/img@sha256:...") parsed and normalised the way docker
 * and podman do, so a name means the same image here as there. */
#ifndef LBBOX_IMAGE_REF_H
#define LBBOX_IMAGE_REF_H

#include "lbbox/base/err.h"

#define LB_IMAGE_REF_DEFAULT_DOMAIN "docker.io"
#define LB_IMAGE_REF_DEFAULT_TAG    "latest"

struct lb_image_ref {
	char *domain; /* "docker.io", "ghcr.io", "localhost:5000", "[::1]:5000" */
	char *path;   /* repository inside the registry: "library/alpine" */
	char *tag;    /* "latest" when neither tag nor digest was given; NULL for a bare digest */
	char *digest; /* "sha256:<64 lowercase hex>" or NULL */
};

/* Parses and normalises s: "alpine" -> docker.io/library/alpine:latest. On failure *out is left
 * untouched and err names the reference and what is wrong with it. */
int lb_image_ref_parse(const char *s, struct lb_image_ref *out, struct lb_err **err);
void lb_image_ref_clear(struct lb_image_ref *ref);

/* Canonical form, the store's name for the image: "domain/path[:tag][@digest]". */
int lb_image_ref_canonical(const struct lb_image_ref *ref, char **out, struct lb_err **err);
/* Host to talk the Distribution API to: docker.io's API lives at registry-1.docker.io. */
const char *lb_image_ref_api_host(const struct lb_image_ref *ref);
/* Repository in API URLs (/v2/<repository>/manifests/...). */
const char *lb_image_ref_api_repository(const struct lb_image_ref *ref);
/* What to ask /v2/<repo>/manifests/ for: the digest when pinned, else the tag. */
const char *lb_image_ref_manifest_ref(const struct lb_image_ref *ref);

/* A reference as the store looks it up (lb_store_resolve): a name with a registry in its
 * canonical form ("ghcr.io/a/b" -> "ghcr.io/a/b:latest"); a short name ("alpine", "org/app:1",
 * "3f2a1b") as given, so the store can try it as an image ID, then as localhost/NAME, then as
 * docker.io's; a bare "sha256:..." digest kept. Fails on a reference that does not parse. */
int lb_image_name(const char *arg, char **out, struct lb_err **err);

/* The store names s can mean, in podman's lookup order: a short name is
 * "localhost/NAME[:TAG][@DIGEST]" first, then "docker.io/[library/]NAME..."; any other reference
 * its canonical form alone. out[] is NULL-terminated; the caller frees each. */
int lb_image_ref_candidates(const char *s, char *out[3], struct lb_err **err);

/* The name a new tag is stored under: a short name is local ("mydemo" ->
 * "localhost/mydemo:latest"), as podman names images that come from no registry; any other
 * reference its canonical form. */
int lb_image_tag_name(const char *s, char **out, struct lb_err **err);

#endif
