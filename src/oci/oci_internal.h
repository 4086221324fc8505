/* Private interfaces between the files of src/oci/. */
#ifndef LBBOX_OCI_INTERNAL_H
#define LBBOX_OCI_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "lbbox/base/err.h"
#include "lbbox/oci/oci.h"

/* config.c: typed getters; a missing or null key is "not set", a wrong type is an error. */
int lb_oci_get_string(json_t *obj, const char *key, bool required, const char **out,
		      struct lb_err **err);
int lb_oci_get_bool(json_t *obj, const char *key, bool *out, struct lb_err **err);
int lb_oci_get_int(json_t *obj, const char *key, int64_t min, int64_t max, bool *set, int64_t *out,
		   struct lb_err **err);
/* NULL (and *err untouched) when absent; NULL with *err set on a wrong type. */
json_t *lb_oci_get_typed(json_t *obj, const char *key, json_type type, struct lb_err **err);
int lb_oci_get_strv(json_t *obj, const char *key, size_t max, char ***out, struct lb_err **err);
/* process.args, env, cwd, terminal (shared by config.json and exec's process.json). */
int lb_oci_parse_process(json_t *process, struct lb_spec *spec, bool *terminal,
			 struct lb_err **err);

/* Refuses a non-empty string obj.key (a security label lbbox cannot apply); where and what name
 * it in the message ("process", "AppArmor profile"). */
int lb_oci_refuse_label(json_t *obj, const char *where, const char *key, const char *what,
			struct lb_err **err);
/* process.user: uid, gid (required), umask, additionalGids checked. */
int lb_oci_parse_user(json_t *process, struct lb_spec *spec, struct lb_err **err);

/* config_mounts.c */
int lb_oci_parse_mounts(const char *bundle, json_t *root, struct lb_spec *spec,
			struct lb_err **err);
/* config_linux.c: namespaces, resources, seccomp, the paths lbbox masks itself. */
/* Control characters of (*err)->msg (from a config's strings) made '?'; returns -1. */
int lb_oci_one_line(struct lb_err **err);
int lb_oci_parse_linux(json_t *root, struct lb_oci_config *cfg, struct lb_err **err);
/* config_devices.c: linux.devices, each with the access resources.devices grants it. */
int lb_oci_parse_devices(json_t *lx, struct lb_spec *spec, struct lb_err **err);
/* One resources.devices rule; major and minor -1 = any. */
struct lb_oci_dev_rule {
	bool allow;
	char type; /* 'a', 'c' or 'b' */
	int64_t major, minor;
	unsigned access; /* LB_DEV_* bits */
};
#define LB_OCI_DEV_MAJOR_MAX 4095
#define LB_OCI_DEV_MINOR_MAX ((1 << 20) - 1)
/* The rules of res.devices (res may be NULL), checked; *out NULL when none. */
int lb_oci_parse_device_rules(json_t *res, struct lb_oci_dev_rule **out, size_t *n,
			      struct lb_err **err);
/* What the rules grant a device: in order, each matching rule sets or clears its bits. */
unsigned lb_oci_device_access(const struct lb_oci_dev_rule *rules, size_t n, char type,
			      uint32_t major, uint32_t minor);
/* config_userns.c: linux.uidMappings / gidMappings, with userns: a new user namespace asked. */
int lb_oci_parse_userns(json_t *lx, bool userns, struct lb_spec *spec, struct lb_err **err);

/* cgroups_path.c: systemd's "slice:prefix:name" as the cgroupfs path runc's systemd driver
 * gives it ("system.slice:libpod:x" -> "/system.slice/libpod-x.scope"); refuses, with one line,
 * empty or hostile parts ('/', "..", control characters). */
int lb_oci_systemd_cgroups_path(const char *p, char **out, struct lb_err **err);

/* hooks.c */
int lb_oci_hooks_check(json_t *hooks, struct lb_err **err);
/* Runs the hooks of one kind ("prestart", "poststop" ...) with the state on their stdin. */
int lb_oci_hooks_run(json_t *hooks, const char *kind, json_t *state, struct lb_err **err);
/* Whether hooks of that kind are given; the seconds they may take in all. */
bool lb_oci_hooks_has(json_t *hooks, const char *kind);
unsigned lb_oci_hooks_timeout(json_t *hooks, const char *kind);

/* lifecycle.c: the hooks of create and start, on the engine's hook points. */
struct lb_oci_hooks_plan {
	struct lb_hooks h;
	struct lb_oci_state *st;
	bool began; /* a hook ran: a failure from here on also runs poststop (runtime-spec) */
	char report[LB_PATH_BUF + 16];
};
/* Sets cfg->spec.hooks to b when the config has hooks that run during create or start (with
 * startContainer ones, the report fifo DIR/started is made). */
int lb_oci_plan_hooks(const char *dir, struct lb_oci_config *cfg, struct lb_oci_hooks_plan *b,
		      struct lb_err **err);
/* poststop with the state stopped; failures are ignored (runc: warnings). */
void lb_oci_run_poststop(struct lb_oci_state *st);
/* start, with startContainer hooks: the report fifo and a pidfd on pid 1 taken before the gate
 * opens; then pid 1's report awaited (its failure, its end, or none within the hooks'
 * timeout_s and a margin, is an error). */
int lb_oci_watch_start(const char *dir, const struct lb_oci_state *st, int *rfd, int *pidfd,
		       struct lb_err **err);
int lb_oci_await_started(int rfd, int pidfd, unsigned timeout_s, struct lb_err **err);

/* state.c */
int lb_oci_state_save(const struct lb_oci_root *r, const struct lb_oci_state *st,
		      struct lb_err **err);

/* container.c: paths of one container's directory. */
int lb_oci_container_dir(const struct lb_oci_root *r, const char *id, char *out, size_t len,
			 struct lb_err **err);

#endif
