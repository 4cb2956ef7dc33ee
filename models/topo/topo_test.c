/* Unit tests of the topology layer: link math, path types of the presets
 * against nvidia-smi, routes, the text format (round trip, bad inputs with
 * their line numbers) and the generated families. Run from the repo root. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>

#include "models/topo/topo.h"
#include "models/topo/topo_impl.h" /* the route cache's counters (test_route_expect_many) */

static topo *load(const char *name)
{
    err e = {0};
    topo *t = NULL;
    int rc = topo_load(name, &t, &e);
    if (rc)
        fprintf(stderr, "topo_load(%s): %s\n", name, e.msg);
    assert_int_equal(rc, 0);
    return t;
}

static topo *parse_str(const char *text, err *e, int *rc)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    topo *t = NULL;
    *rc = topo_parse(f, "mem.topo", &t, e);
    fclose(f);
    return t;
}

static void test_link_math(void **state)
{
    (void)state;
    topo_params p = {.pcie_mps_bytes = 256, .pcie_tlp_overhead_bytes = 24};
    /* Gen5 x16: 32 GT/s x 16 x 128/130 / 8 = 63.015 GB/s raw; writes of 256 B
     * with 24 B of TLP overhead carry 256/280 of it: 57.614 GB/s (+-1 MB/s). */
    assert_float_equal(topo_pcie_bw_Bps(5, 16, &p), 63.0154e9 * 256 / 280, 1e6);
    /* Gen4 x16 is half of Gen5 x16: 28.807 GB/s. */
    assert_float_equal(topo_pcie_bw_Bps(4, 16, &p), 63.0154e9 / 2 * 256 / 280, 1e6);
    /* Gen2 x8: 5 GT/s x 8 x 8/10 / 8 = 4.0 GB/s raw, x 256/280 = 3.657 GB/s. */
    assert_float_equal(topo_pcie_bw_Bps(2, 8, &p), 4.0e9 * 256 / 280, 1e6);
    /* MPS 128: 128/152 of 63.015 = 53.066 GB/s. */
    p.pcie_mps_bytes = 128;
    assert_float_equal(topo_pcie_bw_Bps(5, 16, &p), 63.0154e9 * 128 / 152, 1e6);
    /* Invalid generations give 0, never a made-up number. */
    assert_float_equal(topo_pcie_bw_Bps(7, 16, &p), 0, 0);
    /* A preset's uplink without bw_GBps gets the link math: vs0-rp0 of the
     * default preset = 57.614 GB/s (+-1 MB/s). */
    topo *t = load("rtxpro6000-8x-pcie5-2s");
    int vs0 = topo_find(t, "vs0"), rp0 = topo_find(t, "rp0"), found = 0;
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        if ((l->a == vs0 && l->b == rp0) || (l->a == rp0 && l->b == vs0)) {
            assert_float_equal(l->bw_Bps, 63.0154e9 * 256 / 280, 1e6);
            assert_int_equal(topo_link_bw_given(t, i), 0);
            found = 1;
        }
    }
    assert_true(found);
    topo_free(t);
}

/* nvidia-smi topo -m of rtxpro6000-8x-broadcom-2socket.txt, verbatim. */
static const char *const smi_2s[8][8] = {
    {"X", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"},
    {"PIX", "X", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"},
    {"NODE", "NODE", "X", "PIX", "SYS", "SYS", "SYS", "SYS"},
    {"NODE", "NODE", "PIX", "X", "SYS", "SYS", "SYS", "SYS"},
    {"SYS", "SYS", "SYS", "SYS", "X", "PIX", "NODE", "NODE"},
    {"SYS", "SYS", "SYS", "SYS", "PIX", "X", "NODE", "NODE"},
    {"SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "X", "PIX"},
    {"SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PIX", "X"},
};

static topo_path smi_to_nccl(const char *s)
{
    if (!strcmp(s, "X")) return PATH_LOC;
    if (!strcmp(s, "PIX")) return PATH_PIX;
    if (!strcmp(s, "PXB")) return PATH_PXB;
    if (!strcmp(s, "PHB") || !strcmp(s, "NODE")) return PATH_PHB;
    if (!strcmp(s, "SYS")) return PATH_SYS;
    return PATH_NVL;
}

static void check_matrix(const topo *t, const char *const m[8][8])
{
    char buf[8];
    assert_int_equal(topo_ngpus(t), 8);
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++) {
            topo_gpu_path_smi(t, a, b, buf);
            if (strcmp(buf, m[a][b]))
                fail_msg("GPU%d-GPU%d: model says %s, expected %s", a, b, buf, m[a][b]);
            assert_int_equal(topo_gpu_path(t, a, b), smi_to_nccl(m[a][b]));
        }
}

static void test_paths_2s(void **state)
{
    (void)state;
    /* All 64 entries equal the measured machine's nvidia-smi matrix: the
     * cross-VS pairs of one chip are NODE although their data takes the
     * chip's internal fabric (a data shortcut path types ignore). NCCL's
     * integers: PIX 4, NODE -> PHB 8, SYS 9. */
    topo *t = load("rtxpro6000-8x-pcie5-2s");
    check_matrix(t, smi_2s);
    assert_string_equal(topo_path_name(topo_gpu_path(t, 0, 2), 0), "PHB");
    /* A GPU's root port is the TOPO_ROOT its switches hang from, a root port
     * is its own, and a CPU (above every root port) has none. */
    int g0 = topo_gpu_node(t, 0), rp = topo_root_port(t, g0);
    assert_true(rp >= 0);
    assert_int_equal(topo_node_at(t, rp)->kind, TOPO_ROOT);
    assert_int_equal(topo_root_port(t, rp), rp);
    assert_int_equal(topo_root_port(t, topo_node_at(t, rp)->pci_parent), -1);
    assert_int_equal(topo_root_port(t, topo_gpu_node(t, 4)) != rp, 1);
    topo_free(t);
}

static void test_paths_1s(void **state)
{
    (void)state;
    /* rtxpro6000-8x-cpayne-1socket.txt has no nvidia-smi matrix; derived by
     * hand from its drawing: same c-payne switch = PIX, the two switches hang
     * off root complexes 00 and 40 of one socket = NODE (nvidia-smi: host
     * bridges of one NUMA node). */
    static const char *const m[8][8] = {
        {"X", "PIX", "PIX", "PIX", "NODE", "NODE", "NODE", "NODE"},
        {"PIX", "X", "PIX", "PIX", "NODE", "NODE", "NODE", "NODE"},
        {"PIX", "PIX", "X", "PIX", "NODE", "NODE", "NODE", "NODE"},
        {"PIX", "PIX", "PIX", "X", "NODE", "NODE", "NODE", "NODE"},
        {"NODE", "NODE", "NODE", "NODE", "X", "PIX", "PIX", "PIX"},
        {"NODE", "NODE", "NODE", "NODE", "PIX", "X", "PIX", "PIX"},
        {"NODE", "NODE", "NODE", "NODE", "PIX", "PIX", "X", "PIX"},
        {"NODE", "NODE", "NODE", "NODE", "PIX", "PIX", "PIX", "X"},
    };
    topo *t = load("rtxpro6000-8x-pcie5-1s");
    check_matrix(t, m);
    /* Latency: same switch 633-727 ns (mean 680.5), cross switch group A
     * 1072.3 ns (file table 2b); the model's routes give these means (+-1 ps). */
    assert_int_equal(topo_route_lat_ps(t, topo_gpu_node(t, 0), topo_gpu_node(t, 1)), 680500);
    assert_int_equal(topo_route_lat_ps(t, topo_gpu_node(t, 0), topo_gpu_node(t, 4)), 1072300);
    topo_free(t);
}

static void test_paths_nvswitch(void **state)
{
    (void)state;
    /* HGX H200: every pair NV18 (18 NVLink 4 lanes through NVSwitch), NCCL
     * PATH_NVL; the NVLink route is 2 hops gpu-nvs0-gpu, 500 ns. */
    topo *t = load("h200-8x-nvswitch");
    char buf[8];
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++) {
            assert_string_equal(topo_gpu_path_smi(t, a, b, buf), a == b ? "X" : "NV18");
            assert_int_equal(topo_gpu_path(t, a, b), a == b ? PATH_LOC : PATH_NVL);
        }
    assert_string_equal(topo_path_name(PATH_NVL, 18), "NV18");
    const int *links;
    const int8_t *dirs;
    assert_int_equal(topo_route(t, topo_gpu_node(t, 0), topo_gpu_node(t, 7), &links, &dirs), 2);
    assert_int_equal(topo_link_at(t, links[0])->kind, LINK_NVLINK);
    assert_int_equal(topo_route_lat_ps(t, topo_gpu_node(t, 0), topo_gpu_node(t, 7)), 500000);
    /* Host memory of socket 1 from GPU 0: gpu0-sw0-rp0-cpu0-cpu1-mem1. */
    assert_int_equal(topo_route(t, topo_gpu_node(t, 0), topo_find(t, "mem1"), &links, &dirs), 5);
    topo_free(t);
    /* HGX H100: the same board (18 lanes x 20.6 = 370.8 GB/s to nvs0, the
     * same routes) with the H100 SXM's HBM3, 3350 GB/s (H200: 4800). */
    topo *h = load("h100-8x-nvswitch");
    assert_int_equal(topo_ngpus(h), 8);
    assert_true(fabs(topo_params_get(h)->gpu_mem_Bps - 3350e9) < 1);
    assert_int_equal(topo_route(h, topo_gpu_node(h, 0), topo_gpu_node(h, 7), &links, &dirs), 2);
    assert_int_equal(topo_link_at(h, links[0])->nvlinks, 18);
    assert_true(fabs(topo_link_at(h, links[0])->bw_Bps - 370.8e9) < 1e3);
    assert_string_equal(topo_gpu_path_smi(h, 2, 5, buf), "NV18");
    topo_free(h);
}

/* The route a->b as "n0>n1>...", from the hop list and its directions. */
static void route_str(const topo *t, const char *a, const char *b, char *out, size_t n)
{
    const int *links;
    const int8_t *dirs;
    int va = topo_find(t, a), vb = topo_find(t, b);
    int h = topo_route(t, va, vb, &links, &dirs);
    assert_true(h >= 0);
    size_t len = (size_t)snprintf(out, n, "%s", a);
    int at = va;
    for (int i = 0; i < h; i++) {
        const topo_link *l = topo_link_at(t, links[i]);
        int from = dirs[i] ? l->b : l->a, to = dirs[i] ? l->a : l->b;
        assert_int_equal(from, at); /* hops chain up */
        at = to;
        len += (size_t)snprintf(out + len, n - len, ">%s", topo_node_at(t, to)->name);
    }
    assert_int_equal(at, vb);
}

static void test_routes_2s(void **state)
{
    (void)state;
    topo *t = load("rtxpro6000-8x-pcie5-2s");
    char r[256];
    /* PIX: through the shared virtual switch; 357.5 + 357.5 = 715 ns. */
    route_str(t, "gpu0", "gpu1", r, sizeof r);
    assert_string_equal(r, "gpu0>vs0>gpu1");
    assert_int_equal(topo_route_lat_ps(t, topo_find(t, "gpu0"), topo_find(t, "gpu1")), 715000);
    /* NODE for nvidia-smi, but the data crosses the chip's internal fabric,
     * no CPU: 357.5 + 20 + 357.5 = 735 ns. */
    route_str(t, "gpu0", "gpu2", r, sizeof r);
    assert_string_equal(r, "gpu0>vs0>vs1>gpu2");
    assert_int_equal(topo_route_lat_ps(t, topo_find(t, "gpu0"), topo_find(t, "gpu2")), 735000);
    /* SYS: uplink, root port, xGMI, root port, uplink:
     * 2 x 357.5 + 2 x 57.5 + 2 x 202.5 + 80 = 1315 ns (measured 1.27-1.36 us). */
    route_str(t, "gpu0", "gpu4", r, sizeof r);
    assert_string_equal(r, "gpu0>vs0>rp0>cpu0>cpu1>rp2>vs2>gpu4");
    assert_int_equal(topo_route_lat_ps(t, topo_find(t, "gpu0"), topo_find(t, "gpu4")), 1315000);
    route_str(t, "gpu7", "gpu2", r, sizeof r);
    assert_string_equal(r, "gpu7>vs3>rp3>cpu1>cpu0>rp1>vs1>gpu2");
    /* Host memory (SHM staging) of the own socket: gpu0>vs0>rp0>cpu0>mem0. */
    route_str(t, "gpu0", "mem0", r, sizeof r);
    assert_string_equal(r, "gpu0>vs0>rp0>cpu0>mem0");
    /* A GPU is never a transit node, so nothing routes through gpu1. */
    const int *links;
    const int8_t *dirs;
    assert_int_equal(topo_route(t, topo_find(t, "gpu0"), topo_find(t, "gpu0"), &links, &dirs), 0);
    topo_free(t);
}

static void test_route_ties(void **state)
{
    (void)state;
    /* Two 2-hop paths a>s1>b and a>s2>b of equal latency (10+10 ns) and a
     * 1-hop direct fabric link of 20 ns: the same latency, fewest hops wins
     * (direct). Without it, equal hops: the lower predecessor id (s1) wins. */
    const char *txt =
        "collsim-topo 1\n"
        "node c cpu numa=0\n"
        "node s1 root parent=c\nnode s2 root parent=c\n"
        "node g0 gpu parent=s1\nnode g1 gpu parent=s2\n"
        "link s1 c fabric bw_GBps=50 lat_ns=10\nlink s2 c fabric bw_GBps=50 lat_ns=10\n"
        "link s1 s2 fabric bw_GBps=50 lat_ns=20\n"
        "link g0 s1 pcie gen=5 width=16 lat_ns=1\nlink g1 s2 pcie gen=5 width=16 lat_ns=1\n";
    err e = {0};
    int rc;
    topo *t = parse_str(txt, &e, &rc);
    assert_int_equal(rc, 0);
    char r[128];
    route_str(t, "g0", "g1", r, sizeof r);
    assert_string_equal(r, "g0>s1>s2>g1");
    /* Path type ignores the s1-s2 shortcut: two root ports of one CPU = NODE. */
    char buf[8];
    assert_string_equal(topo_gpu_path_smi(t, 0, 1, buf), "NODE");
    topo_free(t);
    const char *txt2 =
        "collsim-topo 1\n"
        "node c cpu numa=0\nnode r root parent=c\n"
        "node s1 switch parent=r\nnode s2 switch parent=r\n"
        "node g0 gpu\nnode g1 gpu\n"
        "link r c fabric bw_GBps=50 lat_ns=5\n"
        "link g0 s2 pcie gen=5 width=16 lat_ns=10\nlink g0 s1 pcie gen=5 width=16 lat_ns=10\n"
        "link g1 s2 pcie gen=5 width=16 lat_ns=10\nlink g1 s1 pcie gen=5 width=16 lat_ns=10\n"
        "link s1 r pcie gen=5 width=16 lat_ns=10\nlink s2 r pcie gen=5 width=16 lat_ns=10\n";
    t = parse_str(txt2, &e, &rc);
    /* No parent= on the GPUs: no PCI path to a CPU, line 6. */
    assert_int_equal(rc, ERR_INPUT);
    assert_non_null(strstr(e.msg, "mem.topo:6: GPU 'g0' has no PCI path"));
    t = parse_str("collsim-topo 1\n"
                  "node c cpu numa=0\nnode r root parent=c\n"
                  "node s1 switch parent=r\nnode s2 switch parent=r\n"
                  "node g0 gpu parent=s2\nnode g1 gpu parent=s2\n"
                  "link r c fabric bw_GBps=50 lat_ns=5\n"
                  "link g0 s2 pcie gen=5 width=16 lat_ns=10\n"
                  "link g0 s1 pcie gen=5 width=16 lat_ns=10\n"
                  "link g1 s2 pcie gen=5 width=16 lat_ns=10\n"
                  "link g1 s1 pcie gen=5 width=16 lat_ns=10\n"
                  "link s1 r pcie gen=5 width=16 lat_ns=10\n"
                  "link s2 r pcie gen=5 width=16 lat_ns=10\n",
                  &e, &rc);
    assert_int_equal(rc, 0);
    /* g0>s1>g1 and g0>s2>g1 both 20 ns, 2 hops: s1 (id 2) < s2 (id 3). */
    route_str(t, "g0", "g1", r, sizeof r);
    assert_string_equal(r, "g0>s1>g1");
    topo_free(t);
}

static void test_route_nvlink_first(void **state)
{
    (void)state;
    /* Two GPUs on their own root ports and on one NVSwitch whose hops are
     * slow: host path g0>r0>c>r1>g1 = 100 + 10 + 10 + 100 = 220 ns; NVLink
     * path g0>nv>g1 = 2 x 500 = 1000 ns, 780 ns longer. A path made only of
     * NVLink links wins anyway: route via nv, latency 1000000 ps. */
    err e0 = {0};
    int rc0;
    topo *t = parse_str("collsim-topo 1\n"
                        "node c cpu numa=0\nnode m hostmem numa=0\n"
                        "node r0 root parent=c\nnode r1 root parent=c\n"
                        "node g0 gpu parent=r0\nnode g1 gpu parent=r1\nnode nv nvswitch\n"
                        "link c m mem bw_GBps=100 lat_ns=10\n"
                        "link r0 c fabric bw_GBps=50 lat_ns=10\nlink r1 c fabric bw_GBps=50 lat_ns=10\n"
                        "link g0 r0 pcie gen=5 width=16 lat_ns=100\n"
                        "link g1 r1 pcie gen=5 width=16 lat_ns=100\n"
                        "link g0 nv nvlink lanes=18 bw_GBps=370 lat_ns=500\n"
                        "link g1 nv nvlink lanes=18 bw_GBps=370 lat_ns=500\n",
                        &e0, &rc0);
    assert_int_equal(rc0, 0);
    char r[128];
    route_str(t, "g0", "g1", r, sizeof r);
    assert_string_equal(r, "g0>nv>g1");
    assert_int_equal(topo_route_lat_ps(t, topo_find(t, "g0"), topo_find(t, "g1")), 1000000);
    /* Host traffic still takes the PCIe route (no NVLink path exists). */
    route_str(t, "g1", "m", r, sizeof r);
    assert_string_equal(r, "g1>r1>c>m");
    topo_free(t);
    /* Without NVLink the rule changes nothing: a direct 30 ns socket-level
     * fabric shortcut (1 hop) against a 2-hop 20 ns path via the CPU: the
     * lower latency (2 hops, 20 ns) wins as before. */
    err e = {0};
    int rc;
    t = parse_str("collsim-topo 1\n"
                  "node c cpu numa=0\n"
                  "node s1 root parent=c\nnode s2 root parent=c\n"
                  "node g0 gpu parent=s1\nnode g1 gpu parent=s2\n"
                  "link s1 c fabric bw_GBps=50 lat_ns=10\nlink s2 c fabric bw_GBps=50 lat_ns=10\n"
                  "link s1 s2 fabric bw_GBps=50 lat_ns=30\n"
                  "link g0 s1 pcie gen=5 width=16 lat_ns=1\nlink g1 s2 pcie gen=5 width=16 lat_ns=1\n",
                  &e, &rc);
    assert_int_equal(rc, 0);
    route_str(t, "g0", "g1", r, sizeof r);
    assert_string_equal(r, "g0>s1>c>s2>g1");
    topo_free(t);
}

static void test_pxb_phb_nvb(void **state)
{
    (void)state;
    /* A parent switch p over leaf switches l0 {g0,g1} and l1 {g2}; g3 on the
     * root port directly; g0-g1 share l0 = PIX; g0-g2 cross l0,p,l1 = PXB; g3
     * meets the others at the root port = PHB. NVLinks g0-g3 and g3-g2 make
     * g0-g2 NVB for NCCL (via GPU g3), while nvidia-smi still says PXB. */
    const char *txt =
        "collsim-topo 1\n"
        "node c cpu numa=3\nnode r root parent=c\nnode p switch parent=r\n"
        "node l0 switch parent=p\nnode l1 switch parent=p\n"
        "node g0 gpu parent=l0\nnode g1 gpu parent=l0\nnode g2 gpu parent=l1\n"
        "node g3 gpu parent=r\n"
        "link r c fabric bw_GBps=50 lat_ns=5\nlink p r pcie gen=5 width=16 lat_ns=5\n"
        "link l0 p pcie gen=5 width=16 lat_ns=5\nlink l1 p pcie gen=5 width=16 lat_ns=5\n"
        "link g0 l0 pcie gen=4 width=16 lat_ns=5\nlink g1 l0 pcie gen=4 width=16 lat_ns=5\n"
        "link g2 l1 pcie gen=4 width=16 lat_ns=5\nlink g3 r pcie gen=4 width=16 lat_ns=5\n"
        "link g0 g3 nvlink lanes=4 bw_GBps=80 lat_ns=100\n"
        "link g3 g2 nvlink lanes=2 bw_GBps=40 lat_ns=100\n";
    err e = {0};
    int rc;
    topo *t = parse_str(txt, &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    char buf[8];
    assert_string_equal(topo_gpu_path_smi(t, 0, 1, buf), "PIX");
    assert_string_equal(topo_gpu_path_smi(t, 0, 2, buf), "PXB");
    assert_string_equal(topo_gpu_path_smi(t, 1, 3, buf), "PHB");
    assert_string_equal(topo_gpu_path_smi(t, 0, 3, buf), "NV4");
    assert_int_equal(topo_gpu_path(t, 0, 2), PATH_NVB);
    assert_int_equal(topo_gpu_path(t, 1, 2), PATH_PXB);
    assert_int_equal(topo_gpu_path(t, 1, 3), PATH_PHB);
    /* NUMA of GPUs not given: the CPU's (3). */
    assert_int_equal(topo_node_at(t, topo_gpu_node(t, 2))->numa, 3);
    topo_free(t);
}

static void test_gpus_nvlinked(void **state)
{
    (void)state;
    /* topo_gpus_nvlinked(t, n) must equal "every pair of GPUs 0..n-1 has
     * topo_gpu_nvlinks > 0", checked here pair by pair. nvswitch-16: all 16
     * on one switch, so every prefix. PCIe tree: no NVLink, so only n = 1. */
    const char *names[] = {"nvswitch-16", "h200-8x-nvswitch", "rtxpro6000-8x-pcie5-2s",
                           "h200-2x", "pcie-8"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        topo *t = load(names[i]);
        int n = topo_ngpus(t);
        for (int k = 1; k <= n; k++) {
            int all = 1;
            for (int a = 0; a < k; a++)
                for (int b = a + 1; b < k; b++)
                    all &= topo_gpu_nvlinks(t, a, b) > 0;
            assert_int_equal(topo_gpus_nvlinked(t, k), all);
        }
        topo_free(t);
    }
    /* A direct mesh without a switch: g0-g1, g1-g2, g0-g2 joined, g3 joined
     * to g0 only. Prefixes 1..3 are pairwise NVLinked, 4 is not (g1-g3). */
    const char *txt =
        "collsim-topo 1\n"
        "node c cpu numa=0\nnode r root parent=c\n"
        "node g0 gpu parent=r\nnode g1 gpu parent=r\nnode g2 gpu parent=r\n"
        "node g3 gpu parent=r\n"
        "link r c fabric bw_GBps=50 lat_ns=5\n"
        "link g0 r pcie gen=5 width=16 lat_ns=5\nlink g1 r pcie gen=5 width=16 lat_ns=5\n"
        "link g2 r pcie gen=5 width=16 lat_ns=5\nlink g3 r pcie gen=5 width=16 lat_ns=5\n"
        "link g0 g1 nvlink lanes=2 bw_GBps=40 lat_ns=100\n"
        "link g1 g2 nvlink lanes=2 bw_GBps=40 lat_ns=100\n"
        "link g0 g2 nvlink lanes=2 bw_GBps=40 lat_ns=100\n"
        "link g0 g3 nvlink lanes=2 bw_GBps=40 lat_ns=100\n";
    err e = {0};
    int rc;
    topo *t = parse_str(txt, &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    assert_int_equal(topo_gpus_nvlinked(t, 3), 1);
    assert_int_equal(topo_gpus_nvlinked(t, 4), 0);
    topo_free(t);
}

static char *write_str(const topo *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    err e = {0};
    assert_int_equal(topo_write(t, f, &e), 0);
    fclose(f);
    return buf;
}

static void test_round_trip(void **state)
{
    (void)state;
    static const char *const names[] = {"rtxpro6000-8x-pcie5-2s", "rtxpro6000-8x-pcie5-1s",
                                        "h200-8x-nvswitch", "h200-1x", "h200-2x",
                                        "pcie-12-star"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        /* write(preset) parsed again writes the same text, and the parsed
         * topology has the same links, bandwidths (+-1 B/s), latencies and
         * params. */
        topo *a = load(names[i]);
        char *ta = write_str(a);
        err e = {0};
        int rc;
        topo *b = parse_str(ta, &e, &rc);
        if (rc)
            fail_msg("%s: %s", names[i], e.msg);
        char *tb = write_str(b);
        assert_string_equal(ta, tb);
        assert_string_equal(topo_name(a), topo_name(b));
        assert_int_equal(topo_nlinks(a), topo_nlinks(b));
        for (int l = 0; l < topo_nlinks(a); l++) {
            assert_float_equal(topo_link_at(a, l)->bw_Bps, topo_link_at(b, l)->bw_Bps, 1);
            assert_int_equal(topo_link_at(a, l)->lat_ps, topo_link_at(b, l)->lat_ps);
        }
        assert_memory_equal(topo_params_get(a), topo_params_get(b), sizeof(topo_params));
        free(ta);
        free(tb);
        topo_free(a);
        topo_free(b);
    }
}

static void test_p2p_status(void **state)
{
    (void)state;
    /* `p2p A B STATUS` sets NVML's P2P status both ways; `*` is every GPU
     * defined above; an unset pair is OK. Written back, the file reads the
     * same: each pair once. Four GPUs on one switch: 0-1 NS, then every pair
     * of GPU 3 CNS (3 pairs, 6 directions), 2-3 back to OK (4 directions left
     * with 0-1). */
    static const char text[] =
        "collsim-topo 1\n"
        "node cpu0 cpu numa=0\nnode rp0 root parent=cpu0\nnode sw0 switch parent=rp0\n"
        "node gpu0 gpu parent=sw0\nnode gpu1 gpu parent=sw0\nnode gpu2 gpu parent=sw0\n"
        "node gpu3 gpu parent=sw0\n"
        "link sw0 rp0 pcie gen=5 width=16 lat_ns=57.5\nlink rp0 cpu0 fabric bw_GBps=100 lat_ns=200\n"
        "link gpu0 sw0 pcie gen=5 width=16 lat_ns=357.5\nlink gpu1 sw0 pcie gen=5 width=16 lat_ns=357.5\n"
        "link gpu2 sw0 pcie gen=5 width=16 lat_ns=357.5\nlink gpu3 sw0 pcie gen=5 width=16 lat_ns=357.5\n"
        "p2p gpu0 gpu1 ns\np2p gpu3 * CNS\np2p gpu2 gpu3 OK\n";
    err e = {0};
    int rc;
    topo *t = parse_str(text, &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    assert_int_equal(topo_gpu_p2p(t, 0, 1), P2P_NS);
    assert_int_equal(topo_gpu_p2p(t, 1, 0), P2P_NS);
    assert_int_equal(topo_gpu_p2p(t, 0, 3), P2P_CNS);
    assert_int_equal(topo_gpu_p2p(t, 1, 3), P2P_CNS);
    assert_int_equal(topo_gpu_p2p(t, 3, 2), P2P_OK);
    assert_int_equal(topo_gpu_p2p(t, 0, 2), P2P_OK);
    assert_int_equal(topo_p2p_count(t), 6);
    char *ta = write_str(t);
    assert_non_null(strstr(ta, "p2p gpu0 gpu1 NS\n"));
    topo *u = parse_str(ta, &e, &rc);
    assert_int_equal(rc, 0);
    char *tb = write_str(u);
    assert_string_equal(ta, tb);
    assert_int_equal(topo_p2p_count(u), 6);
    free(ta);
    free(tb);
    topo_free(u);
    topo_free(t);
    /* Bad statements name the line. */
    char bad[2048];
    snprintf(bad, sizeof bad, "%.*sp2p gpu0 gpu9 NS\n", (int)(strstr(text, "p2p") - text), text);
    t = parse_str(bad, &e, &rc);
    assert_int_equal(rc, ERR_INPUT);
    assert_non_null(strstr(e.msg, "mem.topo:15:"));
    assert_non_null(strstr(e.msg, "gpu9"));
    snprintf(bad, sizeof bad, "%.*sp2p gpu0 gpu1 MAYBE\n", (int)(strstr(text, "p2p") - text), text);
    t = parse_str(bad, &e, &rc);
    assert_int_equal(rc, ERR_INPUT);
    assert_non_null(strstr(e.msg, "STATUS"));
    /* NCCL's per-lane NVLink figures, one table (topo.h SM*_NVLINK_BW). */
    assert_float_equal(topo_nvlink_lane_GBps(90), 20.6, 1e-9);
    assert_float_equal(topo_nvlink_lane_GBps(86), 12.0, 1e-9);
    assert_float_equal(topo_nvlink_lane_GBps(89), 20.0, 1e-9);
    assert_float_equal(topo_nvlink_lane_GBps(100), 40.1, 1e-9);
    assert_float_equal(topo_nvlink_lane_GBps(60), 18.0, 1e-9);
    assert_float_equal(topo_nvlink_lane_GBps(0), 20.0, 1e-9);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    /* Each file (tests/data/topo/) is good-min.topo with one defect; the
     * error is ERR_INPUT naming the file and the line of the defect. */
    static const struct {
        const char *file, *msg;
    } cases[] = {
        {"bad-header.topo", "bad-header.topo:1: not a topology file"},
        {"bad-unknown-key.topo", "bad-unknown-key.topo:6: unknown or repeated key 'colour'"},
        {"bad-unknown-node.topo", "bad-unknown-node.topo:9: unknown node 'rp9'"},
        {"bad-dup-name.topo", "bad-dup-name.topo:7: duplicate node name 'gpu0'"},
        {"bad-zero-bw.topo", "bad-zero-bw.topo:11: bw_GBps=0 must be"},
        {"bad-neg-bw.topo", "bad-neg-bw.topo:11: bw_GBps=-5 must be"},
        {"bad-huge-bw.topo", "bad-huge-bw.topo:11: bw_GBps=200000 must be"},
        {"bad-cycle.topo", "bad-cycle.topo:5: PCI parent cycle"},
        {"bad-no-pci.topo", "bad-no-pci.topo:7: GPU 'gpu1' has no PCI path to a CPU"},
        {"bad-missing-lat.topo", "bad-missing-lat.topo:11: link gpu1-sw0: lat_ns= is required"},
        {"bad-link-kind.topo", "bad-link-kind.topo:8: unknown link kind 'ethernet'"},
        {"bad-param.topo", "bad-param.topo:4: param pcie_mps_bytes: 300 must be a power of two"},
        {"bad-dup-link.topo", "bad-dup-link.topo:12: second link between 'sw0' and 'gpu1'"},
        {"bad-node-kind.topo", "bad-node-kind.topo:5: unknown node kind 'hub'"},
        {"bad-gen.topo", "bad-gen.topo:11: link gpu1-sw0: PCIe gen 9 not in 1..6"},
        {"bad-disconnected.topo", "bad-disconnected.topo:8: GPU 'gpu1' is not connected"},
    };
    char path[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(path, sizeof path, "tests/data/topo/%s", cases[i].file);
        FILE *f = fopen(path, "r");
        if (!f)
            fail_msg("%s: missing (run from the repository root)", path);
        err e = {0};
        topo *t = (topo *)1;
        int rc = topo_parse(f, cases[i].file, &t, &e);
        fclose(f);
        if (rc != ERR_INPUT || !strstr(e.msg, cases[i].msg))
            fail_msg("%s: rc %d, message '%s', expected '%s'", cases[i].file, rc, e.msg,
                     cases[i].msg);
        assert_null(t);
    }
    /* The good file parses. */
    FILE *f = fopen("tests/data/topo/good-min.topo", "r");
    assert_non_null(f);
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_parse(f, "good-min.topo", &t, &e), 0);
    fclose(f);
    topo_free(t);
}

static void test_too_many_gpus(void **state)
{
    (void)state;
    /* 4097 GPU nodes: the 4097th definition (line 4 + 4096 = 4100) fails. */
    size_t cap = 64 * 4200;
    char *txt = malloc(cap);
    size_t n = (size_t)snprintf(txt, cap, "collsim-topo 1\nnode c cpu numa=0\nnode r root "
                                "parent=c\n");
    for (int g = 0; g < 4097; g++)
        n += (size_t)snprintf(txt + n, cap - n, "node g%d gpu parent=r\n", g);
    err e = {0};
    int rc;
    topo *t = parse_str(txt, &e, &rc);
    assert_int_equal(rc, ERR_INPUT);
    assert_null(t);
    assert_non_null(strstr(e.msg, "mem.topo:4100: more than 4096 GPUs"));
    free(txt);
    /* The generated families stop at 4096 too: nvswitch-4097 is no preset. */
    assert_int_equal(topo_load("nvswitch-4097", &t, &e), ERR_INPUT); /* neither preset nor file */
}

static void test_generated(void **state)
{
    (void)state;
    /* nvswitch-1024: 1024 GPUs, every pair NV18, any route 2 hops. */
    topo *t = load("nvswitch-1024");
    assert_int_equal(topo_ngpus(t), 1024);
    const int *links;
    const int8_t *dirs;
    assert_int_equal(topo_route(t, topo_gpu_node(t, 3), topo_gpu_node(t, 1000), &links, &dirs), 2);
    char buf[8];
    assert_string_equal(topo_gpu_path_smi(t, 0, 1023, buf), "NV18");
    topo_free(t);
    /* pcie-1024 (ring of 256 sockets): gpu0 (socket 0) to gpu1023 (socket
     * 255, a ring neighbour): gpu>sw>rp>cpu>cpu>rp>sw>gpu = 7 hops, SYS;
     * gpu0-gpu1 PIX, gpu0-gpu2 PHB (2 switches on one root complex). */
    t = load("pcie-1024");
    assert_int_equal(topo_route(t, topo_gpu_node(t, 0), topo_gpu_node(t, 1023), &links, &dirs), 7);
    assert_string_equal(topo_gpu_path_smi(t, 0, 1023, buf), "SYS");
    assert_string_equal(topo_gpu_path_smi(t, 0, 1, buf), "PIX");
    assert_string_equal(topo_gpu_path_smi(t, 0, 2, buf), "PHB");
    /* socket 0 to socket 128 is 128 socket hops either way round: 6 + 128. */
    assert_int_equal(topo_route(t, topo_gpu_node(t, 0), topo_gpu_node(t, 512), &links, &dirs),
                     134);
    topo_free(t);
    /* pcie-1024-star: socket 1 to socket 255 goes through socket 0: 8 hops. */
    t = load("pcie-1024-star");
    assert_int_equal(topo_route(t, topo_gpu_node(t, 4), topo_gpu_node(t, 1023), &links, &dirs), 8);
    topo_free(t);
    /* h200-1x: one GPU, its host link straight to a root port: gpu0>rp0>cpu0>mem0. */
    t = load("h200-1x");
    assert_int_equal(topo_route(t, topo_gpu_node(t, 0), topo_find(t, "mem0"), &links, &dirs), 3);
    topo_free(t);
}

typedef struct race {
    const topo *t;
    int first;
    long long sum; /* sum over pairs of hops x 1e6 + latency in ns */
} race;

static void *race_routes(void *arg)
{
    race *r = arg;
    int n = topo_ngpus(r->t);
    for (int k = 0; k < n; k++) {
        int a = (r->first + k) % n; /* threads start on different sources */
        for (int b = 0; b < n; b++) {
            const int *links;
            const int8_t *dirs;
            int na = topo_gpu_node(r->t, a), nb = topo_gpu_node(r->t, b);
            int h = topo_route(r->t, na, nb, &links, &dirs);
            r->sum += (long long)h * 1000000 + topo_route_lat_ps(r->t, na, nb) / 1000;
        }
    }
    return NULL;
}

static void test_lazy_routes_threads(void **state)
{
    (void)state;
    /* pcie-256-star has 256 GPUs + 64 host memories (> 64 endpoints), so its
     * routes are computed lazily. Four threads asking for all routes at once,
     * from different first sources, must each see the same routes as a
     * single-threaded run on a fresh copy: equal sums of hops and latencies. */
    topo *t = load("pcie-256-star"), *u = load("pcie-256-star");
    race one = {u, 0, 0};
    race_routes(&one);
    race r[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        r[i] = (race){t, 64 * i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, race_routes, &r[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_true(r[i].sum == one.sum);
    }
    assert_true(one.sum > 0);
    topo_free(t);
    topo_free(u);
}

/* topo_route_copy walks the same tree topo_route caches: for every ordered
 * node pair of two presets (PCIe tree with host memory; NVSwitch crossbar),
 * asked source by source (a one-shot's order: walked, not kept) and then
 * target by target (sources' trees come and go: stored), it must give the
 * same hop count, links, directions and latency as a fresh topology's
 * topo_route and topo_route_lat_ps (exact), and copy nothing into a buffer
 * too small, while still returning the hop count. The nearest-host search,
 * which stops early, must give the brute-force minimum (exact). */
static void test_route_copy(void **state)
{
    (void)state;
    const char *presets[] = {"pcie-16", "nvswitch-16"};
    for (int pi = 0; pi < 2; pi++) {
        err e = {0};
        topo *ref = NULL, *t = NULL;
        assert_int_equal(topo_load(presets[pi], &ref, &e), 0);
        assert_int_equal(topo_load(presets[pi], &t, &e), 0);
        int n = topo_nnodes(t);
        for (int order = 0; order < 2; order++)
            for (int x = 0; x < n; x++)
                for (int y = 0; y < n; y++) {
                    int a = order ? y : x, b = order ? x : y;
                    const int *rl;
                    const int8_t *rd;
                    int h = topo_route(ref, a, b, &rl, &rd), links[64], one[1] = {-7};
                    int8_t dirs[64], d1[1];
                    int64_t lat, lat1;
                    assert_int_equal(topo_route_copy(t, a, b, links, dirs, 64, &lat), h);
                    assert_int_equal(lat, topo_route_lat_ps(ref, a, b));
                    for (int i = 0; i < h; i++) {
                        assert_int_equal(links[i], rl[i]);
                        assert_int_equal(dirs[i], rd[i]);
                    }
                    if (h > 1) {
                        assert_int_equal(topo_route_copy(t, a, b, one, d1, 1, &lat1), h);
                        assert_int_equal(one[0], -7);
                    }
                }
        /* The nearest GPU or host memory over a route leaving the NVLink
         * fabric, by brute force over every route, against the search that
         * stops at the first such node (a fresh topology: no cached tree). */
        topo *fresh = NULL;
        assert_int_equal(topo_load(presets[pi], &fresh, &e), 0);
        for (int x = 0; x < n; x++) {
            topo_kind kx = topo_node_at(ref, x)->kind;
            if (kx != TOPO_GPU && kx != TOPO_HOSTMEM)
                continue;
            int64_t best = -1;
            for (int y = 0; y < n; y++) {
                topo_kind k = topo_node_at(ref, y)->kind;
                const int *rl;
                const int8_t *rd;
                int h = y == x || (k != TOPO_GPU && k != TOPO_HOSTMEM)
                            ? 0 : topo_route(ref, x, y, &rl, &rd), off = 0;
                for (int i = 0; i < h; i++)
                    off |= topo_link_at(ref, rl[i])->kind != LINK_NVLINK;
                int64_t d = topo_route_lat_ps(ref, x, y);
                if (off && (best < 0 || d < best))
                    best = d;
            }
            assert_int_equal(topo_nearest_host_lat_ps(fresh, x), best);
            assert_int_equal(topo_nearest_host_lat_ps(t, x), best);
        }
        topo_free(fresh);
        topo_free(t);
        topo_free(ref);
    }
}

/* topo_route_expect_many: a hinted source's first route builds its whole
 * tree (one tree kept, ntrees 1; nparts PARTS_MANY) and stores no route per
 * pair (plen 0: walked from the tree), where an unhinted source's first
 * route is a search stopped at its target (no tree, nparts 1) whose route
 * is stored (plen 1); topologies of more
 * than 64 endpoints, whose routes are not all computed at topo_finish.
 * Either way every route is the same: for every source and every endpoint
 * of pcie-72 (ties between the two ways round its ring of sockets),
 * pcie-68-star and nvswitch-72, the hinted topology's routes (hops, links, directions,
 * latency) equal a fresh unhinted one's (exact), asked in the same order. */
static void test_route_expect_many(void **state)
{
    (void)state;
    const char *presets[] = {"pcie-72", "pcie-68-star", "nvswitch-72"};
    for (int pi = 0; pi < 3; pi++) {
        topo *h = load(presets[pi]), *u = load(presets[pi]);
        int n = topo_nnodes(h), g0 = topo_gpu_node(h, 0), g1 = topo_gpu_node(h, 1);
        for (int x = 0; x < n; x++) {
            topo_kind k = topo_node_at(h, x)->kind;
            if (k == TOPO_GPU || k == TOPO_HOSTMEM)
                topo_route_expect_many(h, x);
        }
        int links[64], ul[64];
        int8_t dirs[64], ud[64];
        int64_t lat, ulat;
        assert_true(topo_route_copy(h, g0, g1, links, dirs, 64, &lat) > 0);
        assert_true(topo_route_copy(u, g0, g1, ul, ud, 64, &ulat) > 0);
        assert_int_equal(h->ntrees[g0], 1);
        assert_int_equal(h->nparts[g0], PARTS_MANY);
        assert_int_equal(h->plen, 0);
        assert_int_equal(u->ntrees[g0], 0);
        assert_int_equal(u->nparts[g0], 1);
        assert_int_equal(u->plen, 1);
        for (int x = 0; x < n; x++)
            for (int y = 0; y < n; y++) {
                topo_kind kx = topo_node_at(h, x)->kind, ky = topo_node_at(h, y)->kind;
                if ((kx != TOPO_GPU && kx != TOPO_HOSTMEM) || (ky != TOPO_GPU && ky != TOPO_HOSTMEM))
                    continue;
                int nh = topo_route_copy(h, x, y, links, dirs, 64, &lat);
                assert_int_equal(topo_route_copy(u, x, y, ul, ud, 64, &ulat), nh);
                assert_int_equal(lat, ulat);
                for (int i = 0; i < nh; i++) {
                    assert_int_equal(links[i], ul[i]);
                    assert_int_equal(dirs[i], ud[i]);
                }
            }
        topo_free(h);
        topo_free(u);
    }
}


/* topo_route_lat_row gives each target the latency topo_route_lat_ps gives
 * it (on a second topology, asked pair by pair), and topo_route_preds each
 * target's route, from each of its three
 * sources of a tree: a cached tree (a source asked once before it is said
 * to reach many: the large presets, whose routes are searched as asked), a
 * tree of its own (left behind as the source's walk) and that walk (asked
 * again); every GPU and host memory from every one, on
 * the named presets and three large ones; a source not said to reach many
 * gets -1 and nothing written. */
static void test_route_lat_row(void **state)
{
    (void)state;
    const char *presets[] = {"rtxpro6000-8x-pcie5-2s", "rtxpro6000-8x-pcie5-1s",
                             "h200-8x-nvswitch", "h100-8x-nvswitch", "h200-1x", "h200-2x",
                             "pcie-72", "pcie-68-star", "nvswitch-72"};
    int from_cache = 0, walked = 0;
    for (int pi = 0; pi < 9; pi++) {
        topo *h = load(presets[pi]), *u = load(presets[pi]);
        int n = topo_nnodes(h), m = 0, *dst = malloc(sizeof(int) * (size_t)n);
        int64_t *row = malloc(sizeof(int64_t) * (size_t)n);
        assert_non_null(dst);
        assert_non_null(row);
        for (int x = 0; x < n; x++) {
            topo_kind k = topo_node_at(h, x)->kind;
            if (k == TOPO_GPU || k == TOPO_HOSTMEM)
                dst[m++] = x;
        }
        for (int i = 0; i < m; i++) {
            int x = dst[i];
            row[0] = 12345;
            assert_int_equal(topo_route_lat_row(h, x, dst, m, row), -1);
            assert_int_equal(row[0], 12345);
            if (i % 2 && m > 3) { /* a tree in the cache: three targets ask for it */
                for (int j = 1; j <= 3; j++)
                    (void)topo_route_lat_ps(h, x, dst[(i + j) % m]);
                for (int c = 0; c < TREE_CACHE; c++)
                    from_cache += h->tc[c] && h->tc[c]->src == x;
            }
            topo_route_expect_many(h, x);
            for (int pass = 0; pass < 2; pass++) {
                assert_int_equal(topo_route_lat_row(h, x, dst, m, row), 0);
                walked += pass == 0 && h->walk[x];
                /* topo_route_preds: walked back from each target, the route
                 * topo_route_copy gives (the other topology's, pair by pair). */
                const int *pw = topo_route_preds(h, x);
                assert_non_null(pw);
                for (int j = 0; pass == 1 && j < m; j++) {
                    int ul[64], v = dst[j], k = 0, rev[64];
                    int8_t ud[64];
                    int64_t ulat;
                    int uh = topo_route_copy(u, x, dst[j], ul, ud, 64, &ulat);
                    for (; v != x && pw[v] >= 0 && k < 64; k++) {
                        const topo_link *l = topo_link_at(h, pw[v]);
                        rev[k] = pw[v];
                        v = l->a == v ? l->b : l->a;
                    }
                    assert_int_equal(v == x ? k : -1, uh);
                    for (int z = 0; z < uh; z++)
                        assert_int_equal(rev[uh - 1 - z], ul[z]);
                }
                for (int j = 0; j < m; j++)
                    if (row[j] != topo_route_lat_ps(u, x, dst[j]))
                        fail_msg("%s: %d -> %d pass %d: %lld ps, pair by pair %lld",
                                 presets[pi], x, dst[j], pass, (long long)row[j],
                                 (long long)topo_route_lat_ps(u, x, dst[j]));
            }
        }
        free(dst);
        free(row);
        topo_free(h);
        topo_free(u);
    }
    assert_true(from_cache > 50 && walked > 50);
}

/* The walk from h's topo_route_preds of each source in turn, h's GPUs
 * first (so that later GPUs are the first's NVLink twins where they can
 * be, route.c [route-twins]), checked against topology u's routes (its own
 * searches, pair by pair): every node from every GPU, a target left unset
 * asked of topo_route_copy (from the source's whole walk); a third
 * topology's latency rows (topo_route_lat_row from walks made the same
 * way) against u's latencies. Returns the walks relabelled, *partial
 * those left unset somewhere (relabelled over NVLink alone). */
/* Drop the trees a topology's checks left cached (topo_finish asks for
 * routes): a source with a cached tree has that tree's walk, copied, where
 * the relabelling is to be tested. */
static void drop_trees(topo *t)
{
    for (int c = 0; c < TREE_CACHE; c++) {
        topo_tree_free(t->tc[c]);
        t->tc[c] = NULL;
    }
}

static int check_walks(const char *what, topo *h, topo *u, topo *h2, int *partial)
{
    drop_trees(h);
    drop_trees(h2);
    int n = topo_nnodes(h), m = 0;
    int *dst = malloc(sizeof(int) * (size_t)n);
    int64_t *row = malloc(sizeof(int64_t) * (size_t)n);
    assert_non_null(dst);
    assert_non_null(row);
    for (int v = 0; v < n; v++)
        if (topo_node_at(h, v)->kind == TOPO_GPU || topo_node_at(h, v)->kind == TOPO_HOSTMEM)
            dst[m++] = v;
    for (int x = 0; x < n; x++) {
        if (topo_node_at(h, x)->kind != TOPO_GPU)
            continue;
        topo_route_expect_many(h, x);
        const int *pw = topo_route_preds(h, x);
        assert_non_null(pw);
        int unset = 0;
        for (int v = 0; v < n; v++)
            unset += pw[v] == TOPO_WALK_UNSET;
        *partial += unset > 0;
        for (int v = 0; v < n; v++) {
            if (v == x)
                continue;
            int hl[64], ul[64], rev[64], k = 0, w = v;
            int8_t hd[64], ud[64];
            int64_t hlat, ulat;
            int uh = topo_route_copy(u, x, v, ul, ud, 64, &ulat);
            if (pw[v] == TOPO_WALK_UNSET) { /* asked: the route, from the whole walk */
                int hh = topo_route_copy(h, x, v, hl, hd, 64, &hlat);
                assert_int_equal(hh, uh);
                assert_true(hh < 0 || (hlat == ulat && !memcmp(hl, ul, sizeof(int) * (size_t)hh) &&
                                       !memcmp(hd, ud, (size_t)hh)));
                assert_int_equal(pw[v], TOPO_WALK_UNSET); /* the walk never changes */
                continue;
            }
            for (; w != x && pw[w] >= 0 && k < 64; k++) {
                const topo_link *l = topo_link_at(h, pw[w]);
                rev[k] = pw[w];
                w = l->a == w ? l->b : l->a;
            }
            if ((w == x ? k : -1) != uh)
                fail_msg("%s: walk %s -> %s: %d hops, pair by pair %d", what,
                         topo_node_at(h, x)->name, topo_node_at(h, v)->name, w == x ? k : -1, uh);
            for (int z = 0; z < uh; z++)
                if (rev[uh - 1 - z] != ul[z])
                    fail_msg("%s: walk %s -> %s: hop %d is link %d, pair by pair %d", what,
                             topo_node_at(h, x)->name, topo_node_at(h, v)->name, z,
                             rev[uh - 1 - z], ul[z]);
        }
    }
    for (int x = 0; x < n; x++) {
        if (topo_node_at(h2, x)->kind != TOPO_GPU)
            continue;
        topo_route_expect_many(h2, x);
        assert_non_null(topo_route_preds(h2, x));
        assert_int_equal(topo_route_lat_row(h2, x, dst, m, row), 0);
        for (int j = 0; j < m; j++)
            if (row[j] != topo_route_lat_ps(u, x, dst[j]))
                fail_msg("%s: lat row %d -> %d: %lld ps, pair by pair %lld", what, x, dst[j],
                         (long long)row[j], (long long)topo_route_lat_ps(u, x, dst[j]));
    }
    free(dst);
    free(row);
    assert_int_equal(h2->nrelabel, h->nrelabel);
    return (int)h->nrelabel;
}

/* [route-twins] A GPU whose NVLink links go to the same nodes with the same
 * latencies as the first GPU's gets that GPU's walk relabelled, and the
 * same routes as its own search's (check_walks), on every preset family and
 * two hand-made topologies: two NVSwitches declared in reverse order that
 * every GPU reaches equally (ties broken by switch id), one GPU's NVLink
 * slower (no twin), two GPUs joined directly too (no twins); a ring of
 * four GPUs linked directly, where only the opposite GPU is the first's twin
 * (its routes to its neighbours: their links swapped); two GPUs alike but
 * for one link's kind (no twins). Twins are used where expected and
 * nowhere else. */
static void test_route_twins(void **state)
{
    (void)state;
    const char *presets[] = {"rtxpro6000-8x-pcie5-2s", "rtxpro6000-8x-pcie5-1s",
                             "h200-8x-nvswitch", "h100-8x-nvswitch", "h200-1x", "h200-2x",
                             "nvswitch-8", "nvswitch-64", "pcie-8", "pcie-68-star"};
    /* Relabelled, and of those over NVLink alone: the GPUs of a PCIe switch
     * after its first (2, 4, 2 and 2 a switch), where no NVLink goes (2-2 of
     * every NVSwitch box); NVSwitch boxes' GPUs but the first: over NVLink
     * alone but for the first's switch mate (h200-8x: 2 a switch; the
     * nvswitch-N family's gpu1, the same parent as gpu0). */
    const int twins[] = {4, 6, 7, 7, 0, 1, 7, 63, 4, 34};
    const int partial[] = {0, 0, 6, 6, 0, 1, 6, 62, 0, 0};
    for (int i = 0; i < 10; i++) {
        topo *h = load(presets[i]), *u = load(presets[i]), *h2 = load(presets[i]);
        int part = 0, got = check_walks(presets[i], h, u, h2, &part);
        if (got != twins[i] || part != partial[i])
            fail_msg("%s: %d walks relabelled (%d over NVLink alone), expected %d (%d)",
                     presets[i], got, part, twins[i], partial[i]);
        topo_free(h);
        topo_free(u);
        topo_free(h2);
    }
    const char *two_sw =
        "collsim-topo 1\n"
        "node c cpu numa=0\nnode m hostmem numa=0\n"
        "node r0 root parent=c\nnode r1 root parent=c\n"
        "node nv1 nvswitch\nnode nv0 nvswitch\n"
        "node g0 gpu parent=r0\nnode g1 gpu parent=r0\nnode g2 gpu parent=r0\n"
        "node g3 gpu parent=r1\nnode g4 gpu parent=r1\nnode g5 gpu parent=r1\n"
        "link c m mem bw_GBps=100 lat_ns=10\n"
        "link r0 c fabric bw_GBps=50 lat_ns=10\nlink r1 c fabric bw_GBps=50 lat_ns=20\n"
        "link g0 r0 pcie gen=5 width=16 lat_ns=100\nlink g1 r0 pcie gen=5 width=16 lat_ns=100\n"
        "link g2 r0 pcie gen=5 width=16 lat_ns=100\nlink g3 r1 pcie gen=5 width=16 lat_ns=100\n"
        "link g4 r1 pcie gen=5 width=16 lat_ns=100\nlink g5 r1 pcie gen=5 width=16 lat_ns=100\n"
        "link g0 nv0 nvlink lanes=9 bw_GBps=185 lat_ns=500\nlink g0 nv1 nvlink lanes=9 bw_GBps=185 lat_ns=500\n"
        "link g1 nv1 nvlink lanes=9 bw_GBps=185 lat_ns=500\nlink g1 nv0 nvlink lanes=9 bw_GBps=185 lat_ns=500\n"
        "link g2 nv0 nvlink lanes=9 bw_GBps=185 lat_ns=500\nlink g2 nv1 nvlink lanes=9 bw_GBps=185 lat_ns=500\n"
        "link g3 nv0 nvlink lanes=9 bw_GBps=185 lat_ns=500\nlink g3 nv1 nvlink lanes=9 bw_GBps=185 lat_ns=500\n"
        "link g4 nv0 nvlink lanes=9 bw_GBps=185 lat_ns=500\nlink g4 nv1 nvlink lanes=9 bw_GBps=185 lat_ns=500\n"
        "link g5 nv0 nvlink lanes=9 bw_GBps=185 lat_ns=500\nlink g5 nv1 nvlink lanes=9 bw_GBps=185 lat_ns=600\n"
        "link g4 g3 nvlink lanes=2 bw_GBps=40 lat_ns=400\n";
    const char *ring =
        "collsim-topo 1\n"
        "node c cpu numa=0\nnode m hostmem numa=0\nnode r0 root parent=c\n"
        "node g0 gpu parent=r0\nnode g1 gpu parent=r0\nnode g2 gpu parent=r0\nnode g3 gpu parent=r0\n"
        "link c m mem bw_GBps=100 lat_ns=10\nlink r0 c fabric bw_GBps=50 lat_ns=10\n"
        "link g0 r0 pcie gen=5 width=16 lat_ns=100\nlink g1 r0 pcie gen=5 width=16 lat_ns=110\n"
        "link g2 r0 pcie gen=5 width=16 lat_ns=120\nlink g3 r0 pcie gen=5 width=16 lat_ns=130\n"
        "link g0 g1 nvlink lanes=4 bw_GBps=80 lat_ns=100\nlink g1 g2 nvlink lanes=4 bw_GBps=80 lat_ns=100\n"
        "link g2 g3 nvlink lanes=4 bw_GBps=80 lat_ns=100\nlink g3 g0 nvlink lanes=4 bw_GBps=80 lat_ns=100\n";
    const char *kinds =
        "collsim-topo 1\n"
        "node c cpu numa=0\nnode m hostmem numa=0\nnode r0 root parent=c\n"
        "node g0 gpu parent=r0\nnode gs gpu parent=r0\nnode gw gpu parent=r0\n"
        "link c m mem bw_GBps=100 lat_ns=10\nlink r0 c fabric bw_GBps=50 lat_ns=10\n"
        "link g0 r0 pcie gen=5 width=16 lat_ns=100\nlink gs r0 pcie gen=5 width=16 lat_ns=100\n"
        "link gw r0 pcie gen=5 width=16 lat_ns=100\n"
        "link g0 gw nvlink lanes=4 bw_GBps=80 lat_ns=500\n"
        "link gs gw pcie gen=5 width=16 lat_ns=500\n";
    const char *texts[] = {two_sw, ring, kinds};
    /* g1, g2: g0's full twins (g3: not on r0 and joined to g4, g4 joined,
     * g5's NVLink slower: each searched); the ring's g2, g0's twin over
     * NVLink alone (its PCIe link slower) */
    const int text_twins[] = {2, 1, 0}, text_partial[] = {0, 1, 0};
    for (int i = 0; i < 3; i++) {
        err e = {0};
        int rc;
        topo *h = parse_str(texts[i], &e, &rc), *u, *h2;
        assert_int_equal(rc, 0);
        u = parse_str(texts[i], &e, &rc);
        assert_int_equal(rc, 0);
        h2 = parse_str(texts[i], &e, &rc);
        assert_int_equal(rc, 0);
        const char *what[] = {"two switches", "ring", "kinds"};
        int part = 0, got = check_walks(what[i], h, u, h2, &part);
        if (got != text_twins[i] || part != text_partial[i])
            fail_msg("text %d: %d walks relabelled (%d over NVLink alone), expected %d (%d)", i,
                     got, part, text_twins[i], text_partial[i]);
        topo_free(h);
        topo_free(u);
        topo_free(h2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_link_math),     cmocka_unit_test(test_paths_2s),
        cmocka_unit_test(test_paths_1s),      cmocka_unit_test(test_paths_nvswitch),
        cmocka_unit_test(test_routes_2s),     cmocka_unit_test(test_route_ties),
        cmocka_unit_test(test_route_copy),
        cmocka_unit_test(test_route_nvlink_first),
        cmocka_unit_test(test_pxb_phb_nvb),   cmocka_unit_test(test_gpus_nvlinked),   cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_inputs),    cmocka_unit_test(test_too_many_gpus),
        cmocka_unit_test(test_p2p_status),
        cmocka_unit_test(test_generated),     cmocka_unit_test(test_lazy_routes_threads),
        cmocka_unit_test(test_route_expect_many), cmocka_unit_test(test_route_lat_row),
        cmocka_unit_test(test_route_twins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
