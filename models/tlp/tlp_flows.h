/* Point-to-point patterns (models/fabric/flows.h) on the transaction-level
 * engine: the same cases and the same per-flow times as flows_run, so
 * `collsim flows --engine tlp` prints what `--engine flow` prints. */
#ifndef MODELS_TLP_TLP_FLOWS_H
#define MODELS_TLP_TLP_FLOWS_H

#include "models/fabric/flows.h"
#include "models/tlp/tlp.h"

/* Simulate case c on n (its flows replace n's); time_ps[i] = the time of
 * flow i from the common start to its last byte landing, the engine's setup
 * cost (copy setup or kernel start) included as in flows_run. window_ps as
 * tlp_run. */
int tlp_flows_run(tlp_net *n, const flows_case *c, int64_t window_ps, int64_t *time_ps,
                  err *e);

#endif
