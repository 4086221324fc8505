/*
 * Pull and load progress on stderr, as podman draws it: "Copying blob 3f2a1b4c5d6e 3.5 MiB /
 * 50.4 MiB". On a terminal the blob's line is rewritten in place (at most every 100 ms) and left
 * complete when the blob is; elsewhere (a log, a CI job) each blob gets one line, once copied, so
 * the output is a record rather than a stream of carriage returns.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "imagetool.h"
#include "lbbox/base/util.h"

#define REDRAW_NS 100000000ull

void tool_progress_init(struct tool_progress *p)
{
	*p = (struct tool_progress){.tty = isatty(STDERR_FILENO)};
}

/* Binary units, as podman's progress bars: "512 B", "3.5 KiB", "50.4 MiB". */
static void human(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	if (n < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)n);
		return;
	}
	double v = (double)n / 1024;
	size_t u = 0;
	for (; v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0]); u++)
		v /= 1024;
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

static void line(const struct lb_image_progress *p, char *buf, size_t len)
{
	const char *kind = p->what && !strcmp(p->what, "config") ? "config" : "blob";
	const char *hex = !strncmp(p->digest, "sha256:", 7) ? p->digest + 7 : p->digest;
	char done[32], total[32];
	if (p->cached) {
		snprintf(buf, len, "Copying %s %.12s skipped: already exists", kind, hex);
		return;
	}
	human(p->done, done, sizeof(done));
	human(p->total, total, sizeof(total));
	snprintf(buf, len, "Copying %s %.12s %s / %s", kind, hex, done, total);
}

/* A new blob: the terminal's open line (another blob's, cut short) is ended first. */
static void switch_blob(struct tool_progress *t, const char *digest)
{
	if (!strcmp(t->digest, digest))
		return;
	if (t->open)
		fputc('\n', stderr);
	snprintf(t->digest, sizeof(t->digest), "%s", digest);
	t->open = t->printed = false;
	t->drawn_ns = 0;
}

void tool_progress(const struct lb_image_progress *p, void *ctx)
{
	struct tool_progress *t = ctx;
	char buf[160];
	/* documents resolved by tag have no size to show; only blobs are copies worth a line */
	if (!p->digest || (p->what && !strcmp(p->what, "manifest")))
		return;
	switch_blob(t, p->digest);
	bool complete = p->cached || (p->total && p->done >= p->total);
	if (t->printed || (!t->tty && !complete))
		return;
	uint64_t now = lb_now_ns();
	if (t->tty && !complete && t->drawn_ns && now - t->drawn_ns < REDRAW_NS)
		return;
	line(p, buf, sizeof(buf));
	if (t->tty)
		fprintf(stderr, "\r\033[K%s%s", buf, complete ? "\n" : "");
	else
		fprintf(stderr, "%s\n", buf);
	fflush(stderr);
	t->drawn_ns = now;
	t->open = t->tty && !complete;
	t->printed = complete;
}

void tool_progress_end(struct tool_progress *t)
{
	if (t->open)
		fputc('\n', stderr);
	t->open = false;
}
