/* Collectives on a hand-built uniform fabric, checked against closed forms
 * derived by hand. The fabric: n GPUs, each with its own full-duplex link of
 * B bytes/s and latency h to one switch (so GPU->switch->GPU has latency
 * alpha = 2h and every GPU's up and down links are private: a ring's flows
 * never share a link). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "models/coll/coll_impl.h"
#include "models/fabric/flows.h"
#include "models/nccl/nccl_tune.h"
#include "tests/unit/fixture.h"
#include "tests/unit/near.h"

#define B_BPS 10e9       /* 10 GB/s per direction */
#define HOP_PS 500000    /* 0.5 us per hop: alpha = 1 us */

static topo *uniform(int n, int read_tags)
{
    err e = {0};
    topo *t = topo_new("uniform");
    int cpu = topo_add_node(t, "cpu0", TOPO_CPU, 0, &e);
    int rp = topo_add_node(t, "rp0", TOPO_ROOT, 0, &e);
    int sw = topo_add_node(t, "sw0", TOPO_SWITCH, 0, &e);
    topo_set_parent(t, rp, cpu, &e);
    topo_set_parent(t, sw, rp, &e);
    topo_link l = {.a = cpu, .b = rp, .kind = LINK_PCIE, .pcie_gen = 5, .pcie_width = 16,
                   .bw_Bps = B_BPS, .lat_ps = HOP_PS};
    topo_add_link(t, &l, &e);
    l.a = rp;
    l.b = sw;
    topo_add_link(t, &l, &e);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", i);
        int g = topo_add_node(t, name, TOPO_GPU, 0, &e);
        topo_set_parent(t, g, sw, &e);
        l.a = g;
        l.b = sw;
        topo_add_link(t, &l, &e);
    }
    topo_params *p = topo_params_mut(t);
    p->pcie_mrrs_bytes = 512;
    /* Kernel requests as large as a write TLP (MPS 256), so the wire costs
     * of these tests are the link's rate; test_req_size checks smaller ones. */
    p->sm_req_bytes = 256;
    p->read_tags = read_tags;
    p->read_extra_lat_ps = 0;
    p->arb_collapse_Bps = 0;
    p->kernel_base_ps = 2000000; /* 2 us */
    p->gpu_mem_Bps = 0;          /* local reduces free, to isolate the fabric */
    int rc = topo_finish(t, "uniform", &e);
    if (rc)
        fail_msg("topo_finish: %s", e.msg);
    return t;
}

static double predict_kind_us(const topo *t, coll_kind k, coll_algo a, coll_proto p,
                              uint64_t bytes, int ch)
{
    coll_req r;
    coll_req_init(&r, t);
    r.kind = k;
    r.algo = a;
    r.proto = p;
    r.bytes = bytes;
    r.channels = ch;
    return (double)fixture_predict(t, &r, 0).time_ps / 1e6;
}

static double predict_us(const topo *t, coll_algo a, coll_proto p, uint64_t bytes, int ch)
{
    return predict_kind_us(t, COLL_ALLREDUCE, a, p, bytes, ch);
}

static void test_ring_simple(void **state)
{
    (void)state;
    /* Ring allreduce, Simple, one channel, n = 4, S = 4 MiB. NCCL's chunk is
     * min(4 FIFO steps = 2 MiB, S/n = 1 MiB) = 1 MiB, sent as 2 slices of
     * 512 KiB (prims_simple.h): one NCCL loop of 6 steps x 2 slices, tx =
     * 512 KiB / B = 52.4288 us each when alone. A send ends when its last
     * byte has left plus the step cost 1.0; the sync warp's fence (the
     * write's landing, alpha = 1) and flag (alpha) reach the receiver 2 us
     * later. The block runs its transfers in program order (all_reduce.h
     * runRing): slice 1 after slice 0, step s after step s-1, so the 12
     * sends are back to back (the upstream slice, delivered 2 us after its
     * send, is always there first); then the two last receives, each a step
     * (1.0 us) with nothing to copy (no block budget here), the second after
     * its slice's delivery (2 us after the last send):
     *   t = 8.4 + 12 x (52.4288 + 1.0) + 2 + 1.0 = 652.5456 us. */
    topo *t = uniform(4, 768);
    double us = predict_us(t, ALGO_RING, PROTO_SIMPLE, 4u << 20, 1);
    NEAR(us, 652.5456, 0.01);
    topo_free(t);
}

static void test_ring_ll_small(void **state)
{
    (void)state;
    /* Ring allreduce, LL, one channel, n = 8, S = 43008 B (the EAGLE-3
     * verify size): chunks of S/8 = 5376 B, on the wire twice that (LL
     * flags): 1.0752 us at 10 GB/s, plus the step cost 0.2. LL forwards
     * lines as they arrive: a rank's step s starts when its own step s-1 has
     * sent its last byte (1.2752 us after it started) and the first line of
     * the upstream step s-1 has arrived (alpha = 1 us after that step
     * started): the first binds, and only the last step pays alpha. The
     * final receive costs its step 0.2 (no block budget here: its pass over
     * the lines is free):
     *   t = 6.6 + 13 x 1.2752 + (1.2752 + 1) + 0.2 = 25.6528 us. */
    topo *t = uniform(8, 768);
    double us = predict_us(t, ALGO_RING, PROTO_LL, 43008, 1);
    NEAR(us, 25.6528, 0.01);
    topo_free(t);
}

static void test_ring_cta_rate(void **state)
{
    (void)state;
    /* One NCCL channel is one thread block: with blocks storing at most
     * 1 GB/s into a peer (cta_store_GBps 1) on 10 GB/s links, the 12 sends of
     * test_ring_simple (n = 4, S = 4 MiB, 512 KiB slices) take tx = 524.288
     * us each, back to back with their step 1.0. Unregistered buffers: each
     * last receive copies its slice out of the FIFO, 512 threads less the
     * sync warp's 32 each with 8 x 16 bytes in flight (64 KiB) against the
     * budget's reference block of 8 KiB: 524288 x 8192 / 65536 / 1 GB/s =
     * 65.536 us, plus its step; the second after the first:
     *   t = 8.4 + 12 x 525.288 + 2 x (65.536 + 1.0) = 6444.928 us;
     * two channels carry 2 MiB each: chunk min(2 MiB, 512 KiB), slices of
     * 256 KiB, each channel on its own block, tx = 262.144 us, copies 32.768:
     *   t = 8.4 + 12 x 263.144 + 2 x 33.768 = 3233.664 us.
     * Registered buffers (the peer wrote the output: nothing to copy): the
     * second last receive waits for its slice's delivery, 2 us after the
     * last send, then its step: 8.4 + 12 x 525.288 + 2 + 1.0 = 6314.856. */
    topo *t = uniform(4, 768);
    topo_params_mut(t)->cta_store_Bps = 1e9;
    NEAR(predict_us(t, ALGO_RING, PROTO_SIMPLE, 4u << 20, 1), 6444.928, 0.01);
    NEAR(predict_us(t, ALGO_RING, PROTO_SIMPLE, 4u << 20, 2), 3233.664, 0.01);
    {
        err e = {0};
        coll_ctx *c = coll_ctx_new(t);
        coll_req r;
        coll_req_init(&r, t);
        r.algo = ALGO_RING;
        r.proto = PROTO_SIMPLE;
        r.bytes = 4u << 20;
        r.channels = 1;
        r.registered = 1;
        coll_result res;
        assert_int_equal(coll_predict(c, &r, &res, &e), 0);
        NEAR((double)res.time_ps / 1e6, 6314.856, 0.01);
        coll_ctx_free(c);
    }
    topo_free(t);
}

static void test_ring_ll128_order(void **state)
{
    (void)state;
    /* Ring allreduce, LL128, one channel, n = 2, S = 4 x 576,000 B: chunks
     * of an LL128 step's data (576,000 B), 2 loops of a send and a
     * receive-reduce-copy-send each, 614,400 wire bytes (128/120) per
     * transfer: 61.44 us at 10 GB/s (the block, 20 GB/s, does not bind),
     * plus the step 0.4; the loop's last step carries the latency alpha = 1.
     * Loop 0: start 14, step 0 ends 14 + 61.84 = 75.84, step 1 (its first
     * line upstream came at 15) 75.84 + 61.84 + 1 = 138.68. The last
     * receive copies the chunk out of the FIFO: 640 threads poll 4 x 16
     * bytes each of its lines and load them again, two rounds of 40 KiB
     * against the block budget's 8 KiB reference, for 120 of 128 bytes of
     * data: 576,000 x 2 x 8192 / 40960 x 128/120 / 20 GB/s = 12.288 us, plus
     * its step 0.4: 151.368. Loop 1 follows it in the block's program order
     * (all_reduce.h runRing): 151.368 + 61.84 + 61.84 + 1 + 12.288 + 0.4:
     *   t = 288.736 us. */
    topo *t = uniform(2, 768);
    topo_params_mut(t)->cta_store_Bps = 20e9;
    topo_params_mut(t)->gpu_sm = 90; /* NCCL runs LL128 on SM 70+ only */
    NEAR(predict_us(t, ALGO_RING, PROTO_LL128, 4 * 576000, 1), 288.736, 0.01);
    topo_free(t);
}

static void test_alltoall_channels(void **state)
{
    (void)state;
    /* All-to-all, n = 2, Simple, S = 8 MB: each rank sends S/2 = 4 MB to
     * its peer, split over the send's channels, each a thread block storing
     * at most 1 GB/s (cta_store_GBps 1) on 10 GB/s links: the transfer takes
     * 4e6 / (ch x 1 GB/s) while ch x 1 < 10, every other term (kernel start,
     * latency, step, flag) the same for every ch:
     *   t(1) - t(2) = 4000 - 2000 = 2000 us.
     * The sends' parts share the communicator's p2p channels (P, here the
     * emulation's for this fabric): forcing 4 P channels runs as P. */
    topo *t = uniform(2, 768);
    topo_params_mut(t)->cta_store_Bps = 1e9;
    err e = {0};
    coll_req r;
    coll_req_init(&r, t);
    nccl_tune *nt;
    assert_int_equal(nccl_tune_new(t, 2, &r.env, &nt, &e), 0);
    int p2p = nt->p2p_nchannels;
    nccl_tune_free(nt);
    assert_true(p2p >= 2 && p2p < 10);
    double t1 = predict_kind_us(t, COLL_ALLTOALL, ALGO_RING, PROTO_SIMPLE, 8000000, 1);
    double t2 = predict_kind_us(t, COLL_ALLTOALL, ALGO_RING, PROTO_SIMPLE, 8000000, 2);
    NEAR(t1 - t2, 2000, 0.01);
    double tp = predict_kind_us(t, COLL_ALLTOALL, ALGO_RING, PROTO_SIMPLE, 8000000, p2p);
    NEAR(t1 - tp, 4000 - 4000.0 / p2p, 0.01);
    NEAR(predict_kind_us(t, COLL_ALLTOALL, ALGO_RING, PROTO_SIMPLE, 8000000, 4 * p2p), tp, 1e-6);
    topo_free(t);
}

static void test_ring_channels_share(void **state)
{
    (void)state;
    /* Two channels carry S/2 each over the same private links, so they
     * share each link: the transfer term is the same as one channel's, only
     * the per-step latency terms are paid once per step (in parallel):
     *   t(2 ch) = t(1 ch). Simple, n = 4, S = 4 MiB. */
    topo *t = uniform(4, 768);
    double one = predict_us(t, ALGO_RING, PROTO_SIMPLE, 4u << 20, 1);
    double two = predict_us(t, ALGO_RING, PROTO_SIMPLE, 4u << 20, 2);
    NEAR(two, one, 0.01);
    topo_free(t);
}

static void test_oneshot_pull(void **state)
{
    (void)state;
    /* One-shot pull, n = 4, S = 1 MB, read budget large enough not to bind
     * (4096 tags: 1 TB/s). Kernel base 2 us; start barrier: flags take alpha = 1;
     * each rank reads S from 3 peers as one interleaved group: its down link
     * carries 3 streams and each peer's up link serves 3 readers, so every
     * stream gets B/3 and the reads take 3S/B = 300 us plus the round trip
     * 2 alpha = 2; end barrier alpha = 1.
     *   t = 2 + 1 + 300 + 2 + 1 = 306 us. */
    topo *t = uniform(4, 4096);
    double us = predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 1000000, 0);
    NEAR(us, 306.0, 0.01);
    topo_free(t);
}

static void test_twoshot_and_push(void **state)
{
    (void)state;
    /* Same fabric, n = 4, S = 1 MB, part = S/4 = 250 kB; every group of 3
     * streams gets B/3 per stream (as in the one-shot case).
     * Two-shot pull: base 2 + barrier 1 + reads 3 x 250 kB / 10 GB/s = 75
     *   plus round trip 2 + barrier 1 + reads 75 + 2 = 158 us (no barrier
     *   after the all-gather, as in cross_device_reduce_2stage).
     * One-shot push (local reduce free here), as kernels/allreduce.cu runs
     *   it: base 2 + start barrier 1 + writes of S to 3 peers 300 + one-way
     *   1 + the barrier behind the data: its fence waits for the writes'
     *   acknowledgement (one way back, 1), then the flags 1 = 306 us.
     * Two-shot push: base 2 + barrier 1 + (75 + 1) + fence 1 + barrier 1
     *   + (75 + 1) + fence 1 + barrier 1 = 159 us. */
    topo *t = uniform(4, 4096);
    NEAR(predict_us(t, ALGO_TWOSHOT, PROTO_AUTO, 1000000, 0), 158.0, 0.01);
    NEAR(predict_us(t, ALGO_ONESHOT_PUSH, PROTO_AUTO, 1000000, 0), 306.0, 0.01);
    NEAR(predict_us(t, ALGO_TWOSHOT_PUSH, PROTO_AUTO, 1000000, 0), 159.0, 0.01);
    topo_free(t);
}

static void test_fence_ack(void **state)
{
    (void)state;
    /* What a push's barrier fence waits after its writes (coll_fence_ack_ps):
     * the route's write latency while fence_ack_us is 0 (not measured), the
     * measured value once set. */
    topo_params q = {0};
    assert_int_equal(coll_fence_ack_ps(&q, 1000000), 1000000);
    q.fence_ack_ps = 250000;
    assert_int_equal(coll_fence_ack_ps(&q, 1000000), 250000);
    /* In test_twoshot_and_push's kernels (alpha = 1 us one way), a
     * measured wait of 0.25 us replaces each push fence's one way back
     * (1 us): the one-shot push has one fence behind writes, 306 - 0.75 =
     * 305.25 us; the two-shot push two (behind its reduce-scatter's writes
     * and its all-gather's), 159 - 1.5 = 157.5 us; the pull kernels have
     * none (306, 158), so only the push side of their order moves. */
    topo *t = uniform(4, 4096);
    topo_params_mut(t)->fence_ack_ps = 250000;
    NEAR(predict_us(t, ALGO_ONESHOT_PUSH, PROTO_AUTO, 1000000, 0), 305.25, 0.01);
    NEAR(predict_us(t, ALGO_TWOSHOT_PUSH, PROTO_AUTO, 1000000, 0), 157.5, 0.01);
    NEAR(predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 1000000, 0), 306.0, 0.01);
    NEAR(predict_us(t, ALGO_TWOSHOT, PROTO_AUTO, 1000000, 0), 158.0, 0.01);
    topo_free(t);
}

static void test_barrier_fence(void **state)
{
    (void)state;
    /* A barrier's signal pays its system-scope fence (fence_sys_ps) before
     * the flags. Same fabric and sizes as above, fence 0.5 us: the one-shot
     * pull meets at 2 barriers, 306 + 2 x 0.5 = 307 us; the two-shot pull
     * at 2 (no barrier after the all-gather), 158 + 1 = 159; the one-shot
     * push at 2, its second fence after the writes' acknowledgement, 306 + 1
     * = 307; the two-shot push at 3, 159 + 1.5 = 160.5 us. */
    topo *t = uniform(4, 4096);
    topo_params_mut(t)->fence_sys_ps = 500000;
    NEAR(predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 1000000, 0), 307.0, 0.01);
    NEAR(predict_us(t, ALGO_TWOSHOT, PROTO_AUTO, 1000000, 0), 159.0, 0.01);
    NEAR(predict_us(t, ALGO_ONESHOT_PUSH, PROTO_AUTO, 1000000, 0), 307.0, 0.01);
    NEAR(predict_us(t, ALGO_TWOSHOT_PUSH, PROTO_AUTO, 1000000, 0), 160.5, 0.01);
    topo_free(t);
}

static void test_block_wait(void **state)
{
    (void)state;
    /* A barrier of B blocks costs block_wait x (H_B - 1) over one block's:
     * H_1 - 1 = 0; H_4 - 1 = 1/2 + 1/3 + 1/4 = 13/12, so 1 us a block gives
     * 1.083333 us; H_36 - 1 = 3.174559. */
    assert_int_equal(coll_block_wait_ps(1000000, 1), 0);
    assert_int_equal(coll_block_wait_ps(1000000, 0), 0);
    assert_int_equal(coll_block_wait_ps(1000000, 4), 1083333);
    NEAR((double)coll_block_wait_ps(1000000, 36) / 1e6, 3.174559, 1e-5);
    /* In the kernels, fabric and sizes of test_twoshot_and_push (1 MB: 36
     * blocks), block_wait 0.1 us, no fence: every barrier adds 0.1 x
     * 3.174559 = 0.317456 us. The one-shot pull meets at 2 barriers, 306 +
     * 0.634912 = 306.634912 us; the two-shot pull at 2, 158.634912; the
     * one-shot push at 2, 306.634912; the two-shot push at 3, 159 + 0.952368
     * = 159.952368. */
    topo *t = uniform(4, 4096);
    topo_params_mut(t)->block_wait_ps = 100000;
    NEAR(predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 1000000, 0), 306.634912, 0.01);
    NEAR(predict_us(t, ALGO_TWOSHOT, PROTO_AUTO, 1000000, 0), 158.634912, 0.01);
    NEAR(predict_us(t, ALGO_ONESHOT_PUSH, PROTO_AUTO, 1000000, 0), 306.634912, 0.01);
    NEAR(predict_us(t, ALGO_TWOSHOT_PUSH, PROTO_AUTO, 1000000, 0), 159.952368, 0.01);
    /* 32 KiB = 2048 packs of 16 B: 4 blocks of 512 threads. The one-shot
     * pull's 2 barriers add 2 x 0.1 x 13/12 = 0.216667 us to what the same
     * fabric predicts without the wait; one block (8 KiB) adds nothing. */
    double with4 = predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 32768, 0);
    double with1 = predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 8192, 0);
    topo_params_mut(t)->block_wait_ps = 0;
    NEAR(with4 - predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 32768, 0), 0.216667, 0.001);
    NEAR(with1 - predict_us(t, ALGO_ONESHOT, PROTO_AUTO, 8192, 0), 0.0, 0.001);
    topo_free(t);
}

static void test_alltoall_push(void **state)
{
    (void)state;
    /* All-to-all as one push kernel (DeepEP-style), n = 4, S = 1 MB per
     * rank, part = S/4 = 250 kB to each of 3 peers as one interleaved group
     * (B/3 a stream, as above): base 2 + start barrier 1 + writes 3 x 250 kB
     * / 10 GB/s = 75 + one-way 1 + fence 1 + barrier 1 = 81 us. */
    topo *t = uniform(4, 4096);
    coll_req r;
    coll_req_init(&r, t);
    r.kind = COLL_ALLTOALL;
    r.algo = ALGO_ONESHOT_PUSH;
    r.bytes = 1000000;
    coll_result res = fixture_predict(t, &r, 0);
    NEAR((double)res.time_ps / 1e6, 81.0, 0.01);
    topo_free(t);
}

static double predict_off_us(const topo *t, coll_algo a, uint64_t bytes, int off)
{
    coll_req r;
    coll_req_init(&r, t);
    r.algo = a;
    r.bytes = bytes;
    return (double)fixture_predict(t, &r, off).time_ps / 1e6;
}

static void test_serial_loads(void **state)
{
    (void)state;
    /* n = 2, S = 32 KiB: 2048 packs of 16 B, so ceil(2048 / 512) = 4 blocks.
     * A block loads 1 GB/s from a peer (cta_load) and 4 GB/s from its own
     * memory (cta_store: the store kernel waits for its local load), one
     * load after another. Links (10 GB/s) and tags do not bind.
     * Pull one-shot: an iteration loads the own pack, then the peer's:
     *   rate 4 / (1/4 + 1/1) GB/s = 3.2 GB/s, reads 32768 / 3.2e9 = 10.24 us;
     *   t = base 2 + barrier 1 + 10.24 + round trip 2 + end barrier 1 = 16.24;
     *   without serial-loads 4 x 1 = 4 GB/s: 8.192 us, t = 14.192.
     * Push one-shot: writes at min(4 x 4, 10) = 10 GB/s: 3.2768 us + one way
     *   1, then the local reduce of 2 slots, two local loads an iteration:
     *   4 / (2/4) = 8 GB/s, 32768 / 8e9 = 4.096 us;
     *   t = 2 + 1 + 3.2768 + 1 + fence 1 + barrier 1 + 4.096 = 13.3728;
     *   without serial-loads the reduce is the HBM's, free here: 9.2768.
     * Two-shot pull: part 16 KiB; rs loads at 3.2 GB/s: 5.12 + 2; barrier 1;
     *   the own slice's copy 16384 / 16e9 = 1.024; ag loads the peer's at
     *   4 GB/s: 4.096 + 2, and done: t = 2 + 1 + 7.12 + 1 + 1.024 + 6.096
     *   = 18.24. */
    /* (The exchanges' first round charged as bandwidth, first-round off:
     * test_first_round.) */
    topo *t = uniform(2, 4096);
    topo_params *p = topo_params_mut(t);
    p->cta_load_Bps = 1e9;
    p->cta_store_Bps = 4e9;
    const int fr = FAB_NO_FIRST_ROUND;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 32768, fr), 16.24, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT, 32768, fr | FAB_NO_SERIAL_LOADS), 14.192, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 32768, fr), 13.3728, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 32768, fr | FAB_NO_SERIAL_LOADS), 9.2768, 0.01);
    NEAR(predict_off_us(t, ALGO_TWOSHOT, 32768, fr), 18.24, 0.01);
    topo_free(t);
}

static void test_first_round(void **state)
{
    (void)state;
    /* An exchange's first round (one 16-byte pack per thread of each block,
     * B x 8 KiB) is inside the route's latency: only the bytes past it go
     * at the per-block rate. Fabric of test_serial_loads (n = 2, links 10
     * GB/s, one way 1 us, base 2, barriers 1 each).
     * S = 32 KiB: 4 blocks, exactly one round: the reads go at the link,
     *   32768 / 10e9 = 3.2768 us, and the round's own loads (test_own_round)
     *   8192 / 4e9 = 2.048: t = 2 + 1 + 2.048 + 3.2768 + round trip 2 + 1 =
     *   11.3248 (16.24 with the round charged at 3.2 GB/s, own load and all).
     * Slower blocks, cta_load 0.1 and cta_store 0.4 GB/s: a block's pull
     *   rate 1 / (1/0.4 + 1/0.1) = 0.08 GB/s, 36 blocks 2.88 GB/s. S = 576
     *   KiB = 589824 B: 36 blocks, a round 36 x 8192 = 294912 B, so 294912
     *   B past it: 294912 / 2.88e9 = 102.4 us (the link's 58.98 does not
     *   bind), the own round 8192 / 0.4e9 = 20.48, and the first round's
     *   skew on the link (test_round_skew) 294912 / 10e9 = 29.4912: t = 2 +
     *   1 + 20.48 + 29.4912 + 102.4 + 2 + 1 = 158.3712 (128.88 with
     *   round-skew off); with the round charged, 589824 / 2.88e9 = 204.8
     *   us, t = 210.8.
     * Push one-shot, S = 32 KiB: the writes go at the link, 3.2768 us + one
     *   way 1 (as test_serial_loads: the store cap 16 GB/s is above it),
     *   the local reduce is no exchange and keeps its round (4.096): t =
     *   13.3728 either way. */
    topo *t = uniform(2, 4096);
    topo_params *p = topo_params_mut(t);
    p->cta_load_Bps = 1e9;
    p->cta_store_Bps = 4e9;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 32768, 0), 11.3248, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT, 32768, FAB_NO_FIRST_ROUND), 16.24, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 32768, 0), 13.3728, 0.01);
    p->cta_load_Bps = 0.1e9;
    p->cta_store_Bps = 0.4e9;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, 0), 158.3712, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, FAB_NO_ROUND_SKEW), 128.88, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, FAB_NO_FIRST_ROUND), 210.8, 0.01);
    topo_free(t);
}

static void test_own_round(void **state)
{
    (void)state;
    /* A pull iteration loads the own pack and the peer's in turn; the
     * first round's peer load is inside the route's latency (the read copy
     * kernel's, test_first_round), its own load is not: one round of a
     * block's local loads, 512 x 16 B = 8192 B at cta_store, is paid besides
     * at every size. Fabric of test_first_round (cta_load 1, cta_store 4
     * GB/s): 8192 / 4e9 = 2.048 us. The one-shot pull pays it once (its
     * exchange), the two-shot pull once (its reduce-scatter loads the own
     * pack with the peer's; its all-gather copies the own slice in a loop
     * of its own), the push kernels never (a push iteration's one local
     * load is the write copy kernel's, inside the write latency): so with
     * own-round off the pulls are 2.048 us faster and the pushes the same,
     * at 16 B as at 32 KiB. Off as well when first-round is off (the round
     * is then charged whole at the per-block rate) and when local loads are
     * free (cta_store 0). */
    topo *t = uniform(2, 4096);
    topo_params *p = topo_params_mut(t);
    p->cta_load_Bps = 1e9;
    p->cta_store_Bps = 4e9;
    static const uint64_t sizes[2] = {16, 32768};
    for (int i = 0; i < 2; i++) {
        uint64_t s = sizes[i];
        NEAR(predict_off_us(t, ALGO_ONESHOT, s, 0) -
                 predict_off_us(t, ALGO_ONESHOT, s, FAB_NO_OWN_ROUND), 2.048, 0.001);
        NEAR(predict_off_us(t, ALGO_TWOSHOT, s, 0) -
                 predict_off_us(t, ALGO_TWOSHOT, s, FAB_NO_OWN_ROUND), 2.048, 0.001);
        NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, s, 0) -
                 predict_off_us(t, ALGO_ONESHOT_PUSH, s, FAB_NO_OWN_ROUND), 0.0, 0.001);
        NEAR(predict_off_us(t, ALGO_TWOSHOT_PUSH, s, 0) -
                 predict_off_us(t, ALGO_TWOSHOT_PUSH, s, FAB_NO_OWN_ROUND), 0.0, 0.001);
        NEAR(predict_off_us(t, ALGO_ONESHOT, s, FAB_NO_FIRST_ROUND) -
                 predict_off_us(t, ALGO_ONESHOT, s, FAB_NO_FIRST_ROUND | FAB_NO_OWN_ROUND), 0.0,
             0.001);
    }
    p->cta_store_Bps = 0;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 16, 0) -
             predict_off_us(t, ALGO_ONESHOT, 16, FAB_NO_OWN_ROUND), 0.0, 0.001);
    topo_free(t);
}

static void test_whole_rounds(void **state)
{
    (void)state;
    /* A grid-stride loop gives its slowest thread ceil(packs / threads)
     * iterations, and each iteration waits for its serial loads, so a
     * partial last round costs a whole one. Fabric of test_first_round,
     * slow blocks (cta_load 0.1, cta_store 0.4 GB/s; links 10 GB/s, one way
     * 1 us, base 2, barriers 1 each). S = 442368 B = 1.5 rounds of 36
     * blocks (a round 36 x 8192 = 294912 B).
     * Pull one-shot: past the first round 147456 B, charged as 294912 B
     *   (the second round whole) at 36 x 0.08 = 2.88 GB/s: 102.4 us (51.2
     *   as a share of a round); the link's 44.24 does not bind; own round
     *   8192 / 0.4e9 = 20.48, the first round's skew 294912 / 10e9 =
     *   29.4912 (test_round_skew): t = 2 + 1 + 20.48 + 29.4912 + 102.4 + 2 +
     *   1 = 158.3712, the time of 576 KiB (two whole rounds,
     *   test_first_round), and 51.2 us less with whole-rounds off.
     * Push one-shot, cta_load 1, cta_store 4 GB/s: the writes go at the
     *   link either way (the store cap 36 x 4 = 144 GB/s); the local reduce,
     *   two local loads an iteration at 36 x 4 / 2 = 72 GB/s, is charged two
     *   rounds, 589824 / 72e9 = 8.192 us against 6.144: 2.048 us more. */
    topo *t = uniform(2, 4096);
    topo_params *p = topo_params_mut(t);
    p->cta_load_Bps = 0.1e9;
    p->cta_store_Bps = 0.4e9;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 442368, 0), 158.3712, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT, 442368, 0) -
             predict_off_us(t, ALGO_ONESHOT, 442368, FAB_NO_WHOLE_ROUNDS), 51.2, 0.01);
    p->cta_load_Bps = 1e9;
    p->cta_store_Bps = 4e9;
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 442368, 0) -
             predict_off_us(t, ALGO_ONESHOT_PUSH, 442368, FAB_NO_WHOLE_ROUNDS), 2.048, 0.01);
    /* Whole rounds change nothing within one round or at a whole number. */
    NEAR(predict_off_us(t, ALGO_ONESHOT, 32768, 0) -
             predict_off_us(t, ALGO_ONESHOT, 32768, FAB_NO_WHOLE_ROUNDS), 0.0, 0.001);
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, 0) -
             predict_off_us(t, ALGO_ONESHOT, 589824, FAB_NO_WHOLE_ROUNDS), 0.0, 0.001);
    topo_free(t);
}

static void test_round_skew(void **state)
{
    (void)state;
    /* A pull thread issues its next load only when its last has returned
     * (kernels/allreduce.cu), and the link delivers the first round (every
     * thread's load at once, B x 8 KiB) in round / r_link, so the threads
     * served last start their later rounds that much behind: a stream bound
     * by its blocks takes round / r_link + rest / R past the latency. Fabric
     * of test_first_round (n = 2, links 10 GB/s, one way 1 us, base 2,
     * barriers 1 each).
     * Slow blocks (cta_load 0.1, cta_store 0.4 GB/s), S = 589824 B: 36
     *   blocks, a round 294912 B; R = 2.88 GB/s (test_first_round) binds:
     *   the skew is 294912 / 10e9 = 29.4912 us on the pull one-shot, with
     *   round-skew off 29.4912 us less.
     * Pull two-shot, S = 1179648 B: 36 blocks (one per 8 KiB, at most 36),
     *   each phase's stream S / 2 = 589824 B, two rounds; the reduce-scatter
     *   (R 2.88 GB/s) and the all-gather (the peer's loads alone, 36 x 0.1 =
     *   3.6 GB/s) both bound by their blocks: two skews, 58.9824 us.
     * Push one-shot, the same: its stores are posted, its threads do not
     *   wait on the link: 0.
     * Fast blocks (cta_load 1, cta_store 4): R = 36 x 0.8 = 28.8 GB/s, the
     *   rounds 29.4912 + 294912 / 28.8e9 = 39.73 us against the link's
     *   589824 / 10e9 = 58.98: the link binds and hides the skew: 0.
     * Within one round (S = 32 KiB) there is no later round: 0. */
    topo *t = uniform(2, 4096);
    topo_params *p = topo_params_mut(t);
    p->cta_load_Bps = 0.1e9;
    p->cta_store_Bps = 0.4e9;
    const int off = FAB_NO_ROUND_SKEW;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, 0) -
             predict_off_us(t, ALGO_ONESHOT, 589824, off), 29.4912, 0.01);
    NEAR(predict_off_us(t, ALGO_TWOSHOT, 1179648, 0) -
             predict_off_us(t, ALGO_TWOSHOT, 1179648, off), 58.9824, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 589824, 0) -
             predict_off_us(t, ALGO_ONESHOT_PUSH, 589824, off), 0.0, 0.001);
    p->cta_load_Bps = 1e9;
    p->cta_store_Bps = 4e9;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, 0) -
             predict_off_us(t, ALGO_ONESHOT, 589824, off), 0.0, 0.001);
    NEAR(predict_off_us(t, ALGO_ONESHOT, 32768, 0) -
             predict_off_us(t, ALGO_ONESHOT, 32768, off), 0.0, 0.001);
    topo_free(t);
}

static void test_l2_sources(void **state)
{
    (void)state;
    /* A custom kernel whose buffers fit the L2 loads its own sources at
     * l2_load_speedup times their HBM rate (here 2: cta_store 4 -> 8 GB/s a
     * block for local loads); the peers' loads keep theirs. Fabric of
     * test_serial_loads (n = 2, links 10 GB/s, one way 1 us, base 2,
     * barriers 1 each).
     * Push one-shot, S = 32 KiB (4 blocks, one round): buffers (2 + n) S =
     *   131072 B. The writes go at the link (one round: first-round), 3.2768
     *   + one way 1; the reduce, two local loads an iteration, at 4 / (2/8)
     *   = 16 GB/s: 32768 / 16e9 = 2.048 us (4.096 from HBM): t = 2 + 1 +
     *   3.2768 + 1 + fence 1 + barrier 1 + 2.048 = 11.3248 (13.3728 when the
     *   L2 is 1e5 B, too small, or l2-sources is off).
     * Pull one-shot, cta_load 0.1 and cta_store 0.4 GB/s, S = 576 KiB (36
     *   blocks, a round 294912 B): buffers 2 S = 1179648 B. A block's rate
     *   1 / (1 / 0.8 + 1 / 0.1) = 0.0888 GB/s, 36 blocks 3.2 GB/s; the
     *   294912 B past the first round take 92.16 us, the first round's own
     *   loads 8192 / 0.8e9 = 10.24, its skew on the link 29.4912 (the link's
     *   rate, L2 or not, test_round_skew): t = 2 + 1 + 10.24 + 29.4912 +
     *   92.16 + 2 + 1 = 137.8912 (158.3712 from HBM, test_first_round). */
    topo *t = uniform(2, 4096);
    topo_params *p = topo_params_mut(t);
    p->cta_load_Bps = 1e9;
    p->cta_store_Bps = 4e9;
    p->l2_load_speedup = 2;
    p->l2_bytes = 1e6;
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 32768, 0), 11.3248, 0.01);
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 32768, FAB_NO_L2_SOURCES), 13.3728, 0.01);
    p->l2_bytes = 1e5;
    NEAR(predict_off_us(t, ALGO_ONESHOT_PUSH, 32768, 0), 13.3728, 0.01);
    p->cta_load_Bps = 0.1e9;
    p->cta_store_Bps = 0.4e9;
    p->l2_bytes = 2e6;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, 0), 137.8912, 0.01);
    p->l2_bytes = 1e6;
    NEAR(predict_off_us(t, ALGO_ONESHOT, 589824, 0), 158.3712, 0.01);
    topo_free(t);
}

static void test_tree_chain(void **state)
{
    (void)state;
    /* NCCL's intra-node tree is a chain: 3 hops up then 3 down, each hop a
     * whole chunk of one Simple FIFO step (512 KiB: the tree's chunk is one
     * step), so S = 1 MiB is 2 chunks pipelined through the 6 hops; up and
     * down hops use different link directions, so nothing shares a link. A
     * hop's send takes tx = 524288 / 10 GB/s = 52.4288 us plus the step 1.0;
     * its fence (alpha = 1) and flag (alpha) reach the next rank 2 us later.
     * Chunk 1 follows chunk 0's first send (FIFO order), then its 6 hops
     * each wait for the previous hop's delivery:
     *   t = base 8.4 + (52.4288 + 1) + 6 (52.4288 + 1 + 2) = 394.4016 us. */
    topo *t = uniform(4, 4096);
    NEAR(predict_us(t, ALGO_TREE, PROTO_SIMPLE, 1u << 20, 1), 394.4016, 0.01);
    topo_free(t);
}

static void test_one_rank(void **state)
{
    (void)state;
    /* One rank: a local copy, kernel base 2 us + 2 S / memory bandwidth;
     * S = 1 MB at 1 TB/s: 2 + 2 = 4 us. */
    topo *t = uniform(4, 4096);
    topo_params_mut(t)->gpu_mem_Bps = 1e12;
    err e = {0};
    coll_ctx *c = coll_ctx_new(t);
    coll_req r;
    coll_req_init(&r, t);
    r.nranks = 1;
    r.bytes = 1000000;
    coll_result res;
    assert_int_equal(coll_predict(c, &r, &res, &e), 0);
    NEAR((double)res.time_ps / 1e6, 4.0, 1e-6);
    coll_ctx_free(c);
    topo_free(t);
}

static void test_copy_setup(void **state)
{
    (void)state;
    /* A GPU-to-GPU copy is a read by the destination's copy engine after
     * its setup: 3 us + round trip 2 + 1 MB / 10 GB/s = 105 us. */
    topo *t = uniform(2, 4096);
    topo_params_mut(t)->copy_setup_ps = 3000000;
    err e = {0};
    fabric *f = fabric_new(t, &e);
    flows_case c = {0};
    assert_int_equal(flows_parse(t, "1>0", FLOWS_COPY, 1000000, &c, &e), 0);
    sim_ps tp[1];
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR((double)tp[0] / 1e6, 105.0, 0.01);
    flows_case_free(&c);
    fabric_free(f);
    topo_free(t);
}

static void test_read_bound(void **state)
{
    (void)state;
    /* The read bound: a copy engine keeps 16 tags x 512 B (MRRS)
     * outstanding over a round trip of 2 alpha = 2 us: 8192 B / 2 us = 4.096
     * GB/s, below the 10 GB/s link. A 4,096,000-byte read then takes
     * 4096000 / 4.096e9 s = 1000 us plus the round trip, 2 us: 1002 us. */
    topo *t = uniform(2, 16);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    flows_case c = {0};
    assert_int_equal(flows_parse(t, "1>0", FLOWS_COPY_READ, 4096000, &c, &e), 0);
    sim_ps tp[1];
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR((double)tp[0] / 1e6, 1002.0, 0.01);
    /* A kernel's SM loads ask for sm_req_bytes (256 here) per tag: 16 x 256 B
     * / 2 us = 2.048 GB/s, so the same read takes 2000 + 2 = 2002 us, after
     * the copy kernel's own start (kernel_base, 2 us): 2004 us. */
    assert_int_equal(flows_parse(t, "1>0", FLOWS_READ, 4096000, &c, &e), 0);
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR((double)tp[0] / 1e6, 2004.0, 0.01);
    /* The same transfer as a kernel's writes is only link-bound: 409.6 + 1 us,
     * after the kernel's start (2 us): 412.6 us. */
    assert_int_equal(flows_parse(t, "1>0", FLOWS_WRITE, 4096000, &c, &e), 0);
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR((double)tp[0] / 1e6, 412.6, 0.01);
    flows_case_free(&c);
    fabric_free(f);
    topo_free(t);
}

static void test_cache_and_env(void **state)
{
    (void)state;
    /* A repeated request is served from the cache: same answer. Bad NCCL
     * settings are usage errors naming the variable. */
    topo *t = uniform(4, 768);
    err e = {0};
    coll_ctx *c = coll_ctx_new(t);
    coll_req r;
    coll_req_init(&r, t);
    r.bytes = 65536;
    coll_result a, b;
    assert_int_equal(coll_predict(c, &r, &a, &e), 0);
    assert_int_equal(coll_predict(c, &r, &b, &e), 0);
    assert_int_equal(a.time_ps, b.time_ps);
    assert_int_equal(coll_env_set(&r.env, "NCCL_PROTO=LL", &e), 0);
    assert_int_equal(r.env.proto, PROTO_LL);
    assert_int_equal(coll_env_set(&r.env, "NCCL_P2P_LEVEL=SYS", &e), 0);
    assert_int_equal(r.env.p2p_level, PATH_SYS);
    assert_int_equal(coll_env_set(&r.env, "NCCL_PROTO=fast", &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "NCCL_PROTO"));
    assert_int_equal(coll_env_set(&r.env, "NCCL_FOO=1", &e), ERR_USAGE);
    r.nranks = 9;
    assert_int_equal(coll_predict(c, &r, &a, &e), ERR_USAGE);
    coll_ctx_free(c);
    topo_free(t);
}

/* The time a request adds when its size doubles from q's bytes, with the
 * mechanisms off switched off (coll_ctx_without), in seconds; *big gets the
 * doubled request's result. */
static double doubling_s(const topo *t, const coll_req *q, int off, coll_result *big)
{
    err e = {0};
    coll_ctx *c = coll_ctx_new(t);
    coll_ctx_without(c, off);
    coll_req r = *q;
    coll_result a = {0};
    assert_int_equal(coll_predict(c, &r, &a, &e), 0);
    r.bytes *= 2;
    assert_int_equal(coll_predict(c, &r, big, &e), 0);
    coll_ctx_free(c);
    return (double)(big->time_ps - a.time_ps) * 1e-12;
}

/* NCCL_P2P_DISABLE=1 on two H200s (h200-2x): Ring Simple over SHM, 4
 * channels, each one block per rank running its loop in program order
 * (docs/model.md "SHM in program order"): per loop and channel a send (its
 * stores into the peer's host FIFO), a recvReduceCopySend (its loads from
 * its own host FIFO and its stores into the peer's, together) and the last
 * receive (its loads alone), each 2 slices of 1 MiB. The 4 channels run
 * alike, so each phase is bound on each GPU by one budget: the send by the
 * GPU's PCIe link up under SM stores of 128 B (51.54 GB/s / ((128 + 24) /
 * 128 / ((256 + 24) / 256)) = 51.54 / 1.085714 = 47.47 GB/s; the blocks'
 * ceilings, 4 x 42.1, and host_sm_mixed, 79, do not bind); the
 * recvReduceCopySend by host_sm_mixed, loads and stores at once, 79 / 2 =
 * 39.5 GB/s; the last receive by the link down under 128 B loads, 47.47
 * (the blocks, 64 KiB in flight: 4 x 8 x 6.07 = 194 GB/s). Between 128 and
 * 256 MiB each phase moves 64 MiB more per GPU, in 8 more loops; the
 * deliveries hide behind the slices (a slice takes 22 us or more, a
 * delivery 2 x 0.8177 us of writes into host memory), each loop adds its 6
 * slices' steps, 6 x 1.0 us, and each of its 4 receiving slices (2 of the
 * recvReduceCopySend, 2 of the last receive) its block's poll of the tail
 * in host memory, one read round trip 2 x (515.2 + 202.5 + 100) = 1635.4 ns
 * (the preset's read_extra_lat 0) in the block's program order
 * (cb_ring_shm_poll_ps: both ranks receive over SHM), and each of those 4
 * slices its loads' round trip, which the blocks' rate does not hold where
 * the link binds (a step takes max(its rounds' trips, L + bytes / link):
 * docs/model.md "A block's loads from host memory"): 64 MiB x (2 / 47.47 +
 * 1 / 39.5) GB/s + 8 x (6 + 4 x 1.6354 + 4 x 1.6354) = 2827.4 + 1699.0 +
 * 152.7 = 4679.1 us (fixed costs cancel), tolerance 1%. Without the poll in
 * program order (--without shm-poll, the poll part of the hidden
 * delivery): 4626.8 us.
 * Without the in-flight scaling (--without host-inflight) a receiver's
 * block loads at the copy kernel's 8 KiB rate, 4 x 6.07 = 24.28 GB/s, which
 * binds the two phases that load, and each of their 4 slices per loop pays
 * its read's round trip too (the rate no longer holds it) besides the poll:
 * 64 MiB x (1 / 47.47 + 2 / 24.28) + 8 x (6 + 2 x 4 x 1.6354) = 1413.7 +
 * 5527.9 + 152.7 = 7094.2 us, 1%. */
static void test_shm_channel_bound(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    const double link = 51.54e9 / ((128.0 + 24) / 128 / ((256.0 + 24) / 256)), mib64 = 67108864;
    const double want[3] = {mib64 * (2 / link + 2 / 79e9) + 8 * (6 + 2 * 4 * 1.6354) * 1e-6,
                            mib64 * (2 / link + 2 / 79e9) + 8 * (6 + 4 * 1.6354) * 1e-6,
                            mib64 * (1 / link + 2 / (4 * 6.07e9)) +
                                8 * (6 + 2 * 4 * 1.6354) * 1e-6};
    const int off[3] = {0, FAB_NO_SHM_POLL, FAB_NO_HOST_INFLIGHT};
    coll_req q;
    coll_req_init(&q, t);
    q.env.p2p_disable = 1;
    q.bytes = (uint64_t)128 << 20;
    for (int k = 0; k < 3; k++) {
        coll_result r = {0};
        double dt = doubling_s(t, &q, off[k], &r);
        assert_int_equal(r.algo, ALGO_RING);
        assert_int_equal(r.proto, PROTO_SIMPLE);
        assert_int_equal(r.channels, 4);
        if (fabs(dt - want[k]) > 0.01 * want[k])
            fail_msg("SHM case %d: 128 -> 256 MiB adds %.1f us, hand-derived %.1f us", k, dt * 1e6,
                     want[k] * 1e6);
    }
    topo_free(t);
}

/* The prediction of q with the mechanisms off switched off, in us. */
static double without_us(const topo *t, const coll_req *q, int off)
{
    err e = {0};
    coll_ctx *c = coll_ctx_new(t);
    coll_ctx_without(c, off);
    coll_req r = *q;
    coll_result a = {0};
    assert_int_equal(coll_predict(c, &r, &a, &e), 0);
    coll_ctx_free(c);
    return (double)a.time_ps * 1e-6;
}

/* A Simple receive's poll of its tail in host memory, in its block's program
 * order (cb_ring_shm_poll_ps; src/device/prims_simple.h waitPeer).
 * h200-2x, NCCL_P2P_DISABLE=1, 1 MiB: Ring Simple on 4 channels, one loop of
 * 128 KiB chunks per channel in 2 slices, each block running send, send,
 * recvReduceCopySend x 2, recv x 2, every slice bound by the block's order
 * (a slice takes 6.5-7.9 us, a delivery 1.64 us): the 4 receiving slices
 * each wait one poll, 1.6354 us, after the slice before, so the poll adds
 * 4 x 1.6354 = 6.54 us to the --without shm-poll time (where it overlaps).
 * The 4 GPUs of one socket of rtxpro6000-8x-pcie5-2s, 1 MiB: a ring of P2P
 * hops inside each switch and SHM hops across (0 -> 1 P2P, 1 -> 2 SHM, 2 ->
 * 3 P2P, 3 -> 0 SHM); each SHM receiver's sender receives over P2P and runs
 * ahead, so its tail covers the slices after it: no poll charged, the same
 * time as without the mechanism. */
static void test_shm_poll(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    coll_req q;
    coll_req_init(&q, t);
    q.env.p2p_disable = 1;
    q.bytes = 1 << 20;
    double on = without_us(t, &q, 0), off = without_us(t, &q, FAB_NO_SHM_POLL);
    NEAR(on - off, 4 * 1.6354, 0.01 * 4 * 1.6354);
    topo_free(t);
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    coll_req_init(&q, t);
    q.nranks = 4;
    q.bytes = 1 << 20;
    on = without_us(t, &q, 0);
    off = without_us(t, &q, FAB_NO_SHM_POLL);
    assert_true(on > 0);
    NEAR(on, off, 1e-9);
    topo_free(t);
}

/* NCCL's Simple loads in flight per worker, ncclCollUnroll (src/include/
 * device.h, v2.27-v2.30): 8 from SM 80 (H100/H200, A100, RTX 4090), 6 on SM
 * 12.x (RTX 5090, RTX PRO 6000), 4 below SM 80 (RTX 2080 Ti); unknown = SM
 * 80. A copying thread keeps unroll x 16 B: an SHM receiver's block of 512
 * workers 64 KiB on SM 90 and 89, 48 KiB on SM 120, 32 KiB on SM 75; LL and
 * LL128 keep their 16 and 64 B. */
static void test_coll_unroll(void **state)
{
    (void)state;
    assert_int_equal(nccl_coll_unroll(90), 8);
    assert_int_equal(nccl_coll_unroll(89), 8);
    assert_int_equal(nccl_coll_unroll(80), 8);
    assert_int_equal(nccl_coll_unroll(100), 8);
    assert_int_equal(nccl_coll_unroll(120), 6);
    assert_int_equal(nccl_coll_unroll(121), 6);
    assert_int_equal(nccl_coll_unroll(75), 4);
    assert_int_equal(nccl_coll_unroll(0), 8);
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    coll_build b = {.t = t, .proto = PROTO_SIMPLE};
    const int sm[4] = {90, 89, 120, 75};
    const double want[4] = {65536, 65536, 49152, 32768};
    for (int k = 0; k < 4; k++) {
        topo_params_mut(t)->gpu_sm = sm[k];
        NEAR(512 * nccl_copy_thread_B(&b), want[k], 1e-9);
    }
    b.proto = PROTO_LL;
    NEAR(nccl_copy_thread_B(&b), 16, 1e-9);
    b.proto = PROTO_LL128;
    NEAR(nccl_copy_thread_B(&b), 64, 1e-9);
    topo_free(t);
}

/* Ring Simple on one forced channel between the two H200s (h200-2x; NCCL's
 * Simple block keeps 512 workers x 8 x 16 B = 64 KiB in flight, so its
 * depth would allow 8 x cta_store = 153 GB/s and the block's ceilings bind,
 * docs/model.md "A block's ceiling"): per loop of 2 MiB chunks the block's
 * send stores into the peer at the far ceiling 42.1 GB/s; its
 * recvReduceCopySend stores into the peer and into its own buffer, 48.9 /
 * 42.1 + 1 = 2.1615 ceiling bytes per byte: 22.62 GB/s; its last receive
 * copies the FIFO into its buffer at the ceiling 48.9 (NVLink under one
 * block, 369.1 / 4.17 = 89 GB/s, does not bind; each 1 MiB slice takes 24 us
 * or more, its delivery 2 x 0.6786 us, hidden). 128 -> 256 MiB adds 32
 * loops, 64 MiB per phase, and 6 slices' steps of 1.0 us each loop: 64 MiB
 * x (1 / 42.1 + 2.1615 / 48.9 + 1 / 48.9) GB/s + 32 x 6 us = 5932.8 + 192
 * = 6124.8 us, 0.5% (the copy's loads of its FIFO hit L2, twice the depth's
 * rate, 16 x 19.25, still above the ceiling). Without the ceiling
 * (block-ceiling off) the reference block, 19.25 GB/s for both steps that
 * send, and the copy at its depth from L2, 2 x 8 x 19.25: 64 MiB x (2 + 1 /
 * 16) / 19.25 GB/s + 192 = 7382.2 us, 0.5%. */
static void test_ring_simple_ceiling(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    const double m = 67108864;
    const double want[2] = {m * (1 / 42.1e9 + (48.9 / 42.1 + 1) / 48.9e9 + 1 / 48.9e9) + 192e-6,
                            m * 2.0625 / 19.25e9 + 192e-6};
    const int off[2] = {0, FAB_NO_BLOCK_CEIL};
    coll_req q;
    coll_req_init(&q, t);
    q.algo = ALGO_RING;
    q.proto = PROTO_SIMPLE;
    q.channels = 1;
    q.bytes = (uint64_t)128 << 20;
    for (int k = 0; k < 2; k++) {
        coll_result r = {0};
        double dt = doubling_s(t, &q, off[k], &r);
        if (fabs(dt - want[k]) > 0.005 * want[k])
            fail_msg("case %d: 128 -> 256 MiB adds %.1f us, hand-derived %.1f us", k, dt * 1e6,
                     want[k] * 1e6);
    }
    topo_free(t);
}

/* Ring LL on one forced channel between the two H200s (h200-2x, 512
 * threads: each keeps one 16-byte line, 8 bytes of data, in flight, 8 KiB a
 * block: the reference block, 19.25 GB/s of wire bytes, 9.625 of data; the
 * ceilings, 48.9 / (2 x 48.9 / 42.1) = 21.05 and lower with the local
 * store, 14.7, and NVLink under one block, 89 GB/s, do not bind). A loop is
 * 2 steps of 32 KiB of data each way and the last receive's copy of 32 KiB
 * out of the FIFO, which the peer has just written into this GPU's memory:
 * its loads hit L2, twice as fast (l2_load_speedup 2): 32 KiB / 19.25 GB/s.
 * Per loop: 2 x 32768 / 9.625e9 + 32768 / 19.25e9 + 3 steps x 0.2 us + the
 * last step's latency 2 x 678.6 ns (its first lines are forwarded as they
 * come: only a loop's last step waits for its latency) = 6.8090 + 1.7022 +
 * 0.6 + 1.3572 = 10.468 us; 16 -> 32 MiB adds 256 loops: 2679.9 us, 0.5%.
 * Without fifo-l2 the copy takes 3.4045 us: 12.171 us a loop, 3115.8 us. */
static void test_ring_ll_fifo_l2(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    const double loop[2] = {2 * 32768 / 9.625e9 + 32768 / 19.25e9 + 0.6e-6 + 1.3572e-6,
                            3 * 32768 / 9.625e9 + 0.6e-6 + 1.3572e-6};
    const int off[2] = {0, FAB_NO_FIFO_L2};
    coll_req q;
    coll_req_init(&q, t);
    q.algo = ALGO_RING;
    q.proto = PROTO_LL;
    q.channels = 1;
    q.bytes = (uint64_t)16 << 20;
    for (int k = 0; k < 2; k++) {
        coll_result r = {0};
        double dt = doubling_s(t, &q, off[k], &r), want = 256 * loop[k];
        if (fabs(dt - want) > 0.005 * want)
            fail_msg("case %d: 16 -> 32 MiB adds %.1f us, hand-derived %.1f us", k, dt * 1e6,
                     want * 1e6);
    }
    topo_free(t);
}

/* A streamed task graph (added as the run reaches it, ended tasks dropped)
 * must give the same run as the whole graph built first: the same time to
 * the picosecond and the same number of engine events (tolerance 0), for
 * every ring-family request on presets with NVLink and PCIe (including
 * multi-loop pipelines, several channels and SHM hops), with the same
 * critical-path breakdown, and the timeline of a streamed run must list
 * every task. */
static void test_stream_equals_whole(void **state)
{
    (void)state;
    const char *presets[] = {"h200-8x-nvswitch", "rtxpro6000-8x-pcie5-2s", "nvswitch-64",
                             "pcie-16"};
    for (size_t ti = 0; ti < sizeof presets / sizeof *presets; ti++) {
        err e = {0};
        topo *t = NULL;
        assert_int_equal(topo_load(presets[ti], &t, &e), 0);
        coll_ctx *whole = coll_ctx_new(t), *stream = coll_ctx_new(t);
        coll_ctx_tune(whole, 0, 0);
        coll_ctx_tune(stream, 1, 0);
        int ng = topo_ngpus(t), gs[] = {2, 3, ng};
        for (int gi = 0; gi < 3; gi++)
            for (int k = COLL_ALLREDUCE; k <= COLL_ALLGATHER; k++)
                for (int p = PROTO_LL; p < PROTO_N; p++)
                    for (uint64_t by = 1024; by <= (64u << 20); by *= 64) {
                        coll_req q;
                        coll_req_init(&q, t);
                        q.kind = (coll_kind)k;
                        q.algo = ALGO_RING;
                        q.proto = (coll_proto)p;
                        q.nranks = gs[gi];
                        q.bytes = by;
                        q.channels = by > 65536 ? 3 : 0;
                        coll_result a = {0}, b = {0};
                        /* A request NCCL would refuse (LL128 off NVLink) is
                         * refused by both alike. */
                        int ra = coll_predict(whole, &q, &a, &e);
                        assert_int_equal(coll_predict(stream, &q, &b, &e), ra);
                        if (ra)
                            continue;
                        if (a.time_ps != b.time_ps || a.events != b.events ||
                            a.fixed_ps != b.fixed_ps || a.barrier_ps != b.barrier_ps ||
                            a.transfer_ps != b.transfer_ps || a.contention_ps != b.contention_ps)
                            fail_msg("%s g=%d kind %d proto %d %llu B: whole %lld ps %llu ev, "
                                     "streamed %lld ps %llu ev", presets[ti], gs[gi], k, p,
                                     (unsigned long long)by, (long long)a.time_ps,
                                     (unsigned long long)a.events, (long long)b.time_ps,
                                     (unsigned long long)b.events);
                    }
        /* The custom kernels run phase by phase (coll_oneshot.c): the same
         * events and times as built whole, eager and in a graph, on 2 to 64
         * GPUs (above 64 the barriers' flags go out as groups). */
        static const coll_algo custom[] = {ALGO_ONESHOT, ALGO_ONESHOT_PUSH, ALGO_TWOSHOT,
                                           ALGO_TWOSHOT_PUSH};
        for (int gi = 0; gi < 3; gi++)
            for (int ai = 0; ai < 4; ai++)
                for (int graph = 0; graph < 2; graph++)
                    for (uint64_t by = 1024; by <= (64u << 20); by *= 64) {
                        coll_req q;
                        coll_req_init(&q, t);
                        q.algo = custom[ai];
                        q.nranks = gs[gi];
                        q.bytes = by;
                        q.graph = graph;
                        coll_result a = {0}, b = {0};
                        int ra = coll_predict(whole, &q, &a, &e);
                        assert_int_equal(coll_predict(stream, &q, &b, &e), ra);
                        if (!ra && (a.time_ps != b.time_ps || a.events != b.events ||
                                    a.fixed_ps != b.fixed_ps || a.barrier_ps != b.barrier_ps ||
                                    a.transfer_ps != b.transfer_ps ||
                                    a.contention_ps != b.contention_ps))
                            fail_msg("%s g=%d algo %d graph %d %llu B: whole %lld ps %llu ev, "
                                     "streamed %lld ps %llu ev", presets[ti], gs[gi], ai, graph,
                                     (unsigned long long)by, (long long)a.time_ps,
                                     (unsigned long long)a.events, (long long)b.time_ps,
                                     (unsigned long long)b.events);
                    }
        coll_ctx_free(whole);
        coll_ctx_free(stream);
        topo_free(t);
    }
    /* Timeline of a streamed 8-GPU ring (nothing dropped when a timeline is
     * asked): 8 kernel tasks + 2 x 7 steps x 8 ranks, each a send and its
     * delivery, + 8 final receives = 240 task events, and one span per rank
     * (its kernel on its stream lane): 248. */
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("nvswitch-8", &t, &e), 0);
    coll_ctx *c = coll_ctx_new(t);
    coll_req q;
    coll_req_init(&q, t);
    q.algo = ALGO_RING;
    q.proto = PROTO_SIMPLE;
    q.channels = 1;
    q.bytes = 8192;
    coll_result r = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(coll_predict_timeline(c, &q, &r, f, &e), 0);
    fclose(f);
    int nx = 0;
    for (const char *x = buf; (x = strstr(x, "\"ph\":\"X\"")); x++)
        nx++;
    assert_int_equal(nx, 248);
    free(buf);
    coll_ctx_free(c);
    topo_free(t);
}

/* Ring hops symmetric under a rotation r -> r + p (coll_ring.c
 * ring_period): only ranks 0..p-1 run, each standing for its class r mod p.
 * The predicted time and its critical-path breakdown must equal the
 * unbundled run's to the picosecond (tolerance 0) for every ring-family
 * request on every preset, and the bundled run never uses more engine
 * events. Where the proof holds the count must drop: the NVLink crossbars
 * (p = 1); the pcie-N trees with every hop a P2P write (NCCL_P2P_LEVEL=SYS:
 * GPU pairs on a switch, two switches per socket, sockets in a ring, so
 * hop r + 4 is hop r's image; p = 4 at 8 GPUs and above); with PHB, where
 * the hop between sockets goes through the receiver's host memory (SHM) and
 * no two hops share a link; and with the default level, where the hops
 * between switches go through host memory too and hops 4s+1, 4s+3 and 4s+5
 * share links (a root port's link to its CPU, a socket's host memory): p = 4
 * on the quotient that folds every socket onto socket 0 (fabric_rotation_quotient).
 * pcie-N-star is no rotation's image: the same events. */
static void test_bundle_equals_unbundled(void **state)
{
    (void)state;
    static const struct {
        const char *topo;
        int level, fewer; /* NCCL_P2P_LEVEL (0: default); bundled events fewer at ng */
    } cases[] = {
        {"nvswitch-8", 0, 1},       {"h200-8x-nvswitch", 0, 1}, {"nvswitch-64", 0, 1},
        {"h200-2x", 0, 0},          {"rtxpro6000-8x-pcie5-1s", 0, 0},
        {"rtxpro6000-8x-pcie5-2s", 0, 0}, {"rtxpro6000-8x-pcie5-2s", PATH_SYS, 0},
        {"pcie-8", PATH_SYS, 1},    {"pcie-16", PATH_SYS, 1},   {"pcie-64", PATH_SYS, 1},
        {"pcie-16-star", PATH_SYS, 0}, {"pcie-8", 0, 1},        {"pcie-16", 0, 1},
        {"pcie-64", 0, 1},          {"pcie-16", PATH_PHB, 1},
        {"pcie-64", PATH_PHB, 1},
    };
    for (size_t ti = 0; ti < sizeof cases / sizeof *cases; ti++) {
        err e = {0};
        topo *t = NULL;
        assert_int_equal(topo_load(cases[ti].topo, &t, &e), 0);
        coll_ctx *sep = coll_ctx_new(t), *bun = coll_ctx_new(t);
        coll_ctx_tune(sep, 1, 0);
        int ng = topo_ngpus(t), gs[] = {3, ng};
        for (int gi = 0; gi < 2; gi++)
            for (int k = COLL_ALLREDUCE; k <= COLL_ALLGATHER; k++)
                for (int p = PROTO_LL; p < PROTO_N; p++)
                    for (uint64_t by = 1024; by <= (64u << 20); by *= 64) {
                        coll_req q;
                        coll_req_init(&q, t);
                        q.kind = (coll_kind)k;
                        q.algo = ALGO_RING;
                        q.proto = (coll_proto)p;
                        q.nranks = gs[gi];
                        q.bytes = by;
                        if (cases[ti].level)
                            q.env.p2p_level = cases[ti].level;
                        coll_result a = {0}, b = {0};
                        int ra = coll_predict(sep, &q, &a, &e);
                        assert_int_equal(coll_predict(bun, &q, &b, &e), ra);
                        if (ra)
                            continue;
                        int fewer = cases[ti].fewer && gs[gi] == ng;
                        if (a.time_ps != b.time_ps || a.fixed_ps != b.fixed_ps ||
                            a.barrier_ps != b.barrier_ps || a.transfer_ps != b.transfer_ps ||
                            a.contention_ps != b.contention_ps || b.events > a.events ||
                            (fewer && b.events >= a.events))
                            fail_msg("%s%s g=%d kind %d proto %d %llu B: apart %lld ps %llu ev, "
                                     "bundled %lld ps %llu ev", cases[ti].topo,
                                     cases[ti].level ? " level" : "", gs[gi], k, p,
                                     (unsigned long long)by, (long long)a.time_ps,
                                     (unsigned long long)a.events, (long long)b.time_ps,
                                     (unsigned long long)b.events);
                    }
        coll_ctx_free(sep);
        coll_ctx_free(bun);
        topo_free(t);
    }
}

/* The custom kernels bundled (coll_oneshot.c oneshot_period): where rank
 * r + p's exchange and flags are rank r's images under a rotation of the
 * links, only ranks 0..p-1 run, on the quotient (fabric_rotation_quotient_fn),
 * their flags as delays of their route latency (a flag carries no bytes: its
 * flow takes that and nothing else). Times and breakdowns must equal the
 * unbundled run's, every flag a 0-byte flow and every rank's flows apart, to
 * the picosecond (tolerance 0), on crossbars (one-shot: every rank's writes
 * into all peers cross every GPU's NVLink, so the saturation rule counts the
 * senders each bundled crossing stands for) and PCIe trees, at 3 ranks and
 * all, for small and large messages; never with more engine events, and
 * fewer where the rotation holds: the crossbars (p = 1) and pcie-12 (three
 * sockets in a ring, p = 4). On pcie-16 (four sockets) a GPU two sockets
 * away is reached one of two equal ways, chosen by node order, which no
 * rotation maps onto itself: every rank runs; so on rtxpro6000-8x-pcie5-2s,
 * whose uplinks collapse. */
static void test_custom_bundles(void **state)
{
    (void)state;
    static const char *const topos[] = {"nvswitch-8", "h200-2x", "rtxpro6000-8x-pcie5-2s",
                                        "pcie-16", "nvswitch-64", "pcie-12"};
    /* bundled (fewer events at all ranks): bit i for algos[i] */
    static const int fewer[] = {0xf, 0xf, 0, 0, 0xf, 0xf};
    static const coll_algo algos[] = {ALGO_ONESHOT, ALGO_ONESHOT_PUSH, ALGO_TWOSHOT,
                                      ALGO_TWOSHOT_PUSH};
    for (size_t ti = 0; ti < sizeof topos / sizeof *topos; ti++) {
        err e = {0};
        topo *t = NULL;
        assert_int_equal(topo_load(topos[ti], &t, &e), 0);
        coll_ctx *sep = coll_ctx_new(t), *bun = coll_ctx_new(t);
        coll_ctx_tune(sep, 1, 0);
        int ng = topo_ngpus(t), gs[] = {ng < 3 ? ng : 3, ng};
        for (int gi = 0; gi < 2; gi++)
            for (size_t ai = 0; ai < sizeof algos / sizeof *algos; ai++)
                for (uint64_t by = 1024; by <= (64u << 20); by *= 256) {
                    coll_req q;
                    coll_req_init(&q, t);
                    q.algo = algos[ai];
                    q.nranks = gs[gi];
                    q.bytes = by;
                    coll_result a = {0}, b = {0};
                    int ra = coll_predict(sep, &q, &a, &e);
                    assert_int_equal(coll_predict(bun, &q, &b, &e), ra);
                    if (!ra && (a.time_ps != b.time_ps || a.fixed_ps != b.fixed_ps ||
                                a.barrier_ps != b.barrier_ps || a.transfer_ps != b.transfer_ps ||
                                a.contention_ps != b.contention_ps || b.events > a.events ||
                                ((fewer[ti] >> ai & 1) && gi == 1 && b.events >= a.events)))
                        fail_msg("%s g=%d algo %d %llu B: apart %lld ps %llu ev (%lld %lld %lld "
                                 "%lld), bundled %lld ps %llu ev (%lld %lld %lld %lld)", topos[ti],
                                 gs[gi], (int)algos[ai], (unsigned long long)by,
                                 (long long)a.time_ps, (unsigned long long)a.events,
                                 (long long)a.fixed_ps, (long long)a.barrier_ps,
                                 (long long)a.transfer_ps, (long long)a.contention_ps,
                                 (long long)b.time_ps, (unsigned long long)b.events,
                                 (long long)b.fixed_ps, (long long)b.barrier_ps,
                                 (long long)b.transfer_ps, (long long)b.contention_ps);
                }
        coll_ctx_free(sep);
        coll_ctx_free(bun);
        topo_free(t);
    }
}

/* The cache's link use (coll_predict_links): a 2-rank Simple ring allreduce
 * of S = 1 MiB on h200-2x sends 2(n-1)/n x S = S from each GPU to the other
 * over gpuA>nvs0 and nvs0>gpuB, so each of those four links carries exactly
 * 1048576 bytes (tolerance 1e-6 relative: sums of slices) and was busy for
 * part of the collective (0 < busy <= its time). The result equals
 * coll_predict's, which was cached first without link use: the unbundled
 * re-run adds it and is not counted as a new prediction. */
static void test_link_use(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    coll_ctx *c = coll_ctx_new(t);
    coll_req q;
    coll_req_init(&q, t);
    q.algo = ALGO_RING;
    q.proto = PROTO_SIMPLE;
    q.bytes = 1 << 20;
    coll_result a, b;
    assert_int_equal(coll_predict(c, &q, &a, &e), 0);
    assert_int_equal((int)coll_ctx_computed(c), 1);
    const coll_link_use *use = NULL;
    int nl = 0;
    assert_int_equal(coll_predict_links(c, &q, &b, &use, &nl, &e), 0);
    assert_int_equal((int)coll_ctx_computed(c), 1);
    assert_int_equal(b.time_ps, a.time_ps);
    assert_non_null(use);
    int seen = 0;
    for (int i = 0; i < nl; i++) {
        const char *n = coll_ctx_link_name(c, i);
        if (strcmp(n, "gpu0>nvs0") && strcmp(n, "nvs0>gpu1") && strcmp(n, "gpu1>nvs0") &&
            strcmp(n, "nvs0>gpu0"))
            continue;
        seen++;
        assert_true(fabs(use[i].bytes - 1048576.0) <= 1e-6 * 1048576.0);
        assert_true(use[i].busy_ps > 0 && use[i].busy_ps <= a.time_ps);
    }
    assert_int_equal(seen, 4);
    coll_ctx_free(c);
    topo_free(t);
}


/* A barrier's flags as latency edges into joins (cb_barrier, sim/sched.h
 * sched_dep_lat) against the same flags as delay tasks: on every preset
 * (the named ones, nvswitch-N, pcie-N and pcie-N-star at 16 and 64 GPUs),
 * each custom kernel and the push all-to-all, eager and in a graph (and each
 * with NCCL_P2P_LEVEL=SYS, as the bench runs pcie-64), on 2, 3,
 * 17 and all GPUs (up to 64: beyond, the flags go out as groups), the same
 * time and critical-path breakdown to the picosecond (tolerance 0), with
 * fewer engine events wherever a barrier has more than one flag per rank. */
static void test_flag_edges(void **state)
{
    (void)state;
    const char *presets[] = {"rtxpro6000-8x-pcie5-2s", "rtxpro6000-8x-pcie5-1s",
                             "h200-8x-nvswitch", "h100-8x-nvswitch", "h200-1x", "h200-2x",
                             "nvswitch-16", "nvswitch-64", "pcie-16", "pcie-64",
                             "pcie-16-star", "pcie-64-star"};
    static const coll_algo custom[] = {ALGO_ONESHOT, ALGO_ONESHOT_PUSH, ALGO_TWOSHOT,
                                       ALGO_TWOSHOT_PUSH};
    int fewer = 0;
    for (size_t ti = 0; ti < sizeof presets / sizeof *presets; ti++) {
        err e = {0};
        topo *t = NULL;
        assert_int_equal(topo_load(presets[ti], &t, &e), 0);
        coll_ctx *tasks = coll_ctx_new(t), *edges = coll_ctx_new(t);
        coll_ctx_flag_tasks(tasks, 1);
        int ng = topo_ngpus(t), gs[] = {2, 3, 17, ng};
        for (int gi = 0; gi < 4; gi++) {
            if (gs[gi] > ng || gs[gi] > 64 || (gi == 2 && ng == 17))
                continue;
            for (int ai = 0; ai < 5; ai++)
                for (int graph = 0; graph < 4; graph++)
                    for (uint64_t by = 1024; by <= (64u << 20); by *= 256) {
                        coll_req q;
                        coll_req_init(&q, t);
                        if (ai < 4) {
                            q.algo = custom[ai];
                        } else {
                            q.kind = COLL_ALLTOALL;
                            q.algo = ALGO_ONESHOT_PUSH;
                        }
                        q.nranks = gs[gi];
                        q.bytes = by;
                        q.graph = graph & 1;
                        if (graph > 1)
                            assert_int_equal(coll_env_set(&q.env, "NCCL_P2P_LEVEL=SYS", &e), 0);
                        coll_result a = {0}, b = {0};
                        int ra = coll_predict(tasks, &q, &a, &e);
                        assert_int_equal(coll_predict(edges, &q, &b, &e), ra);
                        if (ra)
                            continue;
                        if (a.time_ps != b.time_ps || a.fixed_ps != b.fixed_ps ||
                            a.barrier_ps != b.barrier_ps || a.transfer_ps != b.transfer_ps ||
                            a.contention_ps != b.contention_ps || b.events > a.events)
                            fail_msg("%s g=%d algo %d graph %d %llu B: flag tasks %lld ps "
                                     "(%lld %lld %lld %lld) %llu ev, edges %lld ps "
                                     "(%lld %lld %lld %lld) %llu ev", presets[ti], gs[gi], ai,
                                     graph, (unsigned long long)by, (long long)a.time_ps,
                                     (long long)a.fixed_ps, (long long)a.barrier_ps,
                                     (long long)a.transfer_ps, (long long)a.contention_ps,
                                     (unsigned long long)a.events, (long long)b.time_ps,
                                     (long long)b.fixed_ps, (long long)b.barrier_ps,
                                     (long long)b.transfer_ps, (long long)b.contention_ps,
                                     (unsigned long long)b.events);
                        fewer += b.events < a.events;
                    }
        }
        coll_ctx_free(tasks);
        coll_ctx_free(edges);
        topo_free(t);
    }
    assert_true(fewer > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_simple),   cmocka_unit_test(test_ring_ll_small),
        cmocka_unit_test(test_ring_channels_share), cmocka_unit_test(test_alltoall_channels), cmocka_unit_test(test_oneshot_pull),
        cmocka_unit_test(test_read_bound),    cmocka_unit_test(test_twoshot_and_push),
        cmocka_unit_test(test_fence_ack),
        cmocka_unit_test(test_barrier_fence),
        cmocka_unit_test(test_block_wait),
        cmocka_unit_test(test_alltoall_push),
        cmocka_unit_test(test_serial_loads), cmocka_unit_test(test_first_round), cmocka_unit_test(test_round_skew),
        cmocka_unit_test(test_own_round), cmocka_unit_test(test_whole_rounds),
        cmocka_unit_test(test_l2_sources),
        cmocka_unit_test(test_tree_chain),    cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_copy_setup),    cmocka_unit_test(test_ring_cta_rate),
        cmocka_unit_test(test_ring_ll128_order),
        cmocka_unit_test(test_cache_and_env),
        cmocka_unit_test(test_stream_equals_whole), cmocka_unit_test(test_flag_edges), cmocka_unit_test(test_shm_channel_bound),
        cmocka_unit_test(test_shm_poll),
        cmocka_unit_test(test_ring_simple_ceiling), cmocka_unit_test(test_coll_unroll),
        cmocka_unit_test(test_ring_ll_fifo_l2),
        cmocka_unit_test(test_bundle_equals_unbundled), cmocka_unit_test(test_custom_bundles),
        cmocka_unit_test(test_link_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
