/* The custom allreduce kernels (models/coll/coll_oneshot.c's one-shot and
 * two-shot, pull and push) on the transaction-level engine: each phase that
 * all ranks run together (a flag barrier, a data exchange) is one packet run
 * of its TLPs, and the phases follow one another, as the kernels' barriers
 * and waits make them (docs/model.md, "The transaction-level engine"). */
#ifndef MODELS_TLP_TLP_COLL_H
#define MODELS_TLP_TLP_COLL_H

#include "models/coll/coll.h"
#include "models/tlp/tlp.h"

/* Predict allreduce request r (algo oneshot, twoshot, oneshot-push or
 * twoshot-push) on n: the time and its split as coll_predict fills them
 * (transfer = each exchange as rank 0 alone would run it; the rest of the
 * exchange, contention). ERR_USAGE for another collective or algorithm.
 * window_ps as tlp_run. */
int tlp_coll_predict(tlp_net *n, const coll_req *r, int64_t window_ps, coll_result *out,
                     err *e);

#endif
