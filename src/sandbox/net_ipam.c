/*
 * Address allocation of network "on": <runroot>/net/<bridge>.json holds the network's state
 * and one lease per sandbox (address, sandbox id, pid 1 and its start time). Every change
 * happens under an flock of the runroot directory itself: it is never removed, so no lock file
 * is left behind and a waiter can never hold a lock on a deleted file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "engine.h"
#include "net_internal.h"

int lb_net_lock(const char *runroot, int *fd, struct lb_err **err)
{
	if (lb_mkdir_p(runroot, 0700, err) < 0)
		return -1;
	int d = open(runroot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return lb_err_set(err, errno, "open %s", runroot);
	while (flock(d, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(d);
			return lb_err_set(err, e, "lock %s", runroot);
		}
	}
	*fd = d;
	return 0;
}

static void state_path(const struct lb_net_cfg *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "%s/net/%s.json", cfg->runroot, cfg->bridge);
}

int lb_net_state_load(const struct lb_net_cfg *cfg, json_t **out, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	json_error_t jerr;
	state_path(cfg, path, sizeof(path));
	*out = NULL;
	json_t *st = json_load_file(path, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!st && access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	if (!st || !json_is_array(json_object_get(st, "leases"))) {
		json_decref(st);
		return lb_err_set(err, 0, "network state %s is corrupt: %s", path, jerr.text);
	}
	*out = st;
	return 0;
}

/*
 * Rewritten in place, not temp file + rename (which costs 0.4-0.7 ms here, twice per sandbox):
 * every reader and writer holds the lock, and a writer killed between write and ftruncate
 * leaves only trailing bytes after a complete document, which the reader ignores.
 */
int lb_net_state_save(const struct lb_net_cfg *cfg, json_t *st, struct lb_err **err)
{
	char path[LB_PATH_BUF], dir[LB_PATH_BUF];
	snprintf(dir, sizeof(dir), "%s/net", cfg->runroot);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "mkdir %s", dir);
	state_path(cfg, path, sizeof(path));
	_cleanup_free_ char *text = json_dumps(st, JSON_COMPACT);
	if (!text)
		return lb_err_set(err, ENOMEM, "network state");
	size_t len = strlen(text);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return lb_err_set(err, errno, "open %s", path);
	if (lb_write_all(fd, text, len) < 0 || ftruncate(fd, (off_t)len) < 0)
		return lb_err_set(err, errno, "write %s", path);
	return 0;
}

int lb_net_state_remove(const struct lb_net_cfg *cfg, struct lb_err **err)
{
	char path[LB_PATH_BUF], dir[LB_PATH_BUF];
	state_path(cfg, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		return lb_err_set(err, errno, "remove %s", path);
	/* the directory goes with its last network, so an unused runroot stays empty */
	snprintf(dir, sizeof(dir), "%s/net", cfg->runroot);
	if (rmdir(dir) < 0 && errno != ENOENT && errno != ENOTEMPTY)
		return lb_err_set(err, errno, "remove %s", dir);
	return 0;
}

json_t *lb_net_state_new(const struct lb_net_cfg *cfg)
{
	char sub[16], gw[16], cidr[24];
	lb_ip4_str(cfg->subnet, sub);
	snprintf(cidr, sizeof(cidr), "%s/%u", sub, cfg->prefix);
	return json_pack("{s:s, s:s, s:s, s:i, s:i, s:[], s:[], s:i}", "bridge", cfg->bridge,
			 "subnet", cidr, "gateway", lb_ip4_str(cfg->gateway, gw), "next", 2,
			 "ip_forward_was", -1, "dns", "leases", "table", LB_NFT_TABLE_VERSION);
}

static bool lease_alive(json_t *l)
{
	pid_t pid = (pid_t)json_integer_value(json_object_get(l, "pid"));
	uint64_t start = (uint64_t)json_integer_value(json_object_get(l, "pid_start"));
	uint64_t now = pid > 0 ? lb_proc_starttime(pid) : 0;
	return now != 0 && now == start;
}

static bool lease_has_allow(json_t *l)
{
	return json_array_size(json_object_get(l, "allow")) > 0 ||
	       json_array_size(json_object_get(l, "dns")) > 0 ||
	       json_array_size(json_object_get(l, "publish")) > 0;
}

bool lb_ipam_prune_dead(json_t *st, bool *removed_any)
{
	json_t *leases = json_object_get(st, "leases");
	bool allow = false;
	*removed_any = false;
	for (size_t i = 0; i < json_array_size(leases);) {
		json_t *l = json_array_get(leases, i);
		if (lease_alive(l)) {
			i++;
			continue;
		}
		allow |= lease_has_allow(l);
		*removed_any = true;
		json_array_remove(leases, i);
	}
	return allow;
}

static bool addr_taken(json_t *leases, const char *addr)
{
	size_t i;
	json_t *l;
	json_array_foreach(leases, i, l)
	{
		if (strcmp(json_string_value(json_object_get(l, "address")) ?: "", addr) == 0)
			return true;
	}
	return false;
}

/*
 * Offsets 0 (network), 1 (gateway) and the last (broadcast) are never given out. Round robin
 * from "next": a freed address is reused last, when the host's neighbour entry for it is long
 * gone (and eth0's MAC is derived from the address anyway, so a stale entry would still match).
 */
int lb_ipam_alloc(const struct lb_net_cfg *cfg, json_t *st, uint32_t *addr, struct lb_err **err)
{
	json_t *leases = json_object_get(st, "leases");
	uint32_t size = 1U << (32 - cfg->prefix), first = 2, last = size - 2;
	uint32_t next = (uint32_t)json_integer_value(json_object_get(st, "next"));
	char buf[16];
	if (next < first || next > last)
		next = first;
	for (uint32_t n = 0; n <= last - first; n++) {
		uint32_t off = next + n > last ? next + n - (last - first + 1) : next + n;
		if (addr_taken(leases, lb_ip4_str(cfg->subnet + off, buf)))
			continue;
		*addr = cfg->subnet + off;
		json_object_set_new(st, "next", json_integer(off + 1 > last ? first : off + 1));
		return 0;
	}
	lb_ip4_str(cfg->subnet, buf);
	return lb_err_set(err, 0, "network %s: address pool %s/%u exhausted (%u sandboxes)",
			  cfg->bridge, buf, cfg->prefix, last - first + 1);
}

static json_t *allow_json(const struct lb_net_opts *o)
{
	json_t *a = json_array();
	char ip[16], s[32];
	for (size_t i = 0; i < o->n_allow; i++) {
		lb_ip4_str(o->allow[i].addr, ip);
		if (o->allow[i].port)
			snprintf(s, sizeof(s), "%s:%u", ip, o->allow[i].port);
		else
			snprintf(s, sizeof(s), "%s", ip);
		json_array_append_new(a, json_string(s));
	}
	return a;
}

static json_t *dns_json(const struct lb_net_opts *o)
{
	json_t *a = json_array();
	char ip[16];
	for (size_t i = 0; i < o->n_dns; i++)
		json_array_append_new(a, json_string(lb_ip4_str(o->dns[i], ip)));
	return a;
}

void lb_ipam_add_lease(json_t *st, uint32_t addr, const char *id, pid_t pid,
		       const struct lb_net_opts *o)
{
	char ip[16];
	json_array_append_new(
	    json_object_get(st, "leases"),
	    json_pack("{s:s, s:s, s:i, s:I, s:o, s:o, s:o}", "address", lb_ip4_str(addr, ip), "id",
		      id, "pid", (int)pid, "pid_start", (json_int_t)lb_proc_starttime(pid), "allow",
		      allow_json(o), "dns", dns_json(o), "publish", lb_publish_json(o)));
}

bool lb_ipam_release(json_t *st, uint32_t addr)
{
	json_t *leases = json_object_get(st, "leases");
	char ip[16];
	lb_ip4_str(addr, ip);
	for (size_t i = 0; i < json_array_size(leases); i++) {
		json_t *l = json_array_get(leases, i);
		if (strcmp(json_string_value(json_object_get(l, "address")) ?: "", ip) != 0)
			continue;
		bool allow = lease_has_allow(l);
		json_array_remove(leases, i);
		return allow;
	}
	return false;
}

size_t lb_ipam_count(json_t *st)
{
	return json_array_size(json_object_get(st, "leases"));
}

bool lb_ipam_has_allows(json_t *st)
{
	size_t i;
	json_t *l;
	json_array_foreach(json_object_get(st, "leases"), i, l)
	{
		if (lease_has_allow(l))
			return true;
	}
	return false;
}
