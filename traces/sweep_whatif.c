/* Sweep runner over what-if and replay. Caches live in the runner's context,
 * which each worker owns after the fork: the last scenario loaded (a plain
 * value, copied per run before its knobs are set), one what-if context, and
 * for traces the last topology with its collective-prediction context, so a
 * worker replaying many points on one topology predicts each distinct
 * collective once. Trace knobs are a table (name, setter, description). */
#include "traces/sweep_whatif.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/coll/coll.h"
#include "models/topo/topo.h"
#include "sim/cli.h"
#include "traces/replay.h"
#include "traces/trace.h"
#include "traces/whatif.h"
#include "validate/calib.h"

/* The cycle's parts in the names of docs/cli.md "Where the time goes". */
enum { M_TOK, M_SPEEDUP, M_CYCLE, M_TPC, M_COMPUTE, M_COMM, M_LAUNCH, M_HOST, M_WAIT,
       M_UNEXPL, M_AR, M_N };

static const sweep_metric metrics[M_N] = {
    {"tok_per_s", 3},  {"speedup", 4},   {"cycle_us", 3},       {"tokens_per_cycle", 3},
    {"compute_us", 3}, {"comm_us", 3},   {"launch_us", 3},      {"host_us", 3},
    {"wait_us", 3},    {"unexplained_us", 3}, {"allreduce_us", 3},
};

struct sweep_whatif {
    whatif_ctx *wc;
    char scen_path[4096];
    whatif_scenario scen;       /* scen_path loaded, before knobs */
    char base_path[4096];       /* the input whose baseline is base_tok, base_cycle */
    sweep_kind base_kind;
    double base_tok, base_cycle_us;
    char topo_name[4096];
    topo *topo;                 /* topo_name loaded */
    coll_ctx *cc;               /* predictions on topo */
};

sweep_whatif *sweep_whatif_new(void) { return calloc(1, sizeof(sweep_whatif)); }

void sweep_whatif_free(sweep_whatif *w)
{
    if (!w)
        return;
    whatif_ctx_free(w->wc);
    coll_ctx_free(w->cc);
    topo_free(w->topo);
    free(w);
}

/* --- trace knobs ------------------------------------------------------------------ */

typedef struct trace_knobs {
    const char *topo;
    replay_opts opts;
} trace_knobs;

static int set_topo(trace_knobs *k, const char *v, err *e)
{
    (void)e;
    k->topo = v;
    return 0;
}

static int set_allreduce(trace_knobs *k, const char *v, err *e)
{
    if (coll_algo_parse(v, &k->opts.allreduce) != 0)
        return err_set(e, ERR_USAGE, "unknown algorithm '%s'", v);
    return 0;
}

static int set_proto(trace_knobs *k, const char *v, err *e)
{
    if (coll_proto_parse(v, &k->opts.proto) != 0)
        return err_set(e, ERR_USAGE, "unknown protocol '%s'", v);
    return 0;
}

static int set_graph(trace_knobs *k, const char *v, err *e)
{
    long g;
    TRY(cli_parse_long("graph", v, 0, 1, &g, e));
    k->opts.graph = (int)g;
    return 0;
}

static int set_measured(trace_knobs *k, const char *v, err *e)
{
    long g;
    TRY(cli_parse_long("measured", v, 0, 1, &g, e));
    k->opts.measured = (int)g;
    return 0;
}

static int set_compute_scale(trace_knobs *k, const char *v, err *e)
{
    TRY(cli_parse_double("compute_scale", v, &k->opts.compute_scale, e));
    if (k->opts.compute_scale <= 0)
        return err_set(e, ERR_USAGE, "compute_scale must be > 0");
    return 0;
}

static int set_allreduce_us(trace_knobs *k, const char *v, err *e)
{
    TRY(cli_parse_double("allreduce_us", v, &k->opts.coll_us, e));
    if (k->opts.coll_us < 0)
        return err_set(e, ERR_USAGE, "allreduce_us must be >= 0");
    return 0;
}

static int set_launch_us(trace_knobs *k, const char *v, err *e)
{
    TRY(cli_parse_double("launch_us", v, &k->opts.launch_us, e));
    if (k->opts.launch_us < 0)
        return err_set(e, ERR_USAGE, "launch_us must be >= 0");
    return 0;
}

static int set_graph_node_us(trace_knobs *k, const char *v, err *e)
{
    TRY(cli_parse_double("graph_node_us", v, &k->opts.graph_node_us, e));
    if (k->opts.graph_node_us < 0)
        return err_set(e, ERR_USAGE, "graph_node_us must be >= 0");
    return 0;
}

static const struct {
    const char *key;
    int (*set)(trace_knobs *k, const char *v, err *e);
    const char *desc;
} trace_keys[] = {
    {"topo", set_topo, "topology preset or file (default " SWEEP_WHATIF_TOPO ")"},
    {"allreduce", set_allreduce, "force every allreduce: ring, tree, oneshot, twoshot, ..."},
    {"proto", set_proto, "NCCL protocol: LL, LL128, Simple, auto"},
    {"graph", set_graph, "1 = CUDA graphs, 0 = eager (default: as the trace says)"},
    {"compute_scale", set_compute_scale, "multiply compute durations (another GPU)"},
    {"allreduce_us", set_allreduce_us, "force every allreduce to this time (0 = predict)"},
    {"measured", set_measured, "1 = use a collective's measured_us when it has one"},
    {"launch_us", set_launch_us, "per-kernel launch cost instead of the topology's"},
    {"graph_node_us", set_graph_node_us, "per CUDA-graph node cost instead of the topology's"},
};
enum { N_TRACE_KEYS = sizeof trace_keys / sizeof trace_keys[0] };

const char *sweep_whatif_trace_key(int i)
{
    return i >= 0 && i < N_TRACE_KEYS ? trace_keys[i].key : NULL;
}

const char *sweep_whatif_trace_key_desc(int i)
{
    return i >= 0 && i < N_TRACE_KEYS ? trace_keys[i].desc : NULL;
}

/* NCCL_X or nccl_x: an NCCL setting, given to coll_env_set as NCCL_X=value. */
static int trace_set(trace_knobs *k, const char *key, const char *value, err *e)
{
    for (int i = 0; i < N_TRACE_KEYS; i++)
        if (!strcmp(trace_keys[i].key, key))
            return trace_keys[i].set(k, value, e);
    if (!strncmp(key, "NCCL_", 5) || !strncmp(key, "nccl_", 5)) {
        char a[512];
        size_t n = 0;
        for (; key[n] && n < 255; n++)
            a[n] = (char)toupper((unsigned char)key[n]);
        snprintf(a + n, sizeof a - n, "=%s", value);
        return coll_env_set(&k->opts.env, a, e);
    }
    const char *names[N_TRACE_KEYS];
    for (int i = 0; i < N_TRACE_KEYS; i++)
        names[i] = trace_keys[i].key;
    const char *sug = cli_suggest(key, names, N_TRACE_KEYS);
    return err_set(e, ERR_USAGE, "unknown knob '%s' for a trace (%s%s%scollsim sweep --keys "
                                 "lists them)", key, sug ? "did you mean '" : "", sug ? sug : "",
                   sug ? "'? " : "");
}

static int use_topo(sweep_whatif *w, const char *name, err *e)
{
    if (w->topo && !strcmp(w->topo_name, name))
        return 0;
    coll_ctx_free(w->cc);
    topo_free(w->topo);
    w->cc = NULL;
    w->topo = NULL;
    w->topo_name[0] = '\0';
    TRY(topo_load(name, &w->topo, e));
    if (!(w->cc = coll_ctx_new(w->topo)))
        return err_set(e, ERR_SYSTEM, "%s: cannot create the collective model", name);
    snprintf(w->topo_name, sizeof w->topo_name, "%s", name);
    return 0;
}

static int run_trace(sweep_whatif *w, const char *path, int n, const char *const *key,
                     const char *const *value, double *m, err *e);

/* A point's baseline tok/s: its input with the grid's set lines only (the
 * first nfixed knobs); scenarios in plain decode, as whatif's speedup.
 * Cached per input: every point of a grid shares the set lines. */
static int run_scenario(sweep_whatif *w, const char *path, int n, const char *const *key,
                        const char *const *value, double *m, err *e);
static int baseline(sweep_whatif *w, sweep_kind kind, const char *path, int nfixed,
                    const char *const *key, const char *const *value, err *e)
{
    if (w->base_path[0] && w->base_kind == kind && !strcmp(w->base_path, path))
        return 0;
    double m[M_N];
    const char *k2[SWEEP_MAX_KEYS + 64], *v2[SWEEP_MAX_KEYS + 64];
    int n = 0;
    for (int i = 0; i < nfixed && n < SWEEP_MAX_KEYS + 63; i++, n++)
        k2[n] = key[i], v2[n] = value[i];
    if (kind == SWEEP_SCENARIO)
        k2[n] = "mode", v2[n++] = "decode";
    TRY(kind == SWEEP_TRACE ? run_trace(w, path, n, k2, v2, m, e)
                            : run_scenario(w, path, n, k2, v2, m, e));
    snprintf(w->base_path, sizeof w->base_path, "%s", path);
    w->base_kind = kind;
    w->base_tok = m[M_TOK];
    w->base_cycle_us = m[M_CYCLE];
    return 0;
}

static int run_trace(sweep_whatif *w, const char *path, int n, const char *const *key,
                     const char *const *value, double *m, err *e)
{
    trace_knobs k = {SWEEP_WHATIF_TOPO, {0}};
    replay_opts_init(&k.opts);
    for (int i = 0; i < n; i++)
        if (trace_set(&k, key[i], value[i], e) != 0)
            return err_wrap(e, "%s=%s", key[i], value[i]);
    TRY(use_topo(w, k.topo, e));
    replay_result r;
    TRY(replay_file(path, w->topo, w->cc, &k.opts, NULL, &r, e));
    m[M_TOK] = r.tokens_stated ? r.tok_per_s : NAN;
    m[M_CYCLE] = r.cycle_us;
    m[M_TPC] = r.cycles > 0 && r.tokens_stated ? r.tokens / (double)r.cycles : NAN;
    m[M_COMPUTE] = r.compute_us;
    m[M_COMM] = r.comm_us;
    m[M_LAUNCH] = r.launch_us;
    m[M_HOST] = r.host_us + r.idle_us;   /* host work, syncs, captured gaps */
    m[M_WAIT] = r.wait_us;
    m[M_UNEXPL] = 0;  /* a trace's ops are taken as given: nothing is fitted */
    m[M_AR] = NAN;    /* a trace's allreduces differ; see its timeline */
    return 0;
}

/* --- scenarios -------------------------------------------------------------------- */

static int load_scenario(sweep_whatif *w, const char *path, err *e)
{
    if (w->scen_path[0] && !strcmp(w->scen_path, path))
        return 0;
    w->scen_path[0] = '\0';
    if (!w->wc && !(w->wc = whatif_ctx_new()))
        return err_set(e, ERR_SYSTEM, "out of memory");
    TRY(whatif_scenario_load(path, &w->scen, e));
    /* fitted once per scenario, before a point's knobs (docs/scenario.md) */
    TRY(whatif_calibrate(w->wc, &w->scen, NULL, e));
    snprintf(w->scen_path, sizeof w->scen_path, "%s", path);
    return 0;
}

static int run_scenario(sweep_whatif *w, const char *path, int n, const char *const *key,
                        const char *const *value, double *m, err *e)
{
    if (!w->wc && !(w->wc = whatif_ctx_new()))
        return err_set(e, ERR_SYSTEM, "out of memory");
    TRY(load_scenario(w, path, e));
    whatif_scenario s = w->scen;
    for (int i = 0; i < n; i++)
        if (whatif_set(&s, key[i], value[i], e) != 0)
            return err_wrap(e, "%s=%s", key[i], value[i]);
    whatif_result r;
    TRY(whatif_run_ctx(w->wc, &s, &r, e));
    m[M_TOK] = r.tok_per_s;
    m[M_CYCLE] = r.cycle_us;
    m[M_TPC] = r.tokens_per_cycle;
    m[M_COMPUTE] = r.parts.compute_us;
    m[M_COMM] = r.parts.comm_us;
    m[M_LAUNCH] = r.parts.launch_us;
    m[M_HOST] = r.parts.host_us + r.parts.idle_us;
    m[M_WAIT] = r.parts.wait_us;
    /* The host side is mechanisms now (host_us, host_jitter, syncs), each
     * in its part: nothing of a point is unexplained; what the model leaves
     * of an observation is whatif's unexplained.N (docs/scenario.md). */
    m[M_UNEXPL] = 0;
    m[M_AR] = r.allreduce_us;
    return 0;
}

static int runner_run(void *ctx, sweep_kind kind, const char *path, int nfixed, int n,
                      const char *const *key, const char *const *value, double *m, err *e)
{
    sweep_whatif *w = ctx;
    TRY(kind == SWEEP_TRACE ? run_trace(w, path, n, key, value, m, e)
                            : run_scenario(w, path, n, key, value, m, e));
    TRY(baseline(w, kind, path, nfixed, key, value, e));
    /* against the baseline's tok/s; a trace that states no tokens: its
     * steps/s against the baseline's (cycle time over cycle time) */
    if (!isnan(m[M_TOK]))
        m[M_SPEEDUP] = w->base_tok > 0 ? m[M_TOK] / w->base_tok : NAN;
    else
        m[M_SPEEDUP] = m[M_CYCLE] > 0 ? w->base_cycle_us / m[M_CYCLE] : NAN;
    return 0;
}

/* Inputs must open; a knob must be one the input kind knows, with a value it
 * takes (scenario knobs are tried on the first built-in scenario). */
static int runner_check(void *ctx, sweep_kind kind, const char *path, const char *key,
                        const char *value, err *e)
{
    sweep_whatif *w = ctx;
    if (!key && kind == SWEEP_SCENARIO)
        return load_scenario(w, path, e);
    if (!key) {
        trace_reader *r = NULL;
        int rc = trace_open(path, &r, e);
        trace_close(r);
        return rc;
    }
    if (kind == SWEEP_TRACE) {
        trace_knobs k = {SWEEP_WHATIF_TOPO, {0}};
        replay_opts_init(&k.opts);
        TRY(trace_set(&k, key, value, e));
    } else {
        whatif_scenario s;
        TRY(whatif_scenario_load(whatif_builtin_name(0), &s, e));
        TRY(whatif_set(&s, key, value, e));
    }
    /* Files named by a knob must load now, not fail every run later. */
    if (!strcmp(key, "topo") || !strcmp(key, "calib_topo")) {
        topo *t = NULL;
        int rc = topo_load(value, &t, e);
        topo_free(t);
        return rc;
    }
    if (!strcmp(key, "calib")) {
        calib *c = NULL;
        int rc = calib_load(value, &c, e);
        calib_free(c);
        return rc;
    }
    return 0;
}

void sweep_whatif_runner(sweep_whatif *w, sweep_runner *out)
{
    *out = (sweep_runner){metrics, M_N, runner_run, runner_check, w};
}
