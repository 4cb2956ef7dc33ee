/* Fabric: a topology laid onto the engine, with the PCIe transaction
 * mechanisms of docs/model.md: posted writes (one-way latency), non-posted
 * reads (round-trip latency, rate bounded by outstanding requests over the
 * round trip), the requester's transaction size (SM loads and stores vs
 * copy engines), a switch's arbitration collapse for posted writes and for
 * read completions, head-of-line coupling of one GPU's posted writes, and
 * groups of flows issued interleaved by one initiator that progress at one
 * rate.
 * Each direction of a topology link is one engine link (topology link l is
 * engine links 2l and 2l + 1; the fabric's internal budgets come after them,
 * coll_ctx_link_is_topo). The fabric owns its
 * sched; the topology is borrowed and must outlive it. */
#ifndef MODELS_FABRIC_FABRIC_H
#define MODELS_FABRIC_FABRIC_H

#include <stdint.h>

#include "models/topo/topo.h"
#include "sim/err.h"
#include "sim/sched.h"

/* Direction and requester: FAB_WRITE / FAB_READ are issued by a kernel's SM
 * loads and stores (PCIe requests of at most sm_req_bytes); FAB_CE_* by a
 * copy engine (writes of MPS bytes, reads of MRRS bytes). */
typedef enum fab_op { FAB_WRITE, FAB_READ, FAB_CE_WRITE, FAB_CE_READ } fab_op;

static inline int fab_is_read(fab_op op) { return op == FAB_READ || op == FAB_CE_READ; }

typedef struct fabric fabric;

fabric *fabric_new(const topo *t, err *e);   /* ERR_SYSTEM on OOM */
void fabric_free(fabric *f);                 /* NULL ok */
sched *fabric_sched(fabric *f);
const topo *fabric_topo(const fabric *f);
void fabric_reset(fabric *f);                /* drop tasks, keep links */
/* Flows added since the last reset run once (sched_run once): the record a
 * flow keeps for the arbitration rules is released when it ends.
 * fabric_live_groups: those records now held (flows in flight or pending). */
int fabric_live_groups(const fabric *f);

/* One transfer of bytes from node src to node dst. For FAB_WRITE the
 * initiator is src (posted writes); for FAB_READ it is dst, which loads
 * from src (non-posted). wire >= 1 multiplies the bytes on the wire (LL's
 * flags); extra_lat_ps is added to the path latency (protocol costs).
 * Returns the task id, or -1 with e set. */
int fabric_xfer(fabric *f, fab_op op, int src, int dst, double bytes, double wire,
                sim_ps extra_lat_ps, int track, const char *label, err *e);
/* A group: one initiator moves bytes_each to (write) or from (read) each of
 * the n peers with interleaved accesses, so all n streams advance at one
 * rate (one engine flow whose weight on a link is the number of streams
 * crossing it). Ends when every stream has arrived. */
int fabric_xfer_group(fabric *f, fab_op op, int initiator, const int *peers, int n,
                      double bytes_each, double wire, sim_ps extra_lat_ps, int track,
                      const char *label, err *e);
/* The same with a cap on the per-stream rate (the issuer's own limit, such
 * as the thread blocks of a kernel); cap_Bps <= 0: none. */
int fabric_xfer_group_cap(fabric *f, fab_op op, int initiator, const int *peers, int n,
                          double bytes_each, double wire, double cap_Bps, sim_ps extra_lat_ps,
                          int track, const char *label, err *e);
/* The same for a kernel of `blocks` thread blocks (0 = unknown, such as one
 * per SM): the count NVLink's gradual saturation sees (nvlink_half_blocks). */
int fabric_xfer_group_blocks(fabric *f, fab_op op, int initiator, const int *peers, int n,
                             double bytes_each, double wire, double cap_Bps, int blocks,
                             sim_ps extra_lat_ps, int track, const char *label, err *e);
/* The rate kernels issuing op (FAB_WRITE stores, FAB_READ loads) reach with
 * `blocks` thread blocks: blocks x cta_store/cta_load; 0 = no limit. */
double fabric_cta_cap_Bps(const fabric *f, fab_op op, int blocks);
/* Bytes in flight per thread block that cta_load_host describes: hwcheck's
 * copy kernel, 512 threads x one 16-byte load (docs/model.md "Thread blocks
 * against host memory"). */
#define FABRIC_CTA_REF_INFLIGHT_B 8192.0
#define FABRIC_CTA_REF_THREADS 512
/* The load rate from host memory of a block of `threads` threads (<= 0:
 * FABRIC_CTA_REF_THREADS) keeping inflight_B in flight (<= 0: the reference
 * block), against the reference block's (cta_load_host): its bytes per
 * round trip (Little's law), the trip growing by trip_load per 16-byte load
 * each thread keeps beyond the first and by (inflight_B - REF) / trip_Bps
 * (docs/model.md "A trip's issue"; unset: inflight_B / REF). 1 under
 * host-inflight off; trip-issue off drops the growth. */
double fabric_host_load_scale(const fabric *f, double inflight_B, double threads);
/* The rate per stream of a kernel of `blocks` blocks whose threads, every
 * iteration, load 16 bytes from each of `local` buffers in their own GPU's
 * memory and from each of `remote` peers, each load waiting for the one
 * before (docs/model.md "Serial loads"): blocks / (local / cta_store +
 * remote / cta_load); a rate left unset counts as free, 0 if all are. With
 * serial-loads off the local loads are free. */
double fabric_cta_serial_Bps(const fabric *f, int blocks, int local, int remote);
/* The same for kernels whose other end is node peer: host memory (a
 * TOPO_HOSTMEM or CPU node) has cta_store_host / cta_load_host when set. A
 * block's loads from host memory move its bytes in flight per round trip
 * (Little's law), so their rate is cta_load_host x fabric_host_load_scale
 * (inflight_B <= 0: the reference block; threads per block, <= 0: 512).
 * With neither cta_load_host nor cta_load measured, the reference block's
 * rate into GPU node gpu is FABRIC_CTA_REF_INFLIGHT_B over the route's read
 * round trip (docs/model.md "A block's loads from host memory"; gpu < 0:
 * none). Stores keep the reference figure. */
double fabric_cta_cap_to_Bps(const fabric *f, fab_op op, int blocks, int peer, int gpu,
                             double inflight_B, double threads);
/* NCCL channels' hop from GPU src to GPU dst, direct (stage < 0: posted SM
 * stores into dst) or staged through buffer node stage (SHM: src's stores
 * into host memory, dst's loads from it, pipelined slice by slice: one flow
 * over both routes, latency the write's one way plus the read's round trip).
 * wire: bytes on the wire per payload byte, times the channels bundled. With
 * block_wire > 0 each channel's thread block is a budget too: the flow
 * crosses the sender's one-block store budget (and, staged, the receiver's
 * load budget) with weight block_wire (one channel's wire bytes per payload
 * byte), shared with the channel's other flows in flight. */
int fabric_xfer_channel(fabric *f, int src, int stage, int dst, double bytes, double wire,
                        double block_wire, sim_ps extra_lat_ps, int track, const char *label,
                        err *e);
/* The same staged hop with its two halves' requesters given: up (FAB_WRITE
 * SM stores or FAB_CE_WRITE a copy engine) from src into stage, down
 * (FAB_READ or FAB_CE_READ) from stage into dst; only SM halves cross a block
 * budget. load_inflight_B: the bytes the receiving block keeps in flight
 * (<= 0: FABRIC_CTA_REF_INFLIGHT_B); against host memory its load budget
 * weighs FABRIC_CTA_REF_INFLIGHT_B / load_inflight_B as much (a block with 8
 * times the loads in flight reads 8 times as fast). ERR_SYSTEM if up is a
 * read or down a write. */
int fabric_xfer_staged(fabric *f, fab_op up, int src, int stage, fab_op down, int dst,
                       double bytes, double wire, double block_wire, double load_inflight_B,
                       sim_ps extra_lat_ps, int track, const char *label, err *e);
/* The same with the flow's rate capped at cap_Bps (<= 0: none): a staged
 * peer copy's chunk pipeline (models/fabric/flows.c). */
int fabric_xfer_staged_cap(fabric *f, fab_op up, int src, int stage, fab_op down, int dst,
                           double bytes, double wire, double block_wire, double load_inflight_B,
                           double cap_Bps, sim_ps extra_lat_ps, int track, const char *label,
                           err *e);
/* The payload rate of op's stream from node a to node b alone: its route's
 * narrowest link over the op's TLP weight (B/s; 0 = no route). */
double fabric_route_Bps(const fabric *f, fab_op op, int a, int b);
/* A bundle: n channel hops src[i] -> dst[i] (direct P2P writes) of bytes
 * each that advance together: one engine flow over all their routes and
 * their senders' block budgets, each stream weighing as in its own
 * fabric_xfer_channel; its latency is the longest route's. For hops the
 * caller has shown to advance together (models/coll/coll_nvls.c). */
int fabric_xfer_bundle(fabric *f, const int *src, const int *dst, int n, double bytes,
                       double wire, double block_wire, sim_ps extra_lat_ps, int track,
                       const char *label, err *e);
/* One thread block's step (docs/model.md "A block's ceiling"): n = 1 or 2
 * legs moving the same bytes at one rate (a reduceCopy loading over one and
 * storing over the other), latency their sum. A leg: FAB_WRITE stores a ->
 * b, FAB_READ loads into b from a (SM; copy-engine legs cross no block). */
typedef struct fabric_leg {
    fab_op op;
    int a, b;
} fabric_leg;
/* The block: its GPU node, the blocks the flow stands for (NCCL channels:
 * wire / blocks is one channel's), the bytes it keeps in flight per round
 * (<= 0: FABRIC_CTA_REF_INFLIGHT_B), rounds of loads per trip (LL128's poll
 * and reload: 2; <= 0: 1) and bytes it stores into its own GPU per payload
 * byte. With the GPU's ceiling (cta_ceil, cta_ceil_far; block-ceiling on)
 * each leg weighs wire x rounds x REF / inflight on its block budget and
 * the stores (far ones x cta_ceil / cta_ceil_far) cross the ceiling;
 * without, the reference block's weight (host loads: scaled by depth). */
typedef struct fabric_block {
    int gpu;
    double blocks, inflight_B, rounds, local_B;
    double threads;     /* its threads that load (<= 0: FABRIC_CTA_REF_THREADS) */
} fabric_block;
int fabric_xfer_block(fabric *f, const fabric_leg *legs, int n, const fabric_block *blk,
                      double bytes, double wire, sim_ps extra_lat_ps, int track, const char *label,
                      err *e);
/* 1 when a leg of op (FAB_WRITE: SM stores, FAB_READ: SM loads) a1 -> b1
 * meets the same fabric as a0 -> b0: as many links, each of the same kind,
 * capacity, latency and rules (uplink, NVLink, socket reads), the same
 * latency, head-of-line queue, block budget and, for a read, the same bound
 * and reader's budget; 0 if not or either has no route. For proofs that
 * hops are images of each other. */
int fabric_leg_alike(const fabric *f, fab_op op, int a0, int b0, int a1, int b1);
/* One hop of a symmetric pattern, for fabric_rotation_quotient: its legs
 * (nlegs 1 or 2, FAB_WRITE or FAB_READ, a -> b each) and the GPU node whose
 * block store budget a pass after it takes (fabric_block_pass), -1 none. */
typedef struct fabric_hop {
    int nlegs;
    fab_op op[2];
    int a[2], b[2];
    int pass_gpu;
} fabric_hop;
/* Can hops[0..n-1] run as hops[0..p-1] alone, with the same rates? 1 when
 * hop (r + p) mod n is hop r's image under a rotation of the links: leg by
 * leg alike (fabric_leg_alike's conditions), the links they cross (budgets
 * included) a permutation whose orbits all have n / p links, an uplink with
 * its collapse rule on crossed by hops 0..p-1 only on the orbit's first link.
 * Then, until fabric_reset, every flow crosses its links' orbits instead, and
 * an NVLink's saturation rule counts each crossing as the sender it stands
 * for (docs/model.md "Bundled steps"). Ranks are GPU indices. 0: not (or out
 * of memory), nothing changed. */
int fabric_rotation_quotient(fabric *f, const fabric_hop *hops, int n, int p);
/* The same with hop r's legs from fn: it writes up to cap legs into op, a, b
 * and *pass_gpu and returns their count (more than cap: nothing written, called
 * again with room), 0 if hop r cannot be bundled. Routes are not kept, so a
 * hop may reach every GPU (a one-shot's). Returns 1, 0, or -1 for a refusal
 * after hops beyond the first p matched (routes that do not turn with the
 * rotation: a caller need not try longer periods). */
typedef int fabric_hop_fn(void *ctx, int r, fab_op *op, int *a, int *b, int cap,
                          int *pass_gpu);
int fabric_rotation_quotient_fn(fabric *f, fabric_hop_fn *fn, void *ctx, int n, int p);
/* A pass of one thread block over bytes of local data on each GPU node of
 * gpu[0..n-1] (NCCL LL's final receive: reading its FIFO lines into the user
 * buffer), as fast as the block's trips allow: one flow over those blocks'
 * store budgets with weight block_wire and, with a ceiling, their ceilings
 * with weight local_B (its stores per byte); no fabric link. Without a block
 * budget it takes extra_lat_ps only. */
int fabric_block_pass(fabric *f, const int *gpu, int n, double bytes, double block_wire,
                      double local_B, sim_ps extra_lat_ps, int track, const char *label, err *e);
/* Latency of a transfer: one way for a write, the round trip for a read. */
/* node reaches many targets (a one-shot's source: topo_route_expect_many);
 * its routes are then walked from its tree without asking the topology
 * each time (the same routes). */
void fabric_expect_many(fabric *f, int node);
sim_ps fabric_lat_ps(const fabric *f, fab_op op, int src, int dst);
/* The read bound of one reader from one target with requests of op's size:
 * tags x request / RTT; 0 (no bound) when the route crosses no PCIe link. */
double fabric_read_cap_Bps(const fabric *f, fab_op op, int reader, int target);
/* Link capacity a payload byte of op costs on a PCIe link, relative to a
 * write of MPS bytes (>= 1 for smaller TLPs; 1 off PCIe). */
double fabric_tlp_weight(const fabric *f, fab_op op);
/* An uplink's rate (same units as nominal_Bps) under a root port's ordering
 * turnaround of turn_ps: n stream kinds, each cnt[i] streams of requester
 * src[i] towards root root[i], lu[i] their summed link units per TLP; the
 * nominal rate when fewer than 2 requesters (docs/model.md). alt: the share of
 * consecutive TLPs from different requesters (1: strict round robin;
 * fabric_turn_alternation). */
double fabric_turn_rate(const int *src, const int *root, const double *cnt, const double *lu,
                        int n, double nominal_Bps, double turn_ps, double alt);
/* The share of a class's consecutive TLPs at an uplink from different
 * requesters when the class's requesters send lambda TLPs of other classes
 * (their reads' requests, their writes beside completions) per TLP of the
 * class: (1 + 1 / (1 + B lambda)) / 2, B = FABRIC_TURN_MIX_B, fitted to the
 * transaction level (docs/model.md "The collapse from the turnaround"); 1 at
 * lambda 0. */
#define FABRIC_TURN_MIX_B 0.68
double fabric_turn_alternation(double lambda);
/* The mechanisms of docs/model.md that can be switched off for ablations
 * (all on by default); a bit set in off disables it for the next runs. */
enum { FAB_NO_COLLAPSE_WRITE = 1, FAB_NO_COLLAPSE_READ = 2, FAB_NO_HOL = 4,
       FAB_NO_REQ_SIZE = 8, FAB_NO_SOCKET_READ = 16, FAB_NO_NVLINK_SAT = 32,
       FAB_NO_SERIAL_LOADS = 64, FAB_NO_HOST_INFLIGHT = 128, FAB_NO_HOST_MIXED = 256,
       FAB_NO_BLOCK_CEIL = 512, FAB_NO_SHM_ORDER = 1024, FAB_NO_FIFO_L2 = 2048,
       FAB_NO_FIRST_ROUND = 4096, FAB_NO_L2_SOURCES = 8192,
       FAB_NO_SHM_POLL = 16384, FAB_NO_TRIP_ISSUE = 32768,
       FAB_NO_NVLINK_REQ = 65536, FAB_NO_TURN_MIX = 131072,
       FAB_NO_OWN_ROUND = 262144, FAB_NO_LOAD_TRIP = 524288,
       FAB_NO_WHOLE_ROUNDS = 1048576, FAB_NO_DLLP = 2097152,
       FAB_NO_ROUND_SKEW = 4194304,
       FAB_NO_STAGED_POOL = 8388608 };
void fabric_disable(fabric *f, int off);
/* The FAB_NO_* bits set (for mechanisms the callers apply: shm-order, the
 * SHM ring's legs in program order; fifo-l2, the last receive's loads of
 * its FIFO from L2; first-round, a custom kernel's exchange paying its
 * first round of packs inside the route's latency; l2-sources, a custom
 * kernel whose buffers fit its GPU's L2 loading its own sources from it;
 * shm-poll, a Simple receive's poll of its tail in host memory in the
 * block's program order; own-round, a pull's first round of its own pack
 * paid besides the route's latency; whole-rounds, a custom kernel's
 * partial last round of packs charged as a whole one; round-skew, a pull
 * stream's later rounds following its first round's serialization on the
 * link: models/coll). */
int fabric_disabled(const fabric *f);
/* Parse "hol,read-collapse" (names: write-collapse, read-collapse, hol,
 * req-size, socket-read, nvlink-sat, serial-loads, host-inflight, host-mixed,
 * block-ceiling, shm-order, fifo-l2, first-round, l2-sources, shm-poll,
 * trip-issue, nvlink-req, turn-others, own-round, load-trip, whole-rounds,
 * dllp, round-skew, staged-pool) into FAB_NO_* bits; ERR_USAGE naming the valid ones. */
int fabric_mech_parse(const char *list, int *off, err *e);
/* A mechanism's name and its ablation bit (fabric's, or another engine's). */
typedef struct fabric_mech {
    const char *name;
    int bit;
} fabric_mech;
/* The list parser behind fabric_mech_parse, for any table tab[0..n-1]: *off
 * = the OR of the named bits; ERR_USAGE "--without: unknown WHAT 'x' (the
 * names)" for a name not in tab (what: "mechanism", ...). */
int fabric_mech_list_parse(const fabric_mech *tab, size_t n, const char *what, const char *list,
                           int *off, err *e);
/* Root port above a node in the PCI hierarchy (-1 if none). */
int fabric_root_of(const fabric *f, int node);
/* Host memory node nearest GPU gpu (a TOPO_HOSTMEM of its socket, else the
 * CPU node itself), for SHM staging. */
int fabric_hostmem_of(const fabric *f, int gpu_node);

#endif
