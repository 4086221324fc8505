/*
 * Fuzz target: Box request JSON -> struct lb_box_spec (src/box/box_spec*.c): pydantic's lax
 * coercions, the validators, extra mounts, the managed-process spec and the profiles. The input
 * is one JSON document: a request line ({"action", "data": BoxSpec, ...}) or a bare payload.
 *
 * Properties checked besides the sanitizers, on every spec that parses:
 * - it validates again unchanged (lb_box_spec_validate, as the CLI re-runs it);
 * - the session record written for it (lb_box_spec_session_json + the session id) parses back
 *   into a spec compatible with it, with the same extra mounts: a session that was created can
 *   always be read back, as box_spec_copy and the registry do.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lbbox/box_spec.h"

static void check_session_record(const struct lb_box_spec *spec)
{
	struct lb_box_spec back;
	struct lb_err *err = NULL;
	json_t *rec = lb_box_spec_session_json(spec);

	FUZZ_CHECK(rec, "no session record for a valid spec");
	json_object_set_new(rec, "session_id", json_string(spec->session_id));
	FUZZ_CHECK(lb_box_spec_from_json(rec, &back, &err) == 0,
		   "the session record of a valid spec does not parse: %s", err ? err->msg : "?");
	FUZZ_CHECK(lb_box_spec_check_compatible(spec, &back, spec->session_id, &err) == 0,
		   "a spec and its own session record conflict: %s", err ? err->msg : "?");
	FUZZ_CHECK(lb_box_extra_mounts_equal(spec, &back),
		   "extra mounts changed through the session record");
	FUZZ_CHECK(!strcmp(back.session_id, spec->session_id), "session id %s came back as %s",
		   spec->session_id, back.session_id);
	lb_box_spec_free(&back);
	json_decref(rec);
}

static void box_spec(const json_t *payload)
{
	struct lb_box_spec spec;
	struct lb_err *err = NULL;

	if (lb_box_spec_from_json(payload, &spec, &err) < 0) {
		FUZZ_CHECK(err && err->msg, "a refused spec without an error");
		lb_err_free(&err);
		return;
	}
	FUZZ_CHECK(lb_box_spec_validate(&spec, &err) == 0, "a parsed spec fails validation: %s",
		   err ? err->msg : "?");
	check_session_record(&spec);
	lb_box_spec_free(&spec);
}

static void proc_spec(const json_t *obj)
{
	struct lb_box_proc_spec spec;
	struct lb_err *err = NULL;

	if (lb_box_proc_spec_from_json(obj, &spec, &err) == 0) {
		FUZZ_CHECK(spec.command && *spec.command, "a managed process without a command");
		FUZZ_CHECK(spec.cwd && spec.cwd[0] == '/', "a relative cwd %s", spec.cwd);
		lb_box_proc_spec_free(&spec);
	}
	lb_err_free(&err);
}

/* A profile named in the payload, applied as `lbbox session create --profile` does. */
static void with_profile(const json_t *payload)
{
	json_t *name = json_object_get(payload, "profile");
	struct lb_err *err = NULL;

	if (!json_is_string(name))
		return;
	const struct lb_box_profile *p = lb_box_profile_find(json_string_value(name), &err);
	if (p) {
		json_t *copy = json_deep_copy(payload);
		if (lb_box_profile_apply(p, copy, &err) == 0)
			box_spec(copy);
		json_decref(copy);
	}
	lb_err_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* as the RPC reader loads a request (src/rpc/frame.c) */
	json_t *doc = json_loadb((const char *)data, size, 0, NULL);
	if (!doc)
		return 0;
	json_t *payload = json_object_get(doc, "data");
	if (!json_is_object(payload))
		payload = doc;
	box_spec(payload);
	/* box_start_managed_process: {"session_id", "spec": BoxManagedProcessSpec} */
	json_t *ps = json_object_get(payload, "spec");
	proc_spec(ps ? ps : payload);
	with_profile(payload);
	json_decref(doc);
	return 0;
}
