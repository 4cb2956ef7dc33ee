/* Hypotheses: what could explain the part of an observation the model
 * leaves unexplained. Each is one mechanism of the model (a table row), its
 * amount solved within its physical bound (the fit's bounds, fitdefs) for the
 * observed tok/s, by regula falsi on a monotone tok/s; then what the model
 * predicts at that amount for the target forward's allreduce kernels, which
 * a profile of the box times independently (the observation's ar_us). A
 * hypothesis explains the observation only if it reaches the tok/s within
 * its bound and matches the profile; nothing here is fitted into the
 * scenario (docs/scenario.md, "Hypotheses"). */
#include "traces/whatif.h"
#include "traces/whatif_impl.h"

#include <math.h>
#include <string.h>

/* One hypothesis: the settings it makes, the amount it solves. */
typedef struct hypdef {
    const char *name;
    const char *what;
    const char *set;     /* applied to the observation's scenario first ("" none) */
    const char *knob;    /* the amount: a fittable parameter (its bounds are the fit's) */
    int eager;           /* 1: report the CPU cost per eagerly launched kernel */
    double lo, hi;       /* hi > 0: the amount's bound, for a knob the fit does not
                            take (its source in docs/scenario.md, "Hypotheses") */
    int verify;          /* 1: a mechanism of the verify: EAGLE-3 observations only */
    int per_cycle;       /* 1: lo and hi are host work per EAGLE-3 cycle, spread over
                            the observation's segments (whatif_host_segment_us) */
    int rising;          /* 1: tok/s rises with the amount */
} hypdef;

static const hypdef hyps[] = {
    /* host segments within the public measurements of the host work per
     * cycle (WHATIF_HOST_CYCLE_LO_US..HI_US, whatif.h), not the 2 ms bound
     * that the fit gives host_us */
    {"host", "host segments (CPU work with the GPU idle, before each launch and after each sync)",
     "", "host_us", 0, 0, WHATIF_HOST_CYCLE_HI_US, 0, 1, 0},
    {"host-skew", "host segments at their bound and the ranks' skew (the old default fit)",
     "host_us=2000", "host_jitter", 0, 0, 0, 0, 0, 0},
    {"skew", "rank skew: each rank's random extra on every host item", "", "host_jitter", 0, 0,
     0, 0, 0, 0},
    /* the CPU per eager kernel up to what SGLang's own eager DeepSeek layer
     * costs: PR #1401 (sgl-project/sglang, 2024-09) measured
     * DeepSeek-Coder-V2-Lite (27 MLA + MoE layers, batch 1) at 6.22 ms per
     * decode with CUDA graphs and "4x" that without: 4 x 6,220 / 27 = 921 us
     * of CPU per layer, over the scenario's 22 kernels 41.9 us each, 37.9
     * besides the preset's 4 us launch (docs/scenario.md) */
    {"eager-verify", "the verify forward run eagerly: the CPU launches each of its kernels",
     "verify_graph=0", "eager_op_us", 1, 0, 37.9, 1, 0, 0},
    /* the slowest NCCL allreduce measured on this box class up to 64 KiB on
     * 8 GPUs: 67.8 us at 64 KiB (p2pmark --allreduce on the ESC8000A-E13P,
     * the rtx6kpro wiki; docs/scenario.md) */
    {"slow-allreduce", "the verify's allreduces themselves slower than modelled (the fabric)",
     "", "verify_allreduce_us", 0, 1, 67.8, 1, 0, 0},
    /* fewer tokens accepted per cycle, down to the bonus token alone: an
     * EAGLE-3 draft served under --speculative-algorithm EAGLE is fed one
     * hidden state instead of three and accepts exactly 1.00, with this
     * model's own draft (sgl-project/sglang PR #21272, Kimi-K2.5 +
     * lightseekorg/kimi-k2.5-eagle3; docs/scenario.md); the bound is the
     * fit's, 1..draft_tokens */
    {"accept", "fewer draft tokens accepted per cycle (the draft's predictions rejected)", "",
     "accept_len", 0, 0, 0, 1, 0, 1},
};
enum { NHYPS = sizeof hyps / sizeof hyps[0] };
_Static_assert(NHYPS <= WHATIF_HYP_MAX, "WHATIF_HYP_MAX holds the table");

typedef struct hyprun {
    whatif_ctx *c;
    whatif_scenario o;   /* the observation's scenario with the hypothesis' settings */
    double *amount;
} hyprun;

static int eval(hyprun *h, double v, whatif_result *res, err *e)
{
    *h->amount = v;
    return whatif_run_ctx(h->c, &h->o, res, e);
}

static void keep(whatif_hyp *y, double v, const whatif_result *res, double launch_us)
{
    y->value = v;
    y->tok_per_s = res->tok_per_s;
    y->ar_us = res->ar_kernel_us;
    y->ar_max_us = res->ar_kernel_max_us;
    y->cpu_per_kernel_us = launch_us >= 0 ? launch_us + v : 0;
    y->launch_us = launch_us >= 0 ? launch_us : 0;
}

/* Solve h's amount in [lo, hi] for tok/s = target (tok/s falls as the
 * amount grows, or rises with y->rising); fills y. */
static int solve(hyprun *h, whatif_hyp *y, double target, double launch_us, err *e)
{
    whatif_result rl, rh, rm;
    double lo = y->lo, hi = y->hi;
    TRY(eval(h, lo, &rl, e));
    TRY(eval(h, hi, &rh, e));
    /* the fast and the slow end of the bound */
    double vf = y->rising ? hi : lo, vs = y->rising ? lo : hi;
    const whatif_result *rf = y->rising ? &rh : &rl, *rs = y->rising ? &rl : &rh;
    if (target >= rf->tok_per_s) {    /* already as slow at the fast end */
        y->reached = target <= rf->tok_per_s * (1 + 1e-6);
        keep(y, vf, rf, launch_us);
        return 0;
    }
    if (target < rs->tok_per_s) {     /* not reached within the bound */
        y->reached = 0;
        keep(y, vs, rs, launch_us);
        return 0;
    }
    /* regula falsi, Illinois variant, on f(v) = ln(tok(v) / target), whose
     * signs at lo and hi differ */
    double fl = log(rl.tok_per_s / target), fh = log(rh.tok_per_s / target);
    double v = lo;
    rm = rl;
    int side = 0;
    for (int it = 0; it < 60; it++) {
        v = (lo * fh - hi * fl) / (fh - fl);
        TRY(eval(h, v, &rm, e));
        double fm = log(rm.tok_per_s / target);
        if (fabs(fm) < 1e-5 || hi - lo <= 1e-9 * (fabs(hi) + 1))
            break;
        if ((fm > 0) == (fl > 0)) {
            lo = v, fl = fm;
            if (side == 1)
                fh /= 2;
            side = 1;
        } else {
            hi = v, fh = fm;
            if (side == -1)
                fl /= 2;
            side = -1;
        }
    }
    y->reached = 1;
    keep(y, v, &rm, launch_us);
    return 0;
}

int whatif_hypotheses(whatif_ctx *c, const whatif_scenario *s, int i, whatif_hyp *out, int *n,
                      err *e)
{
    *n = 0;
    if (i < 0 || i >= s->nobs)
        return err_set(e, ERR_USAGE, "hypotheses: no observation %d", i + 1);
    const whatif_obs *ob = &s->obs[i];
    whatif_scenario os;
    TRY(whatif_obs_scenario(s, i, &os, e));
    for (int k = 0; k < NHYPS; k++) {
        const hypdef *d = &hyps[k];
        if (d->verify && os.mode != WHATIF_EAGLE3)
            continue;
        const fitdef *fd = whatif_find_fitdef(d->knob);
        double lo = d->hi > 0 ? d->lo : fd->lo, hi = d->hi > 0 ? d->hi : fd->hi;
        const knob *kn = whatif_find_knob(d->knob);
        hyprun h = {.c = c};
        TRY(whatif_obs_scenario(s, i, &h.o, e));
        TRY(whatif_apply_kvs(&h.o, d->set, e));
        if (d->per_cycle) {
            lo = whatif_host_segment_us(&h.o, lo);
            hi = whatif_host_segment_us(&h.o, hi);
        }
        h.amount = (double *)(void *)((char *)&h.o + kn->off);
        whatif_hyp *y = &out[(*n)++];
        memset(y, 0, sizeof *y);
        y->name = d->name;
        y->what = d->what;
        y->knob = d->knob;
        y->set = d->set;
        y->lo = lo;
        y->hi = hi < 0 ? h.o.draft_tokens : hi;
        y->rising = d->rising;
        y->base_value = *h.amount;
        double launch_us = -1;
        if (d->eager)
            TRY(whatif_launch_us(c, &h.o, &launch_us, e));
        whatif_result rb;
        TRY(eval(&h, y->base_value, &rb, e));
        y->base_tok_per_s = rb.tok_per_s;
        y->base_ar_us = rb.ar_kernel_us;
        TRY(solve(&h, y, ob->tok_per_s, launch_us, e));
        if (ob->ar_us > 0) {
            y->ar_checked = 1;
            y->ar_consistent = y->ar_us > 0 &&
                               fabs(log(y->ar_us / ob->ar_us)) <= 2 * ob->ar_rel_sd;
        }
    }
    return 0;
}
