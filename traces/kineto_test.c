/* Importer tests on the real traces in traces/testdata/ (counts and sizes
 * from the README of the real-trace collection, which were extracted with
 * an independent python script), and fuzz-style tests: truncated and
 * corrupted JSON and gzip must give ERR_INPUT with the file name, no crash,
 * and (through the CLI, tests/cli/traces.test) no output file. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "traces/kineto.h"
#include "traces/replay.h"

#define TD "traces/testdata/"

static kineto_rank *load(const char *path)
{
    kineto_rank *k = NULL;
    err e = {0};
    if (kineto_load(path, &k, &e) != 0)
        fail_msg("%s", e.msg);
    return k;
}

static long count_bytes(const kineto_rank *k, coll_kind kind, uint64_t bytes)
{
    long n = 0;
    for (long i = 0; i < kineto_ncomm(k); i++) {
        const kineto_comm *c = kineto_comm_at(k, i);
        n += c->kind == kind && c->bytes == bytes;
    }
    return n;
}

/* Import ranks[0..n-1] and replay the program with the captured times. */
static void import_replay(kineto_rank **k, int n, kineto_summary *s, replay_result *res)
{
    char path[] = "/tmp/collsim_kineto_hostXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    err e = {0};
    trace_writer *w = trace_writer_new(path, &e);
    assert_non_null(w);
    kineto_opts o = {1, 0};
    if (kineto_write(k, n, &o, w, s, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(trace_writer_commit(w, &e), 0);
    replay_opts ro;
    replay_opts_init(&ro);
    ro.measured = 1;
    if (replay_file(path, NULL, NULL, &ro, NULL, res, &e) != 0)
        fail_msg("%s", e.msg);
    unlink(path);
}

static void test_hta_nccl(void **state)
{
    (void)state;
    kineto_rank *k = load(TD "HolisticTraceAnalysis/nccl_data.json.gz");
    /* README: rank 0 of 2; 40,573 events; 2,700 kernels + 960 memcpy + 114
     * memset on one device; 21 NCCL kernels: 15 allreduce (5 sizes x 3
     * iterations) and 6 broadcasts (212,480 B and 424 B x 3), every size
     * on the kernel args. */
    assert_int_equal(kineto_rank_id(k), 0);
    assert_int_equal(kineto_world_size(k), 2);
    assert_int_equal(kineto_nevents(k), 40573);
    assert_int_equal(kineto_nkernels(k), 2700 + 960 + 114);
    assert_int_equal(kineto_ncomm(k), 21);
    static const uint64_t ar[] = {8196000, 31502336, 26255360, 26550272, 9724160};
    for (int i = 0; i < 5; i++)
        assert_int_equal(count_bytes(k, COLL_ALLREDUCE, ar[i]), 3);
    assert_int_equal(count_bytes(k, COLL_BROADCAST, 212480), 3);
    assert_int_equal(count_bytes(k, COLL_BROADCAST, 424), 3);
    for (long i = 0; i < kineto_ncomm(k); i++)
        assert_int_equal(kineto_comm_at(k, i)->src, KSIZE_KERNEL_ARGS);
    /* README: allreduce of 8,196,000 B: min duration 2520.6 us */
    int64_t mn = INT64_MAX;
    for (long i = 0; i < kineto_ncomm(k); i++) {
        const kineto_comm *c = kineto_comm_at(k, i);
        if (c->bytes == 8196000 && c->dur_ns < mn)
            mn = c->dur_ns;
    }
    assert_true(mn > 2520500 && mn < 2520700);
    kineto_free(k);
}

static void test_tracelens_eager(void **state)
{
    (void)state;
    kineto_rank *k = load(TD "TraceLens/eager_trace.json.gz");
    /* README: 24,656 events, 768 kernels + 161 memcpy, 74 collectives:
     * 73 multimem all-reduces sized by the CPU op's Input Dims, 37 x
     * [888, 2880] bf16 = 5,114,880 B and 36 x [888, 3072] bf16 = 5,455,872
     * B, plus one NCCL all-gather with kernel args: Out msg nelems 201,088
     * bf16 = 402,176 B. */
    assert_int_equal(kineto_nevents(k), 24656);
    assert_int_equal(kineto_nkernels(k), 768 + 161);
    assert_int_equal(kineto_ncomm(k), 74);
    assert_int_equal(count_bytes(k, COLL_ALLREDUCE, 5114880), 37);
    assert_int_equal(count_bytes(k, COLL_ALLREDUCE, 5455872), 36);
    assert_int_equal(count_bytes(k, COLL_ALLGATHER, 402176), 1);
    for (long i = 0; i < 73; i++)
        assert_int_equal(kineto_comm_at(k, i)->src, KSIZE_CPU_OP);
    assert_int_equal(kineto_comm_at(k, 73)->src, KSIZE_KERNEL_ARGS);
    /* README: first all-reduce 223.2 us (includes waiting) */
    assert_int_equal(kineto_comm_at(k, 0)->dur_ns, 223200);
    kineto_free(k);
}

static void test_tracelens_sglang(void **state)
{
    (void)state;
    kineto_rank *k = load(TD "TraceLens/sglang_Qwen3-8B_decode.json.gz");
    /* README: 2,058 events; 555 kernels + 3 memcpy; one step[DECODE bs=32]
     * span; no communication. 3 GPU ops were launched before the step
     * starts (checked with python) and are left out: 555 kept. */
    assert_int_equal(kineto_nevents(k), 2058);
    assert_int_equal(kineto_nsteps(k), 1);
    assert_int_equal(kineto_nkernels(k), 555);
    assert_int_equal(kineto_ncomm(k), 0);
    /* The host side (counted with python from the file): 61 cpu_op events;
     * 11 kernel launch calls (10 hipLaunchKernel, 1 hipModuleLaunchKernel),
     * 1 hipGraphLaunch (its 544 kernels), 2 hipMemcpyAsync, 1 blocking
     * hipMemcpyWithStream in which the host waits 463,063.75 us. */
    const kineto_host *h = kineto_host_of(k);
    assert_int_equal(h->cpu_ops, 61);
    assert_int_equal(h->launches, 11);
    assert_int_equal(h->graph_launches, 1);
    assert_int_equal(h->copies, 2);
    assert_int_equal(h->syncs, 1);
    assert_true(fabs(h->sync_us - 463063.75) < 1e-3);
    /* Replayed with its host gaps and the sync, the step ends where the
     * capture's GPU work does: 473,626.7 us after the step's start
     * (python). Tolerance 0.1%: a kernel's start within its launch call is
     * approximated by the call's CPU time up to it; the GPU-side gaps the
     * CPU does not explain are kept as idle (463 ms, a stream waiting on an
     * event before the step). */
    kineto_summary s;
    replay_result res;
    import_replay(&k, 1, &s, &res);
    assert_int_equal(s.syncs, 1);
    assert_true(fabs(res.cycle_us - 473626.7) < 1e-3 * 473626.7);
    assert_true(res.host_us > 0);
    kineto_free(k);
}

static const char *const dlrm[8] = {
    TD "dlrm/worker0_step_12.1694128201545.pt.trace.json.gz",
    TD "dlrm/worker1_step_12.1694128201556.pt.trace.json.gz",
    TD "dlrm/worker2_step_12.1694128201554.pt.trace.json.gz",
    TD "dlrm/worker3_step_12.1694128201557.pt.trace.json.gz",
    TD "dlrm/worker4_step_12.1694128201547.pt.trace.json.gz",
    TD "dlrm/worker5_step_12.1694128201549.pt.trace.json.gz",
    TD "dlrm/worker6_step_12.1694128201553.pt.trace.json.gz",
    TD "dlrm/worker7_step_12.1694128201553.pt.trace.json.gz",
};

static void test_dlrm_all_ranks(void **state)
{
    (void)state;
    kineto_rank *k[8];
    for (int r = 0; r < 8; r++) {
        k[r] = load(dlrm[r]);
        /* README: all 8 ranks of one job; per rank 5 SendRecv (all_to_all)
         * + 3 AllReduce, sized only by nccl:* annotations' Input Dims:
         * all_reduce [394241], [226960], [112] float; all_to_all [6144]
         * float x2, [24] long, [384] int, [3392] int (differs by rank). */
        assert_int_equal(kineto_rank_id(k[r]), r);
        assert_int_equal(kineto_world_size(k[r]), 8);
        assert_int_equal(kineto_ncomm(k[r]), 8);
        assert_int_equal(count_bytes(k[r], COLL_ALLREDUCE, 1576964), 1);
        assert_int_equal(count_bytes(k[r], COLL_ALLREDUCE, 907840), 1);
        assert_int_equal(count_bytes(k[r], COLL_ALLREDUCE, 448), 1);
        assert_int_equal(count_bytes(k[r], COLL_ALLTOALL, 24576), 2);
        assert_int_equal(count_bytes(k[r], COLL_ALLTOALL, 192), 1);
        assert_int_equal(count_bytes(k[r], COLL_ALLTOALL, 1536), 1);
        for (long i = 0; i < 8; i++)
            assert_int_equal(kineto_comm_at(k[r], i)->src, KSIZE_ANNOTATION);
    }
    assert_int_equal(count_bytes(k[0], COLL_ALLTOALL, 3392 * 4), 1);
    /* README: first SendRecv durations per rank [2146, 7635, 518, 6132,
     * 4882, 4679, 514, 10] us; end-time spread 2 us; the transfer is the
     * shortest: 10 us on rank 7. */
    static const int64_t d0[8] = {2146, 7635, 518, 6132, 4882, 4679, 514, 10};
    int64_t emin = INT64_MAX, emax = INT64_MIN;
    for (int r = 0; r < 8; r++) {
        const kineto_comm *c = kineto_comm_at(k[r], 0);
        assert_int_equal(c->dur_ns, d0[r] * 1000);
        int64_t end = c->ts_ns + c->dur_ns;
        emin = end < emin ? end : emin;
        emax = end > emax ? end : emax;
    }
    assert_int_equal(emax - emin, 2000);
    /* Writing the program: README says matched collectives end within
     * 1-7 us across ranks: max spread 7 us. */
    char path[] = "/tmp/collsim_kineto_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    err e = {0};
    trace_writer *w = trace_writer_new(path, &e);
    assert_non_null(w);
    kineto_summary s;
    kineto_opts o = {1, 0};
    if (kineto_write(k, 8, &o, w, &s, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(trace_writer_commit(w, &e), 0);
    assert_int_equal(s.rank, 0);
    assert_int_equal(s.comm, 8);
    assert_int_equal(s.sized, 8);
    assert_true(s.max_end_spread_us >= 1 && s.max_end_spread_us <= 7);
    /* read it back: 8 collectives, the first measured at 10 us with 2136 us
     * of waiting on rank 0 */
    trace_reader *tr;
    assert_int_equal(trace_open(path, &tr, &e), 0);
    trace_op op;
    int ncoll = 0, rc;
    while ((rc = trace_next(tr, &op, &e)) == 1)
        if (op.kind == OP_COLL && ncoll++ == 0) {
            assert_true(op.measured_us == 10);
            assert_true(op.wait_us == 2136);
            assert_int_equal(op.coll, COLL_ALLTOALL);
            assert_int_equal(op.bytes, 24576);
        }
    assert_int_equal(rc, 0);
    assert_int_equal(ncoll, 8);
    trace_close(tr);
    unlink(path);
    /* The host side of every rank (python over the files): 1,633 cpu_op
     * events each; rank 0: 245 cudaLaunchKernel, 16 cudaMemcpyAsync, 10
     * cudaStreamSynchronize + 1 cudaDeviceSynchronize. The ranks' skew:
     * the k-th collective starts up to 7,624 us apart (README: up to 7.6 ms). */
    for (int r = 0; r < 8; r++)
        assert_int_equal(kineto_host_of(k[r])->cpu_ops, 1633);
    assert_int_equal(kineto_host_of(k[0])->launches, 245);
    assert_int_equal(kineto_host_of(k[0])->copies, 16);
    assert_int_equal(kineto_host_of(k[0])->syncs, 11);
    assert_true(fabs(s.max_start_spread_us - 7624) < 1e-6);
    /* Replayed with the captured times, host gaps, syncs and the others'
     * lag at each collective (meta skew captured), rank 0's step ends where
     * its GPU work did: 14,341 us after ProfilerStep#10 starts (python;
     * the step span itself is 14,455). Tolerance 0.5%. The first SendRecv
     * waits 2,136 us for the slowest rank and transfers 10. */
    replay_result res;
    import_replay(k, 8, &s, &res);
    assert_true(fabs(res.cycle_us - 14341) < 5e-3 * 14341);
    assert_true(res.wait_us >= 2136);
    assert_true(res.host_us > 0.5 * res.cycle_us);   /* this step is launch-bound */
    for (int r = 0; r < 8; r++)
        kineto_free(k[r]);
}

/* ---- fuzz-style: broken inputs ------------------------------------------ */

static char *read_gz(const char *path, size_t *n)
{
    gzFile g = gzopen(path, "rb");
    assert_non_null(g);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    int got;
    while ((got = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)got;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    gzclose(g);
    *n = len;
    return buf;
}

static void write_file(const char *path, const void *data, size_t n, int gz)
{
    if (gz) {
        gzFile g = gzopen(path, "wb");
        gzwrite(g, data, (unsigned)n);
        gzclose(g);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void expect_input_error(const char *path)
{
    kineto_rank *k = NULL;
    err e = {0};
    int rc = kineto_load(path, &k, &e);
    if (rc != ERR_INPUT)
        fail_msg("%s: expected ERR_INPUT, got %d (%s)", path, rc, e.msg);
    assert_null(k);
    assert_non_null(strstr(e.msg, path));
}

static void test_truncated_and_corrupted(void **state)
{
    (void)state;
    size_t n;
    char *json = read_gz(TD "TraceLens/sglang_Qwen3-8B_decode.json.gz", &n);
    char p[] = "/tmp/collsim_fuzz_XXXXXX";
    int fd = mkstemp(p);
    assert_true(fd >= 0);
    close(fd);
    /* plain JSON cut at many points: always a clean ERR_INPUT */
    for (size_t cut = 1; cut < n; cut += n / 37)
        write_file(p, json, cut, 0), expect_input_error(p);
    /* gzipped JSON cut: truncated gzip stream */
    write_file(p, json, n, 1);
    FILE *f = fopen(p, "rb");
    char *gz = malloc(1 << 20);
    size_t gn = fread(gz, 1, 1 << 20, f);
    fclose(f);
    for (size_t cut = 20; cut < gn; cut += gn / 13)
        write_file(p, gz, cut, 0), expect_input_error(p);
    /* corrupted bytes inside the deflate stream */
    for (int k = 0; k < 8; k++) {
        char *bad = malloc(gn);
        memcpy(bad, gz, gn);
        for (size_t i = 100 + (size_t)k * 997; i < gn && i < 100 + (size_t)k * 997 + 64; i++)
            bad[i] = (char)(bad[i] ^ 0x5a);
        write_file(p, bad, gn, 0);
        expect_input_error(p);
        free(bad);
    }
    /* flipped JSON structure characters */
    char *bad = malloc(n);
    memcpy(bad, json, n);
    for (size_t i = n / 2; i < n; i++)
        if (bad[i] == ':') {
            bad[i] = ',';
            break;
        }
    write_file(p, bad, n, 0);
    expect_input_error(p);
    /* valid JSON but not a trace */
    write_file(p, "{\"a\": [1, 2, 3]}\n", 17, 0);
    expect_input_error(p);
    write_file(p, "", 0, 0);
    expect_input_error(p);
    free(bad);
    free(gz);
    free(json);
    unlink(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hta_nccl),
        cmocka_unit_test(test_tracelens_eager),
        cmocka_unit_test(test_tracelens_sglang),
        cmocka_unit_test(test_dlrm_all_ranks),
        cmocka_unit_test(test_truncated_and_corrupted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
