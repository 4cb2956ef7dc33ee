/* Option table and parser. Each option has a setter; parsing walks argv,
 * accepts "--name value", "--name=value" and "-x value", and rejects an
 * option that the mode does not take, so a typo never runs silently. */
#include "hwcheck/opts.h"

#include <stdlib.h>
#include <string.h>

#include "sim/cli.h"

typedef int opt_set_fn(opts *o, const char *arg, err *e);

enum { XFER = OPTS_P2P | OPTS_FLOWS | OPTS_HOST };

typedef struct opt_def {
    const char *name;  /* long name without "--" */
    char shrt;         /* short flag or 0 */
    const char *arg;   /* metavar, NULL for a switch */
    int modes;         /* OPTS_* bits */
    const char *help;
    opt_set_fn *set;
} opt_def;

static int set_min(opts *o, const char *a, err *e) { return cli_parse_size("-b", a, &o->min_bytes, e); }
static int set_max(opts *o, const char *a, err *e) { return cli_parse_size("-e", a, &o->max_bytes, e); }

static int set_factor(opts *o, const char *a, err *e)
{
    TRY(cli_parse_double("-f", a, &o->factor, e));
    if (o->factor < 1.0)
        return err_set(e, ERR_USAGE, "-f: step factor %g must be >= 1", o->factor);
    return 0;
}

static int set_long(const char *what, const char *a, long lo, long hi, int *out, err *e)
{
    long v;
    TRY(cli_parse_long(what, a, lo, hi, &v, e));
    *out = (int)v;
    return 0;
}

static int set_ngpus(opts *o, const char *a, err *e) { return set_long("-g", a, 1, 64, &o->ngpus, e); }
static int set_iters(opts *o, const char *a, err *e) { return set_long("-n", a, 1, 10000000, &o->iters, e); }
static int set_warmup(opts *o, const char *a, err *e) { return set_long("-w", a, 0, 1000000, &o->warmup, e); }
static int set_check(opts *o, const char *a, err *e) { return set_long("-c", a, 0, 1000, &o->check, e); }
static int set_vranks(opts *o, const char *a, err *e) { return set_long("--virtual-ranks", a, 2, 8, &o->vranks, e); }
static int set_rounds(opts *o, const char *a, err *e) { return set_long("--rounds", a, 1, 1000, &o->rounds, e); }
static int set_blocks(opts *o, const char *a, err *e)
{
    /* allreduce kernels take at most 36 blocks; copy kernels up to 1024 */
    return set_long("--blocks", a, 1, o->mode & XFER ? 1024 : 36, &o->blocks, e);
}
static int set_threads(opts *o, const char *a, err *e)
{
    TRY(set_long("--threads", a, 32, 1024, &o->threads, e));
    if (o->threads % 32)
        return err_set(e, ERR_USAGE, "--threads: %d is not a multiple of 32 (whole warps)",
                       o->threads);
    return 0;
}

static int set_unroll(opts *o, const char *a, err *e)
{
    TRY(set_long("--unroll", a, 1, 8, &o->unroll, e));
    if (o->unroll & (o->unroll - 1))
        return err_set(e, ERR_USAGE, "--unroll: %d is not 1, 2, 4 or 8", o->unroll);
    return 0;
}

static int set_root(opts *o, const char *a, err *e) { return set_long("--root", a, 0, 63, &o->root, e); }

static int set_drop(opts *o, const char *a, err *e)
{
    return set_long("--drop-rank", a, 0, 7, &o->drop_rank, e);
}

static int set_dtype(opts *o, const char *a, err *e)
{
    if (ref_dtype_parse(a, &o->dtype) != 0)
        return err_set(e, ERR_USAGE, "-d: unknown data type '%s' (bf16, fp16, fp32)", a);
    return 0;
}

static int set_impl(opts *o, const char *a, err *e)
{
    if (opts_impl_parse(a, &o->impl) != 0)
        return err_set(e, ERR_USAGE,
                       "--impl: unknown '%s' (nccl, oneshot, twoshot, oneshot-push, twoshot-push, "
                       "shm-ring)", a);
    return 0;
}

static int set_allreduce(opts *o, const char *a, err *e)
{
    o->allreduce_set = 1;
    return set_impl(o, a, e);
}

static int set_graph(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->graph = 1;
    return 0;
}

static int set_eager(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->eager = 1;
    return 0;
}

static int set_nccl_only(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->nccl_only = 1;
    return 0;
}

static int set_post(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->post = 1;
    return 0;
}

static int set_peer(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->peer = 1;
    return 0;
}

static int set_loop(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->loop = 1;
    return 0;
}

static int set_pair(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->pair = 1;
    return 0;
}

static int set_copy_only(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->copy_only = 1;
    return 0;
}

static int set_list(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->list = 1;
    return 0;
}

static int set_help(opts *o, const char *a, err *e)
{
    (void)a, (void)e;
    o->help = 1;
    return 0;
}

static int set_env(opts *o, const char *a, err *e)
{
    const char *eq = strchr(a, '=');
    if (!eq || eq == a)
        return err_set(e, ERR_USAGE, "--env: '%s' is not NAME=VALUE", a);
    if (!strncmp(a, "NCCL_NVLS_ENABLE=", 17) && strcmp(eq + 1, "0") != 0)
        return err_set(e, ERR_USAGE,
                       "--env: hwcheck never uses NVLink multicast (NCCL_NVLS_ENABLE must be 0)");
    if (o->nenv >= OPTS_MAX_ENV)
        return err_set(e, ERR_USAGE, "--env: more than %d settings", OPTS_MAX_ENV);
    o->env[o->nenv++] = a;
    return 0;
}

static int set_format(opts *o, const char *a, err *e)
{
    o->fmt_set = 1;
    return cli_parse_format(a, &o->fmt, e);
}

static int set_out(opts *o, const char *a, err *e)
{
    (void)e;
    o->out = a;
    return 0;
}

static int set_pattern(opts *o, const char *a, err *e)
{
    (void)e;
    o->pattern = a; /* checked against the pattern table by the mode */
    return 0;
}

static int set_op(opts *o, const char *a, err *e)
{
    if (!strcmp(a, "read"))
        o->op = OPTS_OP_READ;
    else if (!strcmp(a, "write"))
        o->op = OPTS_OP_WRITE;
    else if (!strcmp(a, "copy"))
        o->op = OPTS_OP_COPY;
    else if (!strcmp(a, "kernel"))
        o->op = OPTS_OP_KERNEL;
    else if (!strcmp(a, "all"))
        o->op = OPTS_OP_ALL;
    else
        o->op = (opts_op)-1;
    int host = o->mode == OPTS_HOST;
    if ((int)o->op < 0 || (host && (o->op == OPTS_OP_READ || o->op == OPTS_OP_WRITE)) ||
        (!host && o->op == OPTS_OP_KERNEL))
        return err_set(e, ERR_USAGE, "--op: '%s' (%s)", a,
                       host ? "copy, kernel or all" : "read, write, copy or all");
    return 0;
}

static int set_host_timeout(opts *o, const char *a, err *e)
{
    TRY(cli_parse_double("--host-timeout-s", a, &o->host_wait_s, e));
    if (o->host_wait_s < 1 || o->host_wait_s > 3600)
        return err_set(e, ERR_USAGE, "--host-timeout-s: %g out of range [1, 3600]", o->host_wait_s);
    return 0;
}

static int set_timeout(opts *o, const char *a, err *e)
{
    TRY(cli_parse_double("--timeout-ms", a, &o->timeout_ms, e));
    if (o->timeout_ms < 1 || o->timeout_ms > 600000)
        return err_set(e, ERR_USAGE, "--timeout-ms: %g out of range [1, 600000]", o->timeout_ms);
    return 0;
}

static int set_seed(opts *o, const char *a, err *e)
{
    long v;
    TRY(cli_parse_long("--seed", a, 0, 2147483647L, &v, e));
    o->seed = (uint64_t)v;
    return 0;
}

static int set_alloc(opts *o, const char *a, err *e)
{
    if (strcmp(a, "cuda") == 0)
        o->cuda_alloc = 1;
    else if (strcmp(a, "nccl") == 0)
        o->cuda_alloc = 0;
    else
        return err_set(e, ERR_USAGE, "--alloc: '%s' (nccl or cuda)", a);
    return 0;
}

static const opt_def table[] = {
    {"minbytes", 'b', "SIZE", OPTS_COLL | XFER, "smallest size (K/M/G suffixes)", set_min},
    {"maxbytes", 'e', "SIZE", OPTS_COLL | XFER, "largest size", set_max},
    {"stepfactor", 'f', "F", OPTS_COLL | XFER, "multiply the size by F each step", set_factor},
    {"ngpus", 'g', "N", OPTS_COLL | OPTS_P2P | OPTS_FLOWS | OPTS_HOST | OPTS_REPLAY,
     "use GPUs 0..N-1 (default: all visible)", set_ngpus},
    {"iters", 'n', "N", OPTS_ANY & ~OPTS_ALL, "timed iterations", set_iters},
    {"warmup_iters", 'w', "N", OPTS_ANY & ~OPTS_ALL, "untimed warm-up iterations", set_warmup},
    {"check", 'c', "N", OPTS_COLL | OPTS_HOST,
     "check results N times per size (0: no check; host --op kernel: any N checks each copy "
     "once, default 0)", set_check},
    {"datatype", 'd', "T", OPTS_COLL, "bf16, fp16 or fp32", set_dtype},
    {"impl", 0, "I", OPTS_COLL,
     "nccl, oneshot, twoshot, oneshot-push, twoshot-push, or shm-ring (2 ranks: NCCL's ring "
     "Simple through pinned host memory, as its SHM transport; --blocks channels, default 4)",
     set_impl},
    {"allreduce", 0, "I", OPTS_REPLAY, "run every allreduce as I (nccl, oneshot, ...)", set_allreduce},
    {"graph", 0, NULL, OPTS_COLL | OPTS_REPLAY,
     "coll: run inside a CUDA graph; replay: capture every phase as a CUDA graph (default: the "
     "phases the trace marks graph=1)", set_graph},
    {"nccl-only", 0, NULL, OPTS_LAUNCH,
     "launch: only NCCL's host cost per call, 7 rounds against launch-host, medians",
     set_nccl_only},
    {"post", 0, NULL, OPTS_LAUNCH,
     "launch: only NCCL Simple's slice post (post-W-S rows): a block's stores into host or "
     "device memory, its barrier, a flag with and without fence.acq_rel.sys",
     set_post},
    {"peer", 0, NULL, OPTS_LAUNCH,
     "launch --post: the same rows with data and flag in GPU 1's memory too (post-peer-S, "
     "recv-peer-S: a remote store's fence and a remote load; needs 2 GPUs with peer access)",
     set_peer},
    {"loop", 0, NULL, OPTS_LAUNCH,
     "launch: only the costs inside hwcheck's transfer loops (loop-* rows): an iteration's "
     "issues, cudaSetDevice, cudaEventRecord, and the loop timed as p2p and flows time it",
     set_loop},
    {"pair", 0, NULL, OPTS_LAUNCH,
     "launch: only the host's issue behind busy streams (-busy-host rows) and two ranks' "
     "kernels from one thread (pair-D rows: eager, host, start skew, graph)",
     set_pair},
    {"copy-only", 0, NULL, OPTS_LAUNCH,
     "launch: only graph-node and copy kernels of 1-132 blocks at 16 B and one and two packs "
     "per thread, per graph node",
     set_copy_only},
    {"rounds", 0, "R", OPTS_LAUNCH | OPTS_COLL,
     "launch --nccl-only: R rounds in place of 7, each round's rows written too (rR-...); "
     "coll: each size timed in R rounds of -n calls (time_us their mean; round_min_us, "
     "round_med_us the fastest round and the median)",
     set_rounds},
    {"eager", 0, NULL, OPTS_REPLAY, "replay: launch every op on its own, capture no phase",
     set_eager},
    {"alloc", 0, "A", OPTS_COLL,
     "NCCL buffers from nccl (ncclMemAlloc, as nccl-tests; default) or cuda (cudaMalloc, as "
     "PyTorch's default allocator)", set_alloc},
    {"virtual-ranks", 0, "N", OPTS_COLL, "run the custom kernels as N ranks on GPU 0", set_vranks},
    {"blocks", 0, "N", OPTS_COLL | OPTS_REPLAY | XFER,
     "blocks per custom allreduce (default as vLLM); p2p/flows/host: blocks of 512 threads per "
     "copy kernel (default one per SM)", set_blocks},
    {"threads", 0, "T", XFER, "threads per copy-kernel block, a multiple of 32 (default 512)",
     set_threads},
    {"unroll", 0, "U", XFER,
     "16-byte loads each copy-kernel thread keeps in flight before storing them: 1 (default), "
     "2, 4 or 8 (NCCL's reduceCopy keeps 8 on SM80+)", set_unroll},
    {"root", 0, "R", OPTS_COLL, "broadcast root", set_root},
    {"env", 0, "NAME=VALUE", OPTS_COLL | OPTS_REPLAY | OPTS_ALL,
     "set an (NCCL) environment variable before NCCL starts", set_env},
    {"pattern", 0, "P", OPTS_FLOWS, "pattern name (--list shows them)", set_pattern},
    {"op", 0, "OP", XFER,
     "p2p/flows: read, write, copy, or all (default); host: copy (default), kernel (GPU loads "
     "from / stores into pinned host memory), or all", set_op},
    {"list", 0, NULL, OPTS_FLOWS | OPTS_COLL, "list the patterns (flows) or collectives", set_list},
    {"timeout-ms", 0, "MS", OPTS_ANY, "device-side wait limit (default 2000)", set_timeout},
    {"host-timeout-s", 0, "S", OPTS_ANY,
     "host-side limit per wait and per blocking step (default 30 + 10 x timeout-ms/1000)",
     set_host_timeout},
    {"seed", 0, "S", OPTS_COLL, "seed of the random inputs", set_seed},
    {"drop-rank", 0, "R", OPTS_COLL,
     "test hook: never launch rank R (custom kernels: the others time out on the device; "
     "NCCL: the host-side limit ends the run)", set_drop},
    {"format", 0, "F", OPTS_ANY & ~OPTS_ALL, "table, csv or json", set_format},
    {"output", 'o', "PATH", OPTS_ANY, "write to PATH (a directory for `all`)", set_out},
    {"help", 'h', NULL, OPTS_ANY, "this help", set_help},
};
enum { NOPTS = sizeof table / sizeof table[0] };

void opts_init(opts *o, int mode)
{
    memset(o, 0, sizeof *o);
    o->mode = mode;
    o->coll = REF_ALLREDUCE;
    o->factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->check = 1;
    o->dtype = REF_BF16;
    o->impl = OPTS_IMPL_NCCL;
    o->fmt = REPORT_TABLE;
    o->timeout_ms = 2000;
    o->seed = 1;
    o->drop_rank = -1;
    o->threads = 512;
    o->unroll = 1;
    o->min_bytes = 1024;
    o->max_bytes = 16u << 20;
    if (mode & (OPTS_P2P | OPTS_FLOWS)) {
        o->min_bytes = o->max_bytes = 64u << 20;
        o->iters = 10;
        o->warmup = 2;
    } else if (mode == OPTS_HOST) {
        o->op = OPTS_OP_COPY;
        o->check = 0;
        o->min_bytes = 4096;
        o->max_bytes = 256u << 20;
        o->factor = 4;
        o->iters = 10;
        o->warmup = 2;
    } else if (mode == OPTS_LAUNCH) {
        o->iters = 1000;
        o->warmup = 100;
    } else if (mode == OPTS_REPLAY) {
        o->iters = 3;
        o->warmup = 1;
    }
}

static const opt_def *find(const char *a, const char **inline_arg)
{
    *inline_arg = NULL;
    if (a[0] == '-' && a[1] == '-') {
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (int i = 0; i < NOPTS; i++)
            if (strlen(table[i].name) == len && !strncmp(table[i].name, name, len)) {
                *inline_arg = eq ? eq + 1 : NULL;
                return &table[i];
            }
        return NULL;
    }
    if (a[0] == '-' && a[1] && !a[2])
        for (int i = 0; i < NOPTS; i++)
            if (table[i].shrt == a[1])
                return &table[i];
    return NULL;
}

int opts_parse(opts *o, int argc, char **argv, err *e)
{
    const char *mode = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val;
        if (a[0] != '-' || !a[1]) {
            if (o->npos >= OPTS_MAX_POS)
                return err_set(e, ERR_USAGE, "too many arguments ('%s')", a);
            o->pos[o->npos++] = a;
            continue;
        }
        const opt_def *d = find(a, &val);
        if (!d || !(d->modes & o->mode))
            return err_set(e, ERR_USAGE, "%s: unknown option '%s' (try hwcheck %s --help)",
                           mode, a, mode);
        if (d->arg && !val) {
            if (i + 1 >= argc)
                return err_set(e, ERR_USAGE, "%s: option '%s' needs a value (%s)", mode, a, d->arg);
            val = argv[++i];
        } else if (!d->arg && val) {
            return err_set(e, ERR_USAGE, "%s: option '%s' takes no value", mode, a);
        }
        TRY(d->set(o, val, e));
    }
    if (!o->fmt_set && o->out) { /* -o x.csv / x.json: that format unless --format says */
        size_t n = strlen(o->out);
        if (n > 4 && !strcmp(o->out + n - 4, ".csv"))
            o->fmt = REPORT_CSV;
        else if (n > 5 && !strcmp(o->out + n - 5, ".json"))
            o->fmt = REPORT_JSON;
    }
    if (o->nccl_only && o->copy_only)
        return err_set(e, ERR_USAGE, "%s: --nccl-only and --copy-only exclude each other", mode);
    if (o->pair && (o->nccl_only || o->copy_only || o->post))
        return err_set(e, ERR_USAGE, "%s: --pair excludes --nccl-only, --copy-only and --post",
                       mode);
    if (o->graph && o->eager)
        return err_set(e, ERR_USAGE, "%s: --graph and --eager exclude each other", mode);
    if (o->rounds && o->mode == OPTS_LAUNCH && !o->nccl_only)
        return err_set(e, ERR_USAGE, "%s: --rounds needs --nccl-only", mode);
    if (o->peer && !o->post)
        return err_set(e, ERR_USAGE, "%s: --peer needs --post", mode);
    if (o->min_bytes > o->max_bytes)
        return err_set(e, ERR_USAGE, "%s: -b %llu is larger than -e %llu", mode,
                       (unsigned long long)o->min_bytes, (unsigned long long)o->max_bytes);
    if (o->min_bytes == 0)
        return err_set(e, ERR_USAGE, "%s: -b must be positive", mode);
    if (o->mode == OPTS_COLL && o->npos > 0 && !o->list) {
        if (ref_coll_parse(o->pos[0], &o->coll) != 0)
            return err_set(e, ERR_USAGE,
                           "coll: unknown collective '%s' (allreduce, reducescatter, allgather, "
                           "broadcast, alltoall)", o->pos[0]);
        if (o->npos > 1)
            return err_set(e, ERR_USAGE, "coll: unexpected argument '%s'", o->pos[1]);
    }
    if (o->mode == OPTS_COLL && o->impl != OPTS_IMPL_NCCL && o->coll != REF_ALLREDUCE)
        return err_set(e, ERR_USAGE, "coll: --impl %s runs allreduce only",
                       opts_impl_name(o->impl));
    if (o->impl == OPTS_IMPL_SHM_RING && o->mode == OPTS_REPLAY)
        return err_set(e, ERR_USAGE, "replay: --allreduce shm-ring is not offered (coll only)");
    if (o->mode == OPTS_COLL && o->impl == OPTS_IMPL_SHM_RING && o->vranks && o->vranks != 2)
        return err_set(e, ERR_USAGE, "coll: --impl shm-ring runs on 2 ranks (--virtual-ranks 2)");
    if (o->mode == OPTS_COLL && o->vranks && o->impl == OPTS_IMPL_NCCL)
        return err_set(e, ERR_USAGE,
                       "coll: --virtual-ranks needs a custom kernel (--impl oneshot|twoshot|...)");
    if (o->op == OPTS_OP_COPY && (o->threads != 512 || o->unroll != 1))
        return err_set(e, ERR_USAGE,
                       "%s: --threads and --unroll shape the copy kernel; --op copy uses the copy "
                       "engine (host: --op kernel)", mode);
    if (o->mode != OPTS_COLL && o->mode != OPTS_REPLAY && o->npos > 0)
        return err_set(e, ERR_USAGE, "%s: unexpected argument '%s'", mode, o->pos[0]);
    return 0;
}

void opts_help(FILE *f, int mode)
{
    for (int i = 0; i < NOPTS; i++) {
        const opt_def *d = &table[i];
        if (!(d->modes & mode))
            continue;
        char left[64];
        if (d->shrt)
            snprintf(left, sizeof left, "-%c, --%s%s%s", d->shrt, d->name, d->arg ? " " : "",
                     d->arg ? d->arg : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", d->name, d->arg ? " " : "",
                     d->arg ? d->arg : "");
        fprintf(f, "  %-30s %s\n", left, d->help);
    }
}

void opts_usage(FILE *f, const char *mode, const char *args, int mask)
{
    fprintf(f, "usage: hwcheck %s [options] %s\n\noptions:\n", mode, args);
    opts_help(f, mask);
}

static const char *const impl_names[OPTS_NIMPLS] = {"nccl", "oneshot", "twoshot", "oneshot-push",
                                                     "twoshot-push", "shm-ring"};

const char *opts_impl_name(opts_impl i) { return impl_names[i]; }

int opts_impl_parse(const char *s, opts_impl *out)
{
    for (int i = 0; i < OPTS_NIMPLS; i++)
        if (!strcmp(s, impl_names[i])) {
            *out = (opts_impl)i;
            return 0;
        }
    return -1;
}

const char *opts_op_name(opts_op op)
{
    static const char *const names[] = {"all", "read", "write", "copy", "kernel"};
    return names[op];
}
