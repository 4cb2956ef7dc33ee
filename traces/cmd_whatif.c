/* `collsim whatif`: run a scenario for every combination of the varied
 * knobs (the first --vary changes slowest) and print one row per variant:
 * csv header `variant,<varied keys>,tok_per_s,cycle_us,speedup`, speedup
 * against the first variant. --breakdown adds the cycle's breakdown;
 * --solve KEY prints the EAGLE-3 / plain-decode break-even per variant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cmds.h"
#include "sim/report.h"
#include "traces/whatif.h"

enum { MAX_VARY = 8, MAX_VALS = 32, MAX_SETS = 64 };

static const char synopsis[] = "collsim whatif [options]";
static const char desc[] =
    "Runs a scenario (docs/scenario.md) for every combination of the varied knobs, the\n"
    "first --vary changing slowest: one row per variant, speedup against variant 0.";

typedef struct vary {
    char key[64];
    char buf[1024];
    const char *vals[MAX_VALS];
    int n;
} vary;

static int split_kv(const char *arg, char *key, size_t kn, const char **val, char *buf,
                    size_t bn, err *e)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= kn || strlen(eq + 1) >= bn)
        return err_set(e, ERR_USAGE, "'%s': want KEY=VALUE", arg);
    memcpy(key, arg, (size_t)(eq - arg));
    key[eq - arg] = 0;
    snprintf(buf, bn, "%s", eq + 1);
    *val = buf;
    return 0;
}

/* What the options set. --set and --calib are applied in command-line order
 * once the scenario is loaded; --vary values are split when given. */
typedef struct whatif_args {
    const char *scen, *solve;
    const char *sets[MAX_SETS];
    char calib_set[MAX_SETS][WHATIF_STR + 8];  /* --calib FILE as "calib=FILE" */
    int nsets, nvary, breakdown, keys, list;
    vary vs[MAX_VARY];
    report_format fmt;
} whatif_args;

#define ARGS ((whatif_args *)ctx)
static int set_scenario(void *ctx, const char *a, err *e) { (void)e; ARGS->scen = a; return 0; }
static int set_solve(void *ctx, const char *a, err *e) { (void)e; ARGS->solve = a; return 0; }
static int set_breakdown(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->breakdown = 1; return 0; }
static int set_keys(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->keys = 1; return 0; }
static int set_list(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->list = 1; return 0; }
static int set_format(void *ctx, const char *a, err *e) { return cli_parse_format(a, &ARGS->fmt, e); }

static int set_set(void *ctx, const char *a, err *e)
{
    if (ARGS->nsets == MAX_SETS)
        return err_set(e, ERR_USAGE, "too many --set");
    ARGS->sets[ARGS->nsets++] = a;
    return 0;
}

/* Same as --set calib=FILE. */
static int set_calib(void *ctx, const char *a, err *e)
{
    if (ARGS->nsets == MAX_SETS)
        return err_set(e, ERR_USAGE, "too many --set");
    char *kv = ARGS->calib_set[ARGS->nsets];
    snprintf(kv, sizeof ARGS->calib_set[0], "calib=%s", a);
    ARGS->sets[ARGS->nsets++] = kv;
    return 0;
}

static int set_vary(void *ctx, const char *a, err *e)
{
    if (ARGS->nvary == MAX_VARY)
        return err_set(e, ERR_USAGE, "at most %d --vary", MAX_VARY);
    vary *v = &ARGS->vs[ARGS->nvary++];
    const char *val;
    TRY(split_kv(a, v->key, sizeof v->key, &val, v->buf, sizeof v->buf, e));
    for (char *tok = strtok(v->buf, ","); tok; tok = strtok(NULL, ",")) {
        if (v->n == MAX_VALS)
            return err_set(e, ERR_USAGE, "--vary %s: at most %d values", v->key, MAX_VALS);
        v->vals[v->n++] = tok;
    }
    return v->n ? 0 : err_set(e, ERR_USAGE, "--vary %s: no values", v->key);
}
#undef ARGS

static const cli_opt options[] = {
    {"scenario", 0, "NAME|FILE", "a built-in scenario (--list) or a scenario file; default kimi-k2-eagle3-8x-pcie5", set_scenario},
    {"calib", 0, "FILE", "apply a calibration profile (same as --set calib=FILE)", set_calib},
    {"set", 0, "KEY=VALUE", "set a knob (--keys; repeatable)", set_set},
    {"vary", 0, "KEY=V1,V2,...", "one variant per value (repeatable: every combination)", set_vary},
    {"solve", 0, "KEY", "accept_len or allreduce_us: the EAGLE-3 break-even per variant", set_solve},
    {"breakdown", 0, NULL, "add the cycle's breakdown, the allreduce time, algorithm and protocol", set_breakdown},
    {"format", 0, "F", "table (default), csv or json", set_format},
    {"keys", 0, NULL, "list the knobs", set_keys},
    {"list", 0, NULL, "list the built-in scenarios", set_list},
    {NULL, 0, NULL, NULL, NULL},
};

int cmd_whatif(int argc, char **argv, err *e)
{
    whatif_args *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(e, ERR_SYSTEM, "out of memory");
    g->scen = "kimi-k2-eagle3-8x-pcie5";
    g->fmt = REPORT_TABLE;
    const char *pos[1];
    int npos;
    int rc = cli_parse("collsim whatif", synopsis, desc, options, g, argc, argv, pos, 0, &npos, e);
    if (!rc && g->keys)
        for (int k = 0; whatif_key_name(k); k++)
            printf("%-22s %s\n", whatif_key_name(k), whatif_key_desc(k));
    else if (!rc && g->list)
        for (int k = 0; whatif_builtin_name(k); k++)
            printf("%s\n", whatif_builtin_name(k));
    if (rc == CLI_HELP_SHOWN || (!rc && (g->keys || g->list))) {
        free(g);
        return 0;
    }
    const char *scen = g->scen, *solve = g->solve;
    const char *const *sets = g->sets;
    int nsets = g->nsets, nvary = g->nvary, breakdown = g->breakdown;
    vary *vs = g->vs;
    report_format fmt = g->fmt;
    whatif_scenario base;
    if (!rc)
        rc = whatif_scenario_load(scen, &base, e);
    for (int i = 0; i < nsets && !rc; i++) {
        char key[64], buf[512];
        const char *val;
        rc = split_kv(sets[i], key, sizeof key, &val, buf, sizeof buf, e);
        for (int v = 0; v < nvary && !rc; v++)   /* the --vary would win silently */
            if (!strcmp(vs[v].key, key))
                rc = err_set(e, ERR_USAGE, "%s is both --set and --vary: give one", key);
        if (!rc)
            rc = whatif_set(&base, key, val, e);
    }
    for (int v = 0; v < nvary && !rc; v++)
        for (int w = 0; w < v && !rc; w++)
            if (!strcmp(vs[v].key, vs[w].key))
                rc = err_set(e, ERR_USAGE, "--vary %s given twice", vs[v].key);
    /* check every varied value once up front: usage errors before any output */
    for (int v = 0; v < nvary && !rc; v++)
        for (int j = 0; j < vs[v].n && !rc; j++) {
            whatif_scenario tmp = base;
            rc = whatif_set(&tmp, vs[v].key, vs[v].vals[j], e);
        }
    if (solve && !rc && strcmp(solve, "accept_len") && strcmp(solve, "allreduce_us"))
        rc = err_set(e, ERR_USAGE, "--solve: '%s' is not accept_len or allreduce_us", solve);
    whatif_ctx *c = rc ? NULL : whatif_ctx_new();
    if (!rc && !c)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    long nvar = 1;
    for (int v = 0; v < nvary; v++)
        nvar *= vs[v].n;
    report_col cols[MAX_VARY + 12];
    int nc = 0;
    cols[nc++] = (report_col){"variant", NULL, 7, -1};
    for (int v = 0; v < nvary; v++)
        cols[nc++] = (report_col){vs[v].key, NULL, (int)strlen(vs[v].key) + 2 > 10
                                                       ? (int)strlen(vs[v].key) + 2 : 10, -1};
    if (solve) {
        cols[nc++] = (report_col){solve, NULL, 14, 3};
    } else {
        cols[nc++] = (report_col){"tok_per_s", NULL, 10, 2};
        cols[nc++] = (report_col){"cycle_us", NULL, 11, 1};
        cols[nc++] = (report_col){"speedup", NULL, 8, 3};
        if (breakdown) {
            cols[nc++] = (report_col){"compute_us", NULL, 11, 1};
            cols[nc++] = (report_col){"comm_us", NULL, 10, 1};
            cols[nc++] = (report_col){"launch_us", NULL, 10, 1};
            cols[nc++] = (report_col){"idle_us", NULL, 8, 1};
            cols[nc++] = (report_col){"allreduce_us", NULL, 13, 2};
            cols[nc++] = (report_col){"algo", NULL, 13, -1};
            cols[nc++] = (report_col){"proto", NULL, 7, -1};
        }
    }
    report *r = NULL;
    double first = 0;
    for (long k = 0; k < nvar && !rc; k++) {
        whatif_scenario s = base;
        int idx[MAX_VARY];
        long rem = k;
        for (int v = nvary - 1; v >= 0; v--) {
            idx[v] = (int)(rem % vs[v].n);
            rem /= vs[v].n;
        }
        for (int v = 0; v < nvary && !rc; v++)
            rc = whatif_set(&s, vs[v].key, vs[v].vals[idx[v]], e);
        whatif_result res;
        double sv = 0;
        if (!rc && solve)
            rc = whatif_solve(c, &s, solve, &sv, e);
        else if (!rc)
            rc = whatif_run_ctx(c, &s, &res, e);
        if (rc) {
            err_wrap(e, "variant %ld", k);
            break;
        }
        if (!r) {
            r = report_new(stdout, fmt);
            report_meta(r, "scenario", "%s", base.name);
            report_meta(r, "topo", "%s", base.topo);
            if (!solve) {
                report_meta(r, "weight_us_per_layer", "%.3f", res.weight_us_per_layer);
                report_meta(r, "token_us_per_layer", "%.3f", res.token_us_per_layer);
                report_meta(r, "draft_step_us", "%.3f", res.draft_step_us);
            }
            report_table(r, "whatif", cols, nc);
        }
        report_int(r, k);
        for (int v = 0; v < nvary; v++) {
            char buf[128];
            whatif_get(&s, vs[v].key, buf, sizeof buf, NULL);
            report_str(r, !strncmp(vs[v].key, "NCCL_", 5) ? vs[v].vals[idx[v]] : buf);
        }
        if (solve) {
            report_num(r, sv);
        } else {
            if (k == 0)
                first = res.tok_per_s;
            report_num(r, res.tok_per_s);
            report_num(r, res.cycle_us);
            report_num(r, first > 0 ? res.tok_per_s / first : 0);
            if (breakdown) {
                report_num(r, res.compute_us);
                report_num(r, res.comm_us);
                report_num(r, res.launch_us);
                report_num(r, res.idle_us);
                report_num(r, res.allreduce_us);
                report_str(r, coll_algo_name(res.algo));
                report_str(r, res.proto == PROTO_AUTO ? "-" : coll_proto_name(res.proto));
            }
        }
        report_end_row(r);
    }
    if (r) {
        int frc = report_finish(r, e);
        if (!rc)
            rc = frc;
        report_free(r);
    }
    whatif_ctx_free(c);
    free(g);
    return rc;
}
