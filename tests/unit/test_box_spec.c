/*
 * Unit tests for the Box request models (spec §1.2-§1.6), the session compatibility rule (§3.3)
 * and the profiles (§2, §5.3). The expected messages of the two case tables were produced by
 * pydantic 2.13.4 validating a Python copy of LangBot's models (SDK 0.5.5) on the same JSON.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "box/box_internal.h"
#include "lbbox/box/spec.h"
#include "lbbox/rpc/rpc.h"

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &je);

	cr_assert_not_null(v, "bad test JSON %s: %s", text, je.text);
	return v;
}

/* NULL when the spec parses, else the BoxValidationError text (malloc'ed). */
static char *spec_error(const char *text)
{
	json_t *v = parse(text);
	struct lb_box_spec s;
	struct lb_err *err = NULL;
	int r = lb_rpc_spec_parse(v, &s, &err);
	char *msg = NULL;

	json_decref(v);
	if (r == 0) {
		cr_assert_null(err);
		lb_box_spec_free(&s);
		return NULL;
	}
	cr_assert_eq(r, -1);
	cr_assert_not_null(err, "%s", text);
	cr_assert_str_eq(err->cls, LB_BOX_EVALIDATION, "%s", text);
	/* on failure the spec is left freed */
	cr_assert_null(s.cmd);
	cr_assert_null(s.session_id);
	msg = strdup(err->msg);
	lb_err_free(&err);
	return msg;
}

static void spec_ok(const char *text, struct lb_box_spec *s)
{
	json_t *v = parse(text);
	struct lb_err *err = NULL;

	cr_assert_eq(lb_rpc_spec_parse(v, s, &err), 0, "%s: %s", text, err ? err->msg : "");
	json_decref(v);
}

static char *proc_error(const char *text)
{
	json_t *v = parse(text);
	struct lb_box_proc_spec p;
	struct lb_err *err = NULL;
	int r = lb_rpc_proc_spec_parse(v, &p, &err);
	char *msg = NULL;

	json_decref(v);
	if (r == 0) {
		lb_box_proc_spec_free(&p);
		return NULL;
	}
	cr_assert_not_null(err);
	cr_assert_str_eq(err->cls, LB_BOX_EVALIDATION);
	cr_assert_null(p.command);
	msg = strdup(err->msg);
	lb_err_free(&err);
	return msg;
}

static const struct {
	const char *json, *error;
} spec_cases[] = {
    {"{\"session_id\": \"s\", \"timeout_sec\": 5}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"5\"}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": \" 7\\n\"}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"1_0\"}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"5.00\"}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"+5\"}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": true}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": false}", "timeout_sec must be greater than 0"},
    {"{\"session_id\": \"s\", \"timeout_sec\": 5.0}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": 5.5}",
     "timeout_sec: Input should be a valid integer, got a number with a fractional part"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"5.5\"}",
     "timeout_sec: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"5.\"}",
     "timeout_sec: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"1e3\"}",
     "timeout_sec: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"0x10\"}",
     "timeout_sec: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"1__0\"}",
     "timeout_sec: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"\"}",
     "timeout_sec: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": null}",
     "timeout_sec: Input should be a valid integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": []}",
     "timeout_sec: Input should be a valid integer"},
    {"{\"session_id\": \"s\", \"timeout_sec\": 1e20}",
     "timeout_sec: Unable to parse input string as an integer, exceeded maximum size"},
    {"{\"session_id\": \"s\", \"timeout_sec\": 0}", "timeout_sec must be greater than 0"},
    {"{\"session_id\": \"s\", \"timeout_sec\": -1}", "timeout_sec must be greater than 0"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"-3\"}", "timeout_sec must be greater than 0"},
    {"{\"session_id\": \"s\", \"memory_mb\": 31}", "memory_mb must be at least 32"},
    {"{\"session_id\": \"s\", \"memory_mb\": \"32\"}", NULL},
    {"{\"session_id\": \"s\", \"memory_mb\": 64.5}",
     "memory_mb: Input should be a valid integer, got a number with a fractional part"},
    {"{\"session_id\": \"s\", \"pids_limit\": 0}", "pids_limit must be at least 1"},
    {"{\"session_id\": \"s\", \"pids_limit\": true}", NULL},
    {"{\"session_id\": \"s\", \"workspace_quota_mb\": -1}",
     "workspace_quota_mb must be greater than or equal to 0"},
    {"{\"session_id\": \"s\", \"workspace_quota_mb\": \"0\"}", NULL},
    /* lbbox's bounds: every value must survive its conversion (bytes, a ns deadline) */
    {"{\"session_id\": \"s\", \"timeout_sec\": 315360000}", NULL},
    {"{\"session_id\": \"s\", \"timeout_sec\": 315360001}",
     "timeout_sec must be at most 315360000"},
    {"{\"session_id\": \"s\", \"timeout_sec\": \"9223372036854775807\"}",
     "timeout_sec must be at most 315360000"},
    {"{\"session_id\": \"s\", \"memory_mb\": 8796093022207}", NULL},
    {"{\"session_id\": \"s\", \"memory_mb\": 8796093022208}",
     "memory_mb must be at most 8796093022207"},
    {"{\"session_id\": \"s\", \"memory_mb\": 4611686018427387904}",
     "memory_mb must be at most 8796093022207"},
    {"{\"session_id\": \"s\", \"pids_limit\": 4194304}", NULL},
    {"{\"session_id\": \"s\", \"pids_limit\": 4194305}", "pids_limit must be at most 4194304"},
    {"{\"session_id\": \"s\", \"workspace_quota_mb\": 8796093022208}",
     "workspace_quota_mb must be at most 8796093022207"},
    /* mount targets lbbox refuses (LangBot only wants them absolute) */
    {"{\"session_id\": \"s\", \"mount_path\": \"/\"}", "mount_path must not be /"},
    {"{\"session_id\": \"s\", \"mount_path\": \"//./\"}", "mount_path must not be /"},
    {"{\"session_id\": \"s\", \"mount_path\": \" /proc \"}",
     "mount_path /proc must not be /proc or under it"},
    {"{\"session_id\": \"s\", \"mount_path\": \"/sys/fs\"}",
     "mount_path /sys/fs must not be /sys or under it"},
    {"{\"session_id\": \"s\", \"mount_path\": \"/./dev//x\"}",
     "mount_path /./dev//x must not be /dev or under it"},
    {"{\"session_id\": \"s\", \"mount_path\": \"/workspace/../etc\"}",
     "mount_path /workspace/../etc must not contain '..'"},
    {"{\"session_id\": \"s\", \"mount_path\": \"/..\"}", "mount_path /.. must not contain '..'"},
    {"{\"session_id\": \"s\", \"mount_path\": \"/devices\"}", NULL},
    {"{\"session_id\": \"s\", \"mount_path\": \"/w/..x/proc\"}", NULL},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\", "
     "\"mount_path\": \"/dev/shm\"}]}",
     "mount_path /dev/shm must not be /dev or under it"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\", "
     "\"mount_path\": \"/\", \"mode\": \"none\"}]}",
     "mount_path must not be /"},
    /* ids reach terminals and logs */
    {"{\"session_id\": \"a\\u001b[31m\"}", "session_id must not contain control characters"},
    {"{\"session_id\": \"a\\u007f\"}", "session_id must not contain control characters"},
    {"{\"session_id\": \" a\\tb \"}", "session_id must not contain control characters"},
    {"{\"session_id\": \"\\u00e9t\\u00e9\"}", NULL},
    {"{\"session_id\": \"s\", \"cpus\": \"0.5\"}", NULL},
    {"{\"session_id\": \"s\", \"cpus\": 2}", NULL},
    {"{\"session_id\": \"s\", \"cpus\": true}", NULL},
    {"{\"session_id\": \"s\", \"cpus\": false}", "cpus must be greater than 0"},
    {"{\"session_id\": \"s\", \"cpus\": \"1_0\"}", NULL},
    {"{\"session_id\": \"s\", \"cpus\": \".5\"}", NULL},
    {"{\"session_id\": \"s\", \"cpus\": \"1e-1\"}", NULL},
    {"{\"session_id\": \"s\", \"cpus\": \"abc\"}",
     "cpus: Input should be a valid number, unable to parse string as a number"},
    {"{\"session_id\": \"s\", \"cpus\": \"0x1\"}",
     "cpus: Input should be a valid number, unable to parse string as a number"},
    {"{\"session_id\": \"s\", \"cpus\": \"1e\"}",
     "cpus: Input should be a valid number, unable to parse string as a number"},
    {"{\"session_id\": \"s\", \"cpus\": null}", "cpus: Input should be a valid number"},
    {"{\"session_id\": \"s\", \"cpus\": 0}", "cpus must be greater than 0"},
    {"{\"session_id\": \"s\", \"cpus\": -0.5}", "cpus must be greater than 0"},
    {"{\"session_id\": \"s\", \"persistent\": \"yes\"}", NULL},
    {"{\"session_id\": \"s\", \"persistent\": \"TRUE\"}", NULL},
    {"{\"session_id\": \"s\", \"persistent\": \"off\"}", NULL},
    {"{\"session_id\": \"s\", \"persistent\": 1}", NULL},
    {"{\"session_id\": \"s\", \"persistent\": 2}",
     "persistent: Input should be a valid boolean, unable to interpret input"},
    {"{\"session_id\": \"s\", \"persistent\": 1.0}", NULL},
    {"{\"session_id\": \"s\", \"persistent\": 0.5}", "persistent: Input should be a valid boolean"},
    {"{\"session_id\": \"s\", \"persistent\": \" yes\"}",
     "persistent: Input should be a valid boolean, unable to interpret input"},
    {"{\"session_id\": \"s\", \"persistent\": null}",
     "persistent: Input should be a valid boolean"},
    {"{\"session_id\": \"s\", \"read_only_rootfs\": \"n\"}", NULL},
    {"{\"session_id\": \"s\", \"read_only_rootfs\": \"maybe\"}",
     "read_only_rootfs: Input should be a valid boolean, unable to interpret input"},
    {"{\"session_id\": \"s\", \"network\": \"on\"}", NULL},
    {"{\"session_id\": \"s\", \"network\": \"OFF\"}", "network: Input should be 'off' or 'on'"},
    {"{\"session_id\": \"s\", \"network\": 1}", "network: Input should be 'off' or 'on'"},
    {"{\"session_id\": \"s\", \"host_path_mode\": \"ro\"}", NULL},
    {"{\"session_id\": \"s\", \"host_path_mode\": \"readonly\"}",
     "host_path_mode: Input should be 'none', 'ro' or 'rw'"},
    {"{\"session_id\": \"s\", \"cmd\": 5}", "cmd: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"cmd\": null}", "cmd: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"image\": 1}", "image: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"image\": \"\"}", NULL},
    {"{\"session_id\": 5}", "session_id: Input should be a valid string"},
    {"{\"session_id\": null}", "session_id: Input should be a valid string"},
    {"{\"session_id\": \"   \"}", "session_id must not be empty"},
    {"{}", "session_id: Field required"},
    {"[]", "Input should be a valid dictionary or instance of BoxSpec"},
    {"\"x\"", "Input should be a valid dictionary or instance of BoxSpec"},
    {"{\"session_id\": \"s\", \"host_path\": 5}", "host_path: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"host_path\": null}", NULL},
    {"{\"session_id\": \"s\", \"host_path\": \"\"}", "host_path must be an absolute host path"},
    {"{\"session_id\": \"s\", \"host_path\": \"relative/dir\"}",
     "host_path must be an absolute host path"},
    {"{\"session_id\": \"s\", \"host_path\": \"C:x\"}", "host_path must be an absolute host path"},
    {"{\"session_id\": \"s\", \"host_path\": \"C:\\\\data\", \"host_path_mode\": \"none\"}", NULL},
    {"{\"session_id\": \"s\", \"host_path\": \"C:/data\", \"host_path_mode\": \"none\"}", NULL},
    {"{\"session_id\": \"s\", \"host_path\": \"\\\\\\\\srv\\\\share\", "
     "\"host_path_mode\": \"none\"}",
     NULL},
    {"{\"session_id\": \"s\", \"host_path\": \"\\\\x\", \"host_path_mode\": \"none\"}", NULL},
    {"{\"session_id\": \"s\", \"mount_path\": \"rel\"}",
     "workdir must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"mount_path\": \"   \"}",
     "mount_path must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"workdir\": \"rel\"}",
     "workdir must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"workdir\": \"   \"}",
     "workdir must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"workdir\": \"\"}",
     "workdir must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"workdir\": null}", "workdir: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"workdir\": 7}", "workdir: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"workdir\": \"\", \"mount_path\": \"rel\"}",
     "workdir must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"env\": {\"A\": \"1\", \"B\": \"2\"}}", NULL},
    {"{\"session_id\": \"s\", \"env\": {\"A\": 1}}", "env.A: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"env\": {\"A\": null}}", "env.A: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"env\": []}", "env: Input should be a valid dictionary"},
    {"{\"session_id\": \"s\", \"env\": null}", "env: Input should be a valid dictionary"},
    {"{\"session_id\": \"s\", \"host_path\": \"/data\", \"workdir\": \"/tmp\"}",
     "workdir must stay under mount_path when host_path is provided"},
    {"{\"session_id\": \"s\", \"host_path\": \"/data\", \"workdir\": \"/workspace2\"}",
     "workdir must stay under mount_path when host_path is provided"},
    {"{\"session_id\": \"s\", \"host_path\": \"/data\", \"workdir\": \"/workspace/sub\"}", NULL},
    {"{\"session_id\": \"s\", \"host_path\": \"/data\", \"workdir\": \"/workspace/../etc\"}", NULL},
    {"{\"session_id\": \"s\", \"host_path\": \"/data\", \"workdir\": \"/tmp\", "
     "\"host_path_mode\": \"none\"}",
     NULL},
    {"{\"session_id\": \"s\", \"host_path\": \"/data\", \"mount_path\": \"/mnt\", "
     "\"workdir\": \"/workspace\"}",
     "workdir must stay under mount_path when host_path is provided"},
    {"{\"session_id\": \"s\", \"host_path\": \"/data\", \"mount_path\": \"/mnt/\"}", NULL},
    {"{\"session_id\": \"s\", \"workdir\": \"/tmp\"}", NULL},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\", "
     "\"mount_path\": \"/workspace/.skills/a\"}]}",
     NULL},
    {"{\"session_id\": \"s\", \"extra_mounts\": {}}", "extra_mounts: Input should be a valid list"},
    {"{\"session_id\": \"s\", \"extra_mounts\": null}",
     "extra_mounts: Input should be a valid list"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [1]}",
     "extra_mounts.0: Input should be a valid dictionary or instance of BoxMountSpec"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{}]}", "extra_mounts.0.host_path: Field required"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\"}]}",
     "extra_mounts.0.mount_path: Field required"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"a\", \"mount_path\": \"/m\"}]}",
     "host_path must be an absolute host path"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\", \"mount_path\": \"m\"}]}",
     "mount_path must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\", "
     "\"mount_path\": \"/m\", \"mode\": \"x\"}]}",
     "extra_mounts.0.mode: Input should be 'none', 'ro' or 'rw'"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\", "
     "\"mount_path\": \"/m\"}, {\"host_path\": 1, \"mount_path\": \"/n\"}]}",
     "extra_mounts.1.host_path: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"a\", "
     "\"mount_path\": 5}], \"memory_mb\": 1}",
     "host_path must be an absolute host path"},
    {"{\"session_id\": \"s\", \"skill_name\": \"  pdf-tools_2 \"}", NULL},
    {"{\"session_id\": \"s\", \"skill_name\": \"   \"}", NULL},
    {"{\"session_id\": \"s\", \"skill_name\": null}", NULL},
    {"{\"session_id\": \"s\", \"skill_name\": 3}", "skill_name: Input should be a valid string"},
    {"{\"session_id\": \"s\", \"skill_name\": \"\xe6\x8a\x80\xe8\x83\xbd\xd9\xa1\"}", NULL},
    {"{\"session_id\": \"s\", \"skill_name\": \"a b\"}",
     "skill_name may only contain letters, digits, '-' and '_'"},
    {"{\"session_id\": \"s\", \"skill_name\": \"a/b\"}",
     "skill_name may only contain letters, digits, '-' and '_'"},
    {"{\"session_id\": \"s\", \"timeout_sec\": 0, \"memory_mb\": 1}",
     "timeout_sec must be greater than 0"},
    {"{\"timeout_sec\": 0}", "timeout_sec must be greater than 0"},
    {"{\"session_id\": \"\", \"timeout_sec\": \"x\"}",
     "timeout_sec: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"session_id\": \"s\", \"memory_mb\": 1, \"pids_limit\": \"x\"}",
     "memory_mb must be at least 32"},
    {"{\"session_id\": \"s\", \"pids_limit\": \"x\", \"memory_mb\": 1}",
     "memory_mb must be at least 32"},
    {"{\"session_id\": \"s\", \"cpus\": 0, \"mount_path\": \"x\"}",
     "workdir must be an absolute path inside the sandbox"},
    {"{\"session_id\": \"s\", \"unknown\": 1, \"another\": {\"x\": []}}", NULL},
};

static const struct {
	const char *json, *error;
} proc_cases[] = {
    {"{\"command\": \"npx\"}", NULL},
    {"{\"command\": \"  npx  \", \"args\": [\"-y\", \"x\"], \"env\": {\"K\": \"V\"}, "
     "\"cwd\": \" /w \", \"process_id\": \" p \", \"memory_mb\": -5}",
     NULL},
    {"{}", "command: Field required"},
    {"{\"command\": \"   \"}", "command must not be empty"},
    {"{\"command\": null}", "command: Input should be a valid string"},
    {"{\"command\": 1}", "command: Input should be a valid string"},
    {"{\"command\": \"x\", \"args\": \"a\"}", "args: Input should be a valid list"},
    {"{\"command\": \"x\", \"args\": [\"a\", 1]}", "args.1: Input should be a valid string"},
    {"{\"command\": \"x\", \"env\": {\"K\": 1}}", "env.K: Input should be a valid string"},
    {"{\"command\": \"x\", \"cwd\": \"rel\"}", "cwd must be an absolute path inside the sandbox"},
    {"{\"command\": \"x\", \"cwd\": null}", "cwd: Input should be a valid string"},
    {"{\"command\": \"x\", \"memory_mb\": \"1.5\"}",
     "memory_mb: Input should be a valid integer, unable to parse string as an integer"},
    {"{\"command\": \"x\", \"memory_mb\": \"64\"}", NULL},
    {"{\"command\": \"x\", \"process_id\": 7}", "process_id: Input should be a valid string"},
    {"{\"process_id\": 7}", "process_id: Input should be a valid string"},
    {"{\"command\": \"x\", \"process_id\": \"p\\u001b]0;x\\u0007\"}",
     "process_id must not contain control characters"},
    {"{\"command\": \"x\", \"process_id\": \"p\\n\"}",
     "process_id must not contain control characters"},
    {"[]", "Input should be a valid dictionary or instance of BoxManagedProcessSpec"},
};

Test(box_spec, pydantic_cases)
{
	for (size_t i = 0; i < sizeof(spec_cases) / sizeof(spec_cases[0]); i++) {
		char *msg = spec_error(spec_cases[i].json);
		if (!spec_cases[i].error)
			cr_expect_null(msg, "%s: unexpected error: %s", spec_cases[i].json, msg);
		else if (!msg)
			cr_expect_fail("%s: accepted, expected: %s", spec_cases[i].json,
				       spec_cases[i].error);
		else
			cr_expect_str_eq(msg, spec_cases[i].error, "%s", spec_cases[i].json);
		free(msg);
	}
}

/* lbbox's own rules judge requests; a session recorded before them is still read (listed,
 * reaped, removed), LangBot's rules only. */
Test(box_spec, records_are_read_by_langbot_rules_only)
{
	static const char *const older[] = {
	    "{\"session_id\": \"a\\u001b[31m\"}",
	    "{\"session_id\": \"s\", \"mount_path\": \"/\"}",
	    "{\"session_id\": \"s\", \"extra_mounts\": [{\"host_path\": \"/a\", \"mount_path\": "
	    "\"/proc\"}]}",
	    "{\"session_id\": \"s\", \"memory_mb\": 4611686018427387904, \"pids_limit\": 99999999}",
	};
	for (size_t i = 0; i < sizeof(older) / sizeof(older[0]); i++) {
		json_t *v = parse(older[i]);
		struct lb_box_spec s;
		struct lb_err *err = NULL;
		cr_assert_eq(lb_box_spec_from_record(v, &s, &err), 0, "%s: %s", older[i],
			     err ? err->msg : "");
		lb_box_spec_free(&s);
		char *msg = spec_error(older[i]);
		cr_assert_not_null(msg, "%s: accepted as a request", older[i]);
		free(msg);
		json_decref(v);
	}
	char *msg = spec_error("{\"session_id\": \"s\", \"memory_mb\": 16, \"mount_path\": \"/\"}");
	cr_assert_str_eq(msg, "mount_path must not be /", "lbbox's rule in its field's place");
	free(msg);
}

Test(box_spec, proc_pydantic_cases)
{
	for (size_t i = 0; i < sizeof(proc_cases) / sizeof(proc_cases[0]); i++) {
		char *msg = proc_error(proc_cases[i].json);
		if (!proc_cases[i].error)
			cr_expect_null(msg, "%s: unexpected error: %s", proc_cases[i].json, msg);
		else if (!msg)
			cr_expect_fail("%s: accepted, expected: %s", proc_cases[i].json,
				       proc_cases[i].error);
		else
			cr_expect_str_eq(msg, proc_cases[i].error, "%s", proc_cases[i].json);
		free(msg);
	}
}

static void assert_defaults(const struct lb_box_spec *s)
{
	cr_assert_str_eq(s->cmd, "");
	cr_assert_str_eq(s->workdir, "/workspace");
	cr_assert_eq(s->timeout_sec, 30);
	cr_assert_eq(s->network, LB_BOX_NET_OFF);
	cr_assert_not_null(s->env);
	cr_assert_null(s->env[0]);
	cr_assert_str_eq(s->image, "rockchin/langbot-sandbox:latest");
	cr_assert_null(s->host_path);
	cr_assert_eq(s->host_path_mode, LB_BOX_MOUNT_RW);
	cr_assert_str_eq(s->mount_path, "/workspace");
	cr_assert_eq(s->n_extra_mounts, 0);
	cr_assert_null(s->skill_name);
	cr_assert_not(s->persistent);
	cr_assert_float_eq(s->cpus, 1.0, 1e-12);
	cr_assert_eq(s->memory_mb, 512);
	cr_assert_eq(s->pids_limit, 128);
	cr_assert(s->read_only_rootfs);
	cr_assert_eq(s->workspace_quota_mb, 0);
}

Test(box_spec, defaults)
{
	struct lb_box_spec s;

	lb_box_spec_init(&s);
	assert_defaults(&s);
	cr_assert_null(s.session_id);
	lb_box_spec_free(&s);

	spec_ok("{\"session_id\": \"  person_u1 \"}", &s);
	assert_defaults(&s);
	cr_assert_str_eq(s.session_id, "person_u1");
	lb_box_spec_free(&s);
	cr_assert_null(s.workdir);
}

/* The box_exec body LangBot 4.10.8 sends (spec Appendix A). */
Test(box_spec, wire_sample)
{
	struct lb_box_spec s;

	spec_ok(
	    "{\"cmd\": \"echo hi\", \"workdir\": \"/workspace\", \"timeout_sec\": 30, "
	    "\"network\": \"off\", \"session_id\": \"person_u1\", \"env\": {}, \"image\": "
	    "\"rockchin/langbot-sandbox:latest\", \"host_path\": null, \"host_path_mode\": "
	    "\"rw\", \"mount_path\": \"/workspace\", \"extra_mounts\": [], \"skill_name\": null, "
	    "\"persistent\": false, \"cpus\": 1.0, \"memory_mb\": 512, \"pids_limit\": 128, "
	    "\"read_only_rootfs\": true, \"workspace_quota_mb\": 0}",
	    &s);
	cr_assert_str_eq(s.cmd, "echo hi");
	cr_assert_str_eq(s.session_id, "person_u1");
	lb_box_spec_free(&s);
}

Test(box_spec, lax_values)
{
	struct lb_box_spec s;

	spec_ok("{\"session_id\": \"s\", \"timeout_sec\": \"45\", \"memory_mb\": 64.0, "
		"\"pids_limit\": true, \"cpus\": \"0.5\", \"persistent\": \"YES\", "
		"\"read_only_rootfs\": 0, \"workspace_quota_mb\": \" 1_0 \", \"network\": \"on\", "
		"\"host_path_mode\": \"none\"}",
		&s);
	cr_assert_eq(s.timeout_sec, 45);
	cr_assert_eq(s.memory_mb, 64);
	cr_assert_eq(s.pids_limit, 1);
	cr_assert_float_eq(s.cpus, 0.5, 1e-12);
	cr_assert(s.persistent);
	cr_assert_not(s.read_only_rootfs);
	cr_assert_eq(s.workspace_quota_mb, 10);
	cr_assert_eq(s.network, LB_BOX_NET_ON);
	cr_assert_eq(s.host_path_mode, LB_BOX_MOUNT_NONE);
	lb_box_spec_free(&s);

	/* (lbbox's own bound, not pydantic's, stops the largest ints: see spec_cases) */
	spec_ok("{\"session_id\": \"s\", \"timeout_sec\": \"-0.00\", \"cpus\": \"1_0e-1\", "
		"\"timeout_sec\": \"315_360_000\"}",
		&s);
	cr_assert_eq(s.timeout_sec, 315360000);
	cr_assert_float_eq(s.cpus, 1.0, 1e-12);
	lb_box_spec_free(&s);
}

Test(box_spec, strings_stripped_where_langbot_strips)
{
	struct lb_box_spec s;

	spec_ok(
	    "{\"session_id\": \"\\u3000s\\u00a0\", \"cmd\": \"\\n ls -l \\t\", "
	    "\"workdir\": \" /workspace/a \", \"image\": \" img \", \"host_path\": \" /data\\n\", "
	    "\"mount_path\": \"\\u2003/workspace \", \"skill_name\": \" pdf \"}",
	    &s);
	cr_assert_str_eq(s.session_id, "s");
	cr_assert_str_eq(s.cmd, "ls -l");
	cr_assert_str_eq(s.workdir, "/workspace/a");
	cr_assert_str_eq(s.image, " img "); /* image is not stripped */
	cr_assert_str_eq(s.host_path, "/data");
	cr_assert_str_eq(s.mount_path, "/workspace");
	cr_assert_str_eq(s.skill_name, "pdf");
	lb_box_spec_free(&s);

	/* U+200B is no Python whitespace: it stays */
	spec_ok("{\"session_id\": \"\\u200bs\"}", &s);
	cr_assert_str_eq(s.session_id, "\xe2\x80\x8bs");
	lb_box_spec_free(&s);

	spec_ok("{\"session_id\": \"s\", \"skill_name\": \"   \"}", &s);
	cr_assert_null(s.skill_name);
	lb_box_spec_free(&s);
}

Test(box_spec, workdir_follows_mount_path)
{
	const char *unset[] = {"", "\"workdir\": null, ", "\"workdir\": \"\", "};
	struct lb_box_spec s;
	char text[256];

	for (size_t i = 0; i < 3; i++) {
		snprintf(text, sizeof(text),
			 "{%s\"session_id\": \"s\", \"mount_path\": \" /mnt/w \", \"host_path\": "
			 "\"/data\"}",
			 unset[i]);
		spec_ok(text, &s);
		cr_assert_str_eq(s.workdir, "/mnt/w", "%s", text);
		cr_assert_str_eq(s.mount_path, "/mnt/w");
		lb_box_spec_free(&s);
	}
	/* a blank mount_path does not move workdir; it then fails on its own */
	char *m = spec_error("{\"session_id\": \"s\", \"mount_path\": \" \"}");
	cr_assert_str_eq(m, "mount_path must be an absolute path inside the sandbox");
	free(m);
	/* an explicit workdir wins */
	spec_ok("{\"session_id\": \"s\", \"mount_path\": \"/mnt\", \"workdir\": \"/tmp\"}", &s);
	cr_assert_str_eq(s.workdir, "/tmp");
	lb_box_spec_free(&s);
}

Test(box_spec, env_and_extra_mounts)
{
	struct lb_box_spec s;

	spec_ok("{\"session_id\": \"s\", \"env\": {\"Z\": \"1\", \"A\": \"x=y\", \"M\": \"\"}, "
		"\"extra_mounts\": [{\"host_path\": \" /skills/a \", \"mount_path\": "
		"\"/workspace/.skills/a\", \"mode\": \"ro\"}, {\"host_path\": \"C:\\\\s\", "
		"\"mount_path\": \"/m\", \"unknown\": 1}]}",
		&s);
	cr_assert_str_eq(s.env[0], "Z=1"); /* the object's order, not sorted */
	cr_assert_str_eq(s.env[1], "A=x=y");
	cr_assert_str_eq(s.env[2], "M=");
	cr_assert_null(s.env[3]);
	cr_assert_eq(s.n_extra_mounts, 2);
	cr_assert_str_eq(s.extra_mounts[0].host_path, "/skills/a");
	cr_assert_str_eq(s.extra_mounts[0].mount_path, "/workspace/.skills/a");
	cr_assert_eq(s.extra_mounts[0].mode, LB_BOX_MOUNT_RO);
	cr_assert_str_eq(s.extra_mounts[1].host_path, "C:\\s");
	cr_assert_eq(s.extra_mounts[1].mode, LB_BOX_MOUNT_RW);
	lb_box_spec_free(&s);
}

/* skill_name: at most 64 characters (code points, not bytes), Unicode letters allowed. */
Test(box_spec, skill_name_length)
{
	char text[512], name[200];
	char *m;

	memset(name, 'a', 64);
	name[64] = '\0';
	snprintf(text, sizeof(text), "{\"session_id\": \"s\", \"skill_name\": \"%s\"}", name);
	m = spec_error(text);
	cr_assert_null(m, "%s", m);
	strcat(name, "a");
	snprintf(text, sizeof(text), "{\"session_id\": \"s\", \"skill_name\": \"%s\"}", name);
	m = spec_error(text);
	cr_assert_str_eq(m, "skill_name must be at most 64 characters");
	free(m);
	for (int i = 0; i < 64; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2); /* 64 x "é": 128 bytes */
	name[128] = '\0';
	snprintf(text, sizeof(text), "{\"session_id\": \"s\", \"skill_name\": \"%s\"}", name);
	m = spec_error(text);
	cr_assert_null(m, "%s", m);
	/* a combining accent is no letter to Python (category Mn) */
	m = spec_error("{\"session_id\": \"s\", \"skill_name\": \"e\\u0301\"}");
	cr_assert_str_eq(m, "skill_name may only contain letters, digits, '-' and '_'");
	free(m);
}

/* Where lbbox knowingly differs from pydantic (see box_spec_coerce.c). */
Test(box_spec, deviations)
{
	char *m;

	/* pydantic accepts "nan" / "inf" for cpus; a JSON peer could never get them back */
	m = spec_error("{\"session_id\": \"s\", \"cpus\": \"nan\"}");
	cr_assert_str_eq(m, "cpus: Input should be a finite number");
	free(m);
	m = spec_error("{\"session_id\": \"s\", \"cpus\": \"-Infinity\"}");
	cr_assert_str_eq(m, "cpus: Input should be a finite number");
	free(m);
	/* Python ints are unbounded; ours stop at int64 */
	m = spec_error("{\"session_id\": \"s\", \"memory_mb\": \"99999999999999999999\"}");
	cr_assert_str_eq(m, "memory_mb: Unable to parse input string as an integer, exceeded "
			    "maximum size");
	free(m);
}

Test(box_spec, validate_filled_struct)
{
	struct lb_box_spec s;
	struct lb_err *err = NULL;

	lb_box_spec_init(&s);
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "session_id: Field required");
	lb_err_free(&err);

	s.session_id = strdup(" id ");
	free(s.workdir);
	s.workdir = NULL;
	free(s.mount_path);
	s.mount_path = strdup("/mnt");
	s.host_path = strdup("/data");
	cr_assert_eq(lb_box_spec_validate(&s, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(s.session_id, "id");
	cr_assert_str_eq(s.workdir, "/mnt"); /* the before-validator */

	s.memory_mb = 16;
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "memory_mb must be at least 32");
	cr_assert_str_eq(err->cls, LB_BOX_EVALIDATION);
	lb_err_free(&err);
	s.memory_mb = 32;
	s.timeout_sec = 0;
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "timeout_sec must be greater than 0");
	lb_err_free(&err);
	s.timeout_sec = 1;
	s.pids_limit = 0;
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "pids_limit must be at least 1");
	lb_err_free(&err);
	s.pids_limit = 1;
	s.cpus = 0;
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "cpus must be greater than 0");
	lb_err_free(&err);
	s.cpus = 0.25;
	s.workspace_quota_mb = -1;
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "workspace_quota_mb must be greater than or equal to 0");
	lb_err_free(&err);
	s.workspace_quota_mb = 0;
	free(s.workdir);
	s.workdir = strdup("/elsewhere");
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "workdir must stay under mount_path when host_path is provided");
	lb_err_free(&err);
	s.host_path_mode = LB_BOX_MOUNT_NONE;
	cr_assert_eq(lb_box_spec_validate(&s, &err), 0);
	free(s.host_path);
	s.host_path = strdup("data");
	cr_assert_eq(lb_box_spec_validate(&s, &err), -1);
	cr_assert_str_eq(err->msg, "host_path must be an absolute host path");
	lb_err_free(&err);
	lb_box_spec_free(&s);
}

Test(box_spec, proc_values)
{
	json_t *v = parse("{\"command\": \"  npx  \", \"args\": [\"-y\", \" x \"], \"env\": "
			  "{\"K\": \"V\"}, \"cwd\": \" /w \", \"process_id\": \" p \", "
			  "\"memory_mb\": -5}");
	struct lb_box_proc_spec p;
	struct lb_err *err = NULL;

	cr_assert_eq(lb_rpc_proc_spec_parse(v, &p, &err), 0);
	cr_assert_str_eq(p.command, "npx");
	cr_assert_str_eq(p.args[0], "-y");
	cr_assert_str_eq(p.args[1], " x ");
	cr_assert_null(p.args[2]);
	cr_assert_str_eq(p.env[0], "K=V");
	cr_assert_str_eq(p.cwd, "/w");
	cr_assert_str_eq(p.process_id, " p "); /* no validator on process_id */
	cr_assert_eq(p.memory_mb, -5);	       /* nor on memory_mb */
	lb_box_proc_spec_free(&p);
	json_decref(v);

	v = parse("{\"command\": \"sh\"}");
	cr_assert_eq(lb_rpc_proc_spec_parse(v, &p, &err), 0);
	cr_assert_str_eq(p.process_id, "default");
	cr_assert_str_eq(p.cwd, "/workspace");
	cr_assert_null(p.args[0]);
	cr_assert_null(p.env[0]);
	cr_assert_eq(p.memory_mb, 0);
	lb_box_proc_spec_free(&p);
	json_decref(v);
}

static void base_spec(struct lb_box_spec *s)
{
	spec_ok("{\"session_id\": \"s\", \"host_path\": \"/data/ws\"}", s);
}

static void expect_conflict(struct lb_box_spec *stored, struct lb_box_spec *req, const char *msg)
{
	struct lb_err *err = NULL;

	cr_assert_eq(lb_box_spec_check_compatible(stored, req, "ws-1-g1-s", &err), -1, "%s", msg);
	cr_assert_str_eq(err->cls, LB_BOX_ECONFLICT);
	cr_assert_str_eq(err->msg, msg);
	lb_err_free(&err);
}

Test(box_spec, compatibility_messages)
{
	struct lb_box_spec a, b;
	struct lb_err *err = NULL;

	base_spec(&a);
	base_spec(&b);
	cr_assert_eq(lb_box_spec_check_compatible(&a, &b, "x", &err), 0);
	/* per-exec fields never conflict */
	free(b.cmd);
	b.cmd = strdup("ls");
	b.timeout_sec = 99;
	free(b.workdir);
	b.workdir = strdup("/workspace/sub");
	b.skill_name = strdup("k");
	cr_assert_eq(lb_box_spec_check_compatible(&a, &b, "x", &err), 0);

	b.network = LB_BOX_NET_ON;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with network=off");
	b.network = LB_BOX_NET_OFF;
	free(b.image);
	b.image = strdup("python:3.11");
	expect_conflict(&a, &b,
			"Box session ws-1-g1-s already exists with "
			"image=rockchin/langbot-sandbox:latest");
	free(b.image);
	b.image = strdup(a.image);
	free(b.host_path);
	b.host_path = NULL;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with host_path=/data/ws");
	expect_conflict(&b, &a, "Box session ws-1-g1-s already exists with host_path=None");
	b.host_path = strdup("/data/ws/"); /* strings, not realpaths */
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with host_path=/data/ws");
	free(b.host_path);
	b.host_path = strdup("/data/ws");
	b.host_path_mode = LB_BOX_MOUNT_RO;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with host_path_mode=rw");
	expect_conflict(&b, &a, "Box session ws-1-g1-s already exists with host_path_mode=ro");
	b.host_path_mode = LB_BOX_MOUNT_RW;
	free(b.mount_path);
	b.mount_path = strdup("/mnt");
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with mount_path=/workspace");
	free(b.mount_path);
	b.mount_path = strdup("/workspace");
	b.persistent = true;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with persistent=False");
	expect_conflict(&b, &a, "Box session ws-1-g1-s already exists with persistent=True");
	b.persistent = false;
	b.memory_mb = 1024;
	b.pids_limit = 5; /* memory_mb comes first */
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with memory_mb=512");
	b.memory_mb = 512;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with pids_limit=128");
	b.pids_limit = 128;
	b.read_only_rootfs = false;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with read_only_rootfs=True");
	b.read_only_rootfs = true;
	b.workspace_quota_mb = 100;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with workspace_quota_mb=0");
	expect_conflict(&b, &a, "Box session ws-1-g1-s already exists with workspace_quota_mb=100");
	b.workspace_quota_mb = 0;
	/* several differences: LangBot's order decides (network before image before cpus) */
	b.cpus = 2;
	b.network = LB_BOX_NET_ON;
	expect_conflict(&a, &b, "Box session ws-1-g1-s already exists with network=off");
	lb_box_spec_free(&a);
	lb_box_spec_free(&b);
}

/* cpus is shown with Python's repr(float). */
Test(box_spec, compatibility_float_repr)
{
	static const struct {
		double v;
		const char *repr;
	} cases[] = {
	    {1.0, "1.0"},
	    {0.5, "0.5"},
	    {2.0, "2.0"},
	    {0.1, "0.1"},
	    {1e-05, "1e-05"},
	    {0.0001, "0.0001"},
	    {1e+16, "1e+16"},
	    {1000000000000000.0, "1000000000000000.0"},
	    {1234.5, "1234.5"},
	    {1.2345678901234568e+17, "1.2345678901234568e+17"},
	    {0.30000000000000004, "0.30000000000000004"},
	    {1.5e-07, "1.5e-07"},
	    {100.0, "100.0"},
	    {3e-05, "3e-05"},
	    {2.5e+16, "2.5e+16"},
	    {0.25, "0.25"},
	    {12.0, "12.0"},
	    {9999999999999998.0, "9999999999999998.0"},
	};
	struct lb_box_spec a, b;
	char want[128];

	base_spec(&a);
	base_spec(&b);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		a.cpus = cases[i].v;
		b.cpus = cases[i].v * 3 + 1;
		snprintf(want, sizeof(want), "Box session ws-1-g1-s already exists with cpus=%s",
			 cases[i].repr);
		expect_conflict(&a, &b, want);
	}
	lb_box_spec_free(&a);
	lb_box_spec_free(&b);
}

static void set_mounts(struct lb_box_spec *s, const char *json_mounts)
{
	char text[512];

	lb_box_spec_free(s);
	snprintf(text, sizeof(text), "{\"session_id\": \"s\", \"extra_mounts\": %s}", json_mounts);
	spec_ok(text, s);
}

Test(box_spec, extra_mounts_signature)
{
	struct lb_box_spec a, b;

	lb_box_spec_init(&a);
	lb_box_spec_init(&b);
	cr_assert(lb_box_extra_mounts_equal(&a, &b));
	set_mounts(&a, "[{\"host_path\": \"/a\", \"mount_path\": \"/m/a\"}, {\"host_path\": "
		       "\"/b\", \"mount_path\": \"/m/b\", \"mode\": \"ro\"}]");
	cr_assert_not(lb_box_extra_mounts_equal(&a, &b));
	/* order and duplicates do not matter; mode none mounts are not mounted at all */
	set_mounts(&b, "[{\"host_path\": \"/b\", \"mount_path\": \"/m/b\", \"mode\": \"ro\"}, "
		       "{\"host_path\": \"/a\", \"mount_path\": \"/m/a\", \"mode\": \"rw\"}, "
		       "{\"host_path\": \"/a\", \"mount_path\": \"/m/a\"}, {\"host_path\": \"/c\", "
		       "\"mount_path\": \"/m/c\", \"mode\": \"none\"}]");
	cr_assert(lb_box_extra_mounts_equal(&a, &b));
	cr_assert(lb_box_extra_mounts_equal(&b, &a));
	/* the mode is part of the signature */
	set_mounts(&b, "[{\"host_path\": \"/b\", \"mount_path\": \"/m/b\", \"mode\": \"rw\"}, "
		       "{\"host_path\": \"/a\", \"mount_path\": \"/m/a\"}]");
	cr_assert_not(lb_box_extra_mounts_equal(&a, &b));
	set_mounts(&b, "[{\"host_path\": \"/b\", \"mount_path\": \"/m/B\", \"mode\": \"ro\"}, "
		       "{\"host_path\": \"/a\", \"mount_path\": \"/m/a\"}]");
	cr_assert_not(lb_box_extra_mounts_equal(&a, &b));
	set_mounts(&a, "[{\"host_path\": \"/c\", \"mount_path\": \"/m/c\", \"mode\": \"none\"}]");
	set_mounts(&b, "[]");
	cr_assert(lb_box_extra_mounts_equal(&a, &b));
	lb_box_spec_free(&a);
	lb_box_spec_free(&b);
}

Test(box_spec, session_json)
{
	struct lb_box_spec s, back;

	spec_ok("{\"session_id\": \"s\", \"network\": \"on\", \"cpus\": 0.5, \"persistent\": "
		"true, \"memory_mb\": 1536, \"extra_mounts\": [{\"host_path\": \"/k\", "
		"\"mount_path\": \"/workspace/.skills/k\", \"mode\": \"ro\"}]}",
		&s);
	json_t *j = lb_box_spec_session_json(&s);
	char *text = json_dumps(j, 0);
	cr_assert_str_eq(
	    text, "{\"image\": \"rockchin/langbot-sandbox:latest\", \"network\": \"on\", "
		  "\"host_path\": null, \"host_path_mode\": \"rw\", \"mount_path\": "
		  "\"/workspace\", \"persistent\": true, \"cpus\": 0.5, \"memory_mb\": 1536, "
		  "\"pids_limit\": 128, \"read_only_rootfs\": true, \"workspace_quota_mb\": "
		  "0, \"extra_mounts\": [{\"host_path\": \"/k\", \"mount_path\": "
		  "\"/workspace/.skills/k\", \"mode\": \"ro\"}]}");
	free(text);
	/* and back: with its session_id it parses to a spec compatible with the original */
	json_object_set_new(j, "session_id", json_string("s"));
	struct lb_err *err = NULL;
	cr_assert_eq(lb_rpc_spec_parse(j, &back, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(lb_box_spec_check_compatible(&s, &back, "s", &err), 0);
	cr_assert(lb_box_extra_mounts_equal(&s, &back));
	json_decref(j);
	lb_box_spec_free(&back);
	lb_box_spec_free(&s);
}

Test(box_spec, names)
{
	cr_assert_str_eq(lb_box_net_name(LB_BOX_NET_OFF), "off");
	cr_assert_str_eq(lb_box_net_name(LB_BOX_NET_ON), "on");
	cr_assert_str_eq(lb_box_mount_mode_name(LB_BOX_MOUNT_NONE), "none");
	cr_assert_str_eq(lb_box_mount_mode_name(LB_BOX_MOUNT_RO), "ro");
	cr_assert_str_eq(lb_box_mount_mode_name(LB_BOX_MOUNT_RW), "rw");
}

Test(box_profile, builtins)
{
	struct lb_err *err = NULL;
	const struct lb_box_profile *p;

	p = lb_box_profile_find("default", &err);
	cr_assert_not_null(p);
	cr_assert_eq(p->network, LB_BOX_NET_OFF);
	cr_assert_eq(p->host_path_mode, LB_BOX_MOUNT_RW);
	cr_assert_float_eq(p->cpus, 1.0, 1e-12);
	cr_assert_eq(p->memory_mb, 512);
	cr_assert_eq(p->pids_limit, 128);
	cr_assert(p->read_only_rootfs);
	cr_assert_eq(p->max_timeout_sec, 120);
	cr_assert_null(p->locked[0]);

	p = lb_box_profile_find("offline_readonly", &err);
	cr_assert_eq(p->network, LB_BOX_NET_OFF);
	cr_assert_eq(p->host_path_mode, LB_BOX_MOUNT_RO);
	cr_assert_float_eq(p->cpus, 0.5, 1e-12);
	cr_assert_eq(p->memory_mb, 256);
	cr_assert_eq(p->pids_limit, 64);
	cr_assert_eq(p->max_timeout_sec, 60);
	cr_assert_str_eq(p->locked[0], "network");
	cr_assert_str_eq(p->locked[1], "host_path_mode");
	cr_assert_str_eq(p->locked[2], "read_only_rootfs");
	cr_assert_null(p->locked[3]);

	p = lb_box_profile_find("network_basic", &err);
	cr_assert_eq(p->network, LB_BOX_NET_ON);
	cr_assert_eq(p->memory_mb, 512);
	cr_assert_eq(p->max_timeout_sec, 120);

	p = lb_box_profile_find("network_extended", &err);
	cr_assert_eq(p->network, LB_BOX_NET_ON);
	cr_assert_float_eq(p->cpus, 2.0, 1e-12);
	cr_assert_eq(p->memory_mb, 1024);
	cr_assert_eq(p->pids_limit, 256);
	cr_assert_not(p->read_only_rootfs);
	cr_assert_eq(p->max_timeout_sec, 300);

	/* all four share the image, the timeout and the quota */
	for (const char *const *n =
		 (const char *const[]){"default", "offline_readonly", "network_basic",
				       "network_extended", NULL};
	     *n; n++) {
		p = lb_box_profile_find(*n, &err);
		cr_assert_str_eq(p->name, *n);
		cr_assert_str_eq(p->image, "rockchin/langbot-sandbox:latest");
		cr_assert_eq(p->timeout_sec, 30);
		cr_assert_eq(p->workspace_quota_mb, 0);
	}
}

Test(box_profile, find_by_config_value)
{
	struct lb_err *err = NULL;

	/* LangBot reads str(profile).strip() or "default" */
	cr_assert_str_eq(lb_box_profile_find(" network_basic ", &err)->name, "network_basic");
	cr_assert_str_eq(lb_box_profile_find("", &err)->name, "default");
	cr_assert_str_eq(lb_box_profile_find(NULL, &err)->name, "default");
	cr_assert_null(err);
	cr_assert_null(lb_box_profile_find(" Default", &err));
	cr_assert_str_eq(err->cls, LB_BOX_EVALIDATION);
	cr_assert_str_eq(err->msg, "unknown box profile 'Default', available profiles: default, "
				   "network_basic, network_extended, offline_readonly");
	lb_err_free(&err);
}

/* A spec from flags (the CLI's way): given marks what the caller set. */
static struct lb_box_spec filled(const char *profile, unsigned given,
				 void (*set)(struct lb_box_spec *))
{
	struct lb_err *err = NULL;
	struct lb_box_spec s;
	lb_box_spec_init(&s);
	if (set)
		set(&s);
	cr_assert_eq(lb_box_profile_fill(lb_box_profile_find(profile, &err), &s, given, &err), 0);
	return s;
}

Test(box_profile, fill_sets_what_was_not_given)
{
	struct lb_box_spec s = filled("network_extended", 0, NULL);
	cr_assert_eq(s.cpus, 2.0);
	cr_assert_eq(s.memory_mb, 1024);
	cr_assert_eq(s.pids_limit, 256);
	cr_assert_eq(s.network, LB_BOX_NET_ON);
	cr_assert_eq(s.read_only_rootfs, false);
	cr_assert_eq(s.timeout_sec, 30);
	cr_assert_str_eq(s.image, "rockchin/langbot-sandbox:latest");
	lb_box_spec_free(&s);
}

static void set_many(struct lb_box_spec *s)
{
	s->network = LB_BOX_NET_ON;
	s->cpus = 4;
	s->memory_mb = 2048;
	s->pids_limit = 7;
	s->read_only_rootfs = false;
	s->host_path_mode = LB_BOX_MOUNT_RW;
	s->workspace_quota_mb = 5;
	s->timeout_sec = 10;
}

#define GIVEN_ALL                                                                                  \
	(LB_BOX_GIVEN_NETWORK | LB_BOX_GIVEN_CPUS | LB_BOX_GIVEN_MEMORY | LB_BOX_GIVEN_PIDS |      \
	 LB_BOX_GIVEN_READ_ONLY | LB_BOX_GIVEN_HOST_PATH_MODE | LB_BOX_GIVEN_QUOTA |               \
	 LB_BOX_GIVEN_TIMEOUT)

Test(box_profile, fill_keeps_what_was_given)
{
	struct lb_box_spec s = filled("default", GIVEN_ALL, set_many);
	cr_assert_eq(s.network, LB_BOX_NET_ON);
	cr_assert_eq(s.cpus, 4);
	cr_assert_eq(s.memory_mb, 2048);
	cr_assert_eq(s.pids_limit, 7);
	cr_assert_eq(s.read_only_rootfs, false);
	cr_assert_eq(s.workspace_quota_mb, 5);
	cr_assert_eq(s.timeout_sec, 10);
	lb_box_spec_free(&s);
}

Test(box_profile, fill_forces_locked_fields)
{
	/* offline_readonly locks network, host_path_mode and read_only_rootfs; not cpus / memory */
	struct lb_box_spec s = filled("offline_readonly", GIVEN_ALL, set_many);
	cr_assert_eq(s.network, LB_BOX_NET_OFF);
	cr_assert_eq(s.host_path_mode, LB_BOX_MOUNT_RO);
	cr_assert_eq(s.read_only_rootfs, true);
	cr_assert_eq(s.cpus, 4);
	cr_assert_eq(s.memory_mb, 2048);
	lb_box_spec_free(&s);
}

Test(box_profile, timeout_defaults_and_clamps)
{
	struct lb_err *err = NULL;
	const struct lb_box_profile *def = lb_box_profile_find("default", &err);
	const struct lb_box_profile *off = lb_box_profile_find("offline_readonly", &err);
	const struct lb_box_profile *ext = lb_box_profile_find("network_extended", &err);
	cr_assert_eq(lb_box_profile_timeout(def, true, 500), 120);
	cr_assert_eq(lb_box_profile_timeout(def, true, 120), 120);
	cr_assert_eq(lb_box_profile_timeout(def, true, 119), 119);
	cr_assert_eq(lb_box_profile_timeout(off, true, 61), 60);
	cr_assert_eq(lb_box_profile_timeout(ext, true, 301), 300);
	cr_assert_eq(lb_box_profile_timeout(ext, true, 299), 299);
	cr_assert_eq(lb_box_profile_timeout(def, false, 500), 30, "not given: the profile's");
	struct lb_box_spec s = filled("network_extended", LB_BOX_GIVEN_TIMEOUT, set_many);
	cr_assert_eq(s.timeout_sec, 10);
	lb_box_spec_free(&s);
}
