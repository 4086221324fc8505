/*
 * An OCI runtime on lbbox's engine (lbbox-runc): a bundle's config.json becomes the same
 * struct lb_spec `lbbox run` builds, and runc's container life cycle (create, start, state,
 * kill, delete) is kept as a small state directory per container under the runtime's root.
 */
#ifndef LBBOX_OCI_H
#define LBBOX_OCI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/sandbox.h"

#define LB_OCI_VERSION	  "1.0.2"
#define LB_OCI_ID_MAX	  128
#define LB_OCI_CONFIG_MAX (4u << 20) /* bytes of a config.json */

/* A bundle's config.json, checked and turned into the engine's spec. */
struct lb_oci_config {
	struct lb_spec spec;
	bool terminal;	     /* process.terminal: the command's stdio is a new pty */
	json_t *hooks;	     /* "hooks", or NULL */
	json_t *annotations; /* "annotations", or NULL */
	char *seccomp_json;  /* linux.seccomp, serialised (the engine reads it from a file) */
	char *cgroups_path;  /* linux.cgroupsPath, or NULL */
	/* process.capabilities.bounding: what exec --cap may add */
	uint64_t caps_bounding;
};

/* Parses config.json's text; bundle (absolute) anchors a relative root.path. Refuses, with one
 * line, what lbbox cannot honour and what is malformed. */
int lb_oci_config_parse(const char *bundle, const char *text, size_t len, struct lb_oci_config *cfg,
			struct lb_err **err);
/* Reads BUNDLE/config.json (at most LB_OCI_CONFIG_MAX bytes) and parses it. */
int lb_oci_config_load(const char *bundle, struct lb_oci_config *cfg, struct lb_err **err);
void lb_oci_config_free(struct lb_oci_config *cfg);

/* A process.json of `exec --process`, or the flags of exec: what runs in a live container. */
struct lb_oci_process {
	char **argv, **env;
	char *cwd;
	bool terminal;
	bool set_user; /* process.user given (process.json) */
	uid_t uid;
	gid_t gid;
	bool set_umask; /* process.user.umask given; else the container's */
	mode_t umask;
	uint64_t add_caps; /* exec --cap: added to the container's, within its bounding set */
};
int lb_oci_process_parse(const char *text, size_t len, struct lb_oci_process *p,
			 struct lb_err **err);
void lb_oci_process_free(struct lb_oci_process *p);

/* runc's container id rule: [A-Za-z0-9_+.-], not "." or "..", not starting with '.'. */
int lb_oci_check_id(const char *id, struct lb_err **err);

/* ---- containers ------------------------------------------------------------------------- */

/* CREATING: only in the state hooks see while create builds the container. */
enum lb_oci_status {
	LB_OCI_CREATED,
	LB_OCI_RUNNING,
	LB_OCI_PAUSED,
	LB_OCI_STOPPED,
	LB_OCI_CREATING
};
const char *lb_oci_status_name(enum lb_oci_status s);

/* One container's record, <root>/<id>/state.json. */
struct lb_oci_state {
	char id[LB_OCI_ID_MAX + 1];
	char sandbox[13]; /* the engine's sandbox id */
	pid_t pid;	  /* the sandbox's pid 1 */
	uint64_t pid_start;
	char *bundle;
	char *created; /* RFC 3339 */
	json_t *annotations;
	json_t *hooks;
	/* the config's bounding set: the most exec --cap may give */
	uint64_t caps_bounding;
	enum lb_oci_status status; /* derived on read */
};
void lb_oci_state_free(struct lb_oci_state *st);

/* The runtime's root (--root) and the engine's directories below it. */
struct lb_oci_root {
	char dir[LB_PATH_BUF];
	char store[LB_PATH_BUF], runroot[LB_PATH_BUF];
	struct lb_paths paths;
};
int lb_oci_root_init(struct lb_oci_root *r, const char *dir, struct lb_err **err);

struct lb_oci_create_opts {
	const char *bundle;	    /* absolute */
	const char *console_socket; /* a unix socket that gets the pty's master, or NULL */
	unsigned preserve_fds;	    /* the caller's fds 3 .. 3 + N - 1 are the command's too */
	/* systemd socket activation (LISTEN_FDS): that many fds from 3 on come first, announced
	 * to the command in LISTEN_FDS / LISTEN_PID; preserve_fds then follow them */
	unsigned listen_fds;
};
/* Builds the container's sandbox; its pid 1 waits for `start`. *pid: pid 1. */
int lb_oci_create(const struct lb_oci_root *r, const char *id, const struct lb_oci_create_opts *o,
		  pid_t *pid, struct lb_err **err);
int lb_oci_start(const struct lb_oci_root *r, const char *id, struct lb_err **err);
int lb_oci_state_load(const struct lb_oci_root *r, const char *id, struct lb_oci_state *st,
		      struct lb_err **err);
/* The runtime-spec state object of st. */
json_t *lb_oci_state_json(const struct lb_oci_state *st);
int lb_oci_kill(const struct lb_oci_root *r, const char *id, int sig, bool all,
		struct lb_err **err);
/* pause / resume: the container's whole cgroup frozen or thawed (runc's "paused" state). */
int lb_oci_pause(const struct lb_oci_root *r, const char *id, bool pause, struct lb_err **err);
int lb_oci_delete(const struct lb_oci_root *r, const char *id, bool force, struct lb_err **err);
/* Ids of every container under the root, NULL-terminated (empty when the root is absent). */
int lb_oci_list(const struct lb_oci_root *r, char ***ids, struct lb_err **err);
/* Pids (host view) of the container's processes, from its cgroup; n = count. */
int lb_oci_pids(const struct lb_oci_root *r, const char *id, pid_t **pids, size_t *n,
		struct lb_err **err);

struct lb_oci_exec_opts {
	const struct lb_oci_process *proc;
	const char *console_socket;
	bool detach;
	unsigned preserve_fds; /* the caller's fds 3 .. 3 + N - 1 passed on */
};
/* Runs proc in the live container id; detached: returns its pid at once (it stays a child of
 * the caller's subreaper); otherwise waits and returns its exit code in *exit_code. */
int lb_oci_exec(const struct lb_oci_root *r, const char *id, const struct lb_oci_exec_opts *o,
		pid_t *pid, int *exit_code, struct lb_err **err);

/* update: a runtime-spec LinuxResources object (--resources) as a change of limits; refuses,
 * with one line, what lbbox cannot apply (unified, hugepageLimits, blockIO, rdma, cpuset ...). */
int lb_oci_resources_parse(const char *text, size_t len, struct lb_cgroup_update *u,
			   struct lb_err **err);
/* Applies u to the container's cgroup (created, running or paused). */
int lb_oci_update(const struct lb_oci_root *r, const char *id, const struct lb_cgroup_update *u,
		  struct lb_err **err);

/* The JSON of `features` and the default config.json of `spec`. */
json_t *lb_oci_features(void);
json_t *lb_oci_default_spec(void);

#endif
