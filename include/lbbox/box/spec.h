/*
 * LangBot Box's request models (spec §1): BoxSpec, BoxMountSpec, BoxManagedProcessSpec as plain
 * structs, their defaults, and LangBot's validators with its exact messages (class
 * BoxValidationError), plus the session compatibility rule (§3.3) and the profiles (§2, §5.3).
 * Reading them from a request's JSON is the protocol's part (lbbox/rpc/rpc.h).
 */
#ifndef LBBOX_BOX_SPEC_H
#define LBBOX_BOX_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/spec.h"

#define LB_BOX_DEFAULT_IMAGE "rockchin/langbot-sandbox:latest"
/* What LB_BOX_DEFAULT_IMAGE runs as when it is not local itself: the image rootfs-tools/box.sh
 * builds (python, node, git, curl), loaded by scripts/setup.sh. */
#define LB_BOX_LOCAL_IMAGE	  "localhost/box:latest"
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
	/* lbbox's own (a skill package the runtime resolved for skill_name): not held to the
	 * allowed mount roots. Never set from a request. */
	bool runtime_owned;
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
	/* lbbox's own, never set from a request: a detached run's -p (lbbox run -d -p). */
	struct lb_publish publish[LB_MAX_PUBLISH];
	size_t n_publish;
};

/* BoxManagedProcessSpec (§1.6). */
struct lb_box_proc_spec {
	char *process_id;  /* default "default" */
	char *command;	   /* required, stripped, non-empty */
	char **args;	   /* NULL-terminated */
	char **env;	   /* NULL-terminated "KEY=VALUE" */
	char *cwd;	   /* default "/workspace", must start with "/" */
	int64_t memory_mb; /* default 0 = the session's; else its own, at most the session's */
	/* lbbox's own, never set from a request: a detached run's `main` (lbbox run -d). */
	bool history; /* stdout and stderr always read into a bounded history (proc logs) */
	bool direct;  /* command and args exec'd as they are in cwd, not through `sh -lc` */
	bool hold;    /* history: no output is read until a follower came (lb_box_proc_follow) */
	bool tty;     /* proc start -t: a pty of the sandbox's as its stdio, its master kept by the
			 keeper (attach relays it; lb_box_proc_resize sets its size) */
};

/* Fills *out with every default (session_id NULL). */
void lb_box_spec_init(struct lb_box_spec *out);
/* Runs every validator on a filled spec, in declaration order (the first failure reported),
 * then the after-validator; the before-validator first (an unset workdir follows mount_path). */
int lb_box_spec_validate(struct lb_box_spec *spec, struct lb_err **err);
/* The validators of one field (LangBot's, then lbbox's), for a parser that validates each field
 * right after reading it, as pydantic does; and the after-validator (workdir under
 * mount_path when host_path is given). */
int lb_box_spec_check_field(struct lb_box_spec *spec, const char *field, struct lb_err **err);
int lb_box_spec_check_after(const struct lb_box_spec *spec, struct lb_err **err);
void lb_box_spec_free(struct lb_box_spec *spec);

/* A session or managed-process id (field names it) with a control character (below 0x20, or
 * 0x7f) is refused: BoxValidationError. Such ids reach terminals and logs. */
int lb_box_check_id(const char *id, const char *field, struct lb_err **err);

void lb_box_proc_spec_init(struct lb_box_proc_spec *out);
void lb_box_proc_spec_free(struct lb_box_proc_spec *spec);
/* The same for BoxManagedProcessSpec: all validators, or one field's. */
int lb_box_proc_spec_validate(struct lb_box_proc_spec *spec, struct lb_err **err);
int lb_box_proc_spec_check_field(struct lb_box_proc_spec *spec, const char *field,
				 struct lb_err **err);

/* Validators shared by the models (box_spec_mount.c), for their parsers too. */
/* BoxValidationError "<loc>: <msg>" (a type error's shape). */
int lb_box_type_error(struct lb_err **err, const char *loc, const char *msg);
/* Replaces *field by its Python strip(); a NULL field is "<loc>: Input should be a valid string".
 */
int lb_box_strip_field(char **field, const char *loc, struct lb_err **err);
/* Strips, then "<name> must be an absolute path inside the sandbox" unless it starts with "/". */
int lb_box_check_sandbox_path(char **field, const char *name, struct lb_err **err);
/* lbbox's rules for a mount target beyond LangBot's. */
int lb_box_check_mount_target(const char *path, struct lb_err **err);
/* Strips, then "host_path must be an absolute host path" unless POSIX or Windows absolute. */
int lb_box_check_host_path(char **field, struct lb_err **err);
void lb_box_mounts_free(struct lb_box_mount *m, size_t n);
/* An empty NULL-terminated string array, NULL on ENOMEM; and its free. */
char **lb_box_strv_new(void);
void lb_box_strv_free(char **v);

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
/* The workspace quota is hard: a quota is set and the workspace is the session's own (no
 * host_path), a tmpfs of workspace_quota_mb inside the sandbox where writes past it fail with
 * ENOSPC. A host_path workspace only has the per-file cap (RLIMIT_FSIZE) and LangBot's walk. */
bool lb_box_workspace_quota_hard(const struct lb_box_spec *spec);

/* JSON of the session fields, for the on-disk session record (read back by the box layer). */
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
/* True when the profile locks field ("network", "host_path_mode", ...). */
bool lb_box_profile_locks(const struct lb_box_profile *p, const char *field);

/* The profile fields of a BoxSpec a caller gave (the others are unset: the profile fills them). */
enum lb_box_given {
	LB_BOX_GIVEN_IMAGE = 1u << 0,
	LB_BOX_GIVEN_NETWORK = 1u << 1,
	LB_BOX_GIVEN_TIMEOUT = 1u << 2,
	LB_BOX_GIVEN_HOST_PATH_MODE = 1u << 3,
	LB_BOX_GIVEN_CPUS = 1u << 4,
	LB_BOX_GIVEN_MEMORY = 1u << 5,
	LB_BOX_GIVEN_PIDS = 1u << 6,
	LB_BOX_GIVEN_READ_ONLY = 1u << 7,
	LB_BOX_GIVEN_QUOTA = 1u << 8,
};
/* §5.3 step 2 (LangBot's _apply_profile) on a spec filled from command-line flags: for image,
 * network, timeout_sec, host_path_mode, cpus, memory_mb, pids_limit, read_only_rootfs,
 * workspace_quota_mb, a field not in given (a mask of lb_box_given) or locked takes the
 * profile's value; then timeout_sec is clamped to max_timeout_sec. */
int lb_box_profile_fill(const struct lb_box_profile *p, struct lb_box_spec *spec, unsigned given,
			struct lb_err **err);
/* An exec's timeout under the profile: its default when not given, clamped to its maximum. */
int64_t lb_box_profile_timeout(const struct lb_box_profile *p, bool given, int64_t timeout_sec);

#endif
