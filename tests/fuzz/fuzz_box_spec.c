/*
 * Fuzz target: Box request JSON -> struct lb_box_spec (src/rpc/spec*.c, src/rpc/coerce.c, the
 * validators of src/box/box_spec*.c): pydantic's lax coercions, the validators, extra mounts,
 * the managed-process spec, the session record and the profiles. The input
 * is one JSON document: a request line ({"action", "data": BoxSpec, ...}) or a bare payload.
 *
 * Properties checked besides the sanitizers, on every spec that parses:
 * - it validates again unchanged (lb_box_spec_validate, as the CLI re-runs it);
 * - the session record written for it (lb_box_spec_session_json + the session id) reads back
 *   (lb_box_spec_from_record) into a spec compatible with it, with the same extra mounts: a
 *   session that was created can always be read back, as box_spec_copy and the records do;
 * - a profile filled in over the fields the payload did not give still validates or fails with
 *   an error, as `lbbox session create --profile` does.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "box/box_internal.h"
#include "fuzz_common.h"
#include "lbbox/box/spec.h"
#include "lbbox/rpc/rpc.h"

static void check_session_record(const struct lb_box_spec *spec)
{
	struct lb_box_spec back;
	struct lb_err *err = NULL;
	json_t *rec = lb_box_spec_session_json(spec);

	FUZZ_CHECK(rec, "no session record for a valid spec");
	json_object_set_new(rec, "session_id", json_string(spec->session_id));
	FUZZ_CHECK(lb_box_spec_from_record(rec, &back, &err) == 0,
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

	if (lb_rpc_spec_parse(payload, &spec, &err) < 0) {
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

	if (lb_rpc_proc_spec_parse(obj, &spec, &err) == 0) {
		FUZZ_CHECK(spec.command && *spec.command, "a managed process without a command");
		FUZZ_CHECK(spec.cwd && spec.cwd[0] == '/', "a relative cwd %s", spec.cwd);
		lb_box_proc_spec_free(&spec);
	}
	lb_err_free(&err);
}

/* The profile fields the payload gives, as the CLI's flags would. */
static unsigned given_of(const json_t *payload)
{
	static const struct {
		const char *key;
		unsigned bit;
	} keys[] = {{"image", LB_BOX_GIVEN_IMAGE},
		    {"network", LB_BOX_GIVEN_NETWORK},
		    {"timeout_sec", LB_BOX_GIVEN_TIMEOUT},
		    {"host_path_mode", LB_BOX_GIVEN_HOST_PATH_MODE},
		    {"cpus", LB_BOX_GIVEN_CPUS},
		    {"memory_mb", LB_BOX_GIVEN_MEMORY},
		    {"pids_limit", LB_BOX_GIVEN_PIDS},
		    {"read_only_rootfs", LB_BOX_GIVEN_READ_ONLY},
		    {"workspace_quota_mb", LB_BOX_GIVEN_QUOTA}};
	unsigned given = 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_get(payload, keys[i].key))
			given |= keys[i].bit;
	return given;
}

/* A profile named in the payload, filled in as `lbbox session create --profile` does. */
static void with_profile(const json_t *payload)
{
	json_t *name = json_object_get(payload, "profile");
	struct lb_box_spec spec;
	struct lb_err *err = NULL;

	if (!json_is_string(name))
		return;
	const struct lb_box_profile *p = lb_box_profile_find(json_string_value(name), &err);
	if (p && lb_rpc_spec_parse(payload, &spec, &err) == 0) {
		FUZZ_CHECK(lb_box_profile_fill(p, &spec, given_of(payload), &err) == 0,
			   "profile fill failed: %s", err ? err->msg : "?");
		FUZZ_CHECK(spec.timeout_sec <= p->max_timeout_sec, "timeout above the profile's");
		if (lb_box_spec_validate(&spec, &err) < 0)
			FUZZ_CHECK(err && err->msg, "a refused spec without an error");
		lb_box_spec_free(&spec);
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
