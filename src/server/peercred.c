/*
 * Who is at the other end of a loopback TCP connection. Without a control token the runtime
 * listens on loopback only, but every local user can reach loopback, and a Box request mounts
 * host paths and runs commands as lbbox's user: so without a token only peers running as that
 * user (or as root) are let in. TCP has no SO_PEERCRED; the kernel's socket table
 * (/proc/net/tcp, tcp6) names the owner of the client's end, found by its address and port.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

/* An address as /proc/net/tcp* prints it: its 32-bit words in host order, %08X each. */
static void hex_words(const struct sockaddr_storage *a, char *out, size_t len)
{
	const uint32_t *w = a->ss_family == AF_INET
				? (const uint32_t *)&((const struct sockaddr_in *)a)->sin_addr
				: (const uint32_t *)&((const struct sockaddr_in6 *)a)->sin6_addr;
	int n = a->ss_family == AF_INET ? 1 : 4;
	out[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%08X", w[i]);
}

static unsigned port_of(const struct sockaddr_storage *a)
{
	return ntohs(a->ss_family == AF_INET ? ((const struct sockaddr_in *)a)->sin_port
					     : ((const struct sockaddr_in6 *)a)->sin6_port);
}

/* The uid owning the socket whose local end is `local` and remote end `remote`; -1 if none. */
static long owner_in(const char *table, const char *local, const char *remote)
{
	FILE *f = fopen(table, "re");
	char line[512];
	long uid = -1;
	while (f && uid < 0 && fgets(line, sizeof(line), f)) {
		char l[64], r[64];
		long u;
		if (sscanf(line, " %*d: %63s %63s %*x %*x:%*x %*x:%*x %*x %ld", l, r, &u) == 3 &&
		    !strcmp(l, local) && !strcmp(r, remote))
			uid = u;
	}
	if (f)
		fclose(f);
	return uid;
}

long server_peer_uid(int fd)
{
	struct sockaddr_storage me, peer;
	socklen_t a = sizeof(me), b = sizeof(peer);
	char mine[64], theirs[64], local[80], remote[80];
	if (getsockname(fd, (struct sockaddr *)&me, &a) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &b) < 0 || me.ss_family != peer.ss_family ||
	    (me.ss_family != AF_INET && me.ss_family != AF_INET6))
		return -1;
	hex_words(&peer, theirs, sizeof(theirs));
	hex_words(&me, mine, sizeof(mine));
	/* the client's socket: its local end is our peer */
	snprintf(local, sizeof(local), "%s:%04X", theirs, port_of(&peer));
	snprintf(remote, sizeof(remote), "%s:%04X", mine, port_of(&me));
	return owner_in(me.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6", local,
			remote);
}

bool server_peer_trusted(int fd)
{
	long uid = server_peer_uid(fd);
	return uid >= 0 && (uid == 0 || (uid_t)uid == geteuid());
}
