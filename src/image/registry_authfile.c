/* Basic credentials from a Docker-style config.json ({"auths": {"host": {"auth": base64}}}), as
 * `docker login` and `podman login` write it. */
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

#define AUTH_FILE_MAX (1u << 20)

/* docker.io's credentials are filed under any of the names Docker has used for it. */
static bool is_docker_hub(const char *h, size_t n)
{
	static const char *const names[] = {"docker.io", "index.docker.io", "registry-1.docker.io"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && strncasecmp(names[i], h, n) == 0)
			return true;
	return false;
}

/* Keys are "host", "host:port", "https://host/v1/" ...: compare the host[:port] part. */
static bool key_matches(const char *key, const char *host)
{
	const char *k = strstr(key, "://");
	size_t n;

	k = k ? k + 3 : key;
	n = strcspn(k, "/");
	if (strlen(host) == n && strncasecmp(k, host, n) == 0)
		return true;
	return is_docker_hub(k, n) && is_docker_hub(host, strlen(host));
}

static int encode_userpass(const char *user, const char *pass, char **out, struct lb_err **err)
{
	_cleanup_free_ char *plain = NULL;
	int n = asprintf(&plain, "%s:%s", user, pass);

	if (n < 0)
		return lb_err_set(err, ENOMEM, "credentials");
	char *b64 = malloc(4 * ((size_t)n / 3 + 1) + 1);
	if (!b64)
		return lb_err_set(err, ENOMEM, "credentials");
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)plain, n);
	*out = b64;
	return 0;
}

static int entry_credentials(json_t *e, char **out, struct lb_err **err)
{
	const char *auth = json_string_value(json_object_get(e, "auth"));
	const char *user = json_string_value(json_object_get(e, "username"));
	const char *pass = json_string_value(json_object_get(e, "password"));

	if (auth && *auth) {
		if (!(*out = strdup(auth)))
			return lb_err_set(err, ENOMEM, "credentials");
		return 0;
	}
	if (user && pass)
		return encode_userpass(user, pass, out, err);
	return 0;
}

int reg_auth_file_lookup(const char *path, const char *host, char **out, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	const char *key;
	json_t *entry;

	_cleanup_err_ struct lb_err *e = NULL;

	*out = NULL;
	if (lb_read_file(path, AUTH_FILE_MAX, &buf, &len, &e) < 0) {
		if (e->errnum == ENOENT)
			return 0; /* no file: anonymous */
		return lb_err_set(err, e->errnum, "auth file: %s", e->msg);
	}
	json_t *j = json_loadb(buf, len, 0, NULL);
	json_t *auths = json_object_get(j, "auths");
	int r = 0;
	if (!j)
		r = lb_err_set(err, EINVAL, "auth file %s: not valid JSON", path);
	json_object_foreach(auths, key, entry)
	{
		if (r == 0 && !*out && key_matches(key, host))
			r = entry_credentials(entry, out, err);
	}
	json_decref(j);
	return r;
}
