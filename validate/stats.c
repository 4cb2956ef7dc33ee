/* Error statistics. Medians come from gsl_sort + gsl_stats_median_from_
 * sorted_data on a copy of |relative errors|; choices group points by
 * exact size after sorting by (size, input order), so ties between
 * algorithms resolve deterministically to the first listed. */
#include "validate/stats.h"

#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

double stats_rel_err(double pred, double meas) { return pred / meas - 1; }

int stats_errors(const double *pred, const double *meas, size_t n, stats_err *out, err *e)
{
    out->n = n;
    out->median_abs = out->mean_abs = out->worst = NAN;
    out->worst_index = 0;
    if (n == 0)
        return err_set(e, ERR_CHECK, "no points to compare");
    double *a = malloc(n * sizeof *a);
    if (!a)
        return err_set(e, ERR_SYSTEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!(meas[i] > 0) || !isfinite(meas[i]) || !isfinite(pred[i])) {
            free(a);
            return err_set(e, ERR_CHECK, "point %zu: cannot compare predicted %g with measured %g",
                           i, pred[i], meas[i]);
        }
        double r = stats_rel_err(pred[i], meas[i]);
        a[i] = fabs(r);
        if (i == 0 || a[i] > fabs(out->worst)) {
            out->worst = r;
            out->worst_index = i;
        }
    }
    out->mean_abs = gsl_stats_mean(a, 1, n);
    gsl_sort(a, 1, n);
    out->median_abs = gsl_stats_median_from_sorted_data(a, 1, n);
    free(a);
    return 0;
}

static int by_size(const void *x, const void *y)
{
    const stats_point *const *a = x, *const *b = y;
    if ((*a)->size != (*b)->size)
        return (*a)->size < (*b)->size ? -1 : 1;
    return *a < *b ? -1 : *a > *b;   /* input order */
}

size_t stats_choices(const stats_point *p, size_t n, stats_choice *out)
{
    const stats_point **s = malloc(n * sizeof *s);
    if (!s)
        return 0;
    for (size_t i = 0; i < n; i++)
        s[i] = &p[i];
    qsort(s, n, sizeof *s, by_size);
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j]->size == s[i]->size)
            j++;
        if (j - i >= 2) {
            const stats_point *bm = s[i], *bp = s[i];
            for (size_t k = i + 1; k < j; k++) {
                if (s[k]->meas < bm->meas)
                    bm = s[k];
                if (s[k]->pred < bp->pred)
                    bp = s[k];
            }
            double second = INFINITY;
            for (size_t k = i; k < j; k++)
                if (s[k] != bm && s[k]->meas < second)
                    second = s[k]->meas;
            out[count++] = (stats_choice){s[i]->size, (int)(j - i), bm->algo, bp->algo,
                                          second / bm->meas - 1};
        }
        i = j;
    }
    free(s);
    return count;
}

double stats_accuracy(const stats_choice *c, size_t n)
{
    if (n == 0)
        return NAN;
    size_t agree = 0;
    for (size_t i = 0; i < n; i++)
        agree += c[i].meas_best == c[i].pred_best;
    return (double)agree / (double)n;
}

size_t stats_crossovers(const double *size, const double *ta, const double *tb, size_t n,
                        double *out, size_t max)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        double d = log(ta[i] / tb[i]);
        if (d == 0) {
            /* Equal at a measured size: that size is the crossover, unless
             * both neighbours lie on the same side (a touch, not a cross). */
            int before = i > 0 ? (ta[i - 1] > tb[i - 1]) - (ta[i - 1] < tb[i - 1]) : 0;
            int after = i + 1 < n ? (ta[i + 1] > tb[i + 1]) - (ta[i + 1] < tb[i + 1]) : 0;
            if (before && after && before != after) {
                if (count < max)
                    out[count] = size[i];
                count++;
            }
            continue;
        }
        if (i + 1 == n)
            break;
        double d1 = log(ta[i + 1] / tb[i + 1]);
        if (d1 != 0 && (d < 0) != (d1 < 0)) {
            double x0 = log(size[i]), x1 = log(size[i + 1]);
            double x = x0 + (x1 - x0) * d / (d - d1);
            if (count < max)
                out[count] = exp(x);
            count++;
        }
    }
    return count;
}
