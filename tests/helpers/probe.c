// lbbox-probe: a static helper the integration tests run inside sandboxes.
//
// Each subcommand prints one result line on stdout ("ok", an errno name such as
// EPERM, or a value), so a test asserts on what the sandbox looks like from the
// inside without depending on the sandbox's userland. Only libc is used; the
// binary is linked -static so it runs on any rootfs.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif

#define UNKNOWN_SYSCALL 1000 // far above any allocated x86_64 number

static const char *err_name(int e)
{
	static char buf[32];
	const char *n = strerrorname_np(e);

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

// Print "ok" for r >= 0, else the errno name; exit status mirrors it.
static int report(long r)
{
	if (r >= 0) {
		puts("ok");
		return 0;
	}
	puts(err_name(errno));
	return 1;
}

static long sys_clone_newuser(void)
{
	long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);

	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

static long sys_keyctl(void)
{
	return syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
}

static long sys_add_key(void)
{
	return syscall(SYS_add_key, "user", "lbbox-probe", "x", 1, -2 /* process keyring */);
}

static long sys_bpf(void)
{
	return syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0);
}

static long sys_perf_event_open(void)
{
	return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
}

static long sys_userfaultfd(void)
{
	return syscall(SYS_userfaultfd, 0);
}

static long sys_unshare(void)
{
	return syscall(SYS_unshare, CLONE_NEWNS);
}

static long sys_setns(void)
{
	return syscall(SYS_setns, -1, 0);
}

static long sys_mount(void)
{
	return syscall(SYS_mount, "none", "/lbbox-probe-nonexistent", "tmpfs", 0, NULL);
}

static long sys_umount2(void)
{
	return syscall(SYS_umount2, "/lbbox-probe-nonexistent", 0);
}

static long sys_pivot_root(void)
{
	return syscall(SYS_pivot_root, "/lbbox-probe-nonexistent", "/lbbox-probe-nonexistent");
}

static long sys_ptrace(void)
{
	return syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0);
}

static long sys_io_uring_setup(void)
{
	return syscall(SYS_io_uring_setup, 1, NULL);
}

static long sys_kexec_load(void)
{
	return syscall(SYS_kexec_load, 0, 0, NULL, 0);
}

static long sys_clone3(void)
{
	return syscall(SYS_clone3, NULL, 0);
}

static long sys_unknown(void)
{
	return syscall(UNKNOWN_SYSCALL, 0, 0, 0);
}

static long sys_socket_vsock(void)
{
	return socket(AF_VSOCK, SOCK_STREAM, 0);
}

static long sys_socket_alg(void)
{
	return socket(AF_ALG, SOCK_SEQPACKET, 0);
}

static long sys_getpid(void)
{
	return syscall(SYS_getpid);
}

/* getpid by its x32 number (x86_64's with bit 30 set) */
static long sys_x32_getpid(void)
{
	return syscall(0x40000000L | SYS_getpid);
}

struct sys_probe {
	const char *name;
	long (*fn)(void);
};

static const struct sys_probe sys_probes[] = {
    {"keyctl", sys_keyctl},
    {"add_key", sys_add_key},
    {"bpf", sys_bpf},
    {"perf_event_open", sys_perf_event_open},
    {"userfaultfd", sys_userfaultfd},
    {"unshare", sys_unshare},
    {"setns", sys_setns},
    {"mount", sys_mount},
    {"umount2", sys_umount2},
    {"pivot_root", sys_pivot_root},
    {"ptrace", sys_ptrace},
    {"io_uring_setup", sys_io_uring_setup},
    {"kexec_load", sys_kexec_load},
    {"clone_newuser", sys_clone_newuser},
    {"clone3", sys_clone3},
    {"unknown", sys_unknown},
    {"socket_vsock", sys_socket_vsock},
    {"socket_alg", sys_socket_alg},
    {"getpid", sys_getpid},
    {"x32_getpid", sys_x32_getpid},
};

static int cmd_syscall(char **argv)
{
	for (size_t i = 0; i < sizeof(sys_probes) / sizeof(sys_probes[0]); i++) {
		if (strcmp(argv[0], sys_probes[i].name) == 0) {
			errno = 0;
			return report(sys_probes[i].fn());
		}
	}
	fprintf(stderr, "lbbox-probe: unknown syscall probe %s\n", argv[0]);
	return 2;
}

static int cmd_memhog(char **argv)
{
	size_t mb = strtoul(argv[0], NULL, 10);
	size_t len = mb << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return report(-1);
	for (size_t off = 0; off < len; off += 4096) {
		p[off] = 1;
		if (off % (16 << 20) == 0)
			fprintf(stderr, "memhog: %zu MiB\n", off >> 20);
	}
	puts("ok");
	return 0;
}

static void forkbomb_child(void)
{
	alarm(30); // never outlive a broken test by much
	pause();
	_exit(0);
}

static int cmd_forkbomb(char **argv)
{
	int n = atoi(argv[0]), forked = 0, eagain = 0, other = 0;
	pid_t *kids = calloc((size_t)n + 1, sizeof(*kids));

	for (int i = 0; kids && i < n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			forkbomb_child();
		if (pid > 0)
			kids[forked++] = pid;
		else if (errno == EAGAIN)
			eagain++;
		else
			other++;
	}
	for (int i = 0; i < forked; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < forked; i++)
		waitpid(kids[i], NULL, 0);
	printf("forked=%d eagain=%d other=%d\n", forked, eagain, other);
	free(kids);
	return 0;
}

static int wait_connected(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	int r = poll(&pfd, 1, 3000);

	if (r == 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -1;
	errno = soerr;
	return soerr ? -1 : 0;
}

static int connect_to(int fd, const char *ip, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	return wait_connected(fd);
}

static int cmd_connect(char **argv)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int r;

	if (fd < 0)
		return report(-1);
	r = connect_to(fd, argv[0], atoi(argv[1]));
	r = report(r);
	close(fd);
	return r;
}

static int listen_lo(int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static int cmd_listen_connect(char **argv)
{
	int port = 0, lfd = listen_lo(&port), cfd, afd;
	char c = 0;

	if (lfd < 0)
		return report(-1);
	cfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (cfd < 0 || connect_to(cfd, "127.0.0.1", port) < 0)
		return report(-1);
	afd = accept(lfd, NULL, NULL);
	if (afd < 0 || write(afd, "y", 1) != 1)
		return report(-1);
	for (int i = 0; i < 300 && read(cfd, &c, 1) != 1; i++)
		usleep(10000);
	if (c != 'y') {
		errno = EIO;
		return report(-1);
	}
	return report(0);
}

static int cmd_write(char **argv)
{
	static const char msg[] = "lbbox-probe\n";
	int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int r;

	if (fd < 0)
		return report(-1);
	r = write(fd, msg, sizeof(msg) - 1) == (ssize_t)(sizeof(msg) - 1) ? 0 : -1;
	r = report(r);
	close(fd);
	return r;
}

// Open for writing without writing anything: safe on /proc and /sys files.
static int cmd_openw(char **argv)
{
	int fd = open(argv[0], O_WRONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return report(fd);
}

static int cmd_read(char **argv)
{
	char buf[65536];
	long total = 0;
	ssize_t n;
	int fd = open(argv[0], O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return report(-1);
	while ((n = read(fd, buf, sizeof(buf))) > 0 && total < (64L << 20))
		total += n;
	close(fd);
	if (n < 0)
		return report(-1);
	printf("bytes=%ld\n", total);
	return 0;
}

// Open for reading, without blocking (a FIFO) or taking a terminal: for device nodes.
static int cmd_openr(char **argv)
{
	int fd = open(argv[0], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return report(fd);
}

// mknod PATH c|b MAJOR:MINOR
static int cmd_mknod(char **argv)
{
	unsigned maj, min;

	if (sscanf(argv[2], "%u:%u", &maj, &min) != 2)
		return 2;
	mode_t type = argv[1][0] == 'b' ? S_IFBLK : S_IFCHR;
	return report(mknod(argv[0], type | 0666, makedev(maj, min)));
}

// A signal with a forged siginfo: si_pid 0 (as if from outside) and the given si_code.
static int cmd_sigqueue(char **argv)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = atoi(argv[1]);
	si.si_code = atoi(argv[2]);
	si.si_pid = 0;
	si.si_uid = 0;
	return report(syscall(SYS_rt_sigqueueinfo, atoi(argv[0]), si.si_signo, &si));
}

// flip DIR A B SECONDS: swaps DIR/A and DIR/B (renameat2 RENAME_EXCHANGE) as fast as it can,
// so a path through DIR/A is a directory one moment and a symlink the next.
static int cmd_flip(char **argv)
{
	int dfd = open(argv[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	time_t end = time(NULL) + atoi(argv[3]);
	long n = 0;

	if (dfd < 0)
		return report(-1);
	while (time(NULL) < end)
		if (syscall(SYS_renameat2, dfd, argv[1], dfd, argv[2], 2 /* RENAME_EXCHANGE */) ==
		    0)
			n++;
	printf("flips=%ld\n", n);
	return 0;
}

static int skip_dots(const struct dirent *d)
{
	return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

static int cmd_ls(char **argv)
{
	struct dirent **list;
	int n = scandir(argv[0], &list, skip_dots, alphasort);

	if (n < 0)
		return report(-1);
	for (int i = 0; i < n; i++) {
		printf("%s%s", i ? " " : "", list[i]->d_name);
		free(list[i]);
	}
	putchar('\n');
	free(list);
	return 0;
}

static int cmd_status(char **argv)
{
	FILE *f = fopen("/proc/self/status", "re");
	size_t klen = strlen(argv[0]);
	char line[512];

	if (!f)
		return report(-1);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, argv[0], klen) == 0 && line[klen] == ':') {
			char *v = line + klen + 1;

			v += strspn(v, " \t");
			fputs(v, stdout);
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	puts("missing");
	return 1;
}

static int cmd_cmdline(char **argv)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/cmdline", argv[0]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return report(-1);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return report(-1);
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	puts(buf);
	return 0;
}

static int cmd_pid(char **argv)
{
	printf("%d\n", (int)getpid());
	return 0;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmd_spin(char **argv)
{
	double end = now_sec() + atof(argv[0]);
	volatile unsigned long x = 0;

	while (now_sec() < end)
		for (int i = 0; i < 10000; i++)
			x++;
	puts("ok");
	return 0;
}

/* One pass over /proc/PID/fd of every other process: prints links to host objects it could read. */
static int scan_fds_once(void)
{
	int hits = 0;
	DIR *proc = opendir("/proc");
	struct dirent *p;
	while (proc && (p = readdir(proc))) {
		char dir[64], path[400], link[512];
		if (p->d_name[0] < '1' || p->d_name[0] > '9' || atoi(p->d_name) == getpid())
			continue;
		snprintf(dir, sizeof(dir), "/proc/%s/fd", p->d_name);
		DIR *fds = opendir(dir);
		struct dirent *f;
		while (fds && (f = readdir(fds))) {
			snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
			ssize_t n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strstr(link, "cgroup") || strstr(link, "lock") ||
			    strstr(link, "pidfd")) {
				printf("%s -> %s\n", path, link);
				hits++;
			}
		}
		if (fds)
			closedir(fds);
	}
	if (proc)
		closedir(proc);
	return hits;
}

/* scanfds SECONDS: scans /proc for that long; prints what it could reach, then "scanned". */
static int cmd_scanfds(char **argv)
{
	double end = now_sec() + atof(argv[0]);
	while (now_sec() < end)
		scan_fds_once();
	puts("scanned");
	return 0;
}

/* The program name of stopped process pid (its argv[0]'s last component: a command still being
 * set up carries lbbox's, whatever the kernel made its comm), or "" (gone, or not stopped). */
static void stopped_comm(const char *pid, char *comm, size_t len)
{
	char path[64], buf[512];
	comm[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char *close = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	if (!close || close[1] != ' ' || close[2] != 'T')
		return;
	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	const char *slash = strrchr(buf, '/');
	snprintf(comm, len, "%s", n ? (slash ? slash + 1 : buf) : "?");
}

/* stopnew SECONDS: after a second, SIGSTOPs every other process it may for SECONDS, as fast as it
 * can (a new one is caught within microseconds, before its execve when it is an exec's command
 * being set up); prints "stopping" as it starts, then "stopped NAME" once per stopped process. */
static int cmd_stopnew(char **argv)
{
	char seen[64][16] = {{0}};
	size_t n_seen = 0;
	sleep(1);
	puts("stopping");
	double end = now_sec() + atof(argv[0]);
	for (unsigned i = 0; now_sec() < end; i++) {
		kill(-1, SIGSTOP);
		if (i % 64)
			continue;
		DIR *proc = opendir("/proc");
		struct dirent *p;
		while (proc && (p = readdir(proc))) {
			char comm[32];
			if (p->d_name[0] < '1' || p->d_name[0] > '9' || atoi(p->d_name) == getpid())
				continue;
			stopped_comm(p->d_name, comm, sizeof(comm));
			bool known = !comm[0];
			for (size_t k = 0; k < n_seen && !known; k++)
				known = !strcmp(seen[k], p->d_name);
			if (known || n_seen == 64)
				continue;
			snprintf(seen[n_seen++], sizeof(seen[0]), "%s", p->d_name);
			printf("stopped %s\n", comm);
		}
		if (proc)
			closedir(proc);
	}
	return 0;
}

/* memopen SECONDS: like stopnew, but each stopped process still named lbbox (a command being set
 * up, before its execve) is tried: "open" when its memory opens for writing (/proc/PID/mem),
 * else "denied"; then every stopped process is let go on. */
static int cmd_memopen(char **argv)
{
	sleep(1);
	double end = now_sec() + atof(argv[0]);
	while (now_sec() < end) {
		kill(-1, SIGSTOP);
		DIR *proc = opendir("/proc");
		struct dirent *p;
		while (proc && (p = readdir(proc))) {
			char comm[32], path[64];
			if (p->d_name[0] < '1' || p->d_name[0] > '9' || atoi(p->d_name) == getpid())
				continue;
			stopped_comm(p->d_name, comm, sizeof(comm));
			if (strcmp(comm, "lbbox") != 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%s/mem", p->d_name);
			int fd = open(path, O_RDWR | O_CLOEXEC);
			printf("%s\n", fd >= 0 ? "open" : "denied");
			if (fd >= 0)
				close(fd);
		}
		if (proc)
			closedir(proc);
		kill(-1, SIGCONT);
		usleep(200);
	}
	return 0;
}

/* burn SEC: uses SEC seconds of CPU time, however long that takes on a loaded machine. */
static int cmd_burn(char **argv)
{
	double want = atof(argv[0]);
	volatile unsigned long x = 0;
	struct timespec ts;

	do {
		for (int i = 0; i < 10000; i++)
			x++;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < want);
	puts("ok");
	return 0;
}

static const struct {
	const char *name;
	int res;
} rlimits[] = {
    {"nofile", RLIMIT_NOFILE}, {"nproc", RLIMIT_NPROC},	    {"core", RLIMIT_CORE},
    {"stack", RLIMIT_STACK},   {"fsize", RLIMIT_FSIZE},	    {"as", RLIMIT_AS},
    {"cpu", RLIMIT_CPU},       {"memlock", RLIMIT_MEMLOCK},
};

static void print_lim(rlim_t v)
{
	if (v == RLIM_INFINITY)
		fputs("unlimited", stdout);
	else
		printf("%llu", (unsigned long long)v);
}

static int cmd_rlimit(char **argv)
{
	struct rlimit rl;

	for (size_t i = 0; i < sizeof(rlimits) / sizeof(rlimits[0]); i++) {
		if (strcmp(argv[0], rlimits[i].name) != 0)
			continue;
		if (getrlimit(rlimits[i].res, &rl) < 0)
			return report(-1);
		print_lim(rl.rlim_cur);
		putchar(' ');
		print_lim(rl.rlim_max);
		putchar('\n');
		return 0;
	}
	fprintf(stderr, "lbbox-probe: unknown rlimit %s\n", argv[0]);
	return 2;
}

/* Answers one UDP datagram on PORT with "echo:" and the datagram, then exits. */
static int cmd_udp_echo(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[0]))};
	char buf[512] = "echo:";
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return report(-1);
	puts("listening");
	ssize_t n = recvfrom(fd, buf + 5, sizeof(buf) - 5, 0, (struct sockaddr *)&from, &flen);
	if (n < 0 || sendto(fd, buf, (size_t)n + 5, 0, (struct sockaddr *)&from, flen) < 0)
		return report(-1);
	return 0;
}

struct command {
	const char *name;
	int nargs;
	int (*fn)(char **argv);
	const char *usage;
};

static const struct command commands[] = {
    {"syscall", 1, cmd_syscall, "syscall NAME"},
    {"memhog", 1, cmd_memhog, "memhog MB"},
    {"forkbomb", 1, cmd_forkbomb, "forkbomb N"},
    {"connect", 2, cmd_connect, "connect IP PORT"},
    {"listen-connect", 0, cmd_listen_connect, "listen-connect"},
    {"write", 1, cmd_write, "write PATH"},
    {"openw", 1, cmd_openw, "openw PATH"},
    {"read", 1, cmd_read, "read PATH"},
    {"openr", 1, cmd_openr, "openr PATH"},
    {"mknod", 3, cmd_mknod, "mknod PATH c|b MAJOR:MINOR"},
    {"sigqueue", 3, cmd_sigqueue, "sigqueue PID SIGNAL SI_CODE"},
    {"flip", 4, cmd_flip, "flip DIR A B SECONDS"},
    {"ls", 1, cmd_ls, "ls DIR"},
    {"status", 1, cmd_status, "status KEY"},
    {"cmdline", 1, cmd_cmdline, "cmdline PID"},
    {"rlimit", 1, cmd_rlimit, "rlimit NAME"},
    {"pid", 0, cmd_pid, "pid"},
    {"spin", 1, cmd_spin, "spin SECONDS"},
    {"scanfds", 1, cmd_scanfds, "scanfds SECONDS"},
    {"burn", 1, cmd_burn, "burn CPU_SECONDS"},
    {"stopnew", 1, cmd_stopnew, "stopnew SECONDS"},
    {"memopen", 1, cmd_memopen, "memopen SECONDS"},
    {"udp-echo", 1, cmd_udp_echo, "udp-echo PORT"},
};

static int usage(void)
{
	fputs("usage: lbbox-probe COMMAND [ARGS]\n", stderr);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(stderr, "  %s\n", commands[i].usage);
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return usage();
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		if (argc - 2 != commands[i].nargs)
			return usage();
		return commands[i].fn(argv + 2);
	}
	return usage();
}
