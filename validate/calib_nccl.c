/* NCCL runtime-cost points: a coll set qualifies when it is NCCL's (impl
 * nccl), names its algorithm (ring) and protocol in every row (forced, as
 * hwcheck records NCCL_ALGO / NCCL_PROTO), and ran on 2 real GPUs; of its
 * rows, those of at most CALIB_NCCL_MAX_BYTES that the model runs on one
 * channel are points, the rest are counted as left out. The NCCL version
 * and settings of the run (meas_nccl_env) apply to every prediction of the
 * set, as in collsim validate. Predictions use one
 * collective context per call (the topology changes with every fit step). */
#include "validate/calib_nccl.h"

#include <stdlib.h>
#include <string.h>

#include "models/coll/coll.h"

typedef struct npoint {
    calib_nccl_point p;
    coll_req q;
    const meas_coll *row;  /* the row, for its host probe */
} npoint;

struct calib_nccl {
    npoint *pt;
    size_t n, cap, left_out;
};

static int not_isolating(const meas_set *m, long line, const char *why, err *e)
{
    char where[32] = "";
    if (line)
        snprintf(where, sizeof where, ":%ld", line);
    return err_set(e, ERR_USAGE,
                   "%s%s: %s; calibrate fits point-to-point data only (p2p, flows, host, "
                   "launch) and, of collectives, NCCL microbenchmarks that isolate its runtime "
                   "costs (NCCL_ALGO=Ring and NCCL_PROTO forced, 2 real GPUs, at most %d B on "
                   "one channel: docs/formats.md), so that collectives can be judged on data "
                   "the fit never saw: give it to collsim validate",
                   meas_name(m), where, why, CALIB_NCCL_MAX_BYTES);
}

static int add_set(calib_nccl *c, const meas_set *m, const topo *t, coll_ctx *cc, err *e)
{
    coll_kind kind;
    if (coll_kind_parse(meas_collective(m), &kind))
        return not_isolating(m, 0, "an unknown collective", e);
    if (meas_virtual_ranks(m) > 0 || meas_ranks(m) != 2)
        return not_isolating(m, 0, "not 2 real GPUs", e);
    if (topo_ngpus(t) < 2)
        return not_isolating(m, 0, "the topology has fewer than 2 GPUs", e);
    size_t used = 0;
    for (size_t i = 0; i < meas_ncoll(m); i++) {
        const meas_coll *k = meas_coll_at(m, i);
        if (strcmp(k->impl, "nccl"))
            return not_isolating(m, k->line, "not NCCL", e);
        coll_algo algo;
        if (coll_algo_parse(k->algo, &algo) || algo != ALGO_RING)
            return not_isolating(m, k->line, "the algorithm is not forced to ring", e);
        coll_proto proto;
        if (coll_proto_parse(k->proto, &proto) || proto == PROTO_AUTO)
            return not_isolating(m, k->line, "the protocol is not forced", e);
        coll_req q;
        if (meas_coll_req(m, k, t, kind, 2, &q, NULL, e))
            return e->code;
        if (k->bytes > CALIB_NCCL_MAX_BYTES || k->bytes == 0) {
            c->left_out++;
            continue;
        }
        coll_result res;
        if (coll_predict(cc, &q, &res, e))
            return err_wrap(e, "%s:%ld", meas_name(m), k->line);
        if (res.channels != 1) {
            c->left_out++;
            continue;
        }
        if (c->n == c->cap) {
            size_t cap = c->cap ? 2 * c->cap : 32;
            npoint *x = realloc(c->pt, cap * sizeof *x);
            if (!x)
                return err_set(e, ERR_SYSTEM, "out of memory");
            c->pt = x;
            c->cap = cap;
        }
        npoint *x = &c->pt[c->n++];
        x->q = q;
        x->row = k;
        x->p = (calib_nccl_point){m, k->line, k->time_us, q.proto, q.graph, k->bytes, ""};
        snprintf(x->p.label, sizeof x->p.label, "%s ring(%s) %llu B%s", coll_kind_name(kind),
                 coll_proto_name(q.proto), (unsigned long long)k->bytes, q.graph ? " graph" : "");
        used++;
    }
    if (!used)
        return not_isolating(m, 0, "no row of at most that size runs on one channel", e);
    return 0;
}

int calib_nccl_build(meas_set *const *sets, int n, const topo *t, calib_nccl **out, err *e)
{
    *out = NULL;
    calib_nccl *c = calloc(1, sizeof *c);
    coll_ctx *cc = c ? coll_ctx_new(t) : NULL;
    if (!c || !cc) {
        free(c);
        coll_ctx_free(cc);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        if (meas_kind_of(sets[i]) == MEAS_COLL)
            rc = add_set(c, sets[i], t, cc, e);
    coll_ctx_free(cc);
    if (rc) {
        calib_nccl_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void calib_nccl_free(calib_nccl *c)
{
    if (!c)
        return;
    free(c->pt);
    free(c);
}

size_t calib_nccl_count(const calib_nccl *c) { return c->n; }
size_t calib_nccl_left_out(const calib_nccl *c) { return c->left_out; }

const calib_nccl_point *calib_nccl_at(const calib_nccl *c, size_t i)
{
    ASSERTF(i < c->n, "i=%zu n=%zu", i, c->n);
    return &c->pt[i].p;
}

int calib_nccl_has(const calib_nccl *c, coll_proto p, int graph)
{
    for (size_t i = 0; i < c->n; i++)
        if ((p == PROTO_AUTO || c->pt[i].p.proto == p) && c->pt[i].p.graph == graph)
            return 1;
    return 0;
}

int calib_nccl_predict(const calib_nccl *c, const topo *t, double *pred_us, err *e)
{
    if (!c->n)
        return 0;
    coll_ctx *cc = coll_ctx_new(t);
    if (!cc)
        return err_set(e, ERR_SYSTEM, "out of memory");
    const topo_params *tp = topo_params_get(t);
    int rc = 0;
    for (size_t i = 0; i < c->n && !rc; i++) {
        coll_req q = c->pt[i].q;
        coll_result res;
        if ((rc = coll_predict(cc, &q, &res, e))) {
            err_wrap(e, "%s:%ld", meas_name(c->pt[i].p.set), c->pt[i].p.line);
            break;
        }
        int64_t issue =
            meas_nccl_issue_ps(c->pt[i].p.set, c->pt[i].row, tp, &q, res.channels);
        pred_us[i] = (double)(res.time_ps > issue ? res.time_ps : issue) * 1e-6;
    }
    coll_ctx_free(cc);
    return rc;
}
