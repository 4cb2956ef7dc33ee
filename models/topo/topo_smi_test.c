/* topo import smi with the other tools' text beside the matrix (nvidia-smi
 * -q, nvidia-smi nvlink -s, lspci -vv, numactl -H, lscpu) and what it
 * assumes without them; expectations derived by hand from the inputs in
 * tests/data/topo/ and docs/formats.md "Imports". Runs from the repository root. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/topo/topo.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s missing (run from the repository root)", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* The text of path without the lines containing any of drop[] (NULL-ended). */
static topo *import(const char *path, const char *const *drop)
{
    char *src = slurp(path), *out = malloc(strlen(src) + 1), *w = out;
    for (char *line = src; *line;) {
        char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line + 1) : strlen(line);
        int keep = 1;
        char one[512];
        snprintf(one, sizeof one, "%.*s", (int)l, line);
        for (const char *const *d = drop; d && *d; d++)
            if (strstr(one, *d))
                keep = 0;
        if (keep) {
            memcpy(w, line, l);
            w += l;
        }
        line += l;
    }
    *w = 0;
    FILE *f = fmemopen(out, strlen(out), "r");
    topo *t = NULL;
    err e = {0};
    if (topo_import_smi(f, path, &t, &e))
        fail_msg("%s: %s", path, e.msg);
    fclose(f);
    free(out);
    return t;
}

static int count_links(const topo *t, topo_link_kind k)
{
    int n = 0;
    for (int i = 0; i < topo_nlinks(t); i++)
        n += topo_link_at(t, i)->kind == k;
    return n;
}

static const topo_link *link_between(const topo *t, const char *a, const char *b)
{
    int x = topo_find(t, a), y = topo_find(t, b);
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        if ((l->a == x && l->b == y) || (l->a == y && l->b == x))
            return l;
    }
    return NULL;
}

static int has_assumption(const topo *t, const char *text)
{
    for (int i = 0; i < topo_nassumed(t); i++)
        if (strstr(topo_assumed(t, i), text))
            return 1;
    return 0;
}

#define NPS4 "tests/data/topo/nps4-2s.smi.txt"
#define BRIDGE "tests/data/topo/bridge-3090.smi.txt"

/* NPS4 dual socket, numactl -H distances 10 / 12 within a socket, 32
 * across: NUMA 0-3 socket 0, 4-7 socket 1. One CPU node per NUMA node
 * (nvidia-smi's SYS between them stays true), joined within a socket by a
 * full mesh of quadrant links (2 x 6 at the fabric's 100 GB/s) and across by
 * one socket link cpu0-cpu4 (83.2 GB/s): 13 socket-kind links, not the 28 of
 * a mesh of 8 "sockets". nvidia-smi -q: RTX 4090 (SM 89), Gen4 x16 (Max, not
 * the idle Current of 1). Host memory per NUMA node: collsim's 200 GB/s
 * socket default over the 4 nodes of a socket (NPS4: a node interleaves
 * its own 2 of the socket's 8 channels) = 50 GB/s on each cpuN-memN link.
 * Assumed: the grouping and that host memory rate. */
static void test_nps4(void **state)
{
    (void)state;
    topo *t = import(NPS4, NULL);
    assert_int_equal(count_links(t, LINK_SOCKET), 13);
    const topo_link *x = link_between(t, "cpu0", "cpu4"), *q = link_between(t, "cpu1", "cpu2");
    assert_non_null(x);
    assert_non_null(q);
    assert_null(link_between(t, "cpu1", "cpu5"));
    assert_true(fabs(x->bw_Bps - 83.2e9) < 1);
    assert_true(fabs(q->bw_Bps - 100e9) < 1);
    assert_int_equal(topo_params_get(t)->gpu_sm, 89);
    const topo_link *g = link_between(t, "gpu5", "rp5");
    assert_int_equal(g->pcie_gen, 4);
    assert_int_equal(g->pcie_width, 16);
    char buf[8];
    assert_string_equal(topo_gpu_path_smi(t, 1, 2, buf), "SYS");
    for (int k = 0; k < 8; k++) {
        char c[8], m[8];
        snprintf(c, sizeof c, "cpu%d", k);
        snprintf(m, sizeof m, "mem%d", k);
        assert_true(fabs(link_between(t, c, m)->bw_Bps - 50e9) < 1);
    }
    /* the grouping, host memory's rate, and the costs (param lines) */
    assert_int_equal(topo_nassumed(t), 3);
    assert_true(has_assumption(t, "numactl -H"));
    assert_true(has_assumption(t, "host memory 50.0 GB/s per NUMA node"));
    topo_free(t);
}

/* The same without numactl -H: lscpu's counts (2 sockets, 8 NUMA nodes)
 * give NPS 4 and node k on socket k / 4, said to be assumed; with neither,
 * every NUMA node is its own socket (a mesh of 28), assumed too. Without
 * nvidia-smi -q: Gen5 x16 and no product, both assumed. */
static void test_nps4_without(void **state)
{
    (void)state;
    static const char *const no_dist[] = {"node distances", "  0:", "  1:", "  2:", "  3:",
                                          "  4:", "  5:", "  6:", "  7:", NULL};
    topo *t = import(NPS4, no_dist);
    assert_int_equal(count_links(t, LINK_SOCKET), 28);
    assert_true(has_assumption(t, "each of the 8 NUMA nodes is its own socket"));
    /* Each node its own socket: each its own 200 GB/s, said as a socket's. */
    assert_true(fabs(link_between(t, "cpu3", "mem3")->bw_Bps - 200e9) < 1);
    assert_true(has_assumption(t, "host memory 200 GB/s per socket"));
    topo_free(t);
    static const char *const bare[] = {"node distances", "  0:", "  1:", "  2:", "  3:",
                                       "  4:", "  5:", "  6:", "  7:", "Max", "Product", NULL};
    t = import(NPS4, bare);
    assert_int_equal(link_between(t, "gpu0", "rp0")->pcie_gen, 5);
    assert_true(has_assumption(t, "PCIe Gen5 x16 on every link"));
    assert_true(has_assumption(t, "gpu_sm 0"));
    topo_free(t);
}

static void test_lscpu(void **state)
{
    (void)state;
    const char *src = slurp(NPS4);
    char *txt = malloc(strlen(src) + 64);
    sprintf(txt, "%sSocket(s):             2\nNUMA node(s):          8\n", src);
    /* drop the distances by cutting the text at them */
    char *d = strstr(txt, "node distances:");
    char *q = strstr(txt, "$ nvidia-smi -q");
    memmove(d, q, strlen(q) + 1);
    FILE *f = fmemopen(txt, strlen(txt), "r");
    topo *t = NULL;
    err e = {0};
    assert_int_equal(topo_import_smi(f, "lscpu", &t, &e), 0);
    fclose(f);
    free(txt);
    assert_int_equal(count_links(t, LINK_SOCKET), 13);
    assert_true(has_assumption(t, "socket k / 4"));
    /* lscpu's NPS 4: 200 / 4 = 50 GB/s per node, as with the distances. */
    assert_true(fabs(link_between(t, "cpu6", "mem6")->bw_Bps - 50e9) < 1);
    topo_free(t);
}

/* Two RTX 3090 on an NVLink bridge (NV4). nvidia-smi nvlink -s: 14.062
 * GB/s per link; the usable share measured on h200-2x, 379.4 / (18 x
 * 26.562) = 0.7935: 4 x 14.062 x 0.7935 = 44.63 GB/s each way (the import
 * without the rates: 4 x NCCL's SM 90 figure 20.6 = 82.4, 1.85x). Product
 * RTX 3090: gpu_sm 86, whose NCCL figure 4 x 12.0 = 48 is above the lanes'
 * real rate. lspci: LnkCap 16 GT/s (Gen4) x16, not LnkSta's idle 2.5 GT/s;
 * the audio function is not a GPU. Only host memory is assumed (collsim's
 * 200 GB/s socket default: the text names no DIMMs). */
static void test_bridge(void **state)
{
    (void)state;
    topo *t = import(BRIDGE, NULL);
    const topo_link *nv = link_between(t, "gpu0", "gpu1");
    assert_int_equal(nv->nvlinks, 4);
    assert_true(fabs(nv->bw_Bps - 4 * 14.062 * 379.4 / (18 * 26.562) * 1e9) < 1e3);
    assert_int_equal(topo_params_get(t)->gpu_sm, 86);
    assert_true(topo_nvlink_lane_GBps(86) * 4 > nv->bw_Bps / 1e9);
    assert_int_equal(link_between(t, "gpu1", "rp1")->pcie_gen, 4);
    /* the host memory's rate and the costs (param lines) the text never gives */
    assert_int_equal(topo_nassumed(t), 2);
    assert_true(has_assumption(t, "host memory 200 GB/s per socket"));
    assert_true(has_assumption(t, "the param lines but gpu_sm and gpu_mem_GBps"));
    topo_free(t);
    static const char *const no_rates[] = {"Link ", "GPU 0:", "GPU 1:", NULL};
    t = import(BRIDGE, no_rates);
    assert_true(fabs(link_between(t, "gpu0", "gpu1")->bw_Bps - 82.4e9) < 1e3);
    assert_true(has_assumption(t, "NVLink lanes at 20.6 GB/s"));
    topo_free(t);
}

/* validate/data/h200-2x/machine.txt as the box wrote it: nvidia-smi's
 * underlined header (ANSI escapes), then nvlink -s with 18 x 26.562: the
 * NV18 link comes to 379.4 GB/s, the figure the fraction was taken from. */
static void test_h200_machine(void **state)
{
    (void)state;
    topo *t = import("validate/data/h200-2x/machine.txt", NULL);
    assert_int_equal(topo_ngpus(t), 2);
    assert_true(fabs(link_between(t, "gpu0", "gpu1")->bw_Bps - 379.4e9) < 1e6);
    assert_int_equal(topo_params_get(t)->gpu_sm, 90);
    topo_free(t);
}

/* `# assumed:` lines survive topo_write and topo_parse. */
static void test_round_trip(void **state)
{
    (void)state;
    topo *t = import(NPS4, NULL), *u = NULL;
    char *buf = NULL;
    size_t len = 0;
    err e = {0};
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(topo_write(t, f, &e), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\n# assumed: NUMA nodes grouped"));
    f = fmemopen(buf, len, "r");
    if (topo_parse(f, "rt", &u, &e))
        fail_msg("%s", e.msg);
    fclose(f);
    assert_int_equal(topo_nassumed(u), topo_nassumed(t));
    assert_string_equal(topo_assumed(u, 0), topo_assumed(t, 0));
    free(buf);
    topo_free(t);
    topo_free(u);
}

/* What scripts/hwcheck-all.sh saves (validate/data/h200-1x/rerun/nvidia-smi.txt):
 * nvidia-smi's summary table, then topo -m. The table's first GPU row names
 * "NVIDIA H200": SM 90 and the H200's HBM3e peak, 4,800 GB/s (its datasheet),
 * neither assumed. Without that row no product is known: SM and memory are
 * collsim's defaults (1,792 GB/s, the RTX PRO 6000's), each said. */
static void test_summary_table(void **state)
{
    (void)state;
    topo *t = import("validate/data/h200-1x/rerun/nvidia-smi.txt", NULL);
    assert_int_equal(topo_ngpus(t), 1);
    assert_int_equal(topo_params_get(t)->gpu_sm, 90);
    assert_true(fabs(topo_params_get(t)->gpu_mem_Bps - 4800e9) < 1);
    assert_false(has_assumption(t, "GPU memory"));
    assert_false(has_assumption(t, "gpu_sm 0:"));
    topo_free(t);
    static const char *const no_name[] = {"NVIDIA H200", NULL};
    t = import("validate/data/h200-1x/rerun/nvidia-smi.txt", no_name);
    assert_int_equal(topo_params_get(t)->gpu_sm, 0);
    assert_true(fabs(topo_params_get(t)->gpu_mem_Bps - 1792e9) < 1);
    assert_true(has_assumption(t, "GPU memory 1792 GB/s (collsim's default; no product name)"));
    topo_free(t);
}

/* The most specific name wins: "NVIDIA H100 PCIe" is the PCIe card's HBM2e at
 * 2,000 GB/s, not the SXM's 3,350 that "H100" alone would give (NVIDIA's H100
 * datasheet); the table's process rows ("|  0  N/A ...") name no GPU. */
static void test_product_specific(void **state)
{
    (void)state;
    static char text[] =
        "|   0  NVIDIA H100 PCIe               On  |   00000000:17:00.0 Off |         0 |\n"
        "|   1  NVIDIA H100 PCIe               On  |   00000000:65:00.0 Off |         0 |\n"
        "|    0   N/A  N/A     4242      C   python3                        1000MiB |\n"
        "\tGPU0\tGPU1\tNUMA Affinity\n"
        "GPU0\t X \tSYS\t0\n"
        "GPU1\tSYS\t X \t1\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    topo *t = NULL;
    err e = {0};
    if (topo_import_smi(f, "t.txt", &t, &e))
        fail_msg("%s", e.msg);
    fclose(f);
    assert_true(fabs(topo_params_get(t)->gpu_mem_Bps - 2000e9) < 1);
    assert_int_equal(topo_params_get(t)->gpu_sm, 90);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nps4),   cmocka_unit_test(test_nps4_without),
        cmocka_unit_test(test_lscpu),  cmocka_unit_test(test_bridge),
        cmocka_unit_test(test_h200_machine), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_summary_table), cmocka_unit_test(test_product_specific),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
