/* Nonlinear least squares for calibration: GSL's gsl_multifit_nlinear
 * (trust region, Levenberg-Marquardt steps, finite-difference Jacobian) over
 * parameters kept inside their domain by the transform itself (log and
 * logistic maps), restarted from other points when the first start stalls.
 * After the fit it reports standard errors (covariance scaled by the
 * residual variance) and refuses, naming the parameter and the residuals
 * that should determine it, when the data cannot determine one. */
#ifndef VALIDATE_FIT_H
#define VALIDATE_FIT_H

#include <stddef.h>

#include "sim/err.h"

/* Why a parameter is left out (fit_screen) or refused (fit_run). */
typedef enum fit_why {
    FIT_KEEP, FIT_NO_INFLUENCE, FIT_DEPENDENT, FIT_AT_BOUND, FIT_TO_ZERO, FIT_UNCERTAIN
} fit_why;
const char *fit_why_text(fit_why w);   /* "no influence on the data", ... */

typedef struct fit_param {
    const char *name;   /* used in messages and reports */
    double value;       /* in: start value; out: fitted value */
    double lo, hi;      /* bounds, lo < hi (may be +-INFINITY); start inside */
    int log;            /* fit ln(value): needs lo > 0 or lo = 0 with value > 0.
                           The fit keeps a log parameter inside [lo, hi], with
                           lo = 0 taken as 1e-6 x start and hi = inf as 1e6 x
                           start, so no iterate leaves the domain or overflows */
    double sd;          /* out: standard error of value */
} fit_param;

/* Residuals r[0..nres-1] at parameter values v[0..np-1] (already weighted:
 * each residual should have about the same variance, e.g. ln(pred/meas)).
 * Returns 0, or an error code with e filled (the fit stops with it). */
typedef int fit_resid_fn(const double *v, double *r, void *ctx, err *e);

typedef struct fit_opts {
    int max_iter;       /* default 100 */
    double xtol, gtol, ftol;  /* GSL stopping tolerances; defaults 1e-8 */
    double fd_step;     /* relative finite-difference step, default 1e-4 (the
                           model's times are integer picoseconds) */
    double max_rel_sd;  /* refuse a parameter whose sd exceeds this fraction
                           of its value; default 0.5 */
    double min_rcond;   /* refuse when the scaled Jacobian's reciprocal
                           condition number is below this; default 1e-9 */
    double min_influence;   /* a parameter whose Jacobian column norm is below
                               this fraction of the largest has no influence;
                               default 1e-6 */
    double min_independence; /* fit_screen: a column whose part outside the
                                columns kept before it is below this fraction
                                of its norm depends on them; default 1e-2 */
    int known_sigma;    /* 1: residuals are already in units of their known
                           standard deviation: the covariance is not scaled by
                           chi2 / dof, and nres == np is allowed; default 0 */
    int starts;         /* starts tried when the first one stalls (does not
                           converge): the start moved by factors of 4 up, down
                           and alternating; the lowest cost wins; default 5 */
} fit_opts;

typedef struct fit_result {
    int iterations;
    int evaluations;     /* residual function calls */
    double chi2;         /* sum of squared residuals at the solution */
    size_t dof;          /* nres - np */
    double rcond;        /* of the column-scaled Jacobian */
    double sigma;        /* sqrt(chi2 / dof): the residuals' scale */
    int bad_param;       /* on a refusal, the parameter it names; else -1 */
    int bad_why;         /* fit_why of the refusal */
    int bad_with;        /* FIT_DEPENDENT: the parameter it trades off with */
    int bad_rows[3];     /* on a refusal, the residuals most sensitive to the
                            parameter where it was judged (-1: none is) */
    int starts;          /* starts tried */
    double start_chi2;   /* sum of squared residuals at the given start */
} fit_result;

void fit_opts_default(fit_opts *o);
/* Fit p[0..np-1] to nres residuals of f (nres > np; nres >= np with
 * known_sigma). On success values and sd are set, resid (nres, may be
 * NULL) holds the final residuals. Errors:
 * those of f; ERR_CHECK naming the parameter that the data cannot determine
 * (no influence, ran to a bound, trades off with another, sd too large). */
int fit_run(fit_param *p, size_t np, size_t nres, fit_resid_fn *f, void *ctx,
            const fit_opts *o, fit_result *res, double *resid, err *e);

/* Before fitting: the Jacobian at the start values. Parameters are taken
 * greedily by their influence not explained by those already taken (Gram-
 * Schmidt with pivoting); why[j] is FIT_KEEP, FIT_NO_INFLUENCE, or
 * FIT_DEPENDENT with with[j] the kept parameter it overlaps most. */
int fit_screen(const fit_param *p, size_t np, size_t nres, fit_resid_fn *f, void *ctx,
               const fit_opts *o, fit_why *why, int *with, err *e);

/* Whether parameter j, which has no influence at the start (a capacity that
 * does not bind there), has any elsewhere: the residuals with p[j] alone
 * moved to start x 1/16, 1/4, 1/2, 2, 4, 16 (inside its bounds). The probe
 * with the lowest cost below the start's goes to *best (else *best = the
 * start); *rows gets the residual most changed (-1 if none changed).
 * Returns 0 with *felt = 1 if some probe changed a residual. */
typedef struct fit_probe_result {
    int felt;            /* some probe changed the residuals */
    double best;         /* value of the lowest cost (the start if none lower) */
    double best_chi2, start_chi2;
    int row;             /* residual most changed, -1 if none */
} fit_probe_result;
int fit_probe(const fit_param *p, size_t np, size_t j, size_t nres, fit_resid_fn *f,
              void *ctx, fit_probe_result *out, err *e);
/* Sum of squared residuals at the values of p. */
int fit_cost(const fit_param *p, size_t np, size_t nres, fit_resid_fn *f, void *ctx,
             double *chi2, err *e);

#endif
