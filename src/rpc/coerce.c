/*
 * Request JSON -> C values: pydantic v2 lax-mode coercion of the JSON types, measured against
 * pydantic 2.13.4 (the version the spec was verified with): which inputs pass, what they become,
 * and the message otherwise.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lbbox/box/spec.h"
#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "rpc_internal.h"

#define MSG_INT		 "Input should be a valid integer"
#define MSG_INT_PARSE	 "Input should be a valid integer, unable to parse string as an integer"
#define MSG_INT_FRACTION "Input should be a valid integer, got a number with a fractional part"
#define MSG_INT_SIZE	 "Unable to parse input string as an integer, exceeded maximum size"
#define MSG_FINITE	 "Input should be a finite number"
#define MSG_FLOAT	 "Input should be a valid number"
#define MSG_FLOAT_PARSE	 "Input should be a valid number, unable to parse string as a number"
#define MSG_BOOL	 "Input should be a valid boolean"
#define MSG_BOOL_PARSE	 "Input should be a valid boolean, unable to interpret input"
#define MSG_STR		 "Input should be a valid string"
#define MSG_DICT	 "Input should be a valid dictionary"
#define MSG_LIST	 "Input should be a valid list"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits with single underscores between them (PEP 515), as int() and float() read them;
 * returns the end of the run, or NULL when there is no valid run at s. */
static const char *scan_digits(const char *s)
{
	if (!is_digit(*s))
		return NULL;
	while (is_digit(*s) || (*s == '_' && is_digit(s[1])))
		s++;
	return s;
}

/* Python-whitespace-stripped copy of a JSON string value; NULL on ENOMEM. */
static char *stripped(const json_t *v)
{
	return lb_box_py_strip_dup(json_string_value(v));
}

/* pydantic's str -> int: [sign] digits [ "." zeros ], surrounding whitespace ignored. */
static int parse_int_string(const char *s, int64_t *out, int *overflow)
{
	bool neg = *s == '-';
	const char *p = s + (*s == '-' || *s == '+');
	const char *end = scan_digits(p);
	uint64_t mag = 0, max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	if (!end)
		return -1;
	if (*end == '.') { /* "5.00" is an integer, "5." and "5.5" are not */
		const char *z = end + 1;
		while (*z == '0')
			z++;
		if (z == end + 1 || *z)
			return -1;
	} else if (*end) {
		return -1;
	}
	for (; p < end; p++) {
		if (*p == '_')
			continue;
		unsigned d = (unsigned)(*p - '0');
		if (mag > (max - d) / 10) {
			*overflow = neg ? -1 : 1;
			return -1;
		}
		mag = mag * 10 + d;
	}
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

static int lax_int_real(double d, int64_t *out, const char **msg)
{
	if (!isfinite(d))
		return *msg = MSG_FINITE, -1;
	/* pydantic refuses |d| >= 2^63, -2^63 included; doubles that large have no fraction, so
	 * testing the size first reports the same error pydantic does */
	if (d >= 9223372036854775808.0 || d <= -9223372036854775808.0)
		return *msg = MSG_INT_SIZE, -1;
	if ((double)(int64_t)d != d)
		return *msg = MSG_INT_FRACTION, -1;
	*out = (int64_t)d;
	return 0;
}

int lb_rpc_lax_int(const json_t *v, int64_t *out, int *overflow, const char **msg)
{
	*overflow = 0;
	switch (json_typeof(v)) {
	case JSON_INTEGER:
		*out = json_integer_value(v);
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
		*out = json_is_true(v);
		return 0;
	case JSON_REAL:
		return lax_int_real(json_real_value(v), out, msg);
	case JSON_STRING: {
		_cleanup_free_ char *s = stripped(v);
		if (s && parse_int_string(s, out, overflow) == 0)
			return 0;
		*msg = *overflow ? MSG_INT_SIZE : MSG_INT_PARSE;
		return -1;
	}
	default:
		*msg = MSG_INT;
		return -1;
	}
}

/* Python float() syntax: [sign] (inf | infinity | nan | digits[.digits] | .digits) [e[sign]digits]
 * with PEP 515 underscores; anything else (hex, "1e", "1.5.") is refused. */
static bool float_syntax_ok(const char *s)
{
	const char *p = s + (*s == '-' || *s == '+'), *q;

	if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity") || !strcasecmp(p, "nan"))
		return true;
	q = scan_digits(p);
	if (q && *q == '.')
		q = scan_digits(q + 1) ? scan_digits(q + 1) : q + 1;
	else if (!q && *p == '.')
		q = scan_digits(p + 1);
	if (!q)
		return false;
	if (*q == 'e' || *q == 'E') {
		q += q[1] == '-' || q[1] == '+';
		q = scan_digits(q + 1);
	}
	return q && !*q;
}

static int parse_float_string(const char *s, double *out)
{
	_cleanup_free_ char *plain = NULL;
	char *o, *end = NULL;

	if (!float_syntax_ok(s))
		return -1;
	plain = malloc(strlen(s) + 1);
	if (!plain)
		return -1;
	o = plain;
	for (const char *p = s; *p; p++)
		if (*p != '_')
			*o++ = *p;
	*o = '\0';
	errno = 0;
	*out = strtod(plain, &end);
	return *end ? -1 : 0; /* overflow to inf is what Python gives too */
}

int lb_rpc_lax_float(const json_t *v, double *out, const char **msg)
{
	switch (json_typeof(v)) {
	case JSON_INTEGER:
		*out = (double)json_integer_value(v);
		return 0;
	case JSON_REAL:
		*out = json_real_value(v);
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
		*out = json_is_true(v) ? 1.0 : 0.0;
		return 0;
	case JSON_STRING: {
		_cleanup_free_ char *s = stripped(v);
		if (s && parse_float_string(s, out) == 0)
			return 0;
		*msg = MSG_FLOAT_PARSE;
		return -1;
	}
	default:
		*msg = MSG_FLOAT;
		return -1;
	}
}

static int bool_from_string(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "on", "t", "true", "y", "yes"};
	static const char *const no[] = {"0", "off", "f", "false", "n", "no"};

	/* pydantic compares case-insensitively and does not strip */
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
			*out = !strcasecmp(s, yes[i]);
			return 0;
		}
	}
	return -1;
}

int lb_rpc_lax_bool(const json_t *v, bool *out, const char **msg)
{
	switch (json_typeof(v)) {
	case JSON_TRUE:
	case JSON_FALSE:
		*out = json_is_true(v);
		return 0;
	case JSON_INTEGER:
		if (json_integer_value(v) == 0 || json_integer_value(v) == 1) {
			*out = json_integer_value(v) == 1;
			return 0;
		}
		*msg = MSG_BOOL_PARSE;
		return -1;
	case JSON_REAL:
		if (json_real_value(v) == 0.0 || json_real_value(v) == 1.0) {
			*out = json_real_value(v) == 1.0;
			return 0;
		}
		*msg = MSG_BOOL;
		return -1;
	case JSON_STRING:
		if (bool_from_string(json_string_value(v), out) == 0)
			return 0;
		*msg = MSG_BOOL_PARSE;
		return -1;
	default:
		*msg = MSG_BOOL;
		return -1;
	}
}

int lb_rpc_coerce_int(const json_t *v, const char *loc, int64_t *out, struct lb_err **err)
{
	const char *msg = NULL;
	int overflow;

	if (lb_rpc_lax_int(v, out, &overflow, &msg) < 0)
		return lb_box_type_error(err, loc, msg);
	return 0;
}

int lb_rpc_coerce_float(const json_t *v, const char *loc, double *out, struct lb_err **err)
{
	const char *msg = NULL;
	double d;

	if (lb_rpc_lax_float(v, &d, &msg) < 0)
		return lb_box_type_error(err, loc, msg);
	/* Deviation: pydantic lets "nan" / "inf" through (nan even passes "> 0"), but the value
	 * could never be written back as JSON nor given to a backend, so it is refused here with
	 * pydantic's own wording for non-finite numbers. */
	if (!isfinite(d))
		return lb_box_type_error(err, loc, MSG_FINITE);
	*out = d;
	return 0;
}

int lb_rpc_coerce_bool(const json_t *v, const char *loc, bool *out, struct lb_err **err)
{
	const char *msg = NULL;

	if (lb_rpc_lax_bool(v, out, &msg) < 0)
		return lb_box_type_error(err, loc, msg);
	return 0;
}

int lb_rpc_coerce_str(const json_t *v, const char *loc, bool nullable, char **out,
		      struct lb_err **err)
{
	char *s = NULL;

	if (nullable && json_is_null(v)) {
		free(*out);
		*out = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return lb_box_type_error(err, loc, MSG_STR);
	s = strdup(json_string_value(v));
	if (!s)
		return lb_err_set(err, ENOMEM, "%s", loc);
	free(*out);
	*out = s;
	return 0;
}

/* "Input should be 'a', 'b' or 'c'" */
static int enum_error(struct lb_err **err, const char *loc, const char *const *names, int n)
{
	char msg[256] = "Input should be ";
	size_t o = strlen(msg);

	for (int i = 0; i < n; i++) {
		const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
		o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%s'%s'", sep, names[i]);
		if (o >= sizeof(msg))
			break;
	}
	return lb_box_type_error(err, loc, msg);
}

int lb_rpc_coerce_enum(const json_t *v, const char *loc, const char *const *names, int n, int *out,
		       struct lb_err **err)
{
	for (int i = 0; json_is_string(v) && i < n; i++) {
		if (!strcmp(json_string_value(v), names[i])) {
			*out = i;
			return 0;
		}
	}
	return enum_error(err, loc, names, n);
}

int lb_rpc_coerce_env(const json_t *v, const char *loc, char ***out, struct lb_err **err)
{
	_cleanup_strv_ char **env = NULL;
	const char *key;
	json_t *val;
	size_t n = 0;

	if (!json_is_object(v))
		return lb_box_type_error(err, loc, MSG_DICT);
	env = calloc(json_object_size(v) + 1, sizeof(*env));
	if (!env)
		return lb_err_set(err, ENOMEM, "%s", loc);
	json_object_foreach((json_t *)v, key, val)
	{
		if (!json_is_string(val))
			return lb_err_box(err, LB_BOX_EVALIDATION, "%s.%s: %s", loc, key, MSG_STR);
		if (asprintf(&env[n], "%s=%s", key, json_string_value(val)) < 0) {
			env[n] = NULL;
			return lb_err_set(err, ENOMEM, "%s", loc);
		}
		n++;
	}
	lb_box_strv_free(*out);
	*out = LB_TAKE_PTR(env);
	return 0;
}

int lb_rpc_coerce_str_list(const json_t *v, const char *loc, char ***out, struct lb_err **err)
{
	_cleanup_strv_ char **list = NULL;
	size_t i;
	json_t *item;

	if (!json_is_array(v))
		return lb_box_type_error(err, loc, MSG_LIST);
	list = calloc(json_array_size(v) + 1, sizeof(*list));
	if (!list)
		return lb_err_set(err, ENOMEM, "%s", loc);
	json_array_foreach(v, i, item)
	{
		if (!json_is_string(item))
			return lb_err_box(err, LB_BOX_EVALIDATION, "%s.%zu: %s", loc, i, MSG_STR);
		list[i] = strdup(json_string_value(item));
		if (!list[i])
			return lb_err_set(err, ENOMEM, "%s", loc);
	}
	lb_box_strv_free(*out);
	*out = LB_TAKE_PTR(list);
	return 0;
}
