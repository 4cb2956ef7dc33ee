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
        if (s->extra == 6 && i % 2)   /* a second latency on odd points: v[2] */
            pred += v[2];
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

/* A bandwidth bound by a link and a socket in series for the cross-socket
 * half of the points (odd i), by the link alone for the rest:
 * t = bytes / min(link, socket) (+ 1 us), v = {link_GBps, socket_GBps}. */
typedef struct capdata {
    double bytes[NPTS], meas_us[NPTS];
    double cap_GBps;        /* resid_cap1: a fixed capacity in series */
    double lo_seen, hi_seen; /* extremes of v[0] the fit asked for */
    int outside;            /* evaluations outside [lo, hi] or not finite */
    double lo, hi;
} capdata;

static int resid_cap(const double *v, double *r, void *ctx, err *e)
{
    (void)e;
    capdata *d = ctx;
    for (int i = 0; i < NPTS; i++) {
        double bw = i % 2 ? fmin(v[0], v[1]) : v[0];
        r[i] = log((1 + d->bytes[i] / (bw * 1e3)) / d->meas_us[i]);
    }
    return 0;
}

static void make_cap(capdata *d, double link, double sock)
{
    for (int i = 0; i < NPTS; i++) {
        d->bytes[i] = ldexp(4096, i % 12);
        double bw = i % 2 ? fmin(link, sock) : link;
        d->meas_us[i] = 1 + d->bytes[i] / (bw * 1e3);
    }
}

static void test_probe_finds_a_capacity_that_does_not_bind(void **state)
{
    (void)state;
    /* Truth: link 50, socket 36 GB/s. Start: socket 80 > link 50, so the
     * socket does not bind at the start: its Jacobian column is exactly 0
     * and the screen says "no influence" (the socket link the issue names).
     * The probe tries 80 x {1/16, 1/4, 1/2, 2, 4, 16} = 5, 20, 40, 160,
     * 320, 1280: at 40 the cross points are off by ln(40/36) (the time
     * ratio is below that, as 1 us is added), at 20 by more than ln(36/20)
     * / 2, at >= 80 by what the start has: 40 is the best and lowers the
     * cost. From there the noiseless fit lands on 36 (to 1e-6). */
    capdata d = {0};
    make_cap(&d, 50, 36);
    fit_param p[2] = {
        {.name = "link_GBps", .value = 50, .lo = 1e-3, .hi = 1e4, .log = 1},
        {.name = "socket_GBps", .value = 80, .lo = 1e-3, .hi = 1e4, .log = 1},
    };
    fit_why why[2];
    int with[2];
    err e = {0};
    assert_int_equal(fit_screen(p, 2, NPTS, resid_cap, &d, NULL, why, with, &e), 0);
    assert_int_equal(why[0], FIT_KEEP);
    assert_int_equal(why[1], FIT_NO_INFLUENCE);
    fit_probe_result pr;
    assert_int_equal(fit_probe(p, 2, 1, NPTS, resid_cap, &d, &pr, &e), 0);
    assert_true(pr.felt);
    assert_near(pr.best, 40, 1e-12);
    assert_true(pr.best_chi2 < pr.start_chi2);
    assert_true(pr.row >= 0 && pr.row % 2 == 1);   /* a cross-socket point */
    p[1].value = pr.best;
    fit_result res;
    assert_int_equal(fit_run(p, 2, NPTS, resid_cap, &d, NULL, &res, NULL, &e), 0);
    assert_near(p[0].value, 50, 50e-6);
    assert_near(p[1].value, 36, 36e-6);
    /* A capacity that binds nowhere (both halves measured at the link's
     * rate): every probe at or above the link's 50 changes nothing, and
     * those below make the fit worse: felt, but no better value. */
    capdata f = {0};
    make_cap(&f, 50, 1e9);
    p[0].value = 50;
    p[1].value = 80;
    assert_int_equal(fit_probe(p, 2, 1, NPTS, resid_cap, &f, &pr, &e), 0);
    assert_true(pr.felt);
    assert_true(pr.best == 80 && pr.best_chi2 == pr.start_chi2);
}

/* One capacity in series with a fixed one: t = 1 + bytes / min(v, cap). */
static int resid_cap1(const double *v, double *r, void *ctx, err *e)
{
    (void)e;
    capdata *d = ctx;
    if (!isfinite(v[0]) || v[0] < d->lo || v[0] > d->hi)
        d->outside++;
    d->lo_seen = fmin(d->lo_seen, v[0]);
    d->hi_seen = fmax(d->hi_seen, v[0]);
    for (int i = 0; i < NPTS; i++)
        r[i] = log((1 + d->bytes[i] / (fmin(v[0], d->cap_GBps) * 1e3)) / d->meas_us[i]);
    return 0;
}

static void test_restart_when_the_start_stalls(void **state)
{
    (void)state;
    /* Truth 20 GB/s behind a fixed 30 GB/s; start 100: min(100, 30) = 30
     * whatever v is near the start, so the Jacobian is 0, GSL takes no step
     * (nor after the 1% move) and the start stalls. The next start is the
     * start / 4 = 25 < 30, where v binds: from there the noiseless fit
     * reaches 20 (to 1e-6), on the second start. */
    capdata d = {.cap_GBps = 30, .lo = 1e-3, .hi = 1e4, .lo_seen = INFINITY};
    make_cap(&d, 20, 1e9);
    fit_param p[1] = {{.name = "bw_GBps", .value = 100, .lo = 1e-3, .hi = 1e4, .log = 1}};
    fit_result res;
    err e = {0};
    int rc = fit_run(p, 1, NPTS, resid_cap1, &d, NULL, &res, NULL, &e);
    if (rc)
        print_error("%s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(res.starts, 2);
    assert_near(p[0].value, 20, 20e-6);
    /* With one start only it is a failure that says so. */
    fit_opts o;
    fit_opts_default(&o);
    o.starts = 1;
    p[0].value = 100;
    assert_int_equal(fit_run(p, 1, NPTS, resid_cap1, &d, &o, &res, NULL, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "did not converge"));
}

/* t = 1.5 + bytes / bw + 1 / s: s is a rate whose best value is infinite
 * when the data were made without the 1 / s term. */
static int resid_runaway(const double *v, double *r, void *ctx, err *e)
{
    capdata *d = ctx;
    if (!isfinite(v[1]) || v[1] < d->lo || v[1] > d->hi) {
        d->outside++;
        return err_set(e, ERR_USAGE, "s = %g is outside [%g, %g]", v[1], d->lo, d->hi);
    }
    d->hi_seen = fmax(d->hi_seen, v[1]);
    for (int i = 0; i < NPTS; i++)
        r[i] = log((1.5 + d->bytes[i] / (v[0] * 1e3) + 1 / v[1]) / d->meas_us[i]);
    return 0;
}

static void test_no_iterate_leaves_the_domain(void **state)
{
    (void)state;
    /* The copy_setup_us = 2.9e22 and read_extra_lat_ns = inf: a log
     * parameter with lo = 0 was free in ln(v), so a key whose cost falls
     * all the way to infinity ran there and the model's own range check
     * (here: the residual function refuses values outside [0, 1e4], as
     * calib_set does) stopped the fit with a usage error. Data: bw 50, s
     * infinite (no 1 / s term). Now every evaluation stays inside [0, 1e4]
     * and finite, and the fit refuses s at its bound (1e4) naming it, with
     * bw still determined (50 within 1%: s = 1e4 adds 1e-4 us). */
    capdata d = {.lo = 0, .hi = 1e4, .hi_seen = 0};
    for (int i = 0; i < NPTS; i++) {
        d.bytes[i] = ldexp(4, i);
        d.meas_us[i] = 1.5 + d.bytes[i] / 50e3;
    }
    fit_param p[2] = {
        {.name = "bw_GBps", .value = 20, .lo = 1e-3, .hi = 1e4, .log = 1},
        {.name = "setup_rate", .value = 1, .lo = 0, .hi = 1e4, .log = 1},
    };
    fit_result res;
    err e = {0};
    int rc = fit_run(p, 2, NPTS, resid_runaway, &d, NULL, &res, NULL, &e);
    assert_int_equal(d.outside, 0);
    assert_true(d.hi_seen <= 1e4);
    assert_int_equal(rc, ERR_CHECK);
    assert_int_equal(res.bad_param, 1);
    assert_int_equal(res.bad_why, FIT_AT_BOUND);
    assert_non_null(strstr(e.msg, "setup_rate"));
    assert_true(isfinite(p[1].value) && p[1].value <= 1e4);
    assert_near(p[0].value, 50, 0.5);
    /* The residuals that should determine it are named: the smallest
     * transfers, where 1 / s shows most. */
    assert_true(res.bad_rows[0] >= 0 && res.bad_rows[0] <= 2);
}

static void test_ran_to_zero_names_the_data(void **state)
{
    (void)state;
    /* A second latency l2 on the odd points only, truth 0: lat 1.5 us, bw
     * 50 GB/s, l2 = 0. The fit drives l2 to its floor (1e-6 x start: lo = 0
     * is taken as that), reports it ran to zero, names an odd point as the
     * data that should determine it, and keeps lat and bw right (1e-3). */
    synth s = {.extra = 0};
    make_data(&s, 0, 0, 1);
    fit_param p[3] = {
        {.name = "lat_us", .value = 1.0, .lo = 1e-3, .hi = 1e3, .log = 1},
        {.name = "bw_GBps", .value = 20, .lo = 0.1, .hi = 1e4, .log = 1},
        {.name = "l2_us", .value = 0.5, .lo = 0, .hi = 1e3, .log = 1},
    };
    s.extra = 6;
    fit_result res;
    err e = {0};
    assert_int_equal(fit_run(p, 3, NPTS, resid_lat_bw, &s, NULL, &res, NULL, &e), ERR_CHECK);
    assert_int_equal(res.bad_param, 2);
    assert_int_equal(res.bad_why, FIT_TO_ZERO);
    assert_non_null(strstr(e.msg, "l2_us"));
    assert_true(p[2].value >= 0 && p[2].value < 1e-3 * 0.5);
    assert_true(res.bad_rows[0] >= 0 && res.bad_rows[0] % 2 == 1);
    assert_near(p[0].value, 1.5, 1.5e-3);
    assert_near(p[1].value, 50, 50e-3);
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
        cmocka_unit_test(test_probe_finds_a_capacity_that_does_not_bind),
        cmocka_unit_test(test_restart_when_the_start_stalls),
        cmocka_unit_test(test_no_iterate_leaves_the_domain),
        cmocka_unit_test(test_ran_to_zero_names_the_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
