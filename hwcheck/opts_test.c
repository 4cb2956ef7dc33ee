/* Unit tests of hwcheck's option parsing: nccl-tests flags, modes that do
 * not take an option, bad values, the NVLink-multicast refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hwcheck/opts.h"

static int parse(opts *o, int mode, int argc, const char **argv, err *e)
{
    opts_init(o, mode);
    return opts_parse(o, argc, (char **)argv, e);
}

static void test_nccl_tests_flags(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    const char *a[] = {"coll", "allgather", "-b", "8K", "-e", "128M", "-f", "4", "-g", "2",
                       "-n", "50", "-w", "3", "-c", "2", "-d", "half", "--graph",
                       "--env", "NCCL_PROTO=LL", "--format=csv"};
    assert_int_equal(parse(&o, OPTS_COLL, 22, a, &e), 0);
    /* 8K = 8192, 128M = 2^27; half = fp16; one env setting; csv. */
    assert_int_equal(o.coll, REF_ALLGATHER);
    assert_int_equal(o.min_bytes, 8192);
    assert_int_equal(o.max_bytes, 128u << 20);
    assert_true(o.factor == 4.0);
    assert_true(o.ngpus == 2 && o.iters == 50 && o.warmup == 3 && o.check == 2);
    assert_int_equal(o.dtype, REF_FP16);
    assert_int_equal(o.graph, 1);
    assert_int_equal(o.nenv, 1);
    assert_string_equal(o.env[0], "NCCL_PROTO=LL");
    assert_int_equal(o.fmt, REPORT_CSV);
}

static void test_limits_alloc_blocks(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    /* Defaults: host-side limit 0 (= 30 s + 10 x the device limit, decided by
     * gpu_open), NCCL buffers from ncclMemAlloc (cuda_alloc 0), blocks 0. */
    const char *a0[] = {"coll"};
    assert_int_equal(parse(&o, OPTS_COLL, 1, a0, &e), 0);
    assert_true(o.host_wait_s == 0.0 && o.cuda_alloc == 0 && o.blocks == 0);
    const char *a[] = {"coll", "--host-timeout-s", "5", "--alloc", "cuda", "--drop-rank", "1"};
    assert_int_equal(parse(&o, OPTS_COLL, 7, a, &e), 0);
    assert_true(o.host_wait_s == 5.0);
    assert_int_equal(o.cuda_alloc, 1);
    assert_int_equal(o.drop_rank, 1);
    /* Below 1 s or an unknown allocator: usage errors naming the flag. */
    const char *b[] = {"coll", "--host-timeout-s", "0.5"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, b, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--host-timeout-s"));
    const char *c[] = {"coll", "--alloc", "managed"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--alloc"));
    /* --blocks: allreduce kernels at most 36; p2p copy kernels up to 1024;
     * --alloc is a coll option only. */
    const char *d[] = {"coll", "--impl", "oneshot", "--blocks", "37"};
    assert_int_equal(parse(&o, OPTS_COLL, 5, d, &e), ERR_USAGE);
    const char *f[] = {"p2p", "--blocks", "264"};
    assert_int_equal(parse(&o, OPTS_P2P, 3, f, &e), 0);
    assert_int_equal(o.blocks, 264);
    const char *g[] = {"p2p", "--alloc", "cuda"};
    assert_int_equal(parse(&o, OPTS_P2P, 3, g, &e), ERR_USAGE);
}

static void test_custom(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    const char *a[] = {"coll", "--impl", "twoshot-push", "--virtual-ranks", "4"};
    assert_int_equal(parse(&o, OPTS_COLL, 5, a, &e), 0);
    assert_int_equal(o.impl, OPTS_IMPL_TWOSHOT_PUSH);
    assert_int_equal(o.vranks, 4);
    /* Virtual ranks without a custom kernel, or a custom kernel for a
     * collective other than allreduce: usage errors. */
    const char *b[] = {"coll", "--virtual-ranks", "4"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, b, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--virtual-ranks"));
    const char *c[] = {"coll", "broadcast", "--impl", "oneshot"};
    assert_int_equal(parse(&o, OPTS_COLL, 4, c, &e), ERR_USAGE);
    /* 9 virtual ranks is beyond the kernels' 8. */
    const char *d[] = {"coll", "--impl", "oneshot", "--virtual-ranks", "9"};
    assert_int_equal(parse(&o, OPTS_COLL, 5, d, &e), ERR_USAGE);
}

static void test_errors(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    /* Unknown flag; -d for a mode that has no data type; missing value; -b > -e;
     * unknown collective; bad impl; NVLink multicast asked for. */
    const char *a[] = {"coll", "--frob"};
    assert_int_equal(parse(&o, OPTS_COLL, 2, a, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--frob"));
    const char *b[] = {"host", "-d", "bf16"};
    assert_int_equal(parse(&o, OPTS_HOST, 3, b, &e), ERR_USAGE);
    const char *c[] = {"coll", "-b"};
    assert_int_equal(parse(&o, OPTS_COLL, 2, c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "needs a value"));
    const char *d[] = {"coll", "-b", "1M", "-e", "1K"};
    assert_int_equal(parse(&o, OPTS_COLL, 5, d, &e), ERR_USAGE);
    const char *f[] = {"coll", "allreduse"};
    assert_int_equal(parse(&o, OPTS_COLL, 2, f, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "allreduse"));
    const char *g[] = {"coll", "--impl", "ring"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, g, &e), ERR_USAGE);
    const char *h[] = {"coll", "--env", "NCCL_NVLS_ENABLE=1"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, h, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "multicast"));
    const char *i[] = {"coll", "--env", "NCCL_NVLS_ENABLE=0"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, i, &e), 0);
    const char *j[] = {"p2p", "--op", "sideways"};
    assert_int_equal(parse(&o, OPTS_P2P, 3, j, &e), ERR_USAGE);
    const char *k[] = {"launch", "extra"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 2, k, &e), ERR_USAGE);
}

static void test_rounds(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    /* launch --nccl-only --rounds 100: 100 rounds, each written; without
     * --rounds 0 (7 rounds, medians only); --rounds without --nccl-only, 0
     * and 1001 (past its 1..1000) are usage errors. */
    const char *a[] = {"launch", "--nccl-only", "--rounds", "100"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 4, a, &e), 0);
    assert_int_equal(o.rounds, 100);
    assert_int_equal(o.nccl_only, 1);
    const char *b[] = {"launch", "--nccl-only"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 2, b, &e), 0);
    assert_int_equal(o.rounds, 0);
    const char *c[] = {"launch", "--rounds", "10"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 3, c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--nccl-only"));
    const char *d[] = {"launch", "--nccl-only", "--rounds", "0"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 4, d, &e), ERR_USAGE);
    const char *f[] = {"launch", "--nccl-only", "--rounds", "1001"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 4, f, &e), ERR_USAGE);
    /* coll --rounds 10: 10 timed rounds per size (no --nccl-only there);
     * 0 is refused as for launch. */
    const char *g[] = {"coll", "--rounds", "10"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, g, &e), 0);
    assert_int_equal(o.rounds, 10);
    const char *h[] = {"coll", "--rounds", "0"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, h, &e), ERR_USAGE);
}

static void test_peer(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    /* launch --post --peer: both set (the rows against GPU 1's memory too);
     * --post alone leaves peer 0; --peer without --post is a usage error
     * naming --post; --peer belongs to launch only. */
    const char *a[] = {"launch", "--post", "--peer"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 3, a, &e), 0);
    assert_int_equal(o.post, 1);
    assert_int_equal(o.peer, 1);
    const char *b[] = {"launch", "--post"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 2, b, &e), 0);
    assert_int_equal(o.peer, 0);
    const char *c[] = {"launch", "--peer"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 2, c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--post"));
    const char *d[] = {"coll", "--peer"};
    assert_int_equal(parse(&o, OPTS_COLL, 2, d, &e), ERR_USAGE);
}

static void test_defaults(void **state)
{
    (void)state;
    opts o;
    /* host sweeps 4K..256M by 4; p2p one 64M size; read+write+copy by default. */
    opts_init(&o, OPTS_HOST);
    assert_true(o.min_bytes == 4096 && o.max_bytes == 256u << 20 && o.factor == 4.0);
    opts_init(&o, OPTS_P2P);
    assert_true(o.min_bytes == 64u << 20 && o.op == OPTS_OP_ALL);
    assert_true(o.timeout_ms == 2000.0);
    assert_string_equal(opts_impl_name(OPTS_IMPL_ONESHOT_PUSH), "oneshot-push");
    /* -o x.csv writes csv unless --format says otherwise. */
    err e = {0};
    const char *a[] = {"host", "-o", "h.csv"};
    assert_int_equal(parse(&o, OPTS_HOST, 3, a, &e), 0);
    assert_int_equal(o.fmt, REPORT_CSV);
    const char *b[] = {"host", "--format", "table", "-o", "h.csv"};
    assert_int_equal(parse(&o, OPTS_HOST, 5, b, &e), 0);
    assert_int_equal(o.fmt, REPORT_TABLE);
}

static void test_host_kernel_and_replay_modes(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    /* host: copy (the engine) by default, as before; --op kernel runs the copy
     * kernel with --blocks (1..1024); read/write are p2p's, refused here. */
    opts_init(&o, OPTS_HOST);
    assert_int_equal(o.op, OPTS_OP_COPY);
    const char *a[] = {"host", "--op", "kernel", "--blocks", "4"};
    assert_int_equal(parse(&o, OPTS_HOST, 5, a, &e), 0);
    assert_true(o.op == OPTS_OP_KERNEL && o.blocks == 4);
    assert_string_equal(opts_op_name(o.op), "kernel");
    const char *b[] = {"host", "--op", "read"};
    assert_int_equal(parse(&o, OPTS_HOST, 3, b, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "copy, kernel or all"));
    const char *c[] = {"host", "--op", "all", "--blocks", "1024"};
    assert_int_equal(parse(&o, OPTS_HOST, 5, c, &e), 0);
    assert_true(o.op == OPTS_OP_ALL && o.blocks == 1024);
    /* p2p has no "kernel" op (its kernels are read or write). */
    const char *d[] = {"p2p", "--op", "kernel"};
    assert_int_equal(parse(&o, OPTS_P2P, 3, d, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "read, write, copy or all"));
    /* replay: --graph captures every phase, --eager none; not both. */
    const char *f[] = {"replay", "--graph", "t.trace"};
    assert_int_equal(parse(&o, OPTS_REPLAY, 3, f, &e), 0);
    assert_true(o.graph == 1 && o.eager == 0 && o.npos == 1);
    const char *g[] = {"replay", "--eager", "t.trace"};
    assert_int_equal(parse(&o, OPTS_REPLAY, 3, g, &e), 0);
    assert_true(o.graph == 0 && o.eager == 1);
    const char *h[] = {"replay", "--eager", "--graph", "t.trace"};
    assert_int_equal(parse(&o, OPTS_REPLAY, 4, h, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "exclude"));
    /* --eager is replay's alone. */
    const char *i[] = {"coll", "--eager"};
    assert_int_equal(parse(&o, OPTS_COLL, 2, i, &e), ERR_USAGE);
    /* launch: --copy-only alone, or --nccl-only alone; not both; launch's alone. */
    const char *j[] = {"launch", "--copy-only"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 2, j, &e), 0);
    assert_true(o.copy_only == 1 && o.nccl_only == 0);
    const char *k[] = {"launch", "--copy-only", "--nccl-only"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 3, k, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "exclude"));
    const char *l[] = {"coll", "--copy-only"};
    assert_int_equal(parse(&o, OPTS_COLL, 2, l, &e), ERR_USAGE);
    /* --pair alone: not with another launch mode, and launch's alone. */
    const char *m[] = {"launch", "--pair"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 2, m, &e), 0);
    assert_true(o.pair == 1 && o.post == 0);
    const char *n[] = {"launch", "--pair", "--post"};
    assert_int_equal(parse(&o, OPTS_LAUNCH, 3, n, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--pair excludes"));
    const char *q[] = {"coll", "--pair"};
    assert_int_equal(parse(&o, OPTS_COLL, 2, q, &e), ERR_USAGE);
}

static void test_copy_kernel_shape(void **state)
{
    (void)state;
    opts o;
    err e = {0};
    /* Defaults: 512 threads, one load in flight per thread, host copies not
     * checked (-c 0), as the files before these options were measured. */
    const char *a0[] = {"host", "--op", "kernel"};
    assert_int_equal(parse(&o, OPTS_HOST, 3, a0, &e), 0);
    assert_true(o.threads == 512 && o.unroll == 1 && o.check == 0);
    const char *a[] = {"host", "--op", "kernel", "--threads", "256", "--unroll", "8", "-c", "1"};
    assert_int_equal(parse(&o, OPTS_HOST, 9, a, &e), 0);
    assert_true(o.threads == 256 && o.unroll == 8 && o.check == 1);
    /* p2p takes the shape too (its default op runs the kernels). */
    const char *b[] = {"p2p", "--unroll", "4"};
    assert_int_equal(parse(&o, OPTS_P2P, 3, b, &e), 0);
    assert_int_equal(o.unroll, 4);
    /* Depth 3 (no template instance), 100 threads (not whole warps), 2048
     * threads (over a block's 1024), and a shape for the copy engine: refused,
     * naming the flag. */
    const char *c[] = {"host", "--op", "kernel", "--unroll", "3"};
    assert_int_equal(parse(&o, OPTS_HOST, 5, c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--unroll"));
    const char *d[] = {"host", "--op", "kernel", "--threads", "100"};
    assert_int_equal(parse(&o, OPTS_HOST, 5, d, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "multiple of 32"));
    const char *f[] = {"host", "--op", "kernel", "--threads", "2048"};
    assert_int_equal(parse(&o, OPTS_HOST, 5, f, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--threads"));
    const char *g[] = {"host", "--unroll", "2"};
    assert_int_equal(parse(&o, OPTS_HOST, 3, g, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--op kernel"));
    /* shm-ring: NCCL's SHM ring on 2 ranks only; not a replay allreduce. */
    const char *s1[] = {"coll", "--impl", "shm-ring", "--virtual-ranks", "2", "--blocks", "4"};
    assert_int_equal(parse(&o, OPTS_COLL, 7, s1, &e), 0);
    assert_int_equal(o.impl, OPTS_IMPL_SHM_RING);
    assert_string_equal(opts_impl_name(o.impl), "shm-ring");
    const char *s2[] = {"coll", "--impl", "shm-ring", "--virtual-ranks", "4"};
    assert_int_equal(parse(&o, OPTS_COLL, 5, s2, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "2 ranks"));
    const char *s3[] = {"replay", "--allreduce", "shm-ring", "x.trace"};
    assert_int_equal(parse(&o, OPTS_REPLAY, 4, s3, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "shm-ring"));
    /* coll does not take them. */
    const char *h[] = {"coll", "--unroll", "2"};
    assert_int_equal(parse(&o, OPTS_COLL, 3, h, &e), ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nccl_tests_flags),
        cmocka_unit_test(test_custom),
        cmocka_unit_test(test_limits_alloc_blocks),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_rounds),
        cmocka_unit_test(test_peer),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_host_kernel_and_replay_modes),
        cmocka_unit_test(test_copy_kernel_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
