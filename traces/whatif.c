/* What-if scenarios: knobs in a static table (name, type, field offset),
 * the built-in reference scenario, scenario files, and the run: one cycle
 * of the scenario is generated as trace ops (traces/trace.h) and fed to the
 * replay (traces/replay.h), so a what-if and a replayed trace go through the
 * same timing code. Compute per forward follows docs/scenario.md:
 *   t_layer(n tokens) = (w + p * n_eff(n)) * compute_tp / tp,
 *   n_eff(n) = E(n)/E(1), E(n) = experts * (1 - (1 - topk/experts)^n),
 * with w and p derived from the calibration point when not given. */
#include "traces/whatif.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "models/topo.h"
#include "sim/cli.h"
#include "traces/replay.h"
#include "traces/trace.h"
#include "validate/calib.h"

enum { CTX_TOPOS = 8 };

struct whatif_ctx {
    int n;
    char name[CTX_TOPOS][2 * WHATIF_STR + 2]; /* "topo|calib" */
    topo *t[CTX_TOPOS];
    coll_ctx *c[CTX_TOPOS];
};

whatif_ctx *whatif_ctx_new(void) { return calloc(1, sizeof(whatif_ctx)); }

void whatif_ctx_free(whatif_ctx *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        coll_ctx_free(c->c[i]);
        topo_free(c->t[i]);
    }
    free(c);
}

static int ctx_topo(whatif_ctx *c, const char *name, const char *calib_path, topo **t,
                    coll_ctx **cc, err *e)
{
    char key[2 * WHATIF_STR + 2];
    snprintf(key, sizeof key, "%s|%s", name, calib_path);
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->name[i], key)) {
            *t = c->t[i];
            *cc = c->c[i];
            return 0;
        }
    topo *nt = NULL;
    TRY(calib_path[0] ? calib_load_topo(name, calib_path, &nt, e) : topo_load(name, &nt, e));
    coll_ctx *nc = coll_ctx_new(nt);
    if (!nc) {
        topo_free(nt);
        return err_set(e, ERR_SYSTEM, "%s: cannot create the collective model", name);
    }
    if (c->n == CTX_TOPOS) {   /* evict the oldest */
        coll_ctx_free(c->c[0]);
        topo_free(c->t[0]);
        memmove(&c->name[0], &c->name[1], sizeof c->name[0] * (CTX_TOPOS - 1));
        memmove(&c->t[0], &c->t[1], sizeof c->t[0] * (CTX_TOPOS - 1));
        memmove(&c->c[0], &c->c[1], sizeof c->c[0] * (CTX_TOPOS - 1));
        c->n--;
    }
    snprintf(c->name[c->n], sizeof c->name[c->n], "%s", key);
    c->t[c->n] = nt;
    c->c[c->n] = nc;
    c->n++;
    *t = nt;
    *cc = nc;
    return 0;
}

/* ---- the built-in scenario ---------------------------------------------- */

static void env_default(nccl_env *env)
{
    memset(env, 0, sizeof *env);
    env->p2p_level = -1;
    env->algo = ALGO_AUTO;
    env->proto = PROTO_AUTO;
}

/* The NCCL settings of SCENARIO.md: NCCL_PROTO=LL NCCL_ALGO=Ring
 * NCCL_P2P_LEVEL=SYS NCCL_MAX_NCHANNELS=16 NCCL_BUFFSIZE=16777216
 * NCCL_NTHREADS=512. */
static void env_reference(nccl_env *env)
{
    env_default(env);
    env->proto = PROTO_LL;
    env->algo = ALGO_RING;
    env->p2p_level = PATH_SYS;
    env->max_channels = 16;
    env->buffsize_bytes = 16777216;
    env->nthreads = 512;
}

static void scenario_defaults(whatif_scenario *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    snprintf(s->topo, sizeof s->topo, "rtxpro6000-8x-pcie5-2s");
    s->mode = WHATIF_DECODE;
    s->layers = 61;
    s->hidden = 7168;
    s->dtype = DTYPE_BF16;
    s->allreduces_per_layer = 2;
    s->kernels_per_layer = 20;
    s->weight_us_per_layer = -1;
    s->token_us_per_layer = -1;
    s->tp = 8;
    s->batch = 1;
    s->graph = 1;
    s->allreduce = ALGO_AUTO;
    env_default(&s->env);
    s->draft_tokens = 3;
    s->draft_steps = 3;
    s->draft_step_us = -1;
    s->draft_allreduces = 2;
    s->draft_kernels = 25;
    s->accept_len = 2.4;
    s->compute_tp = 8;
    s->moe_experts = 384;
    s->moe_topk = 8;
    s->calib_tok_per_s = 82;
    snprintf(s->calib_topo, sizeof s->calib_topo, "rtxpro6000-8x-pcie5-2s");
    env_reference(&s->calib_env);
    s->weight_MB_per_layer = 74.5;
    s->token_MB_per_layer = 21.6;
    s->draft_MB = 246;
}

typedef struct builtin {
    const char *name;
    void (*init)(whatif_scenario *s);
} builtin;

/* SCENARIO.md: Kimi-K2.5 on 8x RTX PRO 6000 (PCIe Gen5, 2 sockets), TP 8,
 * EAGLE-3 with 3 draft tokens, NCCL Ring/LL as configured there. */
static void kimi_k2_eagle3(whatif_scenario *s)
{
    scenario_defaults(s);
    snprintf(s->name, sizeof s->name, "kimi-k2-eagle3-8x-pcie5");
    s->mode = WHATIF_EAGLE3;
    s->allreduce = ALGO_RING;
    env_reference(&s->env);
}

static const builtin builtins[] = {
    {"kimi-k2-eagle3-8x-pcie5", kimi_k2_eagle3},
};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

const char *whatif_builtin_name(int i)
{
    return i >= 0 && i < NBUILTINS ? builtins[i].name : NULL;
}

/* ---- knobs ---------------------------------------------------------------- */

typedef enum ktype { K_INT, K_DBL, K_STR, K_MODE, K_ALGO, K_DTYPE, K_HIST, K_ENV } ktype;

typedef struct knob {
    const char *name;
    ktype type;
    size_t off;
    double lo, hi;
    const char *env;     /* K_ENV: the NCCL variable */
    const char *desc;
} knob;

#define F(x) offsetof(whatif_scenario, x)
static const knob knobs[] = {
    {"topo", K_STR, F(topo), 0, 0, NULL, "topology preset or file"},
    {"calib", K_STR, F(calib), 0, 0, NULL, "calibration profile (collsim calibrate) applied to topo"},
    {"mode", K_MODE, F(mode), 0, 0, NULL, "decode | eagle3"},
    {"allreduce", K_ALGO, F(allreduce), 0, 0, NULL,
     "ring|tree|oneshot|twoshot|oneshot-push|twoshot-push|auto"},
    {"tp", K_INT, F(tp), 1, 1024, NULL, "tensor-parallel size (GPUs 0..tp-1)"},
    {"batch", K_INT, F(batch), 1, 4096, NULL, "concurrent requests"},
    {"accept_len", K_DBL, F(accept_len), 1, 64, NULL, "mean tokens accepted per EAGLE-3 cycle"},
    {"accept_hist", K_HIST, F(accept_hist), 0, 0, NULL,
     "P(1 token),P(2 tokens),... per cycle (overrides accept_len)"},
    {"draft_tokens", K_INT, F(draft_tokens), 1, 64, NULL, "tokens verified per EAGLE-3 cycle"},
    {"draft_steps", K_INT, F(draft_steps), 0, 64, NULL, "draft-head forwards per cycle"},
    {"draft_step_us", K_DBL, F(draft_step_us), -1, 1e7, NULL,
     "compute of one draft forward (-1: derived)"},
    {"draft_allreduces", K_INT, F(draft_allreduces), 0, 64, NULL,
     "allreduces per draft forward (0: replicated head)"},
    {"draft_kernels", K_INT, F(draft_kernels), 0, 100000, NULL, "kernels per draft forward"},
    {"layers", K_INT, F(layers), 1, 100000, NULL, "decoder layers of the target"},
    {"hidden", K_INT, F(hidden), 1, 1 << 20, NULL, "hidden size"},
    {"dtype", K_DTYPE, F(dtype), 0, 0, NULL, "activation dtype (bf16|fp16|fp32)"},
    {"allreduces_per_layer", K_INT, F(allreduces_per_layer), 0, 64, NULL,
     "allreduces per target layer"},
    {"kernels_per_layer", K_INT, F(kernels_per_layer), 0, 100000, NULL,
     "GPU kernels per target layer besides the allreduces"},
    {"weight_us_per_layer", K_DBL, F(weight_us_per_layer), -1, 1e7, NULL,
     "compute: weight-streaming term per layer and forward (-1: derived)"},
    {"token_us_per_layer", K_DBL, F(token_us_per_layer), -1, 1e7, NULL,
     "compute: per-token term per layer (-1: derived)"},
    {"compute_tp", K_INT, F(compute_tp), 1, 1024, NULL, "tp the compute terms were given for"},
    {"moe_experts", K_INT, F(moe_experts), 0, 1 << 20, NULL, "routed experts (0: linear term)"},
    {"moe_topk", K_INT, F(moe_topk), 0, 1024, NULL, "experts per token"},
    {"graph", K_INT, F(graph), 0, 1, NULL, "1 = CUDA graphs, 0 = eager launches"},
    {"allreduce_us", K_DBL, F(allreduce_us), 0, 1e7, NULL,
     "force every allreduce to this time (0: predict)"},
    {"calib_tok_per_s", K_DBL, F(calib_tok_per_s), 0, 1e9, NULL,
     "measured plain-decode tok/s the compute terms are derived from"},
    {"calib_topo", K_STR, F(calib_topo), 0, 0, NULL, "topology of the calibration point"},
    {"weight_MB_per_layer", K_DBL, F(weight_MB_per_layer), 0, 1e9, NULL,
     "per GPU weights read once per forward (split assumption)"},
    {"token_MB_per_layer", K_DBL, F(token_MB_per_layer), 0, 1e9, NULL,
     "per GPU weights read per token (split assumption)"},
    {"draft_MB", K_DBL, F(draft_MB), 0, 1e9, NULL, "per GPU draft-head weights per draft forward"},
    {"nccl_proto", K_ENV, 0, 0, 0, "NCCL_PROTO", "LL|LL128|Simple"},
    {"nccl_algo", K_ENV, 0, 0, 0, "NCCL_ALGO", "Ring|Tree"},
    {"nccl_p2p_level", K_ENV, 0, 0, 0, "NCCL_P2P_LEVEL", "LOC|NVL|PIX|PXB|PHB|SYS"},
    {"nccl_p2p_disable", K_ENV, 0, 0, 0, "NCCL_P2P_DISABLE", "0|1"},
    {"nccl_shm_disable", K_ENV, 0, 0, 0, "NCCL_SHM_DISABLE", "0|1"},
    {"nccl_min_nchannels", K_ENV, 0, 0, 0, "NCCL_MIN_NCHANNELS", "channels"},
    {"nccl_max_nchannels", K_ENV, 0, 0, 0, "NCCL_MAX_NCHANNELS", "channels"},
    {"nccl_buffsize", K_ENV, 0, 0, 0, "NCCL_BUFFSIZE", "bytes"},
    {"nccl_nthreads", K_ENV, 0, 0, 0, "NCCL_NTHREADS", "threads"},
};
#undef F
enum { NKNOBS = sizeof knobs / sizeof knobs[0] };

const char *whatif_key_name(int i) { return i >= 0 && i < NKNOBS ? knobs[i].name : NULL; }
const char *whatif_key_desc(int i) { return i >= 0 && i < NKNOBS ? knobs[i].desc : NULL; }

static const knob *find_knob(const char *key)
{
    for (int i = 0; i < NKNOBS; i++)
        if (!strcmp(knobs[i].name, key))
            return &knobs[i];
    return NULL;
}

static const char *const path_names[] = {"LOC", "NVL", "NVB", "?", "PIX", "PXB", "?", "?",
                                         "PHB", "SYS"};

int whatif_set(whatif_scenario *s, const char *key, const char *value, err *e)
{
    if (!strncmp(key, "NCCL_", 5)) {
        char a[512];
        snprintf(a, sizeof a, "%s=%s", key, value);
        return coll_env_set(&s->env, a, e);
    }
    const knob *k = find_knob(key);
    if (!k)
        return err_set(e, ERR_USAGE, "unknown knob '%s' (collsim whatif --keys lists them)", key);
    char *base = (char *)s + k->off;
    double d;
    long n;
    switch (k->type) {
    case K_INT:
        TRY(cli_parse_long(key, value, (long)k->lo, (long)k->hi, &n, e));
        *(int *)(void *)base = (int)n;
        break;
    case K_DBL:
        TRY(cli_parse_double(key, value, &d, e));
        if (d < k->lo || d > k->hi)
            return err_set(e, ERR_USAGE, "%s: %s out of range %g..%g", key, value, k->lo, k->hi);
        *(double *)(void *)base = d;
        if (!strcmp(key, "accept_len"))
            s->accept_nhist = 0;
        break;
    case K_STR:
        if (!value[0] || strlen(value) >= WHATIF_STR)
            return err_set(e, ERR_USAGE, "%s: bad value '%s'", key, value);
        snprintf(base, WHATIF_STR, "%s", value);
        break;
    case K_MODE:
        if (!strcmp(value, "decode"))
            s->mode = WHATIF_DECODE;
        else if (!strcmp(value, "eagle3"))
            s->mode = WHATIF_EAGLE3;
        else
            return err_set(e, ERR_USAGE, "mode: '%s' is not decode or eagle3", value);
        break;
    case K_ALGO:
        if (coll_algo_parse(value, &s->allreduce) != 0)
            return err_set(e, ERR_USAGE, "allreduce: unknown algorithm '%s' (%s)", value, k->desc);
        break;
    case K_DTYPE:
        if (coll_dtype_parse(value, &s->dtype) != 0)
            return err_set(e, ERR_USAGE, "dtype: unknown '%s' (bf16, fp16, fp32)", value);
        break;
    case K_HIST: {
        double p[WHATIF_HIST_MAX], sum = 0;
        int np = 0;
        const char *c = value;
        while (*c) {
            if (np == WHATIF_HIST_MAX)
                return err_set(e, ERR_USAGE, "accept_hist: more than %d entries", WHATIF_HIST_MAX);
            char *end;
            p[np] = strtod(c, &end);
            if (end == c || p[np] < 0 || !isfinite(p[np]) || (*end && *end != ','))
                return err_set(e, ERR_USAGE, "accept_hist: bad list '%s' (want p1,p2,...)", value);
            sum += p[np++];
            c = *end ? end + 1 : end;
        }
        if (np == 0 || sum <= 0)
            return err_set(e, ERR_USAGE, "accept_hist: needs a positive probability");
        for (int i = 0; i < np; i++)
            s->accept_hist[i] = p[i] / sum;
        s->accept_nhist = np;
        double mean = 0;
        for (int i = 0; i < np; i++)
            mean += (i + 1) * s->accept_hist[i];
        s->accept_len = mean;
        break;
    }
    case K_ENV: {
        char a[512];
        snprintf(a, sizeof a, "%s=%s", k->env, value);
        return coll_env_set(&s->env, a, e);
    }
    }
    return 0;
}

int whatif_get(const whatif_scenario *s, const char *key, char *buf, size_t n, err *e)
{
    const knob *k = find_knob(key);
    if (!k)
        return err_set(e, ERR_USAGE, "unknown knob '%s'", key);
    const char *base = (const char *)s + k->off;
    switch (k->type) {
    case K_INT:
        snprintf(buf, n, "%d", *(const int *)(const void *)base);
        break;
    case K_DBL:
        snprintf(buf, n, "%g", *(const double *)(const void *)base);
        break;
    case K_STR:
        snprintf(buf, n, "%s", base);
        break;
    case K_MODE:
        snprintf(buf, n, "%s", s->mode == WHATIF_EAGLE3 ? "eagle3" : "decode");
        break;
    case K_ALGO:
        snprintf(buf, n, "%s", coll_algo_name(s->allreduce));
        break;
    case K_DTYPE:
        snprintf(buf, n, "%s", coll_dtype_name(s->dtype));
        break;
    case K_HIST: {
        size_t at = 0;
        buf[0] = 0;
        for (int i = 0; i < s->accept_nhist && at < n; i++)
            at += (size_t)snprintf(buf + at, n - at, "%s%g", i ? "," : "", s->accept_hist[i]);
        break;
    }
    case K_ENV:
        if (!strcmp(k->env, "NCCL_PROTO"))
            snprintf(buf, n, "%s", s->env.proto == PROTO_AUTO ? "auto" : coll_proto_name(s->env.proto));
        else if (!strcmp(k->env, "NCCL_ALGO"))
            snprintf(buf, n, "%s", s->env.algo == ALGO_AUTO ? "auto" : coll_algo_name(s->env.algo));
        else if (!strcmp(k->env, "NCCL_P2P_LEVEL"))
            snprintf(buf, n, "%s", s->env.p2p_level >= 0 && s->env.p2p_level <= 9
                                       ? path_names[s->env.p2p_level] : "default");
        else if (!strcmp(k->env, "NCCL_P2P_DISABLE"))
            snprintf(buf, n, "%d", s->env.p2p_disable);
        else if (!strcmp(k->env, "NCCL_SHM_DISABLE"))
            snprintf(buf, n, "%d", s->env.shm_disable);
        else if (!strcmp(k->env, "NCCL_MIN_NCHANNELS"))
            snprintf(buf, n, "%d", s->env.min_channels);
        else if (!strcmp(k->env, "NCCL_MAX_NCHANNELS"))
            snprintf(buf, n, "%d", s->env.max_channels);
        else if (!strcmp(k->env, "NCCL_BUFFSIZE"))
            snprintf(buf, n, "%lld", (long long)s->env.buffsize_bytes);
        else
            snprintf(buf, n, "%d", s->env.nthreads);
        break;
    }
    return 0;
}

/* ---- scenario files -------------------------------------------------------- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

static int load_file(const char *path, whatif_scenario *out, err *e)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(e, ERR_INPUT, "unknown scenario '%s' (not built in, and no readable file: "
                       "%s)", path, strerror(errno));
    scenario_defaults(out);
    const char *slash = strrchr(path, '/');
    snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : path);
    char line[1024];
    long ln = 0;
    int rc = 0, seen_op = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = err_at(e, path, ln, "line too long");
            break;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *l = trim(line);
        if (ln == 1) {
            if (strcmp(l, "collsim-scenario 1") != 0) {
                rc = err_at(e, path, 1, "not a scenario file (first line must be 'collsim-scenario 1')");
                break;
            }
            continue;
        }
        if (!*l)
            continue;
        if (!strncmp(l, "base ", 5) || !strncmp(l, "base\t", 5)) {
            if (seen_op) {
                rc = err_at(e, path, ln, "'base' must come before the settings");
                break;
            }
            const char *bname = trim(l + 5);
            int found = 0;
            for (int i = 0; i < NBUILTINS; i++)
                if (!strcmp(builtins[i].name, bname)) {
                    builtins[i].init(out);
                    found = 1;
                }
            if (!found) {
                rc = err_at(e, path, ln, "unknown built-in scenario '%s'", bname);
                break;
            }
            snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : path);
            seen_op = 1;
            continue;
        }
        char *eq = strchr(l, '=');
        if (!eq) {
            rc = err_at(e, path, ln, "expected 'KEY = VALUE'");
            break;
        }
        *eq = 0;
        char *key = trim(l), *val = trim(eq + 1);
        err sub = {0};
        if (whatif_set(out, key, val, &sub) != 0) {
            rc = err_at(e, path, ln, "%s", sub.msg);
            break;
        }
        seen_op = 1;
    }
    if (rc == 0 && ln == 0)
        rc = err_at(e, path, 1, "empty file: not a scenario");
    if (rc == 0 && ferror(f))
        rc = err_set(e, ERR_SYSTEM, "%s: read error", path);
    fclose(f);
    return rc;
}

int whatif_scenario_load(const char *name_or_path, whatif_scenario *out, err *e)
{
    for (int i = 0; i < NBUILTINS; i++)
        if (!strcmp(builtins[i].name, name_or_path)) {
            builtins[i].init(out);
            return 0;
        }
    return load_file(name_or_path, out, e);
}

/* ---- running ----------------------------------------------------------------- */

/* Tokens of one forward's routed-expert reads, relative to one token. */
static double n_eff(const whatif_scenario *s, double n)
{
    if (s->moe_experts <= 0 || s->moe_topk <= 0 || s->moe_topk >= s->moe_experts)
        return n;
    double q = 1.0 - (double)s->moe_topk / s->moe_experts;
    return (1.0 - pow(q, n)) / (1.0 - q);
}

typedef struct terms {
    double w_us, p_us, draft_us;
} terms;

static double layer_us(const whatif_scenario *s, const terms *t, double tokens)
{
    return (t->w_us + t->p_us * n_eff(s, tokens)) * (double)s->compute_tp / s->tp;
}

static int sink_replay(void *arg, const trace_op *op, err *e) { return replay_op(arg, op, e); }

/* Emit one cycle of s to fn. */
static int feed_cycle(const whatif_scenario *s, const terms *t, whatif_op_fn *fn, void *r,
                      double tokens, err *e)
{
    trace_op op;
    trace_op_init(&op, OP_CYCLE);
    op.tokens = tokens;
    TRY(fn(r, &op, e));
    int b = s->batch;
    uint64_t tok_bytes = (uint64_t)s->hidden * (uint64_t)coll_dtype_size(s->dtype);
    if (s->mode == WHATIF_EAGLE3 && s->draft_steps > 0) {
        trace_op_init(&op, OP_PHASE);
        op.phase = PHASE_DRAFT;
        op.graph = s->graph;
        TRY(fn(r, &op, e));
        int nar = s->draft_allreduces;
        for (int d = 0; d < s->draft_steps; d++) {
            /* one draft forward: compute split around its allreduces */
            double per = t->draft_us / (nar + 1);
            int kper = s->draft_kernels / (nar + 1);
            for (int a = 0; a <= nar; a++) {
                trace_op_init(&op, OP_COMPUTE);
                op.dur_us = per;
                op.kernels = a == nar ? s->draft_kernels - kper * nar : kper;
                TRY(fn(r, &op, e));
                if (a == nar)
                    break;
                trace_op_init(&op, OP_COLL);
                op.coll = COLL_ALLREDUCE;
                op.bytes = tok_bytes * (uint64_t)b;
                op.dtype = s->dtype;
                op.group = s->tp;
                TRY(fn(r, &op, e));
            }
        }
    }
    int ntok = (s->mode == WHATIF_EAGLE3 ? s->draft_tokens : 1) * b;
    trace_op_init(&op, OP_PHASE);
    op.phase = s->mode == WHATIF_EAGLE3 ? PHASE_VERIFY : PHASE_DECODE;
    op.graph = s->graph;
    TRY(fn(r, &op, e));
    double lus = layer_us(s, t, ntok);
    int nar = s->allreduces_per_layer;
    double per = lus / (nar > 0 ? nar : 1);
    for (int l = 0; l < s->layers; l++) {
        int kper = s->kernels_per_layer / (nar > 0 ? nar : 1);
        for (int a = 0; a < (nar > 0 ? nar : 1); a++) {
            trace_op_init(&op, OP_COMPUTE);
            op.dur_us = per;
            op.kernels = a == 0 ? s->kernels_per_layer - kper * ((nar > 0 ? nar : 1) - 1) : kper;
            TRY(fn(r, &op, e));
            if (nar == 0)
                break;
            trace_op_init(&op, OP_COLL);
            op.coll = COLL_ALLREDUCE;
            op.bytes = tok_bytes * (uint64_t)ntok;
            op.dtype = s->dtype;
            op.group = s->tp;
            TRY(fn(r, &op, e));
        }
    }
    return 0;
}

static int check_scenario(const whatif_scenario *s, const topo *t, err *e)
{
    if (t && s->tp > topo_ngpus(t))
        return err_set(e, ERR_USAGE, "tp %d is larger than the %d GPUs of %s", s->tp,
                       topo_ngpus(t), s->topo);
    if (s->mode == WHATIF_EAGLE3 && s->accept_nhist == 0 &&
        (s->accept_len < 1 || s->accept_len > s->draft_tokens))
        return err_set(e, ERR_USAGE, "accept_len %g must be within 1..draft_tokens (%d)",
                       s->accept_len, s->draft_tokens);
    return 0;
}

static int run_with(whatif_ctx *c, const whatif_scenario *s, const terms *t, whatif_result *out,
                    err *e)
{
    topo *tp = NULL;
    coll_ctx *cc = NULL;
    TRY(ctx_topo(c, s->topo, s->calib, &tp, &cc, e));
    TRY(check_scenario(s, tp, e));
    replay_opts o;
    replay_opts_init(&o);
    o.allreduce = s->allreduce;
    o.env = s->env;
    o.graph = s->graph;
    o.coll_us = s->allreduce_us;
    replay *r = replay_new(tp, cc, &o);
    if (!r)
        return err_set(e, ERR_SYSTEM, "out of memory");
    double tokens = (s->mode == WHATIF_EAGLE3 ? s->accept_len : 1.0) * s->batch;
    replay_result rr;
    int rc = feed_cycle(s, t, sink_replay, r, tokens, e);
    if (rc == 0)
        rc = replay_finish(r, &rr, e);
    replay_free(r);
    TRY(rc);
    memset(out, 0, sizeof *out);
    out->tok_per_s = rr.tok_per_s;
    out->cycle_us = rr.cycle_us;
    out->tokens_per_cycle = tokens;
    out->compute_us = rr.compute_us;
    out->comm_us = rr.comm_us;
    out->launch_us = rr.launch_us;
    out->idle_us = rr.idle_us;
    out->weight_us_per_layer = t->w_us;
    out->token_us_per_layer = t->p_us;
    out->draft_step_us = t->draft_us;
    /* the target forward's allreduce, for the report */
    int ntok = (s->mode == WHATIF_EAGLE3 ? s->draft_tokens : 1) * s->batch;
    if (s->allreduce_us > 0) {
        out->allreduce_us = s->allreduce_us;
        out->algo = s->allreduce;
        return 0;
    }
    coll_req q;
    coll_req_init(&q, tp);
    q.kind = COLL_ALLREDUCE;
    q.bytes = (uint64_t)s->hidden * (uint64_t)coll_dtype_size(s->dtype) * (uint64_t)ntok;
    q.dtype = s->dtype;
    q.nranks = s->tp;
    q.algo = s->allreduce;
    q.env = s->env;
    q.graph = s->graph;
    coll_result res;
    TRY(coll_predict(cc, &q, &res, e));
    out->allreduce_us = (double)res.time_ps / 1e6;
    out->algo = res.algo;
    out->proto = res.proto;
    out->channels = res.channels;
    return 0;
}

/* Derive w, p and the draft step from the calibration point (docs/scenario.md):
 * X = per-layer compute at one token = (1/calib_tok_per_s - the rest of the
 * decode step as the model predicts it) / layers; w : p = weight_MB : token_MB;
 * draft = draft_MB at the bandwidth that X implies. */
static int derive_terms(whatif_ctx *c, const whatif_scenario *s, terms *t, err *e)
{
    t->w_us = s->weight_us_per_layer;
    t->p_us = s->token_us_per_layer;
    t->draft_us = s->draft_step_us;
    if (t->w_us >= 0 && t->p_us >= 0 && t->draft_us >= 0)
        return 0;
    if (s->calib_tok_per_s <= 0)
        return err_set(e, ERR_USAGE,
                       "compute terms not given and no calibration point (calib_tok_per_s)");
    whatif_scenario cal = *s;
    cal.mode = WHATIF_DECODE;
    cal.batch = 1;
    cal.tp = s->compute_tp;
    cal.allreduce = ALGO_RING;
    cal.env = s->calib_env;
    cal.allreduce_us = 0;
    snprintf(cal.topo, sizeof cal.topo, "%s", s->calib_topo);
    /* The profile describes the scenario's machine: it applies to the
     * calibration point only when that point was taken on the same one. */
    if (strcmp(s->calib_topo, s->topo))
        cal.calib[0] = '\0';
    terms zero = {0, 0, 0};
    whatif_result r0;
    TRY(run_with(c, &cal, &zero, &r0, e));  /* everything but compute */
    double target_us = 1e6 / s->calib_tok_per_s;
    double x = (target_us - r0.cycle_us) / s->layers;
    if (x <= 0)
        return err_set(e, ERR_CHECK,
                       "calibration: the predicted communication and overhead of plain decode "
                       "(%.1f us) already exceed the measured step (%.1f us)",
                       r0.cycle_us, target_us);
    double f = s->weight_MB_per_layer / (s->weight_MB_per_layer + s->token_MB_per_layer);
    if (t->w_us < 0)
        t->w_us = f * x;
    if (t->p_us < 0)
        t->p_us = (1 - f) * x;
    if (t->draft_us < 0) {
        double MB_per_us = (s->weight_MB_per_layer + s->token_MB_per_layer) / x;
        t->draft_us = s->draft_MB / MB_per_us;
    }
    return 0;
}

int whatif_derive(whatif_ctx *c, whatif_scenario *s, err *e)
{
    terms t;
    TRY(derive_terms(c, s, &t, e));
    s->weight_us_per_layer = t.w_us;
    s->token_us_per_layer = t.p_us;
    s->draft_step_us = t.draft_us;
    return 0;
}

int whatif_emit_cycle(const whatif_scenario *s, double tokens, whatif_op_fn *fn, void *arg,
                      err *e)
{
    if (s->weight_us_per_layer < 0 || s->token_us_per_layer < 0 || s->draft_step_us < 0)
        return err_set(e, ERR_USAGE, "whatif_emit_cycle: compute terms not derived");
    terms t = {s->weight_us_per_layer, s->token_us_per_layer, s->draft_step_us};
    return feed_cycle(s, &t, fn, arg, tokens, e);
}

int whatif_run_ctx(whatif_ctx *c, const whatif_scenario *s, whatif_result *out, err *e)
{
    terms t;
    TRY(derive_terms(c, s, &t, e));
    return run_with(c, s, &t, out, e);
}

int whatif_run(const whatif_scenario *s, whatif_result *out, err *e)
{
    whatif_ctx *c = whatif_ctx_new();
    if (!c)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int rc = whatif_run_ctx(c, s, out, e);
    whatif_ctx_free(c);
    return rc;
}

int whatif_solve(whatif_ctx *c, const whatif_scenario *s, const char *key, double *value,
                 err *e)
{
    whatif_scenario eg = *s, dec = *s;
    eg.mode = WHATIF_EAGLE3;
    dec.mode = WHATIF_DECODE;
    whatif_result re, rd;
    if (!strcmp(key, "accept_len")) {
        /* The cycle does not depend on the accept length, so tok/s is
         * linear in it: break-even accept = eagle cycle / decode cycle. */
        eg.accept_nhist = 0;
        eg.accept_len = 1;
        TRY(whatif_run_ctx(c, &eg, &re, e));
        TRY(whatif_run_ctx(c, &dec, &rd, e));
        *value = re.cycle_us / rd.cycle_us;
        if (*value > eg.draft_tokens)
            return err_set(e, ERR_CHECK,
                           "no break-even: EAGLE-3 needs %.3f accepted tokens per cycle, more "
                           "than draft_tokens (%d)", *value, eg.draft_tokens);
        return 0;
    }
    if (!strcmp(key, "allreduce_us")) {
        /* Plain decode as predicted (or as s forces it); every EAGLE-3
         * allreduce forced to a. EAGLE-3's time per token is linear in a:
         * (c + n a) / accept; solve it equal to decode's time per token. */
        TRY(whatif_run_ctx(c, &dec, &rd, e));
        double d = rd.cycle_us / (rd.tokens_per_cycle / dec.batch);
        double as[2] = {10, 110}, ce[2];
        for (int i = 0; i < 2; i++) {
            eg.allreduce_us = as[i];
            TRY(whatif_run_ctx(c, &eg, &re, e));
            ce[i] = re.cycle_us;
        }
        double acc = re.tokens_per_cycle / eg.batch;
        double n = (ce[1] - ce[0]) / (as[1] - as[0]), c0 = ce[0] - n * as[0];
        if (n <= 0)
            return err_set(e, ERR_CHECK, "no break-even: EAGLE-3 has no allreduces");
        double a = (acc * d - c0) / n;
        if (a <= 0 || !isfinite(a))
            return err_set(e, ERR_CHECK,
                           "no break-even: EAGLE-3 loses to plain decode even with free allreduces");
        *value = a;
        return 0;
    }
    return err_set(e, ERR_USAGE, "--solve: '%s' is not accept_len or allreduce_us", key);
}
