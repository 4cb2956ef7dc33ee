/* Transaction-level engine: PCIe TLPs moved hop by hop over a topology, as a
 * discrete-event simulation of packets (docs/model.md, "The transaction-level
 * engine"). Writes are posted TLPs (MWr, header + payload of at most MPS or
 * an SM store's size); reads are non-posted requests (MRd) that hold one of
 * the requester's tags until their completions (CplD, split at the read
 * completion boundary) have all come back. Every directed link is a
 * serializer with a latency; its receiver's ingress buffer grants credits per
 * type (posted, non-posted, completion: headers and data), returned when a
 * TLP leaves it. An egress arbitrates round robin per ingress port; each
 * ingress keeps a FIFO per type and egress with PCIe's ordering (a request or
 * a completion never passes an earlier posted write on its way, so a stalled
 * posted write blocks what follows it; through the shared credits it also
 * stalls its sender). A root port forwarding peer
 * TLPs towards another root port pays an ordering turnaround when the
 * requester and the destination root port both change (the collapse
 * mechanism, a hypothesis fitted by calibrate).
 * Large transfers: with a window, the packets are simulated for the window,
 * then every flow advances at the rate it had over the window's second half
 * until the next flow ends, and the packets restart from an empty network
 * (docs/model.md states the approximation). Flows start at time 0, or when
 * their predecessors (tlp_flow_after) have ended: at the next phase, which
 * begins at once when a flow ends inside a window. */
#ifndef MODELS_TLP_TLP_H
#define MODELS_TLP_TLP_H

#include <stdint.h>

#include "models/topo/topo.h"
#include "sim/err.h"

/* Who issues: SM_* a kernel's stores/loads (TLPs of sm_req_bytes), CE_* a
 * copy engine (writes of MPS, reads of MRRS). */
typedef enum tlp_op { TLP_SM_WRITE, TLP_SM_READ, TLP_CE_WRITE, TLP_CE_READ } tlp_op;

static inline int tlp_is_read(tlp_op op) { return op == TLP_SM_READ || op == TLP_CE_READ; }

/* Mechanisms that can be switched off for ablations (tlp_disable). */
enum { TLP_NO_TURN = 1, TLP_NO_CREDITS = 2, TLP_NO_ORDER = 4, TLP_NO_TAGS = 8,
       TLP_NO_DLLP = 16 };

typedef struct tlp_net tlp_net;

/* Counters of the last run. */
typedef struct tlp_stats {
    uint64_t events;    /* events handled */
    uint64_t tlps;      /* TLPs sent on links (hops) */
    int phases;         /* packet phases (1 = exact, no extrapolation) */
    /* The ordering turnaround in the first packet phase: TLPs a root port
     * forwarded up into its CPU, per class (0 posted, 1 completions), and of
     * them those whose requester and destination root port both differ from
     * the previous one's (the turning share; docs/model.md). */
    uint64_t up[2], turned[2];
    uint64_t switched[2];  /* of up[], those whose requester differs from the previous one's */
} tlp_stats;

/* A network over topology t (borrowed; must outlive it). ERR_SYSTEM on OOM. */
tlp_net *tlp_new(const topo *t, err *e);
void tlp_free(tlp_net *n);                 /* NULL ok */
void tlp_reset(tlp_net *n);                /* drop the flows, keep the network */
void tlp_disable(tlp_net *n, int off);     /* TLP_NO_* bits for the next runs */
/* Parse "turn,credits" (names: turn, credits, order, tags, dllp) into TLP_NO_*
 * bits; ERR_USAGE naming the valid ones. */
int tlp_mech_parse(const char *list, int *off, err *e);
/* A transfer of bytes from node src to node dst, starting at 0: for writes
 * src is the writer; for reads dst is the reader and src the completer.
 * Both must be endpoints (GPU or host memory) joined by a route over PCIe,
 * fabric, socket or memory links (ERR_USAGE for NVLink). Returns the flow id
 * or -1 with e set. */
int tlp_flow(tlp_net *n, tlp_op op, int src, int dst, double bytes, err *e);
/* Flow `after` starts only once flow `before` (added earlier) has ended: a
 * copy queued behind another on one engine or stream. ERR_USAGE for bad ids,
 * ERR_SYSTEM on OOM. A flow with no predecessor starts at 0. */
int tlp_flow_after(tlp_net *n, int after, int before, err *e);
/* Run every flow; window_ps > 0 allows the windowed approximation (0: every
 * TLP of every flow). ERR_CHECK when flows stop making progress. */
int tlp_run(tlp_net *n, int64_t window_ps, err *e);
/* Time the last byte of flow id reached its destination (a read: the
 * reader), in ps from the start. */
int64_t tlp_end_ps(const tlp_net *n, int id);
const topo *tlp_topo(const tlp_net *n);
tlp_stats tlp_last_stats(const tlp_net *n);
/* Completion payloads of a read of bytes starting at byte address addr:
 * split at every RCB boundary, each completion at most cpl_max bytes (a
 * multiple of rcb). Fills sizes (at most max) and returns the count. */
int tlp_split_cpl(int64_t addr, int bytes, int rcb, int cpl_max, int *sizes, int max);

#endif
