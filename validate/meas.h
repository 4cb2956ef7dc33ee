/* Measurements as collsim reads them: hwcheck's csv files (docs/formats.md,
 * "Measurements": `# key: value` metadata, one csv header, rows) and plain
 * nccl-tests output (its table and `#` header lines). One file is one data
 * set of one kind; everything it holds lives in the set's arena. */
#ifndef VALIDATE_MEAS_H
#define VALIDATE_MEAS_H

#include <stdint.h>
#include <stdio.h>

#include "models/coll_types.h"
#include "models/topo/topo.h"
#include "sim/err.h"

struct coll_req;

typedef enum meas_kind {
    MEAS_P2P, MEAS_FLOWS, MEAS_HOST, MEAS_LAUNCH, MEAS_COLL, MEAS_REPLAY,
    MEAS_NKINDS
} meas_kind;

typedef enum meas_op {
    MEAS_WRITE, MEAS_READ, MEAS_COPY, MEAS_COPY_WRITE, MEAS_COPY_READ, MEAS_COPY_STAGED,
    MEAS_NOPS
} meas_op;

/* Endpoints: a GPU index >= 0, pinned host memory of NUMA node n as
 * MEAS_HOST_EP(n), or MEAS_ANY for the `*` of an aggregate row. */
#define MEAS_HOST_EP(n) (-2 - (n))
#define MEAS_IS_HOST(ep) ((ep) <= -2)
#define MEAS_HOST_NODE(ep) (-2 - (ep))
#define MEAS_ANY (-1)

/* A transfer row (kinds p2p, flows, host). time_us and bw_GBps are NaN
 * where the source published only the case's aggregate. */
typedef struct meas_xfer {
    int case_id;
    const char *pattern;   /* "pair", "bidir", "latency", ... */
    meas_op op;
    int flow;              /* -1: the case's aggregate row */
    int src, dst;          /* endpoints as above */
    uint64_t bytes;
    double time_us, bw_GBps;
    long line;             /* source line, for messages */
} meas_xfer;

typedef struct meas_launch {
    const char *what;      /* launch, graph-node, graph-launch, sync */
    long count;
    double time_us;
    long line;
} meas_launch;

/* A collective point (hwcheck coll rows, or one nccl-tests row, whose
 * out-of-place time is used). algo/proto are names as written ("ring",
 * "LL", "auto" when not known). */
typedef struct meas_coll {
    uint64_t bytes;
    uint64_t count;
    const char *dtype, *algo, *proto, *impl;
    int channels;          /* 0 if not known */
    double time_us, algbw_GBps, busbw_GBps;
    int graph;
    long wrong;
    double probe_us;       /* the host probe taken before the row (hwcheck coll's probe_us), 0 = none */
    long line;
} meas_coll;

typedef struct meas_replay {
    const char *trace, *allreduce;
    long cycles;
    double tokens;       /* a mean over cycles may be fractional */
    double cycle_us, tok_per_s, compute_us, comm_us, launch_us, idle_us;
    long line;
} meas_replay;

typedef struct meas_set meas_set;

/* Read a file (csv or nccl-tests, told apart by content; nccl-tests text
 * includes collsim coll's own tables, one or several algorithms, whose
 * `# key: value` header becomes metadata); name is used in messages.
 * ERR_INPUT "name:line: what" on anything malformed. */
int meas_read(FILE *f, const char *name, meas_set **out, err *e);
int meas_load(const char *path, meas_set **out, err *e); /* ERR_SYSTEM if unreadable */
void meas_free(meas_set *m);                            /* NULL ok */

const char *meas_name(const meas_set *m);
meas_kind meas_kind_of(const meas_set *m);
int meas_is_nccl_tests(const meas_set *m);
/* Metadata value of key (first occurrence), NULL if absent. */
const char *meas_meta(const meas_set *m, const char *key);
/* Collective kind of a coll set ("allreduce", ...): metadata `collective`,
 * else the nccl-tests binary or `command` names it; "allreduce" if unknown. */
const char *meas_collective(const meas_set *m);
/* The NCCL settings a coll set ran under, on topology t: NCCL's defaults,
 * the version its `# nccl:` line names where emulated, meas_set_run_env's
 * settings, then the `--env NAME=VALUE` of its command line that the model
 * knows (others ignored). */
nccl_env meas_nccl_env(const meas_set *m, const topo *t);
/* Settings the run of m had but its file does not record (nccl-tests
 * output has no command line): envs is "NCCL_X=Y" words separated by
 * spaces, as coll_env_set reads each (the caller has checked them;
 * "" clears). meas_nccl_env applies them before the file's own --env, which
 * win. ERR_USAGE if longer than a line. */
int meas_set_run_env(meas_set *m, const char *envs, err *e);
/* The NCCL version a coll set's `# nccl:` line names when collsim does not
 * emulate it (meas_nccl_env then keeps the default, the newest), else NULL. */
const char *meas_nccl_unemulated(const meas_set *m);
/* The request a measured collective row k of m stands for, on t with
 * nranks ranks: kind, bytes, channels, graph, data type, the algorithm
 * (hwcheck's impl where algo does not name one: the custom kernels), the
 * protocol ("-": none, PROTO_AUTO), meas_nccl_env's settings, and whether
 * NCCL registered the buffers (a graph capture registers cuMem buffers,
 * NCCL_GRAPH_REGISTER=1: hwcheck's ncclMemAlloc ones and nccl-tests'; not
 * hwcheck --alloc cuda's `# buffers: cudaMalloc`). *algo_name gets the
 * name that parsed. validate and calibrate both build theirs here, so a fit
 * and its check predict the same request. ERR_INPUT "file:line: unknown
 * data type / algorithm / protocol". */
int meas_coll_req(const meas_set *m, const meas_coll *k, const topo *t, coll_kind kind,
                  int nranks, struct coll_req *q, const char **algo_name, err *e);
/* A data type as hwcheck and nccl-tests name it ("float", "float32",
 * "half", "float16", "bfloat16") or collsim does; 0 ok, -1 unknown. */
int meas_dtype_parse(const char *s, coll_dtype *out);
/* Number of ranks of a coll set (metadata `ranks`, hwcheck `virtual_ranks`,
 * nccl-tests Rank lines, or the entries of `gpus`); 0 if unknown. */
int meas_ranks(const meas_set *m);
/* GPUs one host thread drove in an nccl-tests run: its header's `nGpus N`,
 * else `-g N` / `-gN` / `--ngpus N` in a `# command:` line naming an
 * nccl-tests binary (`*_perf`); for hwcheck, which drives every GPU of a run
 * from one thread, the file's ranks (else its -g); 1 otherwise. */
int meas_gpus_per_thread(const meas_set *m);
/* The file's host probe (hwcheck coll's `host_probe`: its process's one-rank
 * NCCL group of one send and one receive, nccl-p2p-1-host) in ps; 0 if none. */
int64_t meas_host_probe_ps(const meas_set *m);
/* Host cost of one back-to-back NCCL iteration of q as m's run issued it:
 * topo_nccl_probe_issue_ps with the file's GPUs per thread and the host probe
 * of row k (its probe_us; k may be NULL), else of the file, else none; plus
 * topo_nccl_chan_issue_ps for the channels the prediction ran on. */
int64_t meas_nccl_issue_ps(const meas_set *m, const meas_coll *k, const topo_params *tp,
                           const struct coll_req *q, int channels);
/* N when the file's ranks were N virtual ranks on one GPU (hwcheck
 * --virtual-ranks, metadata `virtual_ranks`); 0 when they were real GPUs. */
int meas_virtual_ranks(const meas_set *m);

size_t meas_nxfer(const meas_set *m);
const meas_xfer *meas_xfer_at(const meas_set *m, size_t i);
size_t meas_nlaunch(const meas_set *m);
const meas_launch *meas_launch_at(const meas_set *m, size_t i);
size_t meas_ncoll(const meas_set *m);
const meas_coll *meas_coll_at(const meas_set *m, size_t i);
size_t meas_nreplay(const meas_set *m);
const meas_replay *meas_replay_at(const meas_set *m, size_t i);

const char *meas_kind_name(meas_kind k);
int meas_kind_parse(const char *s, meas_kind *out);   /* 0 ok, -1 unknown */
const char *meas_op_name(meas_op op);
/* Format an endpoint ("3", "host1", "*") into buf (>= 16 bytes); returns buf. */
const char *meas_ep_name(int ep, char *buf);

#endif
