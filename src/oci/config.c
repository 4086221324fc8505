/*
 * A bundle's config.json (runtime-spec 1.0-1.2) -> the engine's struct lb_spec. Every field is
 * type-checked; what lbbox cannot honour is refused with one line rather than silently dropped,
 * except where lbbox is stricter than asked (documented in docs/oci-runtime.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

int lb_oci_get_string(json_t *obj, const char *key, bool required, const char **out,
		      struct lb_err **err)
{
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return required ? lb_err_set(err, EINVAL, "config: %s is required", key) : 0;
	if (!json_is_string(v))
		return lb_err_set(err, EINVAL, "config: %s must be a string", key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return lb_err_set(err, EINVAL, "config: %s holds a NUL byte", key);
	*out = json_string_value(v);
	return 0;
}

int lb_oci_get_bool(json_t *obj, const char *key, bool *out, struct lb_err **err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return lb_err_set(err, EINVAL, "config: %s must be a boolean", key);
	*out = json_is_true(v);
	return 0;
}

int lb_oci_get_int(json_t *obj, const char *key, int64_t min, int64_t max, bool *set, int64_t *out,
		   struct lb_err **err)
{
	json_t *v = json_object_get(obj, key);
	*set = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return lb_err_set(err, EINVAL, "config: %s must be an integer", key);
	int64_t n = json_integer_value(v);
	if (n < min || n > max)
		return lb_err_set(err, ERANGE, "config: %s %lld is out of range", key,
				  (long long)n);
	*out = n;
	*set = true;
	return 0;
}

json_t *lb_oci_get_typed(json_t *obj, const char *key, json_type type, struct lb_err **err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return NULL;
	if (json_typeof(v) != type) {
		lb_err_set(err, EINVAL, "config: %s must be %s", key,
			   type == JSON_OBJECT ? "an object" : "an array");
		return NULL;
	}
	return v;
}

int lb_oci_get_strv(json_t *obj, const char *key, size_t max, char ***out, struct lb_err **err)
{
	struct lb_err *e = NULL;
	json_t *a = lb_oci_get_typed(obj, key, JSON_ARRAY, &e);
	*out = NULL;
	if (e) {
		*err = e;
		return -1;
	}
	if (a && json_array_size(a) > max)
		return lb_err_set(err, E2BIG, "config: %s has more than %zu entries", key, max);
	size_t i;
	json_t *s;
	json_array_foreach(a, i, s)
	{
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s))
			return lb_err_set(err, EINVAL, "config: %s[%zu] must be a string", key, i);
	}
	*out = lb_json_to_strv(a);
	return *out ? 0 : lb_err_set(err, ENOMEM, "config: %s", key);
}

static int parse_caps(json_t *process, struct lb_spec *spec, uint64_t *bounding,
		      struct lb_err **err)
{
	json_t *caps = lb_oci_get_typed(process, "capabilities", JSON_OBJECT, err);
	*bounding = 0;
	if (!caps)
		return *err ? -1 : (spec->caps = 0, 0);
	/* the engine keeps one set: what the command may hold and use (bounding ∩ effective) */
	static const char *const sets[] = {"bounding", "effective"};
	uint64_t keep = ~0ULL;
	for (size_t s = 0; s < 2; s++) {
		_cleanup_strv_ char **names = NULL;
		uint64_t m = 0;
		if (lb_oci_get_strv(caps, sets[s], 64, &names, err) < 0)
			return -1;
		for (char **n = names; n && *n; n++) {
			cap_value_t v;
			if (cap_from_name(*n, &v) < 0 || v < 0 || v >= 64)
				return lb_err_set(err, EINVAL, "config: unknown capability %.64s",
						  *n);
			m |= 1ULL << v;
		}
		keep &= m;
		if (s == 0) /* what exec --cap may add to an exec */
			*bounding = m;
	}
	for (size_t s = 0; s < 3; s++) { /* the other sets: checked, covered by the one above */
		static const char *const others[] = {"permitted", "inheritable", "ambient"};
		_cleanup_strv_ char **names = NULL;
		if (lb_oci_get_strv(caps, others[s], 64, &names, err) < 0)
			return -1;
	}
	spec->caps = keep;
	return 0;
}

/* "RLIMIT_NOFILE" → RLIMIT_NOFILE; -1 for anything else (lower case included). */
static int rlimit_of_type(const char *type)
{
	char name[16];
	size_t i = 0;
	if (strncmp(type, "RLIMIT_", 7))
		return -1;
	for (type += 7; *type && i < sizeof(name) - 1; type++)
		if (*type >= 'A' && *type <= 'Z')
			name[i++] = (char)(*type - 'A' + 'a');
		else
			return -1;
	name[i] = '\0';
	return *type ? -1 : lb_rlimit_by_name(name);
}

static int parse_rlimit(json_t *r, struct lb_rlimit *out, struct lb_err **err)
{
	const char *type;
	int64_t hard = 0, soft = 0;
	bool hs, ss;
	if (!json_is_object(r))
		return lb_err_set(err, EINVAL, "config: process.rlimits entries must be objects");
	if (lb_oci_get_string(r, "type", true, &type, err) < 0 ||
	    lb_oci_get_int(r, "hard", 0, INT64_MAX, &hs, &hard, err) < 0 ||
	    lb_oci_get_int(r, "soft", 0, INT64_MAX, &ss, &soft, err) < 0)
		return -1;
	if (!hs || !ss)
		return lb_err_set(err, EINVAL, "config: rlimit %.32s needs hard and soft", type);
	if (soft > hard)
		return lb_err_set(err, EINVAL, "config: rlimit %.32s: soft above hard", type);
	int resource = rlimit_of_type(type);
	if (resource < 0)
		return lb_err_set(err, EINVAL, "config: unknown rlimit %.32s", type);
	*out = (struct lb_rlimit){resource, (rlim_t)soft, (rlim_t)hard};
	return 0;
}

static int parse_rlimits(json_t *process, struct lb_spec *spec, struct lb_err **err)
{
	json_t *a = lb_oci_get_typed(process, "rlimits", JSON_ARRAY, err), *r;
	size_t i;
	if (!a)
		return *err ? -1 : 0;
	if (json_array_size(a) > LB_MAX_RLIMITS)
		return lb_err_set(err, E2BIG, "config: more than %d rlimits", LB_MAX_RLIMITS);
	json_array_foreach(a, i, r)
	{
		if (parse_rlimit(r, &spec->rlimits[spec->n_rlimits], err) < 0)
			return -1;
		spec->n_rlimits++;
	}
	return 0;
}

int lb_oci_parse_user(json_t *process, struct lb_spec *spec, struct lb_err **err)
{
	json_t *user = lb_oci_get_typed(process, "user", JSON_OBJECT, err);
	int64_t v = 0;
	bool set;
	if (!user)
		return *err ? -1 : lb_err_set(err, EINVAL, "config: process.user is required");
	if (lb_oci_get_int(user, "uid", 0, UINT32_MAX - 1, &set, &v, err) < 0)
		return -1;
	spec->uid = (uid_t)v;
	v = 0;
	if (lb_oci_get_int(user, "gid", 0, UINT32_MAX - 1, &set, &v, err) < 0)
		return -1;
	spec->gid = (gid_t)v;
	/* umask (runtime-spec 1.1): the command's, set just before its execve */
	if (lb_oci_get_int(user, "umask", 0, 0777, &set, &v, err) < 0)
		return -1;
	spec->umask_set = set;
	spec->umask = (mode_t)v;
	/* additionalGids: the command's supplementary groups (the kernel's NGROUPS_MAX) */
	json_t *extra = lb_oci_get_typed(user, "additionalGids", JSON_ARRAY, err), *g;
	size_t i;
	if (*err)
		return -1;
	if (json_array_size(extra) > 65536)
		return lb_err_set(err, E2BIG, "config: too many additionalGids");
	if (json_array_size(extra) &&
	    !(spec->groups = calloc(json_array_size(extra), sizeof(*spec->groups))))
		return lb_err_set(err, ENOMEM, "config: additionalGids");
	json_array_foreach(extra, i, g)
	{
		if (!json_is_integer(g) || json_integer_value(g) < 0 ||
		    json_integer_value(g) > UINT32_MAX - 1)
			return lb_err_set(err, EINVAL, "config: additionalGids[%zu] is not a gid",
					  i);
		spec->groups[spec->n_groups++] = (gid_t)json_integer_value(g);
	}
	return 0;
}

/* A security label lbbox cannot apply (it has no AppArmor or SELinux support): refused when
 * given, so a bundle never runs without the confinement it asks for; "" is accepted, and so is
 * AppArmor's "unconfined" (podman --security-opt apparmor=unconfined), which asks for none. */
int lb_oci_refuse_label(json_t *obj, const char *where, const char *key, const char *what,
			struct lb_err **err)
{
	const char *s = NULL;
	if (lb_oci_get_string(obj, key, false, &s, err) < 0)
		return -1;
	bool none = !s || !*s || (!strcmp(key, "apparmorProfile") && !strcmp(s, "unconfined"));
	if (!none)
		return lb_err_set(err, ENOTSUP, "config: %s.%s is set but lbbox-runc applies no %s",
				  where, key, what);
	return 0;
}

/* oomScoreAdj: written by the engine before the sandbox runs (a lower value than lbbox's own
 * needs CAP_SYS_RESOURCE: create then fails, it is never skipped). */
static int parse_oom_score_adj(json_t *process, struct lb_spec *spec, struct lb_err **err)
{
	int64_t v = 0;
	bool set;
	if (lb_oci_get_int(process, "oomScoreAdj", -1000, 1000, &set, &v, err) < 0)
		return -1;
	spec->oom_score_adj_set = set;
	spec->oom_score_adj = (int)v;
	return 0;
}

static int refuse_labels(json_t *process, struct lb_err **err)
{
	if (lb_oci_refuse_label(process, "process", "apparmorProfile", "AppArmor profile", err) < 0)
		return -1;
	return lb_oci_refuse_label(process, "process", "selinuxLabel", "SELinux label", err);
}

/* process.env: KEY=VALUE strings (runc refuses the others too). */
static int check_env(char **env, struct lb_err **err)
{
	for (char **e = env; e && *e; e++)
		if (!strchr(*e, '=') || **e == '=')
			return lb_err_set(err, EINVAL, "config: env entry '%.64s' is not KEY=VALUE",
					  *e);
	return 0;
}

int lb_oci_parse_process(json_t *process, struct lb_spec *spec, bool *terminal, struct lb_err **err)
{
	const char *cwd;
	if (!json_is_object(process))
		return lb_err_set(err, EINVAL, "config: process must be an object");
	if (lb_oci_get_strv(process, "args", 65536, &spec->argv, err) < 0 ||
	    lb_oci_get_strv(process, "env", 65536, &spec->env, err) < 0 ||
	    check_env(spec->env, err) < 0 ||
	    lb_oci_get_string(process, "cwd", true, &cwd, err) < 0 ||
	    lb_oci_get_bool(process, "terminal", terminal, err) < 0 ||
	    refuse_labels(process, err) < 0)
		return -1;
	if (!spec->argv || !spec->argv[0] || !spec->argv[0][0])
		return lb_err_set(err, EINVAL, "config: process.args must not be empty");
	if (cwd[0] != '/')
		return lb_err_set(err, EINVAL, "config: process.cwd %.64s is not absolute", cwd);
	if (!spec->env && !(spec->env = calloc(1, sizeof(char *))))
		return lb_err_set(err, ENOMEM, "config: env");
	spec->cwd = strdup(cwd);
	if (!spec->cwd)
		return lb_err_set(err, ENOMEM, "config: cwd");
	return 0;
}

static int parse_process(json_t *root, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *process = lb_oci_get_typed(root, "process", JSON_OBJECT, err);
	bool nnp = false;
	if (!process)
		return *err ? -1 : lb_err_set(err, EINVAL, "config: process is required");
	/* noNewPrivileges false is stricter here: the engine always sets no_new_privs */
	if (lb_oci_parse_process(process, &cfg->spec, &cfg->terminal, err) < 0 ||
	    lb_oci_parse_user(process, &cfg->spec, err) < 0 ||
	    parse_caps(process, &cfg->spec, &cfg->caps_bounding, err) < 0 ||
	    parse_rlimits(process, &cfg->spec, err) < 0 ||
	    parse_oom_score_adj(process, &cfg->spec, err) < 0 ||
	    lb_oci_get_bool(process, "noNewPrivileges", &nnp, err) < 0)
		return -1;
	/* runc's umask when the bundle gives none */
	if (!cfg->spec.umask_set) {
		cfg->spec.umask_set = true;
		cfg->spec.umask = 022;
	}
	return 0;
}

static int parse_root(const char *bundle, json_t *root, struct lb_spec *spec, struct lb_err **err)
{
	json_t *r = lb_oci_get_typed(root, "root", JSON_OBJECT, err);
	const char *path;
	bool ro = false;
	if (!r)
		return *err ? -1 : lb_err_set(err, EINVAL, "config: root is required");
	if (lb_oci_get_string(r, "path", true, &path, err) < 0 ||
	    lb_oci_get_bool(r, "readonly", &ro, err) < 0)
		return -1;
	if (!*path)
		return lb_err_set(err, EINVAL, "config: root.path is empty");
	if (strlen(path) + strlen(bundle) + 2 > LB_PATH_BUF - 512)
		return lb_err_set(err, ENAMETOOLONG, "config: root.path is too long");
	/* relative to the bundle, as the runtime-spec says */
	if (path[0] == '/' ? !(spec->rootfs = strdup(path))
			   : asprintf(&spec->rootfs, "%s/%s", bundle, path) < 0) {
		spec->rootfs = NULL;
		return lb_err_set(err, ENOMEM, "config: root.path");
	}
	spec->readonly_root = ro;
	return 0;
}

static int check_version(json_t *root, struct lb_err **err)
{
	const char *v;
	if (lb_oci_get_string(root, "ociVersion", true, &v, err) < 0)
		return -1;
	if (strncmp(v, "1.", 2) != 0)
		return lb_err_set(err, EINVAL, "config: ociVersion %.32s is not supported (1.x)",
				  v);
	return 0;
}

static int parse_hostname(json_t *root, struct lb_spec *spec, struct lb_err **err)
{
	const char *h;
	if (lb_oci_get_string(root, "hostname", false, &h, err) < 0)
		return -1;
	if (!h || !*h)
		return 0;
	if (strlen(h) > 64)
		return lb_err_set(err, EINVAL, "config: hostname is longer than 64 bytes");
	spec->hostname = strdup(h);
	return spec->hostname ? 0 : lb_err_set(err, ENOMEM, "config: hostname");
}

/* annotations: an object of strings, kept for `state`. */
static int parse_annotations(json_t *root, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *a = lb_oci_get_typed(root, "annotations", JSON_OBJECT, err), *v;
	const char *k;
	if (!a)
		return *err ? -1 : 0;
	json_object_foreach(a, k, v)
	{
		if (!json_is_string(v))
			return lb_err_set(err, EINVAL, "config: annotation %.64s is not a string",
					  k);
	}
	cfg->annotations = json_incref(a);
	return 0;
}

static int parse_hooks(json_t *root, struct lb_oci_config *cfg, struct lb_err **err)
{
	json_t *h = lb_oci_get_typed(root, "hooks", JSON_OBJECT, err);
	if (!h)
		return *err ? -1 : 0;
	if (lb_oci_hooks_check(h, err) < 0)
		return -1;
	cfg->hooks = json_incref(h);
	return 0;
}

int lb_oci_one_line(struct lb_err **err)
{
	for (char *c = err && *err ? (*err)->msg : NULL; c && *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return -1;
}

static int config_parse(const char *bundle, const char *text, size_t len, struct lb_oci_config *cfg,
			struct lb_err **err)
{
	json_error_t je;
	memset(cfg, 0, sizeof(*cfg));
	lb_spec_init(&cfg->spec);
	cfg->spec.tmp_size = 0; /* the bundle's mounts say what is a tmpfs */
	if (bundle[0] != '/')
		return lb_err_set(err, EINVAL, "bundle %s is not absolute", bundle);
	if (len > LB_OCI_CONFIG_MAX)
		return lb_err_set(err, E2BIG, "config.json is larger than %u bytes",
				  LB_OCI_CONFIG_MAX);
	_cleanup_json_ json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return lb_err_set(err, EINVAL, "config.json: %s (line %d)", je.text, je.line);
	if (!json_is_object(root))
		return lb_err_set(err, EINVAL, "config.json is not an object");
	if (check_version(root, err) < 0 || parse_root(bundle, root, &cfg->spec, err) < 0 ||
	    parse_process(root, cfg, err) < 0 || parse_hostname(root, &cfg->spec, err) < 0 ||
	    lb_oci_parse_mounts(bundle, root, &cfg->spec, err) < 0 ||
	    lb_oci_parse_linux(root, cfg, err) < 0 || parse_annotations(root, cfg, err) < 0 ||
	    parse_hooks(root, cfg, err) < 0)
		return -1;
	if (json_object_get(root, "solaris") || json_object_get(root, "windows") ||
	    json_object_get(root, "vm") || json_object_get(root, "zos"))
		return lb_err_set(err, EINVAL, "config: only Linux containers are supported");
	return 0;
}

/* A refusal names what the config says, which may hold any character: one line still. */
int lb_oci_config_parse(const char *bundle, const char *text, size_t len, struct lb_oci_config *cfg,
			struct lb_err **err)
{
	return config_parse(bundle, text, len, cfg, err) < 0 ? lb_oci_one_line(err) : 0;
}

int lb_oci_config_load(const char *bundle, struct lb_oci_config *cfg, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	memset(cfg, 0, sizeof(*cfg));
	lb_spec_init(&cfg->spec);
	if ((size_t)snprintf(path, sizeof(path), "%s/config.json", bundle) >= sizeof(path))
		return lb_err_set(err, ENAMETOOLONG, "bundle %s", bundle);
	if (lb_read_file(path, LB_OCI_CONFIG_MAX, &text, &len, err) < 0)
		return lb_err_wrap(err, "read %s", path);
	lb_spec_free(&cfg->spec);
	return lb_oci_config_parse(bundle, text, len, cfg, err);
}

void lb_oci_config_free(struct lb_oci_config *cfg)
{
	lb_spec_free(&cfg->spec);
	json_decref(cfg->hooks);
	json_decref(cfg->annotations);
	free(cfg->seccomp_json);
	free(cfg->cgroups_path);
	memset(cfg, 0, sizeof(*cfg));
}
