/*
 * exec: a process joins a live container through the engine's spawn (the same namespaces,
 * cgroup, rlimits, identity, capabilities, no_new_privs and seccomp filter as the container's
 * command), in a child cgroup of its own. process.json is parsed like config.json's process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/console.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

int lb_oci_process_parse(const char *text, size_t len, struct lb_oci_process *p,
			 struct lb_err **err)
{
	struct lb_spec spec;
	json_error_t je;
	memset(p, 0, sizeof(*p));
	if (len > LB_OCI_CONFIG_MAX)
		return lb_err_set(err, E2BIG, "process.json is too large");
	_cleanup_json_ json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		lb_err_set(err, EINVAL, "process.json: %s (line %d)", je.text, je.line);
		return lb_oci_one_line(err);
	}
	lb_spec_init(&spec);
	int rc = lb_oci_parse_process(j, &spec, &p->terminal, err);
	/* process.user: optional here (runc's exec takes it from the container otherwise) */
	if (rc == 0 && json_object_get(j, "user")) {
		rc = lb_oci_parse_user(j, &spec, err);
		p->set_user = true;
		p->uid = spec.uid;
		p->gid = spec.gid;
		p->set_umask = spec.umask_set;
		p->umask = spec.umask;
	}
	if (rc == 0) {
		p->argv = LB_TAKE_PTR(spec.argv);
		p->env = LB_TAKE_PTR(spec.env);
		p->cwd = LB_TAKE_PTR(spec.cwd);
	}
	lb_spec_free(&spec);
	return rc < 0 ? lb_oci_one_line(err) : 0;
}

void lb_oci_process_free(struct lb_oci_process *p)
{
	lb_strvfreep(&p->argv);
	lb_strvfreep(&p->env);
	free(p->cwd);
	memset(p, 0, sizeof(*p));
}

static int spawn_in(struct lb_sandbox *sb, const struct lb_oci_exec_opts *o, struct lb_proc *proc,
		    int *setup_exit, struct lb_err **err)
{
	char cgname[32] = "oci-exec-";
	_cleanup_close_ int sock = -1;
	if (lb_random_hex(cgname + 9, 12, err) < 0)
		return -1;
	if (o->proc->terminal) {
		if (!o->console_socket)
			return lb_err_set(err, EINVAL, "--tty needs --console-socket");
		/* connected here, where the path resolves; the pty is made inside (spawn.c) */
		if ((sock = lb_console_connect(o->console_socket, err)) < 0)
			return -1;
	}
	struct lb_exec_opts eo = {.argv = o->proc->argv,
				  .env = o->proc->env,
				  .cwd = o->proc->cwd,
				  .fds = {0, 1, 2},
				  .cgroup = cgname,
				  .set_user = o->proc->set_user,
				  .uid = o->proc->uid,
				  .gid = o->proc->gid,
				  .set_umask = o->proc->set_umask,
				  .umask = o->proc->umask,
				  .console_sock = sock > 0 ? sock : 0,
				  .add_caps = o->proc->add_caps,
				  .preserve_fds = o->preserve_fds};
	return lb_sandbox_spawn(sb, &eo, proc, setup_exit, err);
}

/* runc adds an exec's --cap to its bounding set too; lbbox keeps execs inside the container's. */
static int cap_beyond(const char *id, uint64_t caps, struct lb_err **err)
{
	cap_value_t c = 0;
	while (!(caps & (1ULL << c)))
		c++;
	char *name = cap_to_name(c);
	for (char *p = name; p && *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
	lb_err_set(err, 0, "exec --cap %s: not in the bounding set of container %s",
		   name ? name : "?", id);
	cap_free(name);
	return -1;
}

int lb_oci_exec(const struct lb_oci_root *r, const char *id, const struct lb_oci_exec_opts *o,
		pid_t *pid, int *exit_code, struct lb_err **err)
{
	struct lb_oci_state st;
	struct lb_sandbox *sb = NULL;
	struct lb_proc proc;
	*exit_code = LB_EXIT_SETUP;
	if (lb_oci_state_load(r, id, &st, err) < 0)
		return -1;
	enum lb_oci_status status = st.status;
	char sbid[13];
	memcpy(sbid, st.sandbox, sizeof(sbid));
	uint64_t beyond = o->proc->add_caps & ~st.caps_bounding;
	lb_oci_state_free(&st);
	if (status != LB_OCI_RUNNING)
		return lb_err_set(err, 0, "container %s is %s, not running", id,
				  lb_oci_status_name(status));
	if (beyond)
		return cap_beyond(id, beyond, err);
	if (lb_sandbox_open(&r->paths, sbid, &sb, err) < 0)
		return -1;
	int rc = spawn_in(sb, o, &proc, exit_code, err);
	lb_sandbox_close(sb);
	if (rc < 0)
		return -1;
	*pid = proc.pid;
	if (o->detach) {
		/* it runs on, reparented to the caller's subreaper; its cgroup goes with the
		 * container (delete) */
		close(proc.pidfd);
		lb_cgroup_forget(proc.cg);
		return 0;
	}
	int ws = lb_proc_wait(&proc);
	*exit_code = lb_exit_code_of(ws);
	lb_proc_release(&proc);
	return 0;
}
