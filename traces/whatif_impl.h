/* Inside the what-if: the knob and fit tables' types and the context, shared
 * by the scenario (traces/whatif_scn.c), the cost model and run
 * (traces/whatif.c) and the fit (traces/whatif_fit.c), and nothing else.
 * Read traces/whatif.h for the contract. */
#ifndef TRACES_WHATIF_IMPL_H
#define TRACES_WHATIF_IMPL_H

#include <stddef.h>

#include "models/coll/coll.h"
#include "models/topo/topo.h"
#include "traces/whatif.h"

/* A what-if context: the topologies (with their calibration) and collective
 * contexts in use, up to CTX_TOPOS at once. */
enum { CTX_TOPOS = 8 };
struct whatif_ctx {
    int n;
    char name[CTX_TOPOS][2 * WHATIF_STR + 2]; /* "topo|calib" */
    topo *t[CTX_TOPOS];
    coll_ctx *c[CTX_TOPOS];
};

typedef enum ktype {
    K_INT, K_DBL, K_STR, K_MODE, K_ALGO, K_DTYPE, K_HIST, K_ENV, K_OBS, K_FIT
} ktype;

typedef struct knob {
    const char *name;
    ktype type;
    size_t off;
    double lo, hi;
    const char *env;     /* K_ENV: the NCCL variable */
    const char *desc;
} knob;

/* Parameters that can be fitted: a double knob, its bounds for the fit. */
typedef struct fitdef {
    const char *name;
    double lo, hi;       /* hi < 0: draft_tokens */
    int log;
} fitdef;

/* The knob named key, NULL if none. */
const knob *whatif_find_knob(const char *key);
/* The fittable parameter named name, NULL if none. */
const fitdef *whatif_find_fitdef(const char *name);
/* Check a "fit" list: known names, none twice, at most WHATIF_FIT_MAX. */
int whatif_check_fit_list(const char *v, err *e);
/* The rules between knobs (tp within t's GPUs when t is given, moe_topk <=
 * moe_experts, ...): ERR_USAGE naming the knobs. */
int whatif_check(const whatif_scenario *s, const topo *t, err *e);
/* An observation's own keys after its tok/s and sd (",check=1,verify_ar_us=
 * U,ar_sd=R"), exact: shortest text reading back the same, else %g. */
void whatif_obs_extra(const whatif_obs *o, char *buf, size_t n, int exact);
/* The CPU's cost of one kernel launch call in s's topology (its preset's
 * launch, or its calibration's), us. */
int whatif_launch_us(whatif_ctx *c, const whatif_scenario *s, double *us, err *e);
/* Apply "k=v,k=v" to s (whatif_set for each). */
int whatif_apply_kvs(whatif_scenario *s, const char *list, err *e);

#endif
