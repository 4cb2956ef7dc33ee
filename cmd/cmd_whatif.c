/* `collsim whatif`: fit the scenario's free parameters to its observed
 * points, then run it for every combination of the varied knobs (the first
 * --vary changes slowest) and print one row per variant: csv header
 * `variant,<varied keys>,tok_per_s,cycle_us,speedup`, speedup against the
 * scenario's own plain decode. The assumptions and the fit come first (as
 * report metadata); --breakdown adds the cycle's parts; --solve KEY[=TOK/S]
 * prints a break-even or the value that gives an observed tok/s; --plot
 * draws each variant's cycle in its parts, the unexplained share on top. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "sim/json.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "traces/whatif.h"
#include "validate/plot.h"

enum { MAX_VARY = 8, MAX_VALS = 32, MAX_SETS = 64 };

static const char synopsis[] = "collsim whatif [options]";
static const char desc[] =
    "Fits the scenario (docs/scenario.md) to its observed points, then runs it for every\n"
    "combination of the varied knobs, the first --vary changing slowest: one row per\n"
    "variant, speedup against the scenario's plain decode.";

typedef struct vary {
    char key[64];
    char buf[1024];
    const char *vals[MAX_VALS];
    int n;
} vary;

static int split_kv(const char *arg, char *key, size_t kn, const char **val, char *buf,
                    size_t bn, err *e)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= kn || strlen(eq + 1) >= bn)
        return err_set(e, ERR_USAGE, "'%s': want KEY=VALUE", arg);
    memcpy(key, arg, (size_t)(eq - arg));
    key[eq - arg] = 0;
    snprintf(buf, bn, "%s", eq + 1);
    *val = buf;
    return 0;
}

/* What the options set. --set, --calib, --observe and --fit are applied in
 * command-line order once the scenario is loaded (as KEY=VALUE settings);
 * --vary values are split when given. */
typedef struct whatif_args {
    cmd_ctx cc;  /* first: --timeline --format (--calib is a setting here) */
    const char *scen, *solve, *plot;
    const char *sets[MAX_SETS];
    char own[MAX_SETS][WHATIF_STR + 16];  /* settings made from options */
    int nsets, nvary, breakdown, keys, list, show, observed;
    vary vs[MAX_VARY];
} whatif_args;

static int add_set(whatif_args *g, const char *prefix, const char *a, err *e)
{
    if (g->nsets == MAX_SETS)
        return err_set(e, ERR_USAGE, "too many settings");
    if (!prefix) {
        g->sets[g->nsets++] = a;
        return 0;
    }
    char *kv = g->own[g->nsets];
    if ((size_t)snprintf(kv, sizeof g->own[0], "%s%s", prefix, a) >= sizeof g->own[0])
        return err_set(e, ERR_USAGE, "'%s': too long", a);
    g->sets[g->nsets++] = kv;
    return 0;
}

#define ARGS ((whatif_args *)ctx)
static int set_scenario(void *ctx, const char *a, err *e) { (void)e; ARGS->scen = a; return 0; }
static int set_solve(void *ctx, const char *a, err *e) { (void)e; ARGS->solve = a; return 0; }
static int set_plot(void *ctx, const char *a, err *e) { (void)e; ARGS->plot = a; return 0; }
static int set_breakdown(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->breakdown = 1; return 0; }
static int set_keys(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->keys = 1; return 0; }
static int set_list(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->list = 1; return 0; }
static int set_show(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->show = 1; return 0; }
static int set_set(void *ctx, const char *a, err *e) { return add_set(ARGS, NULL, a, e); }
static int set_calib(void *ctx, const char *a, err *e) { return add_set(ARGS, "calib=", a, e); }
static int set_fit(void *ctx, const char *a, err *e) { return add_set(ARGS, "fit=", a, e); }

/* The first --observe replaces the scenario's observations. */
static int set_observe(void *ctx, const char *a, err *e)
{
    if (!ARGS->observed++)
        TRY(add_set(ARGS, "observe=", "none", e));
    return add_set(ARGS, "observe=", a, e);
}

static int set_vary(void *ctx, const char *a, err *e)
{
    if (ARGS->nvary == MAX_VARY)
        return err_set(e, ERR_USAGE, "at most %d --vary", MAX_VARY);
    vary *v = &ARGS->vs[ARGS->nvary++];
    const char *val;
    TRY(split_kv(a, v->key, sizeof v->key, &val, v->buf, sizeof v->buf, e));
    TRY(cli_check_list("--vary", v->buf, sizeof v->buf, e));
    for (char *tok = strtok(v->buf, ","); tok; tok = strtok(NULL, ",")) {
        if (v->n == MAX_VALS)
            return err_set(e, ERR_USAGE, "--vary %s: at most %d values", v->key, MAX_VALS);
        for (int i = 0; i < v->n; i++)
            if (!strcmp(v->vals[i], tok))
                return err_set(e, ERR_USAGE, "--vary %s: '%s' given twice", v->key, tok);
        v->vals[v->n++] = tok;
    }
    return v->n ? 0 : err_set(e, ERR_USAGE, "--vary %s: no values", v->key);
}
#undef ARGS

static const cli_opt options[] = {
    {"scenario", 0, "NAME|FILE", "a built-in scenario (--list) or a scenario file; default kimi-k2-eagle3-8x-pcie5", set_scenario},
    {"calib", 0, "FILE", "apply a calibration profile (same as --set calib=FILE)", set_calib},
    {"set", 0, "KEY=VALUE", "set a knob (--keys; repeatable)", set_set},
    {"vary", 0, "KEY=V1,V2,...", "one variant per value (repeatable: every combination)", set_vary},
    {"observe", 0, "SPEC", "an observed point KEY=V,...,tok_per_s=X[,sd=R] (repeatable; replaces the scenario's; none: no fit)", set_observe},
    {"fit", 0, "P1,P2,...", "parameters fitted to the observations (default: the scenario's; none: no fit)", set_fit},
    {"solve", 0, "KEY[=TOK_PER_S]", "accept_len or verify_allreduce_us: EAGLE-3 break-even per variant, or the value giving TOK_PER_S", set_solve},
    {"breakdown", 0, NULL, "add the cycle's parts, the allreduce time, algorithm and protocol", set_breakdown},
    {"timeline", 0, "OUT.json", "Perfetto timeline: one cycle per variant", cmd_set_timeline},
    {"plot", 0, "OUT.svg", "draw each variant's cycle in its parts (an observed one's unexplained share on top) and tok/s, model and observed", set_plot},
    {"show-scenario", 0, NULL, "print the effective scenario file (after --set and the fit) and exit", set_show},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {"keys", 0, NULL, "list the knobs", set_keys},
    {"list", 0, NULL, "list the built-in scenarios", set_list},
    {NULL, 0, NULL, NULL, NULL},
};

/* NCCL settings in effect, as NCCL_X=Y words. */
static void env_words(const whatif_scenario *s, char *buf, size_t n)
{
    static const char *const keys[] = {"nccl_proto", "nccl_algo", "nccl_p2p_level",
                                       "nccl_p2p_disable", "nccl_shm_disable",
                                       "nccl_min_nchannels", "nccl_max_nchannels",
                                       "nccl_buffsize", "nccl_nthreads"};
    static const char *const dflt[] = {"auto", "auto", "default", "0", "0", "0", "0", "0", "0"};
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && at < n; i++) {
        char v[64];
        whatif_get(s, keys[i], v, sizeof v, NULL);
        if (strcmp(v, dflt[i]) != 0) {
            char up[32];
            size_t k = 0;
            for (; keys[i][k] && k < sizeof up - 1; k++)
                up[k] = (char)(keys[i][k] >= 'a' && keys[i][k] <= 'z' ? keys[i][k] - 32 : keys[i][k]);
            up[k] = 0;
            at += (size_t)snprintf(buf + at, n - at, "%s%s=%s", at ? " " : "", up, v);
        }
    }
    if (!buf[0])
        snprintf(buf, n, "(NCCL defaults)");
}

static const char *mode_word(int g) { return g ? "graph" : "eager"; }

/* Where a value of the header comes from, as docs/scenario.md's tables say:
 * fitted (to the observations), varied (per variant: the table's column),
 * config (the scenario: --set, a scenario file's line, or the built-in's
 * configuration from SCENARIO.md and the model's config.json), assumed (an
 * assumption of docs/scenario.md), topology (the preset's). The knobs whose
 * defaults are assumptions: */
static const char *const assumed_keys[] = {
    "accept_len", "host_us", "host_jitter", "sync_us", "efficiency",
    "draft_efficiency", "kernels_per_layer", "draft_kernels", "context_len", "routing_skew",
};
/* ... and those whose defaults are measured (a microbenchmark's or a public figure,
 * docs/scenario.md says which): */
static const char *const measured_keys[] = {"eager_op_us", "eager_coll_us", "host_cycle_us"};

static int varied_index(const whatif_args *g, const char *key)
{
    for (int v = 0; v < g->nvary; v++)
        if (!strcmp(g->vs[v].key, key))
            return v;
    return -1;
}

static int set_on_cli(const whatif_args *g, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < g->nsets; i++)
        if (!strncmp(g->sets[i], key, n) && g->sets[i][n] == '=')
            return 1;
    return 0;
}

/* The source of key's value in s, the base's (its own, whether varied or not), into buf. */
static const char *source_of(const whatif_args *g, const whatif_scenario *s,
                             const whatif_calib *cal, const char *key, char *buf, size_t n)
{
    int assumed = 0, measured = 0;
    for (size_t i = 0; i < sizeof assumed_keys / sizeof assumed_keys[0]; i++)
        assumed |= !strcmp(assumed_keys[i], key);
    for (size_t i = 0; i < sizeof measured_keys / sizeof measured_keys[0]; i++)
        measured |= !strcmp(measured_keys[i], key);
    const char *dflt = measured ? "measured" : "assumed";
    assumed |= measured;
    for (int j = 0; j < cal->n; j++)
        if (!strcmp(cal->p[j].name, key)) {
            if (cal->p[j].at_bound)
                snprintf(buf, n, "fitted, held at its bound");
            else if (cal->p[j].refused)
                snprintf(buf, n, "%s; the fit refused it", set_on_cli(g, key) ? "config: --set"
                         : assumed && !whatif_given(s, key) ? dflt : "config");
            else
                snprintf(buf, n, "fitted");
            return buf;
        }
    if (set_on_cli(g, key))
        snprintf(buf, n, "config: --set");
    else if (whatif_given(s, key) || !assumed)
        snprintf(buf, n, "config");
    else
        snprintf(buf, n, "%s", dflt);
    return buf;
}

/* A value with its source, "VALUE (SOURCE)", into buf; a varied key lists
 * its values, the base's value and source after them. */
static const char *with_source(const whatif_args *g, const whatif_scenario *s,
                               const whatif_calib *cal, const char *key, const char *value,
                               char *buf, size_t n)
{
    char src[64];
    int v = varied_index(g, key);
    source_of(g, s, cal, key, src, sizeof src);
    if (v < 0) {
        snprintf(buf, n, "%s (%s)", value, src);
        return buf;
    }
    size_t at = (size_t)snprintf(buf, n, "varied: ");
    for (int j = 0; j < g->vs[v].n && at < n; j++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", j ? ", " : "", g->vs[v].vals[j]);
    if (at < n)
        snprintf(buf + at, n - at, " (the base: %s, %s)", value, src);
    return buf;
}

static void meta_src(report *r, const whatif_args *g, const whatif_scenario *s,
                     const whatif_calib *cal, const char *name, const char *key,
                     const char *value)
{
    char buf[1400];
    report_meta(r, name, "%s", with_source(g, s, cal, key, value, buf, sizeof buf));
}

/* The source of a line made of several knobs: varied if one is (named), else
 * --set if one is, else config. */
static void group_src(const whatif_args *g, const char *const *keys, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; keys[i]; i++)
        if (varied_index(g, keys[i]) >= 0 && at < n)
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "varied: ", keys[i]);
    for (int v = 0; v < g->nvary && !strncmp(keys[0], "nccl_", 5); v++)
        if (!strncmp(g->vs[v].key, "NCCL_", 5) && at < n)
            at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "varied: ", g->vs[v].key);
    if (at)
        return;
    int set = 0;
    for (int i = 0; keys[i]; i++)
        set |= set_on_cli(g, keys[i]);
    for (int i = 0; i < g->nsets && !strncmp(keys[0], "nccl_", 5); i++)
        set |= !strncmp(g->sets[i], "NCCL_", 5);
    snprintf(buf, n, "%s", set ? "config: --set" : "config");
}

/* The hypotheses of each observation the model leaves unexplained. */
typedef struct obs_hyps {
    int n[WHATIF_OBS_MAX];
    whatif_hyp h[WHATIF_OBS_MAX][WHATIF_HYP_MAX];
} obs_hyps;

/* An observation the model misses by more than 3 sd. */
static int missed(const whatif_scenario *s, const whatif_calib *cal, int i)
{
    return fabs(cal->resid[i]) > 3 * s->obs[i].rel_sd;
}

static const char *ar_phase(const whatif_obs *o) { return o->ar_verify ? "verify" : "decode"; }

/* One hypothesis of observation i as a line: what it needs, whether that is
 * within its bound, what it predicts for the profile. */
static void hyp_line(report *r, const whatif_scenario *s, int i, const whatif_hyp *y)
{
    const whatif_obs *ob = &s->obs[i];
    char key[96], need[256], prof[320] = "", cpu[320] = "";
    snprintf(key, sizeof key, "hypothesis.%d.%s", i + 1, y->name);
    if (y->reached)
        snprintf(need, sizeof need, "needs %s %.4g (bound %g..%g) for the observed %g tok/s",
                 y->knob, y->value, y->lo, y->hi, ob->tok_per_s);
    else if (y->rising ? y->value >= y->hi : y->value <= y->lo)
        snprintf(need, sizeof need, "the model is slower than observed already at %s %g "
                 "(%.2f tok/s)", y->knob, y->value, y->tok_per_s);
    else
        snprintf(need, sizeof need, "not reached within its bound: %.2f tok/s at %s %g "
                 "(bound %g..%g)", y->tok_per_s, y->knob, y->value, y->lo, y->hi);
    if (y->cpu_per_kernel_us > 0)
        snprintf(cpu, sizeof cpu, ", %.1f us of CPU per kernel with its launch call: %.2fx the "
                 "scenario's %.1f (launch %g + %s %g), at which it gives %.2f tok/s and %s "
                 "allreduce kernels of %.1f us", y->cpu_per_kernel_us,
                 y->cpu_per_kernel_us / (y->launch_us + y->base_value),
                 y->launch_us + y->base_value, y->launch_us, y->knob, y->base_value,
                 y->base_tok_per_s, ar_phase(ob), y->base_ar_us);
    if (y->ar_checked)
        snprintf(prof, sizeof prof, "; predicts %s allreduce kernels of %.1f us (longest %.0f) "
                 "against the profile's %g (sd %g%%): %s", ar_phase(ob), y->ar_us, y->ar_max_us,
                 ob->ar_us, 100 * ob->ar_rel_sd, y->ar_consistent ? "consistent" : "inconsistent");
    else
        snprintf(prof, sizeof prof, "; predicts %s allreduce kernels of %.1f us (longest %.0f)",
                 ar_phase(ob), y->ar_us, y->ar_max_us);
    report_meta(r, key, "%s%s%s: %s%s%s", y->what, y->set[0] ? ", " : "", y->set, need, cpu,
                prof);
}

/* Which hypotheses of observation i explain both its tok/s and its profile. */
static void hyp_summary(report *r, const whatif_scenario *s, int i, const whatif_hyp *h, int n)
{
    char key[48], buf[512] = "";
    size_t at = 0;
    int ar = s->obs[i].ar_us > 0;
    for (int k = 0; k < n && at < sizeof buf; k++)
        if (h[k].reached && (!ar || h[k].ar_consistent))
            at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", at ? ", " : "", h[k].name);
    snprintf(key, sizeof key, "hypotheses.%d", i + 1);
    report_meta(r, key, "consistent with the observed tok/s within their bounds%s: %s "
                "(a hypothesis says what the model would need, not that it is so; none is "
                "fitted)", ar ? " and with the profile's allreduce kernels" : "",
                buf[0] ? buf : "none");
}

/* Why the phases run as they do: the batch against SGLang's captured sizes. */
static void graph_reason(const whatif_scenario *s, char *out, size_t n)
{
    if (s->cuda_graph_max_bs > 0 && s->batch > s->cuda_graph_max_bs)
        snprintf(out, n, "batch %d above cuda_graph_max_bs %d: no graph captured, every phase "
                 "eager", s->batch, s->cuda_graph_max_bs);
    else if (s->cuda_graph_max_bs > 0)
        snprintf(out, n, "batch %d within cuda_graph_max_bs %d", s->batch, s->cuda_graph_max_bs);
    else
        snprintf(out, n, "cuda_graph_max_bs: no limit");
}

static void print_assumptions(report *r, const whatif_args *g, const whatif_scenario *s,
                              const whatif_calib *cal, const whatif_result *basel, double gpu_GBps,
                              const obs_hyps *hy)
{
    char buf[1024], src[256];
    report_meta(r, "scenario", "%s", s->name);
    report_meta(r, "sources", "config = the scenario (--set, its file's lines, or the "
                "built-in's SCENARIO.md and config.json); assumed = an assumption of "
                "docs/scenario.md; measured = a measurement's figure, a microbenchmark's "
                "or a public one (docs/scenario.md); "
                "fitted = to the observations; topology = the preset's; "
                "varied = per variant (the table's column)");
    snprintf(buf, sizeof buf, "%s%s%s", s->topo, s->calib[0] ? " with " : "", s->calib);
    meta_src(r, g, s, cal, "topo", varied_index(g, "calib") >= 0 ? "calib" : "topo", buf);
    meta_src(r, g, s, cal, "mode", "mode", s->mode == WHATIF_EAGLE3 ? "eagle3" : "decode");
    snprintf(buf, sizeof buf, "%g%s", s->accept_len, s->accept_nhist ? ", from accept_hist" : "");
    meta_src(r, g, s, cal, "accept_len", s->accept_nhist ? "accept_hist" : "accept_len", buf);
    static const char *const draft_keys[] = {"draft_steps", "draft_topk", "draft_tokens", NULL};
    group_src(g, draft_keys, src, sizeof src);
    report_meta(r, "draft", "steps %d, topk %d, %d draft tokens: %d draft forward%s + 1 draft "
                "extend per cycle, verify of %d tokens x %d requests (%s)", s->draft_steps,
                s->draft_topk, s->draft_tokens, s->draft_steps - 1, s->draft_steps == 2 ? "" : "s",
                s->draft_tokens, s->batch, src);
    static const char *const batch_keys[] = {"batch", "tp", NULL};
    group_src(g, batch_keys, src, sizeof src);
    report_meta(r, "batch", "%d (tp %d) (%s)", s->batch, s->tp, src);
    whatif_get(s, "allreduce", buf, sizeof buf, NULL);
    meta_src(r, g, s, cal, "allreduce", "allreduce", buf);
    static const char *const env_keys[] = {"nccl_proto", "nccl_algo", "nccl_p2p_level",
                                           "nccl_p2p_disable", "nccl_shm_disable",
                                           "nccl_min_nchannels", "nccl_max_nchannels",
                                           "nccl_buffsize", "nccl_nthreads", NULL};
    env_words(s, buf, sizeof buf);
    group_src(g, env_keys, src, sizeof src);
    report_meta(r, "nccl_env", "%s (%s)", buf, src);
    static const char *const launch_keys[] = {"graph", "decode_graph", "draft_graph",
                                              "verify_graph", "extend_graph",
                                              "cuda_graph_max_bs", "batch", NULL};
    group_src(g, launch_keys, src, sizeof src);
    char why[128];
    graph_reason(s, why, sizeof why);
    report_meta(r, "launch", "decode %s; draft %s, verify %s, draft extend %s; %s (%s)",
                mode_word(whatif_phase_graph(s, PHASE_DECODE)),
                mode_word(whatif_phase_graph(s, PHASE_DRAFT)),
                mode_word(whatif_phase_graph(s, PHASE_VERIFY)),
                mode_word(whatif_phase_graph(s, PHASE_PREFILL)), why, src);
    meta_src(r, g, s, cal, "overlap", "overlap", s->overlap < 0 ? "as SGLang: on for decode, "
             "off for EAGLE-3" : s->overlap ? "on" : "off");
    static const char *const sync_keys[] = {"decode_syncs", "draft_syncs", "verify_syncs",
                                            "extend_syncs", NULL};
    group_src(g, sync_keys, src, sizeof src);
    report_meta(r, "syncs", "decode %d; EAGLE-3 cycle %d (draft %d, verify %d, after extend %d) "
                "(%s)", s->decode_syncs, s->draft_syncs + s->verify_syncs + s->extend_syncs,
                s->draft_syncs, s->verify_syncs, s->extend_syncs, src);
    char v2[32], v3[32], v4[32], v5[32], s1[1400], s2[1400], s3[1400], s4[1400], s5[1400];
    char v1w[96];
    if (s->host_cycle_us >= 0)   /* spread from the per-cycle figure (whatif.h) */
        snprintf(v1w, sizeof v1w, "%.1f, from host_cycle_us %g per EAGLE-3 cycle", s->host_us,
                 s->host_cycle_us);
    else
        snprintf(v1w, sizeof v1w, "%.1f", s->host_us);
    snprintf(v2, sizeof v2, "%.3f", s->host_jitter);
    snprintf(v3, sizeof v3, "%g", s->sync_us);
    snprintf(v4, sizeof v4, "%g", s->eager_op_us);
    snprintf(v5, sizeof v5, "%g", s->eager_coll_us);
    report_meta(r, "host", "host_us per segment %s, host_jitter per-rank skew %s, sync_us %s, "
                "eager_op_us %s, eager_coll_us %s", with_source(g, s, cal, s->host_cycle_us >= 0 &&
                                              !set_on_cli(g, "host_us") ? "host_cycle_us" :
                                              "host_us", v1w, s1, sizeof s1),
                with_source(g, s, cal, "host_jitter", v2, s2, sizeof s2),
                with_source(g, s, cal, "sync_us", v3, s3, sizeof s3),
                with_source(g, s, cal, "eager_op_us", v4, s4, sizeof s4),
                with_source(g, s, cal, "eager_coll_us", v5, s5, sizeof s5));
    snprintf(buf, sizeof buf, "%g", gpu_GBps);
    if (s->gpu_mem_GBps > 0 || varied_index(g, "gpu_mem_GBps") >= 0)
        meta_src(r, g, s, cal, "gpu_mem_GBps", "gpu_mem_GBps", buf);
    else
        report_meta(r, "gpu_mem_GBps", "%s (topology)", buf);
    snprintf(buf, sizeof buf, "%.4f", s->efficiency);
    meta_src(r, g, s, cal, "efficiency", "efficiency", buf);
    if (s->nobs == 0) {
        report_meta(r, "calibration", "none (parameters as set)");
    } else {
        if (!s->fit[0] || cal->n == 0)
            report_meta(r, "calibration", "%d observations, no fit (parameters as set)", s->nobs);
        else
            report_meta(r, "calibration", "%d observations, fitting %s", s->nobs, s->fit);
        for (int i = 0; i < s->nobs; i++) {
            char key[32];
            snprintf(key, sizeof key, "observed.%d", i + 1);
            double dev = 100 * (exp(cal->resid[i]) - 1);
            report_meta(r, key, "%s: %g tok/s (sd %g%%), model %+.2f%%",
                        s->obs[i].set[0] ? s->obs[i].set : "(scenario)", s->obs[i].tok_per_s,
                        100 * s->obs[i].rel_sd, fabs(dev) < 0.005 ? 0.0 : dev);
            snprintf(key, sizeof key, "unexplained.%d", i + 1);
            double oc = cal->obs_cycle_us[i], un = cal->unexplained_us[i];
            if (fabs(un) < 0.5)
                un = 0;   /* no "-0" */
            report_meta(r, key, "%.0f us of the %.0f us observed cycle (%.1f%%): the model's "
                        "cycle is %.0f us", un, oc, oc > 0 ? 100 * un / oc : 0,
                        cal->model_cycle_us[i]);
            if (missed(s, cal, i)) {
                snprintf(key, sizeof key, "warning.%d", i + 1);
                if (s->obs[i].check)
                    report_meta(r, key, "the model misses observation %d (a check, not fitted) "
                                "by %+.1f%% (more than 3 sd): the hypotheses below say what "
                                "could explain it", i + 1, 100 * (exp(cal->resid[i]) - 1));
                else
                    report_meta(r, key, "the fit misses observation %d by %+.1f%% (more than 3 "
                                "sd): the model lacks what explains it", i + 1,
                                100 * (exp(cal->resid[i]) - 1));
            }
            const whatif_obs *ob = &s->obs[i];
            if (ob->ar_us > 0) {
                snprintf(key, sizeof key, "profile.%d", i + 1);
                double dv = cal->model_ar_us[i];
                int ok = dv > 0 && fabs(log(dv / ob->ar_us)) <= 2 * ob->ar_rel_sd;
                report_meta(r, key, "%s allreduce kernel (transfer and the wait for the slowest "
                            "rank) observed %g us (sd %g%%), model %.1f us (longest %.0f): %s "
                            "(a check, not fitted)", ar_phase(ob), ob->ar_us, 100 * ob->ar_rel_sd,
                            dv, cal->model_ar_max_us[i], ok ? "consistent" : "inconsistent");
            }
        }
        for (int j = 0; j < cal->n; j++) {
            const whatif_fitted *p = &cal->p[j];
            char key[80];
            snprintf(key, sizeof key, "fit.%s", p->name);
            if (p->at_bound)
                report_meta(r, key, "%g, %s", p->value, p->why);
            else if (p->refused)
                report_meta(r, key, "refused (%s); kept at %g", p->why, p->value);
            else
                report_meta(r, key, "%.6g +- %.2g", p->value, p->sd);
        }
        for (int i = 0; i < s->nobs; i++) {
            for (int k = 0; k < hy->n[i]; k++)
                hyp_line(r, s, i, &hy->h[i][k]);
            if (hy->n[i])
                hyp_summary(r, s, i, hy->h[i], hy->n[i]);
        }
    }
    report_meta(r, "baseline", "plain decode of the scenario: %.2f tok/s", basel->tok_per_s);
}

/* The verdict on an EAGLE-3 variant: against decode, what explains its
 * cycle (the observed one when this variant was observed), what the other
 * launch mode of the verify would give, and the break-even accept length. */
/* The observation variant s is (into *obs), or -1. */
static int observed_as(const whatif_scenario *base, const whatif_scenario *s, int *obs, err *e)
{
    *obs = -1;
    for (int i = 0; i < base->nobs && *obs < 0; i++) {
        whatif_scenario o;
        TRY(whatif_obs_scenario(base, i, &o, e));
        if (whatif_same(&o, s))
            *obs = i;
    }
    return 0;
}

static int verdict(whatif_ctx *c, const whatif_scenario *base, const whatif_calib *cal,
                   const whatif_scenario *s, const whatif_result *res, double basel,
                   char *out, size_t n, err *e)
{
    double tps = res->tok_per_s, cycle = res->cycle_us, unexpl = 0;
    int i;
    TRY(observed_as(base, s, &i, e));
    if (i >= 0) {
        tps = base->obs[i].tok_per_s;
        cycle = cal->obs_cycle_us[i] > 0 ? cal->obs_cycle_us[i] : cycle;
        unexpl = cycle - res->cycle_us;
    }
    const whatif_parts *p = &res->parts;
    whatif_scenario alt = *s;
    int vg = whatif_phase_graph(s, PHASE_VERIFY);
    alt.verify_graph = !vg;
    whatif_result ra;
    TRY(whatif_run_ctx(c, &alt, &ra, e));
    whatif_solved be;
    TRY(whatif_solve(c, s, base, "accept_len", 0, &be, e));
    size_t at = (size_t)snprintf(out, n, "EAGLE-3 x%.2f against decode; GPU and fabric explain "
                                 "%.1f ms of the %.1f ms cycle, host work %.1f ms, launch "
                                 "waiting %.1f ms", basel > 0 ? tps / basel : 0,
                                 (p->compute_us + p->comm_us) / 1e3, cycle / 1e3,
                                 p->host_us / 1e3, (p->launch_us + p->wait_us) / 1e3);
    if (p->idle_us > 0.5 && at < n)
        at += (size_t)snprintf(out + at, n - at, ", idle %.1f ms", p->idle_us / 1e3);
    if (fabs(unexpl) >= 50 && at < n)
        at += (size_t)snprintf(out + at, n - at, ", unexplained %.1f ms (%.0f%%)", unexpl / 1e3,
                               100 * unexpl / cycle);
    char why[128];
    if (vg || (s->cuda_graph_max_bs > 0 && s->batch > s->cuda_graph_max_bs))
        graph_reason(s, why, sizeof why);
    else
        snprintf(why, sizeof why, "verify_graph=0");
    if (at < n)
        at += (size_t)snprintf(out + at, n - at, "; the verify %s (%s)",
                               vg ? "in a CUDA graph" : "eager", why);
    if (at < n && !(s->cuda_graph_max_bs > 0 && s->batch > s->cuda_graph_max_bs))
        at += (size_t)snprintf(out + at, n - at, "; if the verify ran %s: %.1f tok/s",
                               vg ? "eagerly" : "in a CUDA graph", ra.tok_per_s);
    if (at < n)
        at += (size_t)snprintf(out + at, n - at, "; break-even accept length %s (draft tokens %d)",
                               be.text, s->draft_tokens);
    return 0;
}

/* A custom allreduce (the base's or a varied value) on more than 2 of the
 * base topology's GPUs without NVLink: vLLM/SGLang would not launch it. */
static int custom_ar_gated(const whatif_scenario *base, const vary *vs, int nvary)
{
    int custom = coll_algo_is_custom(base->allreduce);
    for (int v = 0; v < nvary; v++)
        for (int j = 0; j < vs[v].n && !strcmp(vs[v].key, "allreduce"); j++) {
            coll_algo a;
            custom |= !coll_algo_parse(vs[v].vals[j], &a) && coll_algo_is_custom(a);
        }
    topo *t = NULL;
    err ig = {0};
    if (!custom || topo_load(base->topo, &t, &ig))
        return 0;
    int gated = coll_custom_ar_gated(t, base->tp);
    topo_free(t);
    return gated;
}

/* The timeline written to o, opened here and left for the caller to commit
 * (removed on an error). */
static int write_timeline(whatif_ctx *c, const whatif_scenario *vars, const char *const *labels,
                          long nvar, const char *path, ofile *o, err *e)
{
    TRY(ofile_open(o, path, e));
    timeline doc;
    int rc = tl_open(&doc, o->f, e);
    for (long k = 0; k < nvar && !rc; k++)
        rc = whatif_timeline(c, &vars[k], &doc, (int)k + 1, labels[k], e);
    if (!rc)
        rc = tl_close(&doc, e);
    else if (doc.g)
        json_gen_free(doc.g);
    if (rc)
        ofile_abort(o);
    return rc;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* --plot: per variant its cycle stacked in the parts of --breakdown, and on
 * top, for a variant that is an observation, what the model leaves
 * unexplained of the observed cycle; beside it tok/s, the model's and the
 * observed. Categories are the varied values; the plot is written to o,
 * opened here and left for the caller to commit (removed on an error). */
static int write_plot(const whatif_scenario *base, const whatif_calib *cal,
                      const whatif_scenario *vars, const whatif_result *res, long nvar,
                      const vary *vs, int nvary, const int (*idxs)[MAX_VARY], const char *path,
                      ofile *o, err *e)
{
    char title[2048], keys[512] = "", fitw[WHATIF_STR + 64];
    size_t at = 0;
    for (int v = 0; v < nvary && at < sizeof keys; v++)
        at += (size_t)snprintf(keys + at, sizeof keys - at, "%s%s", v ? " x " : "", vs[v].key);
    if (base->nobs == 0)
        snprintf(fitw, sizeof fitw, "no observations");
    else if (!base->fit[0] || cal->n == 0)
        snprintf(fitw, sizeof fitw, "%d observations, no fit", base->nobs);
    else {
        int checks = 0;
        for (int i = 0; i < base->nobs; i++)
            checks += base->obs[i].check;
        if (checks)
            snprintf(fitw, sizeof fitw, "fit %s to %d of %d observations (%d checked only)",
                     base->fit, base->nobs - checks, base->nobs, checks);
        else
            snprintf(fitw, sizeof fitw, "fit %s to %d observations", base->fit, base->nobs);
    }
    snprintf(title, sizeof title, "collsim whatif %s on %s%s%s: %ld variant%s%s%s; %s", base->name,
             base_name(base->topo), base->calib[0] ? " with " : "", base_name(base->calib), nvar,
             nvar == 1 ? "" : "s",
             nvary ? " over " : "", keys, fitw);
    int idle = 0;
    for (long k = 0; k < nvar; k++)
        idle |= res[k].parts.idle_us >= 0.5;
    plot *p = plot_new(title, nvary ? keys : "scenario", "us");
    int pb = -1, pt = -1, rc = p ? 0 : err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc && ((pb = plot_panel_kind(p, "where a cycle goes (us; on top: unexplained of an "
                                      "observed cycle)", PLOT_STACK, NULL, NULL, e)) < 0 ||
                (pt = plot_panel_kind(p, "tokens per second (higher is better)", PLOT_CATS, NULL,
                                      "tok/s", e)) < 0))
        rc = ERR_SYSTEM;
    for (long k = 0; k < nvar && !rc; k++) {
        char cat[512] = "";
        at = 0;
        for (int v = 0; v < nvary && at < sizeof cat; v++) {
            char val[128];
            whatif_get(&vars[k], vs[v].key, val, sizeof val, NULL);
            at += (size_t)snprintf(cat + at, sizeof cat - at, "%s%s", v ? " " : "",
                                   !strncmp(vs[v].key, "NCCL_", 5) ? vs[v].vals[idxs[k][v]] : val);
        }
        if (!nvary)
            snprintf(cat, sizeof cat, "%s", vars[k].mode == WHATIF_EAGLE3 ? "eagle3" : "decode");
        int obs;
        rc = observed_as(base, &vars[k], &obs, e);
        double un = obs >= 0 ? cal->unexplained_us[obs] : 0;
        /* the share; a model slower than the observation says so (tok/s shows both) */
        if (!rc && obs >= 0 && cal->obs_cycle_us[obs] > 0 &&
            100 * fabs(un) / cal->obs_cycle_us[obs] >= 0.5 && strlen(cat) + 32 < sizeof cat)
            snprintf(cat + strlen(cat), sizeof cat - strlen(cat),
                     un > 0 ? " (%.0f%% unexplained)" : " (model %.0f%% slower)",
                     100 * fabs(un) / cal->obs_cycle_us[obs]);
        const whatif_parts *q = &res[k].parts;
        const double part[] = {q->compute_us, q->comm_us, q->launch_us, q->host_us, q->wait_us,
                               q->idle_us, un > 0 ? un : 0};
        static const char *const names[] = {"compute", "comm", "launch", "host", "wait", "idle",
                                            "unexplained"};
        for (int j = 0; j < 7 && !rc; j++)
            if (j != 5 || idle)
                rc = plot_value(p, pb, cat, names[j], part[j], e);
        if (!rc)
            rc = plot_value(p, pt, cat, "model", res[k].tok_per_s, e);
        if (!rc && obs >= 0)
            rc = plot_value(p, pt, cat, "observed", base->obs[obs].tok_per_s, e);
    }
    if (!rc && !(rc = ofile_open(o, path, e)) && (rc = plot_write_svg(p, o->f, e)) != 0)
        ofile_abort(o);
    plot_free(p);
    return rc;
}

int cmd_whatif(int argc, char **argv, err *e)
{
    whatif_args *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(e, ERR_SYSTEM, "out of memory");
    cmd_ctx_init(&g->cc);
    g->scen = "kimi-k2-eagle3-8x-pcie5";
    const char *pos[1];
    int npos;
    int rc = cli_parse("collsim whatif", synopsis, desc, options, g, argc, argv, pos, 0, &npos, e);
    if (!rc && g->keys)
        for (int k = 0; whatif_key_name(k); k++)
            printf("%-22s %s\n", whatif_key_name(k), whatif_key_desc(k));
    else if (!rc && g->list)
        for (int k = 0; whatif_builtin_name(k); k++)
            printf("%s\n", whatif_builtin_name(k));
    if (rc == CLI_HELP_SHOWN || (!rc && (g->keys || g->list))) {
        free(g);
        return 0;
    }
    int nvary = g->nvary, breakdown = g->breakdown;
    vary *vs = g->vs;
    whatif_scenario base;
    if (!rc)
        rc = whatif_scenario_load(g->scen, &base, e);
    for (int i = 0; i < g->nsets && !rc; i++) {
        char key[64], buf[512];
        const char *val;
        rc = split_kv(g->sets[i], key, sizeof key, &val, buf, sizeof buf, e);
        for (int v = 0; v < nvary && !rc; v++)   /* the --vary would win silently */
            if (!strcmp(vs[v].key, key))
                rc = err_set(e, ERR_USAGE, "%s is both --set and --vary: give one", key);
        if (!rc)
            rc = whatif_set(&base, key, val, e);
    }
    for (int v = 0; v < nvary && !rc; v++)
        for (int w = 0; w < v && !rc; w++)
            if (!strcmp(vs[v].key, vs[w].key))
                rc = err_set(e, ERR_USAGE, "--vary %s given twice", vs[v].key);
    /* check every varied value once up front: usage errors before any output */
    for (int v = 0; v < nvary && !rc; v++)
        for (int j = 0; j < vs[v].n && !rc; j++) {
            whatif_scenario tmp = base;
            rc = whatif_set(&tmp, vs[v].key, vs[v].vals[j], e);
        }
    /* --solve KEY[=TOK_PER_S] */
    char solve[64] = "";
    double solve_tok = 0;
    if (g->solve && !rc) {
        const char *eq = strchr(g->solve, '=');
        size_t kl = eq ? (size_t)(eq - g->solve) : strlen(g->solve);
        snprintf(solve, sizeof solve, "%.*s", (int)(kl < sizeof solve ? kl : sizeof solve - 1), g->solve);
        if (strcmp(solve, "accept_len") && strcmp(solve, "verify_allreduce_us"))
            rc = err_set(e, ERR_USAGE, "--solve: '%s' is not accept_len or verify_allreduce_us",
                         solve);
        else if (eq && (cli_parse_double("--solve", eq + 1, &solve_tok, e) || !(solve_tok > 0)))
            rc = err_set(e, ERR_USAGE, "--solve %s: '%s': tok/s must be a number > 0", solve,
                         eq + 1);
        else if (g->plot)
            rc = err_set(e, ERR_USAGE, "--plot draws the variants' cycles; --solve has none");
    }
    whatif_ctx *c = rc ? NULL : whatif_ctx_new();
    if (!rc && !c)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    whatif_calib cal;
    memset(&cal, 0, sizeof cal);
    if (!rc)
        rc = whatif_calibrate(c, &base, &cal, e);
    /* what could explain each observation the model misses (before any output) */
    obs_hyps *hy = rc ? NULL : calloc(1, sizeof *hy);
    if (!rc && !hy)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    for (int i = 0; !rc && !g->show && i < base.nobs; i++)
        if (missed(&base, &cal, i))
            rc = whatif_hypotheses(c, &base, i, hy->h[i], &hy->n[i], e);
    if (!rc && g->show) {
        rc = whatif_write(&base, stdout, e);
        whatif_ctx_free(c);
        free(hy);
        free(g);
        return rc;
    }
    /* the baseline: the scenario's own plain decode */
    whatif_result basel;
    double gpu_GBps = 0;
    if (!rc) {
        whatif_scenario dec = base;
        dec.mode = WHATIF_DECODE;
        rc = whatif_run_ctx(c, &dec, &basel, e);
        whatif_scenario tmp = base;
        if (!rc)
            rc = whatif_derive(c, &tmp, e);
        gpu_GBps = tmp.gpu_mem_GBps;
    }
    long nvar = 1;
    for (int v = 0; v < nvary; v++)
        nvar *= vs[v].n;
    report_col cols[MAX_VARY + 16];
    int nc = 0;
    cols[nc++] = (report_col){"variant", NULL, 7, -1};
    for (int v = 0; v < nvary; v++)
        cols[nc++] = (report_col){vs[v].key, NULL, (int)strlen(vs[v].key) + 2 > 10
                                                       ? (int)strlen(vs[v].key) + 2 : 10, -1};
    if (solve[0]) {
        cols[nc++] = (report_col){solve, NULL, 24, -1};
    } else {
        cols[nc++] = (report_col){"tok_per_s", NULL, 10, 2};
        cols[nc++] = (report_col){"cycle_us", NULL, 11, 1};
        cols[nc++] = (report_col){"speedup", NULL, 8, 3};
        if (breakdown) {
            cols[nc++] = (report_col){"compute_us", NULL, 11, 1};
            cols[nc++] = (report_col){"comm_us", NULL, 10, 1};
            cols[nc++] = (report_col){"launch_us", NULL, 10, 1};
            cols[nc++] = (report_col){"host_us", NULL, 10, 1};
            cols[nc++] = (report_col){"wait_us", NULL, 10, 1};
            cols[nc++] = (report_col){"draft_us", NULL, 9, 1};
            cols[nc++] = (report_col){"verify_us", NULL, 10, 1};
            cols[nc++] = (report_col){"allreduce_us", NULL, 13, 2};
            cols[nc++] = (report_col){"ar_kernel_us", NULL, 13, 2};
            cols[nc++] = (report_col){"draft_ar_kernel_us", NULL, 19, 2};
            cols[nc++] = (report_col){"algo", NULL, 13, -1};
            cols[nc++] = (report_col){"proto", NULL, 7, -1};
            cols[nc++] = (report_col){"alltoall_us", NULL, 12, 2};
        }
    }
    whatif_scenario *vars = rc ? NULL : calloc((size_t)nvar, sizeof *vars);
    char (*labels)[512] = rc ? NULL : calloc((size_t)nvar, sizeof *labels);
    whatif_result *res = rc ? NULL : calloc((size_t)nvar, sizeof *res);
    whatif_solved *sol = rc ? NULL : calloc((size_t)nvar, sizeof *sol);
    int (*idxs)[MAX_VARY] = rc ? NULL : calloc((size_t)nvar, sizeof *idxs);
    if (!rc && (!vars || !labels || !res || !sol || !idxs))
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    /* every variant first (errors before any output), then the report */
    for (long k = 0; k < nvar && !rc; k++) {
        whatif_scenario *s = &vars[k];
        *s = base;
        int *idx = idxs[k];
        long rem = k;
        for (int v = nvary - 1; v >= 0; v--) {
            idx[v] = (int)(rem % vs[v].n);
            rem /= vs[v].n;
        }
        size_t at = (size_t)snprintf(labels[k], sizeof labels[k], "variant %ld", k);
        for (int v = 0; v < nvary && !rc; v++) {
            rc = whatif_set(s, vs[v].key, vs[v].vals[idx[v]], e);
            if (at < sizeof labels[k])
                at += (size_t)snprintf(labels[k] + at, sizeof labels[k] - at, "%s %s=%s",
                                       v ? "," : ":", vs[v].key, vs[v].vals[idx[v]]);
        }
        if (!rc && solve[0])
            rc = whatif_solve(c, s, &base, solve, solve_tok, &sol[k], e);
        else if (!rc)
            rc = whatif_run_ctx(c, s, &res[k], e);
        if (rc)
            err_wrap(e, "variant %ld", k);
    }
    report *r = NULL;
    if (!rc) {
        /* --timeline - owns stdout: the report goes to stderr. */
        r = report_new(cmd_report_to_stderr(&g->cc) ? stderr : stdout, g->cc.fmt);
        if (!r)
            rc = err_set(e, ERR_SYSTEM, "out of memory");
    }
    if (!rc) {
        print_assumptions(r, g, &base, &cal, &basel, gpu_GBps, hy);
        if (custom_ar_gated(&base, vs, nvary))
            report_meta(r, "note", "%s", COLL_CUSTOM_AR_NOTE);
        for (long k = 0; k < nvar && !rc && !solve[0]; k++) {
            if (vars[k].mode != WHATIF_EAGLE3)
                continue;
            char line[1024], key[32];
            rc = verdict(c, &base, &cal, &vars[k], &res[k], basel.tok_per_s, line, sizeof line, e);
            snprintf(key, sizeof key, "verdict.%ld", k);
            if (!rc)
                report_meta(r, key, "%s", line);
        }
    }
    if (!rc)
        report_table(r, "whatif", cols, nc);
    for (long k = 0; k < nvar && !rc; k++) {
        const whatif_scenario *s = &vars[k];
        report_int(r, k);
        for (int v = 0; v < nvary; v++) {
            char buf[128];
            whatif_get(s, vs[v].key, buf, sizeof buf, NULL);
            report_str(r, !strncmp(vs[v].key, "NCCL_", 5) ? vs[v].vals[idxs[k][v]] : buf);
        }
        if (solve[0]) {
            report_str(r, sol[k].text);
        } else {
            report_num(r, res[k].tok_per_s);
            report_num(r, res[k].cycle_us);
            report_num(r, basel.tok_per_s > 0 ? res[k].tok_per_s / basel.tok_per_s : 0);
            if (breakdown) {
                const whatif_parts *p = &res[k].parts;
                report_num(r, p->compute_us);
                report_num(r, p->comm_us);
                report_num(r, p->launch_us);
                report_num(r, p->host_us);
                report_num(r, p->wait_us);
                report_num(r, p->draft_us);
                report_num(r, p->verify_us);
                report_num(r, res[k].allreduce_us);
                report_num(r, res[k].ar_kernel_us);
                report_num(r, res[k].draft_ar_kernel_us);
                report_str(r, res[k].no_allreduce ? "-" : coll_algo_name(res[k].algo));
                report_str(r, res[k].proto == PROTO_AUTO ? "-" : coll_proto_name(res[k].proto));
                report_num(r, res[k].alltoall_us);
            }
        }
        report_end_row(r);
    }
    /* the files of one run are committed together, or none */
    ofile tlo = {0}, plo = {0};
    ofile *outs[2];
    int nouts = 0;
    if (!rc && g->cc.timeline) {
        const char **lp = malloc((size_t)nvar * sizeof *lp);
        if (!lp)
            rc = err_set(e, ERR_SYSTEM, "out of memory");
        for (long k = 0; k < nvar && lp; k++)
            lp[k] = labels[k];
        if (lp && !(rc = write_timeline(c, vars, lp, nvar, g->cc.timeline, &tlo, e)))
            outs[nouts++] = &tlo;
        free(lp);
    }
    if (!rc && g->plot &&
        !(rc = write_plot(&base, &cal, vars, res, nvar, vs, nvary,
                                 (const int (*)[MAX_VARY])idxs, g->plot, &plo, e)))
        outs[nouts++] = &plo;
    if (rc)
        for (int i = 0; i < nouts; i++)
            ofile_abort(outs[i]);
    else if (nouts)
        rc = ofile_commit_all(outs, nouts, e);
    if (r) {
        int frc = report_finish(r, e);
        if (!rc)
            rc = frc;
        report_free(r);
    }
    free(vars);
    free(labels);
    free(res);
    free(sol);
    free(idxs);
    free(hy);
    whatif_ctx_free(c);
    free(g);
    return rc;
}
