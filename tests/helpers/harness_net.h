// Test hosts in network namespaces: shell commands, background servers, a DNS responder.
// Shared by the network suites; traffic only ever goes to namespaces the tests made.
#ifndef LBT_HARNESS_NET_H
#define LBT_HARNESS_NET_H

struct lb_run_out;

// Runs `sh -c` on the formatted command; returns its exit status.
int lbt_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Output of a shell command (stdout), or NULL.
char *lbt_sh_out(const char *cmd);
// A background server in its own process group, stopped by lbt_serve_stop_all.
void lbt_serve(const char *cmd);
void lbt_serve_stop_all(void);
// Polls until `cmd` succeeds (at most 5 s); fails the test otherwise.
void lbt_wait_ready(const char *cmd);
// `lbbox run --rootfs <busybox> --network net [opt1] [opt2] -- sh -c script`.
void lbt_run_net(struct lb_run_out *o, const char *net, const char *script, const char *opt1,
		 const char *opt2);
// n sandboxes at once, each `lbbox run --rootfs <busybox> --network on -- sh -c script`;
// waits for all (timeout seconds each) and fills out[0..n-1].
void lbt_run_on_parallel(int n, const char *script, struct lb_run_out *out, double timeout);
// Writes a DNS responder into the work directory and returns its path: `python3 PATH BIND IP`
// answers every A query on BIND:53 with IP.
char *lbt_dns_responder(void);

#endif
