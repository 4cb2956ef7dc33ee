/* Names and parsers of the collective vocabulary (models/coll_types.h): the
 * one table per enum that --help, reports and every reader use. */
#include "models/coll_types.h"

#include <stddef.h>
#include <strings.h>

static const char *const algo_names[ALGO_NALGOS] = {
    "auto", "ring", "tree", "oneshot", "twoshot", "oneshot-push", "twoshot-push",
    "nvls"};
static const char *const proto_names[PROTO_N] = {"auto", "LL", "LL128", "Simple"};
static const char *const dtype_names[DTYPE_N] = {
    "bf16", "fp16", "fp32", "int8", "uint8", "int32", "uint32", "int64", "uint64", "fp64",
    "fp8e4m3", "fp8e5m2"};
/* nccl-tests' names (src/common.cu, test_typenames) */
static const char *const dtype_nccl_names[DTYPE_N] = {
    "bfloat16", "half", "float", "int8", "uint8", "int32", "uint32", "int64", "uint64", "double",
    "f8e4m3", "f8e5m2"};
static const int dtype_sizes[DTYPE_N] = {2, 2, 4, 1, 1, 4, 4, 8, 8, 8, 1, 1};
static const char *const kind_names[COLL_NKINDS] = {"allreduce", "reducescatter",
                                                    "allgather", "broadcast", "alltoall"};

const char *coll_algo_name(coll_algo a) { return a >= 0 && a < ALGO_NALGOS ? algo_names[a] : NULL; }
const char *coll_proto_name(coll_proto p) { return p >= 0 && p < PROTO_N ? proto_names[p] : NULL; }
const char *coll_dtype_name(coll_dtype d) { return d >= 0 && d < DTYPE_N ? dtype_names[d] : NULL; }
const char *coll_dtype_nccl_name(coll_dtype d)
{
    return d >= 0 && d < DTYPE_N ? dtype_nccl_names[d] : NULL;
}
const char *coll_kind_name(coll_kind k) { return k >= 0 && k < COLL_NKINDS ? kind_names[k] : NULL; }
int coll_dtype_size(coll_dtype d) { return d >= 0 && d < DTYPE_N ? dtype_sizes[d] : 0; }

double coll_bus_factor(coll_kind k, int n)
{
    if (n < 1)
        return 0;
    return k == COLL_ALLREDUCE ? 2.0 * (n - 1) / n : k == COLL_BROADCAST ? 1.0 : (double)(n - 1) / n;
}

static int lookup(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcasecmp(names[i], s))
            return i;
    return -1;
}

int coll_algo_parse(const char *s, coll_algo *out)
{
    int i = lookup(algo_names, ALGO_NALGOS, s);
    if (i < 0)
        return -1;
    *out = (coll_algo)i;
    return 0;
}

int coll_proto_parse(const char *s, coll_proto *out)
{
    int i = lookup(proto_names, PROTO_N, s);
    if (i < 0)
        return -1;
    *out = (coll_proto)i;
    return 0;
}

int coll_dtype_parse(const char *s, coll_dtype *out)
{
    int i = lookup(dtype_names, DTYPE_N, s);
    if (i < 0)
        i = lookup(dtype_nccl_names, DTYPE_N, s);
    if (i < 0)
        return -1;
    *out = (coll_dtype)i;
    return 0;
}

int coll_kind_parse(const char *s, coll_kind *out)
{
    int i = lookup(kind_names, COLL_NKINDS, s);
    if (i < 0)
        return -1;
    *out = (coll_kind)i;
    return 0;
}
