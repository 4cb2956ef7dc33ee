/* Shared by the benchmark programs: a monotonic clock, peak memory, and the
 * reference computation every benchmark reports its times against (qsort of
 * 2^20 pseudo-random doubles, best of 3), so that figures from noisy or
 * different machines compare as ratios. Header-only: each bench program is its
 * own program. */
#ifndef BENCH_BENCH_COMMON_H
#define BENCH_BENCH_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double bench_peak_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Seconds for the reference computation (1 if out of memory). */
static inline double bench_reference_s(void)
{
    enum { N = 1 << 20 };
    double *v = malloc(N * sizeof(double)), best = 1e30;
    if (!v)
        return 1;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t x = 12345;
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            v[i] = (double)(x >> 11) / 9007199254740992.0;
        }
        double t0 = bench_now_s();
        qsort(v, N, sizeof(double), bench_cmp_double);
        double dt = bench_now_s() - t0;
        best = dt < best ? dt : best;
    }
    free(v);
    return best;
}

#endif
