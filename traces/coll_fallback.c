/* TEMPORARY, to be deleted when models/coll.c lands in main: weak
 * definitions of the models/coll.h name tables, so that traces/ links before
 * the collective model exists. The real (strong) definitions replace these
 * at link time. coll_ctx_new returns NULL here, and every caller reports
 * "collective model not available" instead of predicting. */
#include <string.h>
#include <strings.h>

#include "models/coll.h"

#define WEAK __attribute__((weak))

static const char *const kind_names[] = {"allreduce", "reducescatter", "allgather",
                                         "broadcast", "alltoall"};
static const char *const algo_names[] = {"auto", "ring", "tree", "oneshot", "twoshot",
                                         "oneshot-push", "twoshot-push"};
static const char *const proto_names[] = {"auto", "LL", "LL128", "Simple"};
static const char *const dtype_names[] = {"bf16", "fp16", "fp32"};

static int find(const char *const *tab, int n, const char *s, int icase)
{
    for (int i = 0; i < n; i++)
        if (icase ? !strcasecmp(tab[i], s) : !strcmp(tab[i], s))
            return i;
    return -1;
}

WEAK const char *coll_algo_name(coll_algo a)
{
    return (unsigned)a < ALGO_NALGOS ? algo_names[a] : NULL;
}
WEAK const char *coll_proto_name(coll_proto p)
{
    return (unsigned)p < PROTO_N ? proto_names[p] : NULL;
}
WEAK const char *coll_dtype_name(coll_dtype d)
{
    return (unsigned)d < DTYPE_N ? dtype_names[d] : NULL;
}
WEAK const char *coll_kind_name(coll_kind k)
{
    return (unsigned)k < COLL_NKINDS ? kind_names[k] : NULL;
}
WEAK int coll_algo_parse(const char *s, coll_algo *out)
{
    int i = find(algo_names, ALGO_NALGOS, s, 0);
    if (i >= 0)
        *out = (coll_algo)i;
    return i >= 0 ? 0 : -1;
}
WEAK int coll_proto_parse(const char *s, coll_proto *out)
{
    int i = find(proto_names, PROTO_N, s, 1);
    if (i >= 0)
        *out = (coll_proto)i;
    return i >= 0 ? 0 : -1;
}
WEAK int coll_dtype_parse(const char *s, coll_dtype *out)
{
    int i = find(dtype_names, DTYPE_N, s, 0);
    if (i >= 0)
        *out = (coll_dtype)i;
    return i >= 0 ? 0 : -1;
}
WEAK int coll_kind_parse(const char *s, coll_kind *out)
{
    int i = find(kind_names, COLL_NKINDS, s, 0);
    if (i >= 0)
        *out = (coll_kind)i;
    return i >= 0 ? 0 : -1;
}
WEAK int coll_dtype_size(coll_dtype d) { return d == DTYPE_FP32 ? 4 : 2; }

WEAK coll_ctx *coll_ctx_new(const topo *t)
{
    (void)t;
    return NULL;
}
WEAK void coll_ctx_free(coll_ctx *c) { (void)c; }
WEAK void coll_req_init(coll_req *r, const topo *t)
{
    (void)t;
    memset(r, 0, sizeof *r);
    r->env.p2p_level = -1;
    r->nranks = 8;
}
WEAK int coll_env_set(nccl_env *env, const char *assignment, err *e)
{
    (void)env;
    return err_set(e, ERR_USAGE, "%s: the collective model is not built yet", assignment);
}
WEAK int coll_predict(coll_ctx *c, const coll_req *r, coll_result *out, err *e)
{
    (void)c, (void)r, (void)out;
    return err_set(e, ERR_SYSTEM, "the collective model is not built yet");
}
WEAK int topo_load(const char *name_or_path, topo **out, err *e)
{
    *out = NULL;
    return err_set(e, ERR_SYSTEM, "%s: topologies are not built yet", name_or_path);
}
WEAK void topo_free(topo *t) { (void)t; }
WEAK int topo_ngpus(const topo *t)
{
    (void)t;
    return 0;
}
WEAK const topo_params *topo_params_get(const topo *t)
{
    (void)t;
    return NULL;
}
