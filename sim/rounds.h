/* A timed loop repeated in rounds (hwcheck coll --rounds): each round's
 * mean per call, and what the rounds say together. A stall inside one
 * round lifts that round's mean and the mean of all calls, not the median
 * of the rounds; a slower level of the whole machine lifts them all.
 * docs/formats.md "Measurements" (round_min_us, round_med_us). */
#ifndef SIM_ROUNDS_H
#define SIM_ROUNDS_H

typedef struct rounds_stat {
    double mean; /* over every call: the mean of the rounds' means (rounds of equal length) */
    double min;  /* the fastest round's mean */
    double med;  /* the median of the rounds' means (the middle two's mean for an even count) */
} rounds_stat;

/* The statistics of n >= 1 rounds' means t[0..n-1] (t is left as it is);
 * n < 1 gives zeros. */
rounds_stat rounds_of(const double *t, int n);

#endif
