/* Observations and their fit: the scenario's named parameters fitted (GSL,
 * validate/fit.h) to observed tok/s or cycle times, and solving for the value
 * of one parameter that reaches a target. */
#include "traces/whatif.h"
#include "traces/whatif_impl.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "models/topo/topo.h"
#include "sim/cli.h"
#include "traces/replay.h"
#include "traces/trace.h"
#include "validate/calib.h"
#include "validate/fit.h"

/* ---- calibration ------------------------------------------------------------------- */

static double *param_ptr(whatif_scenario *s, const char *name)
{
    return (double *)(void *)((char *)s + whatif_find_knob(name)->off);
}

typedef struct fitctx {
    whatif_ctx *c;
    const whatif_scenario *s;
    const char *names[WHATIF_FIT_MAX];
    int idx[WHATIF_FIT_MAX];     /* the parameters being fitted, into names */
    int np;
    double *resid_raw;           /* ln(pred/obs), last evaluation */
    whatif_calib *out;           /* the final evaluation fills its cycles */
} fitctx;

/* The fit's residuals are those of the observations that are not checks
 * only, in order; resid_raw and out cover every observation. */
static int fit_resid(const double *v, double *r, void *ctx, err *e)
{
    fitctx *f = ctx;
    whatif_scenario base = *f->s;
    for (int j = 0; j < f->np; j++)
        *param_ptr(&base, f->names[f->idx[j]]) = v[j];
    for (int i = 0, nr = 0; i < base.nobs; i++) {
        whatif_scenario o;
        const whatif_obs *ob = &f->s->obs[i];
        TRY(whatif_obs_scenario(&base, i, &o, e));
        whatif_result res;
        int rc = whatif_run_ctx(f->c, &o, &res, e);
        if (rc)
            return err_wrap(e, "observation %d (%s)", i + 1, ob->set), rc;
        double lr = log(res.tok_per_s / ob->tok_per_s);
        if (f->out) {
            /* what the model does not explain, as cycle time */
            double obs_cycle = res.tokens_per_cycle * 1e6 / ob->tok_per_s;
            f->out->obs_cycle_us[i] = obs_cycle;
            f->out->model_cycle_us[i] = res.cycle_us;
            f->out->unexplained_us[i] = obs_cycle - res.cycle_us;
            f->out->model_ar_us[i] = res.ar_kernel_us;
            f->out->model_ar_max_us[i] = res.ar_kernel_max_us;
        }
        if (f->resid_raw)
            f->resid_raw[i] = lr;
        if (!ob->check)
            r[nr++] = lr / ob->rel_sd;
    }
    return 0;
}

/* Observations the fit uses (not checks only). */
static int fitted_obs(const whatif_scenario *s)
{
    int n = 0;
    for (int i = 0; i < s->nobs; i++)
        n += !s->obs[i].check;
    return n;
}

static double param_get(const whatif_scenario *s, const char *name)
{
    return *(const double *)(const void *)((const char *)s + whatif_find_knob(name)->off);
}

static void start_value(const whatif_scenario *s, const fitdef *d, fit_param *p)
{
    double hi = d->hi < 0 ? s->draft_tokens : d->hi;
    double v = param_get(s, d->name);
    if (!strcmp(d->name, "draft_efficiency") && v <= 0)
        v = s->efficiency;
    double margin = (hi - d->lo) * 1e-3;
    if (v <= d->lo)
        v = d->lo + margin;
    if (v >= hi)
        v = hi - margin;
    *p = (fit_param){d->name, v, d->lo, hi, d->log, 0};
}

int whatif_calibrate(whatif_ctx *c, whatif_scenario *s, whatif_calib *out, err *e)
{
    whatif_calib local;
    if (!out)
        out = &local;
    memset(out, 0, sizeof *out);
    if (s->nobs == 0)
        return 0;
    fitctx f = {.c = c, .s = s};
    for (int i = 0; i < s->nobs; i++) {   /* a profile figure names its observation's phase */
        whatif_scenario o;
        const whatif_obs *ob = &s->obs[i];
        TRY(whatif_obs_scenario(s, i, &o, e));
        if (ob->ar_us > 0 && ob->ar_verify != (o.mode == WHATIF_EAGLE3))
            return err_set(e, ERR_USAGE, "observation %d (%s): %s_ar_us on a %s observation "
                           "(verify_ar_us goes with mode=eagle3, decode_ar_us with mode=decode)",
                           i + 1, ob->set, ob->ar_verify ? "verify" : "decode",
                           o.mode == WHATIF_EAGLE3 ? "mode=eagle3" : "mode=decode");
    }
    if (!s->fit[0]) {   /* no fit: only what the model leaves unexplained */
        double r[WHATIF_OBS_MAX];
        f.resid_raw = out->resid;
        f.out = out;
        return fit_resid(NULL, r, &f, e);
    }
    TRY(whatif_check_fit_list(s->fit, e));
    char buf[WHATIF_STR];
    snprintf(buf, sizeof buf, "%s", s->fit);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t && n < WHATIF_FIT_MAX; t = strtok_r(NULL, ",", &save)) {
        const fitdef *d = whatif_find_fitdef(t);
        if (!strcmp(d->name, "host_us"))
            s->host_cycle_us = -1;   /* the per-segment amount is fitted instead */
        f.names[n] = d->name;
        snprintf(out->p[n].name, sizeof out->p[n].name, "%s", d->name);
        out->p[n].value = param_get(s, d->name);
        n++;
    }
    out->n = n;
    for (int i = 0; i < s->nobs; i++) {   /* bad observation keys: usage errors first */
        whatif_scenario o = *s;
        TRY(whatif_apply_kvs(&o, s->obs[i].set, e));
    }
    int nfit = fitted_obs(s);
    if (nfit == 0) {   /* checks only: what the model leaves unexplained */
        double r[WHATIF_OBS_MAX];
        f.resid_raw = out->resid;
        f.out = out;
        out->n = 0;
        return fit_resid(NULL, r, &f, e);
    }
    int gone[WHATIF_FIT_MAX] = {0};   /* refused for good (bound, zero, uncertain) */
    fit_opts fo;
    fit_opts_default(&fo);
    fo.known_sigma = 1;
    for (int round = 0; round <= n; round++) {
        f.np = 0;
        fit_param p[WHATIF_FIT_MAX];
        for (int j = 0; j < n; j++)
            if (!gone[j]) {
                start_value(s, whatif_find_fitdef(f.names[j]), &p[f.np]);
                f.idx[f.np++] = j;
            }
        if (f.np == 0)
            break;
        fit_why why[WHATIF_FIT_MAX];
        int with[WHATIF_FIT_MAX];
        TRY(fit_screen(p, (size_t)f.np, (size_t)nfit, fit_resid, &f, &fo, why, with, e));
        fit_param kp[WHATIF_FIT_MAX];
        int kidx[WHATIF_FIT_MAX], nk = 0;
        for (int j = 0; j < f.np; j++) {
            whatif_fitted *o = &out->p[f.idx[j]];
            o->refused = why[j] != FIT_KEEP;
            if (why[j] == FIT_NO_INFLUENCE)
                snprintf(o->why, sizeof o->why, "no influence on the observations");
            else if (why[j] == FIT_DEPENDENT)
                snprintf(o->why, sizeof o->why, "not separable from %s by these observations",
                         with[j] >= 0 ? p[with[j]].name : "the others");
            else {
                kp[nk] = p[j];
                kidx[nk++] = f.idx[j];
            }
        }
        if (nk == 0)
            break;
        memcpy(f.idx, kidx, sizeof kidx);
        f.np = nk;
        fit_result fr;
        err sub = {0};
        int rc = fit_run(kp, (size_t)nk, (size_t)nfit, fit_resid, &f, &fo, &fr, NULL, &sub);
        if (rc == 0) {
            for (int j = 0; j < nk; j++) {
                whatif_fitted *o = &out->p[kidx[j]];
                o->value = kp[j].value;
                o->sd = kp[j].sd;
                o->refused = 0;
                *param_ptr(s, kp[j].name) = kp[j].value;
            }
            for (int j = 0; j < n; j++)
                if (out->p[j].refused && !out->p[j].why[0])
                    snprintf(out->p[j].why, sizeof out->p[j].why, "refused");
            break;
        }
        if (rc != ERR_CHECK || fr.bad_param < 0) {
            *e = sub;
            return rc;
        }
        /* the data cannot determine that one: refuse it, fit the rest */
        int j = kidx[fr.bad_param];
        gone[j] = 1;
        out->p[j].refused = 1;
        snprintf(out->p[j].why, sizeof out->p[j].why, "%.300s", sub.msg);
        if (fr.bad_why == FIT_AT_BOUND) {
            /* A mechanism with a physical bound explains at most its bound:
             * hold it there (the side the data pushed it to) and leave the
             * rest unexplained. */
            const fitdef *d = whatif_find_fitdef(kp[fr.bad_param].name);
            double hi = d->hi < 0 ? s->draft_tokens : d->hi;
            double ss[2];
            for (int side = 0; side < 2; side++) {
                whatif_scenario t = *s;
                *param_ptr(&t, d->name) = side ? hi : d->lo;
                fitctx g = f;
                g.s = &t;
                g.np = 0;
                g.out = NULL;
                g.resid_raw = NULL;
                double r[WHATIF_OBS_MAX];
                TRY(fit_resid(NULL, r, &g, e));
                ss[side] = 0;
                for (int i = 0; i < nfit; i++)
                    ss[side] += r[i] * r[i];
            }
            double v = ss[1] < ss[0] ? hi : d->lo;
            *param_ptr(s, d->name) = v;
            out->p[j].value = v;
            out->p[j].at_bound = 1;
            snprintf(out->p[j].why, sizeof out->p[j].why,
                     "ran to its physical bound: held at %g (allowed %g..%g)", v, d->lo, hi);
        }
    }
    /* residuals and cycles at the result */
    double r[WHATIF_OBS_MAX];
    f.np = 0;
    f.s = s;
    f.resid_raw = out->resid;
    f.out = out;
    return fit_resid(NULL, r, &f, e);
}

/* ---- solving -------------------------------------------------------------------------- */

static int solve_cycle_target(whatif_ctx *c, const whatif_scenario *base, double tok_per_s,
                              double *target, err *e)
{
    if (tok_per_s > 0) {
        *target = tok_per_s;
        return 0;
    }
    whatif_scenario dec = *base;
    dec.mode = WHATIF_DECODE;
    whatif_result rd;
    TRY(whatif_run_ctx(c, &dec, &rd, e));
    *target = rd.tok_per_s;
    return 0;
}

int whatif_solve(whatif_ctx *c, const whatif_scenario *s, const whatif_scenario *base,
                 const char *key, double tok_per_s, whatif_solved *out, err *e)
{
    whatif_scenario eg = *s;
    eg.mode = WHATIF_EAGLE3;
    whatif_result re;
    double T;
    memset(out, 0, sizeof *out);
    if (!strcmp(key, "accept_len")) {
        TRY(solve_cycle_target(c, base, tok_per_s, &T, e));
        /* The cycle does not depend on the accept length: tok/s is linear
         * in it, accept = T x cycle / batch. */
        eg.accept_nhist = 0;
        eg.accept_len = 1;
        TRY(whatif_run_ctx(c, &eg, &re, e));
        out->value = T * re.cycle_us / 1e6 / eg.batch;
        out->found = out->value <= eg.draft_tokens && (tok_per_s <= 0 || out->value >= 1);
        if (out->value > eg.draft_tokens)
            snprintf(out->text, sizeof out->text, "none (needs %.2f > %d)", out->value,
                     eg.draft_tokens);
        else if (!out->found)
            snprintf(out->text, sizeof out->text, "none (needs %.2f < 1)", out->value);
        else
            snprintf(out->text, sizeof out->text, "%.3f", out->value);
        return 0;
    }
    if (!strcmp(key, "verify_allreduce_us")) {
        TRY(solve_cycle_target(c, base, tok_per_s, &T, e));
        if (eg.allreduces_per_layer == 0 || eg.tp <= 1) {
            snprintf(out->text, sizeof out->text, "none (no verify allreduces%s)",
                     eg.tp <= 1 ? ": tp 1" : "");
            return 0;
        }
        /* The cycle grows with the forced time (linearly with CUDA graphs):
         * secant steps on cycle(a) = tokens / T. */
        double a0 = 10, a1 = 110, c0, c1;
        eg.verify_allreduce_us = a0;
        TRY(whatif_run_ctx(c, &eg, &re, e));
        c0 = re.cycle_us;
        double want = re.tokens_per_cycle * 1e6 / T;
        for (int it = 0; it < 40; it++) {
            eg.verify_allreduce_us = a1;
            TRY(whatif_run_ctx(c, &eg, &re, e));
            c1 = re.cycle_us;
            if (c1 == c0 && it == 0) {
                /* 10 and 110 us give the same cycle: it does not depend on
                 * the verify's allreduces, so no value answers */
                snprintf(out->text, sizeof out->text, "none (the cycle does not depend on it)");
                return 0;
            }
            if (c1 == c0)
                break;
            double a2 = a1 + (want - c1) * (a1 - a0) / (c1 - c0);
            if (a2 <= 0) {
                a1 = a2;
                break;
            }
            a0 = a1;
            c0 = c1;
            a1 = a2;
            if (fabs(a1 - a0) <= 1e-9 * a1)
                break;
        }
        out->value = a1;
        out->found = a1 > 0 && isfinite(a1);
        if (out->found)
            snprintf(out->text, sizeof out->text, "%.1f", a1);
        else
            snprintf(out->text, sizeof out->text, "none (below %.2f tok/s even with free "
                     "verify allreduces)", T);
        return 0;
    }
    return err_set(e, ERR_USAGE, "--solve: '%s' is not accept_len or verify_allreduce_us", key);
}
