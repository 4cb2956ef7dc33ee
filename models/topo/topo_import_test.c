/* Unit tests of the importers: NCCL topology XML dumps (hand-written files in
 * tests/data/topo/) and `nvidia-smi topo -m` matrices, including the
 * calibration machine's matrix and matrices printed from the presets.
 * Run from the repository root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/topo/topo.h"

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

static void check_2s(const topo *t)
{
    char buf[8];
    assert_int_equal(topo_ngpus(t), 8);
    for (int a = 0; a < 8; a++) {
        for (int b = 0; b < 8; b++)
            if (strcmp(topo_gpu_path_smi(t, a, b, buf), smi_2s[a][b]))
                fail_msg("GPU%d-GPU%d: %s, expected %s", a, b, buf, smi_2s[a][b]);
        /* GPU0-3 on NUMA 0, GPU4-7 on NUMA 1. */
        assert_int_equal(topo_node_at(t, topo_gpu_node(t, a))->numa, a / 4);
    }
}

static topo *xml(const char *file, err *e, int *rc)
{
    char path[256];
    snprintf(path, sizeof path, "tests/data/topo/%s", file);
    topo *t = NULL;
    *rc = topo_import_xml(path, &t, e);
    return t;
}

static topo *smi_file(const char *file, err *e, int *rc)
{
    char path[256];
    snprintf(path, sizeof path, "tests/data/topo/%s", file);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s missing (run from the repository root)", path);
    topo *t = NULL;
    *rc = topo_import_smi(f, path, &t, e);
    fclose(f);
    return t;
}

static int count_kind(const topo *t, topo_kind k)
{
    int n = 0;
    for (int v = 0; v < topo_nnodes(t); v++)
        n += topo_node_at(t, v)->kind == k;
    return n;
}

static void test_xml_esc8000a(void **state)
{
    (void)state;
    err e = {0};
    int rc;
    topo *t = xml("esc8000a-like.xml", &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    /* Two <cpu> = 2 sockets with memory, one root port per top-level <pci>
     * (4), one switch per bridge (4), 8 GPUs; the NIC is skipped: 20 nodes. */
    assert_int_equal(count_kind(t, TOPO_CPU), 2);
    assert_int_equal(count_kind(t, TOPO_ROOT), 4);
    assert_int_equal(count_kind(t, TOPO_SWITCH), 4);
    assert_int_equal(topo_nnodes(t), 20);
    /* Same codes as the real machine's nvidia-smi. */
    check_2s(t);
    /* "32.0 GT/s PCIe" x16 = Gen5 x16; no bw in the XML: the link math,
     * 63.015 x 256/280 = 57.614 GB/s (+-1 MB/s). */
    const topo_link *l = NULL;
    for (int i = 0; i < topo_nlinks(t); i++)
        if (topo_link_at(t, i)->a == topo_gpu_node(t, 5))
            l = topo_link_at(t, i);
    assert_non_null(l);
    assert_int_equal(l->pcie_gen, 5);
    assert_int_equal(l->pcie_width, 16);
    assert_float_equal(l->bw_Bps, 63.0154e9 * 256 / 280, 1e6);
    /* GPU5's PCI parent is the second switch of socket 1... its route to
     * GPU4 stays in that switch: 2 hops. */
    const int *links;
    const int8_t *dirs;
    assert_int_equal(topo_route(t, topo_gpu_node(t, 5), topo_gpu_node(t, 4), &links, &dirs), 2);
    /* <cpu vendor="AuthenticAMD"> and <gpu sm="120">, as NCCL reads them. */
    assert_int_equal(topo_params_get(t)->cpu, CPU_AMD);
    assert_int_equal(topo_params_get(t)->gpu_sm, 120);
    topo_free(t);
}

/* What the XML leaves out is assumed, one line each, and written as
 * "# assumed:" lines. esc8000a-like gives every link_speed and link_width:
 * 3 lines (the default links, host memory, the params); nvbridge.xml has one
 * <pci> without link_speed and one with link_width "": 2 more, and its NVLinks
 * a sixth. */
static void test_xml_assumed(void **state)
{
    (void)state;
    err e = {0};
    int rc;
    topo *t = xml("esc8000a-like.xml", &e, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(topo_nassumed(t), 3);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(topo_write(t, f, &e), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\n# assumed: the param lines but cpu: collsim's defaults"));
    free(buf);
    topo_free(t);
    t = xml("nvbridge.xml", &e, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(topo_nassumed(t), 6);
    assert_string_equal(topo_assumed(t, 0), "1 PCIe link without a link_speed: the parent's "
                                            "(Gen5 below a root port)");
    topo_free(t);
}

static void test_xml_nvlink(void **state)
{
    (void)state;
    err e = {0};
    int rc;
    /* 4 GPUs with NVLinks to 4 NVSwitch bus ids (5+5+4+4 lanes): one
     * NVSwitch node, 18 lanes per GPU at 20.6 GB/s (SM90) = 370.8 GB/s. */
    topo *t = xml("hgx4-like.xml", &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    assert_int_equal(count_kind(t, TOPO_NVSWITCH), 1);
    char buf[8];
    assert_string_equal(topo_gpu_path_smi(t, 0, 3, buf), "NV18");
    assert_int_equal(topo_gpu_path(t, 1, 2), PATH_NVL);
    int nvs = topo_find(t, "nvs0");
    int found = 0;
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        if (l->kind == LINK_NVLINK) {
            assert_int_equal(l->b, nvs);
            assert_int_equal(l->nvlinks, 18);
            assert_float_equal(l->bw_Bps, 370.8e9, 1e3);
            found++;
        }
    }
    assert_int_equal(found, 4);
    /* GenuineIntel family 6 model 143 (0x8F >= 0x8F, < 0xCF): Sapphire
     * Rapids for NCCL (SRP_QPI_BW); sm 90. */
    assert_int_equal(topo_params_get(t)->cpu, CPU_INTEL_SRP);
    assert_int_equal(topo_params_get(t)->gpu_sm, 90);
    topo_free(t);
    /* Two GPUs listed dev 1 then dev 0, joined by a 4-lane NVLink (both
     * sides list it: one link). GPU index follows dev: gpu0 is the second
     * element, whose "Unknown speed" and empty width inherit Gen5 x16;
     * gpu1 is Gen4. NVLink 4 lanes at 12 GB/s (SM86) = 48 GB/s. */
    t = xml("nvbridge.xml", &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(topo_gpu_path_smi(t, 0, 1, buf), "NV4");
    int nv = 0;
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        if (l->kind == LINK_NVLINK) {
            nv++;
            assert_float_equal(l->bw_Bps, 48e9, 1e3);
        }
        if (l->kind == LINK_PCIE && l->a == topo_gpu_node(t, 0))
            assert_int_equal(l->pcie_gen, 5);
        if (l->kind == LINK_PCIE && l->a == topo_gpu_node(t, 1))
            assert_int_equal(l->pcie_gen, 4);
    }
    assert_int_equal(nv, 1);
    topo_free(t);
}

static void test_xml_bad(void **state)
{
    (void)state;
    /* Each is ERR_INPUT naming the file and line of the defect. */
    static const struct {
        const char *file, *msg;
    } cases[] = {
        {"bad-malformed.xml", "bad-malformed.xml:6: malformed XML"},
        {"bad-speed.xml", "bad-speed.xml:3: link_speed \"33.3 GT/s PCIe\" is not a PCIe rate"},
        {"bad-dup-dev.xml", "bad-dup-dev.xml:7: <gpu dev=\"0\"> appears twice"},
        {"bad-numaid.xml", "bad-numaid.xml:2: <cpu> lacks attribute numaid"},
        {"no-such-file.xml", "no-such-file.xml: cannot open"},
        {"good-min.topo", "good-min.topo:1: malformed XML"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        err e = {0};
        int rc;
        topo *t = xml(cases[i].file, &e, &rc);
        if (rc != ERR_INPUT || !strstr(e.msg, cases[i].msg))
            fail_msg("%s: rc %d '%s', expected '%s'", cases[i].file, rc, e.msg, cases[i].msg);
        assert_null(t);
    }
}

static void test_smi_calibration(void **state)
{
    (void)state;
    err e = {0};
    int rc;
    /* The calibration file's matrix (prompt, fence and "NUMA n" columns as
     * published) imports to a tree with exactly the same 64 codes. */
    topo *t = smi_file("broadcom-2s.smi.txt", &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    check_2s(t);
    /* PIX pairs share a switch, NODE groups are separate root ports of one
     * socket: 2 cpus, 4 root ports, 4 switches. */
    assert_int_equal(count_kind(t, TOPO_CPU), 2);
    assert_int_equal(count_kind(t, TOPO_ROOT), 4);
    assert_int_equal(count_kind(t, TOPO_SWITCH), 4);
    topo_free(t);
}

static void test_smi_formats(void **state)
{
    (void)state;
    err e = {0};
    int rc;
    /* nvidia-smi's own layout (tabs, NIC column and row, CPU/NUMA affinity,
     * GPU NUMA ID, legend): all pairs NV18 over 4 GPUs = one NVSwitch with
     * 18 lanes each; NUMA 0,0,1,1. */
    topo *t = smi_file("dgx4-like.smi.txt", &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    assert_int_equal(topo_ngpus(t), 4);
    assert_int_equal(count_kind(t, TOPO_NVSWITCH), 1);
    char buf[8];
    assert_string_equal(topo_gpu_path_smi(t, 0, 3, buf), "NV18");
    int numa[4] = {0, 0, 1, 1};
    for (int g = 0; g < 4; g++)
        assert_int_equal(topo_node_at(t, topo_gpu_node(t, g))->numa, numa[g]);
    topo_free(t);
    /* PIX {0,1}, PXB among 0-3, PHB to GPU4, SYS to GPU5: a parent switch
     * over leaf switches {0,1},{2},{3} under one root port, GPU4 on that
     * root port, GPU5 on socket 1. */
    t = smi_file("mixed.smi.txt", &e, &rc);
    if (rc)
        fail_msg("%s", e.msg);
    assert_string_equal(topo_gpu_path_smi(t, 2, 3, buf), "PXB");
    assert_string_equal(topo_gpu_path_smi(t, 0, 4, buf), "PHB");
    assert_int_equal(count_kind(t, TOPO_SWITCH), 4);
    assert_int_equal(count_kind(t, TOPO_ROOT), 2);
    topo_free(t);
}

static void test_smi_p2p(void **state)
{
    (void)state;
    /* `nvidia-smi topo -p2p r` of the same 6 GPUs (mixed.p2p.txt): every pair
     * NS but GPU2-GPU3 OK and GPU4-GPU5 CNS; 30 directions minus 2 OK = 28
     * not OK. A matrix of another size, an unknown code or a short row is
     * an error at its line. */
    err e = {0};
    int rc;
    topo *t = smi_file("mixed.smi.txt", &e, &rc);
    assert_int_equal(rc, 0);
    FILE *f = fopen("tests/data/topo/mixed.p2p.txt", "r");
    assert_non_null(f);
    assert_int_equal(topo_smi_p2p(f, "mixed.p2p.txt", t, &e), 0);
    fclose(f);
    assert_int_equal(topo_gpu_p2p(t, 0, 1), P2P_NS);
    assert_int_equal(topo_gpu_p2p(t, 2, 3), P2P_OK);
    assert_int_equal(topo_gpu_p2p(t, 3, 2), P2P_OK);
    assert_int_equal(topo_gpu_p2p(t, 5, 4), P2P_CNS);
    assert_int_equal(topo_p2p_count(t), 28);
    static const char *const bad[] = {
        " \tGPU0\tGPU1\n GPU0\tX\tNS\n GPU1\tNS\tX\n",                 /* 2 GPUs of 6 */
        " \tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\n GPU0\tX\tNS\tNS\tNS\tNS\tYES\n",
        " \tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\n GPU0\tX\tNS\n",
    };
    static const char *const why[] = {"has 2 GPUs, the topology 6", "unknown P2P status 'YES'",
                                      "row GPU0 has 2 entries"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
        assert_int_equal(topo_smi_p2p(f, "p.txt", t, &e), ERR_INPUT);
        fclose(f);
        if (!strstr(e.msg, why[i]) || !strstr(e.msg, "p.txt:"))
            fail_msg("case %zu: %s", i, e.msg);
    }
    topo_free(t);
}

static void test_smi_bad(void **state)
{
    (void)state;
    static const struct {
        const char *file, *msg;
    } cases[] = {
        {"bad-asym.smi.txt", "bad-asym.smi.txt:4: GPU2-GPU1 differs from GPU1-GPU2"},
        {"bad-code.smi.txt", "bad-code.smi.txt:2: GPU0-GPU1: unknown code 'PXX'"},
        /* PIX is transitive in a tree: 0-1 and 1-2 PIX force 0-2 PIX. */
        {"bad-inconsistent.smi.txt", "bad-inconsistent.smi.txt:2: GPU0-GPU2 is NODE, but no "
                                     "PCI tree"},
        {"bad-empty.smi.txt", "bad-empty.smi.txt: no nvidia-smi topo -m matrix"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        err e = {0};
        int rc;
        topo *t = smi_file(cases[i].file, &e, &rc);
        if (rc != ERR_INPUT || !strstr(e.msg, cases[i].msg))
            fail_msg("%s: rc %d '%s', expected '%s'", cases[i].file, rc, e.msg, cases[i].msg);
        assert_null(t);
    }
}

/* Print t's matrix as nvidia-smi does, import it, compare all entries. */
static void smi_round_trip(const topo *t)
{
    char *buf = NULL, code[8];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int n = topo_ngpus(t);
    for (int g = 0; g < n; g++)
        fprintf(f, "\tGPU%d", g);
    fprintf(f, "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
    for (int a = 0; a < n; a++) {
        fprintf(f, "GPU%d", a);
        for (int b = 0; b < n; b++)
            fprintf(f, "\t%s", topo_gpu_path_smi(t, a, b, code));
        fprintf(f, "\t0-15\t%d\t\tN/A\n", topo_node_at(t, topo_gpu_node(t, a))->numa);
    }
    fclose(f);
    f = fmemopen(buf, len, "r");
    err e = {0};
    topo *u = NULL;
    int rc = topo_import_smi(f, "printed", &u, &e);
    fclose(f);
    if (rc)
        fail_msg("%s: %s\n%s", topo_name(t), e.msg, buf);
    char c2[8];
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            assert_string_equal(topo_gpu_path_smi(t, a, b, code), topo_gpu_path_smi(u, a, b, c2));
    free(buf);
    topo_free(u);
}

static void test_smi_round_trip(void **state)
{
    (void)state;
    /* Every preset's matrix (and generated ones with PHB/SYS) survives
     * printing and importing. */
    static const char *const names[] = {"rtxpro6000-8x-pcie5-2s", "rtxpro6000-8x-pcie5-1s",
                                        "h200-8x-nvswitch", "h200-1x", "pcie-16",
                                        "pcie-12-star"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        err e = {0};
        topo *t = NULL;
        assert_int_equal(topo_load(names[i], &t, &e), 0);
        smi_round_trip(t);
        topo_free(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_esc8000a),   cmocka_unit_test(test_xml_nvlink),
        cmocka_unit_test(test_xml_assumed),
        cmocka_unit_test(test_xml_bad),        cmocka_unit_test(test_smi_calibration),
        cmocka_unit_test(test_smi_formats),    cmocka_unit_test(test_smi_bad),
        cmocka_unit_test(test_smi_round_trip),  cmocka_unit_test(test_smi_p2p),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
