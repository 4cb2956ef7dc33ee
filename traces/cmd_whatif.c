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

static const char usage[] =
    "usage: collsim whatif [--scenario NAME|FILE] [--calib FILE] [--set KEY=VALUE]...\n"
    "                      [--vary KEY=V1,V2,...]... [--solve accept_len|allreduce_us]\n"
    "                      [--breakdown] [--format table|csv|json] [--keys] [--list]\n"
    "  default scenario: kimi-k2-eagle3-8x-pcie5 (docs/scenario.md)\n";

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

int cmd_whatif(int argc, char **argv, err *e)
{
    const char *scen = "kimi-k2-eagle3-8x-pcie5", *solve = NULL;
    const char *sets[MAX_SETS];
    int nsets = 0, nvary = 0, breakdown = 0;
    vary *vs = calloc(MAX_VARY, sizeof *vs);
    if (!vs)
        return err_set(e, ERR_SYSTEM, "out of memory");
    report_format fmt = REPORT_TABLE;
    char calib_set[WHATIF_STR + 8];
    int rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--scenario") && more)
            scen = argv[++i];
        else if (!strcmp(a, "--calib") && more) {
            /* Same as --set calib=FILE. */
            snprintf(calib_set, sizeof calib_set, "calib=%s", argv[++i]);
            if (nsets == MAX_SETS)
                rc = err_set(e, ERR_USAGE, "too many --set");
            else
                sets[nsets++] = calib_set;
        }
        else if (!strcmp(a, "--set") && more) {
            if (nsets == MAX_SETS)
                rc = err_set(e, ERR_USAGE, "too many --set");
            else
                sets[nsets++] = argv[++i];
        } else if (!strcmp(a, "--vary") && more) {
            if (nvary == MAX_VARY) {
                rc = err_set(e, ERR_USAGE, "at most %d --vary", MAX_VARY);
                break;
            }
            vary *v = &vs[nvary++];
            const char *val;
            rc = split_kv(argv[++i], v->key, sizeof v->key, &val, v->buf, sizeof v->buf, e);
            for (char *tok = rc ? NULL : strtok(v->buf, ","); tok && !rc; tok = strtok(NULL, ",")) {
                if (v->n == MAX_VALS)
                    rc = err_set(e, ERR_USAGE, "--vary %s: at most %d values", v->key, MAX_VALS);
                else
                    v->vals[v->n++] = tok;
            }
            if (!rc && v->n == 0)
                rc = err_set(e, ERR_USAGE, "--vary %s: no values", v->key);
        } else if (!strcmp(a, "--solve") && more)
            solve = argv[++i];
        else if (!strcmp(a, "--breakdown"))
            breakdown = 1;
        else if (!strcmp(a, "--format") && more)
            rc = cli_parse_format(argv[++i], &fmt, e);
        else if (!strcmp(a, "--keys")) {
            for (int k = 0; whatif_key_name(k); k++)
                printf("%-22s %s\n", whatif_key_name(k), whatif_key_desc(k));
            free(vs);
            return 0;
        } else if (!strcmp(a, "--list")) {
            for (int k = 0; whatif_builtin_name(k); k++)
                printf("%s\n", whatif_builtin_name(k));
            free(vs);
            return 0;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            free(vs);
            return 0;
        } else
            rc = err_set(e, ERR_USAGE, "whatif: unknown or incomplete option '%s'\n%s", a, usage);
    }
    whatif_scenario base;
    if (!rc)
        rc = whatif_scenario_load(scen, &base, e);
    for (int i = 0; i < nsets && !rc; i++) {
        char key[64], buf[512];
        const char *val;
        rc = split_kv(sets[i], key, sizeof key, &val, buf, sizeof buf, e);
        if (!rc)
            rc = whatif_set(&base, key, val, e);
    }
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
    free(vs);
    return rc;
}
