/* The isolation this host really gives (tried, not assumed): see src/sandbox/features.c. */
#ifndef LBBOX_FEATURES_H
#define LBBOX_FEATURES_H

#include <jansson.h>
#include <stdbool.h>

/* {"rootless", "namespaces", "cgroups": {"version", "memory", "pids", "cpu"}, "seccomp",
 *  "overlay", "network": {"off", "on", "host"}} */
json_t *lb_host_features(void);

#endif
