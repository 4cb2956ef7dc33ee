/* Calibration candidates (validate/cand.h): which parameters the measured
 * points touch, their domains and starts, and what each point's case is.
 * A link class is a candidate when a measured route crosses it; a machine
 * key when the data have the op or pattern that depends on it. */
#include "validate/cand.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "validate/calib.h"

static cand *add_cand(cand *c, int *n, const char *key, double topo_value, double start,
                      double lo, double hi)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(c[i].key, key))
            return &c[i];
    if (*n == CAND_MAX)
        return NULL;
    cand *x = &c[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->key, sizeof x->key, "%s", key);
    x->topo_value = x->kept = topo_value;
    x->start = start;
    x->lo = lo;
    x->hi = hi;
    x->status = "fitted";
    x->active = 1;
    return x;
}

/* The rows of the case of point pt: [*first, *end) of its set. */
static void case_rows(const pts_point *pt, size_t *first, size_t *end)
{
    const meas_set *m = pt->set;
    size_t n = meas_nxfer(m), at = 0;
    while (at < n && meas_xfer_at(m, at)->line != pt->line)
        at++;
    int id = at < n ? meas_xfer_at(m, at)->case_id : -1;
    size_t a = at, b = at;
    while (a > 0 && meas_xfer_at(m, a - 1)->case_id == id)
        a--;
    while (b < n && meas_xfer_at(m, b)->case_id == id)
        b++;
    *first = a;
    *end = b;
}

/* Fill info[i] for every transfer point (launch points stay zero). */
void cand_point_info(const pts *p, const topo *t, const cand *c, int nc, cand_point *info)
{
    for (size_t i = 0; i < pts_count(p); i++) {
        const pts_point *pt = pts_at(p, i);
        cand_point *q = &info[i];
        memset(q, 0, sizeof *q);
        if (pt->case_no < 0)
            continue;
        size_t a, b;
        case_rows(pt, &a, &b);
        int srcs[64], dsts[64], ns = 0, nd = 0;
        for (size_t k = a; k < b; k++) {
            const meas_xfer *x = meas_xfer_at(pt->set, k);
            if (x->flow < 0)
                continue;
            q->nflows++;
            q->op = x->op;
            q->bytes = (double)x->bytes;
            q->latency = !strcmp(x->pattern, "latency");
            int dup = 0;
            for (int s = 0; s < ns; s++)
                dup |= srcs[s] == x->src;
            if (!dup && x->src >= 0 && ns < 64)
                srcs[ns++] = x->src;
            dup = 0;
            for (int s = 0; s < nd; s++)
                dup |= dsts[s] == x->dst;
            if (!dup && x->dst >= 0 && nd < 64)
                dsts[nd++] = x->dst;
            if (x->src < 0 || x->dst < 0 || x->src >= topo_ngpus(t) || x->dst >= topo_ngpus(t))
                continue;
            const int *links;
            const int8_t *dirs;
            int h = topo_route(t, topo_gpu_node(t, x->src), topo_gpu_node(t, x->dst), &links,
                               &dirs);
            for (int l = 0; l < h; l++) {
                const topo_link *lk = topo_link_at(t, links[l]);
                char cls[48], key[80];
                calib_link_class(lk->kind, topo_node_at(t, lk->a)->kind,
                                 topo_node_at(t, lk->b)->kind, cls);
                for (int pass = 0; pass < 2; pass++) {
                    snprintf(key, sizeof key, "link.%s.%s", cls, pass ? "lat_ns" : "bw_GBps");
                    for (int j = 0; j < nc && j < 64; j++)
                        if (!strcmp(c[j].key, key))
                            q->cls |= 1ull << j;
                }
            }
        }
        q->nsrc = ns;
        q->ndst = nd;
        double total = pt->flow < 0 ? q->bytes * q->nflows : q->bytes;
        q->bw_GBps = total / (pt->meas_us * 1e3);
    }
}

/* The lowest total rate of a measured case where >= 2 GPUs send (writes,
 * ops 0) or >= 2 GPUs' data is read (reads, ops 1) at once: where a
 * collapse rule would show. 0 if there is none. */
static double lowest_shared_rate(const pts *p, const cand_point *info, int reads)
{
    double best = 0;
    for (size_t i = 0; i < pts_count(p); i++) {
        const cand_point *q = &info[i];
        int is_read = q->op == MEAS_READ || q->op == MEAS_COPY_READ;
        int is_write = q->op == MEAS_WRITE || q->op == MEAS_COPY_WRITE;
        if (pts_at(p, i)->flow >= 0 || q->nflows < 2 || q->nsrc < 2 || q->latency ||
            (reads ? !is_read : !is_write))
            continue;
        if (best == 0 || q->bw_GBps < best)
            best = q->bw_GBps;
    }
    return best;
}

static int has_switch(const topo *t)
{
    for (int i = 0; i < topo_nnodes(t); i++)
        if (topo_node_at(t, i)->kind == TOPO_SWITCH)
            return 1;
    return 0;
}

static int add_param(cand *c, int *n, const char *key, double value, double start0, double lo,
                     double hi, int off, err *e);

/* Candidates from what the data touch, in screening priority: link
 * bandwidths, link latencies, read parameters, collapse, host, launch.
 * Link and time keys have a lower bound of 0 in the fit's sense (a log
 * parameter's floor, where it "runs to zero"), bandwidths a positive one. */
static int add_turn(const topo *t, const pts *p, const cand_point *info, cand *c, int *n,
                    int only_on, err *e);

int cand_build(const topo *t, const pts *p, const calib_nccl *nc_pts, const cand_point *info,
                      cand *c, int *n, err *e)
{
    const topo_params *tp = topo_params_get(t);
    char cls[48], key[80];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < topo_nlinks(t); i++) {
            if (!pts_link_used(p, i))
                continue;
            const topo_link *l = topo_link_at(t, i);
            calib_link_class(l->kind, topo_node_at(t, l->a)->kind, topo_node_at(t, l->b)->kind,
                             cls);
            /* Start from the mean over the class's links; one value only if
             * they all have it. */
            double sum = 0, lo = INFINITY, hi = -INFINITY;
            int k = 0;
            for (int j = 0; j < topo_nlinks(t); j++) {
                const topo_link *m = topo_link_at(t, j);
                char c2[48];
                calib_link_class(m->kind, topo_node_at(t, m->a)->kind,
                                 topo_node_at(t, m->b)->kind, c2);
                if (!strcmp(c2, cls)) {
                    double v = pass == 0 ? m->bw_Bps / 1e9 : (double)m->lat_ps / 1e3;
                    sum += v;
                    lo = fmin(lo, v);
                    hi = fmax(hi, v);
                    k++;
                }
            }
            double mean = sum / k, one = lo == hi ? mean : NAN;
            snprintf(key, sizeof key, "link.%s.%s", cls, pass == 0 ? "bw_GBps" : "lat_ns");
            cand *x = add_cand(c, n, key, one, pass == 0 ? mean : (mean > 1 ? mean : 1),
                               pass == 0 ? 1e-3 : 0, pass == 0 ? 1e4 : 1e5);
            if (!x)
                return err_set(e, ERR_USAGE, "more than %d parameters", CAND_MAX);
            x->link = 1;
        }
    /* Machine parameters: key, topology value, start, domain. */
    struct mp {
        const char *key;
        double value, start, lo, hi;
        int want, off;
    } mps[] = {
        {"copy_setup_us", (double)tp->copy_setup_ps / 1e6,
         tp->copy_setup_ps > 0 ? (double)tp->copy_setup_ps / 1e6 : 1, 0, 1e4,
         pts_has_op(p, MEAS_COPY) || pts_has_op(p, MEAS_COPY_WRITE) ||
             pts_has_op(p, MEAS_COPY_READ), 0},
        /* A host copy's own setup, where the topology separates it from a
         * peer copy's (copy_host_setup > 0). */
        {"copy_host_setup_us", (double)tp->copy_host_setup_ps / 1e6,
         (double)tp->copy_host_setup_ps / 1e6, 0, 1e4,
         tp->copy_host_setup_ps > 0 && pts_has_host(p) && pts_has_op(p, MEAS_COPY), 0},
        /* The host's issue of a copy: the floor of a timed loop's small
         * copies (one issue per pair copy, two per bidirectional case). */
        {"copy_issue_us", (double)tp->copy_issue_ps / 1e6,
         tp->copy_issue_ps > 0 ? (double)tp->copy_issue_ps / 1e6 : 1, 0, 1e4,
         pts_has_loop_copies(p) || pts_has_launch(p, "memcpy-host"), 0},
        /* A staged copy's hand-over per chunk (the chunk itself stays at its
         * value: one rate per size cannot tell the two apart). */
        {"staged_handover_us", (double)tp->staged_handover_ps / 1e6,
         tp->staged_handover_ps > 0 ? (double)tp->staged_handover_ps / 1e6 : 5, 0, 1e4,
         pts_has_op(p, MEAS_COPY_STAGED), 0},
        {"fence_sys_us", (double)tp->fence_sys_ps / 1e6,
         tp->fence_sys_ps > 0 ? (double)tp->fence_sys_ps / 1e6 : 0.5, 0, 1e4,
         pts_has_launch(p, "fence-sys"), 0},
        /* The fence's wait after stores into a peer (hwcheck launch --post
         * --peer); started from the route's write latency it stands for. */
        {"fence_ack_us", (double)tp->fence_ack_ps / 1e6,
         tp->fence_ack_ps > 0 ? (double)tp->fence_ack_ps / 1e6 : 1, 0, 1e4,
         pts_has_launch(p, "fence-ack"), 0},
        {"read_tags", tp->read_tags, tp->read_tags, 1, 16384,
         pts_has_op(p, MEAS_READ) || pts_has_op(p, MEAS_COPY) || pts_has_op(p, MEAS_COPY_READ),
         0},
        /* A copy engine's own cap on the read tags, where the topology has
         * one (ce_read_tags > 0: the reference box). */
        {"ce_read_tags", tp->ce_read_tags, tp->ce_read_tags, 1, 16384,
         tp->ce_read_tags > 0 && (pts_has_op(p, MEAS_COPY) || pts_has_op(p, MEAS_COPY_READ)), 0},
        {"read_extra_lat_ns", (double)tp->read_extra_lat_ps / 1e3,
         tp->read_extra_lat_ps > 1000 ? (double)tp->read_extra_lat_ps / 1e3 : 1, 0, 1e5,
         pts_has_op(p, MEAS_READ) || pts_has_op(p, MEAS_COPY) || pts_has_op(p, MEAS_COPY_READ),
         0},
        /* A collapse rule the topology has off is a candidate where the data
         * have its pattern (>= 2 GPUs behind one switch sending at once),
         * starting from the lowest such total rate measured. */
        {"arb_collapse_GBps", tp->arb_collapse_Bps / 1e9,
         tp->arb_collapse_Bps > 0 ? tp->arb_collapse_Bps / 1e9 : lowest_shared_rate(p, info, 0),
         1e-3, 1e3,
         !(tp->tlp_turn_ps > 0) &&
             (tp->arb_collapse_Bps > 0 || (has_switch(t) && lowest_shared_rate(p, info, 0) > 0)),
         !(tp->arb_collapse_Bps > 0)},
        {"arb_collapse_read_GBps", tp->arb_collapse_read_Bps / 1e9,
         tp->arb_collapse_read_Bps > 0 ? tp->arb_collapse_read_Bps / 1e9
                                       : lowest_shared_rate(p, info, 1),
         1e-3, 1e3,
         !(tp->tlp_turn_cpl_ps > 0) &&
             (tp->arb_collapse_read_Bps > 0 ||
              (has_switch(t) && lowest_shared_rate(p, info, 1) > 0)),
         !(tp->arb_collapse_read_Bps > 0)},
        {"socket_read_GBps", tp->socket_read_Bps / 1e9, tp->socket_read_Bps / 1e9, 1e-3, 1e5,
         tp->socket_read_Bps > 0, 0},
        /* Kernels measured with few thread blocks (hwcheck --blocks) reach
         * the per-block rates; with one block per SM the data say nothing of
         * them and the screen leaves them out. */
        {"kernel_base_us", (double)tp->kernel_base_ps / 1e6,
         tp->kernel_base_ps > 0 ? (double)tp->kernel_base_ps / 1e6 : 1, 0, 1e4,
         pts_has_op(p, MEAS_WRITE) || pts_has_op(p, MEAS_READ), 0},
        {"cta_store_GBps", tp->cta_store_Bps / 1e9,
         tp->cta_store_Bps > 0 ? tp->cta_store_Bps / 1e9 : 10, 1e-3, 1e5,
         pts_has_op(p, MEAS_WRITE), 0},
        {"cta_load_GBps", tp->cta_load_Bps / 1e9,
         tp->cta_load_Bps > 0 ? tp->cta_load_Bps / 1e9 : 10, 1e-3, 1e5,
         pts_has_op(p, MEAS_READ), 0},
        {"hostmem_GBps", tp->hostmem_Bps / 1e9, tp->hostmem_Bps / 1e9, 1e-3, 1e5,
         pts_has_host(p), 0},
        {"launch_us", (double)tp->launch_ps / 1e6,
         tp->launch_ps > 0 ? (double)tp->launch_ps / 1e6 : 1, 0, 1e4,
         pts_has_launch(p, "launch"), 0},
        {"graph_node_us", (double)tp->graph_node_ps / 1e6,
         tp->graph_node_ps > 0 ? (double)tp->graph_node_ps / 1e6 : 1, 0, 1e4,
         pts_has_launch(p, "graph-node"), 0},
        /* NCCL's host cost per call, from the 1-rank rows of hwcheck launch
         * (each less the same run's launch-host). */
        {"nccl_host_us", (double)tp->nccl_host_ps / 1e6, 1, 0, 1e4,
         pts_has_launch(p, "nccl-call-host"), 0},
        {"nccl_group_us", (double)tp->nccl_group_ps / 1e6, 1, 0, 1e4,
         pts_has_launch(p, "nccl-p2p"), 0},
        {"nccl_p2p_op_us", (double)tp->nccl_p2p_op_ps / 1e6, 0.2, 0, 1e4,
         pts_group_ops_vary(p), 0},
        {"nccl_graph_call_us", (double)tp->nccl_graph_call_ps / 1e6,
         tp->graph_node_ps > 0 ? (double)tp->graph_node_ps / 1e6 : 1, 0, 1e4,
         pts_has_launch(p, "nccl-graph-node"), 0},
    };
    for (size_t i = 0; i < sizeof mps / sizeof mps[0]; i++) {
        if (!mps[i].want)
            continue;
        TRY(add_param(c, n, mps[i].key, mps[i].value, mps[i].start, mps[i].lo, mps[i].hi,
                      mps[i].off, e));
    }
    /* Where the topology has the root ports' turnaround, the flow mode's
     * collapse follows from it (fabric.c): its candidates, as at the
     * transaction level. */
    TRY(add_turn(t, p, info, c, n, 1, e));
    /* NCCL's runtime costs, from the microbenchmarks that isolate them: per
     * protocol measured, its kernel start and step cost; the host cost of a
     * call, eager and in a graph, where such rows were measured (0, "as a
     * plain kernel", starts from that kernel's cost). */
    static const struct {
        coll_proto p;
        const char *name;
        int idx;
    } protos[] = {{PROTO_LL, "ll", TOPO_NCCL_LL}, {PROTO_LL128, "ll128", TOPO_NCCL_LL128},
                  {PROTO_SIMPLE, "simple", TOPO_NCCL_SIMPLE}};
    for (size_t i = 0; i < sizeof protos / sizeof protos[0]; i++) {
        if (!calib_nccl_has(nc_pts, protos[i].p, 0) && !calib_nccl_has(nc_pts, protos[i].p, 1))
            continue;
        double st = (double)tp->nccl_start_ps[protos[i].idx] / 1e6,
               sp = (double)tp->nccl_step_ps[protos[i].idx] / 1e6;
        snprintf(key, sizeof key, "nccl_start_%s_us", protos[i].name);
        TRY(add_param(c, n, key, st, st > 0 ? st : 1, 0, 1e4, 0, e));
        snprintf(key, sizeof key, "nccl_step_%s_us", protos[i].name);
        TRY(add_param(c, n, key, sp, sp > 0 ? sp : 0.1, 0, 1e4, 0, e));
    }
    for (int graph = 0; graph < 2; graph++) {
        /* Eager, with NCCL's group path known (nccl_group_us, from hwcheck
         * launch --nccl-only) the call's cost is derived from it, not fitted. */
        if (!calib_nccl_has(nc_pts, PROTO_AUTO, graph) ||
            (graph && pts_has_launch(p, "nccl-graph-node")) ||   /* already a candidate */
            (!graph && tp->nccl_group_ps > 0 && tp->nccl_call_ps == 0))
            continue;
        int64_t v = graph ? tp->nccl_graph_call_ps : tp->nccl_call_ps;
        double plain = (double)topo_nccl_issue_ps(tp, graph, 2, 0) / 1e6;
        TRY(add_param(c, n, graph ? "nccl_graph_call_us" : "nccl_call_us", (double)v / 1e6,
                      plain > 0 ? plain : 1, 0, 1e4, v == 0, e));
    }
    return 0;
}

/* One machine-wide candidate, its start kept inside its domain. */
static int add_param(cand *c, int *n, const char *key, double value, double start0, double lo,
                     double hi, int off, err *e)
{
    {
        double start = fmin(fmax(start0, 2 * lo + 1e-9), 0.5 * hi);
        cand *x = add_cand(c, n, key, value, start, lo, hi);
        if (!x)
            return err_set(e, ERR_USAGE, "more than %d parameters", CAND_MAX);
        x->off = off;
    }
    return 0;
}

/* Starting values from the data, where the topology's fit them worse: link
 * latencies scaled so the smallest measured latency is met, and a link
 * class slower than a single flow measured through it raised to that
 * plateau. Writes the starts into data[], a description into why. */
int cand_data_starts(const pts *p, const cand_point *info, const double *pred_start,
                     const cand *c, int nc, double *data, char *why, size_t nwhy)
{
    int changed = 0, nraised = 0;
    double lat_factor = 1;
    for (int j = 0; j < nc; j++)
        data[j] = c[j].start;
    /* The smallest measured latency. */
    int imin = -1;
    for (size_t i = 0; i < pts_count(p); i++)
        if (info[i].latency && (imin < 0 || pts_at(p, i)->meas_us < pts_at(p, (size_t)imin)->meas_us))
            imin = (int)i;
    if (imin >= 0 && pred_start[imin] > 0) {
        double s = pts_at(p, (size_t)imin)->meas_us / pred_start[imin];
        if (s < 0.8 || s > 1.25) {
            lat_factor = s;
            for (int j = 0; j < nc && j < 64; j++)
                if (c[j].link && strstr(c[j].key, ".lat_ns") && (info[imin].cls >> j & 1)) {
                    data[j] = fmin(fmax(c[j].start * s, 1e-3), 0.5 * c[j].hi);
                    changed = 1;
                }
        }
    }
    /* Plateau: no link slower than a single large flow measured across it. */
    for (int j = 0; j < nc && j < 64; j++) {
        if (!c[j].link || !strstr(c[j].key, ".bw_GBps"))
            continue;
        double plateau = 0;
        for (size_t i = 0; i < pts_count(p); i++)
            if (info[i].nflows == 1 && info[i].bytes >= 1048576 && !info[i].latency &&
                (info[i].cls >> j & 1))
                plateau = fmax(plateau, info[i].bw_GBps);
        if (plateau > data[j] && plateau < 0.5 * c[j].hi) {
            data[j] = plateau;
            nraised++;
            changed = 1;
        }
    }
    size_t len = 0;
    why[0] = 0;
    if (lat_factor != 1)
        len += (size_t)snprintf(why, nwhy, "link latencies x %.3g, to the smallest measured "
                                "latency", lat_factor);
    if (nraised)
        snprintf(why + len, len < nwhy ? nwhy - len : 0, "%s%d link bandwidth%s raised to the "
                 "plateau measured through %s", len ? "; " : "", nraised,
                 nraised == 1 ? "" : "s", nraised == 1 ? "it" : "them");
    return changed;
}

/* Why a candidate without influence at the start was left out. */
const char *cand_no_influence_text(const cand *q)
{
    return q->probe_felt ? "not binding (no value from 1/16 to 16 x its start fits better)"
                         : "no influence on the data";
}

/* Fit parameters from the active candidates (map -1 terminated); returns n. */
int cand_load_params(const cand *c, int nc, int *map, fit_param *fp)
{
    int n = 0;
    for (int j = 0; j < nc; j++)
        if (c[j].active) {
            map[n] = j;
            fp[n] = (fit_param){c[j].key, c[j].start, c[j].lo, c[j].hi, 1, NAN};
            n++;
        }
    map[n] = -1;
    return n;
}

/* Candidate q leaves the fit: keep `value` (moved if it is not the
 * topology's) with the reason. */
void cand_leave_out(cand *q, double value, const char *fmt, const char *arg)
{
    q->active = 0;
    q->kept = value;
    q->moved = !isnan(value) && !(value == q->topo_value);
    snprintf(q->why, sizeof q->why, fmt, arg);
}

/* The value a refused candidate keeps: zero for one that ran to zero (the
 * data say negligible), the solution's for one without influence there
 * (the data put it out of the way), else the topology's (0 for a rule the
 * topology has off). */
double cand_refused_value(const cand *q, int why, double solved)
{
    if (why == FIT_TO_ZERO)
        return q->off ? 0 : q->lo > 0 ? q->lo : 0;
    if (why == FIT_NO_INFLUENCE && !q->off && isfinite(solved))
        return solved;
    return q->off ? 0 : q->topo_value;
}

/* The root ports' turnaround, posted and completions: kept where the
 * topology has it, else a candidate where the data have the collapse's
 * pattern (only_on: just the ones the topology has); a key already listed is
 * not added again. */
static int add_turn(const topo *t, const pts *p, const cand_point *info, cand *c, int *n,
                    int only_on, err *e)
{
    const topo_params *tp = topo_params_get(t);
    int sw = has_switch(t);
    for (int reads = 0; reads < 2; reads++) {
        int64_t v = reads ? tp->tlp_turn_cpl_ps : tp->tlp_turn_ps;
        const char *key = reads ? "tlp_turn_cpl_ns" : "tlp_turn_ns";
        double low = lowest_shared_rate(p, info, reads);
        if (!(v > 0) && (only_on || !(sw && low > 0)))
            continue;
        int have = 0;
        for (int i = 0; i < *n; i++)
            have |= !strcmp(c[i].key, key);
        if (have)
            continue;
        /* Off in the topology: start where every TLP of the lowest shared
         * rate measured would wait the turnaround (MPS bytes per turn). */
        double start = v > 0 ? (double)v / 1e3 : tp->pcie_mps_bytes / low;
        TRY(add_param(c, n, key, (double)v / 1e3, start, 0, 1e6, !(v > 0), e));
    }
    return 0;
}

int cand_build_tlp(const topo *t, const pts *p, const cand_point *info, cand *c, int *n, err *e)
{
    return add_turn(t, p, info, c, n, 0, e);
}
