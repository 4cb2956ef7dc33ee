/* `collsim calibrate MEAS... --topo T -o CALIB`: fit the point-to-point
 * model's free parameters to hwcheck p2p/flows/host/launch measurements.
 * The candidates are the bandwidth and latency of every link class on a
 * measured route, the read parameters when reads or copies were measured,
 * the arbitration collapse rate when the topology has one, host memory
 * bandwidth for host patterns and the launch overheads for launch data.
 * Unless --fit names the parameters, they are screened first (no influence
 * on the data, or not separable from one screened before) and the fit is
 * repeated without any parameter it refuses; every parameter left out is
 * reported with the reason and keeps the topology's value. Residuals are
 * ln(predicted / measured), all points weighted alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmds.h"
#include "models/topo/topo.h"
#include "sim/ofile.h"
#include "validate/calib.h"
#include "validate/fit.h"
#include "validate/meas.h"
#include "validate/points.h"
#include "validate/stats.h"

enum { MAX_FILES = 256, MAX_PARAMS = 64 };

static const char synopsis[] = "collsim calibrate MEAS... [--topo T] -o CALIB [options]";
static const char desc[] =
    "MEAS are hwcheck p2p, flows, host or launch files (docs/formats.md). The fit\n"
    "starts from topology T (a preset or a collsim-topo file), with START applied if\n"
    "given, and writes the fitted parameters to CALIB (collsim-calib 1). --fit fits\n"
    "exactly these keys and fails if the data cannot determine one; otherwise the\n"
    "parameters the data can determine are chosen, and --fix keeps some out.\n"
    "--patterns and --sizes fit only the transfer cases of these patterns and sizes\n"
    "(bytes per flow), so the rest can be held out for collsim validate.";

/* What the options set. */
typedef struct calibrate_args {
    const char *topo, *out, *start, *fit, *fix, *patterns, *sizes;
    int residuals;
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
    {"format", 0, "F", "table (default), csv or json", set_format},
    {NULL, 0, NULL, NULL, NULL},
};

typedef struct cand {
    char key[80];
    double start, lo, hi;
    const char *status;      /* "fitted" or why it was left out */
    char why[200];
    int active;              /* a candidate (not fixed, not refused by a fit) */
    int screened_out;        /* left out by the last screening */
} cand;

typedef struct ctx {
    const topo *base;
    const pts *pts;
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
    for (int j = 0; x->map[j] >= 0; j++) {
        /* Integer parameters (read tags) are fitted as real numbers. */
        const char *k = x->c[x->map[j]].key;
        TRY(calib_set(x->cal, k, v[j], NAN, x->e));
    }
    topo *t;
    TRY(calib_apply(x->cal, x->base, &t, x->e));
    int rc = pts_predict(x->pts, t, x->pred, x->e);
    topo_free(t);
    if (rc)
        return rc;
    for (size_t i = 0; i < pts_count(x->pts); i++)
        r[i] = log(x->pred[i] / pts_at(x->pts, i)->meas_us);
    return 0;
}

static int add_cand(cand *c, int *n, const char *key, double start, double lo, double hi)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(c[i].key, key))
            return 0;
    if (*n == MAX_PARAMS)
        return -1;
    cand *x = &c[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->key, sizeof x->key, "%s", key);
    x->start = start;
    x->lo = lo;
    x->hi = hi;
    x->status = "fitted";
    x->active = 1;
    return 0;
}

/* Candidates from what the data touch, in screening priority: link
 * bandwidths, link latencies, read parameters, collapse, host, launch. */
static int candidates(const topo *t, const pts *p, cand *c, int *n, err *e)
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
            /* Start from the mean over the class's links. */
            double sum = 0;
            int k = 0;
            for (int j = 0; j < topo_nlinks(t); j++) {
                const topo_link *m = topo_link_at(t, j);
                char c2[48];
                calib_link_class(m->kind, topo_node_at(t, m->a)->kind,
                                 topo_node_at(t, m->b)->kind, c2);
                if (!strcmp(c2, cls)) {
                    sum += pass == 0 ? m->bw_Bps / 1e9 : (double)m->lat_ps / 1e3;
                    k++;
                }
            }
            double start = sum / k;
            snprintf(key, sizeof key, "link.%s.%s", cls, pass == 0 ? "bw_GBps" : "lat_ns");
            if (add_cand(c, n, key, pass == 0 ? start : (start > 1 ? start : 1),
                         pass == 0 ? 1e-3 : 0, pass == 0 ? 1e4 : 1e5))
                return err_set(e, ERR_USAGE, "more than %d parameters", MAX_PARAMS);
        }
    int ok = 0;
    if (pts_has_op(p, MEAS_COPY) || pts_has_op(p, MEAS_COPY_WRITE) || pts_has_op(p, MEAS_COPY_READ))
        ok |= add_cand(c, n, "copy_setup_us",
                       tp->copy_setup_ps > 0 ? (double)tp->copy_setup_ps / 1e6 : 1, 0, 1e4);
    if (pts_has_op(p, MEAS_READ) || pts_has_op(p, MEAS_COPY) || pts_has_op(p, MEAS_COPY_READ)) {
        ok |= add_cand(c, n, "read_tags", tp->read_tags, 1, 16384);
        ok |= add_cand(c, n, "read_extra_lat_ns",
                       tp->read_extra_lat_ps > 1000 ? (double)tp->read_extra_lat_ps / 1e3 : 1, 0,
                       1e5);
    }
    if (tp->arb_collapse_Bps > 0)
        ok |= add_cand(c, n, "arb_collapse_GBps", tp->arb_collapse_Bps / 1e9, 1e-3, 1e3);
    if (tp->arb_collapse_read_Bps > 0)
        ok |= add_cand(c, n, "arb_collapse_read_GBps", tp->arb_collapse_read_Bps / 1e9, 1e-3,
                       1e3);
    if (tp->socket_read_Bps > 0)
        ok |= add_cand(c, n, "socket_read_GBps", tp->socket_read_Bps / 1e9, 1e-3, 1e5);
    /* Kernels measured with few thread blocks (hwcheck --blocks) reach the
     * per-block rates; with one block per SM the data say nothing of them
     * and the screen leaves them out. */
    if (pts_has_op(p, MEAS_WRITE) || pts_has_op(p, MEAS_READ))
        ok |= add_cand(c, n, "kernel_base_us",
                       tp->kernel_base_ps > 0 ? (double)tp->kernel_base_ps / 1e6 : 1, 0, 1e4);
    if (pts_has_op(p, MEAS_WRITE))
        ok |= add_cand(c, n, "cta_store_GBps",
                       tp->cta_store_Bps > 0 ? tp->cta_store_Bps / 1e9 : 10, 1e-3, 1e5);
    if (pts_has_op(p, MEAS_READ))
        ok |= add_cand(c, n, "cta_load_GBps",
                       tp->cta_load_Bps > 0 ? tp->cta_load_Bps / 1e9 : 10, 1e-3, 1e5);
    if (pts_has_host(p))
        ok |= add_cand(c, n, "hostmem_GBps", tp->hostmem_Bps / 1e9, 1e-3, 1e5);
    if (pts_has_launch(p, "launch"))
        ok |= add_cand(c, n, "launch_us", tp->launch_ps > 0 ? (double)tp->launch_ps / 1e6 : 1,
                       0, 1e4);
    if (pts_has_launch(p, "graph-node"))
        ok |= add_cand(c, n, "graph_node_us",
                       tp->graph_node_ps > 0 ? (double)tp->graph_node_ps / 1e6 : 1, 0, 1e4);
    if (ok)
        return err_set(e, ERR_USAGE, "more than %d parameters", MAX_PARAMS);
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

static const report_col param_cols[] = {
    {"key", NULL, 34, -1}, {"start", NULL, 10, -1}, {"fitted", NULL, 10, -1},
    {"sd", NULL, 8, -1},   {"status", NULL, 1, -1},
};
static const report_col fit_cols[] = {
    {"points", NULL, 7, -1},  {"params", NULL, 7, -1}, {"iterations", NULL, 10, -1},
    {"evaluations", NULL, 11, -1}, {"rms_err_pct", NULL, 11, 2},
    {"median_abs_err_pct", NULL, 18, 2}, {"worst_err_pct", NULL, 13, 2},
};
static const report_col res_cols[] = {
    {"where", NULL, 40, -1}, {"point", NULL, 34, -1}, {"meas_us", NULL, 12, 3},
    {"pred_us", NULL, 12, 3}, {"err_pct", NULL, 8, 2},
};

int cmd_calibrate(int argc, char **argv, err *e)
{
    calibrate_args g = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, REPORT_TABLE};
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
    calib *out = NULL;
    cand *c = calloc(MAX_PARAMS, sizeof *c);
    fit_param *fp = calloc(MAX_PARAMS, sizeof *fp);
    /* Copies: split_list cuts them up. */
    char *fit_list = g.fit ? strdup(g.fit) : NULL, *fix_list = g.fix ? strdup(g.fix) : NULL;
    int map[MAX_PARAMS + 1], nc = 0, rc = 0;
    double *resv = NULL, *pred = NULL;
    ctx x = {0};
    fit_result res = {0};
    if (!c || !fp || (g.fit && !fit_list) || (g.fix && !fix_list)) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < nfiles && !rc; i++) {
        rc = meas_load(files[i], &sets[i], e);
        if (!rc && (meas_kind_of(sets[i]) == MEAS_COLL || meas_kind_of(sets[i]) == MEAS_REPLAY))
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
        (rc = pts_build(sets, nfiles, t, &filter, &p, e)))
        goto done;
    size_t np_pts = pts_count(p);
    if (np_pts == 0) {
        rc = err_set(e, ERR_CHECK, "no measured points in the files (after --patterns / "
                     "--sizes; a launch file needs 'launch' or 'graph-node' rows)");
        goto done;
    }
    if ((rc = candidates(t, p, c, &nc, e)))
        goto done;
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
                c[j].status = "kept: not in --fit";
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
                    c[j].status = "kept: --fix";
                }
        }
    }
    resv = malloc(np_pts * sizeof *resv);
    pred = malloc(np_pts * sizeof *pred);
    if (!resv || !pred) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    x = (ctx){t, p, c, nc, map, NULL, pred, e};
    fit_opts opts;
    fit_opts_default(&opts);
    /* Latencies become integer picoseconds: a 0.1% step still moves a 1 ns
     * hop by a whole picosecond, so derivatives are not lost to rounding. */
    opts.fd_step = 1e-3;
    /* Automatic choice: screen the candidates not refused so far, fit the
     * kept ones; if the fit refuses one, leave it out and start again. */
    for (;;) {
        int n = 0;
        for (int j = 0; j < nc; j++)
            if (c[j].active) {
                map[n] = j;
                fp[n] = (fit_param){c[j].key, c[j].start, c[j].lo, c[j].hi, 1, NAN};
                n++;
            }
        map[n] = -1;
        fit_why why[MAX_PARAMS];
        int with[MAX_PARAMS];
        if (fit_list) {
            /* Named parameters: refuse before fitting what cannot work. */
            if ((rc = fit_screen(fp, (size_t)n, np_pts, resid, &x, &opts, why, with, e)))
                break;
            for (int j = 0; j < n && !rc; j++)
                if (why[j] == FIT_DEPENDENT)
                    rc = err_set(e, ERR_CHECK, "cannot determine %s: these data cannot tell it "
                                 "apart from %s (fit one of them)", fp[j].name, fp[with[j]].name);
                else if (why[j] != FIT_KEEP)
                    rc = err_set(e, ERR_CHECK, "cannot determine %s: %s", fp[j].name,
                                 fit_why_text(why[j]));
            if (rc)
                break;
        } else {
            for (int j = 0; j < n; j++)
                c[map[j]].screened_out = 0;
            if (n && (rc = fit_screen(fp, (size_t)n, np_pts, resid, &x, &opts, why, with, e)))
                break;
            int k = 0, orig[MAX_PARAMS + 1];
            memcpy(orig, map, sizeof orig);
            for (int j = 0; j < n; j++) {
                cand *q = &c[orig[j]];
                if (why[j] == FIT_KEEP) {
                    map[k] = orig[j];
                    fp[k++] = fp[j];
                } else if (why[j] == FIT_DEPENDENT) {
                    snprintf(q->why, sizeof q->why, "kept: not separable from %s",
                             c[orig[with[j]]].key);
                    q->screened_out = 1;
                } else {
                    snprintf(q->why, sizeof q->why, "kept: %s", fit_why_text(why[j]));
                    q->screened_out = 1;
                }
            }
            map[k] = -1;
            n = k;
        }
        if (n == 0) {
            rc = err_set(e, ERR_CHECK, "these measurements determine none of the parameters "
                         "(collsim calibrate --fit K shows why for K)");
            break;
        }
        rc = fit_run(fp, (size_t)n, np_pts, resid, &x, &opts, &res, resv, e);
        if (rc == ERR_CHECK && !fit_list && res.bad_param >= 0) {
            cand *q = &c[map[res.bad_param]];
            q->active = 0;
            if (res.bad_why == FIT_DEPENDENT && res.bad_with >= 0)
                snprintf(q->why, sizeof q->why, "kept: trades off with %s",
                         c[map[res.bad_with]].key);
            else
                snprintf(q->why, sizeof q->why, "kept: %s", fit_why_text(res.bad_why));
            rc = 0;
            e->msg[0] = 0;
            continue;
        }
        break;
    }
    for (int j = 0; j < nc; j++)
        if (c[j].why[0] && (!c[j].active || c[j].screened_out))
            c[j].status = c[j].why;
    if (rc)
        goto done;

    /* The profile: fitted values with their standard errors. */
    if (!(out = calib_new())) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    char line[512];
    snprintf(line, sizeof line, "fitted by collsim calibrate on topology %s from %d file%s, "
             "%zu points", topo_name(t), nfiles, nfiles > 1 ? "s" : "", np_pts);
    rc = calib_comment(out, line, e);
    for (int i = 0; i < nfiles && !rc; i++) {
        snprintf(line, sizeof line, "data: %s", files[i]);
        rc = calib_comment(out, line, e);
    }
    snprintf(line, sizeof line, "rms residual %.2f%% (ln units x 100), %d iterations",
             100 * res.sigma, res.iterations);
    if (!rc)
        rc = calib_comment(out, line, e);
    for (int j = 0; map[j] >= 0 && !rc; j++)
        rc = calib_set(out, fp[j].name, fp[j].value, fp[j].sd, e);
    for (int j = 0; j < nc && !rc; j++)
        if (!c[j].active || c[j].screened_out) {
            snprintf(line, sizeof line, "not fitted: %s (%s)", c[j].key, c[j].status);
            rc = calib_comment(out, line, e);
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
    report_table(r, "parameters", param_cols, 5);
    for (int j = 0; j < nc; j++) {
        char b1[32], b2[32], b3[32];
        int fj = -1;
        for (int k = 0; map[k] >= 0; k++)
            if (map[k] == j)
                fj = k;
        snprintf(b1, sizeof b1, "%.4g", c[j].start);
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
    /* Error statistics of the fitted model on the fitted points. */
    double *meas_us = malloc(np_pts * sizeof *meas_us);
    if (!meas_us) {
        report_free(r);
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < np_pts; i++) {
        meas_us[i] = pts_at(p, i)->meas_us;
        pred[i] = meas_us[i] * exp(resv[i]);
    }
    stats_err st;
    rc = stats_errors(pred, meas_us, np_pts, &st, e);
    free(meas_us);
    if (rc) {
        report_free(r);
        goto done;
    }
    int nfit = 0;
    while (map[nfit] >= 0)
        nfit++;
    report_table(r, "fit", fit_cols, 7);
    report_int(r, (long long)np_pts);
    report_int(r, nfit);
    report_int(r, res.iterations);
    report_int(r, res.evaluations);
    report_num(r, 100 * res.sigma);
    report_num(r, 100 * st.median_abs);
    report_num(r, 100 * st.worst);
    report_end_row(r);
    if (show_res) {
        report_table(r, "residuals", res_cols, 5);
        for (size_t i = 0; i < np_pts; i++) {
            const pts_point *pt = pts_at(p, i);
            char where[256];
            snprintf(where, sizeof where, "%s:%ld", meas_name(pt->set), pt->line);
            report_str(r, where);
            report_str(r, pt->label);
            report_num(r, pt->meas_us);
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
    free(resv);
    free(pred);
    free(c);
    free(fp);
    free(fit_list);
    free(fix_list);
    pts_free(p);
    topo_free(t);
    for (int i = 0; i < nfiles; i++)
        meas_free(sets[i]);
    return rc;
}
