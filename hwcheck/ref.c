/* CPU reference. Conversions are written out bit by bit so the host tests
 * can check them against hand-derived encodings; the random inputs are
 * splitmix64 streams, so a case is reproducible from (seed, rank). Expected
 * values accumulate in fp32 in rank order 0..n-1, like the kernels. */
#include "hwcheck/ref.h"

#include <math.h>
#include <string.h>

uint16_t ref_bf16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float ref_bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t ref_fp16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: subnormal, units of 2^-24 */
        float af;
        memcpy(&af, &a, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(af * 16777216.0f));
    }
    uint32_t h = ((((a >> 23) - 127u + 15u)) << 10) | ((a & 0x7fffffu) >> 13);
    uint32_t rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right answer */
    return (uint16_t)(sign | h);
}

float ref_fp16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    uint32_t x = e == 31 ? (sign | 0x7f800000u | (m << 13))
                         : (sign | ((e - 15u + 127u) << 23) | (m << 13));
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static const struct {
    const char *name, *alias1, *alias2;
    size_t bytes;
    double unit_roundoff;
} dtypes[REF_NDTYPES] = {
    {"bf16", "bfloat16", "bf16", 2, 0x1p-8},
    {"fp16", "half", "float16", 2, 0x1p-11},
    {"fp32", "float", "float32", 4, 0x1p-24},
};

size_t ref_dtype_bytes(ref_dtype t) { return dtypes[t].bytes; }
const char *ref_dtype_name(ref_dtype t) { return dtypes[t].name; }

int ref_dtype_parse(const char *s, ref_dtype *out)
{
    for (int i = 0; i < REF_NDTYPES; i++)
        if (!strcmp(s, dtypes[i].name) || !strcmp(s, dtypes[i].alias1) ||
            !strcmp(s, dtypes[i].alias2)) {
            *out = (ref_dtype)i;
            return 0;
        }
    return -1;
}

static const char *const coll_names[REF_NCOLLS] = {"allreduce", "reducescatter", "allgather",
                                                  "broadcast", "alltoall"};

const char *ref_coll_name(ref_coll c) { return coll_names[c]; }

int ref_coll_parse(const char *s, ref_coll *out)
{
    for (int i = 0; i < REF_NCOLLS; i++)
        if (!strcmp(s, coll_names[i])) {
            *out = (ref_coll)i;
            return 0;
        }
    return -1;
}

float ref_get(ref_dtype t, const void *buf, size_t i)
{
    if (t == REF_FP32)
        return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return t == REF_BF16 ? ref_bf16_to_float(h) : ref_fp16_to_float(h);
}

void ref_set(ref_dtype t, void *buf, size_t i, float v)
{
    if (t == REF_FP32)
        ((float *)buf)[i] = v;
    else
        ((uint16_t *)buf)[i] = t == REF_BF16 ? ref_bf16_from_float(v) : ref_fp16_from_float(v);
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void ref_fill(ref_dtype t, void *buf, size_t count, uint64_t seed, int rank)
{
    uint64_t s = seed * UINT64_C(0x100000001b3) + (uint64_t)(unsigned)rank * UINT64_C(0x9e3779b97f4a7c15) + 1u;
    for (size_t i = 0; i < count; i++) {
        /* 24 random bits -> [-1, 1) in steps of 2^-23 */
        float v = (float)(splitmix64(&s) >> 40) * 0x1p-23f - 1.0f;
        ref_set(t, buf, i, v);
    }
}

void ref_counts(ref_coll c, size_t size_bytes, ref_dtype t, int n, size_t *in_count,
                size_t *out_count)
{
    size_t count = size_bytes / ref_dtype_bytes(t), per = count / (size_t)n;
    *in_count = *out_count = 0;
    if (count == 0 || count * ref_dtype_bytes(t) != size_bytes)
        return;
    switch (c) {
    case REF_ALLREDUCE:
    case REF_BROADCAST:
        *in_count = *out_count = count;
        break;
    case REF_REDUCESCATTER:
        if (per * (size_t)n == count)
            *in_count = count, *out_count = per;
        break;
    case REF_ALLGATHER:
        if (per * (size_t)n == count)
            *in_count = per, *out_count = count;
        break;
    default: /* alltoall */
        if (per * (size_t)n == count)
            *in_count = *out_count = count;
        break;
    }
}

double ref_bus_factor(ref_coll c, int n)
{
    double dn = (double)n;
    switch (c) {
    case REF_ALLREDUCE: return 2.0 * (dn - 1) / dn;
    case REF_BROADCAST: return 1.0;
    default: return (dn - 1) / dn;
    }
}

int ref_expect(ref_coll c, ref_dtype t, int n, int root, const void *const *in,
               size_t in_count, size_t out_count, int r, float *expect, float *scale)
{
    size_t per = out_count / (size_t)n;
    switch (c) {
    case REF_ALLREDUCE:
    case REF_REDUCESCATTER: {
        size_t off = c == REF_REDUCESCATTER ? (size_t)r * out_count : 0;
        for (size_t i = 0; i < out_count; i++) {
            float s = 0, a = 0;
            for (int k = 0; k < n; k++) {
                float v = ref_get(t, in[k], off + i);
                s += v;
                a += fabsf(v);
            }
            expect[i] = s;
            scale[i] = a;
        }
        return n + 1; /* n-1 partial roundings (NCCL ring) + the final one, + slack */
    }
    case REF_ALLGATHER:
        for (size_t i = 0; i < out_count; i++) {
            expect[i] = ref_get(t, in[i / in_count], i % in_count);
            scale[i] = fabsf(expect[i]);
        }
        return 0;
    case REF_BROADCAST:
        for (size_t i = 0; i < out_count; i++) {
            expect[i] = ref_get(t, in[root], i);
            scale[i] = fabsf(expect[i]);
        }
        return 0;
    default: /* alltoall: block k of rank r's output is block r of rank k's input */
        for (size_t i = 0; i < out_count; i++) {
            size_t k = i / per;
            expect[i] = ref_get(t, in[k], (size_t)r * per + i % per);
            scale[i] = fabsf(expect[i]);
        }
        return 0;
    }
}

size_t ref_check(ref_dtype t, const void *got, const float *expect, const float *scale,
                 size_t count, int roundings)
{
    double u = dtypes[t].unit_roundoff;
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        double g = ref_get(t, got, i), d = fabs(g - (double)expect[i]);
        if (!(d <= (double)roundings * u * (double)scale[i]))
            wrong++;
    }
    return wrong;
}
