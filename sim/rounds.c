#include "sim/rounds.h"

#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

rounds_stat rounds_of(const double *t, int n)
{
    rounds_stat s = {0, 0, 0};
    if (n < 1 || !t)
        return s;
    double small[64], *v = n <= 64 ? small : malloc(sizeof *v * (size_t)n);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    s.mean = sum / n;
    if (!v) { /* (no memory for the sort: the mean alone, as one round) */
        s.min = s.med = s.mean;
        return s;
    }
    memcpy(v, t, sizeof *v * (size_t)n);
    qsort(v, (size_t)n, sizeof *v, cmp);
    s.min = v[0];
    s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (v != small)
        free(v);
    return s;
}
