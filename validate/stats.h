/* Error statistics of predictions against measurements: relative errors
 * (median and worst, through GSL's gsl_stats), decision accuracy (does the
 * model name the same fastest algorithm as the hardware at each size) and
 * crossover sizes between two algorithms. Pure functions on arrays. */
#ifndef VALIDATE_STATS_H
#define VALIDATE_STATS_H

#include <stddef.h>

#include "sim/err.h"

typedef struct stats_err {
    size_t n;
    double median_abs;    /* median of |pred / meas - 1| */
    double mean_abs;      /* mean of |pred / meas - 1| */
    double worst;         /* the relative error of largest magnitude, signed */
    size_t worst_index;   /* where it is */
} stats_err;

/* Relative error pred / meas - 1 (meas > 0). */
double stats_rel_err(double pred, double meas);
/* Summary of n >= 1 pairs; ERR_CHECK if a meas is not positive or a value
 * is not finite; ERR_SYSTEM on OOM. */
int stats_errors(const double *pred, const double *meas, size_t n, stats_err *out, err *e);

/* One measured point of an algorithm at a size. */
typedef struct stats_point {
    double size;          /* bytes */
    int algo;             /* caller's algorithm id */
    double pred, meas;    /* times */
} stats_point;

/* The fastest algorithm at one size, measured and predicted. */
typedef struct stats_choice {
    double size;
    int nalgos;           /* algorithms measured at this size (>= 2) */
    int meas_best, pred_best;
    double meas_margin;   /* second-fastest / fastest measured time - 1 */
} stats_choice;

/* Sizes where >= 2 algorithms were measured, ascending, with the winner
 * by measurement and by prediction (among the algorithms measured there;
 * ties go to the first listed). out needs room for n; returns the count. */
size_t stats_choices(const stats_point *p, size_t n, stats_choice *out);
/* Fraction of choices where the winners agree; NaN if n == 0. */
double stats_accuracy(const stats_choice *c, size_t n);

/* Sizes where ta and tb (n points at ascending sizes) cross: for each
 * adjacent pair where sign(ta - tb) changes, the size at which
 * ln(ta / tb) is zero, interpolated linearly in ln(size). A point where
 * they are equal counts as the crossover itself. Writes at most max;
 * returns how many there are. */
size_t stats_crossovers(const double *size, const double *ta, const double *tb, size_t n,
                        double *out, size_t max);

#endif
