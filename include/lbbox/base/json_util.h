/* Small jansson helpers shared by the layers: string arrays in and out of JSON. */
#ifndef LBBOX_JSON_UTIL_H
#define LBBOX_JSON_UTIL_H

#include <jansson.h>

/* jansson's own cleanup helper (json_auto_t) as a variable attribute. */
#define _cleanup_json_ __attribute__((cleanup(json_decrefp)))

/* A JSON array of the NULL-terminated strings v (NULL v = []). */
json_t *lb_json_from_strv(char *const *v);
/* A NULL-terminated malloc'ed copy of a JSON array of strings (non-strings become ""); NULL on
 * ENOMEM. A missing array (NULL) gives an empty list. */
char **lb_json_to_strv(const json_t *a);

#endif
