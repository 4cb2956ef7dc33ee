/* `collsim validate MEAS... [--topo T] [--calib CALIB]`: predict every
 * measured point and report, per data set (file), the median and worst
 * relative error; for collectives also the decision accuracy (at each size
 * measured with several algorithms, does the model name the same fastest
 * one) and the crossover sizes between algorithms, measured against
 * predicted. Collectives come from hwcheck coll files or plain nccl-tests
 * output, replays from hwcheck replay files (the trace path is taken as
 * written, else relative to the measurement file), transfers and launch
 * overheads from p2p/flows/host/launch files. --plot draws a parity panel,
 * error against size, one panel per collective and algorithm, heat maps of
 * single-pair transfers and bars of the other cases.
 * --max-median / --max-worst turn the report into a check (exit 1). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "models/coll/coll.h"
#include "models/fabric/fabric.h"
#include "models/nccl/nccl_tune.h"
#include "models/topo/topo.h"
#include "sim/ofile.h"
#include "traces/replay.h"
#include "validate/calib.h"
#include "validate/meas.h"
#include "validate/plot.h"
#include "validate/points.h"
#include "validate/stats.h"

enum { MAX_FILES = 256, MAX_ALGOS = 16, MAX_PANELS = 64, MAX_XOVER = 8,
       MAX_PAIRS = MAX_ALGOS * (MAX_ALGOS - 1) / 2 };

static const char synopsis[] = "collsim validate MEAS... [options]";
static const char desc[] =
    "MEAS: nccl-tests output as it is, or hwcheck coll, replay, p2p, flows, host and\n"
    "launch files. T defaults to the files' 'preset' metadata. --max-median and\n"
    "--max-worst fail (exit 1) when a data set's error exceeds them. --patterns and\n"
    "--sizes keep only these transfer cases (pattern; bytes per flow).";

/* What the options set. */
typedef struct validate_args {
    cmd_ctx cc;              /* --topo, --calib, --format */
    const char *plot, *patterns, *sizes, *merge, *without;
    double max_median, max_worst;
    int points;
} validate_args;

#define ARGS ((validate_args *)ctx)
static int set_plot(void *ctx, const char *a, err *e) { (void)e; ARGS->plot = a; return 0; }
static int set_patterns(void *ctx, const char *a, err *e) { (void)e; ARGS->patterns = a; return 0; }
static int set_sizes(void *ctx, const char *a, err *e) { (void)e; ARGS->sizes = a; return 0; }
static int set_merge(void *ctx, const char *a, err *e)
{
    ARGS->merge = a;
    return *a ? 0 : err_set(e, ERR_USAGE, "--merge: name the merged data set");
}
static int set_points(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->points = 1; return 0; }
static int set_without(void *ctx, const char *a, err *e) { (void)e; ARGS->without = a; return 0; }
/* A percentage bound: a negative one would fail every set, NaN none. */
static int parse_pct(const char *what, const char *a, double *out, err *e)
{
    TRY(cli_parse_double(what, a, out, e));
    return *out >= 0 ? 0 : err_set(e, ERR_USAGE, "%s: '%s' is not a percentage >= 0", what, a);
}
static int set_max_median(void *ctx, const char *a, err *e) { return parse_pct("--max-median", a, &ARGS->max_median, e); }
static int set_max_worst(void *ctx, const char *a, err *e) { return parse_pct("--max-worst", a, &ARGS->max_worst, e); }
#undef ARGS

static const cli_opt options[] = {
    {"topo", 0, "T", "preset or collsim-topo file (default: the files' 'preset')", cmd_set_topo},
    {"calib", 0, "CALIB", "apply a calibration profile (collsim calibrate)", cmd_set_calib},
    {"plot", 0, "OUT.svg", "SVG: parity, error vs size, per-collective panels, p2p heat maps and bars", set_plot},
    {"max-median", 0, "PCT", "fail if a set's median |error| exceeds PCT percent", set_max_median},
    {"max-worst", 0, "PCT", "fail if a set's worst |error| exceeds PCT percent", set_max_worst},
    {"points", 0, NULL, "also print every compared point", set_points},
    {"patterns", 0, "P1,P2,...", "keep only transfer cases of these patterns", set_patterns},
    {"sizes", 0, "SIZES", "keep only these bytes per flow: S1,S2,... or MIN:MAX (K/M/G)", set_sizes},
    {"merge", 0, "NAME", "judge all files as one data set NAME (decisions and crossovers across "
     "files: one file per algorithm or protocol)", set_merge},
    {"without", 0, "M,...", "predict the collectives with these mechanisms off (collsim coll --without; an ablation)", set_without},
    {"env", 0, "NAME=VALUE", "an NCCL setting every file's run had that the file does not record "
     "(nccl-tests output); repeatable; a file's own command line wins", cmd_set_env},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {NULL, 0, NULL, NULL, NULL},
};

/* One compared point of a data set. */
typedef struct vpoint {
    double size;        /* bytes (x of the plot) */
    double meas, pred;  /* us */
    int group;          /* algorithm / pattern index in the set */
    int chan, thr;      /* collectives: the plan predicted (channels, threads per channel) */
    char label[96];
    char where[64];     /* "file:line" tail */
} vpoint;

typedef struct vset {
    const char *name;
    const char *kind;
    vpoint *p;
    size_t n;
    char groups[MAX_ALGOS][48];
    int ngroups;
    int is_coll;
    char coll[24];      /* the collective of a collective set */
    int ranks;          /* ... and its ranks (nccl-tests' busbw factor) */
    char note[320];     /* why a set was skipped or has no points, or what its rows say of
                           themselves (inverted rows); "" if nothing */
    int skipped;        /* not judged (the note says why) */
} vset;

static int group_of(vset *s, const char *name)
{
    for (int i = 0; i < s->ngroups; i++)
        if (!strcmp(s->groups[i], name))
            return i;
    if (s->ngroups == MAX_ALGOS)
        return MAX_ALGOS - 1;
    snprintf(s->groups[s->ngroups], sizeof s->groups[0], "%s", name);
    return s->ngroups++;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A larger transfer on the same plan (algorithm, protocol, channels and
 * threads: the same primitives, each moving more bytes, and the same host
 * work) cannot take less time; a row measured more than INVERT_MARGIN above
 * a larger size of its file on the plan predicted for both is named in the
 * set's note ("inverted: ..."), as the data's own evidence of a perturbed
 * loop. It stays judged as measured (docs/model.md "LL128 eager at 2 MiB
 * against its neighbours"). */
#define INVERT_MARGIN 0.20

static void inverted_note(vset *s, size_t first)
{
    char list[200] = "";
    size_t len = 0;
    int n = 0;
    for (size_t i = first; i < s->n; i++) {
        const vpoint *a = &s->p[i];
        int inv = 0;
        for (size_t j = first; j < s->n && !inv; j++) {
            const vpoint *b = &s->p[j];
            inv = b->size > a->size && b->group == a->group && b->chan == a->chan &&
                  b->thr == a->thr && a->meas > b->meas * (1 + INVERT_MARGIN);
        }
        if (!inv)
            continue;
        n++;
        /* (sizes apart by spaces: a note's commas would split a csv reader's cells) */
        if (len + 24 < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%.0f", n > 1 ? " " : "",
                                    a->size);
        else if (len + 5 < sizeof list && list[len - 1] != '.')
            len += (size_t)snprintf(list + len, sizeof list - len, " ...");
    }
    if (!n)
        return;
    size_t at = strlen(s->note);
    snprintf(s->note + at, sizeof s->note - at, "%sinverted: %s B (%d row%s more than %.0f%% above "
             "a larger size on the same plan)", at ? "; " : "", list, n, n > 1 ? "s" : "",
             100 * INVERT_MARGIN);
}

static int coll_points(vset *s, const meas_set *m, const topo *t, coll_ctx *cc, err *e)
{
    coll_kind kind;
    if (coll_kind_parse(meas_collective(m), &kind))
        return err_at(e, meas_name(m), 0, "unknown collective '%s'", meas_collective(m));
    int ranks = meas_ranks(m);
    if (ranks <= 0)
        ranks = topo_ngpus(t);
    if (!cc)
        return err_set(e, ERR_SYSTEM, "%s: the collective model is not available in this build",
                       meas_name(m));
    /* The NCCL that ran and its settings (hwcheck's `# nccl:` line and the
     * `--env NAME=VALUE` of its command line) apply to every prediction. */
    /* collsim's own table adds the host's issue only under --launch
     * (its `# launch:` line); without it a time is the device's alone. */
    const char *by = meas_meta(m, "predicted_by"), *launch = meas_meta(m, "launch");
    int device_only = by && !strncmp(by, "collsim", 7) && !launch;
    size_t first = s->n;
    for (size_t i = 0; i < meas_ncoll(m); i++) {
        const meas_coll *k = meas_coll_at(m, i);
        coll_req q;
        const char *algo;
        if (meas_coll_req(m, k, t, kind, ranks, &q, &algo, e))
            return e->code;
        coll_result res;
        int rc = coll_predict(cc, &q, &res, e);
        if (rc)
            return err_wrap(e, "%s:%ld", meas_name(m), k->line);
        vpoint *v = &s->p[s->n++];
        v->size = (double)k->bytes;
        v->meas = k->time_us;
        v->chan = res.channels;
        v->thr = res.threads;
        /* Measured back to back: an iteration costs at least the host's
         * issue cost of one operation (a launch, or a graph node; for NCCL
         * the nccl_call_us / nccl_graph_call_us keys when set; one per GPU
         * the issuing thread drives, nccl-tests -g), except in collsim's own
         * device-time tables. */
        const topo_params *tpp = topo_params_get(t);
        sim_ps issue = device_only ? 0
                       : !strcmp(k->impl, "nccl")
                           ? meas_nccl_issue_ps(m, k, tpp, &q, res.channels)
                       : q.graph ? tpp->graph_node_ps : tpp->launch_ps;
        v->pred = (double)(res.time_ps > issue ? res.time_ps : issue) * 1e-6;
        char g[48];
        if (!strcmp(algo, "auto"))
            snprintf(g, sizeof g, "%s", k->impl[0] ? k->impl : "auto");
        else if (q.proto != PROTO_AUTO && strcmp(k->proto, "-"))
            snprintf(g, sizeof g, "%.20s(%.20s)", algo, k->proto); /* "ring(LL)" */
        else
            snprintf(g, sizeof g, "%s", algo);
        v->group = group_of(s, g);
        snprintf(v->label, sizeof v->label, "%s %s %llu B", coll_kind_name(kind), g,
                 (unsigned long long)k->bytes);
        snprintf(v->where, sizeof v->where, "line %ld", k->line);
    }
    inverted_note(s, first);
    s->is_coll = 1;
    s->ranks = ranks;
    snprintf(s->coll, sizeof s->coll, "%s", coll_kind_name(kind));
    return 0;
}

/* Without opening it: opening a FIFO would wait for a writer (and use up
 * what a pipe holds before the trace reader opens it). */
static int readable(const char *path) { return access(path, R_OK) == 0; }

/* The trace of a replay row: as written; else relative to the measurement
 * file; else the argument of the file's `command` that ends in that name
 * (hwcheck writes the base name), relative to the measurement file. */
static void trace_path(const meas_set *m, const char *trace, char *path, size_t len)
{
    const char *slash = strrchr(meas_name(m), '/');
    int dir = slash ? (int)(slash - meas_name(m)) : 0;
    snprintf(path, len, "%s", trace);
    if (readable(path) || trace[0] == '/')
        return;
    snprintf(path, len, "%.*s%s%s", dir, meas_name(m), dir ? "/" : "", trace);
    if (readable(path))
        return;
    const char *cmd = meas_meta(m, "command");
    char tok[1024];
    while (cmd && *cmd) {
        size_t n = strcspn(cmd, " ");
        if (n < sizeof tok) {
            memcpy(tok, cmd, n);
            tok[n] = 0;
            const char *b = strrchr(tok, '/');
            if (b && !strcmp(b + 1, trace)) {
                char alt[4096];
                snprintf(alt, sizeof alt, "%.*s%s%s", dir, meas_name(m), dir ? "/" : "", tok);
                if (readable(alt)) {
                    snprintf(path, len, "%s", alt);
                    return;
                }
            }
        }
        cmd += n;
        cmd += strspn(cmd, " ");
    }
}

/* How hwcheck replay launched the file's traces (its "# launch:" line):
 * 0 eager, 1 every phase a CUDA graph, -1 as each trace marks, which is
 * also hwcheck replay's default and what files without the line ran. */
static int replay_launch(const meas_set *m, int *graph, err *e)
{
    const char *l = meas_meta(m, "launch");
    *graph = -1;
    if (!l || !strncmp(l, "as the trace marks", 18))
        return 0;
    if (!strncmp(l, "eager", 5))
        *graph = 0;
    else if (!strncmp(l, "graph", 5))
        *graph = 1;
    else
        return err_set(e, ERR_INPUT, "%s: '# launch: %s': not eager, graph or as the trace marks",
                       meas_name(m), l);
    return 0;
}

static int replay_points(vset *s, const meas_set *m, const topo *t, coll_ctx *cc, err *e)
{
    if (!cc)
        return err_set(e, ERR_SYSTEM, "%s: the collective model is not available in this build",
                       meas_name(m));
    int graph;
    TRY(replay_launch(m, &graph, e));
    for (size_t i = 0; i < meas_nreplay(m); i++) {
        const meas_replay *x = meas_replay_at(m, i);
        char path[4096];
        trace_path(m, x->trace, path, sizeof path);
        replay_opts o;
        replay_opts_init(&o);
        o.graph = graph;
        /* "trace" / "auto": as the trace says; "nccl": NCCL's choice for every
         * allreduce, as hwcheck replay --allreduce nccl runs them. */
        o.nccl_allreduce = !strcmp(x->allreduce, "nccl");
        if (strcmp(x->allreduce, "auto") && strcmp(x->allreduce, "nccl") &&
            strcmp(x->allreduce, "trace") &&
            coll_algo_parse(x->allreduce, &o.allreduce))
            return err_at(e, meas_name(m), x->line, "unknown allreduce '%s'", x->allreduce);
        replay_result res;
        if (replay_file(path, t, cc, &o, NULL, &res, e))
            return err_wrap(e, "%s:%ld", meas_name(m), x->line);
        vpoint *v = &s->p[s->n++];
        v->size = 0;
        v->meas = x->cycle_us;
        v->pred = res.cycle_us;
        v->group = group_of(s, x->allreduce);
        snprintf(v->label, sizeof v->label, "%s cycle (%s)", base_name(x->trace), x->allreduce);
        snprintf(v->where, sizeof v->where, "line %ld", x->line);
    }
    return 0;
}

static int xfer_points(vset *s, meas_set *m, const topo *t, const pts_filter *f, err *e)
{
    pts *p;
    TRY(pts_build(&m, 1, t, f, &p, e));
    size_t n = pts_count(p);
    double *pred = malloc((n ? n : 1) * sizeof *pred);
    if (!pred) {
        pts_free(p);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    int rc = pts_predict(p, t, pred, e);
    for (size_t i = 0; i < n && !rc; i++) {
        const pts_point *x = pts_at(p, i);
        vpoint *v = &s->p[s->n++];
        v->meas = x->meas_us;
        v->pred = pred[i];
        v->size = 0;
        if (x->case_no >= 0 && meas_kind_of(m) != MEAS_LAUNCH) {
            /* Size: the bytes of the row (per flow, or the case total). */
            for (size_t k = 0; k < meas_nxfer(m); k++)
                if (meas_xfer_at(m, k)->line == x->line)
                    v->size = (double)meas_xfer_at(m, k)->bytes;
        }
        char g[48];
        snprintf(g, sizeof g, "%.47s", x->label);
        char *sp = strchr(g, ' ');   /* group by "pattern op" */
        if (sp && (sp = strchr(sp + 1, ' ')))
            *sp = 0;
        v->group = group_of(s, g);
        snprintf(v->label, sizeof v->label, "%s", x->label);
        snprintf(v->where, sizeof v->where, "line %ld", x->line);
    }
    free(pred);
    pts_free(p);
    return rc;
}

static void fmt_size(double b, char *buf, size_t n)
{
    if (b >= 1 << 30)
        snprintf(buf, n, "%.3gG", b / (1 << 30));
    else if (b >= 1 << 20)
        snprintf(buf, n, "%.3gM", b / (1 << 20));
    else if (b >= 1 << 10)
        snprintf(buf, n, "%.3gK", b / (1 << 10));
    else
        snprintf(buf, n, "%.3g", b);
}

/* The first crossover of one algorithm pair, measured and predicted: 0
 * where they do not cross; nm/np how many times they do. */
typedef struct xover {
    int a, b;                  /* groups */
    double meas, pred;         /* bytes, 0 = none */
    size_t nm, np;
} xover;

/* Crossovers of every algorithm pair with >= 2 common sizes; returns the
 * count (at most max). */
static size_t crossovers(const vset *s, xover *out, size_t max)
{
    size_t nx = 0;
    for (int a = 0; a < s->ngroups; a++)
        for (int b = a + 1; b < s->ngroups && nx < max; b++) {
            double sz[256], ma[256], mb[256], pa[256], pb[256];
            size_t n = 0;
            for (size_t i = 0; i < s->n && n < 256; i++) {
                if (s->p[i].group != a)
                    continue;
                for (size_t j = 0; j < s->n; j++)
                    if (s->p[j].group == b && s->p[j].size == s->p[i].size) {
                        sz[n] = s->p[i].size;
                        ma[n] = s->p[i].meas;
                        pa[n] = s->p[i].pred;
                        mb[n] = s->p[j].meas;
                        pb[n] = s->p[j].pred;
                        n++;
                        break;
                    }
            }
            if (n < 2)
                continue;
            /* Points come in file order; sort by size (insertion, n small). */
            for (size_t i = 1; i < n; i++)
                for (size_t k = i; k > 0 && sz[k - 1] > sz[k]; k--) {
                    double *arr[] = {sz, ma, mb, pa, pb};
                    for (int q = 0; q < 5; q++) {
                        double tmp = arr[q][k];
                        arr[q][k] = arr[q][k - 1];
                        arr[q][k - 1] = tmp;
                    }
                }
            double xm[MAX_XOVER], xp[MAX_XOVER];
            xover *x = &out[nx++];
            x->a = a, x->b = b;
            x->nm = stats_crossovers(sz, ma, mb, n, xm, MAX_XOVER);
            x->np = stats_crossovers(sz, pa, pb, n, xp, MAX_XOVER);
            x->meas = x->nm ? xm[0] : 0;
            x->pred = x->np ? xp[0] : 0;
        }
    return nx;
}

/* The crossovers as text: "A/B meas 12.4K pred 13K" ("+": more than one;
 * pairs that cross in neither are left out). */
static void crossover_text(const vset *s, const xover *x, size_t nx, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < nx; i++) {
        char m1[16] = "none", p1[16] = "none";
        if (!x[i].nm && !x[i].np)
            continue;   /* neither crosses: the crossovers table lists it */
        if (x[i].nm)
            fmt_size(x[i].meas, m1, sizeof m1);
        if (x[i].np)
            fmt_size(x[i].pred, p1, sizeof p1);
        int w = snprintf(out + used, len - used, "%s%s/%s meas %s%s pred %s%s", used ? "; " : "",
                         s->groups[x[i].a], s->groups[x[i].b], m1, x[i].nm > 1 ? "+" : "", p1,
                         x[i].np > 1 ? "+" : "");
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
    if (!used)
        snprintf(out, len, "-");
}

static const report_col set_cols[] = {
    {"set", NULL, 34, -1},          {"kind", NULL, 6, -1},
    {"points", NULL, 6, -1},        {"median_err_pct", "median%", 8, 2},
    {"worst_err_pct", "worst%", 8, 2}, {"worst_point", NULL, 30, -1},
    {"decisions", NULL, 9, -1},     {"crossovers", NULL, 30, -1},
    {"note", NULL, 1, -1},
};
static const report_col xover_cols[] = {
    {"set", NULL, 34, -1},           {"pair", NULL, 30, -1},
    {"meas_bytes", NULL, 12, 0},     {"pred_bytes", NULL, 12, 0},
    {"meas_count", NULL, 10, -1},    {"pred_count", NULL, 10, -1},
};
static const report_col point_cols[] = {
    {"set", NULL, 34, -1},    {"where", NULL, 10, -1},  {"point", NULL, 34, -1},
    {"meas_us", NULL, 12, 3}, {"pred_us", NULL, 12, 3}, {"err_pct", NULL, 8, 2},
};

/* "A>B" at the end of a transfer label: one flow from GPU A to GPU B. */
static int pair_of(const char *label, int *a, int *b)
{
    const char *sp = strrchr(label, ' ');
    char tail;
    return sp && sscanf(sp + 1, "%d>%d%c", a, b, &tail) == 2 && *a >= 0 && *a < 256 && *b >= 0 &&
                   *b < 256
               ? 0
               : -1;
}

/* The figure: a parity panel (predicted against measured, every set, one
 * colour each), error against size, then one panel per collective and
 * algorithm (time against size: measured points, predicted line) and per
 * transfer group (single pairs as a source x destination heat map of the
 * error at the largest size, other cases as measured/predicted bars). */
static int build_plot(plot *pl, const vset *vs, int nfiles, err *e)
{
    int par = plot_panel_kind(pl, "predicted against measured (all sets)", PLOT_LOGLOG,
                              "measured time (us)", "predicted time (us)", e);
    int erp = par < 0 ? -1
                      : plot_panel_kind(pl, "error against size", PLOT_LOGLIN, "size (bytes)",
                                        "error (%, predicted - measured)", e);
    if (erp < 0)
        return e->code ? e->code : ERR_SYSTEM;
    plot_panel_diagonal(pl, par);
    int rc = 0;
    char pnames[MAX_PANELS][96];
    int pidx[MAX_PANELS], npan = 0;
    for (int i = 0; i < nfiles && !rc; i++) {
        const vset *v = &vs[i];
        size_t n = v->n ? v->n : 1;
        double *xs = malloc(n * 4 * sizeof *xs);
        if (!xs)
            return err_set(e, ERR_SYSTEM, "out of memory");
        double *ym = xs + n, *yp = ym + n, *er = yp + n;
        for (size_t k = 0; k < v->n; k++) {
            xs[k] = v->p[k].meas;
            yp[k] = v->p[k].pred;
        }
        rc = plot_series(pl, par, v->name, PLOT_POINTS, xs, yp, v->n, e);
        size_t m = 0;
        for (size_t k = 0; k < v->n; k++)
            if (v->p[k].size > 0 && v->p[k].meas > 0) {
                xs[m] = v->p[k].size;
                er[m++] = 100.0 * (v->p[k].pred - v->p[k].meas) / v->p[k].meas;
            }
        if (!rc)
            rc = plot_series(pl, erp, v->name, PLOT_POINTS, xs, er, m, e);
        for (int g = 0; g < v->ngroups && !rc; g++) {
            char name[96];
            int heat = 0, pairs2 = 0, a, b, top = 0;
            double maxsize = 0;
            if (v->is_coll) {
                snprintf(name, sizeof name, "%s %s", v->coll, v->groups[g]);
            } else {
                /* Heat map when every point of the group is one pair; on two
                 * GPUs a 2x2 matrix says less than bars, so every pair
                 * group of the set shares one bar panel at its largest size. */
                heat = 1;
                for (size_t k = 0; k < v->n; k++)
                    if (v->p[k].group == g) {
                        heat &= !pair_of(v->p[k].label, &a, &b);
                        if (heat)
                            top = a > top ? a : b > top ? b : top;
                        maxsize = v->p[k].size > maxsize ? v->p[k].size : maxsize;
                    }
                pairs2 = heat && top < 2;
                heat &= !pairs2;
                if (pairs2)
                    snprintf(name, sizeof name, "%.40s: single pairs, largest size", v->name);
                else if (heat)
                    snprintf(name, sizeof name, "%.40s: %.40s error (%%)", v->name, v->groups[g]);
                else
                    snprintf(name, sizeof name, "%s", v->groups[g]);
            }
            int pi = -1;
            for (int k = 0; k < npan; k++)
                if (!strcmp(pnames[k], name))
                    pi = pidx[k];
            if (pi < 0 && npan < MAX_PANELS) {
                pi = v->is_coll ? plot_panel(pl, name, e)
                     : heat     ? plot_panel_kind(pl, name, PLOT_HEAT, "destination GPU",
                                                  "source GPU", e)
                                : plot_panel_kind(pl, name, PLOT_BARS, "", "time (us)", e);
                if (pi >= 0) {
                    snprintf(pnames[npan], sizeof pnames[0], "%s", name);
                    pidx[npan++] = pi;
                }
            }
            if (pi < 0) {
                rc = e->code ? e->code : ERR_SYSTEM;
                break;
            }
            if (v->is_coll) {
                /* measured points and predicted line, sorted by size */
                size_t c = 0;
                for (size_t k = 0; k < v->n; k++)
                    if (v->p[k].group == g && v->p[k].size > 0) {
                        size_t j = c++;
                        while (j > 0 && xs[j - 1] > v->p[k].size) {
                            xs[j] = xs[j - 1], ym[j] = ym[j - 1], yp[j] = yp[j - 1];
                            j--;
                        }
                        xs[j] = v->p[k].size, ym[j] = v->p[k].meas, yp[j] = v->p[k].pred;
                    }
                rc = plot_series(pl, pi, v->name, PLOT_POINTS, xs, ym, c, e);
                if (!rc)
                    rc = plot_series(pl, pi, v->name, PLOT_LINE, xs, yp, c, e);
                /* the busbw view (nccl-tests' busbw = size / time x its factor),
                 * one panel per collective, a series per algorithm */
                coll_kind ck;
                char bname[96], lab[112];
                snprintf(bname, sizeof bname, "%s busbw (nccl-tests), %d ranks", v->coll, v->ranks);
                int bi = -1;
                for (int k = 0; k < npan; k++)
                    if (!strcmp(pnames[k], bname))
                        bi = pidx[k];
                if (!rc && bi < 0 && npan < MAX_PANELS &&
                    (bi = plot_panel_kind(pl, bname, PLOT_LOGLIN, "size (bytes)", "busbw (GB/s)",
                                          e)) >= 0) {
                    snprintf(pnames[npan], sizeof pnames[0], "%s", bname);
                    pidx[npan++] = bi;
                }
                if (rc || bi < 0 || coll_kind_parse(v->coll, &ck))
                    continue;
                double f = coll_bus_factor(ck, v->ranks);
                for (size_t k = 0; k < c; k++) {
                    ym[k] = ym[k] > 0 ? xs[k] / (ym[k] * 1e3) * f : NAN;
                    yp[k] = yp[k] > 0 ? xs[k] / (yp[k] * 1e3) * f : NAN;
                }
                snprintf(lab, sizeof lab, "%s: %s", v->name, v->groups[g]);
                rc = plot_series(pl, bi, lab, PLOT_POINTS, xs, ym, c, e);
                if (!rc)
                    rc = plot_series(pl, bi, lab, PLOT_LINE, xs, yp, c, e);
                continue;
            }
            for (size_t k = 0; k < v->n && !rc; k++) {
                const vpoint *q = &v->p[k];
                if (q->group != g)
                    continue;
                if (heat) {
                    if (q->size == maxsize && !pair_of(q->label, &a, &b) && q->meas > 0)
                        rc = plot_cell(pl, pi, a, b, 100.0 * (q->pred - q->meas) / q->meas, e);
                    continue;
                }
                if (pairs2) {  /* "pair read 0>1 256M" */
                    if (q->size == maxsize)
                        rc = plot_bar(pl, pi, v->name, q->label, q->meas, q->pred, e);
                    continue;
                }
                /* category: the label after "pattern op", and the size */
                const char *cat = q->label;
                size_t gl = strlen(v->groups[g]);
                if (!strncmp(cat, v->groups[g], gl) && cat[gl] == ' ')
                    cat += gl + 1;
                char cs[112];
                static const char *const unit[] = {"B", "K", "M", "G", "T"};
                double sz = q->size;
                int u = 0;
                while (sz >= 1024 && u < 4)
                    sz /= 1024, u++;
                if (q->size > 0)
                    snprintf(cs, sizeof cs, "%.80s %g%s", cat, sz, unit[u]);
                else
                    snprintf(cs, sizeof cs, "%.80s", cat);
                rc = plot_bar(pl, pi, v->name, cs, q->meas, q->pred, e);
            }
        }
        free(xs);
    }
    return rc;
}

/* The value of option opt ("--topo X" or "--topo=X") in a command line,
 * into buf; NULL when absent. */
static const char *command_arg(const char *cmd, const char *opt, char *buf, size_t len)
{
    size_t ol = strlen(opt);
    for (const char *p = cmd; p && *p;) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (n > ol && p[ol] == '=' && !strncmp(p, opt, ol)) {
            snprintf(buf, len, "%.*s", (int)(n - ol - 1), p + ol + 1);
            return buf;
        }
        if (n == ol && !strncmp(p, opt, ol)) {
            p += n;
            p += strspn(p, " ");
            n = strcspn(p, " ");
            if (!n)
                return NULL;
            snprintf(buf, len, "%.*s", (int)n, p);
            return buf;
        }
        p += n;
    }
    return NULL;
}

/* The topology a file's header names: a converted or hwcheck file's
 * `preset`; in collsim coll's own table, the command's --topo (a preset or
 * a path, as it was given), else the topology's name. NULL if none. */
static const char *header_topo(const meas_set *m, char *buf, size_t len)
{
    const char *p = meas_meta(m, "preset"), *by = meas_meta(m, "predicted_by");
    if (p)
        return p;
    if (!by || strncmp(by, "collsim", 7))
        return NULL;
    if (command_arg(meas_meta(m, "command"), "--topo", buf, len))
        return buf;
    if (!(p = meas_meta(m, "topology")))
        return NULL;
    snprintf(buf, len, "%.*s", (int)strcspn(p, " "), p);
    return buf;
}

int cmd_validate(int argc, char **argv, err *e)
{
    validate_args va = {.max_median = INFINITY, .max_worst = INFINITY};
    cmd_ctx_init(&va.cc);
    const char *files[MAX_FILES + 1];
    int nfiles;
    /* One slot more than allowed, so that too many files get their own message. */
    int prc = cli_parse("collsim validate", synopsis, desc, options, &va, argc, argv, files,
                        MAX_FILES + 1, &nfiles, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (nfiles > MAX_FILES)
        return err_set(e, ERR_USAGE, "validate: more than %d files", MAX_FILES);
    /* No --topo: the one the files' headers name (below). */
    const char *topo_arg = va.cc.topo_given ? va.cc.topo : NULL, *plot_path = va.plot;
    const char *calib_path = va.cc.calib;
    const char *sel_patterns = va.patterns, *sel_sizes = va.sizes;
    int show_points = va.points;
    double max_median = va.max_median, max_worst = va.max_worst;
    report_format fmt = va.cc.fmt;
    if (!nfiles)
        return err_set(e, ERR_USAGE, "validate needs measurement files (collsim validate --help)");
    pts_filter filter;
    TRY(pts_filter_parse(sel_patterns, sel_sizes, &filter, e));

    meas_set *sets[MAX_FILES] = {0};
    vset vs[MAX_FILES];
    memset(vs, 0, sizeof vs);
    vset merged, *sel = vs; /* what is reported: the files, or --merge's one set */
    memset(&merged, 0, sizeof merged);
    int nsel = 0;
    topo *t = NULL;
    coll_ctx *cc = NULL;
    plot *pl = NULL;
    report *r = NULL;
    int rc = 0;
    for (int i = 0; i < nfiles && !rc; i++)
        if (!(rc = meas_load(files[i], &sets[i], e)) && va.cc.env_given)
            rc = meas_set_run_env(sets[i], va.cc.envs, e);
    if (rc)
        goto done;
    char hdr_topo[2][1024];
    if (!topo_arg) {
        topo_arg = header_topo(sets[0], hdr_topo[0], sizeof hdr_topo[0]);
        for (int i = 1; i < nfiles && topo_arg; i++) {
            const char *p = header_topo(sets[i], hdr_topo[1], sizeof hdr_topo[1]);
            if (!p || strcmp(p, topo_arg)) {
                rc = err_set(e, ERR_USAGE, "%s: the topology its header names (%s) differs from "
                             "%s's (%s): give --topo", files[i], p ? p : "none", files[0],
                             topo_arg);
                goto done;
            }
        }
        if (!topo_arg) {
            rc = err_set(e, ERR_USAGE, "%s names no topology (no 'preset', not a collsim coll "
                         "table): give --topo", files[0]);
            goto done;
        }
    }
    va.cc.topo = topo_arg;
    if ((rc = cmd_load_topo(&va.cc, &t, e)))
        goto done;
    cc = coll_ctx_new(t);   /* NULL while the collective model is missing */
    if (va.without && cc) {
        int off = 0;
        if ((rc = fabric_mech_parse(va.without, &off, e)))
            goto done;
        coll_ctx_without(cc, off);
    }

    for (int i = 0; i < nfiles && !rc; i++) {
        meas_set *m = sets[i];
        vset *s = &vs[i];
        s->name = base_name(files[i]);
        s->kind = meas_is_nccl_tests(m) ? "nccl-tests" : meas_kind_name(meas_kind_of(m));
        size_t cap = meas_ncoll(m) + meas_nreplay(m) + meas_nxfer(m) + meas_nlaunch(m) + 1;
        if (!(s->p = calloc(cap, sizeof *s->p))) {
            rc = err_set(e, ERR_SYSTEM, "out of memory");
            break;
        }
        int vr = meas_kind_of(m) == MEAS_COLL ? meas_virtual_ranks(m) : 0;
        if (vr) {
            /* Not representable: the model runs one rank per GPU of the
             * topology; N ranks sharing one GPU's memory and SMs are not
             * N GPUs joined by links, so no topology predicts them. */
            snprintf(s->note, sizeof s->note, "skipped: %d virtual ranks on one GPU; the model "
                     "runs one rank per GPU", vr);
            s->skipped = 1;
            continue;
        }
        const char *nv = meas_kind_of(m) == MEAS_COLL ? meas_nccl_unemulated(m) : NULL;
        if (nv) {
            /* Judged, but with the newest emulated NCCL's tuning: say so. */
            char list[64];
            snprintf(s->note, sizeof s->note, "NCCL %.24s is not emulated (%s): predicted as %s",
                     nv, nccl_tune_version_list(list, sizeof list), nccl_tune_version_name(0));
            fprintf(stderr, "collsim validate: warning: %s: %s\n", meas_name(m), s->note);
        }
        switch (meas_kind_of(m)) {
        case MEAS_COLL: rc = coll_points(s, m, t, cc, e); break;
        case MEAS_REPLAY: rc = replay_points(s, m, t, cc, e); break;
        default: rc = xfer_points(s, m, t, &filter, e); break;
        }
    }
    if (rc)
        goto done;
    for (int i = 0; i < nfiles; i++)
        if (!vs[i].skipped && !vs[i].n)
            snprintf(vs[i].note, sizeof vs[i].note, "%s",
                     meas_kind_of(sets[i]) == MEAS_LAUNCH
                         ? "no comparable points: no launch or graph-node row"
                         : "no comparable points");
    /* --merge: every file's points in one set, groups matched by name. */
    nsel = nfiles;
    if (va.merge) {
        size_t cap = 0;
        for (int i = 0; i < nfiles; i++)
            cap += vs[i].n;
        if (!(merged.p = calloc(cap + 1, sizeof *merged.p))) {
            rc = err_set(e, ERR_SYSTEM, "out of memory");
            goto done;
        }
        merged.name = va.merge;
        merged.kind = vs[0].kind;
        snprintf(merged.coll, sizeof merged.coll, "%s", vs[0].coll);
        merged.ranks = vs[0].ranks;
        merged.is_coll = 1;
        int judged = 0;
        for (int i = 0; i < nfiles && !rc; i++) {
            if (vs[i].skipped)
                continue;
            judged++;
            merged.is_coll &= vs[i].is_coll;
            for (size_t k = 0; k < vs[i].n; k++) {
                vpoint *v = &merged.p[merged.n++];
                *v = vs[i].p[k];
                v->group = group_of(&merged, vs[i].groups[vs[i].p[k].group]);
                char where[sizeof v->where];
                snprintf(where, sizeof where, "%s", v->where);
                snprintf(v->where, sizeof v->where, "%.20s:%.20s", vs[i].name, where);
            }
        }
        if (rc)
            goto done;
        if (!judged) {
            merged.skipped = 1;
            snprintf(merged.note, sizeof merged.note, "skipped: every file was skipped");
        } else if (!merged.n) {
            snprintf(merged.note, sizeof merged.note, "no comparable points");
        }
        sel = &merged;
        nsel = 1;
    }

    if (!(r = report_new(stdout, fmt))) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    report_meta(r, "topo", "%s", topo_name(t));
    report_meta(r, "calibration", "%s", calib_path ? calib_path : "none (topology values)");
    if (va.cc.env_given)
        report_meta(r, "env", "%s (--env: the runs' settings the files do not record)", va.cc.envs);
    if (va.without)
        report_meta(r, "without", "%s", va.without);
    report_table(r, "validation", set_cols, 9);
    /* A check (--max-median, --max-worst) fails on the first set that
     * exceeds a bound, and on a set with nothing to compare: a check that
     * judged nothing has not passed. Skipped sets (their note says why) are
     * not judged, but a check that judges no set at all fails. */
    int check = isfinite(max_median) || isfinite(max_worst), judged = 0;
    char fail[512] = "";
    xover *xs = calloc((size_t)nsel * MAX_PAIRS + 1, sizeof *xs);
    size_t *nxs = calloc((size_t)nsel + 1, sizeof *nxs);
    if (!xs || !nxs) {
        free(xs);
        free(nxs);
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < nsel; i++) {
        vset *s = &sel[i];
        report_str(r, s->name);
        report_str(r, s->kind);
        report_int(r, (long long)s->n);
        if (!s->n) {
            report_num(r, NAN);   /* no median or worst: null in json, "-" in a table */
            report_num(r, NAN);
            for (int k = 0; k < 3; k++)
                report_str(r, "-");
            report_str(r, s->note);
            report_end_row(r);
            if (check && !s->skipped && !fail[0])
                snprintf(fail, sizeof fail, "%s: no comparable points: nothing to check", s->name);
            continue;
        }
        judged++;
        double *pm = malloc(2 * s->n * sizeof *pm);
        stats_point *sp = malloc(s->n * sizeof *sp);
        stats_choice *ch = malloc(s->n * sizeof *ch);
        if (!pm || !sp || !ch) {
            free(pm);
            free(sp);
            free(ch);
            free(xs);
            free(nxs);
            report_free(r);
            r = NULL;
            rc = err_set(e, ERR_SYSTEM, "out of memory");
            goto done;
        }
        for (size_t k = 0; k < s->n; k++) {
            pm[k] = s->p[k].pred;
            pm[s->n + k] = s->p[k].meas;
            sp[k] = (stats_point){s->p[k].size, s->p[k].group, s->p[k].pred, s->p[k].meas};
        }
        stats_err st;
        int src = stats_errors(pm, pm + s->n, s->n, &st, e);
        size_t nch = s->is_coll ? stats_choices(sp, s->n, ch) : 0;
        char dec[32] = "-", xo[512] = "-";
        if (nch) {
            size_t agree = 0;
            for (size_t k = 0; k < nch; k++)
                agree += ch[k].meas_best == ch[k].pred_best;
            snprintf(dec, sizeof dec, "%zu/%zu", agree, nch);
            nxs[i] = crossovers(s, xs + (size_t)i * MAX_PAIRS, MAX_PAIRS);
            crossover_text(s, xs + (size_t)i * MAX_PAIRS, nxs[i], xo, sizeof xo);
        }
        free(pm);
        free(sp);
        free(ch);
        if (src) {
            free(xs);
            free(nxs);
            report_free(r);
            r = NULL;
            rc = err_wrap(e, "%s", s->name);
            goto done;
        }
        report_num(r, 100 * st.median_abs);
        report_num(r, 100 * st.worst);
        report_str(r, s->p[st.worst_index].label);
        report_str(r, dec);
        report_str(r, xo);
        report_str(r, s->note);
        report_end_row(r);
        if (!fail[0] && 100 * st.median_abs > max_median)
            snprintf(fail, sizeof fail, "%s: median error %.2f%% exceeds %.2f%%", s->name,
                     100 * st.median_abs, max_median);
        if (!fail[0] && 100 * fabs(st.worst) > max_worst)
            snprintf(fail, sizeof fail, "%s: worst error %.2f%% exceeds %.2f%%", s->name,
                     100 * fabs(st.worst), max_worst);
    }
    if (check && !judged && !fail[0])
        snprintf(fail, sizeof fail, "no data set was judged (%d skipped): nothing to check", nsel);
    /* Crossovers as numbers (bytes; 0 = they do not cross), for checks. */
    size_t nxall = 0;
    for (int i = 0; i < nsel; i++)
        nxall += nxs[i];
    if (nxall) {
        report_table(r, "crossovers", xover_cols, 6);
        for (int i = 0; i < nsel; i++)
            for (size_t k = 0; k < nxs[i]; k++) {
                const xover *x = &xs[(size_t)i * MAX_PAIRS + k];
                char pair[112];
                snprintf(pair, sizeof pair, "%s/%s", sel[i].groups[x->a], sel[i].groups[x->b]);
                report_str(r, sel[i].name);
                report_str(r, pair);
                report_num(r, x->meas);
                report_num(r, x->pred);
                report_int(r, (long long)x->nm);
                report_int(r, (long long)x->np);
                report_end_row(r);
            }
    }
    free(xs);
    free(nxs);
    if (show_points) {
        report_table(r, "points", point_cols, 6);
        for (int i = 0; i < nsel; i++)
            for (size_t k = 0; k < sel[i].n; k++) {
                const vpoint *v = &sel[i].p[k];
                report_str(r, sel[i].name);
                report_str(r, v->where);
                report_str(r, v->label);
                report_num(r, v->meas);
                report_num(r, v->pred);
                report_num(r, 100 * stats_rel_err(v->pred, v->meas));
                report_end_row(r);
            }
    }
    rc = report_finish(r, e);
    report_free(r);
    r = NULL;
    if (rc)
        goto done;

    if (plot_path) {
        /* The title names what was judged: the data sets, topology, calibration. */
        char title[512], sets_s[256] = "";
        size_t k = 0;
        for (int i = 0; i < nsel && k < sizeof sets_s; i++)
            k += (size_t)snprintf(sets_s + k, sizeof sets_s - k, "%s%s", i ? ", " : "",
                                  sel[i].name);
        const char *cb = calib_path ? strrchr(calib_path, '/') : NULL;
        snprintf(title, sizeof title, "collsim validate: %s on %s, calibration %s", sets_s,
                 topo_name(t), calib_path ? (cb ? cb + 1 : calib_path) : "none (preset)");
        pl = plot_new(title, "size (bytes)", "time (us)");
        if (!pl) {
            rc = err_set(e, ERR_SYSTEM, "out of memory");
            goto done;
        }
        rc = build_plot(pl, sel, nsel, e);
        if (rc)
            goto done;
        if ((rc = ofile_write(plot_path, plot_svg_writer, pl, e)))
            goto done;
    }
    if (fail[0])
        rc = err_set(e, ERR_CHECK, "%s", fail);
done:
    free(merged.p);
    report_free(r);
    plot_free(pl);
    coll_ctx_free(cc);
    topo_free(t);
    for (int i = 0; i < nfiles; i++) {
        free(vs[i].p);
        meas_free(sets[i]);
    }
    return rc;
}
