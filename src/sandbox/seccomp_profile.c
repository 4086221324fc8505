/*
 * OCI/Docker seccomp profile parser: JSON -> a flat, ordered list of libseccomp rules.
 *
 * includes/excludes are evaluated here (against the kept capabilities and the native
 * architecture), so the compiler only sees rules that apply. Unknown syscall names are
 * skipped, as runc and crun do: one profile serves kernels and libseccomps of every age.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp_internal.h"

#define WHERE_MAX 96

struct parse_ctx {
	uint64_t caps;
	uint32_t native;
	uint32_t default_action;
	struct lb_scmp_rule *rules;
	size_t n_rules, cap_rules;
};

static const struct {
	const char *name;
	enum scmp_compare op;
} cmp_ops[] = {
    {"SCMP_CMP_NE", SCMP_CMP_NE},
    {"SCMP_CMP_LT", SCMP_CMP_LT},
    {"SCMP_CMP_LE", SCMP_CMP_LE},
    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
    {"SCMP_CMP_GE", SCMP_CMP_GE},
    {"SCMP_CMP_GT", SCMP_CMP_GT},
    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
};

/* Actions that take no errnoRet. */
static const struct {
	const char *name;
	uint32_t action;
} plain_actions[] = {
    {"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW},
    {"SCMP_ACT_KILL", SCMP_ACT_KILL},
    {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD},
    {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS},
    {"SCMP_ACT_TRAP", SCMP_ACT_TRAP},
    {"SCMP_ACT_LOG", SCMP_ACT_LOG},
};

/* Compat architectures a native one can run, so "architectures" lists can be shared. */
static const struct {
	uint32_t native;
	uint32_t compat[2];
} arch_families[] = {
    {SCMP_ARCH_X86_64, {SCMP_ARCH_X86, SCMP_ARCH_X32}},
    {SCMP_ARCH_AARCH64, {SCMP_ARCH_ARM, 0}},
    {SCMP_ARCH_PPC64, {SCMP_ARCH_PPC, 0}},
    {SCMP_ARCH_S390X, {SCMP_ARCH_S390, 0}},
    {SCMP_ARCH_MIPS64, {SCMP_ARCH_MIPS, SCMP_ARCH_MIPS64N32}},
    {SCMP_ARCH_MIPSEL64, {SCMP_ARCH_MIPSEL, SCMP_ARCH_MIPSEL64N32}},
    {SCMP_ARCH_PARISC64, {SCMP_ARCH_PARISC, 0}},
};

/* Go's GOARCH spellings (used by Docker's includes.arches) -> libseccomp's. */
static const struct {
	const char *go, *scmp;
} go_arches[] = {
    {"amd64", "x86_64"},	{"386", "x86"},		  {"arm64", "aarch64"},
    {"mipsle", "mipsel"},	{"mips64le", "mipsel64"}, {"mips64n32le", "mipsel64n32"},
    {"mips64p32", "mips64n32"},
};

/* "SCMP_ARCH_X86_64", "x86_64" or "amd64" -> libseccomp token; 0 when unknown. */
static uint32_t arch_token(const char *name)
{
	char buf[32];
	size_t i;

	if (strncmp(name, "SCMP_ARCH_", 10) == 0)
		name += 10;
	for (i = 0; name[i] && i < sizeof(buf) - 1; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	buf[i] = '\0';
	for (i = 0; i < sizeof(go_arches) / sizeof(go_arches[0]); i++)
		if (strcmp(buf, go_arches[i].go) == 0)
			return seccomp_arch_resolve_name(go_arches[i].scmp);
	return seccomp_arch_resolve_name(buf);
}

static bool arch_compatible(uint32_t native, uint32_t arch)
{
	if (arch == native)
		return true;
	for (size_t i = 0; i < sizeof(arch_families) / sizeof(arch_families[0]); i++) {
		if (arch_families[i].native != native)
			continue;
		return arch == arch_families[i].compat[0] || arch == arch_families[i].compat[1];
	}
	return false;
}

/*
 * Many kernels run no x32 program (built without it, or booted with it off), and an x32 part is
 * a third of the default filter, compiled into every command for nothing (~0.3 ms of each run
 * and exec). Without it an x32 syscall meets the filter's bad-arch kill instead of the kernel's
 * ENOSYS. Probed with getpid's x32 number, only outside any seccomp filter: under one (lbbox in
 * a sandbox) that call may be fatal, and the x32 part is kept.
 */
bool lb_scmp_kernel_runs_x32(void)
{
#if defined(__x86_64__)
	static _Atomic int known = -1;
	if (known < 0)
		known = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0 ||
			syscall(0x40000000L | SYS_getpid) >= 0;
	return known;
#else
	return true;
#endif
}

static void arch_push(struct lb_scmp_profile *p, uint32_t arch)
{
	if (!arch_compatible(p->arches[0], arch) ||
	    (arch == SCMP_ARCH_X32 && !lb_scmp_kernel_runs_x32()))
		return;
	for (size_t i = 0; i < p->n_arches; i++)
		if (p->arches[i] == arch)
			return;
	if (p->n_arches < LB_SCMP_MAX_ARCHES)
		p->arches[p->n_arches++] = arch;
}

static int arch_list_push(struct lb_scmp_profile *p, const char *where, json_t *list,
			  struct lb_err **err)
{
	size_t i;
	json_t *v;

	if (!json_is_array(list))
		return lb_err_set(err, 0, "%s: expected an array of strings", where);
	json_array_foreach(list, i, v)
	{
		if (!json_is_string(v))
			return lb_err_set(err, 0, "%s[%zu]: expected a string", where, i);
		uint32_t tok = arch_token(json_string_value(v));
		if (!tok)
			return lb_err_set(err, 0, "%s[%zu]: unknown architecture '%s'", where, i,
					  json_string_value(v));
		arch_push(p, tok);
	}
	return 0;
}

/* archMap (Docker): the entry whose "architecture" is native lists the compat arches. */
static int arch_map_push(struct lb_scmp_profile *p, json_t *map, struct lb_err **err)
{
	char where[WHERE_MAX];
	size_t i;
	json_t *e;

	if (!json_is_array(map))
		return lb_err_set(err, 0, "archMap: expected an array");
	json_array_foreach(map, i, e)
	{
		json_t *arch = json_object_get(e, "architecture");
		if (!json_is_string(arch))
			return lb_err_set(err, 0, "archMap[%zu].architecture: expected a string",
					  i);
		uint32_t tok = arch_token(json_string_value(arch));
		if (!tok)
			return lb_err_set(err, 0,
					  "archMap[%zu].architecture: unknown architecture '%s'", i,
					  json_string_value(arch));
		json_t *subs = json_object_get(e, "subArchitectures");
		if (tok != p->arches[0] || !subs)
			continue;
		snprintf(where, sizeof(where), "archMap[%zu].subArchitectures", i);
		if (arch_list_push(p, where, subs, err) < 0)
			return -1;
	}
	return 0;
}

static int parse_arches(struct lb_scmp_profile *p, json_t *root, struct lb_err **err)
{
	json_t *list = json_object_get(root, "architectures");
	json_t *map = json_object_get(root, "archMap");

	p->arches[0] = seccomp_arch_native();
	p->n_arches = 1;
	if (list && map)
		return lb_err_set(err, 0, "both 'architectures' and 'archMap' are set");
	if (map)
		return arch_map_push(p, map, err);
	if (list)
		return arch_list_push(p, "architectures", list, err);
	return 0;
}

static int parse_errno(const char *where, json_t *v, uint32_t *out, struct lb_err **err)
{
	if (!v) {
		*out = EPERM; /* runc's default when errnoRet is absent */
		return 0;
	}
	/* Larger values would not read as an error in userland: -4096 < ret < 0 is the rule. */
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 4095)
		return lb_err_set(err, 0, "%s: expected an errno between 0 and 4095", where);
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

/* where_action names the action field, where_errno the errnoRet field, for messages. */
static int parse_action(const char *where_action, json_t *action, const char *where_errno,
			json_t *errno_ret, uint32_t *out, struct lb_err **err)
{
	uint32_t e;

	if (!json_is_string(action))
		return lb_err_set(err, 0, "%s: expected a string", where_action);
	const char *s = json_string_value(action);
	for (size_t i = 0; i < sizeof(plain_actions) / sizeof(plain_actions[0]); i++) {
		if (strcmp(s, plain_actions[i].name) == 0) {
			*out = plain_actions[i].action;
			return 0;
		}
	}
	if (strcmp(s, "SCMP_ACT_NOTIFY") == 0)
		return lb_err_set(err, 0, "%s: SCMP_ACT_NOTIFY is not supported (no seccomp agent)",
				  where_action);
	if (strcmp(s, "SCMP_ACT_ERRNO") != 0 && strcmp(s, "SCMP_ACT_TRACE") != 0)
		return lb_err_set(err, 0, "%s: unknown action '%s'", where_action, s);
	if (parse_errno(where_errno, errno_ret, &e, err) < 0)
		return -1;
	*out = strcmp(s, "SCMP_ACT_ERRNO") == 0 ? SCMP_ACT_ERRNO(e) : SCMP_ACT_TRACE(e);
	return 0;
}

static int parse_integer(const char *where, json_t *v, uint64_t *out, struct lb_err **err)
{
	/* jansson integers are signed 64-bit: -1 is how to write 0xffffffffffffffff. */
	if (!json_is_integer(v))
		return lb_err_set(err, 0, "%s: expected an integer", where);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_arg(const char *where, json_t *a, struct scmp_arg_cmp *out, struct lb_err **err)
{
	char w[WHERE_MAX + 48];
	uint64_t index, value = 0, value_two = 0;

	if (!json_is_object(a))
		return lb_err_set(err, 0, "%s: expected an object", where);
	json_t *idx = json_object_get(a, "index");
	if (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) > 5)
		return lb_err_set(err, 0, "%s.index: expected an argument index between 0 and 5",
				  where);
	index = (uint64_t)json_integer_value(idx);
	snprintf(w, sizeof(w), "%s.value", where);
	if (parse_integer(w, json_object_get(a, "value"), &value, err) < 0)
		return -1;
	snprintf(w, sizeof(w), "%s.valueTwo", where);
	json_t *two = json_object_get(a, "valueTwo");
	if (two && parse_integer(w, two, &value_two, err) < 0)
		return -1;
	json_t *op = json_object_get(a, "op");
	if (!json_is_string(op))
		return lb_err_set(err, 0, "%s.op: expected a string", where);
	for (size_t i = 0; i < sizeof(cmp_ops) / sizeof(cmp_ops[0]); i++) {
		if (strcmp(json_string_value(op), cmp_ops[i].name) != 0)
			continue;
		/* OCI: for MASKED_EQ "value" is the mask and "valueTwo" the expected result. */
		*out = (struct scmp_arg_cmp){.arg = (unsigned int)index,
					     .op = cmp_ops[i].op,
					     .datum_a = value,
					     .datum_b = value_two};
		return 0;
	}
	return lb_err_set(err, 0, "%s.op: unknown operator '%s'", where, json_string_value(op));
}

static int parse_args(const char *where, json_t *args, struct lb_scmp_rule *r, struct lb_err **err)
{
	char w[WHERE_MAX + 48];
	size_t i;
	json_t *a;

	r->nargs = 0;
	if (!args || json_is_null(args))
		return 0;
	if (!json_is_array(args))
		return lb_err_set(err, 0, "%s.args: expected an array", where);
	if (json_array_size(args) > 6)
		return lb_err_set(err, 0, "%s.args: at most 6 conditions are supported", where);
	json_array_foreach(args, i, a)
	{
		snprintf(w, sizeof(w), "%s.args[%zu]", where, i);
		if (parse_arg(w, a, &r->args[i], err) < 0)
			return -1;
	}
	r->nargs = (unsigned int)json_array_size(args);
	return 0;
}

static bool cap_held(uint64_t caps, const char *name)
{
	cap_value_t v;

	/* A name this libcap does not know (a newer capability) is simply not held. */
	if (cap_from_name(name, &v) < 0 || v < 0 || v >= 64)
		return false;
	return (caps >> v) & 1;
}

/* Counts how many of the strings in list match: held caps, or the native arch. */
static int count_matches(const struct parse_ctx *pc, const char *where, json_t *list, bool arches,
			 size_t *matches, size_t *total, struct lb_err **err)
{
	size_t i;
	json_t *v;

	*matches = *total = 0;
	if (!list)
		return 0;
	if (!json_is_array(list))
		return lb_err_set(err, 0, "%s: expected an array of strings", where);
	json_array_foreach(list, i, v)
	{
		if (!json_is_string(v))
			return lb_err_set(err, 0, "%s[%zu]: expected a string", where, i);
		const char *s = json_string_value(v);
		*matches += arches ? arch_token(s) == pc->native : cap_held(pc->caps, s);
	}
	*total = json_array_size(list);
	return 0;
}

/* Docker semantics: includes needs every listed cap and the native arch among the arches;
 * excludes drops the rule when any listed cap is held or the native arch is listed. */
static int rule_applies(const struct parse_ctx *pc, const char *where, json_t *entry, bool *applies,
			struct lb_err **err)
{
	static const char *const keys[] = {"includes", "excludes"};
	char w[WHERE_MAX + 48];
	size_t m, n;

	*applies = true;
	for (int k = 0; k < 2; k++) {
		json_t *obj = json_object_get(entry, keys[k]);
		if (!obj || json_is_null(obj))
			continue;
		if (!json_is_object(obj))
			return lb_err_set(err, 0, "%s.%s: expected an object", where, keys[k]);
		/* minKernel is ignored: the allowlist already tolerates missing syscalls. */
		for (int arches = 0; arches < 2; arches++) {
			const char *field = arches ? "arches" : "caps";
			snprintf(w, sizeof(w), "%s.%s.%s", where, keys[k], field);
			if (count_matches(pc, w, json_object_get(obj, field), arches, &m, &n, err) <
			    0)
				return -1;
			if (k == 0 && (arches ? n > 0 && m == 0 : m < n))
				*applies = false;
			if (k == 1 && m > 0)
				*applies = false;
		}
	}
	return 0;
}

static int rule_push(struct parse_ctx *pc, const struct lb_scmp_rule *r)
{
	if (pc->n_rules == pc->cap_rules) {
		size_t cap = pc->cap_rules ? pc->cap_rules * 2 : 256;
		struct lb_scmp_rule *n = reallocarray(pc->rules, cap, sizeof(*n));
		if (!n)
			return -1;
		pc->rules = n;
		pc->cap_rules = cap;
	}
	pc->rules[pc->n_rules++] = *r;
	return 0;
}

/* keep == false only validates the names (a rule that does not apply here). */
static int push_name(struct parse_ctx *pc, const char *where, json_t *name, struct lb_scmp_rule *r,
		     bool keep, struct lb_err **err)
{
	if (!json_is_string(name))
		return lb_err_set(err, 0, "%s: expected a string", where);
	r->name = json_string_value(name);
	r->nr = seccomp_syscall_resolve_name(r->name);
	/* Unknown to this libseccomp: skipped, the default action covers it. */
	if (!keep || r->nr == __NR_SCMP_ERROR)
		return 0;
	if (rule_push(pc, r) < 0)
		return lb_err_set(err, ENOMEM, "%s", where);
	return 0;
}

static int push_names(struct parse_ctx *pc, const char *where, json_t *entry,
		      struct lb_scmp_rule *r, bool keep, struct lb_err **err)
{
	char w[WHERE_MAX + 48];
	json_t *names = json_object_get(entry, "names");
	json_t *name = json_object_get(entry, "name");
	size_t i;
	json_t *v;

	if (!names && !name)
		return lb_err_set(err, 0, "%s: neither 'names' nor 'name' is set", where);
	if (name) {
		snprintf(w, sizeof(w), "%s.name", where);
		if (push_name(pc, w, name, r, keep, err) < 0)
			return -1;
	}
	if (!names)
		return 0;
	if (!json_is_array(names))
		return lb_err_set(err, 0, "%s.names: expected an array of strings", where);
	json_array_foreach(names, i, v)
	{
		snprintf(w, sizeof(w), "%s.names[%zu]", where, i);
		if (push_name(pc, w, v, r, keep, err) < 0)
			return -1;
	}
	return 0;
}

static int parse_entry(struct parse_ctx *pc, size_t idx, json_t *entry, struct lb_err **err)
{
	char where[WHERE_MAX], w_action[WHERE_MAX + 8], w_errno[WHERE_MAX + 10];
	struct lb_scmp_rule r = {.entry = idx};
	bool applies;

	snprintf(where, sizeof(where), "syscalls[%zu]", idx);
	if (!json_is_object(entry))
		return lb_err_set(err, 0, "%s: expected an object", where);
	snprintf(w_action, sizeof(w_action), "%s.action", where);
	snprintf(w_errno, sizeof(w_errno), "%s.errnoRet", where);
	if (parse_action(w_action, json_object_get(entry, "action"), w_errno,
			 json_object_get(entry, "errnoRet"), &r.action, err) < 0)
		return -1;
	if (parse_args(where, json_object_get(entry, "args"), &r, err) < 0)
		return -1;
	if (rule_applies(pc, where, entry, &applies, err) < 0)
		return -1;
	/* A rule repeating the default action changes nothing (libseccomp refuses it). */
	return push_names(pc, where, entry, &r, applies && r.action != pc->default_action, err);
}

static int parse_default(json_t *root, uint32_t *out, struct lb_err **err)
{
	json_t *action = json_object_get(root, "defaultAction");

	if (!action)
		return lb_err_set(err, 0, "defaultAction: missing");
	return parse_action("defaultAction", action, "defaultErrnoRet",
			    json_object_get(root, "defaultErrnoRet"), out, err);
}

static int parse_syscalls(struct parse_ctx *pc, json_t *root, struct lb_err **err)
{
	json_t *list = json_object_get(root, "syscalls");
	size_t i;
	json_t *entry;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list))
		return lb_err_set(err, 0, "syscalls: expected an array");
	json_array_foreach(list, i, entry)
	{
		if (parse_entry(pc, i, entry, err) < 0)
			return -1;
	}
	return 0;
}

/*
 * The kernel's own precedence: a lower signed action value is more restrictive
 * (KILL_PROCESS < KILL_THREAD < TRAP < ERRNO < TRACE < LOG < ALLOW).
 */
static int32_t action_strength(uint32_t action)
{
	return (int32_t)(action & 0xffff0000u);
}

/*
 * Most restrictive first. Where libseccomp has to drop argument filters (x86 socketcall(2)
 * cannot see the socket family) two rules of different actions collapse onto one filter
 * node; the first one added keeps it and the later one fails with EEXIST. Adding the
 * restrictive rules first makes such collisions fail closed, whatever the profile order.
 */
static void rules_sort(struct lb_scmp_rule *rules, size_t n)
{
	/* Insertion sort: stable, and n is a few hundred at most. */
	for (size_t i = 1; i < n; i++) {
		struct lb_scmp_rule r = rules[i];
		size_t j = i;
		while (j > 0 && action_strength(rules[j - 1].action) > action_strength(r.action)) {
			rules[j] = rules[j - 1];
			j--;
		}
		rules[j] = r;
	}
}

/*
 * libseccomp lets an unconditional rule absorb every conditional rule of the same syscall,
 * whatever their actions: "allow socket" next to "EPERM socket(AF_VSOCK)" compiles to a
 * plain allow. Losing a more restrictive rule silently is refused instead.
 */
static int check_absorbed(const struct lb_scmp_rule *rules, size_t n, struct lb_err **err)
{
	for (size_t i = 0; i < n; i++) {
		if (rules[i].nargs > 0)
			continue;
		/* sorted: every more restrictive rule comes before i */
		for (size_t j = 0; j < i; j++) {
			if (rules[j].nr != rules[i].nr || rules[j].nargs == 0 ||
			    action_strength(rules[j].action) >= action_strength(rules[i].action))
				continue;
			return lb_err_set(
			    err, 0,
			    "syscalls[%zu]: the unconditional rule for '%s' would override the "
			    "more restrictive conditional rule of syscalls[%zu]",
			    rules[i].entry, rules[i].name, rules[j].entry);
		}
	}
	return 0;
}

static int parse_root(struct lb_scmp_profile *p, json_t *root, uint64_t caps, struct lb_err **err)
{
	struct parse_ctx pc = {.caps = caps, .native = seccomp_arch_native()};

	if (!json_is_object(root))
		return lb_err_set(err, 0, "expected a JSON object");
	if (parse_default(root, &p->default_action, err) < 0)
		return -1;
	if (parse_arches(p, root, err) < 0)
		return -1;
	pc.default_action = p->default_action;
	if (parse_syscalls(&pc, root, err) < 0) {
		free(pc.rules);
		return -1;
	}
	rules_sort(pc.rules, pc.n_rules);
	p->rules = pc.rules;
	p->n_rules = pc.n_rules;
	return check_absorbed(p->rules, p->n_rules, err);
}

int lb_scmp_profile_parse(const char *source, const char *buf, size_t len, uint64_t caps,
			  struct lb_scmp_profile **out, struct lb_err **err)
{
	json_error_t jerr;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);

	if (!root)
		return lb_err_set(err, 0,
				  "seccomp profile %s: invalid JSON at line %d, column %d: %s",
				  source, jerr.line, jerr.column, jerr.text);
	struct lb_scmp_profile *p = calloc(1, sizeof(*p));
	if (!p) {
		json_decref(root);
		return lb_err_set(err, ENOMEM, "seccomp profile %s", source);
	}
	p->json = root;
	if (parse_root(p, root, caps, err) < 0) {
		lb_scmp_profile_free(p);
		return lb_err_wrap(err, "seccomp profile %s", source);
	}
	*out = p;
	return 0;
}

void lb_scmp_profile_free(struct lb_scmp_profile *p)
{
	if (!p)
		return;
	free(p->rules);
	json_decref(p->json);
	free(p);
}
