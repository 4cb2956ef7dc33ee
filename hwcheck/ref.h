/* CPU reference for hwcheck's correctness checks, pure C: bf16/fp16
 * conversions (round to nearest even), deterministic random inputs, the
 * expected output of each collective with fp32 accumulation in rank order,
 * and the tolerance check that counts wrong elements. No CUDA. */
#ifndef HWCHECK_REF_H
#define HWCHECK_REF_H

#include <stddef.h>
#include <stdint.h>

/* Same order as kern_dtype (kernels/kernels.h). */
typedef enum ref_dtype { REF_BF16, REF_FP16, REF_FP32, REF_NDTYPES } ref_dtype;
/* Same order as the collsim coll kinds. */
typedef enum ref_coll {
    REF_ALLREDUCE, REF_REDUCESCATTER, REF_ALLGATHER, REF_BROADCAST, REF_ALLTOALL, REF_NCOLLS
} ref_coll;

uint16_t ref_bf16_from_float(float f);
float ref_bf16_to_float(uint16_t h);
uint16_t ref_fp16_from_float(float f);
float ref_fp16_to_float(uint16_t h);

size_t ref_dtype_bytes(ref_dtype t);
const char *ref_dtype_name(ref_dtype t);            /* "bf16", "fp16", "fp32" */
int ref_dtype_parse(const char *s, ref_dtype *out); /* also nccl-tests' names; -1 if unknown */
const char *ref_coll_name(ref_coll c);              /* "allreduce", ... */
int ref_coll_parse(const char *s, ref_coll *out);   /* -1 if unknown */

float ref_get(ref_dtype t, const void *buf, size_t i);
void ref_set(ref_dtype t, void *buf, size_t i, float v); /* rounds to nearest even */
/* count random elements uniform in [-1, 1), a pure function of (seed, rank). */
void ref_fill(ref_dtype t, void *buf, size_t count, uint64_t seed, int rank);

/* Element counts of a collective of size_bytes on n ranks, as nccl-tests
 * counts them: in_count and out_count per rank (0 if the size does not
 * divide: the case is skipped). busbw = algbw * ref_bus_factor(c, n). */
void ref_counts(ref_coll c, size_t size_bytes, ref_dtype t, int n, size_t *in_count,
                size_t *out_count);
double ref_bus_factor(ref_coll c, int n);

/* Expected output of rank r (out_count floats into expect) and, per element,
 * the scale of the tolerance (sum of |inputs| that went into it). in[k] is
 * rank k's input; returns the number of roundings allowed (0: exact copy). */
int ref_expect(ref_coll c, ref_dtype t, int n, int root, const void *const *in,
               size_t in_count, size_t out_count, int r, float *expect, float *scale);
/* Elements of got (out_count) that differ from expect by more than
 * roundings * unit roundoff(t) * scale (NaN is always wrong). */
size_t ref_check(ref_dtype t, const void *got, const float *expect, const float *scale,
                 size_t count, int roundings);

#endif
