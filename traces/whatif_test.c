/* What-if against hand-derived expectations: the expert-union formula, the
 * bytes a forward reads from the model's configuration, the breakdown that
 * adds up to the cycle, phase-named overrides that leave the baseline
 * alone, the break-even solutions, the calibration recovering parameters it
 * was not given (synthetic observations) and refusing what the data cannot
 * tell, and scenario files that round-trip. Uses the real collective model
 * on the 2-socket preset. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "traces/whatif.h"

#define REL(a, b, tol)                                                         \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        if (!(fabs(a_ - b_) <= (tol) * fabs(b_)))                              \
            fail_msg("%s = %.9g, expected %s = %.9g", #a, a_, #b, b_);         \
    } while (0)

static whatif_ctx *ctx;

static void run(const whatif_scenario *s, whatif_result *r)
{
    err e = {0};
    if (whatif_run_ctx(ctx, s, r, &e) != 0)
        fail_msg("%s", e.msg);
}

static void set(whatif_scenario *s, const char *k, const char *v)
{
    err e = {0};
    if (whatif_set(s, k, v, &e) != 0)
        fail_msg("%s=%s: %s", k, v, e.msg);
}

/* s written out as a scenario file and loaded back into back. */
static void write_load(const whatif_scenario *s, whatif_scenario *back)
{
    err e = {0};
    char path[] = "/tmp/collsim_scenXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_int_equal(whatif_write(s, f, &e), 0);
    fclose(f);
    int rc = whatif_scenario_load(path, back, &e);
    unlink(path);
    if (rc != 0)
        fail_msg("%s", e.msg);
}

/* The built-in scenario without its observations (nothing fitted). */
static void base(whatif_scenario *s)
{
    err e = {0};
    assert_int_equal(whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", s, &e), 0);
    set(s, "observe", "none");
}

static double sum_parts(const whatif_parts *p)
{
    return p->compute_us + p->comm_us + p->launch_us + p->host_us + p->wait_us + p->idle_us;
}

static void test_distinct_experts(void **state)
{
    (void)state;
    /* one token reads its k experts */
    REL(whatif_distinct_experts(384, 8, 0, 1), 8, 1e-12);
    /* two tokens: 2k - k^2/E = 16 - 64/384 = 15.8333 (the second token
     * misses each of the first one's experts with probability 1 - k/E) */
    REL(whatif_distinct_experts(384, 8, 0, 2), 16 - 64.0 / 384, 1e-12);
    /* three tokens: E - E (1 - k/E)^3 = 384 - 376^3 / 384^2 = 23.5035 */
    REL(whatif_distinct_experts(384, 8, 0, 3), 384 - 53157376.0 / 147456, 1e-12);
    /* a large batch reads (almost) every expert */
    REL(whatif_distinct_experts(384, 8, 0, 4096), 384, 1e-9);
    /* full skew: every token picks the same k */
    REL(whatif_distinct_experts(384, 8, 1, 3), 8, 1e-12);
    /* skew 0.5: a pool of 8 + 376/2 = 196 experts; two tokens 16 - 64/196 */
    REL(whatif_distinct_experts(384, 8, 0.5, 2), 16 - 64.0 / 196, 1e-12);
    /* top-k of all experts: all of them */
    REL(whatif_distinct_experts(8, 8, 0, 3), 8, 1e-12);
}

static void test_forward_bytes(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    set(&s, "mode", "decode");
    set(&s, "efficiency", "0.5");
    whatif_result r;
    run(&s, &r);
    /* Per GPU at TP 8, bf16 except INT4 experts (0.5625 B per weight):
     *   attention: 7168 x (1536 + 512 + 64) x 2 replicated = 30,277,632
     *     + (1536 x 64 x 192 + 512 x 64 x 256 + 64 x 128 x 7168) x 2 / 8 = 21,495,808
     *     + KV 4096 x 576 x 2 = 4,718,592; per layer 56,492,032
     *   dense MLP 3 x 7168 x 18432 x 2 / 8 = 99,090,432 (1 layer)
     *   router 7168 x 384 x 2 + shared 3 x 7168 x 2048 x 2 / 8 = 16,515,072
     *   one expert 3 x 7168 x 2048 x 0.5625 / 8 = 3,096,576, 8 per token
     *   LM head 163840 x 7168 x 2 / 8 = 293,601,280
     * decode: 61 x 56,492,032 + 99,090,432 + 60 x (16,515,072 + 8 x
     * 3,096,576) + 293,601,280 = 6,315,966,464 B, experts 1,486,356,480 */
    REL(r.target_MB, 6315.966464, 1e-12);
    REL(r.expert_MB, 1486.35648, 1e-12);
    /* at 1792 GB/s x 0.5 = 896 GB/s: the expert reads take 1658.88 us, the
     * rest of the compute 5390.19 us (about 250 ops, each rounded to whole
     * picoseconds: within 1.3e-4 us, so 1e-7 relative) */
    REL(r.parts.expert_us, 1486356480.0 / 896e3, 1e-7);
    REL(r.parts.compute_us - r.parts.expert_us, (6315966464.0 - 1486356480.0) / 896e3, 1e-7);
    /* verify over 3 tokens: 23.5035 distinct experts instead of 8 */
    set(&s, "mode", "eagle3");
    run(&s, &r);
    double d3 = 384 - 53157376.0 / 147456;
    REL(r.distinct_experts, d3, 1e-12);
    REL(r.expert_MB, 60 * d3 * 3096576 / 1e6, 1e-12);
    REL(r.target_MB, (6315966464.0 + 60 * (d3 - 8) * 3096576) / 1e6, 1e-12);
    /* batch 2 decode: 2 tokens (15.83 experts) and twice the KV reads */
    set(&s, "mode", "decode");
    set(&s, "batch", "2");
    run(&s, &r);
    REL(r.target_MB, (6315966464.0 + 60 * (16 - 64.0 / 384 - 8) * 3096576 +
                      61 * 4718592.0) / 1e6, 1e-12);
}

static void test_breakdown(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    whatif_result r;
    const char *modes[] = {"decode", "eagle3"};
    for (int g = 0; g < 2; g++)
        for (int m = 0; m < 2; m++) {
            set(&s, "graph", g ? "1" : "0");
            set(&s, "mode", modes[m]);
            run(&s, &r);
            /* the parts are the cycle, in graph and eager mode */
            REL(sum_parts(&r.parts), r.cycle_us, 1e-9);
            if (m == 0)
                assert_true(r.parts.draft_us == 0);
        }
    /* CUDA graphs, no jitter, EAGLE-3 without the overlap scheduler: every
     * host segment is on the path. Per phase: host_us before its launch and
     * host_us + sync_us after each of its syncs: draft 1, verify 5, extend
     * 1: 3 x 82.1 + 7 x (82.1 + 10) = 891 us of host, the per-cycle figure
     * (host_cycle_us) the segments were spread from. */
    set(&s, "graph", "1");
    set(&s, "host_jitter", "0");
    set(&s, "mode", "eagle3");
    run(&s, &r);
    REL(r.parts.host_us, 891, 1e-9);
    assert_true(r.parts.wait_us == 0);
    /* the target forward's communication on the path is exactly its 122
     * allreduces */
    REL(r.parts.fwd_comm_us, 122 * r.allreduce_us, 1e-6);
    /* plain decode with the overlap scheduler: its 2 x 82.1 us of host work
     * run while the GPU works, none of it on the path; without it, both */
    set(&s, "mode", "decode");
    run(&s, &r);
    assert_true(r.parts.host_us == 0);
    set(&s, "overlap", "0");
    run(&s, &r);
    REL(r.parts.host_us, 2 * 82.1 + 10, 1e-9);
    set(&s, "overlap", "-1");
    /* jitter makes the ranks wait for the slowest one at the first
     * collective after each host segment: waiting appears, the parts still
     * add up, and the cycle grows */
    whatif_result w;
    set(&s, "mode", "eagle3");
    set(&s, "host_jitter", "0.5");
    run(&s, &w);
    assert_true(w.parts.wait_us > 0);
    assert_true(w.cycle_us > r.cycle_us);
    REL(sum_parts(&w.parts), w.cycle_us, 1e-9);
    /* eager verify: the CPU issues 61 x 22 + 1 kernels at 4 + 10 us each
     * (18.8 ms), more than the GPU's work: the launch path sets the pace */
    set(&s, "verify_graph", "0");
    whatif_result ev;
    run(&s, &ev);
    assert_true(ev.cycle_us > w.cycle_us + 5000);
    REL(sum_parts(&ev.parts), ev.cycle_us, 1e-9);
    set(&s, "verify_graph", "-1");
    /* routing skew 1: the verify reads 8 experts, as decode does */
    set(&s, "routing_skew", "1");
    run(&s, &w);
    REL(w.distinct_experts, 8, 1e-12);
}

static void test_draft_shape(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    set(&s, "host_jitter", "0");
    /* SGLang --speculative-num-steps 2, topk 1: 3 draft tokens; the verify
     * allreduce is 3 x 7168 x 2 = 43,008 B */
    assert_int_equal(s.draft_steps, 2);
    assert_int_equal(s.draft_tokens, 3);
    /* steps 3: 4 tokens, 57,344 B per verify allreduce */
    set(&s, "draft_steps", "3");
    assert_int_equal(s.draft_tokens, 4);
    set(&s, "draft_tokens", "2");
    assert_int_equal(s.draft_steps, 1);
    set(&s, "draft_tokens", "4");
    whatif_result r;
    run(&s, &r);
    REL(r.distinct_experts, 384 - 384 * pow(376.0 / 384, 4), 1e-12);
    whatif_scenario f = s;
    set(&f, "verify_allreduce_us", "0");
    /* a tree (topk 2) chooses its tokens: more than the candidates is refused */
    set(&s, "draft_topk", "2");
    set(&s, "draft_tokens", "16");
    err e = {0};
    assert_int_equal(whatif_run_ctx(ctx, &s, &r, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "candidates"));
}

static void test_phase_overrides(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    whatif_result d0, d1, v;
    set(&s, "mode", "decode");
    run(&s, &d0);
    /* a verify override leaves plain decode exactly as it was */
    set(&s, "verify_allreduce_us", "121.86");
    run(&s, &d1);
    REL(d1.tok_per_s, d0.tok_per_s, 1e-15);
    /* and applies to the 122 verify allreduces only: the draft's are still
     * predicted, so the draft phase is unchanged */
    set(&s, "mode", "eagle3");
    run(&s, &v);
    REL(v.parts.fwd_comm_us, 122 * 121.86, 1e-9);
    whatif_result v0;
    set(&s, "verify_allreduce_us", "0");
    run(&s, &v0);
    REL(v.parts.draft_us, v0.parts.draft_us, 1e-12);
    /* a decode override: decode's 122 allreduces take it */
    set(&s, "mode", "decode");
    set(&s, "decode_allreduce_us", "50");
    run(&s, &d1);
    REL(d1.parts.fwd_comm_us, 122 * 50.0, 1e-9);
    /* the old name is refused with the phases to choose from */
    err e = {0};
    assert_int_equal(whatif_set(&s, "allreduce_us", "50", &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "verify_allreduce_us"));
}

static void test_solve(void **state)
{
    (void)state;
    whatif_scenario s, dec;
    base(&s);
    err e = {0};
    whatif_result rd, re;
    dec = s;
    dec.mode = WHATIF_DECODE;
    run(&dec, &rd);
    /* break-even accept length: there EAGLE-3 gives plain decode's tok/s */
    whatif_solved a;
    assert_int_equal(whatif_solve(ctx, &s, &s, "accept_len", 0, &a, &e), 0);
    assert_true(a.found);
    whatif_scenario eg = s;
    eg.accept_len = a.value;
    run(&eg, &re);
    REL(re.tok_per_s, rd.tok_per_s, 1e-9);
    /* from an observed tok/s: the accept length that gives it */
    assert_int_equal(whatif_solve(ctx, &s, &s, "accept_len", 150, &a, &e), 0);
    eg.accept_len = a.value;
    run(&eg, &re);
    REL(re.tok_per_s, 150, 1e-9);
    /* an observation slower than the model allows at 1 token: answered,
     * none */
    assert_int_equal(whatif_solve(ctx, &s, &s, "accept_len", 20, &a, &e), 0);
    assert_false(a.found);
    assert_non_null(strstr(a.text, "< 1"));
    /* more than draft_tokens needed: "none (needs X > 3)" */
    assert_int_equal(whatif_solve(ctx, &s, &s, "accept_len", 400, &a, &e), 0);
    assert_false(a.found);
    assert_non_null(strstr(a.text, "> 3)"));
    /* break-even verify allreduce time against the fixed decode baseline */
    assert_int_equal(whatif_solve(ctx, &s, &s, "verify_allreduce_us", 0, &a, &e), 0);
    assert_true(a.found);
    eg = s;
    eg.verify_allreduce_us = a.value;
    run(&eg, &re);
    REL(re.tok_per_s, rd.tok_per_s, 1e-8);
    /* one accepted token never pays */
    eg = s;
    eg.accept_len = 1;
    assert_int_equal(whatif_solve(ctx, &eg, &eg, "verify_allreduce_us", 0, &a, &e), 0);
    assert_false(a.found);
    assert_non_null(strstr(a.text, "none"));
}

static void observe_run(whatif_scenario *truth, const char *mode, char *spec, size_t n)
{
    whatif_scenario o = *truth;
    set(&o, "mode", mode);
    set(&o, "allreduce", "ring");
    whatif_result r;
    run(&o, &r);
    snprintf(spec, n, "mode=%s,allreduce=ring,tok_per_s=%.17g", mode, r.tok_per_s);
}

static void test_calibration_recovery(void **state)
{
    (void)state;
    /* Synthetic truth: efficiency 0.4, 300 us of host work per segment. Its
     * decode and EAGLE-3 tok/s become the observations of a scenario that
     * starts elsewhere (0.6, 100); the fit must find the truth. */
    whatif_scenario truth, s;
    base(&truth);
    set(&truth, "efficiency", "0.4");
    set(&truth, "host_us", "300");
    char od[256], oe[256];
    observe_run(&truth, "decode", od, sizeof od);
    observe_run(&truth, "eagle3", oe, sizeof oe);
    base(&s);
    set(&s, "efficiency", "0.6");
    set(&s, "host_us", "100");
    set(&s, "observe", od);
    set(&s, "observe", oe);
    set(&s, "fit", "efficiency,host_us");
    whatif_calib cal;
    err e = {0};
    if (whatif_calibrate(ctx, &s, &cal, &e) != 0)
        fail_msg("%s", e.msg);
    /* recovered to the fit's tolerance (1e-6 relative) */
    REL(s.efficiency, 0.4, 1e-6);
    REL(s.host_us, 300, 1e-5);
    assert_int_equal(cal.n, 2);
    assert_false(cal.p[0].refused);
    assert_false(cal.p[1].refused);
    /* Standard error: only the decode point sees the efficiency alone, so
     * sd(ln eff) = sd_obs / (d ln tok/s / d ln eff) = 0.01 / (compute share
     * of the decode step). 2% tolerance: finite differences. */
    whatif_scenario d = s;
    set(&d, "mode", "decode");
    whatif_result r;
    run(&d, &r);
    double share = r.parts.compute_us / r.cycle_us;
    REL(cal.p[0].sd, 0.4 * 0.01 / share, 0.02);
    /* accept_len cannot be told apart from the host work by one EAGLE-3
     * point: one of the two is refused, named, and left as it was */
    base(&s);
    set(&s, "observe", od);
    set(&s, "observe", oe);
    set(&s, "fit", "efficiency,host_us,accept_len");
    assert_int_equal(whatif_calibrate(ctx, &s, &cal, &e), 0);
    int refused = cal.p[1].refused + cal.p[2].refused;
    assert_int_equal(refused, 1);
    assert_false(cal.p[0].refused);
    /* with only the decode point (the overlap scheduler hides the host
     * work), the host work has no influence */
    base(&s);
    set(&s, "observe", od);
    set(&s, "fit", "efficiency,host_us");
    assert_int_equal(whatif_calibrate(ctx, &s, &cal, &e), 0);
    assert_true(cal.p[1].refused);
    assert_non_null(strstr(cal.p[1].why, "no influence"));
    REL(s.efficiency, 0.4, 1e-6);
    REL(s.host_us, 82.1, 1e-9);   /* as it was: (891 - 70) / 10 */
    /* Past its physical bound (2000 us per segment) the host work is held
     * at the bound and the rest of the observed cycle is unexplained:
     * truth 3000 us. */
    base(&truth);
    set(&truth, "efficiency", "0.4");
    set(&truth, "host_us", "3000");
    set(&truth, "host_jitter", "0");
    observe_run(&truth, "eagle3", oe, sizeof oe);
    base(&s);
    set(&s, "efficiency", "0.4");
    set(&s, "host_jitter", "0");
    set(&s, "observe", oe);
    set(&s, "fit", "host_us");
    assert_int_equal(whatif_calibrate(ctx, &s, &cal, &e), 0);
    assert_true(cal.p[0].at_bound);
    REL(s.host_us, 2000, 1e-12);
    /* 10 host segments per cycle (draft 2, verify 6, extend 2), each 1000
     * us short: 10 ms unexplained (times in integer ps: 1e-6) */
    REL(cal.unexplained_us[0], 10000, 1e-6);
    /* bad names are usage errors */
    assert_int_equal(whatif_set(&s, "fit", "efficiency,hidden", &e), ERR_USAGE);
    assert_int_equal(whatif_set(&s, "observe", "mode=decode", &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "tok_per_s"));
    assert_int_equal(whatif_set(&s, "observe", "frob=1,tok_per_s=3", &e), ERR_USAGE);
}

static void test_host_cycle(void **state)
{
    (void)state;
    /* The host side from its public per-cycle figure (whatif.h): 891 us per
     * EAGLE-3 cycle over its 3 launch segments and 7 sync segments, the 7
     * syncs at 10 us taken out first: (891 - 70) / 10 = 82.1 us a segment;
     * the range's ends: (538 - 70) / 10 = 46.8, (1417 - 70) / 10 = 134.7. */
    whatif_scenario s;
    base(&s);
    REL(s.host_cycle_us, 891, 1e-12);
    REL(s.host_us, 82.1, 1e-9);
    REL(whatif_host_segment_us(&s, WHATIF_HOST_CYCLE_LO_US), 46.8, 1e-9);
    REL(whatif_host_segment_us(&s, WHATIF_HOST_CYCLE_HI_US), 134.7, 1e-9);
    /* what it is spread over moves the segment: syncs at 20 us leave
     * (891 - 140) / 10 = 75.1; one verify sync fewer, 6 syncs over 9
     * segments: (891 - 6 x 20) / 9 = 85.667 */
    set(&s, "sync_us", "20");
    REL(s.host_us, 75.1, 1e-9);
    set(&s, "verify_syncs", "4");
    REL(s.host_us, 771.0 / 9, 1e-9);
    /* a figure smaller than its syncs leaves nothing for the segments */
    set(&s, "host_cycle_us", "50");
    assert_true(s.host_us == 0);
    /* host_us given turns the per-cycle figure off and stays as given */
    set(&s, "host_cycle_us", "891");
    set(&s, "host_us", "100");
    REL(s.host_cycle_us, -1, 1e-12);
    set(&s, "sync_us", "10");
    REL(s.host_us, 100, 1e-12);
    /* and survives a scenario file: written with host_cycle_us -1 first,
     * host_us 100 after it */
    whatif_scenario back;
    write_load(&s, &back);
    REL(back.host_us, 100, 1e-12);
    REL(back.host_cycle_us, -1, 1e-12);
}

static void test_reference_points(void **state)
{
    (void)state;
    /* The built-in scenario fits plain decode (one parameter, one point:
     * reproduced to the fit's 1e-6); its EAGLE-3 point is a check, not
     * fitted: the prediction stays the model's and the observation's
     * unexplained share is the observed cycle (2.4 tokens / 54.1 tok/s =
     * 44,362 us) less the model's. */
    whatif_scenario s;
    err e = {0};
    assert_int_equal(whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", &s, &e), 0);
    whatif_calib cal;
    assert_int_equal(whatif_calibrate(ctx, &s, &cal, &e), 0);
    assert_int_equal(s.obs[1].check, 1);
    whatif_result r;
    set(&s, "mode", "decode");
    run(&s, &r);
    REL(r.tok_per_s, 82, 1e-6);
    set(&s, "mode", "eagle3");
    run(&s, &r);
    REL(cal.obs_cycle_us[1], 2.4e6 / 54.1, 1e-9);
    REL(cal.unexplained_us[1], 2.4e6 / 54.1 - r.cycle_us, 1e-9);
    assert_true(r.tok_per_s > 54.1 * 2);
}

static void test_ar_kernel(void **state)
{
    (void)state;
    /* A collective kernel as a profile times it: its transfer plus the
     * wait for the slowest rank. Without skew (host_jitter 0, one rank
     * stands for all) there is nothing to wait for, in a graph or eagerly
     * (every rank issues each kernel at the same moment): the kernel is its
     * transfer, the allreduce time, exactly. */
    whatif_scenario s;
    base(&s);
    set(&s, "mode", "eagle3");
    set(&s, "host_jitter", "0");
    whatif_result r;
    run(&s, &r);
    REL(r.ar_kernel_us, r.allreduce_us, 1e-9);
    REL(r.ar_kernel_max_us, r.allreduce_us, 1e-9);
    set(&s, "verify_graph", "0");
    run(&s, &r);
    REL(r.ar_kernel_us, r.allreduce_us, 1e-9);
    /* With skew in a graph the ranks meet at the first allreduce and the
     * rest run in step: the mean is the transfer plus less than the graph
     * launch's spread over the 122 kernels, the longest takes that spread. */
    set(&s, "verify_graph", "-1");
    set(&s, "host_jitter", "0.1");
    run(&s, &r);
    assert_true(r.ar_kernel_us >= r.allreduce_us);
    assert_true(r.ar_kernel_us < r.allreduce_us + 5);
    assert_true(r.ar_kernel_max_us > r.ar_kernel_us);
}

static void test_hypotheses(void **state)
{
    (void)state;
    /* The built-in's EAGLE-3 check (docs/scenario.md, "Hypotheses", and
     * tests/cli/whatif.test derive these by hand): host segments alone do
     * not reach 54.1 tok/s within 2 ms; at 2 ms with 22% skew they do (the
     * old two-point fit: host_jitter 0.216); within the public figures of
     * the host work per cycle (at most 1,417 us: 134.7 us a segment) they
     * do not either; an eager verify does, its 122 allreduces at 4 us of
     * launch + 15.4 of PyTorch's c10d layer (the preset has no NCCL host
     * keys) and its 61 x 20 + 1 = 1,221 other kernels at c us of CPU each,
     * x 1.1 for the 10% mean skew, plus 650 us of host segments and syncs
     * filling the ~42.5 ms the observed cycle leaves beside the drafts:
     * 1,221 c = 42,500 / 1.1 - 650 / 1.1 - 122 x 19.4 = 35,678, c = 29.2 us
     * (25.2 besides the launch), and only it predicts verify allreduce
     * kernels near the profile's 225 us: an early rank waits for the slowest
     * rank's half layer of CPU (340 us) less its own GPU work, 98 us of
     * kernels and their 11 turnarounds of the preset's graph node (1.5 us
     * each, docs/model.md "The GPU's turnaround per kernel"):
     * 7/8 x (340 - 98 - 16.5) + 20/8 = 199.8 us.
     * Fewer accepted tokens do not reach it: at the bound, 1 token a cycle,
     * the graphed cycle of 2.4 tokens at 136.49 tok/s gives 136.49 / 2.4 =
     * 56.87 tok/s, and verify allreduce kernels of their 20 us transfer. */
    whatif_scenario s;
    err e = {0};
    assert_int_equal(whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", &s, &e), 0);
    assert_int_equal(whatif_calibrate(ctx, &s, NULL, &e), 0);
    whatif_hyp h[WHATIF_HYP_MAX];
    int n = 0;
    assert_int_equal(whatif_hypotheses(ctx, &s, 1, h, &n, &e), 0);
    assert_int_equal(n, 6);
    assert_string_equal(h[0].name, "host");
    assert_int_equal(h[0].reached, 0);
    REL(h[0].value, 134.7, 1e-9);
    REL(h[0].hi, 134.7, 1e-9);
    assert_string_equal(h[1].name, "host-skew");
    assert_int_equal(h[1].reached, 1);
    REL(h[1].value, 0.216, 0.02);
    REL(h[1].tok_per_s, 54.1, 1e-4);
    assert_string_equal(h[3].name, "eager-verify");
    assert_int_equal(h[3].reached, 1);
    REL(h[3].cpu_per_kernel_us, 29.2, 0.02);
    /* its bound: SGLang's eager DeepSeek layer, 4 x 6,220 us / 27 layers
     * = 921 us of CPU, 41.9 us per kernel of 22, 37.9 besides the 4 us
     * launch (PR #1401) */
    REL(h[3].hi, 37.9, 1e-12);
    REL(h[3].ar_us, 199.8, 0.05);
    /* the fabric: every verify allreduce at the 67.8 us measured on this
     * box class adds 122 x (67.8 - 19.8) = 5.86 ms to the 17.58 ms cycle:
     * 2.4 tokens / 23.44 ms = 102.4 tok/s, not 54.1 */
    assert_string_equal(h[4].name, "slow-allreduce");
    assert_int_equal(h[4].reached, 0);
    REL(h[4].tok_per_s, 102.4, 0.02);
    assert_string_equal(h[5].name, "accept");
    assert_int_equal(h[5].reached, 0);
    REL(h[5].value, 1, 1e-12);
    REL(h[5].tok_per_s, 136.49 / 2.4, 1e-3);
    for (int k = 0; k < n; k++) {
        assert_int_equal(h[k].ar_checked, 1);
        assert_int_equal(h[k].ar_consistent, k == 3);
    }
}

/* SGLang captures CUDA graphs for batches up to --cuda-graph-max-bs (the
 * scenario's 128) and runs a larger batch eagerly, every phase
 * (cuda_graph_runner can_run: batch_size <= max_bs): batch 128 is a graph,
 * 129 the same cycle as with graph=0, and no limit (0) graphs it again. */
static void test_graph_max_bs(void **state)
{
    (void)state;
    whatif_scenario s, o;
    err e = {0};
    assert_int_equal(whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", &s, &e), 0);
    assert_int_equal(s.cuda_graph_max_bs, 128);
    set(&s, "batch", "128");
    assert_int_equal(whatif_phase_graph(&s, PHASE_VERIFY), 1);
    assert_int_equal(whatif_phase_graph(&s, PHASE_DECODE), 1);
    set(&s, "batch", "129");
    assert_int_equal(whatif_phase_graph(&s, PHASE_VERIFY), 0);
    assert_int_equal(whatif_phase_graph(&s, PHASE_DRAFT), 0);
    assert_int_equal(whatif_phase_graph(&s, PHASE_PREFILL), 0);
    o = s;
    set(&o, "cuda_graph_max_bs", "0");
    assert_int_equal(whatif_phase_graph(&o, PHASE_VERIFY), 1);
    set(&o, "graph", "0");
    whatif_result a, b;
    run(&s, &a);
    run(&o, &b);
    REL(a.tok_per_s, b.tok_per_s, 1e-12);
}

static void test_one_rank(void **state)
{
    (void)state;
    /* tp 1: vLLM's and SGLang's group allreduce returns its input on one
     * rank, so the cycle has no collective at all: no communication time,
     * no allreduce in the report, and no verify allreduce time to solve. */
    whatif_scenario s;
    err e = {0};
    assert_int_equal(whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", &s, &e), 0);
    set(&s, "tp", "1");
    assert_int_equal(whatif_derive(ctx, &s, &e), 0);
    whatif_result r;
    run(&s, &r);
    assert_true(r.no_allreduce);
    assert_true(r.parts.comm_us == 0);
    assert_true(r.allreduce_us == 0 && r.ar_kernel_us == 0 && r.draft_ar_kernel_us == 0);
    /* forcing the verify's allreduce time changes nothing: there is none */
    whatif_scenario f = s;
    f.verify_allreduce_us = 500;
    whatif_result rf;
    run(&f, &rf);
    REL(rf.cycle_us, r.cycle_us, 1e-12);
    whatif_solved a;
    assert_int_equal(whatif_solve(ctx, &s, &s, "verify_allreduce_us", 0, &a, &e), 0);
    assert_false(a.found);
    assert_non_null(strstr(a.text, "tp 1"));
    /* two ranks do pay them */
    set(&s, "tp", "2");
    run(&s, &r);
    assert_false(r.no_allreduce);
    assert_true(r.parts.comm_us > 0 && r.allreduce_us > 0);
}

static void test_box(void **state)
{
    (void)state;
    /* Observations belong to their box: moving the scenario to NVLink
     * (as --set does, before the fit) keeps the fit on the PCIe box's
     * observations, so it predicts what --vary (after the fit) does. */
    whatif_scenario a, b;
    err e = {0};
    assert_int_equal(whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", &a, &e), 0);
    b = a;
    set(&b, "topo", "h200-8x-nvswitch");
    assert_int_equal(whatif_calibrate(ctx, &a, NULL, &e), 0);
    assert_int_equal(whatif_calibrate(ctx, &b, NULL, &e), 0);
    REL(b.efficiency, a.efficiency, 1e-12);
    REL(b.host_jitter, a.host_jitter, 1e-12);
    set(&a, "topo", "h200-8x-nvswitch");
    whatif_result ra, rb;
    run(&a, &ra);
    run(&b, &rb);
    REL(rb.tok_per_s, ra.tok_per_s, 1e-12);
    assert_true(fabs(ra.tok_per_s - 54.1) > 1);
    /* and the observation itself names the box */
    assert_non_null(strstr(b.obs[0].set, "topo=rtxpro6000-8x-pcie5-2s"));
}

static void test_files(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    err e = {0};
    char buf[512], buf2[512];
    set(&s, "accept_hist", "1,1,2");
    /* normalised 0.25, 0.25, 0.5: mean 0.25 + 0.5 + 1.5 = 2.25 */
    REL(s.accept_len, 2.25, 1e-12);
    set(&s, "nccl_proto", "Simple");
    assert_int_equal(whatif_get(&s, "nccl_proto", buf, sizeof buf, &e), 0);
    assert_string_equal(buf, "Simple");
    assert_int_equal(whatif_set(&s, "frob", "1", &e), ERR_USAGE);
    assert_int_equal(whatif_set(&s, "tp", "0", &e), ERR_USAGE);
    /* an effective scenario written out loads back to the same knobs */
    set(&s, "efficiency", "0.123456789012345");
    set(&s, "observe", "mode=decode,tok_per_s=82");
    set(&s, "graph", "0");
    set(&s, "fit", "none");
    whatif_scenario back;
    write_load(&s, &back);
    for (int k = 0; whatif_key_name(k); k++) {
        whatif_get(&s, whatif_key_name(k), buf, sizeof buf, NULL);
        whatif_get(&back, whatif_key_name(k), buf2, sizeof buf2, NULL);
        if (strcmp(buf, buf2))
            fail_msg("%s: %s, loaded back %s", whatif_key_name(k), buf, buf2);
    }
    assert_true(back.efficiency == s.efficiency);
    assert_int_equal(back.nobs, 1);
    assert_string_equal(back.fit, "");
    /* errors with file:line */
    char path[] = "/tmp/collsim_scenXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("collsim-scenario 1\nbatch = 4\nobserve = mode=decode\n", f);
    fclose(f);
    assert_int_equal(whatif_scenario_load(path, &back, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, ":3: observe:"));
    unlink(path);
}

int main(void)
{
    ctx = whatif_ctx_new();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distinct_experts), cmocka_unit_test(test_forward_bytes),
        cmocka_unit_test(test_breakdown),        cmocka_unit_test(test_phase_overrides),
        cmocka_unit_test(test_solve),            cmocka_unit_test(test_calibration_recovery),
        cmocka_unit_test(test_reference_points), cmocka_unit_test(test_files),
        cmocka_unit_test(test_ar_kernel),        cmocka_unit_test(test_hypotheses),
        cmocka_unit_test(test_draft_shape),      cmocka_unit_test(test_box),
        cmocka_unit_test(test_graph_max_bs),
        cmocka_unit_test(test_host_cycle),       cmocka_unit_test(test_one_rank),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    whatif_ctx_free(ctx);
    return rc;
}
