/* Unit tests of the fitting engine on synthetic data: a latency-bandwidth
 * model t = lat + bytes / bw with known parameters plus seeded Gaussian
 * noise (GSL's RNG), fitted back; and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

/* cmocka's assert_float_equal works in float; this one in double and says
 * what it got. */
#define assert_near(a, b, tol)                                                 \
    do {                                                                       \
        double a_ = (a), b_ = (b), t_ = (tol);                                 \
        if (!(fabs(a_ - b_) <= t_)) {                                          \
            print_error("%s = %.17g, expected %.17g +- %g\n", #a, a_, b_, t_); \
            fail();                                                            \
        }                                                                      \
    } while (0)

#include "validate/fit.h"

enum { NPTS = 24 };

typedef struct synth {
    double bytes[NPTS], meas_us[NPTS];
    int extra;   /* which extra parameter form the model uses (see below) */
} synth;

/* ln(pred / meas): relative residuals, the weighting calibrate uses. */
static int resid_lat_bw(const double *v, double *r, void *ctx, err *e)
{
    (void)e;
    const synth *s = ctx;
    for (int i = 0; i < NPTS; i++) {
        double bw = s->extra == 2 ? v[1] * v[2] : v[1];  /* 2: bw = a*b, degenerate */
        double pred = v[0] + s->bytes[i] / (bw * 1e3);
        if (s->extra == 3)
            pred += v[2];             /* a linear offset, may be negative */
        if (s->extra == 5)            /* two latencies in series: v = {l1, bw, l2} */
            pred = v[0] + v[2] + s->bytes[i] / (v[1] * 1e3);
        if (s->extra == 4)            /* lat fixed at 1.5: v = {bw, offset} */
            pred = 1.5 + v[1] + s->bytes[i] / (v[0] * 1e3);
        r[i] = log(pred / s->meas_us[i]);
    }
    return 0;
}

/* Data from lat = 1.5 us, bw = 50 GB/s (+ offset), sizes 4 B .. 64 MiB by
 * factors of two, times multiplied by exp(N(0, sigma)) with a fixed seed. */
static void make_data(synth *s, double sigma, double offset_us, unsigned long seed)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    for (int i = 0; i < NPTS; i++) {
        s->bytes[i] = ldexp(4, i);
        double t = 1.5 + s->bytes[i] / 50e3 + offset_us;
        s->meas_us[i] = t * exp(gsl_ran_gaussian(rng, sigma));
    }
    gsl_rng_free(rng);
}

static void test_recovers_known_parameters(void **state)
{
    (void)state;
    /* Several seeds: each fit must land within 3 reported standard errors
     * of the truth (a 3-sigma band fails about 0.3% of the time per
     * parameter for a correct sd; these seeds are fixed, so the test is
     * deterministic). With 2% noise on 24 points, sd(lat) is about 1% of
     * 1.5 us and sd(bw) about 0.7% of 50 GB/s: both well below 5%. */
    for (unsigned long seed = 1; seed <= 5; seed++) {
        synth s = {.extra = 0};
        make_data(&s, 0.02, 0, seed);
        fit_param p[2] = {
            {.name = "lat_us", .value = 1.0, .lo = 1e-3, .hi = 1e3, .log = 1},
            {.name = "bw_GBps", .value = 20, .lo = 0.1, .hi = 1e4, .log = 1},
        };
        fit_result res;
        double resid[NPTS];
        err e = {0};
        int rc = fit_run(p, 2, NPTS, resid_lat_bw, &s, NULL, &res, resid, &e);
        if (rc)
            print_error("seed %lu: %s\n", seed, e.msg);
        assert_int_equal(rc, 0);
        assert_true(p[0].sd > 0 && p[1].sd > 0);
        assert_true(fabs(p[0].value - 1.5) <= 3 * p[0].sd);
        assert_true(fabs(p[1].value - 50) <= 3 * p[1].sd);
        assert_true(p[0].sd < 0.05 * 1.5 && p[1].sd < 0.05 * 50);
        /* The residual scale estimates the noise: sigma = 0.02 within 50%. */
        assert_true(res.sigma > 0.01 && res.sigma < 0.03);
        assert_int_equal(res.dof, NPTS - 2);
        /* Returned residuals are the final ones: their squares sum to chi2. */
        double chi2 = 0;
        for (int i = 0; i < NPTS; i++)
            chi2 += resid[i] * resid[i];
        assert_near(chi2, res.chi2, 1e-12);
    }
}

static void test_noiseless_exact(void **state)
{
    (void)state;
    /* Without noise the fit is exact: values to 1e-6 relative, sd ~ 0. */
    synth s = {.extra = 0};
    make_data(&s, 0, 0, 1);
    fit_param p[2] = {
        {.name = "lat_us", .value = 10, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "bw_GBps", .value = 5, .lo = 0.1, .hi = 1e4, .log = 1},
    };
    fit_result res;
    err e = {0};
    assert_int_equal(fit_run(p, 2, NPTS, resid_lat_bw, &s, NULL, &res, NULL, &e), 0);
    assert_near(p[0].value, 1.5, 1.5e-6);
    assert_near(p[1].value, 50, 50e-6);
    assert_true(p[0].sd < 1e-6 && p[1].sd < 1e-5);
}

static void test_linear_parameter(void **state)
{
    (void)state;
    /* A linear (not log) offset of -0.5 us on top of lat 1.5 us: only the
     * sum lat + offset = 1.0 is seen, so lat and offset trade off exactly
     * (correlation -1): refused, naming both. */
    synth s = {.extra = 3};
    make_data(&s, 0.01, -0.5, 7);
    fit_param p[3] = {
        {.name = "lat_us", .value = 1.0, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "bw_GBps", .value = 20, .lo = 0.1, .hi = 1e4, .log = 1},
        {.name = "offset_us", .value = 0.1, .lo = -10, .hi = 10, .log = 0},
    };
    fit_result res;
    err e = {0};
    assert_int_equal(fit_run(p, 3, NPTS, resid_lat_bw, &s, NULL, &res, NULL, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "offset_us"));
    assert_non_null(strstr(e.msg, "lat_us"));
    assert_non_null(strstr(e.msg, "trades off") ? e.msg : strstr(e.msg, "tell it apart"));
    /* Without the lat parameter, the offset (true value -0.5) is fitted as
     * a linear parameter: within 3 sd of the truth. */
    p[0] = p[1];
    p[1] = p[2];
    s.extra = 4;
    assert_int_equal(fit_run(p, 2, NPTS, resid_lat_bw, &s, NULL, &res, NULL, &e), 0);
    assert_true(fabs(p[1].value - -0.5) <= 3 * p[1].sd);
    assert_true(p[1].sd > 0 && p[1].sd < 0.1);
}

/* A model with a parameter that does not enter the residuals at all. */
static int resid_ignores_third(const double *v, double *r, void *ctx, err *e)
{
    return resid_lat_bw(v, r, ctx, e);
}

static void test_refuses_no_influence(void **state)
{
    (void)state;
    /* read_tags does not appear in t = lat + bytes/bw: its Jacobian column
     * is exactly zero, so the fit must refuse and name it. */
    synth s = {.extra = 0};
    make_data(&s, 0.02, 0, 3);
    fit_param p[3] = {
        {.name = "lat_us", .value = 1.0, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "bw_GBps", .value = 20, .lo = 0.1, .hi = 1e4, .log = 1},
        {.name = "read_tags", .value = 256, .lo = 1, .hi = 4096, .log = 1},
    };
    fit_result res;
    err e = {0};
    assert_int_equal(fit_run(p, 3, NPTS, resid_ignores_third, &s, NULL, &res, NULL, &e),
                     ERR_CHECK);
    assert_non_null(strstr(e.msg, "read_tags"));
    assert_non_null(strstr(e.msg, "no influence"));
    assert_int_equal(res.bad_param, 2);
    assert_int_equal(res.bad_why, FIT_NO_INFLUENCE);
}

static void test_refuses_degenerate_pair(void **state)
{
    (void)state;
    /* bw = a * b: only the product is determined; refused naming a and b. */
    synth s = {.extra = 2};
    make_data(&s, 0.02, 0, 4);
    fit_param p[3] = {
        {.name = "lat_us", .value = 1.0, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "a_GBps", .value = 5, .lo = 0.1, .hi = 1e4, .log = 1},
        {.name = "b_ratio", .value = 2, .lo = 0.01, .hi = 100, .log = 1},
    };
    fit_result res;
    err e = {0};
    assert_int_equal(fit_run(p, 3, NPTS, resid_lat_bw, &s, NULL, &res, NULL, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "a_GBps"));
    assert_non_null(strstr(e.msg, "b_ratio"));
}

static void test_refuses_bound_and_too_few(void **state)
{
    (void)state;
    /* True bw is 50 GB/s but the bound is 30: the fit runs to the bound. */
    synth s = {.extra = 0};
    make_data(&s, 0.02, 0, 5);
    fit_param p[2] = {
        {.name = "lat_us", .value = 1.0, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "bw_GBps", .value = 20, .lo = 1, .hi = 30, .log = 1},
    };
    fit_result res;
    err e = {0};
    assert_int_equal(fit_run(p, 2, NPTS, resid_lat_bw, &s, NULL, &res, NULL, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "bw_GBps"));
    assert_non_null(strstr(e.msg, "bound"));
    assert_int_equal(res.bad_param, 1);
    assert_int_equal(res.bad_why, FIT_AT_BOUND);
    /* Two points cannot determine two parameters with an error estimate. */
    p[1].hi = 1e4;
    assert_int_equal(fit_run(p, 2, 2, resid_lat_bw, &s, NULL, &res, NULL, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "more points"));
}

static void test_screen(void **state)
{
    (void)state;
    /* Screening for t = lat + bytes / (a b): lat is kept; a and b enter
     * only through a*b, so their columns are equal: one of them is kept and
     * the other is dependent on it; tags has no influence. */
    synth s = {.extra = 2};
    make_data(&s, 0.02, 0, 4);
    fit_param p[4] = {
        {.name = "lat_us", .value = 1.0, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "a_GBps", .value = 5, .lo = 0.1, .hi = 1e4, .log = 1},
        {.name = "b_ratio", .value = 2, .lo = 0.01, .hi = 100, .log = 1},
        {.name = "read_tags", .value = 256, .lo = 1, .hi = 4096, .log = 1},
    };
    fit_why why[4];
    int with[4];
    err e = {0};
    assert_int_equal(fit_screen(p, 4, NPTS, resid_lat_bw, &s, NULL, why, with, &e), 0);
    assert_int_equal(why[0], FIT_KEEP);
    int kept = why[1] == FIT_KEEP ? 1 : 2, dep = 3 - kept;
    assert_int_equal(why[kept], FIT_KEEP);
    assert_int_equal(why[dep], FIT_DEPENDENT);
    assert_int_equal(with[dep], kept);
    assert_int_equal(why[3], FIT_NO_INFLUENCE);
    /* Two latencies in series (1.2 + 0.3 us) are one sum to the data; in
     * log space the larger has 4x the influence, so it is the one kept. */
    synth s5 = {.extra = 5};
    make_data(&s5, 0.02, 0, 4);
    fit_param q[3] = {
        {.name = "big_lat_us", .value = 1.2, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "bw_GBps", .value = 50, .lo = 0.1, .hi = 1e4, .log = 1},
        {.name = "small_lat_us", .value = 0.3, .lo = 1e-3, .hi = 1e3, .log = 1},
    };
    assert_int_equal(fit_screen(q, 3, NPTS, resid_lat_bw, &s5, NULL, why, with, &e), 0);
    assert_int_equal(why[0], FIT_KEEP);
    assert_int_equal(why[1], FIT_KEEP);
    assert_int_equal(why[2], FIT_DEPENDENT);
    assert_int_equal(with[2], 0);
    /* Listed the other way round, the larger one is still kept. */
    fit_param tmp = q[0];
    q[0] = q[2];
    q[2] = tmp;
    assert_int_equal(fit_screen(q, 3, NPTS, resid_lat_bw, &s5, NULL, why, with, &e), 0);
    assert_int_equal(why[2], FIT_KEEP);
    assert_int_equal(why[0], FIT_DEPENDENT);
    assert_int_equal(with[0], 2);
    /* Screening does not move the parameters. */
    assert_true(p[1].value == 5 && p[2].value == 2);
    /* The refusal of the full fit names the same parameter by index. */
    fit_result res;
    assert_int_equal(fit_run(p, 4, NPTS, resid_lat_bw, &s, NULL, &res, NULL, &e), ERR_CHECK);
    assert_int_equal(res.bad_param, 3);
}

/* Two residuals of known scale: r0 = (a + b - 5) / 0.1, r1 = (a - b - 1) / 0.2. */
static int resid_known(const double *v, double *r, void *ctx, err *e)
{
    (void)ctx, (void)e;
    r[0] = (v[0] + v[1] - 5) / 0.1;
    r[1] = (v[0] - v[1] - 1) / 0.2;
    return 0;
}

static void test_known_sigma(void **state)
{
    (void)state;
    /* Two measurements, two parameters: a + b = 5 (sd 0.1), a - b = 1 (sd
     * 0.2) give a = 3, b = 2 exactly; a = (m0 + m1)/2 and b = (m0 - m1)/2,
     * so sd(a) = sd(b) = sqrt(0.1^2 + 0.2^2) / 2 = 0.111803. Without
     * known_sigma the fit refuses (no dof); with it, nres == np is fine and
     * the covariance is not rescaled by chi2 (= 0 here). Tolerance 1e-5
     * relative (finite-difference Jacobian on a linear model). */
    fit_param p[2] = {
        {.name = "a", .value = 1, .lo = -10, .hi = 10},
        {.name = "b", .value = 1, .lo = -10, .hi = 10},
    };
    fit_result res;
    err e = {0};
    assert_int_equal(fit_run(p, 2, 2, resid_known, NULL, NULL, &res, NULL, &e), ERR_CHECK);
    fit_opts o;
    fit_opts_default(&o);
    o.known_sigma = 1;
    assert_int_equal(fit_run(p, 2, 2, resid_known, NULL, &o, &res, NULL, &e), 0);
    assert_near(p[0].value, 3, 1e-6);
    assert_near(p[1].value, 2, 1e-6);
    assert_near(p[0].sd, sqrt(0.05) / 2, 1e-5 * 0.111803);
    assert_near(p[1].sd, sqrt(0.05) / 2, 1e-5 * 0.111803);
    assert_int_equal((int)res.dof, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recovers_known_parameters),
        cmocka_unit_test(test_noiseless_exact),
        cmocka_unit_test(test_linear_parameter),
        cmocka_unit_test(test_refuses_no_influence),
        cmocka_unit_test(test_refuses_degenerate_pair),
        cmocka_unit_test(test_refuses_bound_and_too_few),
        cmocka_unit_test(test_screen),
        cmocka_unit_test(test_known_sigma),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
