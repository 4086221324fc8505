/* lbbox run's environment: -e and --env-file, as podman reads them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "run_internal.h"

#define ENV_FILE_MAX (1 << 20)

int run_add_env(struct run_opts *o, const char *kv, struct lb_err **err)
{
	char *copy = NULL;
	const char *value = strchr(kv, '=') ? NULL : getenv(kv);
	if (!*kv || *kv == '=')
		return lb_err_set(err, 0, "invalid environment variable '%s': empty name", kv);
	if (!strchr(kv, '=') && !value)
		return 0; /* KEY alone, and lbbox has none: nothing, as podman */
	if (value ? asprintf(&copy, "%s=%s", kv, value) < 0 : !(copy = strdup(kv)))
		return lb_err_set(err, ENOMEM, "environment");
	size_t klen = strcspn(copy, "=");
	for (size_t i = 0; i < o->n_env; i++) {
		if (strncmp(o->env[i], copy, klen) == 0 && o->env[i][klen] == '=') {
			free(o->env[i]);
			o->env[i] = copy;
			return 0;
		}
	}
	if (o->n_env >= RUN_MAX_ENV) {
		free(copy);
		return lb_err_set(err, 0, "too many environment variables (at most %d)",
				  RUN_MAX_ENV);
	}
	o->env[o->n_env++] = copy;
	return 0;
}

/* One line of an env file: leading blanks skipped, comments and blank lines ignored. */
static int env_line(struct run_opts *o, char *line, const char *path, unsigned no,
		    struct lb_err **err)
{
	while (*line == ' ' || *line == '\t')
		line++;
	line[strcspn(line, "\r")] = '\0';
	if (!*line || *line == '#')
		return 0;
	if (run_add_env(o, line, err) < 0)
		return lb_err_wrap(err, "--env-file %s line %u", path, no);
	return 0;
}

int run_env_file(struct run_opts *o, const char *path, struct lb_err **err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (lb_read_file(path, ENV_FILE_MAX, &text, &len, err) < 0)
		return lb_err_wrap(err, "--env-file %s", path);
	if (memchr(text, '\0', len))
		return lb_err_set(err, 0, "--env-file %s: not a text file", path);
	unsigned no = 0;
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (env_line(o, line, path, ++no, err) < 0)
			return -1;
	}
	return 0;
}
