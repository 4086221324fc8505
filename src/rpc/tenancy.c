/*
 * The tenancy envelope (§6.7): a request's context names the LangBot instance, the Workspace
 * and its placement generation; logical session ids become physical ones under the Workspace's
 * prefix ("ws-<sha256(instance \0 workspace)[:24]>-g<generation>-<id>") and replies are mapped
 * back, so Workspaces never see or touch each other's sessions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/hash.h"
#include "lbbox/rpc/rpc.h"

#define PERM "PermissionError"

static int copy_field(const json_t *ctx, const char *key, char *out, size_t len,
		      struct lb_err **err)
{
	const char *s = json_string_value(json_object_get(ctx, key));
	if (!s || !*s || strlen(s) >= len)
		return lb_err_box(err, PERM,
				  "Box tenant action requires a trusted Workspace context");
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

int lb_rpc_context_parse(const json_t *ctx, struct lb_rpc_context *out, struct lb_err **err)
{
	memset(out, 0, sizeof(*out));
	if (!json_is_object(ctx))
		return lb_err_box(err, PERM,
				  "Box tenant action requires a trusted Workspace context");
	if (copy_field(ctx, "instance_uuid", out->instance, sizeof(out->instance), err) < 0 ||
	    copy_field(ctx, "workspace_uuid", out->workspace, sizeof(out->workspace), err) < 0)
		return -1;
	json_t *g = json_object_get(ctx, "placement_generation");
	if (!json_is_integer(g) || json_integer_value(g) < 0)
		return lb_err_box(err, PERM,
				  "Box tenant action requires a trusted Workspace context");
	out->generation = json_integer_value(g);
	/* sha256(instance "\0" workspace), as the SDK hashes it */
	size_t a = strlen(out->instance), b = strlen(out->workspace);
	char buf[sizeof(out->instance) + sizeof(out->workspace)], hex[65];
	memcpy(buf, out->instance, a);
	buf[a] = '\0';
	memcpy(buf + a + 1, out->workspace, b);
	lb_sha256_hex(buf, a + 1 + b, hex);
	snprintf(out->prefix, sizeof(out->prefix), "ws-%.24s-g%lld", hex,
		 (long long)out->generation);
	return 0;
}

static bool valid_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

int lb_rpc_physical_id(const struct lb_rpc_context *c, const char *logical, char **out,
		       struct lb_err **err)
{
	size_t n = strlen(logical), k = 0;
	char *s = malloc(n + 1);
	if (!s)
		return lb_err_set(err, ENOMEM, "session id");
	/* runs of invalid characters become one "-"; then "-" is stripped from both ends */
	for (size_t i = 0; i < n; i++) {
		if (valid_char(logical[i]))
			s[k++] = logical[i];
		else if (k == 0 || s[k - 1] != '-' || valid_char(logical[i - 1]))
			s[k++] = '-';
	}
	s[k] = '\0';
	size_t start = strspn(s, "-");
	while (k > start && s[k - 1] == '-')
		s[--k] = '\0';
	if (k == start) {
		free(s);
		return lb_err_box(err, "ValueError",
				  "Box session_id must contain a valid character");
	}
	int r = asprintf(out, "%s-%s", c->prefix, s + start);
	free(s);
	return r < 0 ? lb_err_set(err, ENOMEM, "session id") : 0;
}

void lb_rpc_map_back(json_t *j, const char *prefix)
{
	size_t plen = strlen(prefix), i;
	const char *key;
	json_t *v;
	if (json_is_array(j)) {
		json_array_foreach(j, i, v) lb_rpc_map_back(v, prefix);
		return;
	}
	json_object_foreach(j, key, v)
	{
		const char *s = json_string_value(v);
		if (!strcmp(key, "session_id") && s && !strncmp(s, prefix, plen) && s[plen] == '-')
			json_object_set_new(j, key, json_string(s + plen + 1));
		else
			lb_rpc_map_back(v, prefix);
	}
}
