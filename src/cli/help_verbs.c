/*
 * The help of every session, proc, network and info verb, in one place so they read alike and
 * a reader finds them without reading each verb's parser. Printed on stdout, exit 0, by
 * `lbbox GROUP VERB --help` (or -h anywhere before the command).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char name_rule[] =
    "A new name (a session's NAME, a process's ID): at most 200 bytes, not empty, no leading\n"
    "'-', no '/', no control characters.\n";

static const char session_create[] =
    "usage: lbbox session create NAME [OPTIONS]\n"
    "Creates a session (a long-lived sandbox) named NAME, or reuses the one of that name when\n"
    "its settings match; prints the session as JSON.\n"
    "options: every `lbbox run` option (--image, --rootfs, -e, --cap-add ...; see lbbox run --help), and\n"
    "  --memory SIZE            memory limit (default 512m)\n"
    "  --pids N                 process limit (default 128)\n"
    "  --cpus N                 CPU limit (default 1.0)\n"
    "  --network off|on         network (default off)\n"
    "  --read-only[=BOOL]       read-only root filesystem (default true)\n"
    "  -v, --volume HOST:PATH[:ro|rw]   a host directory; at --mount-path it is the workspace\n"
    "  --mount-path PATH        the workspace inside the session (default /workspace)\n"
    "  --persistent             never removed by the idle-session reaper\n"
    "  --workspace-quota MB     the workspace's size limit\n"
    "  --profile NAME           default|offline_readonly|network_basic|network_extended\n"
    "  -h, --help               this help\n";

static const char session_exec[] =
    "usage: lbbox session exec [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]\n"
    "Runs CMD (joined into one shell command, as LangBot does) in session NAME; its stdout and\n"
    "stderr come out as they are written, byte for byte; exits with its exit code (124 when it\n"
    "timed out). Its stdin is empty unless -i is given.\n"
    "options (before CMD; an -h after it is CMD's):\n"
    "  -i, --interactive        pass this stdin to CMD\n"
    "  -t, --tty                a pseudo-terminal (the sandbox's own) as CMD's stdin, stdout and\n"
    "                           stderr, relayed here; this terminal in raw mode with -i, its\n"
    "                           window size followed; not with --json, --langbot, --output-limit\n"
    "  -w, --workdir DIR        working directory (default the session's workspace)\n"
    "  -e, --env KEY=VALUE      environment variable (repeatable)\n"
    "  --timeout SECONDS        kill the command after SECONDS (default 30)\n"
    "  --output-limit N         pass at most N bytes of stdout and of stderr (--langbot: cut\n"
    "                           LangBot's text to N characters)\n"
    "  --langbot                print the output once CMD ends, as LangBot returns it: collected,\n"
    "                           capped, surrounding whitespace stripped\n"
    "  --json                   print LangBot's exec result as JSON\n"
    "  --profile NAME           a profile's timeout (env LBBOX_BOX_PROFILE)\n"
    "  -h, --help               this help\n";

static const char session_ls[] =
    "usage: lbbox session ls [--json]\n"
    "Lists the sessions of this runroot (--json: one object a line).\n";

static const char session_inspect[] =
    "usage: lbbox session inspect NAME\n"
    "Prints session NAME, its managed processes included, as JSON.\n";

static const char session_rm[] = "usage: lbbox session rm NAME...\n"
				 "Removes sessions: their sandboxes, processes and workspaces.\n";

static const char session_gc[] =
    "usage: lbbox session gc [--ttl SECONDS]\n"
    "Removes the sessions idle longer than SECONDS (default the runtime's TTL) and not\n"
    "persistent, and the leftovers of dead ones; prints how many it removed.\n";

static const char proc_start[] =
    "usage: lbbox proc start [OPTIONS] SESSION [OPTIONS] [--] CMD [ARG...]\n"
    "Starts CMD as a managed process (e.g. an MCP server) in SESSION; prints it as JSON.\n"
    "options (before CMD; an -h after it is CMD's):\n"
    "  --id ID                  the process's id (default \"default\")\n"
    "  -w, --workdir DIR        working directory (default /workspace)\n"
    "  -e, --env KEY=VALUE      environment variable (repeatable)\n"
    "  -t, --tty                a pseudo-terminal (the sandbox's own) as its stdio, the master\n"
    "                           held by its keeper (attach -t); stderr_preview stays empty\n"
    "  -m, --memory SIZE        its own memory limit (e.g. 64m), at most the session's (default:\n"
    "                           the session's alone); an OOM kill ends it (137), not the session\n"
    "  -h, --help               this help\n";

static const char proc_attach[] =
    "usage: lbbox proc attach [-t] SESSION ID\n"
    "Relays this terminal's stdin to process ID and its stdout here. At stdin's end it detaches\n"
    "once the process has been quiet for a second (its answer to the last input arrives\n"
    "first), or when the process exits; the process keeps running, its stdin open.\n"
    "  -t, --tty   a process started with -t: this terminal raw while attached (Ctrl-C reaches\n"
    "              it through its pty), the window size followed; Ctrl-P Ctrl-Q detaches\n";

static const char proc_ls[] =
    "usage: lbbox proc ls [--json] SESSION\n"
    "Lists the managed processes of SESSION (--json: one object a line, as proc inspect).\n";

static const char proc_rm[] =
    "usage: lbbox proc rm [-f] SESSION ID\n"
    "Removes the record of managed process ID, which must have exited; -f, --force stops a\n"
    "running one first.\n";

static const char proc_inspect[] = "usage: lbbox proc inspect SESSION ID\n"
				   "Prints managed process ID as JSON.\n";

static const char proc_stop[] = "usage: lbbox proc stop SESSION ID\n"
				"Stops managed process ID (its whole cgroup).\n";

static const char proc_logs[] =
    "usage: lbbox proc logs [-f] [--tail N] SESSION ID\n"
    "Prints the output history of process ID (stdout to stdout, stderr to stderr): kept for\n"
    "a detached run's 'main' (lbbox run -d), whose keeper reads its output into a bounded ring\n"
    "of two 128 KiB halves (the latest 128 to 256 KiB) attached or not; other managed\n"
    "processes keep none.\n"
    "  -f, --follow   then what comes, until the process exits\n"
    "  --tail N       only the last N lines (-1: all)\n"
    "  -h, --help     this help\n";

static const char info[] =
    "usage: lbbox info [--json]\n"
    "What this host really gives a sandbox, found by trying: store and state paths, kernel,\n"
    "cgroup mode and the limits lbbox can enforce, rootless or not, seccomp, overlayfs, the\n"
    "network modes. --json prints the same as one JSON object.\n";

static const struct {
	const char *group, *verb, *text;
	bool names; /* the verb creates something named by its user */
} helps[] = {
    {"session", "create", session_create, true},
    {"session", "exec", session_exec, false},
    {"session", "ls", session_ls, false},
    {"session", "inspect", session_inspect, false},
    {"session", "rm", session_rm, false},
    {"session", "gc", session_gc, false},
    {"proc", "start", proc_start, true},
    {"proc", "attach", proc_attach, false},
    {"proc", "ls", proc_ls, false},
    {"proc", "rm", proc_rm, false},
    {"proc", "inspect", proc_inspect, false},
    {"proc", "stop", proc_stop, false},
    {"proc", "logs", proc_logs, false},
    {"info", NULL, info, false},
};

int cli_print_help(const char *group, const char *verb)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		if (strcmp(helps[i].group, group) != 0 ||
		    (helps[i].verb && (!verb || strcmp(helps[i].verb, verb) != 0)))
			continue;
		fputs(helps[i].text, stdout);
		if (helps[i].names)
			fputs(name_rule, stdout);
		return 0;
	}
	return LB_EXIT_SETUP;
}
