/* NCCL's NVLS algorithm on one node, from NVIDIA/nccl v2.30.7-1 (and the
 * version differences of v2.26.6-1, v2.27.7-1, v2.28.9-1). Support:
 * transport/nvls.cc ncclNvlsInit (NCCL_NVLS_ENABLE, at least 2 GPUs) and
 * search.cc ncclTopoCompute (an NVSwitch, SM 90 or later). The search:
 * search.cc ncclTopoSearchTryNvls, one channel per head GPU, each taking its
 * speed off every GPU's NVSwitch link both ways (twice off the head's), all
 * heads or nothing; then pass 2 raises bwInter up to twice bwIntra. Tuning:
 * tuning.cc ncclTopoTuneModel's NVLS branch. Channels: nvls.cc
 * ncclNvlsTuning. Chunk: enqueue.cc calcCollChunking. Floats where NCCL has
 * floats. Invariant: only nccl_nvls_setup writes nt->nvls. */
#include "models/nccl/nccl_nvls.h"

#include "models/nccl/nccl_graphfile.h"

#include <math.h>
#include <string.h>

enum { MAX_ARITY = 32 };   /* NCCL_MAX_NVLS_ARITY */
/* tuning.cc hwLatencies[NVLINK][NVLS][Simple]; NVLS's latency is that alone. */
static const float nvls_lat_us = 25.0f;

/* NCCL's rating of each GPU's links to the NVSwitches (merged into one NVS
 * node, lanes added up); 0 for a GPU without one. */
static void nvs_links(const topo *t, int n, int sm, float *bw)
{
    for (int r = 0; r < n; r++)
        bw[r] = 0;
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        if (l->kind != LINK_NVLINK)
            continue;
        const topo_node *a = topo_node_at(t, l->a), *b = topo_node_at(t, l->b);
        const topo_node *g = a->kind == TOPO_GPU ? a : b, *o = a->kind == TOPO_GPU ? b : a;
        if (g->kind == TOPO_GPU && o->kind == TOPO_NVSWITCH && g->gpu >= 0 && g->gpu < n)
            bw[g->gpu] += (float)(l->nvlinks > 0 ? l->nvlinks : 1) * (float)topo_nvlink_lane_GBps(sm);
    }
}

/* One search at speed bw: channel c (head c) takes bw off every GPU's
 * NVS->GPU link, then GPU->NVS link, 2 bw off the head's
 * (ncclTopoSearchTryNvls, SUB_ROUND); 1 if every head fits. */
static int fits(const float *link, int n, int heads, float bw)
{
    float down[NCCL_TUNE_MAX_RANKS], up[NCCL_TUNE_MAX_RANKS];
    memcpy(down, link, sizeof(float) * (size_t)n);
    memcpy(up, link, sizeof(float) * (size_t)n);
    for (int c = 0; c < heads; c++)
        for (int dir = 0; dir < 2; dir++) {
            float *l = dir ? up : down;
            for (int g = 0; g < n; g++) {
                float need = bw * (g == c ? 2.0f : 1.0f);
                if (l[g] < need)
                    return 0;
                l[g] = roundf((l[g] - need) * 1000) / 1000;
            }
        }
    return 1;
}

int nccl_nvls_kind_ok(coll_kind kind, coll_dtype dtype)
{
    if (kind == COLL_ALLGATHER)
        return 1;
    if (kind != COLL_ALLREDUCE && kind != COLL_REDUCESCATTER)
        return 0;
    switch (dtype) {
    case DTYPE_INT32: case DTYPE_UINT32: case DTYPE_INT64: case DTYPE_UINT64:
    case DTYPE_FP16: case DTYPE_BF16: case DTYPE_FP32: case DTYPE_FP64:
        return 1;
    default:
        return 0;
    }
}

static int version_before(const nccl_tune *nt, const char *v)
{
    const char *name = nccl_tune_version_name(nt->version);
    int a = 0, b = 0, c = 0, d = 0;
    sscanf(name, "%d.%d", &a, &b);
    sscanf(v, "%d.%d", &c, &d);
    return a < c || (a == c && b < d);
}

/* tuning.cc: the NVLS row (Simple only) for one node of n GPUs. */
static void tune(nccl_tune *nt, const nccl_env *env)
{
    nccl_tune_nvls *v = &nt->nvls;
    int n = nt->nranks;
    float ppn = (float)n, eff = nt->sm >= 100 ? 0.74f : 0.85f;
    int on = v->heads >= 2 && (env->proto == PROTO_AUTO || env->proto == PROTO_SIMPLE) &&
             (env->algo == ALGO_AUTO || env->algo == ALGO_NVLS);
    for (int k = 0; k < COLL_NKINDS; k++) {
        v->bw_GBps[k] = v->lat_us[k] = 0;
        if (k != COLL_ALLREDUCE && k != COLL_ALLGATHER && k != COLL_REDUCESCATTER)
            continue;
        float bw;
        if (version_before(nt, "2.28")) {
            /* 2.26: min(bwIntra, bwInter); 2.27 gives all-gather and
             * reduce-scatter their own; allreduce's algBw is 5/6 busBw. */
            bw = fminf(v->bw_intra_GBps, v->bw_inter_GBps);
            if (k != COLL_ALLREDUCE && !version_before(nt, "2.27"))
                bw = fminf(v->bw_intra_GBps * (ppn - 1.0f) / ppn, v->bw_inter_GBps * 0.9f);
        } else {
            /* "Convert to NVLS busBW/channel"; allreduce pipelines two operations. */
            float intra = v->bw_intra_GBps * eff * (float)(v->heads - 1) / (float)v->heads;
            intra *= k == COLL_ALLREDUCE ? 2.0f : (ppn - 1) / ppn;
            bw = fminf(intra, v->bw_inter_GBps);
        }
        float bus = (float)v->heads * bw;
        if (k == COLL_ALLREDUCE)
            bus *= version_before(nt, "2.28") ? 5.0f / 6.0f : ppn / (float)(2 * (n - 1));
        v->bw_GBps[k] = on ? bus : 0;
        v->lat_us[k] = nvls_lat_us;
    }
}

/* search.cc ncclTopoCompute for pattern NVLS on one node: fills heads,
 * bwIntra and bwInter of nt->nvls; -1 when no speed of the ladder fits. */
static int search(nccl_tune *nt, const float *link, const float *speed, int nspeed, int heads)
{
    nccl_tune_nvls *v = &nt->nvls;
    int n = nt->nranks;
    /* Pass 1: the first speed within maxBw and totalBw x n/(n-1) (not a
     * ring), then down the ladder until every head fits. */
    float total = nt->total_bw_GBps * (float)n * 1.0f / (float)(n - 1);
    int si = 0;
    while ((speed[si] > nt->max_bw_GBps || speed[si] * (float)heads > total) && si < nspeed - 1)
        si++;
    while (!fits(link, n, heads, speed[si]) && si < nspeed - 1)
        si++;
    if (!fits(link, n, heads, speed[si]))
        return -1;
    v->heads = heads;
    v->bw_intra_GBps = v->bw_inter_GBps = speed[si];
    /* Pass 2: bwInter climbs the ladder while below 2 x bwIntra (the search
     * at the same bwIntra always fits again). */
    while (si > 0 && v->bw_inter_GBps < v->bw_intra_GBps * 2)
        v->bw_inter_GBps = speed[--si];
    return 0;
}

int nccl_nvls_setup(nccl_tune *nt, const topo *t, const nccl_env *env, const float *speed,
                    int nspeed, const nccl_graphfile_graph *file, err *e)
{
    nccl_tune_nvls *v = &nt->nvls;
    memset(v, 0, sizeof *v);
    int n = nt->nranks;
    v->why = "NCCL_NVLS_ENABLE=0 (collsim's default: hwcheck measures with NVLS off)";
    if (!env->nvls_enable)
        return 0;
    float link[NCCL_TUNE_MAX_RANKS];
    nvs_links(t, n, nt->sm, link);
    int missing = -1;
    for (int r = 0; r < n && missing < 0; r++)
        if (link[r] <= 0)
            missing = r;
    char why[160];
    const char *no = NULL;
    if (n < 2)
        no = "one GPU";
    else if (nt->sm < 90)
        no = "NVLink SHARP (multicast) needs GPUs of SM 90 or later";
    else if (missing >= 0) {
        snprintf(why, sizeof why, "GPU%d has no NVLink to an NVSwitch (multicast needs every "
                 "GPU on it)", missing);
        no = why;
    }
    if (no) {
        if (env->nvls_enable == 1)
            return err_set(e, ERR_USAGE, "NCCL_NVLS_ENABLE=1 on '%s' (SM %d): %s", topo_name(t),
                           nt->sm, no);
        v->why = n < 2 ? "one GPU" : nt->sm < 90 ? "SM below 90: no multicast"
                                                 : "not every GPU is on an NVSwitch";
        return 0;
    }
    float lo = link[0];
    for (int r = 1; r < n; r++)
        lo = fminf(lo, link[r]);
    v->link_GBps = lo;
    int heads = n < MAX_ARITY ? n : MAX_ARITY;
    if (file) {
        /* search.cc: the file's graph instead of the search. */
        v->heads = file->nchannels;
        v->bw_intra_GBps = file->speed_intra_GBps;
        v->bw_inter_GBps = file->speed_inter_GBps;
        v->from_file = 1;
    } else if (search(nt, link, speed, nspeed, heads)) {
        if (env->nvls_enable == 1)
            return err_set(e, ERR_USAGE, "NCCL_NVLS_ENABLE=1 on '%s': no NVLS graph (the "
                           "NVSwitch links cannot carry %d heads at %.1f GB/s)", topo_name(t),
                           heads, (double)speed[nspeed - 1]);
        v->why = "the NVLS search found no graph";
        return 0;
    }
    /* nvls.cc: 16 thread blocks on SM 90, 24 on one SM 100 node (32 before 2.27). */
    v->nchannels = nt->sm >= 100 ? (version_before(nt, "2.27") ? 32 : 24) : 16;
    if (env->nvls_nchannels > 0)
        v->nchannels = env->nvls_nchannels;
    v->chunk_bytes = 128 << 10;
    v->support = 1;
    v->why = env->nvls_enable == 1 ? "NCCL_NVLS_ENABLE=1" : "NCCL_NVLS_ENABLE=2: multicast available";
    tune(nt, env);
    return 0;
}

float nccl_nvls_time_us(const nccl_tune *nt, coll_kind kind, coll_dtype dtype, uint64_t bytes)
{
    const nccl_tune_nvls *v = &nt->nvls;
    if (!v->support || kind < 0 || kind >= COLL_NKINDS || v->bw_GBps[kind] <= 0 ||
        !nccl_nvls_kind_ok(kind, dtype) || (kind != COLL_ALLREDUCE && nt->nranks > MAX_ARITY))
        return -1;
    return v->lat_us[kind] + (float)bytes / (1000 * v->bw_GBps[kind]);
}

int nccl_nvls_chunk_bytes(const nccl_tune *nt, uint64_t bytes)
{
    (void)bytes;
    const nccl_tune_nvls *v = &nt->nvls;
    uint64_t chunk = (uint64_t)v->chunk_bytes;
    uint64_t ops = (uint64_t)v->nchannels * (uint64_t)(v->heads > 0 ? v->heads : 1);
    if (bytes < 64 * ops * chunk && chunk > 65536)
        chunk = 65536;
    if (bytes < 8 * ops * chunk && chunk > 32768)
        chunk = 32768;
    if (bytes < 2 * ops * chunk && chunk > 16384)
        chunk = 16384;
    return (int)chunk;
}

void nccl_nvls_explain(const nccl_tune *nt, FILE *f)
{
    const nccl_tune_nvls *v = &nt->nvls;
    if (!v->support) {
        fprintf(f, "# NVLS: off (%s); NVLSTree: off (one node)\n", v->why);
        return;
    }
    fprintf(f, "# NVLS: on (%s): %d heads, NVSwitch links rated %.1f GB/s, %s %.1f/%.1f "
            "GB/s intra/inter; %d channels, chunk %d KiB; NVLSTree: off (one node)\n", v->why,
            v->heads, (double)v->link_GBps, v->from_file ? "NCCL_GRAPH_FILE" : "search",
            (double)v->bw_intra_GBps, (double)v->bw_inter_GBps, v->nchannels,
            v->chunk_bytes >> 10);
    fprintf(f, "#   %-13s %7s/%-6s\n", "NVLS", "lat", "bw");
    for (int k = 0; k < COLL_NKINDS; k++)
        if (k == COLL_ALLREDUCE || k == COLL_ALLGATHER || k == COLL_REDUCESCATTER)
            fprintf(f, "#   %-13s %7.1f/%6.2f\n", coll_kind_name((coll_kind)k),
                    (double)v->lat_us[k], (double)v->bw_GBps[k]);
}
