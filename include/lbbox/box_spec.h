/*
 * LangBot Box's request models (spec §1): BoxSpec, BoxMountSpec, BoxManagedProcessSpec, parsed
 * from JSON with pydantic's lax rules, validated with LangBot's exact messages (class
 * BoxValidationError), plus the session compatibility rule (§3.3) and the profiles (§2, §5.3).
 */
#ifndef LBBOX_BOX_SPEC_H
#define LBBOX_BOX_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/err.h"

#define LB_BOX_DEFAULT_IMAGE	  "rockchin/langbot-sandbox:latest"
#define LB_BOX_DEFAULT_MOUNT_PATH "/workspace"

/* lbbox's upper bounds (LangBot has none; Python ints do not overflow): each value must survive
 * its conversion -- MiB to bytes in 64 bits, seconds to a nanosecond deadline -- and the pids
 * cgroup takes no more than the kernel's PID_MAX_LIMIT. */
#define LB_BOX_MAX_MB	       (INT64_MAX >> 20)
#define LB_BOX_MAX_PIDS	       4194304
#define LB_BOX_MAX_TIMEOUT_SEC (10LL * 365 * 24 * 3600)

/* Box error classes (spec §6.5), for lb_err_box(). */
#define LB_BOX_EVALIDATION  "BoxValidationError"
#define LB_BOX_ENOTFOUND    "BoxSessionNotFoundError"
#define LB_BOX_ECONFLICT    "BoxSessionConflictError"
#define LB_BOX_ECAPACITY    "BoxCapacityExceededError"
#define LB_BOX_EMPNOTFOUND  "BoxManagedProcessNotFoundError"
#define LB_BOX_EMPCONFLICT  "BoxManagedProcessConflictError"
#define LB_BOX_EUNAVAILABLE "BoxBackendUnavailableError"
#define LB_BOX_ERUNTIME	    "BoxRuntimeUnavailableError"
#define LB_BOX_EADMISSION   "BoxAdmissionError"
#define LB_BOX_EBOX	    "BoxError"

enum lb_box_net { LB_BOX_NET_OFF = 0, LB_BOX_NET_ON };
enum lb_box_mount_mode { LB_BOX_MOUNT_NONE = 0, LB_BOX_MOUNT_RO, LB_BOX_MOUNT_RW };

struct lb_box_mount {
	char *host_path;
	char *mount_path;
	enum lb_box_mount_mode mode; /* default rw */
};

/* BoxSpec (§1.3). Strings are malloc'ed; NULL host_path / skill_name = JSON null. */
struct lb_box_spec {
	char *cmd;	     /* "" allowed here; exec rejects empty */
	char *workdir;	     /* default "/workspace", or mount_path when absent/null/"" */
	int64_t timeout_sec; /* default 30, > 0 */
	enum lb_box_net network;
	char *session_id; /* required, stripped, non-empty */
	char **env;	  /* NULL-terminated "KEY=VALUE", keys in the JSON object's order */
	char *image;	  /* default LB_BOX_DEFAULT_IMAGE */
	char *host_path;
	enum lb_box_mount_mode host_path_mode; /* default rw */
	char *mount_path;		       /* default "/workspace" */
	struct lb_box_mount *extra_mounts;
	size_t n_extra_mounts;
	char *skill_name;
	bool persistent;	    /* default false */
	double cpus;		    /* default 1.0, > 0 */
	int64_t memory_mb;	    /* default 512, >= 32 */
	int64_t pids_limit;	    /* default 128, >= 1 */
	bool read_only_rootfs;	    /* default true */
	int64_t workspace_quota_mb; /* default 0, >= 0 */
};

/* BoxManagedProcessSpec (§1.6). */
struct lb_box_proc_spec {
	char *process_id;  /* default "default" */
	char *command;	   /* required, stripped, non-empty */
	char **args;	   /* NULL-terminated */
	char **env;	   /* NULL-terminated "KEY=VALUE" */
	char *cwd;	   /* default "/workspace", must start with "/" */
	int64_t memory_mb; /* default 0 = the session's */
};

/* Fills *out with every default (session_id NULL). */
void lb_box_spec_init(struct lb_box_spec *out);
/* Parses a BoxSpec object (unknown keys ignored); on failure *err has class BoxValidationError
 * with pydantic-equivalent text, and *out is left freed. */
int lb_box_spec_from_json(const json_t *obj, struct lb_box_spec *out, struct lb_err **err);
/* Re-runs the validators on a filled spec (used after CLI flags set its fields). */
int lb_box_spec_validate(struct lb_box_spec *spec, struct lb_err **err);
void lb_box_spec_free(struct lb_box_spec *spec);

/* A session or managed-process id (field names it) with a control character (below 0x20, or
 * 0x7f) is refused: BoxValidationError. Such ids reach terminals and logs. */
int lb_box_check_id(const char *id, const char *field, struct lb_err **err);

void lb_box_proc_spec_init(struct lb_box_proc_spec *out);
int lb_box_proc_spec_from_json(const json_t *obj, struct lb_box_proc_spec *out,
			       struct lb_err **err);
void lb_box_proc_spec_free(struct lb_box_proc_spec *spec);

const char *lb_box_net_name(enum lb_box_net n);		      /* "off" / "on" */
const char *lb_box_mount_mode_name(enum lb_box_mount_mode m); /* "none" / "ro" / "rw" */

/*
 * §3.3 step 3: compares the 11 session fields of stored (what the session was created with) and
 * requested, in LangBot's order: network, image, host_path, host_path_mode, mount_path,
 * persistent, cpus, memory_mb, pids_limit, read_only_rootfs, workspace_quota_mb. On the first
 * mismatch returns -1 with BoxSessionConflictError "Box session <id> already exists with
 * <field>=<stored value>" (Python repr rules: None, True/False, 1.0, enum values).
 */
int lb_box_spec_check_compatible(const struct lb_box_spec *stored,
				 const struct lb_box_spec *requested, const char *session_id,
				 struct lb_err **err);
/* §3.3 step 4: true when the sets of (host_path, mount_path, mode) of extra mounts with mode !=
 * none are equal (order and duplicates ignored). */
bool lb_box_extra_mounts_equal(const struct lb_box_spec *a, const struct lb_box_spec *b);

/* JSON of the session fields (for the on-disk session record) and back. */
json_t *lb_box_spec_session_json(const struct lb_box_spec *spec);

/* Profiles (§2). */
struct lb_box_profile {
	const char *name;
	const char *image;
	enum lb_box_net network;
	int64_t timeout_sec;
	enum lb_box_mount_mode host_path_mode;
	int64_t max_timeout_sec;
	double cpus;
	int64_t memory_mb;
	int64_t pids_limit;
	bool read_only_rootfs;
	int64_t workspace_quota_mb;
	const char *const *locked; /* NULL-terminated field names */
};
/* NULL + BoxValidationError "unknown box profile '<x>', available profiles: default,
 * network_basic, network_extended, offline_readonly" when unknown. */
const struct lb_box_profile *lb_box_profile_find(const char *name, struct lb_err **err);
/* §5.3 step 2 on a request payload object (before parsing): for image, network, timeout_sec,
 * host_path_mode, cpus, memory_mb, pids_limit, read_only_rootfs, workspace_quota_mb: locked ->
 * forced to the profile value, else set only when absent; then timeout_sec clamped to
 * max_timeout_sec. */
int lb_box_profile_apply(const struct lb_box_profile *p, json_t *payload, struct lb_err **err);

#endif
