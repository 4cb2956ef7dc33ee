/* Fabric: a topology laid onto the engine, with the PCIe transaction
 * mechanisms of docs/model.md: posted writes (one-way latency), non-posted
 * reads (round-trip latency, rate bounded by outstanding requests over the
 * round trip), a switch's posted-write arbitration collapse, and groups of
 * flows issued interleaved by one initiator that progress at one rate.
 * Each direction of a topology link is one engine link. The fabric owns its
 * sched; the topology is borrowed and must outlive it. */
#ifndef MODELS_FABRIC_H
#define MODELS_FABRIC_H

#include <stdint.h>

#include "models/topo.h"
#include "sim/err.h"
#include "sim/sched.h"

typedef enum fab_op { FAB_WRITE, FAB_READ } fab_op;

typedef struct fabric fabric;

fabric *fabric_new(const topo *t, err *e);   /* ERR_SYSTEM on OOM */
void fabric_free(fabric *f);                 /* NULL ok */
sched *fabric_sched(fabric *f);
const topo *fabric_topo(const fabric *f);
void fabric_reset(fabric *f);                /* drop tasks, keep links */

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
/* A bundle: n writes src[i] -> dst[i] of bytes each that advance together
 * (one engine flow whose weight on a link is wire times the number of its
 * routes crossing it); its latency is the longest route's. For streams the
 * caller has shown to be symmetric (models/coll_ring.c). */
int fabric_xfer_bundle(fabric *f, const int *src, const int *dst, int n, double bytes,
                       double wire, sim_ps extra_lat_ps, int track, const char *label,
                       err *e);
/* Latency of a transfer: one way for a write, the round trip for a read. */
sim_ps fabric_lat_ps(const fabric *f, fab_op op, int src, int dst);
/* The read bound of one reader from one target: tags x request / RTT; 0
 * (no bound) when the route crosses no PCIe link (NVLink reads). */
double fabric_read_cap_Bps(const fabric *f, int reader, int target);
/* Root port above a node in the PCI hierarchy (-1 if none). */
int fabric_root_of(const fabric *f, int node);
/* Host memory node nearest GPU gpu (a TOPO_HOSTMEM of its socket, else the
 * CPU node itself), for SHM staging. */
int fabric_hostmem_of(const fabric *f, int gpu_node);

#endif
