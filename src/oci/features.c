/* `features` (runtime-spec's features.json) and `spec` (a starting config.json). */
#include <jansson.h>

#include "lbbox/oci/oci.h"

json_t *lb_oci_features(void)
{
	return json_pack(
	    "{s:s, s:s, s:[s,s,s,s,s,s], s:[s,s,s,s], s:{s:[s,s,s,s,s,s,s], s:{s:b, s:b, s:b}, s:{s:b, "
	    "s:[s,s,s,s,s,s], s:[s]}}, s:{s:s}}",
	    "ociVersionMin", "1.0.0", "ociVersionMax", "1.2.0", "hooks", "prestart",
	    "createRuntime", "createContainer", "startContainer", "poststart", "poststop",
	    "mountOptions", "ro", "rw", "size", "mode", "linux", "namespaces", "mount", "pid",
	    "ipc", "uts", "network", "cgroup", "user", "cgroup", "v1", 1, "v2", 1, "systemd", 0,
	    "seccomp", "enabled", 1, "actions", "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
	    "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_LOG", "SCMP_ACT_TRAP", "operators", "SCMP_CMP_EQ",
	    "annotations", "org.lbbox.runtime", "lbbox-runc");
}

json_t *lb_oci_default_spec(void)
{
	return json_pack(
	    "{s:s, s:{s:s, s:b}, s:{s:b, s:{s:i, s:i}, s:[s], s:[s,s], s:s, s:{s:[s,s,s], "
	    "s:[s,s,s], s:[s,s,s]}, s:b}, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, "
	    "s:s}], s:{s:[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}]}}",
	    "ociVersion", LB_OCI_VERSION, "root", "path", "rootfs", "readonly", 1, "process",
	    "terminal", 0, "user", "uid", 0, "gid", 0, "args", "sh", "env",
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm",
	    "cwd", "/", "capabilities", "bounding", "CAP_AUDIT_WRITE", "CAP_KILL",
	    "CAP_NET_BIND_SERVICE", "effective", "CAP_AUDIT_WRITE", "CAP_KILL",
	    "CAP_NET_BIND_SERVICE", "permitted", "CAP_AUDIT_WRITE", "CAP_KILL",
	    "CAP_NET_BIND_SERVICE", "noNewPrivileges", 1, "hostname", "lbbox", "mounts",
	    "destination", "/proc", "type", "proc", "source", "proc", "destination", "/dev", "type",
	    "tmpfs", "source", "tmpfs", "destination", "/sys", "type", "sysfs", "source", "sysfs",
	    "linux", "namespaces", "type", "pid", "type", "network", "type", "ipc", "type", "uts",
	    "type", "mount");
}
