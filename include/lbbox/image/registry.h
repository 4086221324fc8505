/* `lbbox pull`: the registry client (Distribution API v2 over libcurl).
 *
 * A pull resolves the reference's tag (or digest) to a manifest, goes through an index to the
 * platform's manifest, then fetches the config and the layers, streaming every blob straight into
 * one store transaction. Sizes are checked before any byte is written and every document and blob
 * is verified against its sha256; the transaction is committed only when all of it verified, so a
 * failed or killed pull leaves the store as it was. Blobs already in the store are not fetched. */
#ifndef LBBOX_REGISTRY_H
#define LBBOX_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/base/err.h"
#include "lbbox/image/manifest.h"
#include "lbbox/image/progress.h"
#include "lbbox/image/store.h"

/* Environment variable naming a Docker-style config.json ("auths") when opts->auth_file is NULL;
 * REGISTRY_AUTH_FILE (podman's name) is honoured too. */
#define LB_REGISTRY_AUTH_ENV "LBBOX_AUTH_FILE"

struct lb_pull_opts {
	/* Platform chosen from an index; NULL: the host's. */
	const struct lb_platform *platform;
	/* Registries ("host" or "host:port", as in the reference or its API host) spoken to over
	 * plain HTTP; NULL-terminated, may be NULL. Every other registry is HTTPS only. */
	const char *const *insecure_registries;
	/* Docker-style config.json for Basic credentials; NULL: $LBBOX_AUTH_FILE, then
	 * $REGISTRY_AUTH_FILE, then none. A missing file means anonymous. */
	const char *auth_file;
	/* Connect timeout (default 30 s); a transfer receiving nothing for stall_timeout_s
	 * (default 60 s) is aborted. */
	long connect_timeout_s;
	long stall_timeout_s;
	/* Custom CA bundle for HTTPS (NULL: the system's). */
	const char *ca_file;
	lb_image_progress_fn progress; /* may be NULL (progress.h) */
	void *progress_ctx;
};

struct lb_pull_result {
	char *name; /* the store's name: canonical reference, "docker.io/library/alpine:3.20" */
	char *media_type;	    /* of the stored (platform) manifest */
	char digest[LB_DIGEST_BUF]; /* the stored manifest's digest */
	uint64_t size;
	size_t n_layers;
	uint64_t bytes_fetched; /* blob bytes downloaded (cached blobs excluded) */
};

/* Pulls ref ("alpine:3.20", "ghcr.io/org/img@sha256:...") into s and tags it under its canonical
 * name. Errors are one line naming the registry and what went wrong: 401/403/404, "rate limited"
 * with the Retry-After time (errnum EAGAIN), network failures, verification failures. */
int lb_pull(struct lb_store *s, const char *ref, const struct lb_pull_opts *opts,
	    struct lb_pull_result *out, struct lb_err **err);
void lb_pull_result_clear(struct lb_pull_result *r);

/* Whether host ("host[:port]") is listed in opts' insecure registries. */
bool lb_registry_insecure(const struct lb_pull_opts *opts, const char *host);

#endif
