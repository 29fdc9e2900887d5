/*
 * The runtime's figures (the JSON of hub_metrics: "runtime" and
 * "servers") in the Prometheus text exposition format 0.0.4: # HELP and
 * # TYPE for each family, counters ending in _total, gauges, and call
 * latency as a summary (quantiles over the last minute; sum and count
 * since the start), each server's name an escaped label.
 */
#ifndef MCPV_METRICS_PROM_H
#define MCPV_METRICS_PROM_H

#include <jansson.h>

#include "util/buf.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Appends the figures as exposition text to out. */
void prom_render(const json_t *figures, struct buf *out);
/* Appends s as a label value, between double quotes: backslash, double
 * quote and newline escaped as the format asks. */
void prom_label_value(struct buf *out, const char *s);

#endif
