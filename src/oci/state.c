/* The runtime's root and each container's record in it (<root>/<id>/state.json). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

int lb_oci_check_id(const char *id, struct lb_err **err)
{
	size_t n = strlen(id);
	if (!n || n > LB_OCI_ID_MAX || id[0] == '.' || id[0] == '-')
		return lb_err_set(err, EINVAL, "invalid container id '%.*s'", 64, id);
	for (const char *c = id; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr("_+.-", *c)))
			return lb_err_set(err, EINVAL, "invalid container id '%.*s'", 64, id);
	return 0;
}

const char *lb_oci_status_name(enum lb_oci_status s)
{
	static const char *const names[] = {"created", "running", "paused", "stopped", "creating"};
	return names[s];
}

/* The engine's store (seccomp cache) and runtime directory live inside the root, under names
 * no container id can take (ids never start with '.'). */
int lb_oci_root_init(struct lb_oci_root *r, const char *dir, struct lb_err **err)
{
	memset(r, 0, sizeof(*r));
	if (dir[0] != '/')
		return lb_err_set(err, EINVAL, "--root %s is not absolute", dir);
	if (strlen(dir) >= LB_PATH_ROOT_MAX - 16)
		return lb_err_set(err, ENAMETOOLONG, "--root %s is too long", dir);
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	snprintf(r->store, sizeof(r->store), "%s/.store", dir);
	snprintf(r->runroot, sizeof(r->runroot), "%s/.sandboxes", dir);
	r->paths = (struct lb_paths){.root = r->store, .runroot = r->runroot};
	/* private: a record planted by someone else could name any process to signal */
	if (lb_private_dir(dir, "runtime root", NULL, err) < 0)
		return -1;
	return lb_paths_secure(&r->paths, err);
}

int lb_oci_container_dir(const struct lb_oci_root *r, const char *id, char *out, size_t len,
			 struct lb_err **err)
{
	if (lb_oci_check_id(id, err) < 0)
		return -1;
	snprintf(out, len, "%s/%s", r->dir, id);
	return 0;
}

void lb_oci_state_free(struct lb_oci_state *st)
{
	free(st->bundle);
	free(st->created);
	json_decref(st->annotations);
	json_decref(st->hooks);
	memset(st, 0, sizeof(*st));
}

static enum lb_oci_status derive_status(const struct lb_oci_root *r, const struct lb_oci_state *st,
					const char *dir)
{
	char gate[LB_PATH_BUF];
	if (st->pid <= 0 || lb_proc_starttime(st->pid) != st->pid_start || !st->pid_start)
		return LB_OCI_STOPPED;
	snprintf(gate, sizeof(gate), "%s/gate", dir);
	if (access(gate, F_OK) == 0)
		return LB_OCI_CREATED;
	return lb_sandbox_frozen(&r->paths, st->sandbox) ? LB_OCI_PAUSED : LB_OCI_RUNNING;
}

static int parse_state(json_t *j, struct lb_oci_state *st, struct lb_err **err)
{
	const char *sb = json_string_value(json_object_get(j, "sandbox"));
	const char *bundle = json_string_value(json_object_get(j, "bundle"));
	const char *created = json_string_value(json_object_get(j, "created"));
	json_t *pid = json_object_get(j, "pid"), *start = json_object_get(j, "pid_start");
	if (!sb || strlen(sb) != 12 || !bundle || !created || !json_is_integer(pid) ||
	    !json_is_integer(start))
		return lb_err_set(err, EINVAL, "container state of %s is damaged", st->id);
	memcpy(st->sandbox, sb, 13);
	st->pid = (pid_t)json_integer_value(pid);
	st->pid_start = (uint64_t)json_integer_value(start);
	st->bundle = strdup(bundle);
	st->created = strdup(created);
	json_t *a = json_object_get(j, "annotations"), *h = json_object_get(j, "hooks");
	st->annotations = json_is_object(a) ? json_incref(a) : NULL;
	st->hooks = json_is_object(h) ? json_incref(h) : NULL;
	st->caps_bounding = (uint64_t)json_integer_value(json_object_get(j, "caps_bounding"));
	if (!st->bundle || !st->created)
		return lb_err_set(err, ENOMEM, "container state");
	return 0;
}

int lb_oci_state_load(const struct lb_oci_root *r, const char *id, struct lb_oci_state *st,
		      struct lb_err **err)
{
	char dir[LB_PATH_BUF], path[LB_PATH_BUF + 16];
	_cleanup_free_ char *text = NULL;
	size_t len;
	json_error_t je;
	memset(st, 0, sizeof(*st));
	if (lb_oci_container_dir(r, id, dir, sizeof(dir), err) < 0)
		return -1;
	snprintf(st->id, sizeof(st->id), "%s", id);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	if (lb_read_file(path, LB_OCI_CONFIG_MAX, &text, &len, NULL) < 0)
		return lb_err_set(err, 0, "container %s does not exist", id);
	_cleanup_json_ json_t *j = json_loadb(text, len, 0, &je);
	if (!j || parse_state(j, st, err) < 0) {
		lb_oci_state_free(st);
		return j ? -1 : lb_err_set(err, EINVAL, "container state of %s is damaged", id);
	}
	st->status = derive_status(r, st, dir);
	return 0;
}

int lb_oci_state_save(const struct lb_oci_root *r, const struct lb_oci_state *st,
		      struct lb_err **err)
{
	char path[LB_PATH_BUF + 16];
	_cleanup_json_ json_t *j = json_pack(
	    "{s:s, s:s, s:I, s:I, s:s, s:s, s:O?, s:O?, s:I}", "id", st->id, "sandbox", st->sandbox,
	    "pid", (json_int_t)st->pid, "pid_start", (json_int_t)st->pid_start, "bundle",
	    st->bundle, "created", st->created, "annotations", st->annotations, "hooks", st->hooks,
	    "caps_bounding", (json_int_t)st->caps_bounding);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (!text)
		return lb_err_set(err, ENOMEM, "container state");
	snprintf(path, sizeof(path), "%s/%s/state.json", r->dir, st->id);
	return lb_write_file_atomic(path, text, strlen(text), 0600, err);
}

json_t *lb_oci_state_json(const struct lb_oci_state *st)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "ociVersion", LB_OCI_VERSION, "id", st->id,
			      "status", lb_oci_status_name(st->status), "bundle", st->bundle);
	if (!j)
		return NULL;
	if (st->status != LB_OCI_STOPPED)
		json_object_set_new(j, "pid", json_integer(st->pid));
	json_object_set_new(j, "annotations",
			    st->annotations ? json_incref(st->annotations) : json_object());
	json_object_set_new(j, "created", json_string(st->created));
	return j;
}

int lb_oci_list(const struct lb_oci_root *r, char ***ids, struct lb_err **err)
{
	_cleanup_closedir_ DIR *d = opendir(r->dir);
	size_t n = 0, cap = 16;
	*ids = calloc(cap + 1, sizeof(char *));
	if (!*ids)
		return lb_err_set(err, ENOMEM, "list");
	if (!d)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "open %s", r->dir);
	for (struct dirent *de; (de = readdir(d));) {
		if (lb_oci_check_id(de->d_name, NULL) < 0)
			continue;
		if (n == cap) {
			char **more = realloc(*ids, (2 * cap + 1) * sizeof(char *));
			if (!more)
				return lb_err_set(err, ENOMEM, "list");
			*ids = more;
			cap *= 2;
		}
		if (!((*ids)[n] = strdup(de->d_name)))
			return lb_err_set(err, ENOMEM, "list");
		(*ids)[++n] = NULL;
	}
	return 0;
}
