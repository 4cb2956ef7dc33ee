/* Fitting engine. The solver works on unconstrained internal coordinates u:
 * y = ln(v) for log parameters (else y = v), and y is mapped from u so that
 * every trial point lies inside the parameter's domain: a logistic,
 * y = lo + (hi - lo) / (1 + e^-u), when both bounds are finite (always, for
 * log parameters: a lower bound of 0 becomes 1e-6 x start, an infinite upper
 * bound 1e6 x start), y = lo + e^u or hi - e^u with one bound. When GSL's
 * trust-region driver does not converge from the start, it is restarted
 * from the start moved by factors of 4 (fit_opts.starts) and the lowest
 * cost wins. After the solve the Jacobian is recomputed by forward
 * differences in y (relative steps), its columns are scaled to relative
 * sensitivities and equilibrated, and an SVD gives the condition number, the
 * parameter combination the data cannot see (smallest singular vector) and
 * the covariance, scaled by chi2 / (n - p) unless the residuals' scale is
 * known (known_sigma). Standard errors of v follow by the delta method. */
#include "validate/fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit_nlinear.h>

/* How u maps onto y: free, both bounds (logistic), lower or upper only. */
typedef enum xkind { X_FREE, X_BOTH, X_LOW, X_HIGH } xkind;
typedef struct xform {
    double ylo, yhi;   /* bounds in y */
    xkind kind;
} xform;

/* A log parameter's domain in y when a bound is 0 or infinite: this many
 * e-folds of ten around the start (1e-6 .. 1e6 x start). */
#define FIT_LOG_SPAN 6.0

typedef struct run {
    fit_param *p;
    size_t np, nres;
    fit_resid_fn *f;
    void *ctx;
    err *e;
    int rc;
    int evals;
    xform *t;
    double *v;         /* scratch parameter values */
    double *start;     /* start values, to tell "ran to zero" */
    double *res;       /* scratch residuals (nres) */
} run;

const char *fit_why_text(fit_why w)
{
    static const char *const text[] = {
        "determined", "no influence on the data", "not separable from another parameter",
        "ran to its bound", "ran to zero", "too uncertain",
    };
    return (unsigned)w < sizeof text / sizeof text[0] ? text[w] : "?";
}

void fit_opts_default(fit_opts *o)
{
    o->max_iter = 100;
    o->xtol = o->gtol = o->ftol = 1e-8;
    o->fd_step = 1e-4;
    o->max_rel_sd = 0.5;
    o->min_rcond = 1e-9;
    o->min_influence = 1e-6;
    o->min_independence = 1e-2;
    o->known_sigma = 0;
    o->starts = 5;
}

static double y_of_v(const fit_param *p, double v) { return p->log ? log(v) : v; }
/* The value of y, inside [lo, hi] also where exp() of a bound's logarithm
 * rounds past the bound. */
static double v_of_y(const fit_param *p, double y)
{
    double v = p->log ? exp(y) : y;
    return v < p->lo ? p->lo : v > p->hi ? p->hi : v;
}

static double y_of_u(const xform *t, double u)
{
    double x = u > 700 ? 700 : u;   /* e^700 is finite */
    switch (t->kind) {
    case X_BOTH: return t->ylo + (t->yhi - t->ylo) / (1 + exp(-u));
    case X_LOW: return t->ylo + exp(x);
    case X_HIGH: return t->yhi - exp(x);
    case X_FREE: break;
    }
    return u;
}

static double u_of_y(const xform *t, double y)
{
    switch (t->kind) {
    case X_BOTH: return log((y - t->ylo) / (t->yhi - y));
    case X_LOW: return log(y - t->ylo);
    case X_HIGH: return log(t->yhi - y);
    case X_FREE: break;
    }
    return y;
}

/* The domain of p in y, from its bounds and start value. */
static xform xform_of(const fit_param *p)
{
    if (p->log) {
        double lo = p->lo > 0 ? log(p->lo) : log(p->value) - FIT_LOG_SPAN * log(10);
        double hi = isfinite(p->hi) ? log(p->hi) : log(p->value) + FIT_LOG_SPAN * log(10);
        return (xform){lo, hi, X_BOTH};
    }
    int flo = isfinite(p->lo), fhi = isfinite(p->hi);
    return (xform){p->lo, p->hi, flo && fhi ? X_BOTH : flo ? X_LOW : fhi ? X_HIGH : X_FREE};
}

/* Call the user's function at values v, checking the residuals. */
static int eval(run *r, const double *v, double *res)
{
    r->evals++;
    int rc = r->f(v, res, r->ctx, r->e);
    if (rc)
        return rc;
    for (size_t i = 0; i < r->nres; i++)
        if (!isfinite(res[i]))
            return err_set(r->e, ERR_CHECK, "residual %zu is not finite (%g) at %s = %g", i,
                           res[i], r->p[0].name, v[0]);
    return 0;
}

static int gsl_f(const gsl_vector *x, void *params, gsl_vector *f)
{
    run *r = params;
    for (size_t j = 0; j < r->np; j++)
        r->v[j] = v_of_y(&r->p[j], y_of_u(&r->t[j], gsl_vector_get(x, j)));
    double *res = malloc(r->nres * sizeof *res);
    if (!res) {
        r->rc = err_set(r->e, ERR_SYSTEM, "out of memory");
        return GSL_ENOMEM;
    }
    r->rc = eval(r, r->v, res);
    for (size_t i = 0; i < r->nres && !r->rc; i++)
        gsl_vector_set(f, i, res[i]);
    free(res);
    return r->rc ? GSL_EBADFUNC : GSL_SUCCESS;
}

/* Jacobian in y at values v (forward differences, steps kept inside the
 * bounds); column j is scaled by scale[j] (|v| for linear parameters) so
 * every column is a sensitivity to a relative change. */
static int jacobian_y(run *r, const double *r0, gsl_matrix *J, double step, double *scale)
{
    double *v = malloc(r->np * sizeof *v), *r1 = malloc(r->nres * sizeof *r1);
    if (!v || !r1) {
        free(v);
        free(r1);
        return err_set(r->e, ERR_SYSTEM, "out of memory");
    }
    int rc = 0;
    for (size_t j = 0; j < r->np && !rc; j++) {
        memcpy(v, r->v, r->np * sizeof *v);
        const fit_param *p = &r->p[j];
        double y = y_of_v(p, v[j]);
        double h;
        if (p->log) {
            h = step;
            scale[j] = 1;
        } else {
            scale[j] = fabs(v[j]) > 0 ? fabs(v[j])
                       : isfinite(p->hi - p->lo) ? p->hi - p->lo : 1;
            h = step * scale[j];
        }
        if ((r->t[j].kind == X_BOTH || r->t[j].kind == X_HIGH) && y + h >= r->t[j].yhi)
            h = -h;
        v[j] = v_of_y(p, y + h);
        rc = eval(r, v, r1);
        for (size_t i = 0; i < r->nres && !rc; i++)
            gsl_matrix_set(J, i, j, (r1[i] - r0[i]) / h * scale[j]);
    }
    free(v);
    free(r1);
    return rc;
}

/* The (up to) three rows of column j of J with the largest |entry| > 0. */
static void rows_of(const gsl_matrix *J, size_t j, int rows[3])
{
    rows[0] = rows[1] = rows[2] = -1;
    double best[3] = {0, 0, 0};
    for (size_t i = 0; i < J->size1; i++) {
        double a = fabs(gsl_matrix_get(J, i, j));
        for (int k = 0; k < 3; k++)
            if (a > best[k]) {
                for (int m = 2; m > k; m--) {
                    best[m] = best[m - 1];
                    rows[m] = rows[m - 1];
                }
                best[k] = a;
                rows[k] = (int)i;
                break;
            }
    }
}

/* Covariance (V S^-2 V^T)_jk of the equilibrated parameters. */
static double cov_eq(const gsl_matrix *V, const gsl_vector *S, size_t j, size_t k)
{
    double c = 0;
    for (size_t l = 0; l < S->size; l++) {
        double s = gsl_vector_get(S, l);
        c += gsl_matrix_get(V, j, l) * gsl_matrix_get(V, k, l) / (s * s);
    }
    return c;
}

/* After the solve: identifiability checks and the covariance. */
static int uncertainties(run *r, const fit_opts *o, const double *r0, double chi2,
                         fit_result *res)
{
    size_t n = r->nres, np = r->np;
    gsl_matrix *J = gsl_matrix_alloc(n, np), *V = gsl_matrix_alloc(np, np);
    gsl_vector *S = gsl_vector_alloc(np), *work = gsl_vector_alloc(np);
    double *scale = malloc(np * sizeof *scale), *norm = malloc(np * sizeof *norm);
    int(*rows)[3] = malloc(np * sizeof *rows);
    int rc = 0;
    if (!J || !V || !S || !work || !scale || !norm || !rows) {
        rc = err_set(r->e, ERR_SYSTEM, "out of memory");
        goto out;
    }
    if ((rc = jacobian_y(r, r0, J, o->fd_step, scale)))
        goto out;
    double maxnorm = 0;
    for (size_t j = 0; j < np; j++) {
        gsl_vector_view c = gsl_matrix_column(J, j);
        norm[j] = gsl_blas_dnrm2(&c.vector);
        if (norm[j] > maxnorm)
            maxnorm = norm[j];
    }
    for (size_t j = 0; j < np; j++) {
        const fit_param *p = &r->p[j];
        int tiny = !(norm[j] > o->min_influence * maxnorm) || norm[j] == 0;
        rows_of(J, j, rows[j]);
        memcpy(res->bad_rows, rows[j], sizeof rows[j]);
        /* A log parameter driven far below its start (where the model's
         * integer picoseconds no longer resolve it) ran to zero. */
        if (p->log && p->lo < 1e-3 * r->start[j] &&
            (r->v[j] < 1e-3 * r->start[j] || (tiny && r->v[j] < 0.1 * r->start[j]))) {
            res->bad_param = (int)j;
            res->bad_why = FIT_TO_ZERO;
            rc = err_set(r->e, ERR_CHECK,
                         "cannot determine %s: the fit drove it to zero (%g, from %g); the "
                         "data say it is negligible: fix it", p->name, r->v[j], r->start[j]);
            goto out;
        }
        if (tiny) {
            res->bad_param = (int)j;
            res->bad_why = FIT_NO_INFLUENCE;
            rc = err_set(r->e, ERR_CHECK,
                         "cannot determine %s: it has no influence on the data at the "
                         "solution (%g) (measure what depends on it, or fix it)", p->name,
                         r->v[j]);
            goto out;
        }
        if (r->t[j].kind != X_FREE) {
            const xform *t = &r->t[j];
            double y = y_of_v(p, r->v[j]);
            double w = t->kind == X_BOTH ? t->yhi - t->ylo : fabs(y) > 1 ? fabs(y) : 1;
            /* Within 0.1% of the domain's width in y of a bound: the
             * logistic only approaches it. The floor of a log parameter with
             * lo = 0 is "zero", above. */
            int at_lo = t->kind != X_HIGH && !(p->log && p->lo <= 0) && y - t->ylo < 1e-3 * w;
            int at_hi = t->kind != X_LOW && t->yhi - y < 1e-3 * w;
            if (at_lo || at_hi) {
                res->bad_param = (int)j;
                res->bad_why = FIT_AT_BOUND;
                rc = err_set(r->e, ERR_CHECK,
                             "cannot determine %s: the fit ran to its bound (%g, "
                             "allowed [%g, %g])", p->name, r->v[j], p->lo, p->hi);
                goto out;
            }
        }
        gsl_vector_view c = gsl_matrix_column(J, j);
        gsl_vector_scale(&c.vector, 1 / norm[j]);
    }
    if (gsl_linalg_SV_decomp(J, V, S, work)) {
        rc = err_set(r->e, ERR_CHECK, "singular value decomposition failed");
        goto out;
    }
    double smax = gsl_vector_get(S, 0), smin = gsl_vector_get(S, np - 1);
    res->rcond = smax > 0 ? smin / smax : 0;
    if (res->rcond < o->min_rcond) {
        /* The smallest singular vector is the combination the data cannot see. */
        size_t a = 0, b = np > 1 ? 1 : 0;
        for (size_t j = 0; j < np; j++) {
            double x = fabs(gsl_matrix_get(V, j, np - 1));
            if (x > fabs(gsl_matrix_get(V, a, np - 1))) {
                b = a;
                a = j;
            } else if (j != a && (b == a || x > fabs(gsl_matrix_get(V, b, np - 1)))) {
                b = j;
            }
        }
        res->bad_param = (int)a;
        memcpy(res->bad_rows, rows[a], sizeof rows[a]);
        res->bad_why = FIT_DEPENDENT;
        res->bad_with = (int)b;
        rc = err_set(r->e, ERR_CHECK,
                     "cannot determine %s: the data cannot tell it apart from %s "
                     "(condition 1/%.3g); measure a pattern that separates them or fix one",
                     r->p[a].name, r->p[b].name, 1 / (res->rcond > 0 ? res->rcond : 1e-300));
        goto out;
    }
    double s2 = o->known_sigma ? 1 : res->dof ? chi2 / (double)res->dof : 0;
    for (size_t j = 0; j < np; j++) {
        double var = cov_eq(V, S, j, j);
        double sd_z = sqrt(var * s2) / norm[j];    /* relative (log) units */
        fit_param *p = &r->p[j];
        p->sd = sd_z * (p->log ? r->v[j] : scale[j]);
        if (sd_z > o->max_rel_sd && (p->log || r->v[j] != 0)) {
            /* Name the parameter it is most correlated with, if any. */
            size_t best = j;
            double cbest = 0;
            for (size_t k = 0; k < np; k++) {
                double c = k == j ? 0 : cov_eq(V, S, j, k) / sqrt(var * cov_eq(V, S, k, k));
                if (fabs(c) > fabs(cbest)) {
                    cbest = c;
                    best = k;
                }
            }
            res->bad_param = (int)j;
            memcpy(res->bad_rows, rows[j], sizeof rows[j]);
            res->bad_why = fabs(cbest) > 0.9 ? FIT_DEPENDENT : FIT_UNCERTAIN;
            res->bad_with = (int)best;
            if (fabs(cbest) > 0.9)
                rc = err_set(r->e, ERR_CHECK,
                             "cannot determine %s: %g +- %.2g; it trades off with %s "
                             "(correlation %.3f): measure a pattern that separates them or "
                             "fix one", p->name, r->v[j], p->sd, r->p[best].name, cbest);
            else
                rc = err_set(r->e, ERR_CHECK,
                             "cannot determine %s: %g +- %.2g is uncertain by more than %.0f%%",
                             p->name, r->v[j], p->sd, 100 * o->max_rel_sd);
            goto out;
        }
    }
out:
    free(rows);
    gsl_matrix_free(J);
    gsl_matrix_free(V);
    gsl_vector_free(S);
    gsl_vector_free(work);
    free(scale);
    free(norm);
    return rc;
}

/* GSL's driver loop from x, plus one stop of our own: the model is piecewise
 * smooth (integer picoseconds, min() of capacities), so near an optimum the
 * steps can go on changing x by more than xtol while the cost no longer
 * moves; 10 iterations without a relative gain of 1e-12 in the cost count as
 * converged (as GSL's "no progress"). No step at all from the start is a
 * failure, as in GSL's driver; the start is then moved by 1% of every
 * (transformed) parameter and tried once more: a start that already sits at
 * a kink of the model, such as a preset holding the fit's own values, is
 * left that way. Returns the GSL status: GSL_SUCCESS or GSL_ENOPROG when
 * converged, GSL_EMAXITER when not; r->rc set if the model failed. */
static int solve(run *r, gsl_multifit_nlinear_workspace *w, gsl_multifit_nlinear_fdf *fdf,
                 gsl_vector *x, const fit_opts *o)
{
    int info = 0, status = GSL_CONTINUE;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt)
            for (size_t j = 0; j < r->np; j++) {
                double u = gsl_vector_get(x, j);
                gsl_vector_set(x, j, u + 0.01 * (fabs(u) > 1 ? fabs(u) : 1));
            }
        gsl_multifit_nlinear_init(x, fdf, w);
        if (r->rc)
            break;
        int flat = 0;
        double cost = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
        status = GSL_CONTINUE;
        for (int it = 0; it < o->max_iter && status == GSL_CONTINUE; it++) {
            status = gsl_multifit_nlinear_iterate(w);
            if (r->rc)
                break;
            if (status == GSL_ENOPROG && it == 0) {
                status = GSL_EMAXITER;  /* no step from the start */
                break;
            }
            if (status != GSL_SUCCESS && status != GSL_ENOPROG)
                break;
            status = gsl_multifit_nlinear_test(o->xtol, o->gtol, o->ftol, &info, w);
            double c = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
            flat = c > cost * (1 - 1e-12) ? flat + 1 : 0;
            cost = c < cost ? c : cost;
            if (status == GSL_CONTINUE && flat >= 10)
                status = GSL_ENOPROG;
        }
        if (status == GSL_CONTINUE)
            status = GSL_EMAXITER;
        if (status != GSL_EMAXITER || r->rc)
            break;
    }
    return status;
}

/* Start k >= 1 of the multi-start: every parameter's y moved from the
 * start's by a factor of 4 (a quarter of the range for a linear one), all
 * down (k = 1), all up (2), alternating (3, 4), then twice as far; kept
 * inside the domain. */
static void alt_start(const run *r, const gsl_vector *x0, int k, gsl_vector *x)
{
    for (size_t j = 0; j < r->np; j++) {
        const xform *t = &r->t[j];
        const fit_param *p = &r->p[j];
        double y = y_of_v(p, r->start[j]);
        int pat = (k - 1) % 4;
        double sign = pat == 0 ? -1 : pat == 1 ? 1 : ((j % 2 == 0) == (pat == 2) ? -1 : 1);
        double far = 1 + (k - 1) / 4;
        double step = p->log ? log(4.0)
                      : t->kind == X_BOTH ? 0.25 * (t->yhi - t->ylo)
                                          : 0.5 * (fabs(y) > 1 ? fabs(y) : 1);
        double yn = y + sign * far * step;
        if (t->kind == X_BOTH || t->kind == X_LOW)
            yn = fmax(yn, t->ylo + 1e-3 * (t->kind == X_BOTH ? t->yhi - t->ylo : 1));
        if (t->kind == X_BOTH || t->kind == X_HIGH)
            yn = fmin(yn, t->yhi - 1e-3 * (t->kind == X_BOTH ? t->yhi - t->ylo : 1));
        gsl_vector_set(x, j, k == 0 ? gsl_vector_get(x0, j) : u_of_y(t, yn));
    }
}

int fit_run(fit_param *p, size_t np, size_t nres, fit_resid_fn *f, void *ctx,
            const fit_opts *o, fit_result *res, double *resid, err *e)
{
    fit_opts def;
    if (!o) {
        fit_opts_default(&def);
        o = &def;
    }
    memset(res, 0, sizeof *res);
    res->bad_param = res->bad_with = -1;
    res->bad_rows[0] = res->bad_rows[1] = res->bad_rows[2] = -1;
    if (np == 0)
        return err_set(e, ERR_USAGE, "no parameters to fit");
    if (nres < np || (nres == np && !o->known_sigma))
        return err_set(e, ERR_CHECK,
                       "%zu measured points cannot determine %zu parameters (need more points "
                       "than parameters)", nres, np);
    for (size_t j = 0; j < np; j++) {
        ASSERTF(p[j].lo < p[j].hi, "%s: lo %g hi %g", p[j].name, p[j].lo, p[j].hi);
        if (!(p[j].value > p[j].lo && p[j].value < p[j].hi) || (p[j].log && p[j].value <= 0) ||
            !isfinite(p[j].value))
            return err_set(e, ERR_USAGE, "%s: start value %g is outside (%g, %g)", p[j].name,
                           p[j].value, p[j].lo, p[j].hi);
    }
    res->dof = nres - np;
    gsl_set_error_handler_off();  /* GSL reports through return codes here */

    run r = {.p = p, .np = np, .nres = nres, .f = f, .ctx = ctx, .e = e};
    r.t = calloc(np, sizeof *r.t);
    r.v = calloc(np, sizeof *r.v);
    r.start = calloc(np, sizeof *r.start);
    r.res = malloc(nres * sizeof *r.res);
    double *r0 = malloc(nres * sizeof *r0);
    gsl_vector *x = gsl_vector_alloc(np), *x0 = gsl_vector_alloc(np),
               *best = gsl_vector_alloc(np);
    gsl_multifit_nlinear_workspace *w = NULL;
    int rc = 0;
    if (!r.t || !r.v || !r0 || !x || !x0 || !best || !r.start || !r.res) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto out;
    }
    for (size_t j = 0; j < np; j++) {
        r.start[j] = r.v[j] = p[j].value;
        r.t[j] = xform_of(&p[j]);
        gsl_vector_set(x0, j, u_of_y(&r.t[j], y_of_v(&p[j], p[j].value)));
    }
    if ((rc = eval(&r, r.v, r0)))
        goto out;
    for (size_t i = 0; i < nres; i++)
        res->start_chi2 += r0[i] * r0[i];
    gsl_multifit_nlinear_fdf fdf = {
        .f = gsl_f, .df = NULL, .fvv = NULL, .n = nres, .p = np, .params = &r};
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    fp.h_df = o->fd_step;
    w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, nres, np);
    if (!w) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto out;
    }
    /* The start, then (only if it stalls) the other starts; the lowest cost
     * among the converged ones wins. */
    int status = GSL_EMAXITER, nstarts = o->starts > 1 ? o->starts : 1;
    double best_cost = INFINITY;
    size_t best_iter = 0;
    for (int k = 0; k < nstarts; k++) {
        alt_start(&r, x0, k, x);
        int st = solve(&r, w, &fdf, x, o);
        res->starts = k + 1;
        if (r.rc)
            break;
        int ok = st == GSL_SUCCESS || st == GSL_ENOPROG;
        double c = gsl_blas_dnrm2(gsl_multifit_nlinear_residual(w));
        if (ok && c < best_cost) {
            best_cost = c;
            best_iter = gsl_multifit_nlinear_niter(w);
            gsl_vector_memcpy(best, gsl_multifit_nlinear_position(w));
            status = st;
        } else if (k == 0) {
            status = st;
            best_iter = gsl_multifit_nlinear_niter(w);
        }
        if (isfinite(best_cost))
            break;   /* converged: no restart needed */
    }
    if (r.rc) {
        rc = r.rc;
        goto out;
    }
    res->iterations = (int)best_iter;
    if (!isfinite(best_cost)) {
        if (status == GSL_EMAXITER)
            rc = err_set(e, ERR_CHECK, "the fit did not converge in %d iterations from any of "
                         "%d starts", o->max_iter, res->starts);
        else
            rc = err_set(e, ERR_CHECK, "the fit failed: %s", gsl_strerror(status));
        goto out;
    }
    for (size_t j = 0; j < np; j++)
        r.v[j] = p[j].value = v_of_y(&p[j], y_of_u(&r.t[j], gsl_vector_get(best, j)));
    if ((rc = eval(&r, r.v, r0)))
        goto out;
    double chi2 = 0;
    for (size_t i = 0; i < nres; i++)
        chi2 += r0[i] * r0[i];
    res->chi2 = chi2;
    res->sigma = res->dof ? sqrt(chi2 / (double)res->dof) : 0;
    if (resid)
        memcpy(resid, r0, nres * sizeof *r0);
    rc = uncertainties(&r, o, r0, chi2, res);
out:
    res->evaluations = r.evals;
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(x);
    gsl_vector_free(x0);
    gsl_vector_free(best);
    free(r0);
    free(r.t);
    free(r.v);
    free(r.start);
    free(r.res);
    return rc;
}

int fit_cost(const fit_param *p, size_t np, size_t nres, fit_resid_fn *f, void *ctx,
             double *chi2, err *e)
{
    run r = {.p = (fit_param *)p, .np = np, .nres = nres, .f = f, .ctx = ctx, .e = e};
    double *v = malloc(np * sizeof *v), *res = malloc(nres * sizeof *res);
    int rc = 0;
    if (!v || !res)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    for (size_t j = 0; j < np && !rc; j++)
        v[j] = p[j].value;
    if (!rc)
        rc = eval(&r, v, res);
    *chi2 = 0;
    for (size_t i = 0; i < nres && !rc; i++)
        *chi2 += res[i] * res[i];
    free(v);
    free(res);
    return rc;
}

int fit_probe(const fit_param *p, size_t np, size_t j, size_t nres, fit_resid_fn *f,
              void *ctx, fit_probe_result *out, err *e)
{
    static const double factors[] = {1.0 / 16, 0.25, 0.5, 2, 4, 16};
    run r = {.p = (fit_param *)p, .np = np, .nres = nres, .f = f, .ctx = ctx, .e = e};
    double *v = malloc(np * sizeof *v), *r0 = malloc(nres * sizeof *r0),
           *r1 = malloc(nres * sizeof *r1);
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->row = -1;
    out->best = p[j].value;
    if (!v || !r0 || !r1) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < np; k++)
        v[k] = p[k].value;
    if ((rc = eval(&r, v, r0)))
        goto out;
    for (size_t i = 0; i < nres; i++)
        out->start_chi2 += r0[i] * r0[i];
    out->best_chi2 = out->start_chi2;
    double most = 0;
    for (size_t k = 0; k < sizeof factors / sizeof factors[0]; k++) {
        double x = p[j].value * factors[k];
        /* Inside the bounds: at most 1% of the way from the start to a bound. */
        if (x <= p[j].lo)
            x = p[j].lo + 0.01 * (p[j].value - p[j].lo);
        if (x >= p[j].hi)
            x = p[j].hi - 0.01 * (p[j].hi - p[j].value);
        v[j] = x;
        if ((rc = eval(&r, v, r1)))
            goto out;
        double c = 0;
        for (size_t i = 0; i < nres; i++) {
            c += r1[i] * r1[i];
            double d = fabs(r1[i] - r0[i]);
            if (d > most) {
                most = d;
                out->row = (int)i;
            }
        }
        if (c < out->best_chi2 * (1 - 1e-9)) {
            out->best_chi2 = c;
            out->best = x;
        }
    }
    /* A change below the model's time resolution is no influence. */
    out->felt = most > 1e-9;
    if (!out->felt)
        out->row = -1;
out:
    free(v);
    free(r0);
    free(r1);
    return rc;
}

int fit_screen(const fit_param *p, size_t np, size_t nres, fit_resid_fn *f, void *ctx,
               const fit_opts *o, fit_why *why, int *with, err *e)
{
    fit_opts def;
    if (!o) {
        fit_opts_default(&def);
        o = &def;
    }
    run r = {.p = (fit_param *)p, .np = np, .nres = nres, .f = f, .ctx = ctx, .e = e};
    r.t = calloc(np, sizeof *r.t);   /* X_FREE: steps stay near the start */
    r.v = malloc(np * sizeof *r.v);
    double *r0 = malloc((nres > np ? nres : np) * sizeof *r0),
           *scale = malloc(np * sizeof *scale), *colnorm = malloc(np * sizeof *colnorm);
    gsl_matrix *J = gsl_matrix_alloc(nres, np), *Q = gsl_matrix_alloc(nres, np);
    int rc = 0;
    if (!r.t || !r.v || !r0 || !scale || !colnorm || !J || !Q) {
        rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto out;
    }
    for (size_t j = 0; j < np; j++)
        r.v[j] = p[j].value;
    if ((rc = eval(&r, r.v, r0)) || (rc = jacobian_y(&r, r0, J, o->fd_step, scale)))
        goto out;
    double maxnorm = 0;
    for (size_t j = 0; j < np; j++) {
        gsl_vector_view c = gsl_matrix_column(J, j);
        double nrm = gsl_blas_dnrm2(&c.vector);
        maxnorm = nrm > maxnorm ? nrm : maxnorm;
    }
    /* Gram-Schmidt with pivoting: repeatedly take the parameter whose
     * column has the most left outside the span of those taken. Columns
     * are normalised first, so "most left" is a fraction of its influence. */
    size_t nq = 0;
    for (size_t j = 0; j < np; j++) {
        gsl_vector_view c = gsl_matrix_column(J, j);
        double nrm = gsl_blas_dnrm2(&c.vector);
        colnorm[j] = nrm;
        with[j] = -1;
        why[j] = FIT_DEPENDENT;
        if (!(nrm > o->min_influence * maxnorm) || nrm == 0) {
            why[j] = FIT_NO_INFLUENCE;
            continue;
        }
        gsl_vector_scale(&c.vector, 1 / nrm);
    }
    /* overlap[j]: largest |projection| of column j on a taken direction;
     * infl[j]: its influence (column norm) before normalising. */
    double *overlap = scale, *infl = r0;
    for (size_t j = 0; j < np; j++) {
        infl[j] = why[j] == FIT_NO_INFLUENCE ? 0 : colnorm[j];
        overlap[j] = 0;
    }
    for (;;) {
        /* The most influence left outside the span, among columns with at
         * least min_independence of their own left. */
        size_t best = np;
        double bestn = 0, bestrest = 0;
        for (size_t j = 0; j < np; j++) {
            if (why[j] != FIT_DEPENDENT || with[j] == -2)
                continue;
            gsl_vector_view c = gsl_matrix_column(J, j);
            double rest = gsl_blas_dnrm2(&c.vector);
            if (rest >= o->min_independence && rest * infl[j] > bestn) {
                bestn = rest * infl[j];
                bestrest = rest;
                best = j;
            }
        }
        if (best == np)
            break;
        why[best] = FIT_KEEP;
        with[best] = -2;   /* taken (reset to -1 below) */
        gsl_vector_view q = gsl_matrix_column(Q, nq++);
        gsl_vector_view cb = gsl_matrix_column(J, best);
        gsl_vector_memcpy(&q.vector, &cb.vector);
        gsl_vector_scale(&q.vector, 1 / bestrest);
        for (size_t j = 0; j < np; j++) {
            if (why[j] != FIT_DEPENDENT)
                continue;
            gsl_vector_view c = gsl_matrix_column(J, j);
            double d;
            gsl_blas_ddot(&q.vector, &c.vector, &d);
            gsl_blas_daxpy(-d, &q.vector, &c.vector);
            if (fabs(d) > overlap[j]) {
                overlap[j] = fabs(d);
                with[j] = (int)best;
            }
        }
    }
    for (size_t j = 0; j < np; j++)
        if (why[j] == FIT_KEEP)
            with[j] = -1;
out:
    gsl_matrix_free(J);
    gsl_matrix_free(Q);
    free(r.t);
    free(r.v);
    free(r0);
    free(scale);
    free(colnorm);
    return rc;
}
