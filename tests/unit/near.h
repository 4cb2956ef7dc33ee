/* What the cmocka unit tests share to compare numbers: include it after
 * <cmocka.h> (fail_msg). */
#ifndef TESTS_UNIT_NEAR_H
#define TESTS_UNIT_NEAR_H

#include <math.h>

/* |got - want| < tol, printing both on failure. */
#define NEAR(got, want, tol)                                                   \
    do {                                                                       \
        double g_ = (got), w_ = (want);                                        \
        if (!(fabs(g_ - w_) < (tol)))                                          \
            fail_msg("%s = %.6f, expected %.6f (tolerance %g)", #got, g_, w_,  \
                     (double)(tol));                                           \
    } while (0)

#endif
