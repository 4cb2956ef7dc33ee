/* Collective prediction: name tables, NCCL environment parsing, the choice
 * of algorithm/protocol/channels, a cache of results keyed by the whole
 * request (a prediction is a pure function of request and topology), and
 * the helpers algorithm builders share. Each algorithm lives in its own
 * file and is found through the table below. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "models/coll/coll_impl.h"
#include "models/nccl/nccl_tune.h"

/* Which builder runs an algorithm, and for which collectives. */
static const struct {
    coll_algo algo;
    coll_build_fn *build;
    unsigned kinds; /* bit per coll_kind */
} algos[] = {
    {ALGO_RING, coll_build_ring,
     1u << COLL_ALLREDUCE | 1u << COLL_REDUCESCATTER | 1u << COLL_ALLGATHER |
         1u << COLL_BROADCAST},
    {ALGO_RING, coll_build_alltoall, 1u << COLL_ALLTOALL},
    {ALGO_TREE, coll_build_tree, 1u << COLL_ALLREDUCE},
    {ALGO_ONESHOT, coll_build_oneshot, 1u << COLL_ALLREDUCE},
    {ALGO_ONESHOT_PUSH, coll_build_oneshot, 1u << COLL_ALLREDUCE},
    {ALGO_ONESHOT_PUSH, coll_build_alltoall_push, 1u << COLL_ALLTOALL},
    {ALGO_TWOSHOT, coll_build_twoshot, 1u << COLL_ALLREDUCE},
    {ALGO_TWOSHOT_PUSH, coll_build_twoshot, 1u << COLL_ALLREDUCE},
    {ALGO_NVLS, coll_build_nvls,
     1u << COLL_ALLREDUCE | 1u << COLL_REDUCESCATTER | 1u << COLL_ALLGATHER},
};

void coll_req_init(coll_req *r, const topo *t)
{
    memset(r, 0, sizeof *r);
    r->kind = COLL_ALLREDUCE;
    r->dtype = DTYPE_BF16;
    r->nranks = topo_ngpus(t);
    r->algo = ALGO_AUTO;
    r->proto = PROTO_AUTO;
    r->env.p2p_level = -1;
    r->env.algo = ALGO_AUTO;
    r->env.proto = PROTO_AUTO;
}

static int parse_level(const char *v, int *out)
{
    static const struct { const char *name; int level; } levels[] = {
        {"LOC", PATH_LOC}, {"NVL", PATH_NVL}, {"PIX", PATH_PIX}, {"PXB", PATH_PXB},
        {"PHB", PATH_PHB}, {"NODE", PATH_PHB}, {"SYS", PATH_SYS},
    };
    /* Legacy integers 0..5 map to LOC, PIX, PXB, PHB, SYS, SYS. */
    static const int legacy[] = {PATH_LOC, PATH_PIX, PATH_PXB, PATH_PHB, PATH_SYS, PATH_SYS};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (!strcasecmp(v, levels[i].name)) {
            *out = levels[i].level;
            return 0;
        }
    if (v[0] >= '0' && v[0] <= '5' && !v[1]) {
        *out = legacy[v[0] - '0'];
        return 0;
    }
    return -1;
}

static int parse_int(const char *v, long lo, long hi, long *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

int coll_env_set(nccl_env *env, const char *as, err *e)
{
    const char *eq = strchr(as, '=');
    if (!eq || eq == as)
        return err_set(e, ERR_USAGE, "--env '%s': expected NCCL_NAME=VALUE", as);
    size_t kl = (size_t)(eq - as);
    const char *v = eq + 1;
    long x;
#define KEY(k) (kl == sizeof(k) - 1 && !strncmp(as, k, kl))
    if (KEY("NCCL_P2P_LEVEL")) {
        if (parse_level(v, &env->p2p_level))
            return err_set(e, ERR_USAGE, "NCCL_P2P_LEVEL: '%s' (LOC|NVL|PIX|PXB|PHB|SYS|0-5)", v);
    } else if (KEY("NCCL_P2P_DISABLE") || KEY("NCCL_SHM_DISABLE")) {
        if (parse_int(v, 0, 1, &x))
            return err_set(e, ERR_USAGE, "%.*s: '%s' (0 or 1)", (int)kl, as, v);
        if (KEY("NCCL_P2P_DISABLE"))
            env->p2p_disable = (int)x;
        else
            env->shm_disable = (int)x;
    } else if (KEY("NCCL_NVLS_ENABLE")) {
        if (parse_int(v, 0, 2, &x))
            return err_set(e, ERR_USAGE, "NCCL_NVLS_ENABLE: '%s' (0 off, 1 on, 2 auto)", v);
        env->nvls_enable = (int)x;
    } else if (KEY("NCCL_GRAPH_FILE")) {
        if (!*v || strlen(v) >= sizeof env->graph_file)
            return err_set(e, ERR_USAGE, "NCCL_GRAPH_FILE: a path of 1..%zu bytes",
                           sizeof env->graph_file - 1);
        memset(env->graph_file, 0, sizeof env->graph_file);
        memcpy(env->graph_file, v, strlen(v));
    } else if (KEY("NCCL_NVLS_NCHANNELS")) {
        if (parse_int(v, 1, 32, &x))
            return err_set(e, ERR_USAGE, "NCCL_NVLS_NCHANNELS: '%s' (1..32)", v);
        env->nvls_nchannels = (int)x;
    } else if (KEY("NCCL_ALGO")) {
        coll_algo a;
        if (coll_algo_parse(v, &a) || (a != ALGO_RING && a != ALGO_TREE && a != ALGO_NVLS))
            return err_set(e, ERR_USAGE, "NCCL_ALGO: '%s' (Ring, Tree or NVLS)", v);
        env->algo = a;
    } else if (KEY("NCCL_PROTO")) {
        coll_proto p;
        if (coll_proto_parse(v, &p) || p == PROTO_AUTO)
            return err_set(e, ERR_USAGE, "NCCL_PROTO: '%s' (LL, LL128 or Simple)", v);
        env->proto = p;
    } else if (KEY("NCCL_MIN_NCHANNELS") || KEY("NCCL_MAX_NCHANNELS")) {
        if (parse_int(v, 1, 64, &x))
            return err_set(e, ERR_USAGE, "%.*s: '%s' (1..64)", (int)kl, as, v);
        if (KEY("NCCL_MIN_NCHANNELS"))
            env->min_channels = (int)x;
        else
            env->max_channels = (int)x;
    } else if (KEY("NCCL_BUFFSIZE")) {
        if (parse_int(v, 65536, 1L << 30, &x))
            return err_set(e, ERR_USAGE, "NCCL_BUFFSIZE: '%s' (64 KiB..1 GiB)", v);
        env->buffsize_bytes = x;
    } else if (KEY("NCCL_SHM_USE_CUDA_MEMCPY")) {
        if (parse_int(v, 0, 1, &x))
            return err_set(e, ERR_USAGE, "NCCL_SHM_USE_CUDA_MEMCPY: '%s' (0 or 1)", v);
        env->shm_memcpy = (int)x;
    } else if (KEY("NCCL_SHM_MEMCPY_MODE")) {
        if (parse_int(v, 1, 3, &x))
            return err_set(e, ERR_USAGE, "NCCL_SHM_MEMCPY_MODE: '%s' (1 send side, 2 receive "
                           "side, 3 both)", v);
        env->shm_memcpy_mode = (int)x;
    } else if (KEY("NCCL_IGNORE_DISABLED_P2P")) {
        if (parse_int(v, 0, 2, &x))
            return err_set(e, ERR_USAGE, "NCCL_IGNORE_DISABLED_P2P: '%s' (0, 1 or 2)", v);
        env->ignore_disabled_p2p = (int)x;
    } else if (KEY("NCCL_NTHREADS")) {
        if (parse_int(v, 64, 1024, &x) || x % 64)
            return err_set(e, ERR_USAGE, "NCCL_NTHREADS: '%s' (64..1024, multiple of 64)", v);
        env->nthreads = (int)x;
    } else if (KEY("NCCL_VERSION")) {
        int ver = nccl_tune_version_parse(v);
        if (ver < 0) {
            char list[128];
            return err_set(e, ERR_USAGE, "NCCL_VERSION: '%s' is not emulated (%s)", v,
                           nccl_tune_version_list(list, sizeof list));
        }
        env->version = ver;
    } else if (kl > 5 && !strncmp(as, "NCCL_", 5)) {
        return err_set(e, ERR_USAGE, "--env %.*s: not a setting the model uses", (int)kl, as);
    } else {
        return err_set(e, ERR_USAGE, "--env '%s': expected NCCL_NAME=VALUE", as);
    }
#undef KEY
    return 0;
}

/* Append "sep word" (no sep before the first) to buf, truncating at n. */
static void env_word(char *buf, size_t n, char sep, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void env_word(char *buf, size_t n, char sep, const char *fmt, ...)
{
    size_t k = strlen(buf);
    if (k && k + 1 < n)
        buf[k++] = sep, buf[k] = 0;
    va_list ap;
    va_start(ap, fmt);
    if (k < n)
        vsnprintf(buf + k, n - k, fmt, ap);
    va_end(ap);
}

char *coll_env_format(const nccl_env *env, char sep, char *buf, size_t n)
{
    static const struct { const char *name; int level; } levels[] = {
        {"LOC", PATH_LOC}, {"NVL", PATH_NVL}, {"PIX", PATH_PIX}, {"PXB", PATH_PXB},
        {"PHB", PATH_PHB}, {"SYS", PATH_SYS},
    };
    buf[0] = 0;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (env->p2p_level >= 0 && env->p2p_level == levels[i].level)
            env_word(buf, n, sep, "NCCL_P2P_LEVEL=%s", levels[i].name);
    if (env->p2p_disable)
        env_word(buf, n, sep, "NCCL_P2P_DISABLE=1");
    if (env->shm_disable)
        env_word(buf, n, sep, "NCCL_SHM_DISABLE=1");
    if (env->algo == ALGO_RING || env->algo == ALGO_TREE || env->algo == ALGO_NVLS)
        env_word(buf, n, sep, "NCCL_ALGO=%s", env->algo == ALGO_RING ? "Ring"
                                              : env->algo == ALGO_TREE ? "Tree" : "NVLS");
    if (env->nvls_enable)
        env_word(buf, n, sep, "NCCL_NVLS_ENABLE=%d", env->nvls_enable);
    if (env->nvls_nchannels)
        env_word(buf, n, sep, "NCCL_NVLS_NCHANNELS=%d", env->nvls_nchannels);
    if (env->graph_file[0])
        env_word(buf, n, sep, "NCCL_GRAPH_FILE=%s", env->graph_file);
    if (env->proto != PROTO_AUTO)
        env_word(buf, n, sep, "NCCL_PROTO=%s", coll_proto_name(env->proto));
    if (env->min_channels)
        env_word(buf, n, sep, "NCCL_MIN_NCHANNELS=%d", env->min_channels);
    if (env->max_channels)
        env_word(buf, n, sep, "NCCL_MAX_NCHANNELS=%d", env->max_channels);
    if (env->buffsize_bytes)
        env_word(buf, n, sep, "NCCL_BUFFSIZE=%lld", (long long)env->buffsize_bytes);
    if (env->nthreads)
        env_word(buf, n, sep, "NCCL_NTHREADS=%d", env->nthreads);
    if (env->ignore_disabled_p2p)
        env_word(buf, n, sep, "NCCL_IGNORE_DISABLED_P2P=%d", env->ignore_disabled_p2p);
    if (env->shm_memcpy)
        env_word(buf, n, sep, "NCCL_SHM_USE_CUDA_MEMCPY=1");
    if (env->shm_memcpy_mode)
        env_word(buf, n, sep, "NCCL_SHM_MEMCPY_MODE=%d", env->shm_memcpy_mode);
    return buf;
}

int coll_algo_is_custom(coll_algo a)
{
    return a == ALGO_ONESHOT || a == ALGO_TWOSHOT || a == ALGO_ONESHOT_PUSH ||
           a == ALGO_TWOSHOT_PUSH;
}

int coll_p2p_ops(coll_kind kind, int nranks) { return kind == COLL_ALLTOALL ? 2 * nranks : 0; }

sim_ps coll_issue_ps(const topo *t, const coll_req *q, const coll_result *res, int graph,
                     int gpus)
{
    const topo_params *p = topo_params_get(t);
    if (coll_algo_is_custom(res->algo))
        return graph ? p->graph_node_ps : p->launch_ps;
    int ops = coll_p2p_ops(q->kind, q->nranks);
    return topo_nccl_thread_issue_ps(p, graph, q->nranks, ops, gpus) +
           topo_nccl_chan_issue_ps(p, graph, q->nranks, ops, res->channels, gpus);
}

int coll_nccl_graph_derived(int nranks) { return nranks > NCCL_TUNE_MAX_RANKS; }

int coll_custom_ar_gated(const topo *t, int nranks)
{
    return nranks > 2 && !topo_gpus_nvlinked(t, nranks);
}

/* --- context and cache ------------------------------------------------- */

typedef struct cache_ent {
    coll_req key;
    coll_result val;
    int used;
    coll_link_use *links; /* coll_predict_links: per link, or NULL */
    int nlinks;
} cache_ent;

/* NCCL's decisions per (ranks, settings): a few, reused round-robin. */
enum { NTUNES = 8 };

struct coll_ctx {
    const topo *t;
    fabric *f;
    int off;           /* FAB_NO_* mechanisms switched off */
    int stream, bundle; /* coll_ctx_tune */
    int flag_tasks;     /* coll_ctx_flag_tasks */
    cache_ent *tab;
    size_t cap, len;
    uint64_t computed;  /* predictions actually run (cache misses) */
    struct {
        nccl_env env;
        int nranks;
        nccl_tune *nt;
    } tunes[NTUNES];
    int next_tune;
};

coll_ctx *coll_ctx_new(const topo *t)
{
    coll_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->t = t;
    c->stream = 1;
    c->bundle = 1;
    return c;
}

void coll_ctx_tune(coll_ctx *c, int stream, int bundle)
{
    c->stream = stream;
    c->bundle = bundle;
}

void coll_ctx_flag_tasks(coll_ctx *c, int on) { c->flag_tasks = on; }

void coll_ctx_free(coll_ctx *c)
{
    if (!c)
        return;
    fabric_free(c->f);
    for (size_t i = 0; c->tab && i < c->cap; i++)
        free(c->tab[i].links);
    free(c->tab);
    for (int i = 0; i < NTUNES; i++)
        nccl_tune_free(c->tunes[i].nt);
    free(c);
}

void coll_ctx_without(coll_ctx *c, int off)
{
    c->off = off;
    for (size_t i = 0; c->tab && i < c->cap; i++)
        free(c->tab[i].links);
    if (c->tab)
        memset(c->tab, 0, sizeof *c->tab * c->cap);
    c->len = 0;
}

/* FNV-1a over 8-byte words (the key is hashed on every prediction: replay
 * asks once per collective), then the tail bytes; a final mix spreads the
 * high bits into the low ones the table index uses. */
static uint64_t hash_req(const coll_req *r)
{
    const unsigned char *p = (const unsigned char *)r;
    uint64_t h = 1469598103934665603ULL;
    size_t i = 0;
    for (; i + 8 <= sizeof *r; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ULL;
    }
    for (; i < sizeof *r; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/* Settings are compared as bytes, so keys are built zeroed (padding too). */
static void env_canon(nccl_env *d, const nccl_env *s)
{
    memset(d, 0, sizeof *d);
    d->p2p_level = s->p2p_level;
    d->p2p_disable = s->p2p_disable;
    d->shm_disable = s->shm_disable;
    d->algo = s->algo;
    d->proto = s->proto;
    d->min_channels = s->min_channels;
    d->max_channels = s->max_channels;
    d->buffsize_bytes = s->buffsize_bytes;
    d->nthreads = s->nthreads;
    d->ignore_disabled_p2p = s->ignore_disabled_p2p;
    d->shm_memcpy = s->shm_memcpy;
    d->shm_memcpy_mode = s->shm_memcpy_mode;
    d->nvls_enable = s->nvls_enable;
    d->nvls_nchannels = s->nvls_nchannels;
    memcpy(d->graph_file, s->graph_file, sizeof d->graph_file);
    d->version = s->version;
}

/* Requests are compared as bytes, so keys are built zeroed (padding too). */
static void canon(coll_req *k, const coll_req *r)
{
    memset(k, 0, sizeof *k);
    k->kind = r->kind;
    k->bytes = r->bytes;
    k->dtype = r->dtype;
    k->nranks = r->nranks;
    k->root = r->root;
    k->algo = r->algo;
    k->proto = r->proto;
    k->channels = r->channels;
    k->graph = r->graph;
    k->registered = r->registered;
    env_canon(&k->env, &r->env);
}

static cache_ent *cache_slot(coll_ctx *c, const coll_req *k)
{
    if (c->len * 2 >= c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        cache_ent *nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return NULL;
        for (size_t i = 0; i < c->cap; i++)
            if (c->tab[i].used) {
                size_t j = hash_req(&c->tab[i].key) & (ncap - 1);
                while (nt[j].used)
                    j = (j + 1) & (ncap - 1);
                nt[j] = c->tab[i];
            }
        free(c->tab);
        c->tab = nt;
        c->cap = ncap;
    }
    size_t j = hash_req(k) & (c->cap - 1);
    while (c->tab[j].used && memcmp(&c->tab[j].key, k, sizeof *k))
        j = (j + 1) & (c->cap - 1);
    return &c->tab[j];
}

/* --- choosing and running ---------------------------------------------- */

static int check_req(const coll_ctx *c, const coll_req *r, err *e);

/* NCCL's decisions for the request's ranks and settings; --algo/--proto act
 * as NCCL_ALGO/NCCL_PROTO would. Cached; owned by the context. */
static int get_tune(coll_ctx *c, const coll_req *r, const nccl_tune **out, err *e)
{
    nccl_env env;
    env_canon(&env, &r->env);
    if (r->algo != ALGO_AUTO)
        env.algo = r->algo;
    if (r->proto != PROTO_AUTO)
        env.proto = r->proto;
    for (int i = 0; i < NTUNES; i++)
        if (c->tunes[i].nt && c->tunes[i].nranks == r->nranks &&
            !memcmp(&c->tunes[i].env, &env, sizeof env)) {
            *out = c->tunes[i].nt;
            return 0;
        }
    nccl_tune *nt;
    TRY(nccl_tune_new(c->t, r->nranks, &env, &nt, e));
    int i = c->next_tune;
    c->next_tune = (i + 1) % NTUNES;
    nccl_tune_free(c->tunes[i].nt);
    c->tunes[i].nt = nt;
    memcpy(&c->tunes[i].env, &env, sizeof env);
    c->tunes[i].nranks = r->nranks;
    *out = nt;
    return 0;
}

int coll_explain(coll_ctx *c, const coll_req *r, int comm, FILE *f, err *e)
{
    coll_req k;
    canon(&k, r);
    TRY(check_req(c, &k, e));
    const nccl_tune *nt;
    TRY(get_tune(c, &k, &nt, e));
    nccl_tune_op op;
    int p2p = k.kind == COLL_ALLTOALL;
    if (!p2p)
        TRY(nccl_tune_op_choose(nt, k.kind, k.bytes, k.dtype, ALGO_AUTO, PROTO_AUTO, &op, e));
    nccl_tune_explain(nt, c->t, k.kind, k.bytes, p2p ? NULL : &op, comm, f);
    return 0;
}

static int choose(coll_ctx *c, const coll_req *r, coll_algo *algo, coll_proto *proto,
                  int *channels, int *threads, const nccl_tune **tune, err *e)
{
    coll_algo a = r->algo != ALGO_AUTO ? r->algo : r->env.algo;
    coll_proto p = r->proto != PROTO_AUTO ? r->proto : r->env.proto;
    int custom = a == ALGO_ONESHOT || a == ALGO_TWOSHOT || a == ALGO_ONESHOT_PUSH ||
                 a == ALGO_TWOSHOT_PUSH;
    *threads = 0;
    /* The custom kernels use none of NCCL's decisions: none searched for
     * them (a graph file is still read, so that a bad one is named). */
    if (!custom || r->env.graph_file[0])
        TRY(get_tune(c, r, tune, e));
    if (custom) {
        *algo = a;
        *proto = PROTO_AUTO;
        *channels = 0;
        return 0;
    }
    int all = (*tune)->searched == (*tune)->nranks;   /* the search saw every rank */
    if (a == ALGO_NVLS && all && !(*tune)->nvls.support)
        return err_set(e, ERR_USAGE, "NVLS is off (%s): it needs --env NCCL_NVLS_ENABLE=1 or 2 "
                       "and GPUs of SM 90+ on an NVSwitch", (*tune)->nvls.why);
    if (a == ALGO_NVLS && (!all || r->kind == COLL_ALLTOALL))
        return err_set(e, ERR_USAGE, "NVLS: %s", r->kind == COLL_ALLTOALL
                       ? "NCCL has no NVLS all-to-all" : "not emulated beyond 72 ranks");
    if (r->kind == COLL_ALLTOALL) {
        /* NCCL's grouped send/recv: the protocol and channels of each send
         * (a forced --proto or NCCL_PROTO still applies: a what-if). */
        nccl_tune_p2p po;
        nccl_tune_p2p_op(*tune, r->bytes / (uint64_t)r->nranks, &po);
        *algo = a != ALGO_AUTO ? a : ALGO_RING;
        *proto = p != PROTO_AUTO ? p : po.proto;
        *channels = r->channels > 0 ? r->channels : po.nchannels;
        return 0;
    }
    /* NCCL's own choice (models/nccl/nccl_tune.c, docs/model.md "NCCL's decisions"). */
    nccl_tune_op op;
    TRY(nccl_tune_op_choose(*tune, r->kind, r->bytes, r->dtype, ALGO_AUTO, PROTO_AUTO, &op, e));
    *algo = op.algo;
    *proto = op.proto;
    *channels = r->channels > 0 ? r->channels : op.nchannels;
    *threads = op.nthreads;
    return 0;
}

static int check_req(const coll_ctx *c, const coll_req *r, err *e)
{
    int ng = topo_ngpus(c->t);
    if (r->nranks < 1 || r->nranks > ng)
        return err_set(e, ERR_USAGE, "%d ranks requested but topology '%s' has %d GPUs",
                       r->nranks, topo_name(c->t), ng);
    if (r->bytes > COLL_MAX_BYTES)
        return err_set(e, ERR_USAGE, "message of %llu bytes is beyond the model's range (64 GiB)",
                       (unsigned long long)r->bytes);
    if (r->kind == COLL_BROADCAST && (r->root < 0 || r->root >= r->nranks))
        return err_set(e, ERR_USAGE, "root %d out of range", r->root);
    return 0;
}

/* Labels of the tasks of a flag barrier (coll.c cb_barrier). */
static int is_barrier_label(const char *l)
{
    return l && (!strcmp(l, "flag") || !strcmp(l, "flags") || !strcmp(l, "barrier") ||
                 !strcmp(l, "barrier-join"));
}

/* Split the makespan along the critical path (coll_result's fields). */
static int breakdown(sched *s, coll_result *out, err *e)
{
    (void)e;
    sim_ps sums[4];
    sched_path_sums(s, sums);
    out->fixed_ps += sums[0];
    out->barrier_ps += sums[1];
    out->transfer_ps += sums[2];
    out->contention_ps += sums[3];
    return 0;
}

/* Run r (its timeline to tl if not NULL); with ent, its link use into
 * ent->links (unbundled, so every rank's links carry their bytes). */
static int run(coll_ctx *c, const coll_req *r, coll_result *out, FILE *tl, cache_ent *ent,
               err *e)
{
    TRY(check_req(c, r, e));
    coll_algo a = ALGO_RING;
    coll_proto p = PROTO_SIMPLE;
    int nc = 1, threads = 0;
    const nccl_tune *tune = NULL;
    TRY(choose(c, r, &a, &p, &nc, &threads, &tune, e));
    coll_build_fn *fn = NULL;
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
        if (algos[i].algo == a && (algos[i].kinds & (1u << r->kind)))
            fn = algos[i].build;
    if (!fn)
        return err_set(e, ERR_USAGE, "algorithm %s does not implement %s", coll_algo_name(a),
                       coll_kind_name(r->kind));
    if (!c->f && !(c->f = fabric_new(c->t, e)))
        return e->code;
    fabric_disable(c->f, c->off);
    fabric_reset(c->f);
    int node[4096];
    for (int i = 0; i < r->nranks; i++)
        node[i] = topo_gpu_node(c->t, i);
    /* A timeline shows every rank's flows: no bundles then. */
    coll_build b = {.f = c->f, .t = c->t, .r = r, .algo = a, .proto = p, .channels = nc,
                    .threads = threads, .n = r->nranks, .node = node, .e = e, .tune = tune,
                    .stream = c->stream, .bundle = c->bundle && !tl && !ent,
                    .flag_tasks = c->flag_tasks};
    memset(out, 0, sizeof *out);
    out->algo = a;
    out->proto = p;
    out->channels = nc;
    out->threads = threads;
    if (r->nranks == 1) {
        /* One rank: NCCL copies the input to the output inside the GPU
         * (read + write of S at memory bandwidth) after a kernel's fixed
         * device-side cost; nothing crosses the fabric. */
        const topo_params *tp = topo_params_get(c->t);
        double copy = tp->gpu_mem_Bps > 0 ? 2.0 * (double)r->bytes / tp->gpu_mem_Bps : 0;
        out->time_ps = out->fixed_ps = tp->kernel_base_ps + (sim_ps)(copy * 1e12);
        out->channels = 1;
        return 0;
    }
    if (r->bytes == 0) {
        out->time_ps = out->fixed_ps = p != PROTO_AUTO ? nccl_start_ps(c->t, p, ALGO_RING) : 0;
        return 0;
    }
    sched *s = fabric_sched(c->f);
    /* A streamed graph keeps no ended task: a timeline is written as the
     * run goes. */
    sched_keep(s, 0);
    int rc = fn(&b) < 0 ? (e->code ? e->code
                                   : err_set(e, ERR_SYSTEM, "building %s failed",
                                             coll_algo_name(a)))
                        : 0;
    /* link tracks only when a timeline is asked; busy times for link use */
    sched_trace_links(s, tl ? 1 : ent ? 2 : 0);
    sched_path_class(s, is_barrier_label);
    char names[4096][16];
    const char *ptrs[4096];
    if (tl && !rc) {
        for (int i = 0; i < r->nranks; i++) {
            snprintf(names[i], sizeof names[i], "GPU %d", i);
            ptrs[i] = names[i];
        }
        sched_tl_names nm;
        coll_lane_names(&b, &nm);
        rc = sched_timeline_begin(s, tl, ptrs, r->nranks, &nm, e);
    }
    if (!rc)
        rc = sched_run(s, e);
    if (tl) {  /* finished (and let go) whether or not the run succeeded */
        err e2 = {0};
        int trc = sched_timeline_end(s, &e2);
        if (!rc && trc)
            rc = err_set(e, e2.code, "%s", e2.msg);
    }
    if (b.gen_free)
        b.gen_free(b.gen_state);
    TRY(rc);
    out->time_ps = sched_makespan(s);
    out->events = sched_events(s);
    TRY(breakdown(s, out, e));
    if (ent) {
        int nl = sched_nlinks(s);
        free(ent->links);
        ent->nlinks = 0;
        if (!(ent->links = malloc(sizeof *ent->links * (size_t)(nl > 0 ? nl : 1))))
            return err_set(e, ERR_SYSTEM, "out of memory");
        for (int i = 0; i < nl; i++)
            ent->links[i] = (coll_link_use){sched_link_bytes(s, i), sched_link_busy_ps(s, i)};
        ent->nlinks = nl;
    }
    return 0;
}

/* Predict through the cache; with links, the entry's link use too. */
static int predict(coll_ctx *c, const coll_req *r, coll_result *out, int links,
                   cache_ent **ent_out, err *e)
{
    coll_req k;
    canon(&k, r);
    cache_ent *slot = cache_slot(c, &k);
    if (slot && slot->used && (!links || slot->links)) {
        *out = slot->val;
        *ent_out = slot;
        return 0;
    }
    cache_ent got = {0};
    if (slot && slot->used) {  /* cached without its link use: the same run, unbundled */
        coll_result again;
        TRY(run(c, &k, &again, NULL, slot, e));
        *out = slot->val;
        *ent_out = slot;
        return 0;
    }
    int rc = run(c, &k, out, NULL, links ? &got : NULL, e);
    if (rc) {
        free(got.links);
        return rc;
    }
    c->computed++;
    slot = cache_slot(c, &k); /* the table may have grown meanwhile */
    if (!slot) {
        free(got.links);
        *ent_out = NULL;
        return links ? err_set(e, ERR_SYSTEM, "out of memory") : 0;
    }
    slot->key = k;
    slot->val = *out;
    slot->used = 1;
    slot->links = got.links;
    slot->nlinks = got.nlinks;
    c->len++;
    *ent_out = slot;
    return 0;
}

int coll_predict(coll_ctx *c, const coll_req *r, coll_result *out, err *e)
{
    cache_ent *ent;
    return predict(c, r, out, 0, &ent, e);
}

int coll_predict_links(coll_ctx *c, const coll_req *r, coll_result *out,
                       const coll_link_use **use, int *nlinks, err *e)
{
    cache_ent *ent = NULL;
    *use = NULL;
    *nlinks = 0;
    TRY(predict(c, r, out, 1, &ent, e));
    if (ent && ent->nlinks > 0) {
        *use = ent->links;
        *nlinks = ent->nlinks;
    }
    return 0;
}

const char *coll_ctx_link_name(const coll_ctx *c, int link)
{
    return c->f ? sched_link_name(fabric_sched(c->f), link) : "";
}

int coll_ctx_link_is_topo(const coll_ctx *c, int link)
{
    /* fabric_new makes the topology's links first, two per link (fabric.h) */
    return c->f && link >= 0 && link < 2 * topo_nlinks(fabric_topo(c->f));
}

uint64_t coll_ctx_computed(const coll_ctx *c) { return c->computed; }

int coll_predict_timeline(coll_ctx *c, const coll_req *r, coll_result *out, FILE *tl, err *e)
{
    coll_req k;
    canon(&k, r);
    return run(c, &k, out, tl, NULL, e);
}

/* --- builder helpers --------------------------------------------------- */

int cb_delay(coll_build *b, int rank, sim_ps dur_ps, const char *label)
{
    int id = sched_delay(fabric_sched(b->f), dur_ps, rank, label);
    if (id < 0)
        err_set(b->e, ERR_SYSTEM, "out of memory");
    return id;
}

int cb_dep(coll_build *b, int before, int after)
{
    if (before < 0 || after < 0)
        return 0;
    if (sched_dep(fabric_sched(b->f), before, after) < 0)
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    return 0;
}

sim_ps cb_hop_lat_ps(const coll_build *b, int from, int to)
{
    int src = b->node[from], dst = b->node[to];
    if (cb_uses_p2p(b, from, to))
        return fabric_lat_ps(b->f, FAB_WRITE, src, dst);
    int mem = fabric_hostmem_of(b->f, dst);
    return mem < 0 ? 0 : fabric_lat_ps(b->f, FAB_WRITE, src, mem) +
                             fabric_lat_ps(b->f, FAB_READ, mem, dst);
}

/* Simple's flag follows a fence (prims_simple.h postPeer: fence_acq_rel_sys
 * after the slice's stores): it leaves once the writes have landed, the
 * route's latency after the last byte, and takes one write latency to the
 * receiver. The fence and the flag are the sync warp's (the post threads
 * are the block's last, outside nworkers): the workers go on with the
 * block's next slice meanwhile, so they delay the receiver, not the
 * sender's next transfer. LL and LL128 carry their flags in the data. */
sim_ps cb_hop_deliver_ps(const coll_build *b, int from, int to)
{
    const proto_info *pi = nccl_proto(b->proto);
    return cb_hop_lat_ps(b, from, to) +
           pi->flag_hops * fabric_lat_ps(b->f, FAB_WRITE, b->node[from], b->node[to]);
}

/* The bytes an SHM receiver's block keeps in flight while it loads a slice
 * from host memory. Simple: every worker thread issues ncclCollUnroll() = 8
 * (SM80+, src/include/device.h) 16-byte loads of the FIFO before it reduces
 * and stores them (src/device/common_kernel.h reduceCopyPacks); the workers
 * are the ring's Simple threads (tuning.cc maxThreads: 512, or 256 when
 * bwIntra x nChannels <= PCI_BW), the block's extra sync warp aside
 * (prims_simple.h: nworkers = nthreads - WARP_SIZE). LL and LL128: 0, the
 * reference block (their trips are not measured against host memory). */
static double shm_load_inflight_B(const coll_build *b)
{
    if (b->proto != PROTO_SIMPLE)
        return 0;
    int workers = b->tune ? b->tune->max_threads[1][2] : 512;
    return (double)workers * nccl_copy_thread_B(b);
}

int cb_nccl_hop(coll_build *b, int from, int to, double bytes, double weight,
                const char *label)
{
    return cb_nccl_hop_lat(b, from, to, bytes, weight, 1, 0, 0, label);
}

int cb_nccl_hop_lat(coll_build *b, int from, int to, double bytes, double weight, int with_lat,
                    int recv, double local_B, const char *label)
{
    const proto_info *pi = nccl_proto(b->proto);
    sim_ps extra = nccl_step_ps(b->t, b->proto);
    int src = b->node[from], dst = b->node[to];
    /* Without its latency the hop ends when its last byte has left (the
     * fabric adds the route's latency; cancel it) and the flag is not
     * waited for: cb_hop_deliver_ps is the rest. */
    if (!with_lat)
        extra -= cb_hop_lat_ps(b, from, to);
    else if (pi->flag_hops)
        extra += pi->flag_hops * fabric_lat_ps(b->f, FAB_WRITE, src, dst);
    double wire = pi->wire * weight;
    int p2p = cb_uses_p2p(b, from, to);
    /* One channel is one thread block: its stores (wire bytes: LL sends a
     * flag with every 8 bytes of data) bound the channel's flows together,
     * at its depth up to its ceiling (fabric_xfer_block). */
    if (p2p) {
        fabric_leg leg = {FAB_WRITE, src, dst};
        fabric_block blk = nccl_block(b, from, recv, local_B);
        blk.blocks = weight;
        return fabric_xfer_block(b->f, &leg, 1, &blk, bytes, wire, extra, from, label, b->e);
    }
    /* SHM: the sender writes into host memory near the receiver, which
     * loads it over its own PCIe link (NCCL_SHM_LOCALITY=2), slice by slice:
     * one pipelined transfer over both routes, so the hop starts when its
     * data is ready like any other. With NCCL_SHM_USE_CUDA_MEMCPY=1 Simple's
     * steps are copied by a proxy's cudaMemcpyAsync instead (shm.cc
     * shmSendProxyProgress): the sender's kernel stores into a device FIFO
     * and its copy engine writes host memory (mode 1, the default), or the
     * receiver's copy engine reads host memory into a device FIFO (mode 2),
     * or both (3); each copy pays the engine's setup. */
    int mem = fabric_hostmem_of(b->f, dst);
    if (mem < 0)
        return err_set(b->e, ERR_USAGE, "SHM transport needs host memory in the topology"), -1;
    const nccl_env *env = &b->r->env;
    int mode = env->shm_memcpy && b->proto == PROTO_SIMPLE
                   ? (env->shm_memcpy_mode ? env->shm_memcpy_mode : 1) : 0;
    sim_ps ce = topo_copy_setup_ps(topo_params_get(b->t), 1) * ((mode & 1) + (mode >> 1));
    return fabric_xfer_staged(b->f, mode & 1 ? FAB_CE_WRITE : FAB_WRITE, src, mem,
                              mode & 2 ? FAB_CE_READ : FAB_READ, dst, bytes, wire, pi->wire,
                              shm_load_inflight_B(b), extra + ce, from, label, b->e);
}

int cb_ring_shm_sm(const coll_build *b, int from, int to)
{
    return !cb_uses_p2p(b, from, to) && fabric_hostmem_of(b->f, b->node[to]) >= 0 &&
           !(b->r->env.shm_memcpy && b->proto == PROTO_SIMPLE) &&
           !(fabric_disabled(b->f) & FAB_NO_SHM_ORDER);
}

/* Over SM SHM the FIFO, tail and head live in host memory on the receiver's
 * side (shm.cc shmRecvSetup, NCCL_SHM_LOCALITY 2): the sender's stores and
 * its flag land there one write latency after they leave, and the receiver
 * sees the flag one read round trip after it landed (its poll). A first
 * line leaves a step that receives over SM SHM only once the step's own
 * first loads are back, one read round trip after it started. */
sim_ps cb_ring_deliver_ps(const coll_build *b, int from, int to, int line, int recv)
{
    int up = (from + b->n - 1) % b->n, src = b->node[from];
    sim_ps in = line && recv && cb_ring_shm_sm(b, up, from)
                    ? fabric_lat_ps(b->f, FAB_READ, fabric_hostmem_of(b->f, src), src) : 0;
    if (!cb_ring_shm_sm(b, from, to))
        return line ? in + cb_hop_lat_ps(b, from, to) : cb_hop_deliver_ps(b, from, to);
    int dst = b->node[to], mem = fabric_hostmem_of(b->f, dst);
    sim_ps wl = fabric_lat_ps(b->f, FAB_WRITE, src, mem);
    /* (with the receiver's poll in its program order, cb_ring_shm_poll_ps,
     * the slice is delivered once its flag has landed) */
    sim_ps see = cb_ring_shm_poll_ps(b, to, from) ? 0 : fabric_lat_ps(b->f, FAB_READ, mem, dst);
    return line ? in + wl : wl + nccl_proto(b->proto)->flag_hops * (wl + see);
}

sim_ps cb_ring_shm_poll_ps(const coll_build *b, int rank, int from)
{
    /* (the sender receives over SM SHM too: both keep the same pace) */
    int lockstep = cb_ring_shm_sm(b, (from + b->n - 1) % b->n, from);
    if (b->proto != PROTO_SIMPLE || !cb_ring_shm_sm(b, from, rank) || !lockstep ||
        (fabric_disabled(b->f) & FAB_NO_SHM_POLL))
        return 0;
    int dst = b->node[rank];
    return fabric_lat_ps(b->f, FAB_READ, fabric_hostmem_of(b->f, dst), dst);
}

int cb_ring_step(coll_build *b, int from, int to, double bytes, double weight, int with_lat,
                 int recv, double local_B, const char *label)
{
    int p2p = cb_uses_p2p(b, from, to);
    /* What it loads came over the hop into it (rank from - 1: with a period
     * `from` stands for its class, and that hop is alike for all of it). */
    int up = (from + b->n - 1) % b->n, in_shm = recv && cb_ring_shm_sm(b, up, from);
    if (!p2p && !cb_ring_shm_sm(b, from, to))
        return cb_nccl_hop_lat(b, from, to, bytes, weight, with_lat, recv, local_B, label);
    const proto_info *pi = nccl_proto(b->proto);
    int src = b->node[from], dst = b->node[to];
    fabric_block blk = nccl_block(b, from, recv, local_B);
    blk.blocks = weight;
    fabric_leg legs[2];
    int n = 0;
    /* Over SHM the block loads what it received from the FIFO in its own
     * host memory while it stores onward (reduceCopy). */
    if (in_shm)
        legs[n++] = (fabric_leg){FAB_READ, fabric_hostmem_of(b->f, src), src};
    sim_ps wl, flag;
    if (p2p) {
        legs[n++] = (fabric_leg){FAB_WRITE, src, dst};
        flag = wl = fabric_lat_ps(b->f, FAB_WRITE, src, dst);
    } else {
        int out = fabric_hostmem_of(b->f, dst);
        legs[n++] = (fabric_leg){FAB_WRITE, src, out};
        wl = fabric_lat_ps(b->f, FAB_WRITE, src, out);
        flag = wl + fabric_lat_ps(b->f, FAB_READ, out, dst);
    }
    /* The flow's latency is its legs' (the first loads' round trip, the
     * stores' one way); without it the step ends when its last byte left. */
    sim_ps extra = nccl_step_ps(b->t, b->proto);
    if (!with_lat)
        extra -= wl;
    else if (pi->flag_hops)
        extra += pi->flag_hops * flag;
    if (recv)
        extra += cb_ring_shm_poll_ps(b, from, up);
    return fabric_xfer_block(b->f, legs, n, &blk, bytes, pi->wire * weight, extra, from, label,
                             b->e);
}

int cb_ring_shm_recv(coll_build *b, int rank, int from, double bytes, double weight,
                     const char *label)
{
    if (!cb_ring_shm_sm(b, from, rank))
        return -2;
    int dst = b->node[rank];
    fabric_leg leg = {FAB_READ, fabric_hostmem_of(b->f, dst), dst};
    fabric_block blk = nccl_block(b, rank, 1, 1);
    blk.blocks = weight;
    return fabric_xfer_block(b->f, &leg, 1, &blk, bytes, nccl_proto(b->proto)->wire * weight,
                             nccl_step_ps(b->t, b->proto) + cb_ring_shm_poll_ps(b, rank, from),
                             rank, label, b->e);
}

int cb_uses_p2p(const coll_build *b, int from, int to)
{
    /* Above NCCL's local ranks the tables cover the searched GPUs only. */
    return b->tune && b->tune->searched == b->tune->nranks
               ? b->tune->p2p[from][to]
               : nccl_uses_p2p(b->t, &b->r->env, from, to);
}

int cb_generate(coll_build *b, sched_gen_fn *fn, void *state, void (*free_fn)(void *))
{
    b->gen_state = state;
    b->gen_free = free_fn;
    sched *s = fabric_sched(b->f);
    if (b->stream) {
        sched_generate(s, fn, state);
        return 0;
    }
    int rc;
    while ((rc = fn(state, s)) > 0)
        ;
    return rc < 0 ? -1 : 0;
}

int cb_barrier(coll_build *b, const int *ready, int *done)
{
    int n = b->n, np = b->period > 0 ? b->period : n;
    /* A flag carries no bytes: its flow takes its route's latency and
     * nothing else, the same as a delay of it, which builds no link list; a
     * timeline (b->bundle off) keeps the flow. The delay waits on one task
     * and releases one, so it is an edge of that latency into a join
     * (sched_dep_lat: the same run, event for event, without a task and an
     * event per flag; b->flag_tasks keeps the delays, for the tests). */
    int edges = n <= 64 && b->bundle && !b->flag_tasks;
    sched *s = fabric_sched(b->f);
    for (int r = 0; r < np; r++) {
        done[r] = edges ? sched_join(s, 0, r, "barrier") : cb_delay(b, r, 0, "barrier");
        if (done[r] < 0 && edges)
            err_set(b->e, ERR_SYSTEM, "out of memory");
        if (coll_lane(b, done[r], CL_BARRIER, CL_NONE, 0) < 0)
            return -1;
    }
    if (n <= 64) {
        for (int r = 0; r < n; r++)
            for (int q = 0; q < np; q++) {
                if (q == r)
                    continue;
                if (edges) {
                    sim_ps lat = fabric_lat_ps(b->f, FAB_WRITE, b->node[r], b->node[q]);
                    if (sched_dep_lat(s, ready[r % np], done[q], lat, "flag"))
                        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
                    continue;
                }
                int fl = b->bundle ? cb_delay(b, r % np, fabric_lat_ps(b->f, FAB_WRITE, b->node[r],
                                                                       b->node[q]), "flag")
                                   : fabric_xfer(b->f, FAB_WRITE, b->node[r], b->node[q], 0, 1,
                                                 0, r, "flag", b->e);
                coll_lane(b, fl, CL_FLAG, q, 0);
                if (fl < 0 || cb_dep(b, ready[r % np], fl) || cb_dep(b, fl, done[q]))
                    return -1;
            }
        return 0;
    }
    /* Many ranks: each rank's flags go out as one group; a join collects
     * them (the barrier ends when the slowest flag has landed). */
    int join = coll_lane(b, cb_delay(b, 0, 0, "barrier-join"), CL_BARRIER, CL_ALL, 0);
    if (join < 0)
        return -1;
    int *peers = malloc(sizeof(int) * (size_t)n);
    if (!peers)
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    int rc = 0;
    for (int r = 0; r < np && !rc; r++) {
        int k = 0;
        for (int q = 0; q < n; q++)
            if (q != r)
                peers[k++] = b->node[q];
        /* Flags carry no bytes: the group takes its longest route's latency
         * and nothing else, as a delay of that latency does, which holds no
         * link list of n routes (a 4,096-GPU barrier's groups: 200 MB). A
         * timeline (b->bundle off) keeps the group, to show its links. With
         * a period the ranks r < period stand for their classes, whose
         * flags land as theirs do. */
        int fl;
        if (b->bundle) {
            sim_ps lat = 0;
            for (int i = 0; i < k; i++) {
                sim_ps l = fabric_lat_ps(b->f, FAB_WRITE, b->node[r], peers[i]);
                lat = l > lat ? l : lat;
            }
            fl = cb_delay(b, r, lat, "flags");
        } else {
            fl = fabric_xfer_group(b->f, FAB_WRITE, b->node[r], peers, k, 0, 1, 0, r, "flags",
                                   b->e);
        }
        coll_lane(b, fl, CL_FLAG, CL_ALL, 0);
        rc = fl < 0 || cb_dep(b, ready[r], fl) || cb_dep(b, fl, join);
    }
    for (int r = 0; r < np && !rc; r++)
        rc = cb_dep(b, join, done[r]);
    free(peers);
    return rc ? -1 : 0;
}
