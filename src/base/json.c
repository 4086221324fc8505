/* String arrays in and out of JSON (state files, records, replies). */
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"

json_t *lb_json_from_strv(char *const *v)
{
	json_t *a = json_array();
	for (; a && v && *v; v++)
		json_array_append_new(a, json_string(*v));
	return a;
}

char **lb_json_to_strv(const json_t *a)
{
	size_t i, n = json_array_size(a);
	json_t *v;
	char **out = calloc(n + 1, sizeof(char *));
	if (!out)
		return NULL;
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);
		if (!(out[i] = strdup(s ? s : ""))) {
			lb_strvfreep(&out);
			return NULL;
		}
	}
	return out;
}
