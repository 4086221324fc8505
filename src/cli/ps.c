/* lbbox ps [-a] [-q] [--json]: the detached runs, as podman ps shows containers. Plain
 * sessions (session create, the Box runtime) are not runs and are not listed. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/box/run.h"
#include "runs_cli.h"

static const char ps_usage[] =
    "usage: lbbox ps [-a] [-q] [--json]\n"
    "Lists the running detached runs (lbbox run -d, or --name): NAME, IMAGE, COMMAND,\n"
    "CREATED, STATUS. A run is a session of the same name plus its managed process 'main'\n"
    "(lbbox session ls, lbbox proc ls NAME).\n"
    "  -a, --all      the exited runs too\n"
    "  -q, --quiet    the names alone\n"
    "  --json         one JSON array of objects (podman's field names)\n"
    "  -h, --help     this help\n";

struct ps_opts {
	bool all, quiet, json;
};

/* As podman (go-units HumanDuration) says how long ago. */
static void human(uint64_t sec, char *out, size_t len)
{
	unsigned long long s = sec;
	if (s < 1)
		snprintf(out, len, "Less than a second");
	else if (s < 60)
		snprintf(out, len, "%llu second%s", s, s == 1 ? "" : "s");
	else if (s < 120)
		snprintf(out, len, "About a minute");
	else if (s < 3600)
		snprintf(out, len, "%llu minutes", s / 60);
	else if (s < 7200)
		snprintf(out, len, "About an hour");
	else if (s < 48 * 3600)
		snprintf(out, len, "%llu hours", s / 3600);
	else if (s < 14 * 86400)
		snprintf(out, len, "%llu days", s / 86400);
	else if (s < 90 * 86400)
		snprintf(out, len, "%llu weeks", s / (7 * 86400));
	else if (s < 730 * 86400)
		snprintf(out, len, "%llu months", s / (30 * 86400));
	else
		snprintf(out, len, "%llu years", s / (365 * 86400));
}

static uint64_t since(uint64_t ns, uint64_t now)
{
	return now > ns ? (now - ns) / 1000000000ull : 0;
}

static const char *state_of(const struct lb_box_run *r)
{
	return !r->has_main ? "created" : r->main.running ? "running" : "exited";
}

static void status_of(const struct lb_box_run *r, uint64_t now, char *out, size_t len)
{
	char d[64];
	if (!r->has_main) {
		snprintf(out, len, "Created");
	} else if (r->main.running) {
		human(since(r->main.started_ns, now), d, sizeof(d));
		snprintf(out, len, "Up %s", d);
	} else {
		human(since(r->main.exited_ns, now), d, sizeof(d));
		snprintf(out, len, "Exited (%d) %s ago", r->main.exit_code, d);
	}
}

static json_t *run_json(const struct lb_box_run *r, uint64_t now)
{
	char status[96];
	status_of(r, now, status, sizeof(status));
	const struct lb_box_proc_info *m = &r->main;
	return json_pack("{s:[s], s:s, s:o, s:I, s:s, s:s, s:i, s:I, s:I, s:i, s:s, s:s}", "Names",
			 r->name, "Image", r->image, "Command", lb_json_from_strv(r->argv),
			 "Created", (json_int_t)(r->created_ns / 1000000000ull), "State",
			 state_of(r), "Status", status, "ExitCode", r->has_main ? m->exit_code : 0,
			 "StartedAt", (json_int_t)(m->started_ns / 1000000000ull), "ExitedAt",
			 (json_int_t)(m->exited_ns / 1000000000ull), "Pid",
			 m->running ? (int)m->pid : 0, "Session", r->name, "Process",
			 LB_BOX_RUN_PROC);
}

/* s in a column of width, cut with "..." when longer (podman cuts its columns too). */
static void print_cut(const char *s, int width)
{
	char line[256];
	snprintf(line, sizeof(line), "%s", s);
	if (strlen(line) > (size_t)width)
		strcpy(line + width - 3, "...");
	cli_print_escaped(line, width);
}

/* The command as one line. */
static void print_command(char *const *argv, int width)
{
	char line[256] = "";
	size_t n = 0;
	for (char *const *a = argv; a && *a && n < sizeof(line) - 1; a++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s", a == argv ? "" : " ", *a);
	print_cut(line, width);
}

static void print_row(const struct lb_box_run *r, uint64_t now)
{
	char created[64], status[96];
	human(since(r->created_ns, now), created, sizeof(created));
	strcat(created, " ago");
	status_of(r, now, status, sizeof(status));
	cli_print_escaped(r->name, 24);
	putchar(' ');
	print_cut(r->image, 28);
	putchar(' ');
	print_command(r->argv, 28);
	printf(" %-22s %s\n", created, status);
}

static void print_runs(const struct ps_opts *o, const struct lb_box_run *v, size_t n)
{
	uint64_t now = lb_realtime_ns();
	json_t *arr = o->json ? json_array() : NULL;
	if (!o->json && !o->quiet)
		printf("%-24s %-28s %-28s %-22s %s\n", "NAME", "IMAGE", "COMMAND", "CREATED",
		       "STATUS");
	for (size_t i = 0; i < n; i++) {
		if (!o->all && !(v[i].has_main && v[i].main.running))
			continue;
		if (arr)
			json_array_append_new(arr, run_json(&v[i], now));
		else if (o->quiet)
			cli_print_escaped(v[i].name, 0), putchar('\n');
		else
			print_row(&v[i], now);
	}
	if (arr)
		cli_print_json(arr);
}

static int parse(struct ps_opts *o, int argc, char **argv, struct lb_err **err)
{
	static const struct option longopts[] = {{"all", no_argument, NULL, 'a'},
						 {"quiet", no_argument, NULL, 'q'},
						 {"json", no_argument, NULL, 'j'},
						 {"help", no_argument, NULL, 'h'},
						 {0}};
	int c;
	optind = 0;
	opterr = 0;
	for (int before = 1; (c = getopt_long(argc, argv, "+:aqh", longopts, NULL)) != -1;
	     before = optind) {
		if (c == '?' || c == ':')
			return cli_opt_error(c, argv[before], err);
		o->all |= c == 'a', o->quiet |= c == 'q', o->json |= c == 'j';
	}
	if (optind < argc)
		return lb_err_set(err, 0, "unexpected argument '%s' (see lbbox ps --help)",
				  argv[optind]);
	return 0;
}

int cli_ps(struct cli_globals *g, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct ps_opts o = {0};
	struct lb_box box;
	struct lb_box_run *v = NULL;
	size_t n = 0;
	if (cli_help_asked(argc, argv, NULL))
		return fputs(ps_usage, stdout), 0;
	if (parse(&o, argc, argv, &err) < 0 || lb_box_open_env(&box, &g->paths, &err) < 0)
		return cli_box_error(err);
	int r = lb_box_run_list(&box, &v, &n, &err);
	lb_box_fini(&box);
	if (r < 0)
		return cli_box_error(err);
	print_runs(&o, v, n);
	lb_box_run_list_free(v, n);
	return 0;
}
