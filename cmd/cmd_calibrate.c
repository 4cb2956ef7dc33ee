/* `collsim calibrate MEAS... --topo T -o CALIB`: fit the point-to-point
 * model's free parameters to hwcheck p2p/flows/host/launch measurements.
 * The candidates are the bandwidth and latency of every link class on a
 * measured route, the read parameters when reads or copies were measured,
 * the arbitration collapse rates (also where the topology has them off and
 * the data have the pattern that triggers them), host memory bandwidth for
 * host patterns, the launch overheads for launch data, and NCCL's runtime
 * costs (kernel start and step per protocol, host cost of a call) for the
 * coll microbenchmarks that isolate them (validate/calib_nccl.h). Every candidate is
 * fitted inside its domain (validate/fit.c). The start is the topology's
 * values or, when they fit worse, values read from the data (the smallest
 * measured latency, the plateau bandwidth through each link class). Unless
 * --fit names the parameters, they are screened at the start (no influence
 * on the data, or not separable from one screened before); one without
 * influence there is probed at other values (a capacity that does not bind
 * at the start) and fitted from the best probe when that fits better. The
 * fit is repeated without any parameter it refuses, which keeps the value
 * the data gave it (zero for one that ran to zero, the solution's for one
 * without influence there) or else the topology's; after a fit the ones
 * left out for no influence are probed again at the solution. Every
 * parameter left out is reported with the reason. Residuals are
 * ln(predicted / measured), all points weighted alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmds.h"
#include "models/topo/topo.h"
#include "sim/ofile.h"
#include "validate/calib.h"
#include "validate/calib_nccl.h"
#include "validate/fit.h"
#include "validate/meas.h"
#include "validate/points.h"
#include "validate/stats.h"

enum { MAX_FILES = 256, MAX_PARAMS = 64 };

static const char synopsis[] = "collsim calibrate MEAS... [--topo T] -o CALIB [options]";
static const char desc[] =
    "MEAS are hwcheck p2p, flows, host or launch files, and coll files of NCCL\n"
    "microbenchmarks that isolate its runtime costs (Ring and the protocol forced, 2\n"
    "GPUs, small sizes on one channel: docs/formats.md). The fit starts from topology\n"
    "T (a preset or a collsim-topo file), with START applied if given, and writes\n"
    "every candidate (fitted or kept) and START's keys to CALIB (collsim-calib 1).\n"
    "A fit that cannot determine what it must, or misses the data by more than\n"
    "--max-rms, fails with exit 1 naming the key or the points. --fit fits\n"
    "exactly these keys and fails if the data cannot determine one; otherwise the\n"
    "parameters the data can determine are chosen, and --fix keeps some out.\n"
    "--patterns and --sizes fit only the transfer cases of these patterns and sizes\n"
    "(bytes per flow), so the rest can be held out for collsim validate.";

/* What the options set. */
typedef struct calibrate_args {
    const char *topo, *out, *start, *fit, *fix, *patterns, *sizes;
    int residuals;
    double max_rms_pct;      /* refuse a fit whose rms error exceeds this */
    report_format fmt;
} calibrate_args;

#define ARGS ((calibrate_args *)ctx)
static int set_topo(void *ctx, const char *a, err *e) { (void)e; ARGS->topo = a; return 0; }
static int set_out(void *ctx, const char *a, err *e) { (void)e; ARGS->out = a; return 0; }
static int set_start(void *ctx, const char *a, err *e) { (void)e; ARGS->start = a; return 0; }
static int set_fit(void *ctx, const char *a, err *e) { (void)e; ARGS->fit = a; return 0; }
static int set_fix(void *ctx, const char *a, err *e) { (void)e; ARGS->fix = a; return 0; }
static int set_patterns(void *ctx, const char *a, err *e) { (void)e; ARGS->patterns = a; return 0; }
static int set_sizes(void *ctx, const char *a, err *e) { (void)e; ARGS->sizes = a; return 0; }
static int set_residuals(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->residuals = 1; return 0; }
static int set_format(void *ctx, const char *a, err *e) { return cli_parse_format(a, &ARGS->fmt, e); }
static int set_max_rms(void *ctx, const char *a, err *e)
{
    char *end;
    double v = strtod(a, &end);
    if (end == a || *end || !(v > 0) || !isfinite(v))
        return err_set(e, ERR_USAGE, "--max-rms: '%s' is not a positive number", a);
    ARGS->max_rms_pct = v;
    return 0;
}
#undef ARGS

static const cli_opt options[] = {
    {"topo", 0, "T", "topology to start from: a preset or a collsim-topo file (default: the "
                     "files' 'preset')", set_topo},
    {"output", 'o', "CALIB", "write the fitted profile to CALIB (required)", set_out},
    {"calib", 0, "START", "apply this calibration profile to T first", set_start},
    {"fit", 0, "K1,K2,...", "fit exactly these parameters", set_fit},
    {"fix", 0, "K1,K2,...", "keep these parameters at their values", set_fix},
    {"patterns", 0, "P1,P2,...", "fit only transfer cases of these patterns", set_patterns},
    {"sizes", 0, "SIZES", "fit only these bytes per flow: S1,S2,... or MIN:MAX (K/M/G)", set_sizes},
    {"residuals", 0, NULL, "also print every point's residual", set_residuals},
    {"max-rms", 0, "PCT", "fail (exit 1, no profile) if the fitted rms error exceeds PCT% "
                          "(default 30)", set_max_rms},
    {"format", 0, "F", "table (default), csv or json", set_format},
    {NULL, 0, NULL, NULL, NULL},
};

typedef struct cand {
    char key[80];
    double topo_value;       /* the topology's value (after START); NaN when the
                                links of the class differ (no one value) */
    double start, lo, hi;    /* where the fit starts, and the key's domain */
    double kept;             /* its value when not fitted */
    int moved;               /* kept differs from the topology's: applied */
    int off;                 /* a mechanism the topology has off (0): reverts to 0 */
    int link;                /* a link-class key (bit in pinfo.cls) */
    int probed;              /* probed already at this start */
    int probe_felt, probe_row;   /* what the probe found (fit_probe) */
    int from_start;          /* START (--calib) names the key */
    const char *status;      /* "fitted" or why it was left out */
    char why[240];
    int active;              /* a candidate (not fixed, not refused by a fit) */
    int screened_out;        /* left out by the last screening */
} cand;

/* What calibrate needs to know of a point beyond pts: its case. */
typedef struct pinfo {
    int nflows;              /* flow rows of its case */
    int nsrc, ndst;          /* distinct GPUs sending / receiving */
    meas_op op;
    double bytes;            /* per flow */
    double bw_GBps;          /* measured: one flow's, or the case's total */
    int latency;             /* a `latency` row */
    uint64_t cls;            /* bit j: candidate j is a link class on its routes */
} pinfo;

typedef struct ctx {
    const topo *base;
    const pts *pts;
    const calib_nccl *nccl;  /* NCCL cost points, after pts's in the residuals */
    cand *c;
    int nc;
    int *map;                /* fit parameter j -> candidate */
    calib *cal;
    double *pred;
    err *e;
} ctx;

static int resid(const double *v, double *r, void *arg, err *e)
{
    ctx *x = arg;
    (void)e;
    calib_free(x->cal);
    if (!(x->cal = calib_new()))
        return err_set(x->e, ERR_SYSTEM, "out of memory");
    int j = 0;
    for (; x->map[j] >= 0; j++) {
        /* Integer parameters (read tags) are fitted as real numbers. */
        TRY(calib_set(x->cal, x->c[x->map[j]].key, v[j], NAN, x->e));
    }
    /* Candidates not fitted whose kept value is not the topology's. */
    for (int k = 0; k < x->nc; k++) {
        const cand *q = &x->c[k];
        int fitted = 0;
        for (int m = 0; m < j && !fitted; m++)
            fitted = x->map[m] == k;
        if (!fitted && q->moved)
            TRY(calib_set(x->cal, q->key, q->kept, NAN, x->e));
    }
    topo *t;
    TRY(calib_apply(x->cal, x->base, &t, x->e));
    size_t np = pts_count(x->pts), nn = calib_nccl_count(x->nccl);
    int rc = pts_predict(x->pts, t, x->pred, x->e);
    if (!rc)
        rc = calib_nccl_predict(x->nccl, t, x->pred + np, x->e);
    topo_free(t);
    if (rc)
        return rc;
    for (size_t i = 0; i < np; i++)
        r[i] = log(x->pred[i] / pts_at(x->pts, i)->meas_us);
    for (size_t i = 0; i < nn; i++)
        r[np + i] = log(x->pred[np + i] / calib_nccl_at(x->nccl, i)->meas_us);
    return 0;
}

/* Measured time of point i (transfer and launch points, then NCCL's). */
static double meas_of(const ctx *x, size_t i)
{
    size_t np = pts_count(x->pts);
    return i < np ? pts_at(x->pts, i)->meas_us : calib_nccl_at(x->nccl, i - np)->meas_us;
}

static cand *add_cand(cand *c, int *n, const char *key, double topo_value, double start,
                      double lo, double hi)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(c[i].key, key))
            return &c[i];
    if (*n == MAX_PARAMS)
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
static void point_info(const pts *p, const topo *t, const cand *c, int nc, pinfo *info)
{
    for (size_t i = 0; i < pts_count(p); i++) {
        const pts_point *pt = pts_at(p, i);
        pinfo *q = &info[i];
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
static double lowest_shared_rate(const pts *p, const pinfo *info, int reads)
{
    double best = 0;
    for (size_t i = 0; i < pts_count(p); i++) {
        const pinfo *q = &info[i];
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
static int candidates(const topo *t, const pts *p, const calib_nccl *nc_pts, const pinfo *info,
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
                return err_set(e, ERR_USAGE, "more than %d parameters", MAX_PARAMS);
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
        {"read_tags", tp->read_tags, tp->read_tags, 1, 16384,
         pts_has_op(p, MEAS_READ) || pts_has_op(p, MEAS_COPY) || pts_has_op(p, MEAS_COPY_READ),
         0},
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
         tp->arb_collapse_Bps > 0 || (has_switch(t) && lowest_shared_rate(p, info, 0) > 0),
         !(tp->arb_collapse_Bps > 0)},
        {"arb_collapse_read_GBps", tp->arb_collapse_read_Bps / 1e9,
         tp->arb_collapse_read_Bps > 0 ? tp->arb_collapse_read_Bps / 1e9
                                       : lowest_shared_rate(p, info, 1),
         1e-3, 1e3,
         tp->arb_collapse_read_Bps > 0 || (has_switch(t) && lowest_shared_rate(p, info, 1) > 0),
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
    };
    for (size_t i = 0; i < sizeof mps / sizeof mps[0]; i++) {
        if (!mps[i].want)
            continue;
        TRY(add_param(c, n, mps[i].key, mps[i].value, mps[i].start, mps[i].lo, mps[i].hi,
                      mps[i].off, e));
    }
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
        if (!calib_nccl_has(nc_pts, PROTO_AUTO, graph))
            continue;
        int64_t v = graph ? tp->nccl_graph_call_ps : tp->nccl_call_ps;
        double plain = (double)topo_nccl_issue_ps(tp, graph) / 1e6;
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
            return err_set(e, ERR_USAGE, "more than %d parameters", MAX_PARAMS);
        x->off = off;
    }
    return 0;
}

/* Split a comma list into items (modifies s); returns the count. */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *p = strtok_r(s, ",", &save); p && n < max; p = strtok_r(NULL, ",", &save))
        items[n++] = p;
    return n;
}

/* "file:line (label)" of point i into buf. */
static const char *point_name(const ctx *x, int i, char *buf, size_t n)
{
    size_t np = pts_count(x->pts);
    if (i < 0 || (size_t)i >= np + calib_nccl_count(x->nccl)) {
        snprintf(buf, n, "-");
    } else if ((size_t)i < np) {
        const pts_point *pt = pts_at(x->pts, (size_t)i);
        snprintf(buf, n, "%s:%ld (%s)", meas_name(pt->set), pt->line, pt->label);
    } else {
        const calib_nccl_point *q = calib_nccl_at(x->nccl, (size_t)i - np);
        snprintf(buf, n, "%s:%ld (%s)", meas_name(q->set), q->line, q->label);
    }
    return buf;
}

/* The points named by rows (-1 ends), as "; the data that should determine
 * it: A, B" into buf; "; no measured point depends on it" when none. */
static const char *data_of(const ctx *x, const int *rows, int nrows, char *buf, size_t n)
{
    int k = 0;
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < nrows; i++) {
        if (rows[i] < 0)
            continue;
        char one[200];
        point_name(x, rows[i], one, sizeof one);
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s",
                                k++ ? ", " : "; the data that should determine it: ", one);
    }
    if (!k)
        snprintf(buf, n, "; no measured point depends on it");
    return buf;
}

/* Starting values from the data, where the topology's fit them worse: link
 * latencies scaled so the smallest measured latency is met, and a link
 * class slower than a single flow measured through it raised to that
 * plateau. Writes the starts into data[], a description into why. */
static int data_starts(const pts *p, const pinfo *info, const double *pred_start, cand *c,
                       int nc, double *data, char *why, size_t nwhy)
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

static const report_col param_cols[] = {
    {"key", NULL, 34, -1}, {"start", NULL, 10, -1}, {"fitted", NULL, 10, -1},
    {"sd", NULL, 8, -1},   {"status", NULL, 1, -1},
};
static const report_col fit_cols[] = {
    {"points", NULL, 7, -1},  {"params", NULL, 7, -1}, {"iterations", NULL, 10, -1},
    {"evaluations", NULL, 11, -1}, {"rms_err_pct", NULL, 11, 2},
    {"median_abs_err_pct", NULL, 18, 2}, {"worst_err_pct", NULL, 13, 2},
    {"start_rms_err_pct", NULL, 17, 2}, {"starts", NULL, 6, -1},
};
static const report_col res_cols[] = {
    {"where", NULL, 40, -1}, {"point", NULL, 34, -1}, {"meas_us", NULL, 12, 3},
    {"pred_us", NULL, 12, 3}, {"err_pct", NULL, 8, 2},
};

/* Why a candidate without influence at the start was left out. */
static const char *no_influence_text(const cand *q)
{
    return q->probe_felt ? "not binding (no value from 1/16 to 16 x its start fits better)"
                         : "no influence on the data";
}

/* Fit parameters from the active candidates (map -1 terminated); returns n. */
static int load_params(cand *c, int nc, int *map, fit_param *fp)
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
static void leave_out(cand *q, double value, const char *fmt, const char *arg)
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
static double refused_value(const cand *q, int why, double solved)
{
    if (why == FIT_TO_ZERO)
        return q->off ? 0 : q->lo > 0 ? q->lo : 0;
    if (why == FIT_NO_INFLUENCE && !q->off && isfinite(solved))
        return solved;
    return q->off ? 0 : q->topo_value;
}

int cmd_calibrate(int argc, char **argv, err *e)
{
    calibrate_args g = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 30, REPORT_TABLE};
    const char *files[MAX_FILES + 1];
    int nfiles;
    /* One slot more than allowed, so that too many files get their own message. */
    int prc = cli_parse("collsim calibrate", synopsis, desc, options, &g, argc, argv, files,
                        MAX_FILES + 1, &nfiles, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (nfiles > MAX_FILES)
        return err_set(e, ERR_USAGE, "calibrate: more than %d files", MAX_FILES);
    const char *topo_arg = g.topo, *out_path = g.out, *start_path = g.start;
    const char *sel_patterns = g.patterns, *sel_sizes = g.sizes;
    int show_res = g.residuals;
    report_format fmt = g.fmt;
    if (!nfiles || !out_path)
        return err_set(e, ERR_USAGE, "calibrate needs measurement files and -o "
                       "(collsim calibrate --help)");
    pts_filter filter;
    TRY(pts_filter_parse(sel_patterns, sel_sizes, &filter, e));

    meas_set *sets[MAX_FILES] = {0};
    topo *t = NULL;
    pts *p = NULL;
    calib_nccl *ncp = NULL;
    calib *out = NULL, *startc = NULL;
    cand *c = calloc(MAX_PARAMS, sizeof *c);
    fit_param *fp = calloc(MAX_PARAMS, sizeof *fp);
    /* Copies: split_list cuts them up. */
    char *fit_list = g.fit ? strdup(g.fit) : NULL, *fix_list = g.fix ? strdup(g.fix) : NULL;
    int map[MAX_PARAMS + 1], nc = 0, rc = 0;
    double *resv = NULL, *pred = NULL, *pred_start = NULL, *data = NULL;
    pinfo *info = NULL;
    ctx x = {0};
    fit_result res = {0};
    char start_note[300] = "the topology's values";
    if (!c || !fp || (g.fit && !fit_list) || (g.fix && !fix_list)) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < nfiles && !rc; i++) {
        rc = meas_load(files[i], &sets[i], e);
        if (!rc && meas_kind_of(sets[i]) == MEAS_REPLAY)
            rc = err_set(e, ERR_USAGE,
                         "%s: a %s file; calibrate fits point-to-point data only (p2p, flows, "
                         "host, launch) so that collectives and replays can be judged on data "
                         "the fit never saw: give it to collsim validate", files[i],
                         meas_kind_name(meas_kind_of(sets[i])));
    }
    if (!rc && !topo_arg) {
        /* As validate: the files' 'preset' metadata, which must agree. */
        topo_arg = meas_meta(sets[0], "preset");
        for (int i = 1; i < nfiles && topo_arg && !rc; i++) {
            const char *pr = meas_meta(sets[i], "preset");
            if (!pr || strcmp(pr, topo_arg))
                rc = err_set(e, ERR_USAGE, "%s: its 'preset' differs from %s's: give --topo",
                             files[i], files[0]);
        }
        if (!rc && !topo_arg)
            rc = err_set(e, ERR_USAGE, "%s names no 'preset': give --topo", files[0]);
    }
    if (rc || (rc = calib_load_topo(topo_arg, start_path, &t, e)) ||
        (start_path && (rc = calib_load(start_path, &startc, e))) ||
        (rc = pts_build(sets, nfiles, t, &filter, &p, e)) ||
        (rc = calib_nccl_build(sets, nfiles, t, &ncp, e)))
        goto done;
    /* Residuals: transfer and launch points (np_tr), then NCCL's. */
    size_t np_tr = pts_count(p), np_pts = np_tr + calib_nccl_count(ncp);
    if (np_pts == 0) {
        rc = err_set(e, ERR_CHECK, "no measured points in the files (after --patterns / "
                     "--sizes; a launch file needs 'launch' or 'graph-node' rows)");
        goto done;
    }
    resv = malloc(np_pts * sizeof *resv);
    pred = malloc(np_pts * sizeof *pred);
    pred_start = malloc(np_pts * sizeof *pred_start);
    info = calloc(np_tr + 1, sizeof *info);
    data = calloc(MAX_PARAMS, sizeof *data);
    if (!resv || !pred || !pred_start || !info || !data) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    point_info(p, t, c, 0, info);
    if ((rc = candidates(t, p, ncp, info, c, &nc, e)))
        goto done;
    point_info(p, t, c, nc, info);
    for (int j = 0; j < nc && startc; j++) {
        double v;
        c[j].from_start = !calib_get(startc, c[j].key, &v);
    }
    /* --fit: exactly these; --fix: not these. */
    char *items[MAX_PARAMS];
    if (fit_list) {
        int n = split_list(fit_list, items, MAX_PARAMS);
        for (int j = 0; j < nc; j++)
            c[j].active = 0;
        for (int k = 0; k < n; k++) {
            int found = -1;
            for (int j = 0; j < nc; j++)
                if (!strcmp(c[j].key, items[k]))
                    found = j;
            if (found < 0) {
                rc = err_set(e, ERR_USAGE, "--fit: '%s' is not a parameter these data touch on "
                             "topology '%s' (candidates are listed by collsim calibrate without "
                             "--fit)", items[k], topo_name(t));
                goto done;
            }
            c[found].active = 1;
        }
        for (int j = 0; j < nc; j++)
            if (!c[j].active)
                snprintf(c[j].why, sizeof c[j].why, "kept: not in --fit");
    }
    if (fix_list) {
        int n = split_list(fix_list, items, MAX_PARAMS);
        for (int k = 0; k < n; k++) {
            if (!calib_key_valid(items[k])) {
                rc = err_set(e, ERR_USAGE, "--fix: unknown key '%s'", items[k]);
                goto done;
            }
            for (int j = 0; j < nc; j++)
                if (!strcmp(c[j].key, items[k])) {
                    c[j].active = 0;
                    snprintf(c[j].why, sizeof c[j].why, "kept: --fix");
                }
        }
    }
    x = (ctx){t, p, ncp, c, nc, map, NULL, pred, e};
    fit_opts opts;
    fit_opts_default(&opts);
    /* Latencies become integer picoseconds: a 0.1% step still moves a 1 ns
     * hop by a whole picosecond, so derivatives are not lost to rounding. */
    opts.fd_step = 1e-3;

    /* The start: the topology's values, or the data's where they fit better. */
    double cost_start = 0, cost_topo = 0;
    {
        int n = load_params(c, nc, map, fp);
        if ((rc = fit_cost(fp, (size_t)n, np_pts, resid, &x, &cost_start, e)))
            goto done;
        memcpy(pred_start, pred, np_pts * sizeof *pred);
        cost_topo = cost_start;
        char why[240];
        if (!fit_list && np_tr &&
            data_starts(p, info, pred_start, c, nc, data, why, sizeof why)) {
            for (int k = 0; k < n; k++)
                fp[k].value = data[map[k]];
            double cost_data;
            if ((rc = fit_cost(fp, (size_t)n, np_pts, resid, &x, &cost_data, e)))
                goto done;
            if (cost_data < cost_start * (1 - 1e-6)) {
                for (int j = 0; j < nc; j++)
                    if (c[j].active)
                        c[j].start = data[j];
                snprintf(start_note, sizeof start_note, "from the data (%s)", why);
                cost_start = cost_data;
            } else {
                snprintf(start_note, sizeof start_note, "the topology's values (they fit "
                         "better than %s)", why);
            }
        }
    }

    /* Screen, fit, leave out what the fit refuses, refit; after a fit, probe
     * the candidates without influence at the start again at the solution. */
    int rounds = 0, rechecked[MAX_PARAMS] = {0};
    for (;; rounds++) {
        if (rounds > 8 * MAX_PARAMS) {
            rc = err_set(e, ERR_CHECK, "the fit did not settle on a set of parameters");
            break;
        }
        int n = load_params(c, nc, map, fp);
        if (n == 0) {
            rc = err_set(e, ERR_CHECK, "these measurements determine none of the parameters "
                         "(collsim calibrate --fit K shows why for K)");
            break;
        }
        fit_why why[MAX_PARAMS];
        int with[MAX_PARAMS], restart = 0;
        for (int j = 0; j < n; j++)
            c[map[j]].screened_out = 0;
        if ((rc = fit_screen(fp, (size_t)n, np_pts, resid, &x, &opts, why, with, e)))
            break;
        /* No influence at the start: probe other values (a capacity that
         * does not bind here may bind lower). */
        for (int j = 0; j < n && !rc; j++) {
            cand *q = &c[map[j]];
            if (why[j] != FIT_NO_INFLUENCE || q->probed)
                continue;
            fit_probe_result pr;
            if ((rc = fit_probe(fp, (size_t)n, (size_t)j, np_pts, resid, &x, &pr, e)))
                break;
            q->probed = 1;
            q->probe_felt = pr.felt;
            q->probe_row = pr.row;
            if (pr.felt && pr.best_chi2 < pr.start_chi2) {
                q->start = pr.best;
                restart = 1;
            }
        }
        if (rc)
            break;
        if (restart)
            continue;
        if (fit_list) {
            /* Named parameters: refuse before fitting what cannot work. */
            for (int j = 0; j < n && !rc; j++) {
                const cand *q = &c[map[j]];
                char d[600];
                if (why[j] == FIT_DEPENDENT)
                    rc = err_set(e, ERR_CHECK, "cannot determine %s: these data cannot tell it "
                                 "apart from %s (fit one of them)", fp[j].name, fp[with[j]].name);
                else if (why[j] != FIT_KEEP)
                    rc = err_set(e, ERR_CHECK, "cannot determine %s: %s%s", fp[j].name,
                                 no_influence_text(q), data_of(&x, &q->probe_row, 1, d, sizeof d));
            }
            if (rc)
                break;
        } else {
            int k = 0, orig[MAX_PARAMS + 1];
            memcpy(orig, map, sizeof orig);
            for (int j = 0; j < n; j++) {
                cand *q = &c[orig[j]];
                if (why[j] == FIT_KEEP) {
                    map[k] = orig[j];
                    fp[k++] = fp[j];
                    continue;
                }
                if (why[j] == FIT_DEPENDENT)
                    snprintf(q->why, sizeof q->why, "kept: not separable from %s",
                             c[orig[with[j]]].key);
                else
                    snprintf(q->why, sizeof q->why, "kept: %s", no_influence_text(q));
                q->screened_out = 1;
                /* Screened out: the topology's value (or 0 for a rule it has off). */
                q->kept = q->off ? 0 : q->topo_value;
                q->moved = 0;
            }
            map[k] = -1;
            n = k;
            if (n == 0) {
                rc = err_set(e, ERR_CHECK, "these measurements determine none of the "
                             "parameters (collsim calibrate --fit K shows why for K)");
                break;
            }
        }
        rc = fit_run(fp, (size_t)n, np_pts, resid, &x, &opts, &res, resv, e);
        if (rc == ERR_CHECK && res.bad_param >= 0) {
            cand *q = &c[map[res.bad_param]];
            char d[600];
            data_of(&x, res.bad_rows, 3, d, sizeof d);
            if (fit_list) {
                size_t len = strlen(e->msg);
                snprintf(e->msg + len, sizeof e->msg - len, "%s", d);
                break;
            }
            double value = refused_value(q, res.bad_why, fp[res.bad_param].value);
            if (res.bad_why == FIT_DEPENDENT && res.bad_with >= 0)
                leave_out(q, value, "kept: trades off with %s", c[map[res.bad_with]].key);
            else if (res.bad_why == FIT_TO_ZERO)
                leave_out(q, value, "kept at %s: ran to zero (the data say it is negligible)",
                          q->off ? "0 (off)" : "0");
            else if (res.bad_why == FIT_NO_INFLUENCE && !q->off) {
                char v[32];
                snprintf(v, sizeof v, "%.4g", value);
                leave_out(q, value, "kept at %s, where the fit left it: no influence there", v);
            } else
                leave_out(q, value, "kept: %s", fit_why_text(res.bad_why));
            rc = 0;
            e->msg[0] = 0;
            continue;
        }
        if (rc)
            break;
        /* Judged at the solution too: a candidate without influence at the
         * start may bind now that the others moved. */
        for (int j = 0; map[j] >= 0; j++)
            c[map[j]].start = fp[j].value;
        int readmit = 0;
        for (int j = 0; j < nc && !rc; j++) {
            cand *q = &c[j];
            if (!q->active || !q->screened_out || rechecked[j] || !q->probed)
                continue;
            rechecked[j] = 1;
            int m = 0;
            while (map[m] >= 0)
                m++;
            fit_param probe[MAX_PARAMS];
            int pmap[MAX_PARAMS + 1];
            memcpy(probe, fp, (size_t)m * sizeof *fp);
            memcpy(pmap, map, (size_t)m * sizeof *map);
            probe[m] = (fit_param){q->key, q->start, q->lo, q->hi, 1, NAN};
            pmap[m] = j;
            pmap[m + 1] = -1;
            x.map = pmap;
            fit_probe_result pr;
            rc = fit_probe(probe, (size_t)m + 1, (size_t)m, np_pts, resid, &x, &pr, e);
            x.map = map;
            if (!rc && pr.felt && pr.best_chi2 < pr.start_chi2) {
                q->start = pr.best;
                q->screened_out = 0;
                q->why[0] = 0;
                readmit = 1;
            }
        }
        if (rc || !readmit)
            break;
        /* Otherwise fit again from this solution with the readmitted ones. */
    }
    for (int j = 0; j < nc; j++)
        c[j].status = !c[j].active || c[j].screened_out ? (c[j].why[0] ? c[j].why : "kept")
                                                        : "fitted";
    if (rc)
        goto done;
    int nfit = 0;
    while (map[nfit] >= 0)
        nfit++;

    /* Error statistics of the fitted model on the fitted points. */
    double *meas_us = malloc(np_pts * sizeof *meas_us);
    if (!meas_us) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < np_pts; i++) {
        meas_us[i] = meas_of(&x, i);
        pred[i] = meas_us[i] * exp(resv[i]);
    }
    stats_err st;
    rc = stats_errors(pred, meas_us, np_pts, &st, e);
    free(meas_us);
    if (rc)
        goto done;
    /* The topology's own error on these data (before any start from the data). */
    double start_rms = res.dof ? sqrt(cost_topo / (double)res.dof) : 0;
    if (100 * res.sigma > g.max_rms_pct) {
        /* Name the points the model misses most. */
        int worst[3] = {-1, -1, -1};
        for (size_t i = 0; i < np_pts; i++)
            for (int k = 0; k < 3; k++)
                if (worst[k] < 0 || fabs(resv[i]) > fabs(resv[worst[k]])) {
                    for (int m = 2; m > k; m--)
                        worst[m] = worst[m - 1];
                    worst[k] = (int)i;
                    break;
                }
        /* And for each, the fitted key its prediction moves with most. */
        char msg[900];
        size_t len = 0;
        double *v = malloc((size_t)nfit * sizeof *v), *r1 = malloc(np_pts * sizeof *r1);
        if (!v || !r1) {
            free(v);
            free(r1);
            rc = err_set(e, ERR_SYSTEM, "out of memory");
            goto done;
        }
        double sens[3][2] = {{0, -1}, {0, -1}, {0, -1}};
        for (int j = 0; j < nfit && !rc; j++) {
            for (int k = 0; k < nfit; k++)
                v[k] = fp[k].value * (k == j ? 1.01 : 1);
            rc = resid(v, r1, &x, e);
            for (int k = 0; k < 3 && !rc && worst[k] >= 0; k++) {
                double d = fabs(r1[worst[k]] - resv[worst[k]]);
                if (d > sens[k][0] && d > 1e-9) {
                    sens[k][0] = d;
                    sens[k][1] = j;
                }
            }
        }
        free(v);
        free(r1);
        if (rc)
            goto done;
        for (int k = 0; k < 3 && worst[k] >= 0; k++) {
            char one[200], key[120] = "";
            if (sens[k][1] >= 0)
                snprintf(key, sizeof key, " (set mostly by %s)", fp[(int)sens[k][1]].name);
            len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0,
                                    "%s%s %+.0f%%%s", k ? ", " : "",
                                    point_name(&x, worst[k], one, sizeof one),
                                    100 * (exp(resv[worst[k]]) - 1), key);
        }
        rc = err_set(e, ERR_CHECK,
                     "the fit on topology '%s' leaves an rms error of %.1f%% (--max-rms %g%%; "
                     "%.1f%% with the topology's values): the model with these parameters cannot reproduce "
                     "%s; the fit finds no better values of its keys, so the topology lacks the "
                     "structure or mechanism these need", topo_name(t), 100 * res.sigma,
                     g.max_rms_pct, 100 * start_rms, msg);
        goto done;
    }

    /* The profile: complete and self-contained. Every candidate with its
     * value (fitted, or kept and why), then START's other keys. */
    if (!(out = calib_new())) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    char line[700];
    snprintf(line, sizeof line, "fitted by collsim calibrate on topology %s from %d file%s, "
             "%zu points", topo_name(t), nfiles, nfiles > 1 ? "s" : "", np_pts);
    rc = calib_comment(out, line, e);
    for (int i = 0; i < nfiles && !rc; i++) {
        snprintf(line, sizeof line, "data: %s", files[i]);
        rc = calib_comment(out, line, e);
    }
    if (!rc && start_path) {
        snprintf(line, sizeof line, "START: %s (its keys are all here: applying this profile "
                 "alone is the same as START and then the fit)", start_path);
        rc = calib_comment(out, line, e);
    }
    snprintf(line, sizeof line, "start: %s", start_note);
    if (!rc)
        rc = calib_comment(out, line, e);
    snprintf(line, sizeof line, "rms residual %.2f%% (ln units x 100; %.2f%% with the "
             "topology's values), "
             "%d iterations, %d start%s", 100 * res.sigma, 100 * start_rms, res.iterations,
             res.starts, res.starts == 1 ? "" : "s");
    if (!rc)
        rc = calib_comment(out, line, e);
    for (int j = 0; j < nc && !rc; j++) {
        cand *q = &c[j];
        int fj = -1;
        for (int k = 0; map[k] >= 0; k++)
            if (map[k] == j)
                fj = k;
        char note[300];
        if (fj >= 0) {
            rc = calib_set(out, q->key, fp[fj].value, fp[fj].sd, e);
            snprintf(note, sizeof note, "fitted");
        } else {
            double v = q->moved ? q->kept : q->topo_value;
            if (isnan(v)) {
                snprintf(line, sizeof line, "not written: %s (its links differ in the "
                         "topology, which keeps them): %s", q->key, q->status);
                rc = calib_comment(out, line, e);
                continue;
            }
            err ignored = {0};
            if (calib_set(out, q->key, v, NAN, &ignored)) {
                snprintf(line, sizeof line, "not written: %s = %g (%.300s)", q->key, v,
                         ignored.msg);
                rc = calib_comment(out, line, e);
                continue;
            }
            snprintf(note, sizeof note, "%s%s", q->status,
                     q->from_start && !q->moved ? " (from START)" : "");
        }
        if (!rc)
            rc = calib_set_note(out, q->key, note, e);
    }
    for (int i = 0; startc && i < calib_count(startc) && !rc; i++) {
        const calib_entry *s = calib_at(startc, i);
        double v;
        if (!calib_get(out, s->key, &v))
            continue;
        if (!(rc = calib_set(out, s->key, s->value, s->sd, e)))
            rc = calib_set_note(out, s->key, "from START", e);
    }
    if (rc)
        goto done;
    ofile of;
    if ((rc = ofile_open(&of, out_path, e)))
        goto done;
    if ((rc = calib_write(out, of.f, e))) {
        ofile_abort(&of);
        goto done;
    }
    if ((rc = ofile_commit(&of, e)))
        goto done;

    /* The report. */
    report *r = report_new(stdout, fmt);
    if (!r) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    report_meta(r, "topo", "%s", topo_name(t));
    report_meta(r, "calibration", "%s", out_path);
    report_meta(r, "start", "%s", start_note);
    if (calib_nccl_left_out(ncp))
        report_meta(r, "nccl_rows_left_out", "%zu (above %d B or on more than one channel: "
                    "for collsim validate)", calib_nccl_left_out(ncp), CALIB_NCCL_MAX_BYTES);
    report_table(r, "parameters", param_cols, 5);
    for (int j = 0; j < nc; j++) {
        char b1[32], b2[32], b3[32];
        int fj = -1;
        for (int k = 0; map[k] >= 0; k++)
            if (map[k] == j)
                fj = k;
        snprintf(b1, sizeof b1, "%.4g", isnan(c[j].topo_value) ? c[j].start : c[j].topo_value);
        report_str(r, c[j].key);
        report_str(r, b1);
        if (fj >= 0) {
            snprintf(b2, sizeof b2, "%.4g", fp[fj].value);
            snprintf(b3, sizeof b3, "%.2g", fp[fj].sd);
            report_str(r, b2);
            report_str(r, b3);
        } else {
            report_str(r, "-");
            report_str(r, "-");
        }
        report_str(r, c[j].status);
        report_end_row(r);
    }
    report_table(r, "fit", fit_cols, 9);
    report_int(r, (long long)np_pts);
    report_int(r, nfit);
    report_int(r, res.iterations);
    report_int(r, res.evaluations);
    report_num(r, 100 * res.sigma);
    report_num(r, 100 * st.median_abs);
    report_num(r, 100 * st.worst);
    report_num(r, 100 * start_rms);
    report_int(r, res.starts);
    report_end_row(r);
    if (show_res) {
        report_table(r, "residuals", res_cols, 5);
        for (size_t i = 0; i < np_pts; i++) {
            const meas_set *set;
            long ln;
            const char *label;
            if (i < np_tr) {
                set = pts_at(p, i)->set;
                ln = pts_at(p, i)->line;
                label = pts_at(p, i)->label;
            } else {
                const calib_nccl_point *q = calib_nccl_at(ncp, i - np_tr);
                set = q->set;
                ln = q->line;
                label = q->label;
            }
            char where[256];
            snprintf(where, sizeof where, "%s:%ld", meas_name(set), ln);
            report_str(r, where);
            report_str(r, label);
            report_num(r, meas_of(&x, i));
            report_num(r, pred[i]);
            report_num(r, 100 * (exp(resv[i]) - 1));
            report_end_row(r);
        }
    }
    rc = report_finish(r, e);
    report_free(r);
done:
    calib_free(x.cal);
    calib_free(out);
    calib_free(startc);
    free(resv);
    free(pred);
    free(pred_start);
    free(info);
    free(data);
    free(c);
    free(fp);
    free(fit_list);
    free(fix_list);
    pts_free(p);
    calib_nccl_free(ncp);
    topo_free(t);
    for (int i = 0; i < nfiles; i++)
        meas_free(sets[i]);
    return rc;
}
