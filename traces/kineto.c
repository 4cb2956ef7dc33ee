/* Kineto JSON importer. yajl tokenizes chunks read through sim/input
 * (plain or gzip, bounded; a compression bomb refused there); the
 * callbacks fill one event at a time (a fixed struct: name truncated to 511
 * bytes, the few args that matter) and, when the event closes, keep a
 * compact record if it is a GPU op, a launch call, a step annotation or an
 * op that carries a collective's size. After the parse, records are sorted
 * and linked: kernel -> launch (correlation) -> enclosing annotation or CPU
 * op (External id or time containment on the launching thread). The size of
 * a collective is taken from the first source that has it: kernel args,
 * record_param_comms, an nccl:* annotation, the enclosing CPU op. Times are
 * integer nanoseconds parsed exactly from the decimal text. */
#include "traces/kineto.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "sim/input.h"

enum { NAME_MAX_BYTES = 512, SHORT = 64, NTYPES = 8, DEPTH_MAX = 32, CHUNK = 1 << 16,
       TOKEN_MAX_BYTES = 4 << 20,  /* one JSON string or number */
       BOMB_RATIO = 100,           /* inflated / compressed bytes past 64 MiB; real: 13-17x */
       EVENTS_MAX = 1 << 25 };
#define KINETO_MAX_BYTES (4ull << 30)   /* inflated */

/* ---- compact records -------------------------------------------------- */

typedef struct gpu_op {
    int64_t ts, dur, corr, ext;
    int32_t stream, device;
    int8_t comm;          /* coll_kind, -1 = compute */
    int8_t algo;          /* coll_algo hint */
    int8_t elem;          /* element bytes from args, 0 unknown */
    int8_t graph;         /* launched by a graph launch */
    int8_t first;         /* the first GPU op of its launch call (pays its CPU time) */
    int32_t group;
    int64_t lts, ldur;    /* its launch call on the CPU (ts, duration), lts -1 none */
    int32_t comm_idx;     /* into comms (collectives, in GPU start order), -1 compute */
    int64_t bytes;        /* from kernel args, -1 unknown */
    int64_t step;         /* index into steps, -1 none */
    int32_t name;         /* into the rank's kernel names, -1 none */
} gpu_op;

/* A CUDA/HIP runtime call on a host thread. */
typedef enum rt_kind { RT_OTHER, RT_LAUNCH, RT_GRAPH, RT_SYNC, RT_COPY } rt_kind;

typedef struct launch {
    int64_t corr, tid, ts, dur;
    int graph;
    int8_t kind;          /* rt_kind */
} launch;

typedef struct cpu_sized {
    int64_t ext, tid, ts, end;
    int64_t bytes;
    int8_t kind;          /* coll_kind or -1 */
    int8_t src;           /* kineto_size_src */
    int8_t elem;
} cpu_sized;

typedef struct step_rec {
    int64_t ts, end;
    trace_phase phase;
    double tokens;        /* 0 = not stated */
    int kind;             /* 1 = step[...], 0 = ProfilerStep# */
} step_rec;

#define VEC(T) struct { T *v; long n, cap; }
#define VEC_PUSH(vec, x)                                                              \
    ((vec).n == (vec).cap ? vec_grow((void **)&(vec).v, &(vec).cap, sizeof *(vec).v) : 0, \
     (vec).v ? ((vec).v[(vec).n++] = (x), 0) : -1)

static int vec_grow(void **v, long *cap, size_t elem)
{
    long ncap = *cap ? *cap * 2 : 256;
    void *p = realloc(*v, (size_t)ncap * elem);
    if (!p) {
        free(*v);
        *v = NULL;
        return -1;
    }
    *v = p;
    *cap = ncap;
    return 0;
}

/* A GPU op's name as a trace op carries it (a word, traces/trace.h). */
typedef struct kname {
    char s[TRACE_NAME_MAX];
} kname;

struct kineto_rank {
    char path[512];
    int rank, world;
    long nevents;
    VEC(gpu_op) gpu;
    VEC(launch) launches;
    VEC(cpu_sized) cpu;
    VEC(step_rec) steps;
    VEC(kineto_comm) comms;
    VEC(launch) syncs;    /* blocking calls (stream/device/event sync, sync copies), by ts */
    VEC(kname) names;     /* the GPU ops' short names, each once (gpu_op.name) */
    int32_t *nhash;       /* open addressing on names: indices, -1 empty */
    long nhash_cap;
    long dropped;         /* kernels outside every step / on other devices */
    int device;
    kineto_host host;
};

/* ---- the event being parsed ------------------------------------------- */

typedef struct event {
    char ph[8], cat[SHORT], name[NAME_MAX_BYTES];
    int64_t ts, dur;
    int has_ts;
    int64_t pid, tid;
    int64_t ext, corr, stream, device;
    char coll_name[SHORT], dtype[SHORT];
    int64_t in_nelems, out_nelems, group;
    /* Input Dims: product of each top-level entry (-1 if empty), types */
    int ndims;
    int64_t dims_prod[NTYPES];
    int dims_len[NTYPES];
    int ntypes;
    char types[NTYPES][32];
} event;

typedef struct parser {
    kineto_rank *k;
    int depth;                     /* containers open */
    char key[DEPTH_MAX][SHORT];    /* key that opened the container at depth d+1 */
    int is_array[DEPTH_MAX];
    char cur_key[SHORT];           /* last map key at the current depth */
    int in_events;                 /* inside top-level traceEvents */
    event ev;
    int dims_idx;                  /* Input Dims entry being read */
    char fail[256];                /* error from a callback */
} parser;

/* Saturating helpers: fuzzed or absurd numbers must not overflow. */
static int64_t clamp_d(double v)
{
    if (!(v == v))
        return 0;
    if (v > 9e18)
        return INT64_C(9000000000000000000);
    if (v < -9e18)
        return -INT64_C(9000000000000000000);
    return (int64_t)v;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0)
        return -1;
    if (a != 0 && b > INT64_MAX / a)
        return INT64_MAX;
    return a * b;
}

/* Exact decimal -> ns: "1365627869562.139" us -> 1365627869562139 ns. */
static int64_t us_text_to_ns(const char *s, size_t n)
{
    char buf[64];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (strpbrk(buf, "eE"))
    {
        int64_t v = clamp_d(strtod(buf, NULL) * 1000.0 + (buf[0] == '-' ? -0.5 : 0.5));
        return v > INT64_C(4000000000000000000)    ? INT64_C(4000000000000000000)
               : v < -INT64_C(4000000000000000000) ? -INT64_C(4000000000000000000)
                                                   : v;
    }
    int neg = buf[0] == '-';
    const char *p = buf + neg;
    int64_t ip = 0, frac = 0;
    while (isdigit((unsigned char)*p) && ip < (INT64_MAX - 9) / 10)
        ip = ip * 10 + (*p++ - '0');
    int digits = 0;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            if (digits < 3)
                frac = frac * 10 + (*p - '0');
            else if (digits == 3 && *p >= '5')
                frac++;
            digits++;
            p++;
        }
    }
    for (; digits < 3; digits++)
        frac *= 10;
    if (ip > INT64_C(4000000000000000))   /* |t| <= 4e18 ns: sums cannot overflow */
        ip = INT64_C(4000000000000000);
    int64_t v = ip * 1000 + frac;
    return neg ? -v : v;
}

static int64_t text_to_i64(const char *s, size_t n)
{
    char buf[64];
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (strpbrk(buf, ".eE"))
        return clamp_d(strtod(buf, NULL));
    return strtoll(buf, NULL, 10);
}

/* Element size of a dtype as PyTorch / Kineto writes it. */
static int elem_size(const char *t)
{
    static const struct { const char *name; int size; } tab[] = {
        {"c10::BFloat16", 2}, {"BFloat16", 2}, {"c10::Half", 2}, {"Half", 2},
        {"bf16", 2}, {"fp16", 2}, {"__nv_bfloat16", 2}, {"half", 2},
        {"float", 4}, {"Float", 4}, {"fp32", 4}, {"int", 4}, {"Int", 4},
        {"double", 8}, {"Double", 8}, {"long int", 8}, {"long", 8}, {"Long", 8},
        {"int64_t", 8}, {"unsigned char", 1}, {"Byte", 1}, {"signed char", 1},
        {"Char", 1}, {"bool", 1}, {"Bool", 1}, {"c10::Float8_e4m3fn", 1},
        {"Float8_e4m3fn", 1},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(t, tab[i].name))
            return tab[i].size;
    return 0;
}

/* A collective's kind from a c10d name ("allreduce", "_allgather_base",
 * "all_to_all", "nccl:all_reduce" ...); -1 if it is not one. */
static int kind_from_text(const char *s)
{
    char low[SHORT];
    size_t j = 0;
    for (size_t i = 0; s[i] && j + 1 < sizeof low; i++)
        if (s[i] != '_' && s[i] != ' ')
            low[j++] = (char)tolower((unsigned char)s[i]);
    low[j] = 0;
    static const struct { const char *pat; coll_kind kind; } tab[] = {
        {"allreduce", COLL_ALLREDUCE}, {"reducescatter", COLL_REDUCESCATTER},
        {"allgather", COLL_ALLGATHER}, {"alltoall", COLL_ALLTOALL},
        {"broadcast", COLL_BROADCAST}, {"sendrecv", COLL_ALLTOALL},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strstr(low, tab[i].pat))
            return (int)tab[i].kind;
    return -1;
}

/* Classify a GPU kernel name: returns coll_kind or -1 (compute); algo hint.
 * NCCL names give the collective, not the algorithm (trace-formats.md). */
static int classify_kernel(const char *name, coll_algo *algo)
{
    *algo = ALGO_AUTO;
    static const char *const nccl_prefixes[] = {"ncclDevKernel_", "ncclKernel_"};
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(name, nccl_prefixes[i]);
        if (p) {
            p += strlen(nccl_prefixes[i]);
            char tok[SHORT];
            size_t n = strcspn(p, "_(");
            if (n >= sizeof tok)
                n = sizeof tok - 1;
            memcpy(tok, p, n);
            tok[n] = 0;
            int k = kind_from_text(tok);
            if (k >= 0)
                return k;
            return (int)COLL_ALLREDUCE;   /* ncclDevKernel_Generic, Reduce: resolved by args */
        }
    }
    static const struct { const char *pat; coll_algo algo; } custom[] = {
        {"cross_device_reduce_1stage", ALGO_ONESHOT}, {"cross_device_reduce_2stage", ALGO_TWOSHOT},
        {"one_shot_all_reduce", ALGO_ONESHOT}, {"two_shot_all_reduce", ALGO_TWOSHOT},
        {"multimem_all_reduce", ALGO_AUTO}, {"allreduce_fusion_kernel", ALGO_AUTO},
        {"quick_all_reduce", ALGO_AUTO}, {"mscclpp", ALGO_AUTO},
        {"one_shot", ALGO_ONESHOT}, {"two_shot", ALGO_TWOSHOT},
    };
    for (size_t i = 0; i < sizeof custom / sizeof custom[0]; i++)
        if (strstr(name, custom[i].pat)) {
            *algo = custom[i].algo;
            return (int)COLL_ALLREDUCE;
        }
    return -1;
}

/* CPU ops whose Input Dims give an inference all-reduce's size. */
static int is_comm_cpu_op(const char *name)
{
    static const char *const pats[] = {"all_reduce", "allreduce", "symm_mem::", "all_gather",
                                       "allgather", "reduce_scatter", "all_to_all",
                                       "broadcast", "custom_ar"};
    if (!strcmp(name, "record_param_comms"))
        return 0;
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
        if (strstr(name, pats[i]))
            return 1;
    return 0;
}

/* Runtime calls by what they do to the host timeline (CUDA and HIP names;
 * cudaMemcpy without Async and hipMemcpyWithStream block the thread). */
static int rt_classify(const char *name)
{
    static const struct { const char *name; int exact; rt_kind kind; } tab[] = {
        {"GraphLaunch", 0, RT_GRAPH},        {"LaunchKernel", 0, RT_LAUNCH},
        {"LaunchCooperativeKernel", 0, RT_LAUNCH},
        {"StreamSynchronize", 0, RT_SYNC},   {"DeviceSynchronize", 0, RT_SYNC},
        {"EventSynchronize", 0, RT_SYNC},    {"CtxSynchronize", 0, RT_SYNC},
        {"cudaMemcpy", 1, RT_SYNC},          {"hipMemcpy", 1, RT_SYNC},
        {"hipMemcpyWithStream", 1, RT_SYNC}, {"cuMemcpyDtoH_v2", 1, RT_SYNC},
        {"MemcpyAsync", 0, RT_COPY},         {"MemsetAsync", 0, RT_COPY},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (tab[i].exact ? !strcmp(name, tab[i].name) : strstr(name, tab[i].name) != NULL)
            return tab[i].kind;
    return RT_OTHER;
}

/* Copy s[0..n) into out (size cap) with other characters than letters,
 * digits and _.:- as one '_', none at the ends. */
static void word_copy(const char *s, size_t n, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < cap; i++) {
        char c = s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("_.:-", c))
            out[j++] = c;
        else if (j && out[j - 1] != '_')
            out[j++] = '_';
    }
    while (j && out[j - 1] == '_')
        j--;
    out[j] = 0;
}

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The short word of a GPU op's name, as a trace op carries it (traces/trace.h):
 * for a kernel the function's own name: the last word before the parameters,
 * found with a stack of the '<' and '(' open (template arguments may hold
 * parentheses and comparisons, "(((8)>(0)))", and a long name may be cut
 * before its parameters end), without its template arguments and namespaces:
 * "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" ->
 * "vectorized_elementwise_kernel"; a generic name ("Kernel", "kernel",
 * "device_kernel") takes its first template argument when that is a word
 * ("cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>(...)" ->
 * "cutlass_80_tensorop_s1688gemm_..."); a copy or memset is its text before
 * any '(' ("Memcpy DtoD (Device -> Device)" -> "Memcpy_DtoD"). "" if nothing
 * is left. */
static void gpu_op_word(const char *full, int kernel, char *out, size_t cap)
{
    size_t len = strlen(full);
    if (!kernel) {
        const char *p = strchr(full, '(');
        word_copy(full, p ? (size_t)(p - full) : len, out, cap);
        return;
    }
    enum { STACK = 256 };
    char st[STACK];
    int d = 0;
    size_t tok = 0, end = len, targ = 0;   /* targ: the token's first '<' (0: none) */
    for (size_t i = 0; i < len; i++) {
        char c = full[i];
        if (d == 0 && c == ' ') {
            tok = i + 1;
            targ = 0;
            continue;
        }
        if (d == 0 && c == '(') {
            if (!strncmp(full + i, "(anonymous namespace)", 21)) {
                i += 20;
                continue;
            }
            end = i;
            break;
        }
        if (d == 0 && c == '<' && !targ)
            targ = i;
        if ((c == '<' || c == '(') && d < STACK)
            st[d++] = c;
        else if (c == '>' && d > 0 && st[d - 1] == '<')
            d--;
        else if (c == ')' && d > 0 && st[d - 1] == '(')
            d--;
    }
    size_t nend = targ ? targ : end, start = tok;
    for (size_t i = tok; i + 1 < nend; i++)
        if (full[i] == ':' && full[i + 1] == ':')
            start = i + 2;
    word_copy(full + start, nend > start ? nend - start : 0, out, cap);
    static const char *const generic[] = {"Kernel", "kernel", "device_kernel", "Kernel2"};
    int gen = 0;
    for (size_t i = 0; i < sizeof generic / sizeof *generic; i++)
        gen |= !strcmp(out, generic[i]);
    if (gen && targ) {
        size_t a = targ + 1, b = a;
        while (b < len && ident_char(full[b]))
            b++;
        if (b - a >= 8 && (full[b] == ',' || full[b] == '>'))
            word_copy(full + a, b - a, out, cap);
    }
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The index of name w in k's names, added on first sight; -1 for "" or on OOM
 * (then k->names.v is NULL). */
static int32_t name_intern(kineto_rank *k, const char *w, int *oom)
{
    if (!w[0])
        return -1;
    if (2 * (k->names.n + 1) > k->nhash_cap) {
        long cap = k->nhash_cap ? 2 * k->nhash_cap : 256;
        int32_t *h = malloc(sizeof *h * (size_t)cap);
        if (!h) {
            *oom = 1;
            return -1;
        }
        for (long i = 0; i < cap; i++)
            h[i] = -1;
        for (long i = 0; i < k->names.n; i++) {
            uint32_t at = name_hash(k->names.v[i].s) & (uint32_t)(cap - 1);
            while (h[at] >= 0)
                at = (at + 1) & (uint32_t)(cap - 1);
            h[at] = (int32_t)i;
        }
        free(k->nhash);
        k->nhash = h;
        k->nhash_cap = cap;
    }
    uint32_t at = name_hash(w) & (uint32_t)(k->nhash_cap - 1);
    while (k->nhash[at] >= 0) {
        if (!strcmp(k->names.v[k->nhash[at]].s, w))
            return k->nhash[at];
        at = (at + 1) & (uint32_t)(k->nhash_cap - 1);
    }
    kname nm;
    snprintf(nm.s, sizeof nm.s, "%s", w);
    if (VEC_PUSH(k->names, nm)) {
        *oom = 1;
        return -1;
    }
    k->nhash[at] = (int32_t)(k->names.n - 1);
    return k->nhash[at];
}

static void event_reset(event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->ext = ev->corr = ev->stream = ev->device = -1;
    ev->in_nelems = ev->out_nelems = ev->group = -1;
    ev->pid = ev->tid = -1;
}

/* Bytes of the first non-empty Input Dims entry with a known type. */
static int64_t input_bytes(const event *ev, int *elem)
{
    for (int i = 0; i < ev->ndims && i < NTYPES; i++)
        if (ev->dims_len[i] > 0) {
            int es = i < ev->ntypes ? elem_size(ev->types[i]) : 0;
            if (es <= 0)
                return -1;
            *elem = es;
            return sat_mul(ev->dims_prod[i], es);
        }
    return -1;
}

static int parse_step(const char *name, step_rec *s)
{
    memset(s, 0, sizeof *s);
    s->phase = PHASE_OTHER;
    if (!strncmp(name, "ProfilerStep#", 13)) {
        s->kind = 0;
        return 1;
    }
    if (strncmp(name, "step[", 5) != 0)
        return 0;
    s->kind = 1;
    const char *m = name + 5;
    if (!strncmp(m, "DECODE", 6) || !strncmp(m, "IDLE", 4))
        s->phase = PHASE_DECODE;
    else if (!strncmp(m, "TARGET_VERIFY", 13))
        s->phase = PHASE_VERIFY;
    else if (!strncmp(m, "DRAFT", 5))
        s->phase = PHASE_DRAFT;
    else if (!strncmp(m, "EXTEND", 6) || !strncmp(m, "MIXED", 5))
        s->phase = PHASE_PREFILL;
    const char *bs = strstr(m, "bs=");
    if (bs && s->phase == PHASE_DECODE)
        s->tokens = strtod(bs + 3, NULL);
    return 1;
}

static int event_done(parser *p)
{
    event *ev = &p->ev;
    kineto_rank *k = p->k;
    if (++k->nevents > EVENTS_MAX) {
        snprintf(p->fail, sizeof p->fail, "more than %d events: split the trace", EVENTS_MAX);
        return 1;
    }
    if (strcmp(ev->ph, "X") != 0 || !ev->has_ts)
        return 0;
    const char *cat = ev->cat;
    int rc = 0;
    if (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset")) {
        gpu_op g = {0};
        g.ts = ev->ts;
        g.dur = ev->dur > 0 ? ev->dur : 0;
        g.corr = ev->corr;
        g.ext = ev->ext;
        g.stream = (int32_t)(ev->stream >= 0 ? ev->stream : ev->tid);
        g.device = (int32_t)(ev->device >= 0 ? ev->device : ev->pid);
        g.bytes = -1;
        g.step = -1;
        g.comm_idx = -1;
        coll_algo algo = ALGO_AUTO;
        int kind = !strcmp(cat, "kernel") ? classify_kernel(ev->name, &algo) : -1;
        if (kind >= 0 && ev->coll_name[0]) {
            int k2 = kind_from_text(ev->coll_name);
            if (k2 >= 0)
                kind = k2;
        }
        g.comm = (int8_t)kind;
        g.algo = (int8_t)algo;
        if (kind >= 0 && (ev->in_nelems >= 0 || ev->out_nelems >= 0)) {
            int es = elem_size(ev->dtype);
            int64_t n = ev->in_nelems > ev->out_nelems ? ev->in_nelems : ev->out_nelems;
            if (es > 0 && n >= 0) {
                g.bytes = sat_mul(n, es);
                g.elem = (int8_t)es;
            }
        }
        g.group = (int32_t)(ev->group > 0 ? ev->group : 0);
        char w[TRACE_NAME_MAX];
        int oom = 0;
        gpu_op_word(ev->name, !strcmp(cat, "kernel"), w, sizeof w);
        g.name = name_intern(k, w, &oom);
        rc = oom ? -1 : VEC_PUSH(k->gpu, g);
    } else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver")) {
        launch l = {ev->corr, ev->tid, ev->ts, ev->dur > 0 ? ev->dur : 0,
                    strstr(ev->name, "GraphLaunch") != NULL, (int8_t)rt_classify(ev->name)};
        k->host.runtime_calls++;
        if (l.kind == RT_LAUNCH)
            k->host.launches++;
        else if (l.kind == RT_GRAPH)
            k->host.graph_launches++;
        else if (l.kind == RT_COPY)
            k->host.copies++;
        if (l.kind == RT_SYNC) {
            k->host.syncs++;
            k->host.sync_us += (double)l.dur / 1e3;
            rc = VEC_PUSH(k->syncs, l);
        } else if (ev->corr >= 0) {
            rc = VEC_PUSH(k->launches, l);
        }
    } else if (!strcmp(cat, "user_annotation") || !strcmp(cat, "cpu_op")) {
        if (!strcmp(cat, "cpu_op")) {
            k->host.cpu_ops++;
            k->host.cpu_op_us += (double)(ev->dur > 0 ? ev->dur : 0) / 1e3;
        }
        step_rec s;
        if (!strcmp(cat, "user_annotation") && parse_step(ev->name, &s)) {
            s.ts = ev->ts;
            s.end = ev->ts + ev->dur;
            return VEC_PUSH(k->steps, s);
        }
        cpu_sized c = {0};
        c.ext = ev->ext;
        c.tid = ev->tid;
        c.ts = ev->ts;
        c.end = ev->ts + ev->dur;
        int elem = 0;
        if (!strcmp(ev->name, "record_param_comms")) {
            int es = elem_size(ev->dtype);
            int64_t n = ev->in_nelems > ev->out_nelems ? ev->in_nelems : ev->out_nelems;
            if (!ev->coll_name[0] || n < 0 || es <= 0)
                return 0;
            c.bytes = sat_mul(n, es);
            c.elem = (int8_t)es;
            c.kind = (int8_t)kind_from_text(ev->coll_name);
            c.src = KSIZE_PARAM_COMMS;
        } else if (!strncmp(ev->name, "nccl:", 5)) {
            c.bytes = input_bytes(ev, &elem);
            if (c.bytes < 0)
                return 0;
            c.elem = (int8_t)elem;
            c.kind = (int8_t)kind_from_text(ev->name + 5);
            c.src = KSIZE_ANNOTATION;
        } else if (is_comm_cpu_op(ev->name)) {
            c.bytes = input_bytes(ev, &elem);
            if (c.bytes < 0)
                return 0;
            c.elem = (int8_t)elem;
            c.kind = (int8_t)kind_from_text(ev->name);
            c.src = KSIZE_CPU_OP;
        } else {
            return 0;
        }
        rc = VEC_PUSH(k->cpu, c);
    }
    if (rc != 0)
        snprintf(p->fail, sizeof p->fail, "out of memory");
    return rc;
}

/* ---- yajl callbacks ---------------------------------------------------- */

/* Depth of the current event map (traceEvents is at depth 2). */
enum { EV_DEPTH = 3 };

static const char *parent_key(const parser *p) { return p->depth > 0 ? p->key[p->depth - 1] : ""; }

static void set_str(char *dst, size_t cap, const unsigned char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

static int on_scalar_text(parser *p, const char *s, size_t n, int is_num)
{
    if (p->depth == 2 && !strcmp(p->key[1], "distributedInfo")) {
        if (is_num && !strcmp(p->cur_key, "rank"))
            p->k->rank = (int)text_to_i64(s, n);
        else if (is_num && !strcmp(p->cur_key, "world_size"))
            p->k->world = (int)text_to_i64(s, n);
        return 1;
    }
    if (!p->in_events)
        return 1;
    event *ev = &p->ev;
    if (p->depth == EV_DEPTH) {
        const char *key = p->cur_key;
        if (!is_num) {
            if (!strcmp(key, "ph"))
                set_str(ev->ph, sizeof ev->ph, (const unsigned char *)s, n);
            else if (!strcmp(key, "cat"))
                set_str(ev->cat, sizeof ev->cat, (const unsigned char *)s, n);
            else if (!strcmp(key, "name"))
                set_str(ev->name, sizeof ev->name, (const unsigned char *)s, n);
            /* string pid/tid ("Spans"): leave -1 */
            return 1;
        }
        if (!strcmp(key, "ts")) {
            ev->ts = us_text_to_ns(s, n);
            ev->has_ts = 1;
        } else if (!strcmp(key, "dur"))
            ev->dur = us_text_to_ns(s, n);
        else if (!strcmp(key, "pid"))
            ev->pid = text_to_i64(s, n);
        else if (!strcmp(key, "tid"))
            ev->tid = text_to_i64(s, n);
        return 1;
    }
    if (p->depth == EV_DEPTH + 1 && !strcmp(parent_key(p), "args")) {
        const char *key = p->cur_key;
        if (is_num) {
            int64_t v = text_to_i64(s, n);
            if (!strcmp(key, "External id"))
                ev->ext = v;
            else if (!strcmp(key, "correlation"))
                ev->corr = v;
            else if (!strcmp(key, "stream"))
                ev->stream = v;
            else if (!strcmp(key, "device"))
                ev->device = v;
            else if (!strcmp(key, "In msg nelems"))
                ev->in_nelems = v;
            else if (!strcmp(key, "Out msg nelems"))
                ev->out_nelems = v;
            else if (!strcmp(key, "Group size"))
                ev->group = v;
        } else {
            if (!strcmp(key, "Collective name"))
                set_str(ev->coll_name, sizeof ev->coll_name, (const unsigned char *)s, n);
            else if (!strcmp(key, "dtype"))
                set_str(ev->dtype, sizeof ev->dtype, (const unsigned char *)s, n);
        }
        return 1;
    }
    /* args["Input type"] = ["float", ...] */
    if (p->depth == EV_DEPTH + 2 && !is_num && !strcmp(parent_key(p), "Input type") &&
        !strcmp(p->key[p->depth - 2], "args")) {
        if (ev->ntypes < NTYPES)
            set_str(ev->types[ev->ntypes], sizeof ev->types[0], (const unsigned char *)s, n);
        ev->ntypes++;
        return 1;
    }
    /* args["Input Dims"] = [[888, 2880], []]: numbers at depth EV+3 */
    if (p->depth == EV_DEPTH + 3 && is_num && p->is_array[p->depth - 1] &&
        !strcmp(p->key[p->depth - 3], "args") && !strcmp(p->key[p->depth - 2], "Input Dims")) {
        int i = p->dims_idx;
        if (i >= 0 && i < NTYPES) {
            int64_t v = text_to_i64(s, n);
            ev->dims_prod[i] = ev->dims_len[i] == 0 ? v : sat_mul(ev->dims_prod[i], v);
            ev->dims_len[i]++;
        }
        return 1;
    }
    return 1;
}

static int cb_null(void *ctx)
{
    parser *p = ctx;
    if (p->in_events && p->depth == EV_DEPTH + 2 && !strcmp(parent_key(p), "Input type"))
        p->ev.ntypes++;
    return 1;
}
static int cb_bool(void *ctx, int b)
{
    (void)b;
    return cb_null(ctx);
}
static int cb_number(void *ctx, const char *s, size_t n) { return on_scalar_text(ctx, s, n, 1); }
static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    return on_scalar_text(ctx, (const char *)s, n, 0);
}

static int push(parser *p, int is_array)
{
    if (p->depth >= DEPTH_MAX) {
        snprintf(p->fail, sizeof p->fail, "JSON nested deeper than %d levels", DEPTH_MAX);
        return 0;
    }
    /* the key that opened this container (arrays inside arrays: "") */
    if (p->depth > 0 && p->is_array[p->depth - 1])
        p->key[p->depth][0] = 0;
    else
        snprintf(p->key[p->depth], SHORT, "%s", p->cur_key);
    /* the container we are entering is recorded at index depth */
    p->is_array[p->depth] = is_array;
    p->depth++;
    p->cur_key[0] = 0;
    /* key[] convention: key[d] = key that opened container at depth d+1 */
    return 1;
}

static int cb_start_map(void *ctx)
{
    parser *p = ctx;
    if (!push(p, 0))
        return 0;
    if (p->in_events && p->depth == EV_DEPTH)
        event_reset(&p->ev);
    if (p->depth == 1)
        p->in_events = 0;
    return 1;
}

static int cb_map_key(void *ctx, const unsigned char *s, size_t n)
{
    parser *p = ctx;
    set_str(p->cur_key, sizeof p->cur_key, s, n);
    return 1;
}

static int cb_end_map(void *ctx)
{
    parser *p = ctx;
    int rc = 0;
    if (p->in_events && p->depth == EV_DEPTH)
        rc = event_done(p);
    p->depth--;
    if (p->depth > 0 && !p->is_array[p->depth - 1])
        snprintf(p->cur_key, SHORT, "%s", p->key[p->depth]);
    return rc == 0;
}

static int cb_start_array(void *ctx)
{
    parser *p = ctx;
    if (!push(p, 1))
        return 0;
    if (p->depth == 2 && !strcmp(p->key[1], "traceEvents"))
        p->in_events = 1;
    /* entering an entry of Input Dims */
    if (p->in_events && p->depth == EV_DEPTH + 3 && !strcmp(p->key[p->depth - 2], "Input Dims") &&
        !strcmp(p->key[p->depth - 3], "args")) {
        if (p->ev.ndims < NTYPES)
            p->dims_idx = p->ev.ndims;
        else
            p->dims_idx = -1;
        p->ev.ndims++;
    }
    return 1;
}

static int cb_end_array(void *ctx)
{
    parser *p = ctx;
    if (p->depth == 2 && p->in_events)
        p->in_events = 0;
    p->depth--;
    if (p->depth > 0 && !p->is_array[p->depth - 1])
        snprintf(p->cur_key, SHORT, "%s", p->key[p->depth]);
    return 1;
}

static const yajl_callbacks callbacks = {
    cb_null, cb_bool, NULL, NULL, cb_number, cb_string, cb_start_map, cb_map_key,
    cb_end_map, cb_start_array, cb_end_array,
};

/* ---- load -------------------------------------------------------------- */

static long count_lines(const unsigned char *b, size_t n)
{
    long c = 0;
    for (size_t i = 0; i < n; i++)
        c += b[i] == '\n';
    return c;
}

/* The length of the JSON token being read, tracked across chunks: yajl
 * re-scans a token split over chunks from its start, so one endless string
 * or number costs quadratic time; past TOKEN_MAX_BYTES it is refused. */
typedef struct tokscan {
    int in_str, esc;
    size_t run;
} tokscan;

/* Scan a chunk; returns the offset of the byte past the limit, or n. */
static size_t tokscan_chunk(tokscan *t, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = b[i];
        if (t->in_str) {
            if (t->esc)
                t->esc = 0;
            else if (c == '\\')
                t->esc = 1;
            else if (c == '"')
                t->in_str = 0, t->run = 0;
            if (t->in_str && ++t->run > TOKEN_MAX_BYTES)
                return i;
        } else if (c == '"') {
            t->in_str = 1;
            t->run = 0;
        } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ',' || c == ':' ||
                   c == '[' || c == ']' || c == '{' || c == '}') {
            t->run = 0;
        } else if (++t->run > TOKEN_MAX_BYTES) {
            return i;
        }
    }
    return n;
}

static int json_error(yajl_handle h, const char *path, long line, const unsigned char *chunk,
                      size_t len, parser *p, err *e)
{
    size_t at = yajl_get_bytes_consumed(h);
    if (at > len)
        at = len;
    long l = line + count_lines(chunk, at);
    if (p->fail[0])
        return err_at(e, path, l, "%s", p->fail);
    unsigned char *msg = yajl_get_error(h, 0, chunk, len);
    char clean[256];
    snprintf(clean, sizeof clean, "%s", msg ? (const char *)msg : "invalid JSON");
    if (msg)
        yajl_free_error(h, msg);
    for (char *c = clean; *c; c++)
        if (*c == '\n')
            *c = ' ';
    return err_at(e, path, l, "bad JSON: %s", clean);
}

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }
static int cmp_gpu(const void *a, const void *b)
{
    const gpu_op *x = a, *y = b;
    int c = cmp_i64(x->ts, y->ts);
    return c ? c : cmp_i64(x->stream, y->stream);
}
static int cmp_launch(const void *a, const void *b)
{
    return cmp_i64(((const launch *)a)->corr, ((const launch *)b)->corr);
}
static int cmp_cpu(const void *a, const void *b)
{
    const cpu_sized *x = a, *y = b;
    int c = cmp_i64(x->tid, y->tid);
    return c ? c : cmp_i64(x->ts, y->ts);
}
static int cmp_step(const void *a, const void *b)
{
    return cmp_i64(((const step_rec *)a)->ts, ((const step_rec *)b)->ts);
}

static int cmp_launch_ts(const void *a, const void *b)
{
    return cmp_i64(((const launch *)a)->ts, ((const launch *)b)->ts);
}

/* GPU ops in the order the CPU issued them (step, launch call, then GPU
 * start); ops with no launch call found go by their GPU start. */
static int cmp_launch_order(const void *a, const void *b)
{
    const gpu_op *x = a, *y = b;
    int c = cmp_i64(x->step, y->step);
    if (c)
        return c;
    int64_t lx = x->lts >= 0 ? x->lts : x->ts, ly = y->lts >= 0 ? y->lts : y->ts;
    c = cmp_i64(lx, ly);
    if (c)
        return c;
    c = cmp_i64(x->corr, y->corr);
    return c ? c : cmp_i64(x->ts, y->ts);
}

static const launch *find_launch(const kineto_rank *k, int64_t corr)
{
    long lo = 0, hi = k->launches.n;
    while (lo < hi) {
        long mid = (lo + hi) / 2;
        if (k->launches.v[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->launches.n && k->launches.v[lo].corr == corr ? &k->launches.v[lo] : NULL;
}

/* Innermost sized CPU op of source src on thread tid containing time t. */
static const cpu_sized *find_enclosing(const kineto_rank *k, int64_t tid, int64_t t, int src)
{
    long lo = 0, hi = k->cpu.n;
    while (lo < hi) {   /* first entry with (tid, ts) > (tid, t) */
        long mid = (lo + hi) / 2;
        const cpu_sized *c = &k->cpu.v[mid];
        if (c->tid < tid || (c->tid == tid && c->ts <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (long i = lo - 1, looked = 0; i >= 0 && looked < 256; i--, looked++) {
        const cpu_sized *c = &k->cpu.v[i];
        if (c->tid != tid)
            break;
        if (c->src == src && c->ts <= t && t <= c->end)
            return c;
    }
    return NULL;
}

static const cpu_sized *find_by_ext(const kineto_rank *k, int64_t ext, int src)
{
    /* cpu records are few (sized ops only): a linear scan is fine */
    for (long i = 0; i < k->cpu.n; i++)
        if (k->cpu.v[i].ext == ext && k->cpu.v[i].src == src)
            return &k->cpu.v[i];
    return NULL;
}

static int link_rank(kineto_rank *k, err *e)
{
    if (k->gpu.n > 1)
        qsort(k->gpu.v, (size_t)k->gpu.n, sizeof *k->gpu.v, cmp_gpu);
    if (k->launches.n > 1)
        qsort(k->launches.v, (size_t)k->launches.n, sizeof *k->launches.v, cmp_launch);
    if (k->cpu.n > 1)
        qsort(k->cpu.v, (size_t)k->cpu.n, sizeof *k->cpu.v, cmp_cpu);
    if (k->steps.n > 1)
        qsort(k->steps.v, (size_t)k->steps.n, sizeof *k->steps.v, cmp_step);
    /* Prefer SGLang step[...] spans; fall back to ProfilerStep#. */
    int have_sglang = 0;
    for (long i = 0; i < k->steps.n; i++)
        have_sglang |= k->steps.v[i].kind == 1;
    long ns = 0;
    for (long i = 0; i < k->steps.n; i++)
        if (k->steps.v[i].kind == have_sglang)
            k->steps.v[ns++] = k->steps.v[i];
    k->steps.n = ns;
    /* The device of this rank: the one with most GPU ops. */
    int best = -1;
    long bestn = 0;
    for (long i = 0; i < k->gpu.n; i++) {
        int d = k->gpu.v[i].device;
        if (d == best)
            continue;
        long c = 0;
        for (long j = 0; j < k->gpu.n && c <= k->gpu.n / 2; j++)
            c += k->gpu.v[j].device == d;
        if (c > bestn)
            best = d, bestn = c;
        if (c > k->gpu.n / 2)
            break;
    }
    k->device = best;
    long kept = 0;
    for (long i = 0; i < k->gpu.n; i++) {
        gpu_op g = k->gpu.v[i];
        if (g.device != best) {
            k->dropped++;
            continue;
        }
        const launch *l = g.corr >= 0 ? find_launch(k, g.corr) : NULL;
        g.graph = (int8_t)(l && l->graph);
        g.lts = l ? l->ts : -1;
        g.ldur = l ? l->dur : 0;
        int64_t t = l ? l->ts : g.ts;
        /* step: the last one starting at or before the launch */
        if (k->steps.n > 0) {
            long lo = 0, hi = k->steps.n;
            while (lo < hi) {
                long mid = (lo + hi) / 2;
                if (k->steps.v[mid].ts <= t)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == 0) {
                k->dropped++;
                continue;
            }
            g.step = lo - 1;
        }
        if (g.comm >= 0) {
            kineto_comm c = {0};
            c.kind = (coll_kind)g.comm;
            c.algo = (coll_algo)g.algo;
            c.ts_ns = g.ts;
            c.dur_ns = g.dur;
            c.stream = g.stream;
            c.group = g.group;
            const cpu_sized *s = NULL;
            int new_style = g.ext >= 0 && g.ext != g.corr;
            if (g.bytes >= 0) {
                c.bytes = (uint64_t)g.bytes;
                c.elem_bytes = g.elem;
                c.src = KSIZE_KERNEL_ARGS;
            } else if ((s = new_style ? find_by_ext(k, g.ext, KSIZE_PARAM_COMMS) : NULL) ||
                       (s = l ? find_enclosing(k, l->tid, l->ts, KSIZE_ANNOTATION) : NULL) ||
                       (s = new_style ? find_by_ext(k, g.ext, KSIZE_CPU_OP) : NULL) ||
                       (s = l ? find_enclosing(k, l->tid, l->ts, KSIZE_CPU_OP) : NULL)) {
                c.bytes = (uint64_t)s->bytes;
                c.elem_bytes = s->elem;
                c.src = (kineto_size_src)s->src;
                if (s->kind >= 0)
                    c.kind = (coll_kind)s->kind;
            }
            if (c.bytes > 0)
                g.bytes = (int64_t)c.bytes;
            g.comm = (int8_t)c.kind;
            g.comm_idx = (int32_t)k->comms.n;
            if (VEC_PUSH(k->comms, c) != 0)
                return err_set(e, ERR_SYSTEM, "out of memory");
        }
        k->gpu.v[kept++] = g;
    }
    k->gpu.n = kept;
    /* In launch order (the CPU's), each launch call's first GPU op pays for it. */
    if (k->gpu.n > 1)
        qsort(k->gpu.v, (size_t)k->gpu.n, sizeof *k->gpu.v, cmp_launch_order);
    for (long i = 0; i < k->gpu.n; i++)
        k->gpu.v[i].first = (int8_t)(k->gpu.v[i].lts >= 0 &&
                                     (i == 0 || k->gpu.v[i - 1].corr != k->gpu.v[i].corr));
    if (k->syncs.n > 1)
        qsort(k->syncs.v, (size_t)k->syncs.n, sizeof *k->syncs.v, cmp_launch_ts);
    /* Launch and CPU records are no longer needed. */
    free(k->launches.v);
    k->launches.v = NULL;
    k->launches.n = k->launches.cap = 0;
    free(k->cpu.v);
    k->cpu.v = NULL;
    k->cpu.n = k->cpu.cap = 0;
    return 0;
}

int kineto_load(const char *path, kineto_rank **out, err *e)
{
    *out = NULL;
    kineto_rank *k = calloc(1, sizeof *k);
    parser *p = calloc(1, sizeof *p);
    unsigned char *buf = malloc(CHUNK);
    input *in = NULL;
    yajl_handle h = NULL;
    int rc = 0;
    if (!k || !p || !buf) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    snprintf(k->path, sizeof k->path, "%s", path);
    k->rank = k->world = -1;
    p->k = k;
    static const input_limits lim = {.max_bytes = KINETO_MAX_BYTES, .what = "a Kineto trace",
                                     .gzip = 1, .max_ratio = BOMB_RATIO};
    if ((rc = input_open(path, &lim, &in, e)) != 0)
        goto done;
    h = yajl_alloc(&callbacks, NULL, p);
    if (!h) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto done;
    }
    yajl_config(h, yajl_dont_validate_strings, 1);
    long line = 1;
    tokscan ts = {0};
    for (;;) {
        size_t n = fread(buf, 1, CHUNK, input_file(in));
        if (n == 0) {
            if (ferror(input_file(in))) {
                if (!(rc = input_error(in, e)))
                    rc = err_set(e, ERR_SYSTEM, "%s: read error", path);
                goto done;
            }
            break;
        }
        size_t at = tokscan_chunk(&ts, buf, n);
        if (at < n) {
            rc = err_at(e, path, line + count_lines(buf, at),
                        "a JSON string or number longer than %d MiB", TOKEN_MAX_BYTES >> 20);
            goto done;
        }
        if (yajl_parse(h, buf, n) != yajl_status_ok) {
            rc = json_error(h, path, line, buf, n, p, e);
            goto done;
        }
        line += count_lines(buf, n);
    }
    if (yajl_complete_parse(h) != yajl_status_ok) {
        if (p->fail[0])
            rc = err_at(e, path, line, "%s", p->fail);
        else
            rc = err_at(e, path, line, "truncated JSON (the document ends early)");
        goto done;
    }
    if (k->nevents == 0) {
        rc = err_at(e, path, 0, "no traceEvents: not a Kineto / Chrome trace");
        goto done;
    }
    rc = link_rank(k, e);
done:
    if (h)
        yajl_free(h);
    input_close(in, 0, NULL);
    free(buf);
    free(p);
    if (rc != 0) {
        kineto_free(k);
        return rc;
    }
    *out = k;
    return 0;
}

void kineto_free(kineto_rank *k)
{
    if (!k)
        return;
    free(k->gpu.v);
    free(k->launches.v);
    free(k->cpu.v);
    free(k->steps.v);
    free(k->comms.v);
    free(k->syncs.v);
    free(k->names.v);
    free(k->nhash);
    free(k);
}

const kineto_host *kineto_host_of(const kineto_rank *k) { return &k->host; }

int kineto_rank_id(const kineto_rank *k) { return k->rank; }
int kineto_world_size(const kineto_rank *k) { return k->world; }
long kineto_nevents(const kineto_rank *k) { return k->nevents; }
long kineto_nkernels(const kineto_rank *k) { return k->gpu.n; }
long kineto_nsteps(const kineto_rank *k) { return k->steps.n; }
long kineto_ncomm(const kineto_rank *k) { return k->comms.n; }
const kineto_comm *kineto_comm_at(const kineto_rank *k, long i)
{
    return i >= 0 && i < k->comms.n ? &k->comms.v[i] : NULL;
}

/* ---- writing the program of one rank ------------------------------------ */

typedef struct emitter {
    trace_writer *w;
    const kineto_rank *k;       /* its kernel names */
    int nstreams;
    int32_t stream_id[TRACE_MAX_STREAMS];
    int64_t last_end[TRACE_MAX_STREAMS];
    double pend_us[TRACE_MAX_STREAMS], gap_us[TRACE_MAX_STREAMS];
    double pend_issue[TRACE_MAX_STREAMS];   /* CPU time of its launch call, -1 none */
    int pend_k[TRACE_MAX_STREAMS];
    int32_t pend_name[TRACE_MAX_STREAMS];   /* its first kernel's name, -1 none */
} emitter;

static int stream_of(emitter *m, int32_t id)
{
    for (int i = 0; i < m->nstreams; i++)
        if (m->stream_id[i] == id)
            return i;
    if (m->nstreams < TRACE_MAX_STREAMS) {
        m->stream_id[m->nstreams] = id;
        return m->nstreams++;
    }
    return TRACE_MAX_STREAMS - 1;  /* extra streams fold into the last one */
}

static int flush(emitter *m, int s, err *e)
{
    trace_op op;
    if (m->pend_k[s] > 0) {
        trace_op_init(&op, OP_COMPUTE);
        op.stream = s;
        op.dur_us = m->pend_us[s];
        op.kernels = m->pend_k[s];
        op.issue_us = m->pend_issue[s];
        /* the kernel's name; a graph's op of several: the first's, "+N" more */
        if (m->pend_name[s] >= 0) {
            const char *nm = m->k->names.v[m->pend_name[s]].s;
            char more[16] = "";
            if (m->pend_k[s] > 1)
                snprintf(more, sizeof more, "+%d", m->pend_k[s] - 1);
            snprintf(op.name, sizeof op.name, "%.*s%s", (int)(sizeof op.name - 1 - strlen(more)),
                     nm, more);
        }
        TRY(trace_write_op(m->w, &op, e));
    }
    if (m->gap_us[s] > 0) {
        trace_op_init(&op, OP_IDLE);
        op.stream = s;
        op.dur_us = m->gap_us[s];
        TRY(trace_write_op(m->w, &op, e));
    }
    m->pend_us[s] = m->gap_us[s] = 0;
    m->pend_k[s] = 0;
    return 0;
}

static coll_dtype dtype_of(int elem) { return elem == 4 || elem == 8 ? DTYPE_FP32 : DTYPE_BF16; }

static int write_ops(kineto_rank *const *ranks, int n, const kineto_opts *o, trace_writer *w,
                     kineto_summary *s, err *e);

int kineto_write(kineto_rank *const *ranks, int n, const kineto_opts *o, trace_writer *w,
                 kineto_summary *s, err *e)
{
    int rc = write_ops(ranks, n, o, w, s, e);
    if (rc == ERR_INPUT && e && !strchr(e->msg, ':'))
        err_wrap(e, "%s: cannot import", ranks[0]->path);
    return rc;
}

/* One host op of dur_ns, counted in the summary. */
static int host_gap(emitter *m, int64_t dur_ns, kineto_summary *s, err *e)
{
    trace_op op;
    trace_op_init(&op, OP_HOST);
    op.dur_us = (double)dur_ns / 1e3;
    TRY(trace_write_op(m->w, &op, e));
    s->host_ops++;
    s->host_us += op.dur_us;
    return 0;
}

/* The host lane up to CPU time t: the blocking calls before it (as sync,
 * after the host work that led to them), then the host work to t. */
static int host_to(emitter *m, const kineto_rank *k, long *si, int64_t *cursor, int64_t t,
                   kineto_summary *s, err *e)
{
    trace_op op;
    while (*si < k->syncs.n && k->syncs.v[*si].ts < t) {
        const launch *y = &k->syncs.v[*si];
        (*si)++;
        if (y->ts + y->dur <= *cursor)
            continue;   /* before this cycle's start */
        if (y->ts > *cursor)
            TRY(host_gap(m, y->ts - *cursor, s, e));
        trace_op_init(&op, OP_SYNC);
        TRY(trace_write_op(m->w, &op, e));
        s->syncs++;
        *cursor = y->ts + y->dur;
    }
    if (t > *cursor) {
        TRY(host_gap(m, t - *cursor, s, e));
        *cursor = t;
    }
    return 0;
}


static int write_ops(kineto_rank *const *ranks, int n, const kineto_opts *o, trace_writer *w,
                     kineto_summary *s, err *e)
{
    memset(s, 0, sizeof *s);
    if (n < 1)
        return err_set(e, ERR_USAGE, "no input files");
    /* the written rank: lowest rank id (file order if none) */
    int wi = 0;
    for (int i = 1; i < n; i++)
        if (ranks[i]->rank >= 0 && (ranks[wi]->rank < 0 || ranks[i]->rank < ranks[wi]->rank))
            wi = i;
    kineto_rank *k = ranks[wi];
    s->nranks = n;
    s->rank = k->rank >= 0 ? k->rank : wi;
    long nc = k->comms.n;
    for (int i = 0; i < n; i++) {
        if (ranks[i]->comms.n != nc)
            return err_at(e, ranks[i]->path, 0,
                          "%ld collectives, but %s has %ld: the files are not one step of one job",
                          ranks[i]->comms.n, k->path, nc);
        for (long j = 0; j < nc; j++)
            if (ranks[i]->comms.v[j].kind != k->comms.v[j].kind)
                return err_at(e, ranks[i]->path, 0,
                              "collective %ld is %s, but %s on %s: sequences differ", j + 1,
                              coll_kind_name(ranks[i]->comms.v[j].kind),
                              coll_kind_name(k->comms.v[j].kind), k->path);
    }
    /* the ranks' skew: how far apart the k-th collective starts */
    for (long j = 0; j < nc && n > 1; j++) {
        int64_t t0 = INT64_MAX, t1 = INT64_MIN;
        for (int r = 0; r < n; r++) {
            int64_t t = ranks[r]->comms.v[j].ts_ns;
            t0 = t < t0 ? t : t0;
            t1 = t > t1 ? t : t1;
        }
        double sp = (double)(t1 - t0) / 1e3;
        s->mean_start_spread_us += sp / (double)nc;
        if (sp > s->max_start_spread_us)
            s->max_start_spread_us = sp;
    }
    int world = k->world > 0 ? k->world : n;
    char buf[64];
    snprintf(buf, sizeof buf, "%d", world);
    TRY(trace_write_meta(w, "ranks", buf, e));
    TRY(trace_write_meta(w, "source", "kineto", e));
    TRY(trace_write_meta(w, "overhead", "captured", e));
    /* A capture whose steps state no tokens (a training step, a profiler
     * step): a cycle counts 1 unless --tokens-per-cycle says otherwise, and
     * replay reports steps/s, not tok/s. */
    int stated = o && o->tokens_per_cycle > 0;
    for (long i = 0; i < k->steps.n && !stated; i++)
        stated = k->steps.v[i].tokens > 0;
    if (!stated)
        TRY(trace_write_meta(w, "tokens", "none", e));
    if (n > 1)
        TRY(trace_write_meta(w, "skew", "captured", e));
    /* the captured stream behind each trace stream, in the order the ops
     * below meet them (stream_of), for the timelines' lane names */
    emitter ids;
    memset(&ids, 0, sizeof ids);
    for (long g = 0; g < k->gpu.n; g++)
        stream_of(&ids, k->gpu.v[g].stream);
    char sbuf[256];
    size_t sat = 0;
    sbuf[0] = 0;
    for (int q = 0; q < ids.nstreams && sat < sizeof sbuf; q++)
        sat += (size_t)snprintf(sbuf + sat, sizeof sbuf - sat, "%s%d", q ? "," : "",
                                (int)ids.stream_id[q]);
    if (ids.nstreams && sat < sizeof sbuf)
        TRY(trace_write_meta(w, "streams", sbuf, e));
    /* what the capture does not say */
    long unsized = 0, untyped = 0, folded = 0;
    for (long j = 0; j < nc; j++) {
        unsized += !k->comms.v[j].bytes;
        untyped += k->comms.v[j].bytes && !k->comms.v[j].elem_bytes;
    }
    for (long g = 0; g < k->gpu.n && ids.nstreams == TRACE_MAX_STREAMS; g++) {
        int q = 0;
        while (q < ids.nstreams && ids.stream_id[q] != k->gpu.v[g].stream)
            q++;
        folded += q == ids.nstreams;
    }
    s->nassumed = 0;
#define ASSUME(...) \
    (s->nassumed < KINETO_ASSUMED_MAX \
         ? snprintf(s->assumed[s->nassumed++], sizeof s->assumed[0], __VA_ARGS__) : 0)
    if (!stated)
        ASSUME("no step states its tokens: a cycle produces 1 (replay reports steps/s; "
               "--tokens-per-cycle X)");
    if (unsized && o && o->default_bytes)
        ASSUME("%ld collective%s without a size in the capture: %llu bytes (--default-bytes)",
               unsized, unsized == 1 ? "" : "s", (unsigned long long)o->default_bytes);
    else if (unsized)
        ASSUME("%ld collective%s without a size in the capture: 0 bytes, the captured time "
               "only (--default-bytes B)", unsized, unsized == 1 ? "" : "s");
    if (untyped)
        ASSUME("%ld collective%s without an element type: bf16", untyped,
               untyped == 1 ? "" : "s");
    if (n > 1)
        ASSUME("the program is rank %d's; the other %d rank%s only the waits and the skew",
               k->rank, n - 1, n == 2 ? " gives" : "s give");
    if (folded)
        ASSUME("%ld GPU ops on streams past the first %d: on the last of them", folded,
               TRACE_MAX_STREAMS);
#undef ASSUME
    for (int a = 0; a < s->nassumed; a++) {
        char line[300];
        snprintf(line, sizeof line, "assumed: %s", s->assumed[a]);
        TRY(trace_write_comment(w, line, e));
    }
    TRY(trace_write_comment(w, "host ops are the captured CPU time between runtime calls, "
                               "issue_us each launch call's; sync a blocking call", e));

    emitter m;
    memset(&m, 0, sizeof m);
    m.w = w;
    m.k = k;
    double tokens_default = o && o->tokens_per_cycle > 0 ? o->tokens_per_cycle : 1;
    long i = 0, si = 0;
    s->kernels = k->gpu.n;
    s->comm = nc;
    while (i < k->gpu.n) {
        int64_t step = k->gpu.v[i].step;
        long j = i;
        long ngraph = 0;
        while (j < k->gpu.n && k->gpu.v[j].step == step) {
            ngraph += k->gpu.v[j].graph;
            j++;
        }
        const step_rec *st = step >= 0 ? &k->steps.v[step] : NULL;
        trace_op op;
        trace_op_init(&op, OP_CYCLE);
        op.tokens = st && st->tokens > 0 ? st->tokens : tokens_default;
        TRY(trace_write_op(w, &op, e));
        trace_op_init(&op, OP_PHASE);
        op.phase = st ? st->phase : PHASE_OTHER;
        op.graph = ngraph * 2 > j - i;
        TRY(trace_write_op(w, &op, e));
        s->cycles++;
        /* the cycle starts with its step on the CPU (or its first launch) */
        const gpu_op *g0 = &k->gpu.v[i];
        int64_t cursor = st ? st->ts : g0->lts >= 0 ? g0->lts : g0->ts;
        for (int q = 0; q < TRACE_MAX_STREAMS; q++)
            m.last_end[q] = cursor;
        int64_t cpu_end = st ? st->end : cursor;
        for (; i < j; i++) {
            const gpu_op *g = &k->gpu.v[i];
            int sidx = stream_of(&m, g->stream);
            int newcall = g->lts >= 0 && g->first && g->lts >= cursor;
            /* the CPU up to this op's launch call */
            if (newcall) {
                TRY(flush(&m, sidx, e));
                TRY(host_to(&m, k, &si, &cursor, g->lts, s, e));
            }
            /* The call's CPU time up to its first kernel's start goes on
             * that op (an eager kernel starts after its call; a graph's
             * first kernels during its long call): the rest of the call is
             * host work that follows. Later kernels of the call are the
             * GPU's. */
            int64_t pre = g->ts - g->lts;
            pre = pre < 0 ? 0 : pre > g->ldur ? g->ldur : pre;
            int64_t issued = newcall ? g->lts + pre : g->lts >= 0 ? INT64_MIN : g->ts;
            double issue = newcall ? (double)pre / 1e3 : g->lts >= 0 ? 0 : -1;
            if (newcall)
                cursor = g->lts + pre;
            /* a GPU-side gap the CPU does not explain */
            int64_t ready = m.last_end[sidx] > issued ? m.last_end[sidx] : issued;
            if (g->ts > ready) {
                int from = -1;   /* waiting for another stream that just went idle? */
                for (int q = 0; q < m.nstreams; q++)
                    if (q != sidx && m.last_end[q] > m.last_end[sidx] && m.last_end[q] <= g->ts &&
                        (from < 0 || m.last_end[q] > m.last_end[from]))
                        from = q;
                if (from >= 0) {
                    TRY(flush(&m, from, e));
                    TRY(flush(&m, sidx, e));
                    trace_op_init(&op, OP_WAIT);
                    op.stream = sidx;
                    op.on = from;
                    TRY(trace_write_op(w, &op, e));
                    m.last_end[sidx] = m.last_end[from];
                    ready = m.last_end[sidx] > issued ? m.last_end[sidx] : issued;
                }
                if (g->ts > ready)
                    m.gap_us[sidx] += (double)(g->ts - ready) / 1e3;
            }
            int64_t end = g->ts + g->dur;
            if (g->comm >= 0) {
                TRY(flush(&m, sidx, e));
                const kineto_comm *c = &k->comms.v[g->comm_idx];
                trace_op_init(&op, OP_COLL);
                op.stream = sidx;
                op.coll = c->kind;
                op.algo = c->algo;
                op.bytes = c->bytes ? c->bytes : (o ? o->default_bytes : 0);
                op.dtype = dtype_of(c->elem_bytes);
                op.group = c->group > 0 ? c->group : world;
                op.issue_us = issue;
                int64_t min_dur = c->dur_ns;
                int64_t emin = c->ts_ns + c->dur_ns, emax = emin;
                for (int r = 0; r < n; r++) {
                    const kineto_comm *cr = &ranks[r]->comms.v[g->comm_idx];
                    if (cr->dur_ns < min_dur)
                        min_dur = cr->dur_ns;
                    int64_t en = cr->ts_ns + cr->dur_ns;
                    if (en < emin)
                        emin = en;
                    if (en > emax)
                        emax = en;
                }
                op.measured_us = (double)min_dur / 1e3;
                if (n > 1) {
                    op.wait_us = (double)(c->dur_ns - min_dur) / 1e3;
                    s->wait_us += op.wait_us;
                    double spread = (double)(emax - emin) / 1e3;
                    if (spread > s->max_end_spread_us)
                        s->max_end_spread_us = spread;
                }
                if (c->bytes)
                    s->sized++;
                else
                    snprintf(op.name, sizeof op.name, "unsized");
                TRY(trace_write_op(w, &op, e));
            } else if (newcall || !g->graph || g->lts < 0 || m.pend_k[sidx] == 0) {
                /* an op of its own: each eager kernel, a graph launch's first */
                TRY(flush(&m, sidx, e));
                m.pend_us[sidx] = (double)g->dur / 1e3;
                m.pend_k[sidx] = 1;
                m.pend_issue[sidx] = issue;
                m.pend_name[sidx] = g->name;
            } else {
                /* the graph's next kernels join its op, their gaps inside it */
                m.pend_us[sidx] += m.gap_us[sidx] + (double)g->dur / 1e3;
                m.gap_us[sidx] = 0;
                m.pend_k[sidx]++;
            }
            if (end > m.last_end[sidx])
                m.last_end[sidx] = end;
        }
        for (int q = 0; q < m.nstreams; q++)
            TRY(flush(&m, q, e));
        /* the CPU's rest of the step: blocking calls and host work */
        TRY(host_to(&m, k, &si, &cursor, cpu_end, s, e));
    }
    s->dropped = k->dropped;
    return 0;
}
