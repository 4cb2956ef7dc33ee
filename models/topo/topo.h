/* Topology: a graph of nodes (GPUs, PCIe switches, root ports, CPU sockets,
 * NVSwitches, host memory) joined by links; each link is two directed
 * resources. Routes follow the real data path (lowest total latency, ties by
 * fewest hops, then by node order); path types (PIX/PXB/PHB/NODE/SYS/NV#)
 * are derived from the PCI hierarchy as nvidia-smi and NCCL see it, which
 * may differ from the data path (a switch's internal fabric between virtual
 * switches is a data shortcut that nvidia-smi still reports as NODE).
 * A topology lives in its own arena; topo_free releases everything. */
#ifndef MODELS_TOPO_TOPO_H
#define MODELS_TOPO_TOPO_H

#include <stdint.h>
#include <stdio.h>

#include "sim/err.h"

typedef enum topo_kind {
    TOPO_GPU,
    TOPO_SWITCH,   /* PCIe switch (or one virtual switch of a chip) */
    TOPO_ROOT,     /* CPU root port / host bridge */
    TOPO_CPU,      /* a socket (its internal fabric, memory controller) */
    TOPO_NVSWITCH,
    TOPO_HOSTMEM,  /* a socket's DRAM, target of SHM staging and host copies */
    TOPO_NKINDS
} topo_kind;

typedef enum topo_link_kind {
    LINK_PCIE,     /* gen/width known: raw rate from the link math */
    LINK_FABRIC,   /* switch-internal path between virtual switches */
    LINK_SOCKET,   /* xGMI / UPI / Infinity Fabric between sockets or quadrants */
    LINK_NVLINK,
    LINK_MEM,      /* CPU <-> its DRAM */
    LINK_NKINDS
} topo_link_kind;

typedef struct topo_node {
    const char *name;
    topo_kind kind;
    int gpu;        /* GPU index for TOPO_GPU, else -1 */
    int numa;       /* socket / NUMA id, -1 if unknown */
    int pci_parent; /* node id of the parent in the PCI hierarchy, -1 at a CPU */
    int read_tags;  /* a GPU's own outstanding-read limit; 0 = the params' read_tags */
} topo_node;

typedef struct topo_link {
    int a, b;             /* node ids; the link is full duplex */
    topo_link_kind kind;
    int pcie_gen, pcie_width;   /* LINK_PCIE only */
    int nvlinks;                /* LINK_NVLINK: number of NVLink lanes bundled */
    double bw_Bps;        /* usable data bandwidth per direction (after the
                             payload efficiency of writes of MPS bytes); 0 on
                             a LINK_PCIE link: topo_finish computes it from
                             gen/width and the params (topo_pcie_bw_Bps) */
    int64_t lat_ps;       /* one-way traversal latency of this hop */
    double bw_back_Bps;   /* direction b->a when > 0 (an asymmetric path, such
                             as a root port forwarding peer traffic); 0 = bw_Bps */
} topo_link;

/* Path types, in NCCL's order (lower = closer). */
typedef enum topo_path {
    PATH_LOC = 0, PATH_NVL = 1, PATH_NVB = 2, PATH_PIX = 4, PATH_PXB = 5,
    PATH_PHB = 8, PATH_NODE = 8 /* nvidia-smi NODE == NCCL PHB */, PATH_SYS = 9
} topo_path;

/* The host CPU as NCCL classifies it (src/graph/topo.cc): it sets the
 * bandwidth NCCL assumes between sockets and a few NCCL defaults. */
typedef enum topo_cpu {
    CPU_UNKNOWN, CPU_AMD, CPU_INTEL_BDW, CPU_INTEL_SKL, CPU_INTEL_SRP, CPU_INTEL_ERP,
    CPU_ARM, CPU_POWER, CPU_ZHAOXIN, CPU_ZHAOXIN_YONGFENG, CPU_NKINDS
} topo_cpu;

/* Machine-wide PCIe and transaction parameters (docs/model.md). */
typedef struct topo_params {
    int pcie_mps_bytes;            /* max payload size of writes */
    int pcie_mrrs_bytes;           /* max read request size */
    int pcie_tlp_overhead_bytes;   /* framing + header + LCRC per TLP */
    int read_tags;                 /* outstanding non-posted reads per GPU */
    int ce_read_tags;              /* of those, a GPU's copy engine may hold; 0 = all */
    int64_t read_extra_lat_ps;     /* completer turnaround added to a read RTT */
    double arb_collapse_Bps;       /* posted-write arbitration collapse rate,
                                      0 = switches do not collapse */
    double arb_collapse_read_Bps;  /* same for read completions leaving a
                                      switch upwards, 0 = they do not collapse */
    double socket_read_Bps;        /* peer read completions across a socket
                                      link, per direction; 0 = link rate only */
    int sm_req_bytes;              /* largest PCIe request an SM load/store
                                      becomes after coalescing */
    double cta_store_Bps;          /* peer stores one thread block (512
                                      threads) sustains; 0 = no limit */
    double cta_load_Bps;           /* peer loads one thread block sustains */
    double cta_store_host_Bps;     /* the same into / from pinned host memory (an SHM
                                      channel, hwcheck host --op kernel); 0 = as */
    double cta_load_host_Bps;      /* into a peer */
    double host_sm_mixed_Bps;      /* one GPU's SM loads from and stores into pinned host
                                      memory together, over its PCIe link (both
                                      directions counted); 0 = no such bound */
    double cta_ceil_Bps;           /* one thread block's ceiling copying inside its GPU,
                                      however many bytes it keeps in flight; with
                                      cta_ceil_far_Bps set, a block's rate follows its
                                      bytes in flight up to these; 0 = the reference
                                      block (cta_store) for every depth */
    double cta_ceil_far_Bps;       /* the same storing outside its GPU (host memory,
                                      assumed for a peer) */
    double l2_load_speedup;        /* a block's loads hitting L2 against the same from
                                      HBM (the round trip's ratio); <= 1 = none */
    int64_t trip_load_ps;          /* what a block's trip of loads takes longer per
                                      16-byte load each thread keeps in flight beyond
                                      the first (the SM issues a thread's loads in
                                      turn); 0 = nothing */
    double trip_Bps;               /* the SM's issue of a trip's bytes: a trip takes
                                      bytes / trip_Bps longer; 0 = nothing (both:
                                      docs/model.md "A trip's issue") */
    double l2_bytes;               /* a GPU's L2: a custom kernel whose buffers fit
                                      loads its own sources from it; 0 = not known */
    int64_t launch_ps;             /* kernel launch overhead */
    int64_t graph_node_ps;         /* per-node cost inside a CUDA graph */
    int64_t kernel_turn_ps;        /* an eager kernel queued behind another on its stream:
                                      the GPU's turnaround between them; 0 = graph_node_ps */
    double hostmem_Bps;            /* per-socket DRAM bandwidth for SHM staging */
    int64_t kernel_base_ps;        /* device-side fixed cost of a custom
                                      allreduce kernel (start to finish) */
    double gpu_mem_Bps;            /* GPU memory bandwidth (local reduces) */
    int64_t copy_setup_ps;         /* fixed cost of one copy-engine transfer
                                      (cudaMemcpyAsync: engine start, completion) */
    int64_t fence_sys_ps;          /* a system-scope fence before a release store
                                      (a custom kernel's barrier signal) beyond
                                      the release store alone; 0 = not known */
    int64_t fence_ack_ps;          /* what that fence waits, after a block's stores
                                      into a peer GPU, for them (beyond the same fence
                                      after stores into the GPU's own memory: hwcheck
                                      launch --post --peer); 0 = not measured: the
                                      route's write latency, the acknowledgement's
                                      trip back (docs/model.md "A remote load against
                                      a remote store") */
    int64_t block_wait_ps;         /* a custom kernel's barrier, per block: the mean
                                      of each block's own wait (its flag seen at a
                                      poll, its fence drained), so B blocks' slowest
                                      pays block_wait x (H_B - 1) more than one
                                      block's; 0 = not known: none */
    int64_t event_record_ps;       /* host cost of one cudaEventRecord: a timed loop's
                                      start and end events (validate/points.h
                                      pts_loop_iter_ps); 0 = none */
    int64_t loop_issue_ps;         /* what a timed loop's issue of a copy kernel costs
                                      beyond launch_ps (hwcheck's cudaSetDevice before
                                      it, its error check after); 0 = none */
    int64_t copy_host_setup_ps;    /* copy_setup_ps for a copy to or from host memory,
                                      where it differs from a peer copy's (fitted on
                                      host copies); 0 = copy_setup_ps */
    int64_t copy_issue_ps;         /* host cost of issuing one cudaMemcpyAsync: a
                                      timed loop's floor per copy, as launch_ps is
                                      per kernel; 0 = not known (no floor) */
    /* A peer copy without P2P (op copy-staged), staged by the driver through
     * pinned host memory in chunks (docs/model.md "Staged peer copies"): */
    double staged_chunk_bytes;     /* a staging buffer's size C (assumed 1 MiB) */
    int staged_buffers;            /* buffers P in the one pool of a process,
                                      shared by its staged copies in flight (2) */
    int64_t staged_handover_ps;    /* per chunk, the driver's wait between its two
                                      halves L (fitted; 0 = none) */
    int gpu_sm;                    /* GPUs' compute capability x10 (120 = 12.0);
                                      0 = unknown (NCCL emulation assumes 80) */
    topo_cpu cpu;                  /* host CPU family, CPU_UNKNOWN if not given */
    /* The transaction-level engine (models/tlp, docs/model.md). Credits are
     * what an ingress port grants per TLP type (posted, non-posted,
     * completion), by the kind of node it belongs to; 0 = unlimited. */
    int tlp_rcb_bytes;             /* read completion boundary */
    int tlp_cpl_bytes;             /* largest completion a completer sends */
    int tlp_sw_hdr, tlp_sw_data_bytes;   /* switch ingress: headers, data bytes */
    int tlp_rc_hdr, tlp_rc_data_bytes;   /* root port and CPU ingress */
    int tlp_ep_hdr, tlp_ep_data_bytes;   /* GPU / memory ingress (completions unlimited) */
    int tlp_rc_cpl_hdr, tlp_rc_cpl_data_bytes; /* root port and CPU completion
                                                  credits (0 = unlimited) */
    int64_t tlp_fc_ps;             /* a freed credit reaches the sender (UpdateFC) */
    int64_t tlp_turn_ps;           /* root port peer forwarding: ordering turnaround of
                                      posted writes when requester and destination
                                      root port both change; 0 = none */
    int64_t tlp_turn_cpl_ps;       /* the same for completions */
    int tlp_dllp_bytes;            /* PCIe links: wire bytes of the DLLPs (Ack,
                                      UpdateFC) a receiver returns on the link's
                                      other direction per TLP it takes; 0 = none */
    /* NCCL's runtime costs per protocol, indexed TOPO_NCCL_LL, _LL128,
     * _SIMPLE (docs/model.md "NCCL's runtime costs"): the kernel's fixed
     * start per collective and the device-side cost of every pipelined step. */
    int64_t nccl_start_ps[3];
    int64_t nccl_step_ps[3];
    int64_t nccl_call_ps;          /* host cost of one eager NCCL call; 0 = launch_ps +
                                      nccl_host_ps */
    int64_t nccl_graph_call_ps;    /* per NCCL call inside a CUDA graph; 0 = graph_node_ps */
    int64_t nccl_host_ps;          /* NCCL's host work in an eager collective on one rank,
                                      beyond a kernel launch (its front end and the copy
                                      it ends in, enqueue.cc ncclLaunchOneRank) */
    int64_t nccl_group_ps;         /* NCCL's host work in a group end that launches its
                                      kernel (plan, launch prepare), beyond the launch */
    int64_t nccl_p2p_op_ps;        /* host cost of each ncclSend / ncclRecv in a group */
    double nvlink_req_bytes;       /* wire bytes of an NVLink read request (and of a
                                      data packet's header): each read of R bytes loads
                                      the other direction with req / (R + req) of its
                                      bytes; 0 = requests cost nothing */
    int64_t nccl_chan_ps;          /* NCCL's host work per channel of an eager plan beyond
                                      its first (enqueue.cc: a proxy op, a work batch), per
                                      rank; 0 = none */
    double nvlink_half_blocks;     /* thread blocks at which SM traffic gets half an
                                      NVLink direction's rate (gradual saturation
                                      C N / (N + N0)); 0 = the full rate always */
} topo_params;

/* Index of a protocol in topo_params' nccl_* arrays (NCCL's own order). */
enum { TOPO_NCCL_LL, TOPO_NCCL_LL128, TOPO_NCCL_SIMPLE, TOPO_NCCL_NPROTO };
/* Host cost of issuing one NCCL operation on nranks ranks, eager (graph 0)
 * or as a node of a CUDA graph (graph 1): a collective (p2p_ops 0) or a
 * group of p2p_ops sends and receives (an all-to-all of n ranks: 2n).
 * docs/model.md "NCCL's host cost per call". */
int64_t topo_nccl_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops);
/* A copy engine's setup per copy: copy_host_setup_ps for a copy to or from
 * host memory (host 1) where the topology gives it, else copy_setup_ps. */
int64_t topo_copy_setup_ps(const topo_params *p, int host);
/* The same for one host thread that drives gpus of the ranks (nccl-tests -g):
 * each iteration it calls NCCL once per GPU inside one group, and the group's
 * end plans and launches each GPU's kernel in turn (group.cc doLaunches), so
 * an eager iteration on >= 2 ranks costs gpus x topo_nccl_issue_ps; unchanged
 * in a CUDA graph, on one rank, for gpus <= 1, and under nccl_call_ps (fitted
 * per iteration of the layout it was measured in). */
int64_t topo_nccl_thread_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops,
                                  int gpus);
/* The same where the measuring process's own host cost is known: probe_ps >
 * 0, its one-rank NCCL group of one send and one receive (hwcheck coll's
 * host_probe), stands for launch_ps + nccl_group_ps + 2 nccl_p2p_op_ps on each
 * of the gpus ranks; as topo_nccl_thread_issue_ps for probe_ps 0, in a graph,
 * on one rank and under nccl_call_ps. */
int64_t topo_nccl_probe_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops,
                                 int gpus, int64_t probe_ps);
/* What an eager collective's channels add to the issue above: the plan's work
 * for each channel beyond the first (enqueue.cc scheduleCollTasksToPlan: per
 * channel a proxy op filled in, addWorkBatchToPlan, addProxyOpIfNeeded),
 * nccl_chan_ps each, on each of the gpus ranks one thread drives:
 * min(gpus, nranks) x (channels - 1) x nccl_chan_ps. 0 in a CUDA graph, on one
 * rank (no plan: ncclLaunchOneRank), for groups of sends and receives (p2p_ops
 * > 0: not charged), for channels <= 1 and under nccl_call_ps. */
int64_t topo_nccl_chan_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops,
                                int channels, int gpus);

/* P2P capability between two GPUs as NVML reports it (`nvidia-smi topo -p2p r`
 * and `-p2p w`; NCCL reads both): OK, or why it is not supported (NS not
 * supported, CNS chipset, GNS GPU, TNS topology, U unknown). */
typedef enum topo_p2p { P2P_OK, P2P_NS, P2P_CNS, P2P_GNS, P2P_TNS, P2P_U, P2P_NKINDS } topo_p2p;
const char *topo_p2p_name(topo_p2p s);            /* "OK", "NS", ...; NULL out of range */
int topo_p2p_parse(const char *s, topo_p2p *out); /* case-insensitive; 0 ok, -1 unknown */

/* "amd", "intel-skl", ... for a topo_cpu; NULL out of range. */
const char *topo_cpu_name(topo_cpu c);
int topo_cpu_parse(const char *s, topo_cpu *out);   /* 0 ok, -1 unknown name */

typedef struct topo topo;

topo *topo_new(const char *name);              /* empty; NULL on OOM */
void topo_free(topo *t);                       /* NULL ok */
const char *topo_name(const topo *t);
/* Builders; return the new id or -1 (ERR_INPUT in e, e.g. duplicate name). */
int topo_add_node(topo *t, const char *name, topo_kind kind, int numa, err *e);
int topo_add_link(topo *t, const topo_link *l, err *e);
/* Set a node's PCI parent (for path types); ERR_INPUT on a cycle. */
int topo_set_parent(topo *t, int node, int parent, err *e);
/* A GPU's own outstanding-read limit (1..16384; 0 = the params' read_tags);
 * ERR_INPUT for another kind or a value out of range. */
int topo_set_read_tags(topo *t, int node, int tags, err *e);
/* The outstanding reads node may keep: its own limit or the params'. */
int topo_read_tags(const topo *t, int node);
/* The outstanding reads node's copy engine may keep: topo_read_tags capped
 * at the params' ce_read_tags (0 = no cap). */
int topo_ce_read_tags(const topo *t, int node);
topo_params *topo_params_mut(topo *t);
const topo_params *topo_params_get(const topo *t);
/* Check the graph (connected GPUs, positive bandwidths, no PCI cycles) and
 * build routes; must be called before routes or path types are asked. */
int topo_finish(topo *t, const char *where, err *e);
/* Source line recorded for the nodes and links added next (for messages of
 * topo_finish: "where:line: ..."); 0 = none. */
void topo_set_line(topo *t, long line);
int topo_set_name(topo *t, const char *name);  /* copied; ERR_SYSTEM on OOM */
/* What an importer assumed where its input says nothing, one line each
 * (printf-style, copied): topo_write writes them as "# assumed: ..." lines,
 * the commands show them on stderr. ERR_SYSTEM on OOM. */
int topo_assume(topo *t, err *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int topo_nassumed(const topo *t);
const char *topo_assumed(const topo *t, int i);    /* i in 0..topo_nassumed-1 */
/* PCIe link math: GT/s x lanes x encoding / 8, times the write payload
 * efficiency MPS/(MPS + TLP overhead); bytes/s, 0 if gen or width is invalid. */
double topo_pcie_bw_Bps(int gen, int width, const topo_params *p);
/* 1 if link id's bandwidth was given explicitly, 0 if from the link math. */
int topo_link_bw_given(const topo *t, int id);
/* P2P status from GPU gpu_a to GPU gpu_b (indices): P2P_OK unless set (at
 * any time, before or after topo_finish). ERR_INPUT for an index out of range. */
int topo_set_p2p(topo *t, int gpu_a, int gpu_b, topo_p2p s, err *e);
topo_p2p topo_gpu_p2p(const topo *t, int gpu_a, int gpu_b);
/* The ordered pairs whose status is not OK, i = 0..topo_p2p_count - 1, in the
 * order they were set (for copies and the file writer). */
int topo_p2p_count(const topo *t);
void topo_p2p_at(const topo *t, int i, int *gpu_a, int *gpu_b, topo_p2p *s);
/* NCCL's usable GB/s per NVLink lane for GPUs of compute capability sm x 10
 * (NCCL's src/graph/topo.h SM*_NVLINK_BW, topo.cc ncclTopoNVLinkBw): 40.1 from
 * SM100, 20.6 SM90, 12.0 SM86 only, 20.0 SM80-89 and SM70, 18.0 SM60, 20.0 below
 * or unknown (NCCL's SM80 default). The one table of per-lane rates. */
double topo_nvlink_lane_GBps(int sm);
/* NVLink lanes joining two GPUs (direct, or via shared NVSwitches), 0 if none. */
int topo_gpu_nvlinks(const topo *t, int gpu_a, int gpu_b);
/* 1 when every pair of GPUs 0..n-1 has NVLink lanes (topo_gpu_nvlinks > 0),
 * from a prefix computed once in topo_finish: O(1) per call. */
int topo_gpus_nvlinked(const topo *t, int n);

int topo_nnodes(const topo *t);
int topo_nlinks(const topo *t);
int topo_ngpus(const topo *t);
const topo_node *topo_node_at(const topo *t, int id);
const topo_link *topo_link_at(const topo *t, int id);
int topo_gpu_node(const topo *t, int gpu);     /* node id of GPU index gpu */
int topo_find(const topo *t, const char *name);/* node id or -1 */
/* The root port (TOPO_ROOT) above node v in the PCI hierarchy, v itself if
 * it is one; -1 if none (a CPU, host memory, a GPU with no parent). */
int topo_root_port(const topo *t, int v);
/* Routes are computed in topo_finish for small topologies and on first use
 * (per pair, cached, thread-safe; memory follows the pairs asked for) for
 * large ones; -1 if b is unreachable
 * (GPUs and host memory are endpoints only, never transit nodes). */
/* Directed hops of the data route from node a to node b: hop i uses link
 * links[i] in direction dirs[i] (0 = a->b as stored, 1 = b->a). Returns the
 * hop count; arrays are owned by the topology. */
int topo_route(const topo *t, int a, int b, const int **links, const int8_t **dirs);
int64_t topo_route_lat_ps(const topo *t, int a, int b);
/* The same route copied into links[0..cap-1] and dirs[0..cap-1], its latency
 * in *lat_ps: nothing is kept per pair once the source's tree is built, so a
 * source that reaches every node (a one-shot's) costs one tree, not N routes.
 * Returns the hop count (more than cap: nothing copied), -1 no route, -2 out
 * of memory. */
int topo_route_copy(const topo *t, int a, int b, int *links, int8_t *dirs, int cap,
                    int64_t *lat_ps);
/* Routes from src to many targets follow (a one-shot's source): its next
 * route builds its whole tree and no route is kept per pair (route.c).
 * Only the work changes, not any route. */
void topo_route_expect_many(const topo *t, int src);
/* The predecessor links of src's shortest-path tree (link id into each
 * node, -1 at src and where nothing leads; the routes topo_route_copy gives,
 * walked back from their target), for a source said to reach many
 * (topo_route_expect_many); it lives as long as the topology and never
 * changes. An entry may be TOPO_WALK_UNSET (a GPU whose tree is another
 * GPU's relabelled, route.c [route-twins], knows only the nodes it reaches
 * over NVLink alone): such a target's route is asked of topo_route_copy or
 * topo_route_lat_row. NULL for another source, or out of memory. */
#define TOPO_WALK_UNSET (-2)
const int *topo_route_preds(const topo *t, int src);
/* The route latencies from src (said to reach many: topo_route_expect_many)
 * to dst[0..n-1], as topo_route_lat_ps gives them (0 to itself, -1 no route),
 * from one tree. 0, -1 when src is not said to reach many (nothing done), -2
 * out of memory. */
int topo_route_lat_row(const topo *t, int src, const int *dst, int n, int64_t *lat_ps);
/* The smallest route latency from src to another GPU or to host memory over
 * a route that leaves the NVLink fabric (crosses PCIe or the host); -1 if
 * none. One shortest-path tree, not a route per target. */
int64_t topo_nearest_host_lat_ps(const topo *t, int src);
topo_path topo_gpu_path(const topo *t, int gpu_a, int gpu_b);
const char *topo_path_name(topo_path p, int nvlinks); /* "PIX", "NV18", ... */
/* The nvidia-smi topo -m code for a GPU pair: X, PIX, PXB, PHB, NODE, SYS,
 * NV#; buf must hold 8 bytes; returns buf. */
const char *topo_gpu_path_smi(const topo *t, int gpu_a, int gpu_b, char *buf);

/* Text format (docs/formats.md); name is used in messages. */
int topo_parse(FILE *f, const char *name, topo **out, err *e);
/* How the topology format reads a `param` KEY: 2 a power of two, 1 an
 * integer, 0 any number (or no such key); calibration profiles follow it. */
int topo_param_integer(const char *key);
/* The format's machine-wide keys in the file's order (every `param` but
 * cpu): key i, with its value in p in the file's unit in *value; NULL for i
 * past the last. */
const char *topo_param_key(const topo_params *p, int i, double *value);
int topo_write(const topo *t, FILE *f, err *e);
/* Presets: by name, or a file path if the name is not a preset. */
int topo_load(const char *name_or_path, topo **out, err *e);
/* Name of preset i (NULL past the end), and its one-line description. */
const char *topo_preset_name(int i);
const char *topo_preset_desc(int i);

/* Importers (docs/formats.md): NCCL_TOPO_DUMP_FILE XML (libxml2) and the
 * `nvidia-smi topo -m` matrix; ERR_INPUT "file:line: what" on bad input. */
int topo_import_xml(const char *path, topo **out, err *e);
int topo_import_smi(FILE *f, const char *name, topo **out, err *e);
/* Read `nvidia-smi topo -p2p r` (or `-p2p w`) output from f (named `name` in
 * messages) into t's P2P statuses: a GPU x GPU matrix of X, OK, NS, CNS, GNS,
 * TNS, U; text around it is ignored. ERR_INPUT (file:line) for an unknown
 * code, a row of the wrong length or another GPU count than t's. */
int topo_smi_p2p(FILE *f, const char *name, topo *t, err *e);
/* Defaults the importers assume where the input says nothing (docs/model.md):
 * latency of a PCIe hop from a child to its PCI parent of the given kinds,
 * and bandwidth/latency of a fabric, socket, mem link or of one NVLink lane
 * of a GPU with SM version sm (LINK_PCIE: bw 0 = the link math). */
int64_t topo_default_pci_lat_ps(topo_kind child, topo_kind parent);
void topo_default_link(topo_link_kind k, int sm, double *bw_Bps, int64_t *lat_ps);

#endif
