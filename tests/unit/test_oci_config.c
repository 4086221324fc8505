/* Unit tests for lbbox-runc's config.json parser: what podman writes becomes the engine's spec;
 * malformed and hostile configs are refused with one line and leak nothing (ASan). */
#include <criterion/criterion.h>
#include <sys/resource.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/oci/oci.h"
#include "oci/oci_internal.h"

#define BUNDLE "/bundle"

/* A minimal valid config with PATCH spliced in as extra top-level members (or ""). */
static char *config(const char *linux_extra, const char *process_extra, const char *top_extra)
{
	char *s = NULL;
	int n = asprintf(
	    &s,
	    "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
	    "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0}%s},"
	    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"
	    "{\"type\":\"uts\"},{\"type\":\"network\"}]%s}%s}",
	    process_extra, linux_extra, top_extra);
	cr_assert_gt(n, 0);
	return s;
}

static int parse(const char *text, struct lb_oci_config *cfg, struct lb_err **err)
{
	return lb_oci_config_parse(BUNDLE, text, strlen(text), cfg, err);
}

Test(oci_config, minimal)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	char *text = config("", "", "");
	cr_assert_eq(parse(text, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(cfg.spec.rootfs, BUNDLE "/rootfs");
	cr_assert(cfg.spec.readonly_root);
	cr_assert_str_eq(cfg.spec.argv[0], "sh");
	cr_assert_eq(cfg.spec.net, LB_NET_OFF);
	cr_assert_null(cfg.spec.netns_path);
	cr_assert_eq(cfg.spec.caps, 0);
	cr_assert_eq(cfg.spec.tmp_size, 0);
	lb_oci_config_free(&cfg);
	free(text);
}

/* What podman 4.3 writes, in short: limits, caps, rlimits, a joined netns, binds, seccomp. */
Test(oci_config, podman_like)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	const char *lx =
	    ",\"resources\":{\"memory\":{\"limit\":67108864,\"swap\":134217728},"
	    "\"pids\":{\"limit\":33},\"cpu\":{\"quota\":50000,\"period\":100000,\"shares\":1024},"
	    "\"devices\":[{\"allow\":false,\"access\":\"rwm\"}]},"
	    "\"cgroupsPath\":\"/libpod_parent/libpod-x\",\"sysctl\":{\"net.ipv4.ping_group_range\":"
	    "\"0 0\"},\"maskedPaths\":[\"/proc/kcore\"],\"readonlyPaths\":[\"/proc/sys\"],"
	    "\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[]}";
	const char *proc = ",\"env\":[\"PATH=/bin\",\"FOO=bar\"],\"terminal\":false,"
			   "\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_KILL\"],"
			   "\"effective\":[\"CAP_CHOWN\",\"CAP_KILL\",\"CAP_NET_RAW\"]},"
			   "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":2048,\"soft\":1024}],"
			   "\"noNewPrivileges\":true";
	const char *top =
	    ",\"hostname\":\"box1\",\"annotations\":{\"a\":\"b\"},\"mounts\":["
	    "{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
	    "{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"},"
	    "{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\"},"
	    "{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/data\","
	    "\"options\":[\"rbind\",\"ro\"]},"
	    "{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"source\":\"hosts\","
	    "\"options\":[\"bind\"]},"
	    "{\"destination\":\"/scratch\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
	    "\"options\":[\"size=1m\",\"mode=700\",\"nosuid\"]}]";
	char *text = config(lx, proc, top);
	cr_assert_eq(parse(text, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(cfg.spec.limits.memory_bytes, 64ULL << 20);
	cr_assert_eq(cfg.spec.limits.pids, 33);
	cr_assert_eq(cfg.spec.limits.cpu_quota_us, 50000);
	cr_assert_eq(cfg.spec.limits.cpu_shares, 1024, "cpu.shares for the engine's create");
	cr_assert_eq(cfg.spec.caps, (1ULL << CAP_CHOWN) | (1ULL << CAP_KILL));
	cr_assert_eq(cfg.caps_bounding, (1ULL << CAP_CHOWN) | (1ULL << CAP_KILL));
	cr_assert_eq(cfg.spec.n_rlimits, 1);
	cr_assert_eq(cfg.spec.rlimits[0].hard, 2048);
	cr_assert_eq(cfg.spec.rlimits[0].resource, RLIMIT_NOFILE);
	cr_assert_str_eq(cfg.spec.hostname, "box1");
	cr_assert_str_eq(cfg.spec.env[1], "FOO=bar");
	cr_assert_eq(cfg.spec.n_mounts, 3);
	cr_assert_str_eq(cfg.spec.mounts[0].source, "/srv/data");
	cr_assert(cfg.spec.mounts[0].readonly);
	cr_assert_str_eq(cfg.spec.mounts[1].source, BUNDLE "/hosts");
	cr_assert_eq(cfg.spec.mounts[2].tmpfs_size, 1 << 20);
	cr_assert_eq(cfg.spec.mounts[2].tmpfs_mode, 0700);
	cr_assert_not_null(cfg.seccomp_json);
	cr_assert_not_null(cfg.annotations);
	cr_assert_str_eq(cfg.cgroups_path, "/libpod_parent/libpod-x");
	/* the bundle's lists reach the engine as written (it resolves them inside the root) */
	cr_assert_str_eq(cfg.spec.masked_paths[0], "/proc/kcore");
	cr_assert_null(cfg.spec.masked_paths[1]);
	cr_assert_str_eq(cfg.spec.readonly_paths[0], "/proc/sys");
	/* podman's default sysctl, for the engine to write in the container's network namespace */
	cr_assert_str_eq(cfg.spec.sysctls[0], "net.ipv4.ping_group_range=0 0");
	cr_assert_null(cfg.spec.sysctls[1]);
	lb_oci_config_free(&cfg);
	free(text);
}

Test(oci_config, network_namespaces)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	const char *host =
	    "{\"ociVersion\":\"1.1.0\",\"root\":{\"path\":\"/r\"},\"process\":{\"args\":[\"a\"],"
	    "\"cwd\":\"/\",\"user\":{\"uid\":1000,\"gid\":1000}},\"linux\":{\"namespaces\":["
	    "{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},{\"type\":\"uts\"}]}}";
	cr_assert_eq(parse(host, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(cfg.spec.net, LB_NET_HOST);
	cr_assert_eq(cfg.spec.uid, 1000);
	lb_oci_config_free(&cfg);
	const char *join =
	    "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"/r\"},\"process\":{\"args\":[\"a\"],"
	    "\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0}},\"linux\":{\"namespaces\":["
	    "{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
	    "{\"type\":\"network\",\"path\":\"/run/netns/cni-1\"},{\"type\":\"cgroup\"}]}}";
	cr_assert_eq(parse(join, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(cfg.spec.net, LB_NET_OFF);
	cr_assert_str_eq(cfg.spec.netns_path, "/run/netns/cni-1");
	lb_oci_config_free(&cfg);
	/* a pod's container: the sandbox's ipc and uts joined too */
	const char *pod =
	    "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"/r\"},\"process\":{\"args\":[\"a\"],"
	    "\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0}},\"linux\":{\"namespaces\":["
	    "{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\",\"path\":\"/proc/7/ns/ipc\"},"
	    "{\"type\":\"uts\",\"path\":\"/proc/7/ns/uts\"},"
	    "{\"type\":\"network\",\"path\":\"/proc/7/ns/net\"}]}}";
	cr_assert_eq(parse(pod, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(cfg.spec.ipcns_path, "/proc/7/ns/ipc");
	cr_assert_str_eq(cfg.spec.utsns_path, "/proc/7/ns/uts");
	cr_assert(!cfg.spec.uts_host);
	lb_oci_config_free(&cfg);
	/* shareProcessNamespace: the pause container's pid namespace; a cgroup one joined too */
	const char *shared =
	    "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"/r\"},\"process\":{\"args\":[\"a\"],"
	    "\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0}},\"linux\":{\"namespaces\":["
	    "{\"type\":\"pid\",\"path\":\"/proc/7/ns/pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"
	    "{\"type\":\"uts\"},{\"type\":\"cgroup\",\"path\":\"/proc/7/ns/cgroup\"}]}}";
	cr_assert_eq(parse(shared, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(cfg.spec.pidns_path, "/proc/7/ns/pid");
	cr_assert_str_eq(cfg.spec.cgroupns_path, "/proc/7/ns/cgroup");
	cr_assert_null(cfg.spec.ipcns_path);
	lb_oci_config_free(&cfg);
	/* a pod's user namespace joined (with its pid one): maps optional, kept when given */
#define USERNS_JOINED(maps)                                                                        \
	"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"/r\"},\"process\":{\"args\":[\"a\"],"      \
	"\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0}},\"linux\":{\"namespaces\":["                \
	"{\"type\":\"pid\",\"path\":\"/proc/7/ns/pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"  \
	"{\"type\":\"uts\"},{\"type\":\"user\",\"path\":\"/proc/7/ns/user\"}]" maps "}}"
	cr_assert_eq(parse(USERNS_JOINED(""), &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(cfg.spec.userns_path, "/proc/7/ns/user");
	cr_assert_str_eq(cfg.spec.pidns_path, "/proc/7/ns/pid");
	cr_assert_eq(cfg.spec.n_uid_map, 0);
	lb_oci_config_free(&cfg);
	cr_assert_eq(parse(USERNS_JOINED(",\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,"
					 "\"size\":65536}],\"gidMappings\":[{\"containerID\":0,"
					 "\"hostID\":100000,\"size\":65536}]"),
			   &cfg, &err),
		     0, "%s", err ? err->msg : "");
	cr_assert_str_eq(cfg.spec.userns_path, "/proc/7/ns/user");
	cr_assert_eq(cfg.spec.n_uid_map, 1);
	cr_assert_eq(cfg.spec.uid_map[0].outside, 100000);
	lb_oci_config_free(&cfg);
#undef USERNS_JOINED
	/* containerd's CRI for a hostNetwork pod: no network and no uts namespace, the host's */
	const char *hostnet =
	    "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"/r\"},\"process\":{\"args\":[\"a\"],"
	    "\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0}},\"linux\":{\"namespaces\":["
	    "{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"mount\"}]}}";
	cr_assert_eq(parse(hostnet, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(cfg.spec.net, LB_NET_HOST);
	cr_assert(cfg.spec.uts_host);
	cr_assert_null(cfg.spec.utsns_path);
	lb_oci_config_free(&cfg);
}

struct bad {
	const char *lx, *proc, *top, *want;
};

/* Each is refused with one line naming the problem, and nothing is leaked. */
/* createContainer and startContainer hooks are accepted; hostile mask entries are kept for the
 * engine, which resolves them inside the root; empty lists are no lists. */
Test(oci_config, hooks_and_masks)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	char *text =
	    config(",\"maskedPaths\":[\"/../../etc/shadow\",\"/leak\"],\"readonlyPaths\":[]", "",
		   ",\"hooks\":{\"createContainer\":[{\"path\":\"/usr/bin/hook\","
		   "\"timeout\":5},{\"path\":\"/x\"}],\"startContainer\":["
		   "{\"path\":\"/sbin/ldconfig\"}]}");
	cr_assert_eq(parse(text, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(cfg.spec.masked_paths[0], "/../../etc/shadow");
	cr_assert_str_eq(cfg.spec.masked_paths[1], "/leak");
	cr_assert_null(cfg.spec.readonly_paths);
	cr_assert_not_null(cfg.hooks);
	cr_assert_null(cfg.spec.hooks); /* planned by create, not by the parser */
	lb_oci_config_free(&cfg);
	free(text);
}

Test(oci_config, hostile)
{
	static const struct bad bad[] = {
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":1}]", "", "",
	     "without a user namespace"},
	    {",\"namespaces\":[{\"type\":\"mount\",\"path\":\"/proc/1/ns/mnt\"}]", "", "",
	     "joining a mount"},
	    {",\"namespaces\":[{\"type\":\"pid\",\"path\":\"ns/pid\"}]", "", "", "not absolute"},
	    {",\"namespaces\":[{\"type\":\"pid\"}]", "", "", "sharing the host"},
	    {",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}]", "", "", "twice"},
	    {",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"
	     "{\"type\":\"uts\",\"path\":\"/proc/1/ns/uts\"}],\"x\":1},\"hostname\":\"h\",\"y\":{",
	     "", "", "hostname needs a new uts"},
	    {",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"}],"
	     "\"x\":1},\"hostname\":\"h\",\"y\":{",
	     "", "", "or the host's"},
	    {",\"namespaces\":[{\"type\":\"bogus\"}]", "", "", "unknown namespace"},
	    /* a value echoed in the refusal stays on its one line */
	    {",\"namespaces\":[{\"type\":\"ne\\netrk\"}]", "", "", "namespace type ne?etrk"},
	    {"", ",\"env\":[\"NO\\nEQUALS\"]", "", "'NO?EQUALS' is not KEY=VALUE"},
	    {",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"
	     "{\"type\":\"uts\"},{\"type\":\"network\",\"path\":\"netns\"}]",
	     "", "", "not absolute"},
	    {",\"namespaces\":\"pid\"", "", "", "must be an array"},
	    {",\"resources\":{\"memory\":{\"limit\":\"1g\"}}", "", "", "must be an integer"},
	    {",\"resources\":{\"memory\":{\"limit\":1024}}", "", "", "below lbbox's 32 MiB"},
	    {",\"resources\":{\"pids\":{\"limit\":1.5}}", "", "", "must be an integer"},
	    {",\"resources\":{\"cpu\":{\"quota\":10}}", "", "", "cpu quota"},
	    {",\"resources\":{\"unified\":{\"memory.max\":\"1\"}}", "", "", "unified"},
	    {",\"sysctl\":{\"kernel.core_pattern\":\"|/x\"}", "", "", "sysctl kernel.core_pattern"},
	    {",\"sysctl\":{\"kernel.domainname\":\"x\"}", "", "", "is not supported"},
	    {",\"sysctl\":{\"net..ipv4\":\"1\"}", "", "", "not a sysctl name"},
	    {",\"sysctl\":{\"net.ipv4/../../kernel/x\":\"1\"}", "", "", "not a sysctl name"},
	    {",\"sysctl\":{\"net.x=y\":\"1\"}", "", "", "not a sysctl name"},
	    {",\"sysctl\":{\"net.ipv4.ip_forward\":\"1\\n2\"}", "", "", "control character"},
	    {",\"sysctl\":{\"net.ipv4.ip_forward\":1}", "", "", "must be a string"},
	    {",\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"
	     "{\"type\":\"uts\"}],\"sysctl\":{\"net.ipv4.ip_forward\":\"1\"}",
	     "", "", "not the host's"},
	    {",\"devices\":[{\"path\":\"/dev/sda\",\"type\":\"b\"}]", "", "", "without major"},
	    {",\"devices\":[{\"path\":\"/etc/x\",\"type\":\"c\",\"major\":1,\"minor\":3}]", "", "",
	     "plain path below /dev/"},
	    {",\"devices\":[{\"path\":\"/dev/../etc/x\",\"type\":\"c\",\"major\":1,\"minor\":3}]",
	     "", "", "plain path below /dev/"},
	    {",\"devices\":[{\"path\":\"/dev/a\\nb\",\"type\":\"c\",\"major\":1,\"minor\":3}]", "",
	     "", "plain path below /dev/"},
	    {",\"devices\":[{\"path\":\"/dev/x\",\"type\":\"c\",\"major\":-1,\"minor\":3}]", "", "",
	     "out of range"},
	    {",\"devices\":[{\"path\":\"/dev/x\",\"type\":\"c\",\"major\":1,\"minor\":1048576}]",
	     "", "", "out of range"},
	    {",\"devices\":[{\"path\":\"/dev/x\",\"type\":\"s\",\"major\":1,\"minor\":3}]", "", "",
	     "type must be c, b, u or p"},
	    {",\"devices\":[{\"path\":\"/dev/x\",\"type\":\"c\",\"major\":1,\"minor\":3,"
	     "\"fileMode\":-1}]",
	     "", "", "out of range"},
	    {",\"devices\":{}", "", "", "must be an array"},
	    {",\"resources\":{\"devices\":[{\"allow\":true,\"access\":\"rwx\"}]}", "", "",
	     "made of r, w, m"},
	    {",\"resources\":{\"devices\":[{\"allow\":true,\"type\":\"u\"}]}", "", "",
	     "rule type must be a, c or b"},
	    {",\"resources\":{\"devices\":[{\"type\":\"c\"}]}", "", "", "without allow"},
	    {",\"resources\":{\"devices\":[{\"allow\":true,\"major\":-2}]}", "", "",
	     "out of range"},
	    {",\"maskedPaths\":[\"proc/kcore\"]", "", "", "not absolute"},
	    {",\"seccomp\":{\"listenerPath\":\"/x\"}", "", "", "listenerPath"},
	    {",\"cgroupsPath\":\"system.slice:lbbox\"", "", "", "not slice:prefix:name"},
	    {",\"resources\":{\"cpu\":{\"cpus\":\"1-0\"}}", "", "",
	     "cpuset cpus '1-0' is not a list"},
	    {",\"resources\":{\"cpu\":{\"mems\":\"a\"}}", "", "", "cpuset mems: a list holds"},
	    {",\"cgroupsPath\":\"a:b:c:d\"", "", "", "not slice:prefix:name"},
	    {",\"cgroupsPath\":\"system.slice:lbbox:\"", "", "", "no usable unit"},
	    {",\"cgroupsPath\":\"system.slice:lbbox:..\"", "", "", "no usable unit"},
	    {",\"cgroupsPath\":\"system.slice:lbbox:../../x\"", "", "", "no usable unit"},
	    {",\"cgroupsPath\":\"system.slice:a/b:x\"", "", "", "no usable unit"},
	    {",\"cgroupsPath\":\"system.slice:a:x\\ny\"", "", "", "no usable unit"},
	    {",\"cgroupsPath\":\"../x.slice:a:x\"", "", "", "not a slice name"},
	    {",\"cgroupsPath\":\"system:a:x\"", "", "", "not a slice name"},
	    {",\"cgroupsPath\":\".slice:a:x\"", "", "", "not a slice name"},
	    {",\"cgroupsPath\":\"a--b.slice:a:x\"", "", "", "not a slice name"},
	    {",\"cgroupsPath\":\"-a.slice:a:x\"", "", "", "not a slice name"},
	    {",\"cgroupsPath\":\"a-.slice:a:x\"", "", "", "not a slice name"},
	    {",\"cgroupsPath\":\"/a/../../x\"", "", "", "not usable"},
	    {",\"cgroupsPath\":\"/a/..\"", "", "", "not usable"},
	    {"", ",\"cwd\":\"relative\"", "", "duplicate"}, /* JSON_REJECT_DUPLICATES */
	    {"", ",\"args\":[]", "", "duplicate"},
	    {"", ",\"capabilities\":{\"bounding\":[\"CAP_BOGUS\"]}", "", "unknown capability"},
	    {"", ",\"capabilities\":{\"bounding\":[1]}", "", "must be a string"},
	    {"", ",\"rlimits\":[{\"type\":\"RLIMIT_X\",\"hard\":1,\"soft\":1}]", "",
	     "unknown rlimit"},
	    {"", ",\"rlimits\":[{\"type\":\"RLIMIT_nofile\",\"hard\":1,\"soft\":1}]", "",
	     "unknown rlimit"},
	    {"", ",\"rlimits\":[{\"type\":\"nofile\",\"hard\":1,\"soft\":1}]", "",
	     "unknown rlimit"},
	    {"", ",\"rlimits\":[{\"type\":\"RLIMIT_NOFILEXXXXXXXXXXXXXXX\",\"hard\":1,\"soft\":1}]",
	     "", "unknown rlimit"},
	    {"", ",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1,\"soft\":2}]", "",
	     "soft above hard"},
	    {"", ",\"env\":[\"NOEQUALS\"]", "", "KEY=VALUE"},
	    {"", ",\"env\":\"A=1\"", "", "must be an array"},
	    {"", ",\"terminal\":\"yes\"", "", "must be a boolean"},
	    {"", "", ",\"mounts\":[{\"destination\":\"data\",\"type\":\"bind\",\"source\":\"/x\"}]",
	     "not absolute"},
	    {"", "", ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"nfs\",\"source\":\"h:/\"}]",
	     "not supported"},
	    {"", "", ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"bind\"}]", "no source"},
	    {"", "",
	     ",\"mounts\":[{\"destination\":\"/x\",\"type\":\"tmpfs\",\"options\":["
	     "\"size=-1\"]}]",
	     "tmpfs option"},
	    {"", "", ",\"mounts\":{}", "must be an array"},
	    {"", "", ",\"hostname\":7", "must be a string"},
	    {"", "", ",\"hooks\":{\"startContainer\":[{\"path\":\"sbin/ldconfig\"}]}",
	     "not absolute"},
	    {"", "", ",\"hooks\":{\"createContainer\":[{\"path\":\"/x\",\"timeout\":0}]}",
	     "out of range"},
	    {"", "", ",\"hooks\":{\"prestart\":[{\"path\":\"true\"}]}", "not absolute"},
	    {"", "", ",\"hooks\":{\"bogus\":[]}", "unknown hook"},
	    {"", "", ",\"annotations\":{\"a\":1}", "not a string"},
	    {"", "", ",\"windows\":{}", "only Linux"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lb_oci_config cfg;
		struct lb_err *err = NULL;
		/* a namespaces entry replaces the default list (duplicate keys are refused) */
		char *text = NULL;
		if (!strncmp(bad[i].lx, ",\"namespaces\"", 13)) {
			cr_assert_gt(
			    asprintf(&text,
				     "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},"
				     "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":"
				     "{\"uid\":0,\"gid\":0}},\"linux\":{%s}}",
				     bad[i].lx + 1),
			    0);
		} else {
			text = config(bad[i].lx, bad[i].proc, bad[i].top);
		}
		cr_assert_lt(parse(text, &cfg, &err), 0, "accepted: %s", text);
		cr_assert_not_null(err);
		cr_assert_not_null(strstr(err->msg, bad[i].want), "'%s' lacks '%s'", err->msg,
				   bad[i].want);
		cr_assert_null(strchr(err->msg, '\n'), "one line: %s", err->msg);
		lb_err_free(&err);
		lb_oci_config_free(&cfg);
		free(text);
	}
}

Test(oci_config, malformed_documents)
{
	static const char *const docs[] = {
	    "",
	    "[]",
	    "{",
	    "null",
	    "{\"ociVersion\":\"2.0.0\"}",
	    "{\"ociVersion\":1}",
	    "{\"ociVersion\":\"1.0.0\"}",
	    "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"\"}}",
	    "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"}}",
	    "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\"},\"process\":{\"args\":[\"a\"],"
	    "\"cwd\":\"/\",\"user\":{\"uid\":-1}}}",
	    "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\\u0000x\"}}",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct lb_oci_config cfg;
		struct lb_err *err = NULL;
		cr_assert_lt(parse(docs[i], &cfg, &err), 0, "accepted: %s", docs[i]);
		cr_assert_null(strchr(err->msg, '\n'));
		lb_err_free(&err);
		lb_oci_config_free(&cfg);
	}
}

/* Huge arrays are refused by count before anything is copied; an oversized document by size. */
Test(oci_config, huge)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	size_t n = 70000, len = 0;
	char *args = malloc(n * 4 + 64), *text;
	len += (size_t)sprintf(args, ",\"env\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(args + len, "%s\"a\"", i ? "," : "");
	strcpy(args + len, "]");
	text = config("", args, "");
	cr_assert_lt(parse(text, &cfg, &err), 0);
	cr_assert_not_null(strstr(err->msg, "more than"), "%s", err->msg);
	lb_err_free(&err);
	lb_oci_config_free(&cfg);
	free(text);
	free(args);

	size_t big = LB_OCI_CONFIG_MAX + 1;
	char *doc = malloc(big + 1);
	memset(doc, ' ', big);
	doc[big] = '\0';
	cr_assert_lt(lb_oci_config_parse(BUNDLE, doc, big, &cfg, &err), 0);
	cr_assert_not_null(strstr(err->msg, "larger than"));
	lb_err_free(&err);
	lb_oci_config_free(&cfg);
	free(doc);
}

Test(oci_config, ids)
{
	static const char *const ok[] = {"a", "abc-DEF_1.2+3", "0123456789abcdef"};
	static const char *const bad[] = {"", ".", "..", ".hidden", "a/b", "a b", "-x", "a\n"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert_eq(lb_oci_check_id(ok[i], NULL), 0, "%s", ok[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_lt(lb_oci_check_id(bad[i], NULL), 0, "%s", bad[i]);
	char longid[LB_OCI_ID_MAX + 2];
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	cr_assert_lt(lb_oci_check_id(longid, NULL), 0);
}

Test(oci_config, exec_process)
{
	struct lb_oci_process p;
	struct lb_err *err = NULL;
	const char *ok = "{\"args\":[\"ls\",\"-l\"],\"env\":[\"A=1\"],\"cwd\":\"/tmp\","
			 "\"terminal\":true,\"user\":{\"uid\":0,\"gid\":0}}";
	cr_assert_eq(lb_oci_process_parse(ok, strlen(ok), &p, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(p.argv[1], "-l");
	cr_assert_str_eq(p.cwd, "/tmp");
	cr_assert(p.terminal);
	lb_oci_process_free(&p);
	const char *bad = "{\"args\":[],\"cwd\":\"/\"}";
	cr_assert_lt(lb_oci_process_parse(bad, strlen(bad), &p, &err), 0);
	lb_err_free(&err);
	lb_oci_process_free(&p);
}

/* The default namespaces plus a new user one, with these maps (JSON members, or ""). */
static char *userns_config(const char *maps, const char *user)
{
	char *s = NULL;
	cr_assert_gt(asprintf(&s,
			      "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},"
			      "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":%s},"
			      "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},"
			      "{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"user\"}]%s}}",
			      user, maps),
		     0);
	return s;
}

/* podman run --uidmap 0:100000:65536 (and a second range, as --uidmap may be repeated). */
Test(oci_config, user_namespace)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	char *text =
	    userns_config(",\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536},"
			  "{\"containerID\":65536,\"hostID\":300000,\"size\":1}],"
			  "\"gidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}]",
			  "{\"uid\":65536,\"gid\":5}");
	cr_assert_eq(parse(text, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(cfg.spec.n_uid_map, 2);
	cr_assert_eq(cfg.spec.n_gid_map, 1);
	cr_assert_eq(cfg.spec.uid_map[0].outside, 100000);
	cr_assert_eq(cfg.spec.uid_map[0].count, 65536);
	cr_assert_eq(cfg.spec.uid_map[1].inside, 65536);
	cr_assert_eq(cfg.spec.uid_map[1].outside, 300000);
	cr_assert_eq(cfg.spec.gid_map[0].inside, 0);
	lb_oci_config_free(&cfg);
	free(text);
	/* the host's root mapped on purpose (as runc allows): the caller's choice */
	text = userns_config(",\"uidMappings\":[{\"containerID\":0,\"hostID\":0,\"size\":1}],"
			     "\"gidMappings\":[{\"containerID\":0,\"hostID\":0,\"size\":1}]",
			     "{\"uid\":0,\"gid\":0}");
	cr_assert_eq(parse(text, &cfg, &err), 0, "%s", err ? err->msg : "");
	lb_oci_config_free(&cfg);
	free(text);
}

static char *many_ranges(size_t n, uint64_t inside0, uint64_t outside0)
{
	size_t cap = 64 + n * 96, len = 0;
	char *s = malloc(cap);
	cr_assert_not_null(s);
	len += (size_t)snprintf(s, cap,
				",\"gidMappings\":[{\"containerID\":0,\"hostID\":1,"
				"\"size\":1}],\"uidMappings\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len,
					"%s{\"containerID\":%llu,\"hostID\":%llu,\"size\":1}",
					i ? "," : "", (unsigned long long)(inside0 + i),
					(unsigned long long)(outside0 + i));
	snprintf(s + len, cap - len, "]");
	return s;
}

/* Hostile maps: each refused with one line before anything exists, nothing leaked (ASan). */
Test(oci_config, hostile_id_maps)
{
	static const char gid[] = ",\"gidMappings\":[{\"containerID\":0,\"hostID\":1,\"size\":9}]";
	static const struct {
		const char *uid, *user, *want;
	} bad[] = {
	    {"", "{\"uid\":0,\"gid\":0}", "needs linux.uidMappings"},
	    {",\"uidMappings\":[]", "{\"uid\":0,\"gid\":0}", "needs linux.uidMappings"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":0}]",
	     "{\"uid\":0,\"gid\":0}", "size 0"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":10},"
	     "{\"containerID\":5,\"hostID\":5000,\"size\":10}]",
	     "{\"uid\":0,\"gid\":0}", "overlap"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":10},"
	     "{\"containerID\":100,\"hostID\":1009,\"size\":10}]",
	     "{\"uid\":0,\"gid\":0}", "overlap"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":4294967295,\"size\":1}]",
	     "{\"uid\":0,\"gid\":0}", "goes past"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":1,\"size\":4294967295}]",
	     "{\"uid\":0,\"gid\":0}", "goes past"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":4294967296,\"size\":1}]",
	     "{\"uid\":0,\"gid\":0}", "out of range"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":-1,\"size\":1}]",
	     "{\"uid\":0,\"gid\":0}", "out of range"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":\"1\",\"size\":1}]",
	     "{\"uid\":0,\"gid\":0}", "must be an integer"},
	    {",\"uidMappings\":[{\"containerID\":0,\"size\":1}]", "{\"uid\":0,\"gid\":0}",
	     "no hostID"},
	    {",\"uidMappings\":[7]", "{\"uid\":0,\"gid\":0}", "must be objects"},
	    {",\"uidMappings\":{}", "{\"uid\":0,\"gid\":0}", "must be an array"},
	    {",\"uidMappings\":[{\"containerID\":1,\"hostID\":1000,\"size\":10}]",
	     "{\"uid\":1,\"gid\":0}", "must map 0"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":10}]",
	     "{\"uid\":10,\"gid\":0}", "not mapped"},
	    {",\"uidMappings\":[{\"containerID\":0,\"hostID\":1000,\"size\":10}]",
	     "{\"uid\":0,\"gid\":9}", "not mapped"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) + 4; i++) {
		struct lb_oci_config cfg;
		struct lb_err *err = NULL;
		char *maps = NULL, *text;
		const char *want;
		if (i < sizeof(bad) / sizeof(bad[0])) {
			cr_assert_gt(asprintf(&maps, "%s%s", bad[i].uid, gid), 0);
			text = userns_config(maps, bad[i].user);
			want = bad[i].want;
		} else if (i ==
			   sizeof(bad) / sizeof(bad[0])) { /* one range over the kernel's 340 */
			maps = many_ranges(LB_MAX_ID_MAPS + 1, 0, 1000);
			text = userns_config(maps, "{\"uid\":0,\"gid\":0}");
			want = "at most 340";
		} else if (i ==
			   sizeof(bad) / sizeof(bad[0]) + 1) { /* 340 ranges, too long a text */
			maps = many_ranges(LB_MAX_ID_MAPS, 4000000000ULL, 3000000000ULL);
			text = userns_config(maps, "{\"uid\":4000000000,\"gid\":0}");
			want = "too long";
		} else if (i == sizeof(bad) / sizeof(bad[0]) + 3) {
			/* a joined pid namespace: a new user namespace could not mount its procfs
			 */
			text = strdup(
			    "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},"
			    "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":"
			    "{\"uid\":0,\"gid\":0}},\"linux\":{\"namespaces\":["
			    "{\"type\":\"pid\",\"path\":\"/proc/7/ns/pid\"},{\"type\":\"mount\"},"
			    "{\"type\":\"ipc\"},{\"type\":\"user\"}],\"uidMappings\":[{"
			    "\"containerID\":0,\"hostID\":100000,\"size\":65536}],"
			    "\"gidMappings\":[{\"containerID\":0,\"hostID\":100000,"
			    "\"size\":65536}]}}");
			want = "joined pid namespace with a new user namespace";
		} else { /* a mount namespace joined by path */
			text = strdup("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},"
				      "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":"
				      "{\"uid\":0,\"gid\":0}},\"linux\":{\"namespaces\":["
				      "{\"type\":\"mount\",\"path\":\"/proc/1/ns/mnt\"}]}}");
			want = "joining a mount namespace is not supported";
		}
		cr_assert_lt(parse(text, &cfg, &err), 0, "accepted: %s", text);
		cr_assert_not_null(err);
		cr_assert_not_null(strstr(err->msg, want), "'%s' lacks '%s'", err->msg, want);
		cr_assert_null(strchr(err->msg, '\n'), "one line: %s", err->msg);
		lb_err_free(&err);
		lb_oci_config_free(&cfg);
		free(maps);
		free(text);
	}
}

/* update's LinuxResources: runc's zero = unchanged, -1 = no limit; what lbbox cannot apply is
 * refused with one line. */
Test(oci_config, update_resources)
{
	struct lb_cgroup_update u;
	struct lb_err *err = NULL;
	const char *ok = "{\"memory\":{\"limit\":67108864,\"swap\":-1,\"reservation\":0},"
			 "\"pids\":{\"limit\":-1},\"cpu\":{\"quota\":50000,\"period\":100000,"
			 "\"shares\":512,\"cpus\":\"\"},\"devices\":[{\"allow\":false}],"
			 "\"blockIO\":{\"weight\":0},\"unified\":{}}";
	cr_assert_eq(lb_oci_resources_parse(ok, strlen(ok), &u, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert_eq(u.memory, 64 << 20);
	cr_assert_eq(u.memory_swap, -1);
	cr_assert_eq(u.pids, -1);
	cr_assert_eq(u.cpu_quota, 50000);
	cr_assert_eq(u.cpu_period, 100000);
	cr_assert_eq(u.cpu_shares, 512);
	cr_assert_str_empty(u.cpus);
	const char *pin = "{\"cpu\":{\"cpus\":\"0-1\",\"mems\":\"0\"}}";
	cr_assert_eq(lb_oci_resources_parse(pin, strlen(pin), &u, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert_str_eq(u.cpus, "0-1");
	cr_assert_str_eq(u.mems, "0");
	static const char *const bad[] = {
	    "[]",
	    "{\"memory\":{\"limit\":1024}}",
	    "{\"memory\":{\"limit\":-2}}",
	    "{\"memory\":{\"swap\":134217728}}",
	    "{\"memory\":{\"limit\":67108864,\"swap\":1}}",
	    "{\"memory\":{\"kernel\":1}}",
	    "{\"memory\":{\"limit\":\"64m\"}}",
	    "{\"cpu\":{\"cpus\":\"1-0\"}}",
	    "{\"cpu\":{\"mems\":\"9999\"}}",
	    "{\"cpu\":{\"shares\":1}}",
	    "{\"cpu\":{\"period\":10}}",
	    "{\"cpu\":{\"quota\":10}}",
	    "{\"cpu\":{\"realtimeRuntime\":5}}",
	    "{\"pids\":{\"limit\":-7}}",
	    "{\"unified\":{\"memory.high\":\"1\"}}",
	    "{\"hugepageLimits\":[{\"pageSize\":\"2MB\",\"limit\":1}]}",
	    "{\"blockIO\":{\"weight\":10}}",
	    "{\"rdma\":{\"x\":{}}}",
	    "{\"devices\":{}}",
	    "{\"devices\":[{\"allow\":true,\"access\":\"x\"}]}",
	    "{\"pids\":{\"limit\":1},\"pids\":{\"limit\":2}}",
	    "{\"memory\":{\"kernel\":1},\"x\":\"\\n\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_lt(lb_oci_resources_parse(bad[i], strlen(bad[i]), &u, &err), 0, "%s",
			     bad[i]);
		cr_assert_not_null(err);
		cr_assert_null(strchr(err->msg, '\n'), "%s", err->msg);
		lb_err_free(&err);
	}
}

/* systemd's slice:prefix:name as runc lays it out in cgroupfs. */
Test(oci_config, systemd_cgroups_path)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"system.slice:libpod:abc", "/system.slice/libpod-abc.scope"},
	    {":libpod:abc", "/system.slice/libpod-abc.scope"},
	    {"machine.slice::abc", "/machine.slice/abc.scope"},
	    {"-.slice:p:x", "/p-x.scope"},
	    {"kubepods-besteffort-pod1.slice:cri-containerd:c1",
	     "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/"
	     "cri-containerd-c1.scope"},
	    {"user.slice:p:sub.slice", "/user.slice/sub.slice"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lb_oci_config cfg;
		struct lb_err *err = NULL;
		char lx[256];
		snprintf(lx, sizeof(lx), ",\"cgroupsPath\":\"%s\"", cases[i].in);
		char *text = config(lx, "", "");
		cr_assert_eq(parse(text, &cfg, &err), 0, "%s: %s", cases[i].in,
			     err ? err->msg : "");
		cr_assert_str_eq(cfg.cgroups_path, cases[i].out);
		lb_oci_config_free(&cfg);
		free(text);
	}
}

/* process.user.umask (0022 when absent, as runc), oomScoreAdj, and security labels: accepted
 * empty, refused (one line) when set, as lbbox applies none. */
Test(oci_config, process_fields)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	char *text = config("", "", "");
	cr_assert_eq(parse(text, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert(cfg.spec.umask_set && cfg.spec.umask == 022, "runc's default umask");
	cr_assert_not(cfg.spec.oom_score_adj_set);
	lb_oci_config_free(&cfg);
	free(text);

	const char *ok = "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\"},"
			 "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"uid\":0,"
			 "\"gid\":0,\"umask\":63},\"oomScoreAdj\":-1000,"
			 "\"apparmorProfile\":\"unconfined\","
			 "\"selinuxLabel\":\"\"},\"linux\":{\"mountLabel\":\"\","
			 "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},"
			 "{\"type\":\"ipc\"},{\"type\":\"uts\"}]}}";
	cr_assert_eq(parse(ok, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert(cfg.spec.umask_set && cfg.spec.umask == 077);
	cr_assert(cfg.spec.oom_score_adj_set && cfg.spec.oom_score_adj == -1000);
	lb_oci_config_free(&cfg);

	static const char *const bad[][2] = {
	    {"", ",\"oomScoreAdj\":1001"},
	    {"", ",\"oomScoreAdj\":\"500\""},
	    {"", ",\"apparmorProfile\":\"docker-default\""},
	    {"", ",\"selinuxLabel\":\"system_u:system_r:container_t:s0\""},
	    {",\"mountLabel\":\"system_u:object_r:container_file_t:s0\"", ""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		text = config(bad[i][0], bad[i][1], "");
		cr_expect_lt(parse(text, &cfg, &err), 0, "bad[%zu] accepted", i);
		cr_expect(err && !strchr(err->msg, '\n'), "bad[%zu]: one line", i);
		lb_err_free(&err);
		lb_oci_config_free(&cfg);
		free(text);
	}
	const char *umask = "{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0,"
			    "\"umask\":512}}";
	struct lb_oci_process p;
	cr_assert_lt(lb_oci_process_parse(umask, strlen(umask), &p, &err), 0, "umask 01000");
	lb_err_free(&err);
	lb_oci_process_free(&p);
	umask = "{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0,\"umask\":18}}";
	cr_assert_eq(lb_oci_process_parse(umask, strlen(umask), &p, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert(p.set_umask && p.umask == 022);
	lb_oci_process_free(&p);
}

/* resources.devices as the runtime-spec reads it: in order, the last matching rule decides each
 * access bit; type a and major/minor -1 (or absent) match anything. */
Test(oci_config, device_rules_last_match_wins)
{
	const struct lb_oci_dev_rule podman[] = {
	    {false, 'a', -1, -1, LB_DEV_RWM}, /* deny everything */
	    {true, 'c', -1, -1, LB_DEV_MKNOD},
	    {true, 'b', -1, -1, LB_DEV_MKNOD},
	    {true, 'c', 10, 229, LB_DEV_RWM}, /* --device /dev/fuse */
	};
	cr_expect_eq(lb_oci_device_access(podman, 4, 'c', 10, 229), LB_DEV_RWM);
	cr_expect_eq(lb_oci_device_access(podman, 4, 'c', 10, 200), LB_DEV_MKNOD);
	cr_expect_eq(lb_oci_device_access(podman, 4, 'b', 10, 229), LB_DEV_MKNOD);
	const struct lb_oci_dev_rule later_deny[] = {
	    {true, 'a', -1, -1, LB_DEV_RWM},
	    {false, 'c', 10, -1, LB_DEV_WRITE},
	    {true, 'c', 10, 200, LB_DEV_WRITE},
	};
	cr_expect_eq(lb_oci_device_access(later_deny, 3, 'c', 10, 229), LB_DEV_READ | LB_DEV_MKNOD);
	cr_expect_eq(lb_oci_device_access(later_deny, 3, 'c', 10, 200), LB_DEV_RWM);
	cr_expect_eq(lb_oci_device_access(later_deny, 3, 'b', 10, 229), LB_DEV_RWM);
	const struct lb_oci_dev_rule deny_last[] = {
	    {true, 'c', 10, 229, LB_DEV_RWM},
	    {false, 'a', -1, -1, LB_DEV_RWM},
	};
	cr_expect_eq(lb_oci_device_access(deny_last, 2, 'c', 10, 229), 0);
	cr_expect_eq(lb_oci_device_access(NULL, 0, 'c', 10, 229), 0, "no rule grants nothing");
}

/* linux.devices through the parser: each entry with what the rules grant it; a wildcard allow
 * reaches only listed devices (the spec lists no other). */
Test(oci_config, devices)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	const char *lx =
	    ",\"devices\":[{\"path\":\"/dev/fuse\",\"type\":\"c\",\"major\":10,\"minor\":229,"
	    "\"fileMode\":8630,\"uid\":5,\"gid\":6},"
	    "{\"path\":\"/dev/net/tun\",\"type\":\"u\",\"major\":10,\"minor\":200},"
	    "{\"path\":\"/dev/sdz\",\"type\":\"b\",\"major\":8,\"minor\":0},"
	    "{\"path\":\"/dev/pipe\",\"type\":\"p\"}],"
	    "\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"},"
	    "{\"allow\":true,\"type\":\"c\",\"major\":10,\"minor\":229,\"access\":\"rw\"},"
	    "{\"allow\":true,\"type\":\"c\",\"access\":\"m\"},"
	    "{\"allow\":true,\"type\":\"c\",\"major\":10,\"minor\":200}]}";
	char *text = config(lx, "", "");
	cr_assert_eq(parse(text, &cfg, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(cfg.spec.n_devices, 4);
	const struct lb_device *d = cfg.spec.devices;
	cr_expect_str_eq(d[0].path, "/dev/fuse");
	cr_expect(d[0].type == 'c' && d[0].major == 10 && d[0].minor == 229);
	cr_expect_eq(d[0].mode, 0666, "fileMode's type bits dropped: %o", d[0].mode);
	cr_expect(d[0].uid == 5 && d[0].gid == 6);
	cr_expect_eq(d[0].access, LB_DEV_READ | LB_DEV_WRITE | LB_DEV_MKNOD);
	cr_expect(d[1].type == 'c' && d[1].access == LB_DEV_RWM, "u is c; an absent access is rwm");
	cr_expect_eq(d[1].mode, 0666, "default mode");
	cr_expect_eq(d[2].access, 0, "the block device: no rule grants it");
	cr_expect(d[3].type == 'p' && d[3].access == 0);
	lb_oci_config_free(&cfg);
	free(text);
}

/* More than LB_MAX_DEVICES entries: refused before anything is made. */
Test(oci_config, devices_capped)
{
	struct lb_oci_config cfg;
	struct lb_err *err = NULL;
	size_t cap = 64 * 80 + 64;
	char *lx = malloc(cap);
	size_t n = (size_t)snprintf(lx, cap, ",\"devices\":[");
	for (int i = 0; i < LB_MAX_DEVICES + 1; i++)
		n += (size_t)snprintf(lx + n, cap - n, "%s{\"path\":\"/dev/d%d\",\"type\":\"p\"}",
				      i ? "," : "", i);
	snprintf(lx + n, cap - n, "]");
	char *text = config(lx, "", "");
	cr_assert_lt(parse(text, &cfg, &err), 0);
	cr_expect_not_null(strstr(err->msg, "more than 64"), "%s", err->msg);
	lb_err_free(&err);
	lb_oci_config_free(&cfg);
	free(text);
	free(lx);
}
