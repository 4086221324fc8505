/*
 * lbbox proc logs [-f] [--tail N] SESSION PROC, and the printing behind `lbbox logs`: a managed
 * process's output history (its keeper's ring, kept for detached runs), stdout to stdout and
 * stderr to stderr in the order they were read. What a reader lost (it fell behind the ring, or
 * the ring is damaged) it says, on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/box/run.h"
#include "runs_cli.h"

#define FOLLOW_POLL_MS 100

struct chunk {
	int stream;
	size_t n;
	char *data;
};

struct history {
	struct chunk *v;
	size_t n;
};

static void history_free(struct history *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->v[i].data);
	free(h->v);
}

static void emit(int stream, const char *buf, size_t n)
{
	lb_write_all(stream == 2 ? 2 : 1, buf, n);
}

/* What the ring holds now, in memory (at most its bound). */
static int read_all(struct lb_box_log_reader *r, struct history *h, char *buf)
{
	int stream;
	size_t n;
	while (lb_box_log_next(r, &stream, buf, LB_BOX_LOG_CHUNK_MAX, &n) == 1) {
		struct chunk *nv = realloc(h->v, (h->n + 1) * sizeof(*nv));
		char *copy = malloc(n ? n : 1);
		if (!nv || !copy) {
			free(copy);
			if (nv)
				h->v = nv;
			return -1;
		}
		memcpy(copy, buf, n);
		h->v = nv;
		h->v[h->n++] = (struct chunk){.stream = stream, .n = n, .data = copy};
	}
	return 0;
}

/* Where the last `lines` lines start: chunk *ci, byte *off (a final newline ends a line). */
static void tail_start(const struct history *h, long lines, size_t *ci, size_t *off)
{
	long seen = 0;
	bool last = true;
	*ci = 0, *off = 0;
	for (size_t i = h->n; i-- > 0;) {
		for (size_t b = h->v[i].n; b-- > 0;) {
			bool nl = h->v[i].data[b] == '\n';
			if (nl && !last && ++seen == lines) {
				*ci = i, *off = b + 1;
				return;
			}
			last = false;
		}
	}
}

static void print_history(const struct history *h, long tail)
{
	size_t ci = 0, off = 0;
	if (tail == 0)
		return;
	if (tail > 0)
		tail_start(h, tail, &ci, &off);
	for (size_t i = ci; i < h->n; i++, off = 0)
		emit(h->v[i].stream, h->v[i].data + off, h->v[i].n - off);
}

/* What the reader lost since last told: said once, on stderr, in one line each. */
struct losses {
	uint64_t skipped, damaged;
};

static void say_losses(const char *proc, const struct lb_box_log_reader *r, struct losses *l)
{
	if (r->skipped > l->skipped)
		cli_error("%llu KiB or more of the output of %s went before they were read (the "
			  "history keeps the latest %d to %d KiB)",
			  (unsigned long long)(r->skipped - l->skipped) * LB_BOX_LOG_HALF_KIB, proc,
			  LB_BOX_LOG_HALF_KIB, 2 * LB_BOX_LOG_HALF_KIB);
	if (r->damaged_halves > l->damaged)
		cli_error("the output history of %s is damaged: the rest of a part of it (at most "
			  "%d KiB) is skipped",
			  proc, LB_BOX_LOG_HALF_KIB);
	l->skipped = r->skipped;
	l->damaged = r->damaged_halves;
}

static bool still_running(struct lb_box *box, const char *session, const char *proc)
{
	struct lb_box_proc_info info;
	if (lb_box_proc_get(box, session, proc, &info, NULL) < 0)
		return false;
	bool running = info.running;
	lb_box_proc_info_free(&info);
	return running;
}

/* Waits a moment for more output; a signal on sigfd goes to the run's main. */
static void wait_more(struct lb_box *box, const char *session, int sigfd)
{
	struct pollfd p = {.fd = sigfd, .events = POLLIN};
	struct signalfd_siginfo si;
	if (poll(&p, 1, FOLLOW_POLL_MS) > 0 && read(sigfd, &si, sizeof(si)) == sizeof(si))
		lb_box_run_kill(box, session, (int)si.ssi_signo, NULL);
}

static void follow(struct lb_box *box, const char *session, const char *proc,
		   struct lb_box_log_reader *r, char *buf, int sigfd, struct losses *l)
{
	int stream;
	size_t n;
	bool ended = false;
	r->bounded = false;
	for (;;) {
		while (lb_box_log_next(r, &stream, buf, LB_BOX_LOG_CHUNK_MAX, &n) == 1)
			emit(stream, buf, n);
		say_losses(proc, r, l);
		if (ended)
			return;
		/* once it has ended, one more pass reads what its keeper wrote last */
		ended = !still_running(box, session, proc);
		if (!ended)
			wait_more(box, session, sigfd);
	}
}

int cli_logs_show(struct lb_box *box, const char *session, const char *proc, bool follow_it,
		  long tail, int sigfd)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_log_reader r;
	struct history h = {0};
	struct losses l = {0};
	_cleanup_free_ char *buf = malloc(LB_BOX_LOG_CHUNK_MAX);
	if (!buf)
		return cli_error("out of memory"), LB_EXIT_SETUP;
	if (lb_box_proc_log_open(box, session, proc, &r, &err) < 0)
		return cli_box_error(err);
	int rc = read_all(&r, &h, buf);
	if (rc == 0)
		print_history(&h, tail);
	history_free(&h);
	say_losses(proc, &r, &l);
	if (rc == 0 && follow_it)
		follow(box, session, proc, &r, buf, sigfd, &l);
	lb_box_log_close(&r);
	return rc < 0 ? (cli_error("out of memory"), LB_EXIT_SETUP) : 0;
}

static const struct option logs_longopts[] = {{"follow", no_argument, NULL, 'f'},
					      {"tail", required_argument, NULL, 't'},
					      {"help", no_argument, NULL, 'h'},
					      {0}};
const struct cli_optdef cli_logs_opts = {"+:hf", logs_longopts};

int cli_logs_parse(struct cli_opts *p, int argc, char **argv, bool *follow_it, long *tail,
		   struct lb_err **err)
{
	int c;
	cli_opts_init(p, argc, argv, &cli_logs_opts);
	*follow_it = false;
	*tail = -1;
	while ((c = cli_opts_next(p, err)) != -1) {
		char *end = NULL;
		if (c == 'f') {
			*follow_it = true;
		} else if (c == 't') {
			errno = 0;
			*tail = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || *tail < -1)
				return lb_err_set(err, 0,
						  "invalid --tail '%s': expected a number of lines "
						  "(-1: all)",
						  optarg);
		} else {
			return -1; /* '?': said why; 'h' was answered before */
		}
	}
	return 0;
}

int cli_proc_logs(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct cli_opts p;
	bool follow_it;
	long tail;
	if (cli_logs_parse(&p, argc, argv, &follow_it, &tail, &err) < 0)
		return cli_box_error(err);
	if (!p.name || p.cmd != argc - 1) {
		cli_error(
		    "usage: lbbox proc logs [-f] [--tail N] SESSION PROC (see lbbox proc logs "
		    "--help)");
		return LB_EXIT_SETUP;
	}
	return cli_logs_show(box, p.name, argv[p.cmd], follow_it, tail, -1);
}
