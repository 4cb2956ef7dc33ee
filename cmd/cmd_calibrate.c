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

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "models/topo/topo.h"
#include "sim/ofile.h"
#include "validate/calib.h"
#include "validate/calib_nccl.h"
#include "validate/cand.h"
#include "validate/fit.h"
#include "validate/meas.h"
#include "validate/points.h"
#include "validate/stats.h"

enum { MAX_FILES = 256, MAX_PARAMS = CAND_MAX };
/* The transaction level's window, as `collsim flows --engine tlp` runs it. */
#define TLP_WINDOW_PS 50000000

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
    cmd_ctx cc;              /* --topo, -o, --calib (START), --format */
    const char *fit, *fix, *patterns, *sizes;
    int residuals;
    double max_rms_pct;      /* refuse a fit whose rms error exceeds this */
    int tlp;                 /* predict the transfers on the transaction level */
} calibrate_args;

#define ARGS ((calibrate_args *)ctx)
static int set_fit(void *ctx, const char *a, err *e) { (void)e; ARGS->fit = a; return 0; }
static int set_fix(void *ctx, const char *a, err *e) { (void)e; ARGS->fix = a; return 0; }
static int set_patterns(void *ctx, const char *a, err *e) { (void)e; ARGS->patterns = a; return 0; }
static int set_sizes(void *ctx, const char *a, err *e) { (void)e; ARGS->sizes = a; return 0; }
static int set_residuals(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->residuals = 1; return 0; }
static int set_engine(void *ctx, const char *a, err *e) { return cmd_parse_engine(a, &ARGS->tlp, e); }
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
                     "files' 'preset')", cmd_set_topo},
    {"output", 'o', "CALIB", "write the fitted profile to CALIB (required)", cmd_set_output},
    {"calib", 0, "START", "apply this calibration profile to T first", cmd_set_calib},
    {"fit", 0, "K1,K2,...", "fit exactly these parameters", set_fit},
    {"fix", 0, "K1,K2,...", "keep these parameters at their values", set_fix},
    {"patterns", 0, "P1,P2,...", "fit only transfer cases of these patterns", set_patterns},
    {"sizes", 0, "SIZES", "fit only these bytes per flow: S1,S2,... or MIN:MAX (K/M/G)", set_sizes},
    {"residuals", 0, NULL, "also print every point's residual", set_residuals},
    {"max-rms", 0, "PCT", "fail (exit 1, no profile) if the fitted rms error exceeds PCT% "
                          "(default 30)", set_max_rms},
    {"engine", 0, "E", "flow (default) or tlp: predict the transfers on the transaction level "
                       "and fit its keys (tlp_turn_ns, tlp_turn_cpl_ns)", set_engine},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {NULL, 0, NULL, NULL, NULL},
};

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
    int tlp;                 /* transfers on the transaction-level engine */
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
    int rc = x->tlp ? pts_predict_tlp(x->pts, t, TLP_WINDOW_PS, x->pred, x->e)
                    : pts_predict(x->pts, t, x->pred, x->e);
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

int cmd_calibrate(int argc, char **argv, err *e)
{
    calibrate_args g = {.residuals = 0, .max_rms_pct = 30};
    cmd_ctx_init(&g.cc);
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
    /* No --topo: the files' 'preset' (below); no -o: refused. */
    const char *topo_arg = g.cc.topo_given ? g.cc.topo : NULL;
    const char *out_path = g.cc.out_given ? g.cc.out : NULL, *start_path = g.cc.calib;
    const char *sel_patterns = g.patterns, *sel_sizes = g.sizes;
    int show_res = g.residuals;
    report_format fmt = g.cc.fmt;
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
    cand_point *info = NULL;
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
    g.cc.topo = topo_arg;
    if (rc || (rc = cmd_load_topo(&g.cc, &t, e)) ||
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
    cand_point_info(p, t, c, 0, info);
    if ((rc = cand_build(t, p, ncp, info, c, &nc, e)) ||
        (g.tlp && (rc = cand_build_tlp(t, p, info, c, &nc, e))))
        goto done;
    cand_point_info(p, t, c, nc, info);
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
    x = (ctx){t, p, ncp, c, nc, map, NULL, pred, e, g.tlp};
    fit_opts opts;
    fit_opts_default(&opts);
    /* Latencies become integer picoseconds: a 0.1% step still moves a 1 ns
     * hop by a whole picosecond, so derivatives are not lost to rounding. */
    opts.fd_step = 1e-3;

    /* The start: the topology's values, or the data's where they fit better. */
    double cost_start = 0, cost_topo = 0;
    {
        int n = cand_load_params(c, nc, map, fp);
        if ((rc = fit_cost(fp, (size_t)n, np_pts, resid, &x, &cost_start, e)))
            goto done;
        memcpy(pred_start, pred, np_pts * sizeof *pred);
        cost_topo = cost_start;
        char why[240];
        if (!fit_list && np_tr &&
            cand_data_starts(p, info, pred_start, c, nc, data, why, sizeof why)) {
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
        int n = cand_load_params(c, nc, map, fp);
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
                                 cand_no_influence_text(q), data_of(&x, &q->probe_row, 1, d, sizeof d));
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
                    snprintf(q->why, sizeof q->why, "kept: %s", cand_no_influence_text(q));
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
            double value = cand_refused_value(q, res.bad_why, fp[res.bad_param].value);
            if (res.bad_why == FIT_DEPENDENT && res.bad_with >= 0)
                cand_leave_out(q, value, "kept: trades off with %s", c[map[res.bad_with]].key);
            else if (res.bad_why == FIT_TO_ZERO)
                cand_leave_out(q, value, "kept at %s: ran to zero (the data say it is negligible)",
                          q->off ? "0 (off)" : "0");
            else if (res.bad_why == FIT_NO_INFLUENCE && !q->off) {
                char v[32];
                snprintf(v, sizeof v, "%.4g", value);
                cand_leave_out(q, value, "kept at %s, where the fit left it: no influence there", v);
            } else
                cand_leave_out(q, value, "kept: %s", fit_why_text(res.bad_why));
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
    if ((rc = ofile_write(out_path, calib_writer, out, e)))
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
