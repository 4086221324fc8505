/* BoxManagedProcessSpec (spec §1.6), the "spec" of box_start_managed_process. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "box_spec_internal.h"
#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"

void lb_box_proc_spec_init(struct lb_box_proc_spec *out)
{
	*out = (struct lb_box_proc_spec){
	    .process_id = strdup("default"),
	    .args = lb_box_strv_new(),
	    .env = lb_box_strv_new(),
	    .cwd = strdup(LB_BOX_DEFAULT_MOUNT_PATH),
	};
}

void lb_box_proc_spec_free(struct lb_box_proc_spec *spec)
{
	free(spec->process_id);
	free(spec->command);
	lb_box_strv_free(spec->args);
	lb_box_strv_free(spec->env);
	free(spec->cwd);
	*spec = (struct lb_box_proc_spec){0};
}

static int check_process_id(struct lb_box_proc_spec *s, struct lb_err **err)
{
	if (!s->process_id)
		return lb_box_type_error(err, "process_id", "Input should be a valid string");
	return lb_box_check_id(s->process_id, "process_id", err);
}

static int check_command(struct lb_box_proc_spec *s, struct lb_err **err)
{
	if (!s->command)
		return lb_box_type_error(err, "command", "Field required");
	if (lb_box_strip_field(&s->command, "command", err) < 0)
		return -1;
	if (!*s->command)
		return lb_err_box(err, LB_BOX_EVALIDATION, "command must not be empty");
	return 0;
}

static int check_cwd(struct lb_box_proc_spec *s, struct lb_err **err)
{
	return lb_box_check_sandbox_path(&s->cwd, "cwd", err);
}

/* Fields in declaration order: process_id, command, args, env, cwd, memory_mb. process_id has
 * no validator in LangBot (not even a strip; lbbox refuses control characters) and memory_mb
 * none either (0 or less = the session's; that it fits in the session's is checked at start,
 * where the session is known: lb_box_proc_start). */
static const struct {
	const char *name;
	int (*check)(struct lb_box_proc_spec *s, struct lb_err **err);
} proc_fields[] = {
    {"process_id", check_process_id},
    {"command", check_command},
    {"args", NULL},
    {"env", NULL},
    {"cwd", check_cwd},
    {"memory_mb", NULL},
};

int lb_box_proc_spec_check_field(struct lb_box_proc_spec *s, const char *field, struct lb_err **err)
{
	for (size_t i = 0; i < sizeof(proc_fields) / sizeof(proc_fields[0]); i++)
		if (!strcmp(proc_fields[i].name, field))
			return proc_fields[i].check ? proc_fields[i].check(s, err) : 0;
	return lb_err_set(err, EINVAL, "BoxManagedProcessSpec has no field %s", field);
}

int lb_box_proc_spec_validate(struct lb_box_proc_spec *s, struct lb_err **err)
{
	for (size_t i = 0; i < sizeof(proc_fields) / sizeof(proc_fields[0]); i++)
		if (proc_fields[i].check && proc_fields[i].check(s, err) < 0)
			return -1;
	return 0;
}
