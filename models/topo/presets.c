/* Built-in topologies: a static table of named presets and generated
 * families (name, description, builder), and topo_load, which falls back to
 * reading a file. Every number below and where it comes from is listed in
 * docs/model.md "Topology and presets"; latencies are per link, with a
 * switch's cut-through split half and half over the links at its ports. */
#include "models/topo/topo.h"
#include "sim/cli.h"
#include "sim/input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A builder session: the first error sticks, later calls do nothing. */
typedef struct bld {
    topo *t;
    err *e;
    int rc;
} bld;

static int node(bld *b, const char *name, topo_kind k, int numa, const char *parent)
{
    if (b->rc)
        return -1;
    int id = topo_add_node(b->t, name, k, numa, b->e);
    if (id < 0) {
        b->rc = b->e ? b->e->code : ERR_INPUT;
        return -1;
    }
    if (parent) {
        int p = topo_find(b->t, parent);
        ASSERTF(p >= 0, "preset parent '%s' of '%s' not defined", parent, name);
        if ((b->rc = topo_set_parent(b->t, id, p, b->e)) != 0)
            return -1;
    }
    return id;
}

/* Link with bandwidth in GB/s (0 on pcie: the link math) and latency in ns. */
static void link(bld *b, const char *x, const char *y, topo_link_kind k, int lanes,
                 double bw_GBps, double lat_ns)
{
    if (b->rc)
        return;
    topo_link l = {.a = topo_find(b->t, x), .b = topo_find(b->t, y), .kind = k,
                   .bw_Bps = bw_GBps * 1e9, .lat_ps = (int64_t)(lat_ns * 1e3 + 0.5)};
    ASSERTF(l.a >= 0 && l.b >= 0, "preset link %s-%s", x, y);
    if (k == LINK_PCIE) {
        l.pcie_gen = 5;
        l.pcie_width = 16;
    }
    if (k == LINK_NVLINK)
        l.nvlinks = lanes;
    if (topo_add_link(b->t, &l, b->e) < 0)
        b->rc = b->e ? b->e->code : ERR_INPUT;
}

/* A link whose b->a direction has its own bandwidth. */
static void link_asym(bld *b, const char *x, const char *y, topo_link_kind k, double bw_GBps,
                      double back_GBps, double lat_ns)
{
    if (b->rc)
        return;
    topo_link l = {.a = topo_find(b->t, x), .b = topo_find(b->t, y), .kind = k,
                   .bw_Bps = bw_GBps * 1e9, .bw_back_Bps = back_GBps * 1e9,
                   .lat_ps = (int64_t)(lat_ns * 1e3 + 0.5)};
    ASSERTF(l.a >= 0 && l.b >= 0 && k != LINK_PCIE, "preset link %s-%s", x, y);
    if (topo_add_link(b->t, &l, b->e) < 0)
        b->rc = b->e ? b->e->code : ERR_INPUT;
}

/* prefix followed by i (>= 0) in decimal, in buf (32 bytes): a preset's
 * node names, formatted without printf (some 300 per 64-GPU preset). */
static const char *nm(char *buf, const char *prefix, int i)
{
    size_t l = strlen(prefix);
    char digits[12];
    int nd = 0;
    unsigned u = (unsigned)i;
    do {
        digits[nd++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    ASSERTF(i >= 0 && l + (size_t)nd < 32, "preset node name %s%d", prefix, i);
    memcpy(buf, prefix, l);
    for (int k = 0; k < nd; k++)
        buf[l + (size_t)k] = digits[nd - 1 - k];
    buf[l + (size_t)nd] = 0;
    return buf;
}

/* Values shared by several presets (docs/model.md says where from). */
#define SW_HALF_NS 57.5        /* half of a 115 ns Gen5 switch cut-through */
#define GPU_END_NS 300.0       /* GPU-side PCIe endpoint share of a hop */
#define ROOT_NS 202.5          /* root complex + socket fabric, per side */
#define XGMI_NS 80.0           /* socket link hop */
#define NVL_NS 250.0           /* GPU <-> NVSwitch hop */
#define RTX_MEM_GBps 1792.0    /* RTX PRO 6000 GDDR7 peak */
#define H200_MEM_GBps 4800.0   /* H200 HBM3e peak */
#define H100_MEM_GBps 3350.0   /* H100 SXM5 80GB HBM3 peak (NVIDIA H100 datasheet) */

int64_t topo_default_pci_lat_ps(topo_kind child, topo_kind parent)
{
    double ns = (child == TOPO_GPU ? GPU_END_NS : child == TOPO_SWITCH ? SW_HALF_NS : 0) +
                (parent == TOPO_SWITCH ? SW_HALF_NS : 0);
    return (int64_t)(ns * 1e3 + 0.5);
}

void topo_default_link(topo_link_kind k, int sm, double *bw_Bps, int64_t *lat_ps)
{
    double bw = 0, ns = 0;
    switch (k) {
    case LINK_PCIE: ns = GPU_END_NS; break;
    case LINK_FABRIC: bw = 100.0; ns = ROOT_NS; break;
    case LINK_SOCKET: bw = 83.2; ns = XGMI_NS; break;
    case LINK_NVLINK: bw = topo_nvlink_lane_GBps(sm); ns = NVL_NS; break;
    case LINK_MEM: bw = 200.0; ns = 100.0; break;
    default: break;
    }
    *bw_Bps = bw * 1e9;
    *lat_ps = (int64_t)(ns * 1e3 + 0.5);
}

static void set_params(topo *t, double arb_GBps, double hostmem_GBps, double gpu_mem_GBps)
{
    topo_params *p = topo_params_mut(t);
    /* RTX PRO 6000 Blackwell (SM 12.0) on AMD EPYC/Threadripper hosts unless
     * the preset says otherwise (docs/model.md "NCCL's decisions"). */
    p->gpu_sm = 120;
    p->cpu = CPU_AMD;
    p->pcie_mps_bytes = 256;
    p->pcie_mrrs_bytes = 512;
    p->pcie_tlp_overhead_bytes = 24;
    p->read_tags = 256;
    p->read_extra_lat_ps = 200000;  /* uncalibrated */
    p->launch_ps = 4000000;         /* uncalibrated */
    p->graph_node_ps = 1500000;     /* uncalibrated */
    p->arb_collapse_Bps = arb_GBps * 1e9;
    p->hostmem_Bps = hostmem_GBps * 1e9;
    p->kernel_base_ps = 2000000;    /* uncalibrated */
    p->gpu_mem_Bps = gpu_mem_GBps * 1e9;
}

static void socket_with_mem(bld *b, int s, double mem_GBps)
{
    char c[32], m[32];
    node(b, nm(c, "cpu", s), TOPO_CPU, s, NULL);
    node(b, nm(m, "mem", s), TOPO_HOSTMEM, s, NULL);
    link(b, c, m, LINK_MEM, 0, mem_GBps, 100.0);
}

/* rtxpro6000-8x-pcie5-2s: ASUS ESC8000A-E13P, 2x EPYC 9575F, 2 Broadcom
 * PEX890xx chips each split into two virtual switches of 2 GPUs. */
static int build_2s(topo *t, err *e)
{
    bld b = {t, e, 0};
    char n1[32], n2[32], n3[32];
    set_params(t, 0, 460.8, RTX_MEM_GBps);
    /* Read completions across the socket link at most 51.2 GB/s (2- and
     * 4-flow cross-chip reads, 51.1 and 51.3); docs/model.md. */
    topo_params_mut(t)->socket_read_Bps = 51.2e9;
    /* 10-bit tags: the box's lspci shows GPUs 0-5's DevCtl2 with 10BitTagReq+
     * (enabled) and the root ports and switch ports 10BitTagComp+: 768 reads
     * in flight per GPU (PCIe Base spec; facts.md 3.2, docs/model.md); GPUs 6
     * and 7 have their own 256 (below). */
    topo_params_mut(t)->read_tags = 768;
    /* A GPU's copy engine keeps at most 256 of them (the 8-bit tag space): a
     * hypothesis, checked on p2pmark's 56 copy-engine reads (docs/model.md,
     * "A copy engine's reads"); the SMs' loads use all 768. */
    topo_params_mut(t)->ce_read_tags = 256;
    /* The collapse: the root ports' ordering turnaround, fitted by `collsim
     * calibrate --engine tlp` to the same-uplink rows (the 2- and 4-flow
     * write collapse; scripts/fit-tlp.sh, docs/model.md): 94.85 +- 2.3 ns;
     * completions take the same value (every read row is a prediction). Both
     * engines use it: the flow mode derives each uplink's collapsed rate
     * from it and the uplink's mix (no constant collapse rates). */
    topo_params_mut(t)->tlp_turn_ps = 94850;
    topo_params_mut(t)->tlp_turn_cpl_ps = 94850;
    /* DLLPs on the reverse direction (docs/model.md "DLLPs on the reverse
     * direction"): 14 wire bytes per TLP (about an Ack and an UpdateFC of 8
     * bytes each, coalesced), from the one row where both directions of
     * every link bind and nothing else does: the contention table's "same
     * chip both pairs bidir", 203.9 GB/s against 213.97 without, 280 x
     * (213.97 / 203.9 - 1) = 13.8. The bidirectional matrix stays held out. */
    topo_params_mut(t)->tlp_dllp_bytes = 14;
    for (int s = 0; s < 2; s++)
        socket_with_mem(&b, s, 460.8);
    link(&b, "cpu0", "cpu1", LINK_SOCKET, 0, 83.2, XGMI_NS);
    for (int v = 0; v < 4; v++) {
        int s = v / 2;
        nm(n1, "rp", v);
        node(&b, n1, TOPO_ROOT, s, nm(n2, "cpu", s));
        /* Peer traffic up into the CPU 38.3 GB/s, down from it 51.2 GB/s
         * (two writers on other root ports into one VS: 51.2). */
        link_asym(&b, n1, n2, LINK_FABRIC, 38.3, 51.2, ROOT_NS);
        node(&b, nm(n3, "vs", v), TOPO_SWITCH, s, n1);
        link(&b, n3, n1, LINK_PCIE, 0, 0, SW_HALF_NS);
    }
    link(&b, "vs0", "vs1", LINK_FABRIC, 0, 53.6, 20.0);
    link(&b, "vs2", "vs3", LINK_FABRIC, 0, 53.6, 20.0);
    for (int g = 0; g < 8; g++) {
        nm(n1, "gpu", g);
        int id = node(&b, n1, TOPO_GPU, g / 4, nm(n2, "vs", g / 2));
        link(&b, n1, n2, LINK_PCIE, 0, 53.5, GPU_END_NS + SW_HALF_NS);
        /* GPUs 6 and 7 (buses f4, f5, behind root port f0:01.1) show
         * DevCtl2 10BitTagReq- in the same lspci: 8-bit tags, 256. */
        if (g >= 6 && !b.rc && topo_set_read_tags(t, id, 256, e))
            b.rc = e ? e->code : ERR_INPUT;
    }
    return b.rc;
}

/* rtxpro6000-8x-pcie5-1s: Threadripper PRO 7955WX, group A: two c-payne
 * switches of 4 GPUs on root complexes of different quadrants. */
static int build_1s(topo *t, err *e)
{
    bld b = {t, e, 0};
    char n1[32], n2[32];
    set_params(t, 0, 266.2, RTX_MEM_GBps);
    socket_with_mem(&b, 0, 266.2);
    for (int r = 0; r < 2; r++) {
        nm(n1, "rp", r);
        node(&b, n1, TOPO_ROOT, 0, "cpu0");
        link(&b, n1, "cpu0", LINK_FABRIC, 0, 100.0, 138.4);
        node(&b, nm(n2, "sw", r), TOPO_SWITCH, 0, n1);
        link(&b, n2, n1, LINK_PCIE, 0, 56.4, SW_HALF_NS);
    }
    for (int g = 0; g < 8; g++) {
        nm(n1, "gpu", g);
        node(&b, n1, TOPO_GPU, 0, nm(n2, "sw", g / 4));
        link(&b, n1, n2, LINK_PCIE, 0, 56.3, 340.25);
    }
    return b.rc;
}

/* hwcheck's own timed loops on one H200 (validate/data/h200-1x/micro/loop/,
 * hwcheck launch --loop, two runs, medians of 7 rounds each): a
 * cudaEventRecord costs the host 0.975 / 0.919 us, and the loop's issue of a
 * copy kernel (cudaSetDevice, the launch, its error check) 0.106 / 0.139 us
 * more than an empty kernel's launch in the same rounds (cudaSetDevice alone
 * 0.092 / 0.087): the means. The loop's timing (validate/points.h
 * pts_loop_iter_ps) uses them. */
static void h200_loop_costs(topo_params *p)
{
    p->event_record_ps = 947000;
    p->loop_issue_ps = 122000;
}

/* Host-side costs measured on one H200 (validate/data/h200-1x/launch.csv and
 * host.csv, fitted by `make validate`: launch 5.1 +- 0.4 us, graph node
 * 0.499 +- 0.04 us, copy setup 1.85 +- 0.13 us); used by the H200 presets. */
static void h200_measured(topo *t)
{
    topo_params *p = topo_params_mut(t);
    p->gpu_sm = 90;
    p->cpu = CPU_INTEL_SRP; /* assumption: Sapphire Rapids hosts (docs/model.md) */
    p->launch_ps = 5100000;
    p->graph_node_ps = 499000;
    /* An eager kernel queued behind another: graph_node + 0.789 us, the
     * eager rows' time per 10-us spin kernel beyond the same kernels' in a
     * graph (validate/data/h200-1x/micro/spin/: 272.5 against 114.7 us per
     * 200 kernels, two runs each). */
    p->kernel_turn_ps = 1288000;
    p->copy_setup_ps = 1845000;
    h200_loop_costs(p);
}

/* HGX-style boxes of 8 GPUs: per socket two PCIe switches (own root port
 * each) with 2 GPUs each; all GPUs on one non-blocking NVSwitch node. */
static int build_hgx(topo *t, int ngpu, double gpu_mem_GBps, err *e)
{
    bld b = {t, e, 0};
    char n1[32], n2[32], n3[32];
    set_params(t, 0, 245.8, gpu_mem_GBps);
    h200_measured(t);
    node(&b, "nvs0", TOPO_NVSWITCH, -1, NULL);
    int nsock = (ngpu + 3) / 4;
    for (int s = 0; s < nsock; s++) {
        socket_with_mem(&b, s, 245.8);
        if (s % 2 == 1)
            link(&b, nm(n1, "cpu", s - 1), nm(n2, "cpu", s), LINK_SOCKET, 0, 80.0, 100.0);
    }
    for (int w = 0; w < (ngpu + 1) / 2; w++) {
        int s = w / 2;
        nm(n1, "rp", w);
        node(&b, n1, TOPO_ROOT, s, nm(n2, "cpu", s));
        link(&b, n1, n2, LINK_FABRIC, 0, 100.0, ROOT_NS);
        node(&b, nm(n3, "sw", w), TOPO_SWITCH, s, n1);
        link(&b, n3, n1, LINK_PCIE, 0, 0, SW_HALF_NS);
    }
    for (int g = 0; g < ngpu && !b.rc; g++) {
        nm(n1, "gpu", g);
        node(&b, n1, TOPO_GPU, g / 4, nm(n2, "sw", g / 2));
        link(&b, n1, n2, LINK_PCIE, 0, 0, GPU_END_NS + SW_HALF_NS);
        link(&b, n1, "nvs0", LINK_NVLINK, 18, 18 * topo_nvlink_lane_GBps(90), NVL_NS);
    }
    return b.rc;
}

static int build_h200_8x(topo *t, err *e) { return build_hgx(t, 8, H200_MEM_GBps, e); }
/* HGX H100: the same GH100 GPU, 18 NVLink 4 lanes and third-generation
 * NVSwitch as HGX H200 (NVIDIA's H100 and H200 datasheets); only the memory
 * differs (HBM3, 3.35 TB/s). The host-side costs measured on one H200 are
 * taken for the H100 (the same die and driver path; not measured on one). */
static int build_h100_8x(topo *t, err *e) { return build_hgx(t, 8, H100_MEM_GBps, e); }

/* One H200's thread blocks against pinned host memory (validate/data/h200-1x/
 * micro/host-kernel-b*.csv, hwcheck host --op kernel, 256 MiB): one block of
 * 512 threads with one 16-byte load in flight each (8 KiB) loads 6.07 GB/s
 * from it (linear to 8 blocks: 43.7) and stores 19.8 into it; 16 blocks load
 * 51.3 GB/s, the link: the GPU keeps more than 256 reads in flight (51.3 GB/s
 * x 1.405 us / 128 B = 563), so the 10-bit tag space of PCIe Gen5 (768)
 * rather than 8-bit tags. A block's loads grow with its bytes in flight
 * (micro/inflight/: 1.52 GB/s at 2 KiB to 39.0 at 64 KiB, 48.3 at 128 KiB;
 * the fabric scales cta_load_host by them). Loads and stores at once (the
 * inflight/ files' h2d-d2h rows at 256 MiB where each kernel alone fills the
 * link, 14 rows): 79.0 GB/s together, the median (66.2 - 79.6). A barrier's
 * signal, a system-scope fence before the release store, costs 0.495 us more
 * than the release store alone (micro/fence/launch-r{1,2,3}.csv, hwcheck
 * launch's fence-sys row: 0.502, 0.492, 0.492; the release store over a plain
 * one 0.44): a device-side cost of the GPU, taken for both H200 presets. */
static void h200_host_blocks(topo *t)
{
    topo_params *p = topo_params_mut(t);
    p->cta_load_host_Bps = 6.07e9;
    p->cta_store_host_Bps = 19.8e9;
    p->host_sm_mixed_Bps = 79.0e9;
    /* A block's ceiling at any depth (micro/local/, 256 MiB, one block of
     * 512 threads: 20.1, 37.0, 48.7, 48.9 GB/s for U = 1, 2, 4, 8; 1024
     * threads 48.2-49.0 from U = 2): 48.9 copying inside the GPU; storing
     * into host memory (micro/inflight/ d2h rows, U = 4, 8; 256 and 1024
     * threads at U = 8: 42.0-42.2): 42.1, taken for a peer too. */
    p->cta_ceil_Bps = 48.9e9;
    p->cta_ceil_far_Bps = 42.1e9;
    /* Loads that hit L2 (micro/local/, one block of 512 threads, U = 1,
     * 4 MiB copied: 8 MiB in L2): 40.31 GB/s against 20.12 from HBM (256
     * MiB); 128 and 256 threads: 10.81 / 5.18, 20.82 / 10.33: 2.0. */
    p->l2_load_speedup = 2.0;
    /* A trip's issue (docs/model.md "A trip's issue"): the copy inside the
     * GPU (micro/local/, one block, 256 MiB, the 10 shapes below 32 KiB in
     * flight, where the ceiling does not bind: 128-1024 threads, U = 1-8)
     * takes 385 ns + 17.2 (+- 0.5) ns per load in flight per thread beyond
     * the first + its bytes at 390 (+- 30) GB/s a trip, least squares (rms
     * 2.9 ns); the same SM issues a trip of loads from host memory. */
    p->trip_load_ps = 17200;
    p->trip_Bps = 390e9;
    /* Its size: 50 MB, the H100's (NVIDIA's Hopper architecture post: "a 50 MB
     * L2 cache in H100"; the H200 is the same GH100 die with other memory).
     * One H200 brackets it (micro/local/, 16 blocks: 16 MiB copied, 32 MiB of
     * buffers, at L2 rates, 506 GB/s; 64 MiB copied, 128 MiB, at HBM's, 295). */
    p->l2_bytes = 50e6;
    p->fence_sys_ps = 495000;
    /* A custom kernel's barrier per block (docs/model.md "A barrier's
     * blocks"): the four kernels as 2 virtual ranks on one H200 in a CUDA
     * graph, 1 to 32 blocks (micro/kblocks/, the -v2-graph files, 8 - 256 KiB: one
     * pack per thread, the same work per block), each file's growth over its
     * one-block time against k x (H_B - 1), k its barriers (2, 2, 2, 3):
     * least squares over the 20 points, 0.157 us (rms 0.17 us). */
    p->block_wait_ps = 157000;
}

static int build_h200_1x(topo *t, err *e)
{
    bld b = {t, e, 0};
    set_params(t, 0, 245.8, H200_MEM_GBps);
    h200_measured(t);
    h200_host_blocks(t);
    topo_params_mut(t)->read_tags = 768;
    socket_with_mem(&b, 0, 245.8);
    node(&b, "rp0", TOPO_ROOT, 0, "cpu0");
    link(&b, "rp0", "cpu0", LINK_FABRIC, 0, 100.0, ROOT_NS);
    node(&b, "gpu0", TOPO_GPU, 0, "rp0");
    link(&b, "gpu0", "rp0", LINK_PCIE, 0, 0, GPU_END_NS);
    return b.rc;
}

/* h200-2x: two H200 SXM of an HGX board lent as a VM (validate/data/h200-2x):
 * NV18 between them (through the board's NVSwitch, one hop each way), each
 * GPU on its own Gen5 x16 root port of socket 0 (concurrent host copies to
 * both GPUs add up: host.csv), one socket as the VM shows it. Link values,
 * per-block SM rates and host-side costs are `collsim calibrate` of that
 * directory's p2p-sweep.csv, p2p-read-blocks36.csv, p2p-write-blocks36.csv,
 * flows.csv, launch.csv, host.csv and blocks/p2p-{read,write}-b{1..16}.csv
 * (point-to-point files only; the set h200-2x.set re-fits them,
 * docs/validation.md): NVLink 376.2 +- 4.5 GB/s per direction and 669 +- 14
 * ns per hop (the box's one-way flag latency is 685 per hop), PCIe 51.4 +-
 * 0.6 GB/s and 948 +- 80 ns, copy setup 0.76 us, a copy's host issue 1.826
 * +- 0.033 us and a kernel's own start and end (kernel_base) 1.51 +- 0.11 us
 * (hwcheck's transfer loops are predicted as they run, events, issues and the
 * last operation's run: docs/model.md "Timed loops"; before, as the larger of
 * the transfer and the issues, which put 2.41 us in kernel_base and 578 ns in
 * the hop), launch 3.16 us (launch.csv alone: the set fits with it fixed),
 * graph node 0.501 us, one block of 512 threads stores 19.25 +- 0.52 GB/s and
 * loads 7.58 +- 0.14 GB/s into / from the peer. NCCL's fixed costs are the
 * set's fit of the Ring-forced rows in a CUDA graph that isolate them (one
 * channel, at most 64 KiB; docs/model.md "Protocol constants and NCCL's fixed
 * costs"): kernel starts LL 4.29, LL128 9.98, Simple 10.34 us (eager rows
 * carry the process's host cost, which is not the device's); NCCL's host work per call
 * (group, plan, launch, once per rank: one thread drives both) is the
 * one-H200 VM's, below. The set is predicted with this preset (`calib: preset`) and
 * fails when its fit leaves any of these values by more than one sd. */
static int build_h200_2x(topo *t, err *e)
{
    bld b = {t, e, 0};
    char n1[32], n2[32];
    set_params(t, 0, 245.8, H200_MEM_GBps);
    topo_params *p = topo_params_mut(t);
    p->gpu_sm = 90;
    /* NCCL's topology dump there (nccl-tuning.txt): "CPU/0-ffffffffffffff (1/1/4)", arch x86,
     * vendor Intel, model 4 = NCCL_TOPO_CPU_MODEL_INTEL_ERP (Emerald Rapids) in NCCL's topo.h. */
    p->cpu = CPU_INTEL_ERP;
    p->launch_ps = 3160000;
    p->graph_node_ps = 501000;
    p->kernel_turn_ps = 1288000; /* the one-H200 VM's (micro/spin/); not measured here */
    h200_loop_costs(p);          /* the one-H200 VM's (micro/loop/); not measured here */
    p->copy_setup_ps = 558000;
    p->copy_host_setup_ps = 1574000;   /* host copies: their own fit (host.csv) */
    p->copy_issue_ps = 1799000;
    p->read_extra_lat_ps = 0;   /* the fit runs the completer turnaround to 0 */
    p->kernel_base_ps = 1480000;
    p->cta_store_Bps = 19.25e9;
    p->cta_load_Bps = 7.58e9;
    p->nccl_start_ps[TOPO_NCCL_LL] = 4253000;
    p->nccl_start_ps[TOPO_NCCL_LL128] = 9940000;
    p->nccl_start_ps[TOPO_NCCL_SIMPLE] = 10270000;
    /* NCCL's host work per call beyond a launch, not measured on this
     * machine: the one-H200 VM's `hwcheck launch --nccl-only` (h200-1x set's
     * fit of micro/hostcall/); one thread drives both GPUs, so an eager
     * 2-rank call is 2 x (launch + group + its call), 11.87 us (micro/hostmode/: two
     * communicators in one group cost 1.63-2.13 x one, median 1.92). */
    p->nccl_host_ps = 985000;
    p->nccl_group_ps = 2515000;
    p->nccl_p2p_op_ps = 261000;
    /* The plan's host work per channel beyond the first, per rank (docs/model.md
     * "Per channel"): one H200's one-pair groups spread over 2-64 channels
     * (h200-1x micro/hostchan/, nccl-p2p-1-size-B-host, B / 64 KiB channels), the
     * least-squares slope of the fast process (nccl-host-r4.csv, one-pair group
     * 6.46 us, the level the keys above stand for): 0.0143 us (the slow
     * processes 0.020-0.026; as a share of each process's one-pair group, the
     * median of these and micro/pair/pairsize-r*.csv's, 0.0024 x 5.94 us = 0.0144). */
    p->nccl_chan_ps = 14300;
    /* Gradual saturation (docs/model.md "Thread blocks"): the 36-block copy
     * kernel stores 339.2 GB/s at 256 MiB (p2p-write-blocks36.csv, mean of both
     * directions) on the fitted 369.1: N0 = 36 (369.1 / 339.2 - 1). */
    p->nvlink_half_blocks = 3.17;
    /* Not measured on this machine: its blocks against host memory and its
     * links' loads and stores at once are the one-H200 VM's (same GPU, the same
     * lent machine kind; validate/data/h200-1x/micro/inflight/). */
    h200_host_blocks(t);
    socket_with_mem(&b, 0, 245.8);
    node(&b, "nvs0", TOPO_NVSWITCH, -1, NULL);
    for (int g = 0; g < 2; g++) {
        nm(n1, "rp", g);
        node(&b, n1, TOPO_ROOT, 0, "cpu0");
        link(&b, n1, "cpu0", LINK_FABRIC, 0, 100.0, ROOT_NS);
        nm(n2, "gpu", g);
        node(&b, n2, TOPO_GPU, 0, n1);
        link(&b, n2, n1, LINK_PCIE, 0, 51.53, 515.2);
        link(&b, n2, "nvs0", LINK_NVLINK, 18, 369.1, 678.6);
    }
    return b.rc;
}

/* pcie-N: per socket one root complex with 2 switches of 2 GPUs; sockets
 * in a ring (or a star around socket 0) of socket links. */
static int build_pcie(topo *t, int ngpu, int star, err *e)
{
    bld b = {t, e, 0};
    char n1[32], n2[32], n3[32];
    set_params(t, 0, 460.8, RTX_MEM_GBps);
    int nsock = (ngpu + 3) / 4;
    for (int s = 0; s < nsock; s++) {
        socket_with_mem(&b, s, 460.8);
        nm(n1, "rp", s);
        node(&b, n1, TOPO_ROOT, s, nm(n2, "cpu", s));
        link(&b, n1, n2, LINK_FABRIC, 0, 100.0, ROOT_NS);
    }
    for (int s = 1; s < nsock && !b.rc; s++)
        link(&b, nm(n1, "cpu", star ? 0 : s - 1), nm(n2, "cpu", s), LINK_SOCKET, 0, 83.2,
             XGMI_NS);
    if (!star && nsock > 2)
        link(&b, nm(n1, "cpu", nsock - 1), "cpu0", LINK_SOCKET, 0, 83.2, XGMI_NS);
    for (int w = 0; w < (ngpu + 1) / 2 && !b.rc; w++) {
        nm(n1, "sw", w);
        node(&b, n1, TOPO_SWITCH, w / 2, nm(n2, "rp", w / 2));
        link(&b, n1, n2, LINK_PCIE, 0, 0, SW_HALF_NS);
    }
    for (int g = 0; g < ngpu && !b.rc; g++) {
        nm(n1, "gpu", g);
        node(&b, n1, TOPO_GPU, g / 4, nm(n3, "sw", g / 2));
        link(&b, n1, n3, LINK_PCIE, 0, 0, GPU_END_NS + SW_HALF_NS);
    }
    return b.rc;
}

/* Family names: "<prefix>N" or "<prefix>N<suffix>"; N in 1..4096. */
static int family_n(const char *name, const char *prefix, const char *suffix)
{
    size_t lp = strlen(prefix);
    if (strncmp(name, prefix, lp))
        return -1;
    const char *s = name + lp;
    if (*s < '1' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (errno || strcmp(end, suffix) || n < 1 || n > 4096)
        return -1;
    return (int)n;
}

static int build_nvswitch_n(topo *t, const char *name, err *e)
{
    return build_hgx(t, family_n(name, "nvswitch-", ""), H200_MEM_GBps, e);
}

static int build_pcie_n(topo *t, const char *name, err *e)
{
    int n = family_n(name, "pcie-", "");
    if (n > 0)
        return build_pcie(t, n, 0, e);
    return build_pcie(t, family_n(name, "pcie-", "-star"), 1, e);
}

static int match_nvswitch(const char *name) { return family_n(name, "nvswitch-", "") > 0; }
static int match_pcie(const char *name)
{
    return family_n(name, "pcie-", "") > 0 || family_n(name, "pcie-", "-star") > 0;
}

typedef int preset_fn(topo *t, err *e);
typedef int family_fn(topo *t, const char *name, err *e);
typedef int match_fn(const char *name);

static const struct preset {
    const char *name;
    const char *desc;
    preset_fn *build;
    match_fn *match;     /* generated families: name pattern */
    family_fn *family;
} presets[] = {
    {"rtxpro6000-8x-pcie5-2s",
     "default: 8x RTX PRO 6000, 2x EPYC Turin, 2 Broadcom chips = 4 virtual switches of 2 GPUs",
     build_2s, NULL, NULL},
    {"rtxpro6000-8x-pcie5-1s",
     "8x RTX PRO 6000, 1x Threadripper PRO, 2 c-payne switches of 4 GPUs on 2 root complexes",
     build_1s, NULL, NULL},
    {"h200-8x-nvswitch", "8x H200 SXM, NVLink 4 (18 lanes) via NVSwitch; Gen5 host links via 4 "
     "switches, 2 sockets", build_h200_8x, NULL, NULL},
    {"h100-8x-nvswitch", "8x H100 SXM (HBM3), otherwise as h200-8x-nvswitch", build_h100_8x, NULL,
     NULL},
    {"h200-1x", "1x H200, PCIe Gen5 x16 host link to socket 0", build_h200_1x, NULL, NULL},
    {"h200-2x", "2x H200 SXM, NV18 between them (via NVSwitch), each on its own Gen5 x16 root "
     "port of socket 0", build_h200_2x, NULL, NULL},
    {"nvswitch-N", "N GPUs (1..4096) on one non-blocking NVSwitch; hosts as h200-8x-nvswitch",
     NULL, match_nvswitch, build_nvswitch_n},
    {"pcie-N", "N GPUs (1..4096), 2 per Gen5 switch, 4 per socket; sockets in a ring (-star: "
     "around socket 0)", NULL, match_pcie, build_pcie_n},
};
enum { NPRESETS = sizeof presets / sizeof presets[0] };

const char *topo_preset_name(int i) { return i >= 0 && i < NPRESETS ? presets[i].name : NULL; }
const char *topo_preset_desc(int i) { return i >= 0 && i < NPRESETS ? presets[i].desc : NULL; }

int topo_load(const char *name_or_path, topo **out, err *e)
{
    *out = NULL;
    for (int i = 0; i < NPRESETS; i++) {
        const struct preset *p = &presets[i];
        int hit = p->match ? p->match(name_or_path) : !strcmp(p->name, name_or_path);
        if (!hit)
            continue;
        topo *t = topo_new(name_or_path);
        if (!t)
            return err_set(e, ERR_SYSTEM, "out of memory");
        int rc = p->build ? p->build(t, e) : p->family(t, name_or_path, e);
        if (!rc)
            rc = topo_finish(t, name_or_path, e);
        if (rc) {
            topo_free(t);
            return rc;
        }
        *out = t;
        return 0;
    }
    static const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES, .what = "a topology"};
    input *in;
    if (input_open(name_or_path, &lim, &in, e)) {
        int errnum = errno;
        if (errnum == EISDIR)
            return ERR_INPUT;
        const char *names[NPRESETS];
        for (int i = 0; i < NPRESETS; i++)
            names[i] = presets[i].match ? NULL : presets[i].name;
        const char *sug = cli_suggest(name_or_path, names, NPRESETS);
        char hint[128] = "";
        if (sug)
            snprintf(hint, sizeof hint, " (did you mean '%s'?)", sug);
        return err_set(e, ERR_INPUT, "topology '%s' is neither a preset%s nor a readable file: %s; "
                       "presets: collsim topo list", name_or_path, hint, strerror(errnum));
    }
    /* An NCCL XML dump or nvidia-smi output given where a collsim-topo file
     * is expected: say how to convert it. */
    size_t n;
    const char *p = input_peek(in, 4096, &n);
    (void)n;   /* p is NUL-terminated */
    size_t skip = strspn(p, " \t\r\n");
    char head[256];
    snprintf(head, sizeof head, "%.*s", (int)strcspn(p + skip, "\n"), p + skip);
    int xml = head[0] == '<', smi = !xml && strstr(head, "GPU0");
    if (xml || smi) {
        input_close(in, 0, NULL);
        return err_at(e, name_or_path, 1,
                      "this is %s, not a collsim-topo file: convert it with "
                      "`collsim topo import %s %s -o T.topo` and use T.topo",
                      xml ? "an NCCL topology XML dump" : "`nvidia-smi topo -m` output",
                      xml ? "xml" : "smi", name_or_path);
    }
    return input_close(in, topo_parse(input_file(in), name_or_path, out, e), e);
}
