/* `lbbox pull`: tag -> manifest (through an index to the platform's) -> config -> layers, all
 * staged in one store transaction and committed only once every piece verified. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/image/load.h"
#include "lbbox/image/ref.h"

#define MANIFEST_ACCEPT                                                                            \
	LB_MT_OCI_INDEX ", " LB_MT_OCI_MANIFEST ", " LB_MT_DOCKER_LIST ", " LB_MT_DOCKER_MANIFEST
/* An index may point at an index; no registry needs more than that. */
#define MAX_INDEX_DEPTH 2

struct pull {
	struct reg_client c;
	struct lb_store_txn *t;
	const struct lb_pull_opts *opts;
	struct lb_image_ref ref;
	struct lb_image_progress prog;
	struct lb_pull_result *res;
};

void lb_pull_result_clear(struct lb_pull_result *r)
{
	free(r->name);
	free(r->media_type);
	*r = (struct lb_pull_result){0};
}

static void progress(struct pull *p, const char *what, const char *digest, uint64_t total,
		     bool cached)
{
	p->prog.what = what;
	p->prog.digest = digest;
	p->prog.done = cached ? total : 0;
	p->prog.total = total;
	p->prog.cached = cached;
	if (p->opts->progress)
		p->opts->progress(&p->prog, p->opts->progress_ctx);
}

/* Tries of one blob: a connection that breaks off mid-layer is resumed where it stopped. */
#define BLOB_ATTEMPTS	4
#define BLOB_BACKOFF_MS 200

/* One try of the blob into sink.w, from what it already holds; *again: worth another try. */
static int fetch_blob_once(struct pull *p, const char *path, struct reg_sink *sink, bool *again,
			   struct lb_err **err)
{
	struct reg_response resp = {0};
	sink->offset = lb_blob_writer_size(sink->w);
	sink->restart = false;
	int r = reg_get(&p->c, path, NULL, sink, &resp, "blob", err);
	*again = r < 0 && (resp.transient || sink->restart);
	reg_response_clear(&resp);
	return r;
}

/* Streams one blob into the transaction, verified against d; skipped when already stored. */
static int fetch_blob(struct pull *p, const struct lb_descriptor *d, const char *what,
		      struct lb_err **err)
{
	_cleanup_free_ char *path = NULL;
	struct reg_sink sink = {.want_size = d->size, .progress = &p->prog};

	if (lb_store_txn_has(p->t, d->digest)) {
		progress(p, what, d->digest, d->size, true);
		return lb_store_txn_keep(p->t, d->digest, err);
	}
	if (asprintf(&path, "/v2/%s/blobs/%s", p->c.repository, d->digest) < 0)
		return lb_err_set(err, ENOMEM, "blob URL");
	if (lb_blob_writer_begin(p->t, d->digest, (int64_t)d->size, &sink.w, err) < 0)
		return -1;
	progress(p, what, d->digest, d->size, false);
	for (int attempt = 1;; attempt++) {
		_cleanup_err_ struct lb_err *e = NULL;
		bool again = false;
		if (fetch_blob_once(p, path, &sink, &again, &e) == 0)
			break;
		if (sink.restart) { /* the digest covers every byte: start the writer over */
			lb_blob_writer_abort(sink.w);
			sink.w = NULL;
			if (lb_blob_writer_begin(p->t, d->digest, (int64_t)d->size, &sink.w, err) <
			    0)
				return -1;
		}
		if (!again || attempt == BLOB_ATTEMPTS) {
			lb_blob_writer_abort(sink.w);
			if (err && !*err)
				*err = LB_TAKE_PTR(e);
			return lb_err_wrap(err, "%s %s", what, d->digest);
		}
		usleep((useconds_t)(BLOB_BACKOFF_MS * 1000 * attempt));
	}
	if (lb_blob_writer_finish(sink.w, NULL, NULL, err) < 0)
		return lb_err_wrap(err, "%s %s", what, d->digest);
	p->res->bytes_fetched += d->size;
	return lb_store_txn_keep(p->t, d->digest, err);
}

/* The digest a registry names in Docker-Content-Digest must be the content's. */
static int check_manifest_digest(const char *got, const char *want, const char *header,
				 struct lb_err **err)
{
	if (want && strcmp(got, want) != 0)
		return lb_err_set(err, 0, "manifest %s: digest mismatch, content hashes to %s",
				  want, got);
	if (header && strncmp(header, "sha256:", 7) == 0 && strcmp(header, got) != 0)
		return lb_err_set(err, 0,
				  "manifest: registry names digest %s, content hashes to %s",
				  header, got);
	return 0;
}

/* GETs a manifest or index by tag or digest (want: the expected descriptor, NULL for a tag) and
 * stages it, returning its digest. */
static int fetch_manifest(struct pull *p, const char *reference, const struct lb_descriptor *want,
			  char **buf, size_t *len, char digest[LB_DIGEST_BUF], struct lb_err **err)
{
	_cleanup_free_ char *path = NULL, *what = NULL;
	struct reg_response resp = {0};
	struct reg_sink sink = {.max = LB_MANIFEST_MAX, .progress = &p->prog};
	const char *want_digest = want ? want->digest : p->ref.digest;
	int r = -1;

	if (want && want->size > LB_MANIFEST_MAX)
		return lb_err_set(err, EFBIG, "manifest %s too large: %llu bytes (limit %u MiB)",
				  want->digest, (unsigned long long)want->size,
				  LB_MANIFEST_MAX >> 20);
	sink.want_size = want ? want->size : 0;
	sink.size_known = want != NULL;
	if (asprintf(&path, "/v2/%s/manifests/%s", p->c.repository, reference) < 0 ||
	    asprintf(&what, "manifest %s", reference) < 0)
		return lb_err_set(err, ENOMEM, "manifest URL");
	progress(p, "manifest", want_digest, sink.want_size, false);
	if (reg_get(&p->c, path, MANIFEST_ACCEPT, &sink, &resp, what, err) < 0)
		goto out;
	if (lb_store_txn_put_buf(p->t, sink.buf ? sink.buf : "", sink.len, digest, err) < 0 ||
	    check_manifest_digest(digest, want_digest, resp.docker_digest, err) < 0)
		goto out;
	*buf = LB_TAKE_PTR(sink.buf);
	*len = sink.len;
	r = 0;
out:
	free(sink.buf);
	reg_response_clear(&resp);
	return r;
}

static int pull_config(struct pull *p, const struct lb_manifest *m, struct lb_image_config **out,
		       struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct lb_image_config *cfg = NULL;

	if (m->config.size > LB_CONFIG_MAX)
		return lb_err_set(err, EFBIG, "config %s too large", m->config.digest);
	if (fetch_blob(p, &m->config, "config", err) < 0 ||
	    lb_store_txn_read(p->t, m->config.digest, LB_CONFIG_MAX, &buf, &len, err) < 0 ||
	    lb_image_config_parse(buf, len, &cfg, err) < 0)
		return -1;
	if (cfg->n_diff_ids != m->n_layers) {
		lb_err_set(err, 0, "config %s lists %zu diff_ids for %zu layers", m->config.digest,
			   cfg->n_diff_ids, m->n_layers);
		lb_image_config_free(cfg);
		return -1;
	}
	*out = cfg;
	return 0;
}

/* The uncompressed layer must be what the config says: its DiffID, checked before commit. */
static int check_diff_id(struct pull *p, const struct lb_descriptor *layer, const char *want,
			 struct lb_err **err)
{
	char got[LB_DIGEST_BUF];
	if (lb_layer_diff_id(p->t, layer->digest, got, err) < 0)
		return -1;
	if (strcmp(got, want) != 0)
		return lb_err_set(err, 0,
				  "layer %s: DiffID %s does not match the image config's %s",
				  layer->digest, got, want);
	return 0;
}

static int pull_image(struct pull *p, const char *buf, size_t len, const char *digest,
		      struct lb_err **err)
{
	struct lb_manifest *m = NULL;
	struct lb_image_config *cfg = NULL;
	_cleanup_free_ char *name = NULL;
	int r = -1;

	if (lb_manifest_parse(buf, len, &m, err) < 0)
		return lb_err_wrap(err, "manifest %s", digest);
	p->prog.count = m->n_layers;
	if (pull_config(p, m, &cfg, err) < 0)
		goto out;
	for (size_t i = 0; i < m->n_layers; i++) {
		p->prog.index = i + 1;
		if (fetch_blob(p, &m->layers[i], "layer", err) < 0 ||
		    check_diff_id(p, &m->layers[i], cfg->diff_ids[i], err) < 0)
			goto out;
	}
	const char *mt = m->media_type ? m->media_type : LB_MT_OCI_MANIFEST;
	if (lb_image_ref_canonical(&p->ref, &name, err) < 0 ||
	    lb_store_txn_keep(p->t, digest, err) < 0 ||
	    lb_store_txn_tag(p->t, name, mt, digest, len, err) < 0)
		goto out;
	p->res->name = LB_TAKE_PTR(name);
	p->res->media_type = strdup(mt);
	snprintf(p->res->digest, sizeof(p->res->digest), "%s", digest);
	p->res->size = len;
	p->res->n_layers = m->n_layers;
	r = p->res->media_type ? 0 : lb_err_set(err, ENOMEM, "pull result");
out:
	lb_image_config_free(cfg);
	lb_manifest_free(m);
	return r;
}

static int pull_document(struct pull *p, const char *reference, const struct lb_descriptor *want,
			 int depth, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	char digest[LB_DIGEST_BUF];
	enum lb_media_kind kind;
	struct lb_index *ix = NULL;
	const struct lb_descriptor *pick;

	if (fetch_manifest(p, reference, want, &buf, &len, digest, err) < 0)
		return -1;
	if (lb_document_kind(buf, len, &kind, err) < 0)
		return lb_err_wrap(err, "manifest %s", reference);
	if (kind == LB_MEDIA_MANIFEST)
		return pull_image(p, buf, len, digest, err);
	if (kind != LB_MEDIA_INDEX)
		return lb_err_set(err, 0, "manifest %s: unsupported document", reference);
	if (depth >= MAX_INDEX_DEPTH)
		return lb_err_set(err, ELOOP, "index %s: nested too deeply", digest);
	if (lb_index_parse(buf, len, &ix, err) < 0)
		return lb_err_wrap(err, "index %s", digest);
	/* Only the platform's manifest is stored, as `lbbox load` does; the index is not kept. */
	int r = lb_index_select(ix, p->opts->platform, &pick, err);
	if (r == 0)
		r = pull_document(p, pick->digest, pick, depth + 1, err);
	lb_index_free(ix);
	return r;
}

/* GET /v2/: checks the endpoint is a registry and learns its auth challenge. */
static int ping(struct pull *p, struct lb_err **err)
{
	struct reg_response resp = {0};
	struct reg_sink sink = {.max = REG_ERRBODY_MAX};
	int r = reg_get(&p->c, "/v2/", NULL, &sink, &resp, "API endpoint /v2/", err);

	free(sink.buf);
	reg_response_clear(&resp);
	return r;
}

static const char *auth_file_path(const struct lb_pull_opts *o)
{
	const char *env;

	if (o->auth_file)
		return o->auth_file;
	if ((env = getenv(LB_REGISTRY_AUTH_ENV)) && *env)
		return env;
	if ((env = getenv("REGISTRY_AUTH_FILE")) && *env)
		return env;
	return NULL;
}

static int pull_setup(struct pull *p, const char *ref, struct lb_err **err)
{
	const char *file = auth_file_path(p->opts);

	if (lb_image_ref_parse(ref, &p->ref, err) < 0)
		return -1;
	if (reg_client_init(&p->c, lb_image_ref_api_host(&p->ref), p->ref.domain,
			    lb_image_ref_api_repository(&p->ref), p->opts, err) < 0)
		return -1;
	if (file && reg_auth_file_lookup(file, p->ref.domain, &p->c.auth.basic, err) < 0)
		return -1;
	return 0;
}

int lb_pull(struct lb_store *s, const char *ref, const struct lb_pull_opts *opts,
	    struct lb_pull_result *out, struct lb_err **err)
{
	static const struct lb_pull_opts defaults = {0};
	struct lb_pull_result res = {0};
	struct pull p = {.opts = opts ? opts : &defaults, .res = &res};
	int r = -1;

	if (pull_setup(&p, ref, err) < 0 || lb_store_txn_begin(s, &p.t, err) < 0)
		goto out;
	if (ping(&p, err) < 0 ||
	    pull_document(&p, lb_image_ref_manifest_ref(&p.ref), NULL, 0, err) < 0 ||
	    lb_store_txn_commit(p.t, err) < 0)
		goto out;
	r = 0;
out:
	lb_store_txn_free(p.t);
	reg_client_clear(&p.c);
	lb_image_ref_clear(&p.ref);
	if (r < 0) {
		lb_pull_result_clear(&res);
		return lb_err_wrap(err, "pull %s", ref);
	}
	if (out)
		*out = res;
	else
		lb_pull_result_clear(&res);
	return 0;
}
