/* The isolation this host really gives (tried, not assumed): see src/sandbox/features.c. */
#ifndef LBBOX_FEATURES_H
#define LBBOX_FEATURES_H

#include <jansson.h>
#include <stdbool.h>

/* {"rootless", "namespaces", "cgroups": {"version", "memory", "pids", "cpu"}, "seccomp",
 *  "overlay", "network": {"off", "on", "host"}} */
json_t *lb_host_features(void);
/* True when a LangBot Box session (namespaces + memory, pids and cpu limits) can be built. */
bool lb_host_can_run_box(const json_t *features);

#endif
