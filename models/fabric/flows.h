/* Point-to-point patterns: the simulated counterpart of `hwcheck flows`.
 * A case is a set of flows that run at the same time, each moving bytes
 * from an endpoint to another by writes, reads or copies; a pattern expands
 * into cases. Endpoints: a GPU index (>= 0) or host memory of NUMA node k,
 * written FLOWS_HOST(k). Pattern names are the ones in docs/formats.md. */
#ifndef MODELS_FABRIC_FLOWS_H
#define MODELS_FABRIC_FLOWS_H

#include "models/fabric/fabric.h"
#include "models/topo/topo.h"
#include "sim/err.h"

#define FLOWS_HOST(k) (-1 - (k))

/* write/read: a kernel's SM stores/loads into/from the peer; copy: a copy
 * engine (to host: a write by the source; otherwise a read by the
 * destination's engine); copy-write / copy-read: a copy engine of the source
 * pushing (posted writes) / of the destination pulling (reads); copy-staged:
 * a peer copy without P2P, staged by the driver through host memory (the
 * source's engine writes it there, the destination's reads it back). */
typedef enum flows_op {
    FLOWS_WRITE, FLOWS_READ, FLOWS_COPY, FLOWS_COPY_WRITE, FLOWS_COPY_READ, FLOWS_COPY_STAGED,
    FLOWS_NOPS
} flows_op;

/* How the flows of a case are issued. STREAMS: each flow from its own
 * stream, all at once (hwcheck flows). TORCH: each flow is one PyTorch
 * `dst.copy_(src)` issued in list order as the rtx6kpro copy benchmark issues
 * it (docs/model.md "How the contention rows were measured"): copy-write and
 * copy under a stream of the source, copy-read under one of the reader; every
 * copy runs on the source's copy engine, pushing. */
typedef enum flows_issue { FLOWS_ISSUE_STREAMS, FLOWS_ISSUE_TORCH } flows_issue;

/* Which of the TORCH issue's orderings apply (both by default): CE, a GPU's
 * copy engine runs its copies one at a time in issue order; DST, a copy
 * under the source's stream waits for the copies issued before it into the
 * same destination (PyTorch's barrier on the destination's current stream). */
enum { FLOWS_ORDER_CE = 1, FLOWS_ORDER_DST = 2 };

typedef struct flows_case {
    const char *pattern;
    flows_op op;
    flows_issue issue;
    int orders;              /* FLOWS_ORDER_* bits the TORCH issue applies; 0 = all */
    double bytes;            /* per flow */
    int blocks;              /* thread blocks of each kernel (write, read); 0 = enough
                                for the links (hwcheck's default, one per SM) */
    double inflight_B;       /* bytes each block keeps in flight (threads x loads of 16 B
                                per thread); 0 = hwcheck's plain copy, 512 x 1 x 16 */
    double threads;          /* threads per block; 0 = 512 */
    int n, cap;              /* flows, and room in src/dst */
    int *src, *dst;          /* owned: flows_case_free */
} flows_case;

/* Append flow src -> dst to c (a zeroed case starts empty); 0, or -1 when out
 * of memory. flows_case_free frees the flows and empties c; flows_cases_free
 * frees n cases and the array (NULL ok). */
int flows_case_add(flows_case *c, int src, int dst);
void flows_case_free(flows_case *c);
void flows_cases_free(flows_case *c, int n);

/* Name i of the pattern table (NULL past the end) and its description. */
const char *flows_pattern_name(int i);
const char *flows_pattern_desc(int i);
/* Expand a pattern over the GPUs listed in gpus (all GPUs if n == 0) into
 * a new array *cases (caller frees: flows_cases_free). ERR_USAGE for an
 * unknown pattern or too few GPUs for it (the message says how many it needs). */
int flows_expand(const topo *t, const char *pattern, flows_op op, double bytes,
                 const int *gpus, int ngpus, flows_case **cases, int *ncases, err *e);
/* Parse an explicit concurrent set "0>4,1>6,h0>2" into c (ERR_USAGE), a
 * zeroed case or one parsed before (its flows are freed first); c's flows are
 * the caller's to free (flows_case_free), on error too. */
int flows_parse(const topo *t, const char *spec, flows_op op, double bytes, flows_case *c,
                err *e);
/* The rate of a staged peer copy's chunk pipeline (docs/model.md "Staged
 * peer copies"): chunks of tp's staged_chunk_bytes C through a pool of
 * staged_buffers P, each half a copy (copy_setup + C over its route's rate
 * up_Bps / down_Bps), staged_handover between them; sharing copies in flight
 * share the pool: C / max(a, b, (a + b + L) x sharing / P) in B/s; 0 = none. */
double flows_staged_Bps(const topo_params *tp, double up_Bps, double down_Bps, int sharing);
/* Simulate one case on fabric f; time_ps[i] = time of flow i from the
 * common start to its last byte landing (time_ps has room for c->n). */
int flows_run(fabric *f, const flows_case *c, sim_ps *time_ps, err *e);
int flows_op_parse(const char *s, flows_op *op);   /* 0 ok, -1 unknown */
int flows_issue_parse(const char *s, flows_issue *is);   /* 0 ok, -1 unknown */
/* The flows that flow i of c waits for (they end before it starts) under
 * c's issue, written to pred (room for 2); returns how many. STREAMS: none. */
int flows_preds(const flows_case *c, int i, int pred[2]);
/* 0 if c can be issued as c->issue says; ERR_USAGE naming why not (TORCH:
 * copy ops between GPUs only). */
int flows_issue_check(const flows_case *c, err *e);
/* Make c's flow list its first n flows repeated rounds times, in order (a
 * benchmark's timed loop); -1 when out of memory. */
int flows_case_repeat(flows_case *c, int rounds);
const char *flows_op_name(flows_op op);

#endif
