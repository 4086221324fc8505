/* The command line's own syntax for engine settings: ulimits, cpus, capabilities and
 * booleans, as podman spells them. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

int cli_set_string(char **dst, const char *v, struct lb_err **err)
{
	char *copy = strdup(v);
	if (!copy)
		return lb_err_set(err, ENOMEM, "option");
	free(*dst);
	*dst = copy;
	return 0;
}

int cli_parse_bool(const char *s, bool *out, struct lb_err **err)
{
	if (!s || !strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes"))
		*out = true;
	else if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no"))
		*out = false;
	else
		return lb_err_set(err, 0, "invalid boolean '%s'", s);
	return 0;
}

static int parse_rlim_value(const char *s, rlim_t *out, struct lb_err **err)
{
	uint64_t v;
	if (strcmp(s, "unlimited") == 0 || strcmp(s, "-1") == 0) {
		*out = RLIM_INFINITY;
		return 0;
	}
	if (lb_parse_u64(s, &v, err) < 0)
		return -1;
	*out = (rlim_t)v;
	return 0;
}

int cli_parse_rlimit(const char *arg, struct lb_rlimit *out, struct lb_err **err)
{
	_cleanup_free_ char *copy = strdup(arg);
	if (!copy)
		return lb_err_set(err, ENOMEM, "parse ulimit");
	char *val = strchr(copy, '=');
	if (!val)
		return lb_err_set(err, 0, "invalid ulimit '%s': expected NAME=SOFT[:HARD]", arg);
	*val++ = '\0';
	int res = lb_rlimit_by_name(copy);
	if (res < 0)
		return lb_err_set(err, 0, "invalid ulimit '%s': unknown resource '%s'", arg, copy);
	char *hard = strchr(val, ':');
	if (hard)
		*hard++ = '\0';
	rlim_t s, h;
	if (parse_rlim_value(val, &s, err) < 0 || parse_rlim_value(hard ? hard : val, &h, err) < 0)
		return lb_err_wrap(err, "invalid ulimit '%s'", arg);
	if (s > h)
		return lb_err_set(err, 0, "invalid ulimit '%s': soft limit above hard limit", arg);
	out->resource = res;
	out->soft = s;
	out->hard = h;
	return 0;
}

int cli_parse_cpus(const char *arg, uint64_t *quota_us, uint64_t *period_us, struct lb_err **err)
{
	char *end = NULL;
	errno = 0;
	double cpus = strtod(arg, &end);
	if (errno || end == arg || *end || !(cpus > 0) || cpus > 4096)
		return lb_err_set(err, 0, "invalid --cpus '%s': expected a number > 0", arg);
	*period_us = 100000;
	*quota_us = (uint64_t)(cpus * 100000.0 + 0.5);
	if (*quota_us < 1000) /* the kernel's minimum cfs quota is 1 ms */
		return lb_err_set(err, 0, "invalid --cpus '%s': below 0.01", arg);
	return 0;
}

int cli_parse_cap(const char *name, uint64_t *mask, struct lb_err **err)
{
	if (strcasecmp(name, "ALL") == 0) {
		*mask = (cap_max_bits() >= 64) ? ~0ULL : (1ULL << cap_max_bits()) - 1;
		return 0;
	}
	_cleanup_free_ char *lower = NULL;
	if (asprintf(&lower, "%s%s", strncasecmp(name, "cap_", 4) ? "cap_" : "", name) < 0)
		return lb_err_set(err, ENOMEM, "parse capability");
	for (char *p = lower; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	cap_value_t v;
	if (cap_from_name(lower, &v) < 0 || v < 0 || v >= 64)
		return lb_err_set(err, 0, "unknown capability '%s'", name);
	*mask = 1ULL << v;
	return 0;
}

int cli_parse_signal(const char *s)
{
	uint64_t n;
	if (lb_parse_u64(s, &n, NULL) == 0)
		return n > 0 && n < (uint64_t)NSIG ? (int)n : -1;
	const char *name = strncasecmp(s, "SIG", 3) ? s : s + 3;
	for (int i = 1; i < NSIG; i++) {
		const char *abbrev = sigabbrev_np(i);
		if (abbrev && !strcasecmp(abbrev, name))
			return i;
	}
	return -1;
}
