// The command line of sessions, managed processes, info and version as a podman user types it
// (issue 17): --help anywhere is help and nothing else, names are checked when something is
// created (not when it is looked up), --version and a human `info`, errors that name the exact
// token. Every test drives the built lbbox and leaves a clean host.
#include "harness.h"

#include <dirent.h>
#include <jansson.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

LBT_SUITE(cli_box);

// The session records under the runroot (none, or an empty directory, when there are none).
static int session_records(void)
{
	char *dir = lbt_strdupf("%s/box/sessions", lbt_runroot());
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	free(dir);
	return n;
}

static void assert_no_session(void)
{
	struct lb_run_out o;
	lbt_run(&o, "session", "ls", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(lbt_count_lines(o.out), 1, "a session was created:\n%s", o.out);
	lbt_out_free(&o);
	cr_assert_eq(session_records(), 0, "the runroot holds a session record");
}

// lbbox ARGS... (NULL-terminated array) must print the help starting with `usage` on stdout,
// nothing on stderr, exit 0.
static void assert_help(const char *const *args, const char *usage)
{
	struct lb_run_out o;
	lbt_runv(&o, args);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strncmp(o.out, usage, strlen(usage)),
		  "help of '%s %s' does not start with %s:\n%s", args[0], args[1] ? args[1] : "",
		  usage, o.out);
	cr_assert_str_empty(o.err, "help wrote to stderr: %s", o.err);
	lbt_out_free(&o);
}

static void create(const char *name)
{
	const char *args[] = {"session", "create", name, "--rootfs", lbt_rootfs(), NULL};
	json_decref(lbt_runv_json(args));
}

// ---- --help -------------------------------------------------------------------------------

// `session create --help` was a session named "--help"; `session create S --help` one named S.
LBT_TEST(cli_box, help_on_session_create_creates_nothing)
{
	const char *before[] = {"session", "create", "--help", NULL};
	const char *after[] = {"session", "create", "s1", "--rootfs", lbt_rootfs(), "--help", NULL};
	const char *short_h[] = {"session", "create", "s1", "-h", "--rootfs", lbt_rootfs(), NULL};
	assert_help(before, "usage: lbbox session create NAME");
	assert_help(after, "usage: lbbox session create NAME");
	assert_help(short_h, "usage: lbbox session create NAME");
	assert_no_session();
}

// Every verb answers -h and --help, wherever among its arguments, with its own help.
LBT_TEST(cli_box, every_verb_has_its_own_help)
{
	static const char *const verbs[][3] = {
	    {"session", "create", "usage: lbbox session create"},
	    {"session", "exec", "usage: lbbox session exec"},
	    {"session", "ls", "usage: lbbox session ls"},
	    {"session", "inspect", "usage: lbbox session inspect"},
	    {"session", "rm", "usage: lbbox session rm"},
	    {"session", "gc", "usage: lbbox session gc"},
	    {"proc", "start", "usage: lbbox proc start"},
	    {"proc", "attach", "usage: lbbox proc attach"},
	    {"proc", "ls", "usage: lbbox proc ls"},
	    {"proc", "inspect", "usage: lbbox proc inspect"},
	    {"proc", "stop", "usage: lbbox proc stop"},
	    {"network", "ls", "usage: lbbox network"},
	    {"network", "inspect", "usage: lbbox network"},
	    {"network", "prune", "usage: lbbox network"},
	};
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		const char *first[] = {verbs[i][0], verbs[i][1], "--help", NULL};
		const char *later[] = {verbs[i][0], verbs[i][1], "x", "-h", "y", NULL};
		assert_help(first, verbs[i][2]);
		assert_help(later, verbs[i][2]);
	}
	const char *info[] = {"info", "--help", NULL};
	assert_help(info, "usage: lbbox info");
	// `session rm x --help` removed nothing and said so on stdout only: no session existed
	assert_no_session();
}

// `proc start S --help` starts nothing; an -h after the command is the command's own.
LBT_TEST(cli_box, help_on_proc_start_starts_nothing_and_a_commands_h_is_its_own)
{
	struct lb_run_out o;
	create("s1");
	const char *help[] = {"proc",	"start", "s1",	  "--id", "p1",
			      "--help", "--",	 "sleep", "1000", NULL};
	assert_help(help, "usage: lbbox proc start");
	lbt_run(&o, "proc", "ls", "s1", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(lbt_count_lines(o.out), 1, "a process was started:\n%s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "session", "exec", "s1", "--", "echo", "-h", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "-h\n");
	lbt_out_free(&o);
	// no "--": options stop at the command, as podman's do; options may come before the name
	lbt_run(&o, "session", "exec", "--timeout", "20", "s1", "-e", "A=1", "echo", "--help",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "--help\n");
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// ---- names --------------------------------------------------------------------------------

// Bad names are refused on creation, in one line that names them escaped; nothing is left.
LBT_TEST(cli_box, bad_names_are_refused_on_creation)
{
	struct lb_run_out o;
	char long_name[202];
	memset(long_name, 'n', 201);
	long_name[201] = '\0';
	static const struct {
		const char *name, *what;
	} bad[] = {
	    {"", "invalid session name '': a name cannot be empty"},
	    {"-x", "invalid session name '-x': a name cannot start with '-'"},
	    {"a/b", "invalid session name 'a/b': a name cannot contain '/'"},
	    {"a\x1b[31mb", "invalid session name 'a\\x1b[31mb': a name cannot contain control"},
	    {"a\nb", "invalid session name 'a\\x0ab'"},
	    {"a\x7f", "invalid session name 'a\\x7f'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		lbt_run(&o, "session", "create", bad[i].name, "--rootfs", lbt_rootfs(), NULL);
		lbt_assert_error_line(&o, 125, bad[i].what);
		cr_assert_null(strchr(o.err, '\x1b'), "raw escape on stderr: %s", o.err);
		lbt_out_free(&o);
	}
	lbt_run(&o, "session", "create", long_name, "--rootfs", lbt_rootfs(), NULL);
	lbt_assert_error_line(&o, 125, "longer than 200 bytes");
	lbt_out_free(&o);
	assert_no_session();
}

// A managed process's --id follows the same rule; the session's name in `proc start` is a lookup.
LBT_TEST(cli_box, bad_process_ids_are_refused_and_start_nothing)
{
	struct lb_run_out o;
	static const char *const bad[] = {"-p", "p/1", "p\x1b]0;x\x07", ""};
	create("s1");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		lbt_run(&o, "proc", "start", "s1", "--id", bad[i], "--", "sleep", "1000", NULL);
		lbt_assert_error_line(&o, 125, "invalid process name '");
		cr_assert_null(strchr(o.err, '\x1b'), "raw escape on stderr: %s", o.err);
		lbt_out_free(&o);
	}
	lbt_run(&o, "proc", "ls", "s1", NULL);
	cr_assert_eq(lbt_count_lines(o.out), 1, "a process was started:\n%s", o.out);
	lbt_out_free(&o);
	lbt_session_rm("s1");
}

// The Box runtime's own ids ("ws-<hex>-g<N>-<id>") are good names, and a lookup is never refused
// for its name's shape: an unknown one is simply not found.
LBT_TEST(cli_box, runtime_shaped_ids_work_and_lookups_are_not_checked)
{
	struct lb_run_out o;
	const char *id = "ws-0123456789abcdef01234567-g3-my_session.1";
	create(id);
	lbt_run(&o, "session", "exec", id, "--", "echo", "ok", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ok\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "ls", NULL);
	cr_assert(strstr(o.out, id), "%s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "session", "inspect", "a/b", NULL);
	lbt_assert_error_line(&o, 125, "BoxSessionNotFoundError");
	lbt_out_free(&o);
	lbt_session_rm(id);
}

// ---- version, info ------------------------------------------------------------------------

static void assert_version(const char *out)
{
	struct utsname u;
	const struct scmp_version *sv = seccomp_version();
	char *seccomp = lbt_strdupf("\nlibseccomp: %u.%u.%u\n", sv->major, sv->minor, sv->micro);
	cr_assert_eq(uname(&u), 0);
	char *kernel = lbt_strdupf("\nkernel:     %s\n", u.release);
	cr_assert(!strncmp(out, "lbbox version ", 14), "%s", out);
	const char *commit = strstr(out, "\ncommit:     ");
	cr_assert_not_null(commit, "%s", out);
	commit += strlen("\ncommit:     ");
	size_t n = strcspn(commit, "\n");
	cr_assert(n > 0 &&
		      (strspn(commit, "0123456789abcdef") == n || !strncmp(commit, "unknown\n", 8)),
		  "commit is neither a hash nor unknown: %s", out);
	cr_assert(strstr(out, seccomp), "no %s in:\n%s", seccomp, out);
	cr_assert(strstr(out, kernel), "no %s in:\n%s", kernel, out);
	free(seccomp), free(kernel);
}

// --version and `version`: lbbox's version, commit, libseccomp and kernel; nothing touched.
LBT_TEST(cli_box, version_names_lbbox_commit_libseccomp_and_kernel)
{
	struct lb_run_out o;
	lbt_run(&o, "--version", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_str_empty(o.err, "%s", o.err);
	assert_version(o.out);
	lbt_out_free(&o);
	lbt_run(&o, "version", NULL);
	LBT_ASSERT_EXIT(o, 0);
	assert_version(o.out);
	lbt_out_free(&o);
	char *fresh = lbt_strdupf("%s/never-made", lbt_workdir());
	char *script = lbt_strdupf("exec '%s' --runroot '%s' --root '%s' version >/dev/null",
				   lbt_bin(), fresh, fresh);
	const char *sh[] = {"/bin/sh", "-c", script, NULL};
	cr_assert_eq(lbt_system(sh), 0);
	cr_assert_neq(access(fresh, F_OK), 0, "lbbox version made %s", fresh);
	free(script), free(fresh);
}

// The value after "key:" on its line of `lbbox info`.
static char *info_value(const char *out, const char *key)
{
	char *pat = lbt_strdupf("%s:", key);
	const char *p = strstr(out, pat);
	cr_assert_not_null(p, "no %s line in:\n%s", pat, out);
	cr_assert(p == out || p[-1] == '\n', "%s is not at a line's start:\n%s", pat, out);
	p += strlen(pat);
	p += strspn(p, " ");
	free(pat);
	return strndup(p, strcspn(p, "\n"));
}

// `info` is for a person (paths, kernel, cgroup mode, rootless, features); --json is the object
// scripts read, its fields unchanged.
LBT_TEST(cli_box, info_is_human_by_default_and_json_on_request)
{
	struct lb_run_out o;
	struct utsname u;
	lbt_run(&o, "info", "--json", NULL);
	LBT_ASSERT_EXIT(o, 0);
	json_t *j = lbt_json(o.out);
	json_t *cg = json_object_get(j, "cgroups");
	static const char *const keys[] = {"rootless", "namespaces", "cgroups",	 "seccomp",
					   "overlay",  "network",    "box_ready"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_assert_not_null(json_object_get(j, keys[i]), "no %s in %s", keys[i], o.out);
	long long version = (long long)json_integer_value(json_object_get(cg, "version"));
	bool rootless = json_is_true(json_object_get(j, "rootless"));
	lbt_out_free(&o);

	lbt_run(&o, "info", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_null(json_loads(o.out, JSON_DECODE_ANY, NULL), "info printed JSON:\n%s", o.out);
	char *store = info_value(o.out, "store"), *state = info_value(o.out, "state");
	char *kernel = info_value(o.out, "kernel"), *cgroups = info_value(o.out, "cgroups");
	char *rl = info_value(o.out, "rootless");
	cr_assert_str_eq(store, lbt_root());
	cr_assert_str_eq(state, lbt_runroot());
	cr_assert_eq(uname(&u), 0);
	cr_assert_str_eq(kernel, u.release);
	cr_assert(!strncmp(cgroups, "v1 ", 3) || !strncmp(cgroups, "v2 ", 3) ||
		      !strncmp(cgroups, "hybrid ", 7),
		  "cgroup mode: %s", cgroups);
	char *uses = version ? lbt_strdupf("uses v%lld:", version) : strdup("uses none");
	cr_assert(strstr(cgroups, uses), "%s lacks %s (JSON version %lld)", cgroups, uses, version);
	cr_assert_str_eq(rl, rootless ? "yes" : "no");
	for (const char *k = "namespaces\0seccomp\0overlayfs\0network\0box ready\0"; *k;
	     k += strlen(k) + 1)
		free(info_value(o.out, k));
	free(store), free(state), free(kernel), free(cgroups), free(rl), free(uses);
	json_decref(j);
	lbt_out_free(&o);
	lbt_run(&o, "info", "--bogus", NULL);
	lbt_assert_error_line(&o, 125, "unknown option '--bogus'");
	lbt_out_free(&o);
}

// ---- errors name the token ----------------------------------------------------------------

LBT_TEST(cli_box, errors_name_the_exact_bad_token)
{
	static const char *const cases[][8] = {
	    {"session", "exec", "-iq", "s1", "sh", NULL, NULL, "unknown option '-q' (in '-iq')"},
	    {"session", "exec", "s1", "-w", NULL, NULL, NULL, "option '-w' requires a value"},
	    {"session", "exec", "s1", "--timeout", NULL, NULL, NULL,
	     "option '--timeout' requires a value"},
	    {"session", "exec", "s1", "--json=yes", "--", "true", NULL,
	     "option '--json' takes no value"},
	    {"session", "exec", "s1", "--bogus=1", "--", "true", NULL, "unknown option '--bogus'"},
	    {"session", "exec", "s1", "--timeout", "0", "--", "true",
	     "invalid --timeout '0': expected a whole number >= 1"},
	    {"proc", "start", "-q", "s1", "--", "true", NULL, "unknown option '-q'"},
	    {"proc", "start", "s1", "--id", NULL, NULL, NULL, "option '--id' requires a value"},
	    {"session", "ls", "--bogus", NULL, NULL, NULL, NULL, "unknown option '--bogus'"},
	    {"-xy", "info", NULL, NULL, NULL, NULL, NULL, "unknown option '-x' (in '-xy')"},
	    {"--root", NULL, NULL, NULL, NULL, NULL, NULL, "option '--root' requires a value"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lb_run_out o;
		const char *args[8] = {0};
		for (int k = 0; k < 7 && cases[i][k]; k++)
			args[k] = cases[i][k];
		lbt_runv(&o, args);
		lbt_assert_error_line(&o, 125, cases[i][7]);
		lbt_out_free(&o);
	}
	assert_no_session();
}
