/* Unit tests of the CPU reference: conversions against hand-derived
 * encodings, nccl-tests element counts and bus factors, expected values of
 * each collective, and that the checker catches wrong, missing (NaN) and
 * out-of-tolerance elements while accepting a correctly rounded result. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hwcheck/ref.h"

static void test_bf16(void **state)
{
    (void)state;
    /* 1.0 = 0x3f800000 -> bf16 0x3f80; -2.5 = 0xc0200000 -> 0xc020. */
    assert_int_equal(ref_bf16_from_float(1.0f), 0x3f80);
    assert_int_equal(ref_bf16_from_float(-2.5f), 0xc020);
    /* 1 + 2^-8 is exactly half way between 1 and 1 + 2^-7: ties to even -> 1.0;
     * 1 + 3*2^-8 is half way between 1+2^-7 (odd) and 1+2^-6: -> 0x3f82. */
    assert_int_equal(ref_bf16_from_float(1.0f + 0x1p-8f), 0x3f80);
    assert_int_equal(ref_bf16_from_float(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_true(ref_bf16_to_float(0x3f82) == 1.015625f);
    assert_true(isnan(ref_bf16_to_float(ref_bf16_from_float(NAN))));
}

static void test_fp16(void **state)
{
    (void)state;
    /* 1.0 = 0x3c00, -2.0 = 0xc000, 65504 (max) = 0x7bff, 65520 rounds to inf. */
    assert_int_equal(ref_fp16_from_float(1.0f), 0x3c00);
    assert_int_equal(ref_fp16_from_float(-2.0f), 0xc000);
    assert_int_equal(ref_fp16_from_float(65504.0f), 0x7bff);
    assert_int_equal(ref_fp16_from_float(65520.0f), 0x7c00);
    /* Smallest subnormal 2^-24 = 0x0001; 2^-14 (smallest normal) = 0x0400. */
    assert_int_equal(ref_fp16_from_float(0x1p-24f), 0x0001);
    assert_int_equal(ref_fp16_from_float(0x1p-14f), 0x0400);
    assert_true(ref_fp16_to_float(0x0001) == 0x1p-24f);
    /* 1 + 2^-11 ties to even -> 1.0; 1 + 3*2^-11 -> 1 + 2^-9 (0x3c02). */
    assert_int_equal(ref_fp16_from_float(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(ref_fp16_from_float(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* Every fp16 value survives a round trip through float. */
    for (unsigned h = 0; h < 0x7c00; h += 7)
        assert_int_equal(ref_fp16_from_float(ref_fp16_to_float((uint16_t)h)), h);
}

static void test_fill(void **state)
{
    (void)state;
    float a[64], b[64];
    /* Same (seed, rank): same data; another rank: different data; all in [-1, 1). */
    ref_fill(REF_FP32, a, 64, 5, 0);
    ref_fill(REF_FP32, b, 64, 5, 0);
    assert_memory_equal(a, b, sizeof a);
    ref_fill(REF_FP32, b, 64, 5, 1);
    assert_memory_not_equal(a, b, sizeof a);
    for (int i = 0; i < 64; i++)
        assert_true(a[i] >= -1.0f && a[i] < 1.0f);
}

static void test_counts(void **state)
{
    (void)state;
    size_t in, out;
    /* 1 MiB bf16 on 8 ranks: allreduce 524288 in/out; reducescatter out
     * 65536; allgather in 65536 out 524288. 1000 bytes reducescatter on 8
     * ranks: 500 elements do not split into 8 -> skipped (0). */
    ref_counts(REF_ALLREDUCE, 1 << 20, REF_BF16, 8, &in, &out);
    assert_true(in == 524288 && out == 524288);
    ref_counts(REF_REDUCESCATTER, 1 << 20, REF_BF16, 8, &in, &out);
    assert_true(in == 524288 && out == 65536);
    ref_counts(REF_ALLGATHER, 1 << 20, REF_BF16, 8, &in, &out);
    assert_true(in == 65536 && out == 524288);
    ref_counts(REF_REDUCESCATTER, 1000, REF_BF16, 8, &in, &out);
    assert_true(in == 0 && out == 0);
    /* nccl-tests bus factors: allreduce 2(n-1)/n = 1.75 on 8, allgather 7/8, broadcast 1. */
    assert_true(fabs(ref_bus_factor(REF_ALLREDUCE, 8) - 1.75) < 1e-12);
    assert_true(fabs(ref_bus_factor(REF_ALLGATHER, 8) - 0.875) < 1e-12);
    assert_true(ref_bus_factor(REF_BROADCAST, 8) == 1.0);
}

static void test_expect_and_check(void **state)
{
    (void)state;
    /* 2 ranks, fp32: rank0 = {1, 2, 3, 4}, rank1 = {10, 20, 30, 40}. */
    float r0[4] = {1, 2, 3, 4}, r1[4] = {10, 20, 30, 40}, exp[8], sc[8];
    const void *in[2] = {r0, r1};
    /* allreduce: {11, 22, 33, 44}, scale = sum |x| = same, 3 roundings allowed. */
    int k = ref_expect(REF_ALLREDUCE, REF_FP32, 2, 0, in, 4, 4, 1, exp, sc);
    assert_int_equal(k, 3);
    assert_true(exp[0] == 11 && exp[3] == 44 && sc[2] == 33);
    float got[4] = {11, 22, 33, 44};
    assert_int_equal(ref_check(REF_FP32, got, exp, sc, 4, k), 0);
    /* One element off by one, one NaN (never written): 2 wrong. */
    got[1] = 23;
    got[2] = NAN;
    assert_int_equal(ref_check(REF_FP32, got, exp, sc, 4, k), 2);
    /* reducescatter rank 1 gets elements 2..3 of the sum: {33, 44}. */
    ref_expect(REF_REDUCESCATTER, REF_FP32, 2, 0, in, 4, 2, 1, exp, sc);
    assert_true(exp[0] == 33 && exp[1] == 44);
    /* allgather of 2-element inputs: {1, 2, 10, 20}, exact (0 roundings). */
    float a0[2] = {1, 2}, a1[2] = {10, 20};
    const void *ag[2] = {a0, a1};
    assert_int_equal(ref_expect(REF_ALLGATHER, REF_FP32, 2, 0, ag, 2, 4, 0, exp, sc), 0);
    assert_true(exp[0] == 1 && exp[2] == 10 && exp[3] == 20);
    /* alltoall rank 1: block 0 = rank0's block 1 = {3, 4}, block 1 = rank1's block 1 = {30, 40}. */
    ref_expect(REF_ALLTOALL, REF_FP32, 2, 0, in, 4, 4, 1, exp, sc);
    assert_true(exp[0] == 3 && exp[1] == 4 && exp[2] == 30 && exp[3] == 40);
    /* broadcast from root 1: rank1's data. */
    ref_expect(REF_BROADCAST, REF_FP32, 2, 1, in, 4, 4, 0, exp, sc);
    assert_true(exp[0] == 10 && exp[3] == 40);
}

static void test_bf16_tolerance(void **state)
{
    (void)state;
    /* 8 ranks of bf16 random data: the fp32 sum rounded once to bf16 (what
     * the kernels produce) passes; the same with one element moved by 1/8 of
     * its scale fails (tolerance 9 * 2^-8 * scale = 0.035 * scale). */
    enum { N = 256, R = 8 };
    uint16_t buf[R][N], got[N];
    const void *in[R];
    for (int r = 0; r < R; r++) {
        ref_fill(REF_BF16, buf[r], N, 42, r);
        in[r] = buf[r];
    }
    float exp[N], sc[N];
    int k = ref_expect(REF_ALLREDUCE, REF_BF16, R, 0, in, N, N, 0, exp, sc);
    for (int i = 0; i < N; i++)
        got[i] = ref_bf16_from_float(exp[i]);
    assert_int_equal(ref_check(REF_BF16, got, exp, sc, N, k), 0);
    got[7] = ref_bf16_from_float(exp[7] + sc[7] / 8);
    assert_int_equal(ref_check(REF_BF16, got, exp, sc, N, k), 1);
    /* Names: nccl-tests' "half" and "float" are accepted. */
    ref_dtype t;
    assert_int_equal(ref_dtype_parse("half", &t), 0);
    assert_int_equal(t, REF_FP16);
    assert_int_equal(ref_dtype_parse("float", &t), 0);
    assert_int_equal(t, REF_FP32);
    assert_int_equal(ref_dtype_parse("int8", &t), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16),          cmocka_unit_test(test_fp16),
        cmocka_unit_test(test_fill),          cmocka_unit_test(test_counts),
        cmocka_unit_test(test_expect_and_check), cmocka_unit_test(test_bf16_tolerance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
