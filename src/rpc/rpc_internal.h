/*
 * Request JSON -> C values with pydantic v2's lax coercion (python mode, as LangBot's
 * model_validate sees a json.loads() result), shared by the parsers of the request models. Type
 * errors read "<loc>: <pydantic message>", e.g. "timeout_sec: Input should be a valid integer".
 */
#ifndef LBBOX_RPC_INTERNAL_H
#define LBBOX_RPC_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lbbox/box/spec.h"
#include "lbbox/base/err.h"

/* int: ints, bools, integral finite floats, and strings such as " 1_000 " or "5.00". A string
 * holding an integer outside int64 (which Python would accept) fails with *overflow = +1 / -1;
 * otherwise *overflow is 0. *msg is pydantic's message on failure. */
int lb_rpc_lax_int(const json_t *v, int64_t *out, int *overflow, const char **msg);
/* float: numbers, bools, and strings in Python float() syntax (also "inf", "nan"). */
int lb_rpc_lax_float(const json_t *v, double *out, const char **msg);
/* bool: bools, 0 / 1, 0.0 / 1.0, and "true"/"false", "yes"/"no", "on"/"off", "t"/"f",
 * "y"/"n", "1"/"0" in any case. */
int lb_rpc_lax_bool(const json_t *v, bool *out, const char **msg);

/* Field coercions: each fails with lb_box_type_error() and replaces *out only on success. */
int lb_rpc_coerce_int(const json_t *v, const char *loc, int64_t *out, struct lb_err **err);
/* Also rejects inf / nan, which a JSON peer cannot be sent back (see coerce.c). */
int lb_rpc_coerce_float(const json_t *v, const char *loc, double *out, struct lb_err **err);
int lb_rpc_coerce_bool(const json_t *v, const char *loc, bool *out, struct lb_err **err);
/* str is strict in pydantic v2: only a JSON string (null only when nullable). */
int lb_rpc_coerce_str(const json_t *v, const char *loc, bool nullable, char **out,
		      struct lb_err **err);
/* A string enum: *out = index into names (n of them). */
int lb_rpc_coerce_enum(const json_t *v, const char *loc, const char *const *names, int n, int *out,
		       struct lb_err **err);
/* dict[str, str] as NULL-terminated "KEY=VALUE", in the object's order. */
int lb_rpc_coerce_env(const json_t *v, const char *loc, char ***out, struct lb_err **err);
/* list[str] as a NULL-terminated array. */
int lb_rpc_coerce_str_list(const json_t *v, const char *loc, char ***out, struct lb_err **err);

/* spec_parts.c: BoxMountSpec's mode, and list[BoxMountSpec] (each item coerced and validated
 * before the next, as pydantic does). */
int lb_rpc_coerce_mount_mode(const json_t *v, const char *loc, enum lb_box_mount_mode *out,
			     struct lb_err **err);
int lb_rpc_coerce_mounts(const json_t *v, struct lb_box_mount **out, size_t *n,
			 struct lb_err **err);

#endif
