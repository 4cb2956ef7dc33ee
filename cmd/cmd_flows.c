/* `collsim flows`: simulate a named point-to-point pattern (or an explicit
 * set of concurrent flows) and print per-flow and aggregate bandwidth and
 * time in the columns `hwcheck flows` writes, so the two compare row by row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "models/fabric/fabric.h"
#include "models/coll/coll.h"
#include "models/fabric/flows.h"
#include "models/tlp/tlp_flows.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "validate/calib.h"

static const char synopsis[] =
    "collsim flows [--topo T] (--pattern P [--gpus a,b,...] | --flows 0>4,1>6,h0>2) [options]";
static const char desc[] =
    "Flows in one case run at the same time; the aggregate row (flow -1) gives their\n"
    "total bytes over the time of the slowest. Host memory of NUMA node k is hk.";

static const report_col cols[] = {
    {"case", NULL, 5, -1},  {"pattern", NULL, 12, -1}, {"op", NULL, 6, -1},
    {"flow", NULL, 5, -1},  {"src", NULL, 6, -1},      {"dst", NULL, 6, -1},
    {"bytes", NULL, 11, -1}, {"time_us", NULL, 11, 3}, {"bw_GBps", NULL, 9, 2},
};

static void endpoint(char *buf, size_t n, int ep)
{
    if (ep >= 0)
        snprintf(buf, n, "%d", ep);
    else
        snprintf(buf, n, "host%d", -1 - ep);
}

static int parse_gpus(const char *s, int *g, int *n, err *e)
{
    *n = 0;
    TRY(cli_check_list("--gpus", s, 1 << 16, e));
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 4095 || (*end && *end != ','))
            return err_set(e, ERR_USAGE, "--gpus: '%s' is not a list of GPU indices", s);
        if (*n >= 256)
            return err_set(e, ERR_USAGE, "--gpus: at most 256");
        g[(*n)++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return 0;
}

/* What the options set. */
typedef struct flows_args {
    cmd_ctx cc;  /* first: --topo --calib --output --format */
    const char *pattern, *spec;
    uint64_t bytes;
    flows_op op;
    report_format fmt;
    int gpus[256], ngpus, list, ignored, without;
    long blocks;
    int tlp;               /* --engine tlp */
    const char *without_s; /* parsed once the engine is known */
    double window_us;
    int window_set;        /* --window given */
    flows_issue issue;     /* --issue */
    long repeat;           /* --repeat */
    int orders;            /* --orders: FLOWS_ORDER_* bits, 0 = both */
} flows_args;

#define ARGS ((flows_args *)ctx)
static int set_pattern(void *ctx, const char *a, err *e) { (void)e; ARGS->pattern = a; return 0; }
static int set_spec(void *ctx, const char *a, err *e)
{
    ARGS->spec = a;
    return cli_check_list("--flows", a, 1 << 16, e);
}
static int set_list(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->list = 1; return 0; }
static int set_gpus(void *ctx, const char *a, err *e) { return parse_gpus(a, ARGS->gpus, &ARGS->ngpus, e); }
static int set_bytes(void *ctx, const char *a, err *e)
{
    TRY(cli_parse_size("--bytes", a, &ARGS->bytes, e));
    return ARGS->bytes > COLL_MAX_BYTES ? err_set(e, ERR_USAGE, "--bytes: at most 64G") : 0;
}
static int set_without(void *ctx, const char *a, err *e) { (void)e; ARGS->without_s = a; return 0; }
static int set_engine(void *ctx, const char *a, err *e) { return cmd_parse_engine(a, &ARGS->tlp, e); }
static int set_window(void *ctx, const char *a, err *e)
{
    long v;
    TRY(cli_parse_long("--window", a, 0, 100000, &v, e));
    ARGS->window_us = (double)v;
    ARGS->window_set = 1;
    return 0;
}
static int set_issue(void *ctx, const char *a, err *e)
{
    return flows_issue_parse(a, &ARGS->issue) ? err_set(e, ERR_USAGE, "--issue: '%s' (streams or torch)", a) : 0;
}
static int set_repeat(void *ctx, const char *a, err *e) { return cli_parse_long("--repeat", a, 1, 1000, &ARGS->repeat, e); }
static int set_orders(void *ctx, const char *a, err *e)
{
    ARGS->orders = 0;
    for (const char *p = a; *p;) {
        size_t len = strcspn(p, ",");
        int bit = len == 2 && !strncmp(p, "ce", 2)    ? FLOWS_ORDER_CE
                  : len == 3 && !strncmp(p, "dst", 3) ? FLOWS_ORDER_DST
                                                      : 0;
        if (!bit)
            return err_set(e, ERR_USAGE, "--orders: '%.*s' (ce or dst)", (int)len, p);
        ARGS->orders |= bit;
        p += len + (p[len] == ',');
    }
    return 0;
}
static int set_blocks(void *ctx, const char *a, err *e) { return cli_parse_long("--blocks", a, 1, 1024, &ARGS->blocks, e); }

static int set_op(void *ctx, const char *a, err *e)
{
    return flows_op_parse(a, &ARGS->op) ? err_set(e, ERR_USAGE, "--op: '%s' (write, read, copy, copy-write or copy-read)", a) : 0;
}

static int set_ignored(const char *flag, void *ctx, const char *a, err *e)
{
    long v;
    TRY(cli_parse_long(flag, a, 0, 1000000000, &v, e));
    ARGS->ignored = 1;
    return 0;
}
static int set_ign_n(void *ctx, const char *a, err *e) { return set_ignored("-n", ctx, a, e); }
static int set_ign_w(void *ctx, const char *a, err *e) { return set_ignored("-w", ctx, a, e); }
#undef ARGS

static const cli_opt options[] = {
    {"topo", 0, "T", "preset (collsim topo list) or topology file; default rtxpro6000-8x-pcie5-2s", cmd_set_topo},
    {"pattern", 0, "P", "a named pattern (--list)", set_pattern},
    {"gpus", 0, "a,b,...", "the GPUs the pattern uses (default: all)", set_gpus},
    {"flows", 0, "SPEC", "an explicit set of concurrent flows, SRC>DST,...", set_spec},
    {"bytes", 0, "N", "bytes per flow (default 256M)", set_bytes},
    {"op", 0, "OP", "write (default), read: SM stores/loads; copy, copy-write, copy-read: copy engine; copy-staged: a peer copy through host memory (no P2P)", set_op},
    {"calib", 0, "FILE", "apply a calibration profile (collsim calibrate)", cmd_set_calib},
    {"without", 0, "M,...", "switch model mechanisms off: write-collapse, read-collapse, hol, req-size, socket-read, nvlink-sat, serial-loads, host-inflight, host-mixed, block-ceiling, shm-order, fifo-l2, first-round, l2-sources, shm-poll, trip-issue, nvlink-req, turn-others, own-round, load-trip, whole-rounds, dllp, round-skew, staged-pool (--engine tlp: turn, credits, order, tags, dllp)", set_without},
    {"engine", 0, "E", "flow (default: rates of flows) or tlp (transaction level: every TLP, docs/model.md)", set_engine},
    {"window", 0, "US", "--engine tlp: simulate TLPs for US microseconds per phase, then extrapolate (default 50; 0 = every TLP)", set_window},
    {"issue", 0, "HOW", "streams (default: every flow from its own stream, all at once) or torch (each flow one PyTorch copy_, issued in order: docs/model.md)", set_issue},
    {"repeat", 0, "N", "issue the flow list N times in order, as a benchmark's timed loop (default 1)", set_repeat},
    {"orders", 0, "O,...", "--issue torch: which orderings apply, ce (one copy engine per GPU, its copies in order) and dst (copies into a GPU wait on its stream); default both", set_orders},
    {"blocks", 0, "N", "thread blocks per write/read kernel, as hwcheck --blocks (default: enough for the links)", set_blocks},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {"output", 0, "FILE", "write the report to FILE (default stdout)", cmd_set_output},
    {"iters", 'n', "N", "hwcheck/nccl-tests: accepted and ignored", set_ign_n},
    {"warmup_iters", 'w', "N", "hwcheck/nccl-tests: accepted and ignored", set_ign_w},
    {"list", 0, NULL, "list the patterns", set_list},
    {NULL, 0, NULL, NULL, NULL},
};

int cmd_flows(int argc, char **argv, err *e)
{
    flows_args g;
    memset(&g, 0, sizeof g);
    cmd_ctx_init(&g.cc);
    g.bytes = 256u << 20;
    g.op = FLOWS_WRITE;
    g.window_us = 50;
    g.repeat = 1;
    const char *pos[1];
    int npos;
    int prc = cli_parse("collsim flows", synopsis, desc, options, &g, argc, argv, pos, 0, &npos, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (g.list) {
        for (int i = 0; flows_pattern_name(i); i++)
            printf("%-12s %s\n", flows_pattern_name(i), flows_pattern_desc(i));
        return 0;
    }
    if (g.ignored)
        fprintf(stderr, "collsim flows: note: -n/-w ignored: a prediction has no iterations\n");
    if (g.without_s)
        TRY(g.tlp ? tlp_mech_parse(g.without_s, &g.without, e)
                  : fabric_mech_parse(g.without_s, &g.without, e));
    if (g.window_set && !g.tlp)
        return err_set(e, ERR_USAGE, "--window: only with --engine tlp (the flow engine has no window)");
    if (!g.pattern == !g.spec)
        return err_set(e, ERR_USAGE, "flows: give one of --pattern or --flows");
    topo *t = NULL;
    TRY(cmd_load_topo(&g.cc, &t, e));
    flows_case *cases = NULL;
    int ncases = 0, rc = 0;
    if (g.pattern) {
        rc = flows_expand(t, g.pattern, g.op, (double)g.bytes, g.gpus, g.ngpus, &cases, &ncases, e);
    } else {
        cases = calloc(1, sizeof *cases);
        rc = cases ? flows_parse(t, g.spec, g.op, (double)g.bytes, cases, e)
                   : err_set(e, ERR_SYSTEM, "out of memory");
        ncases = 1;
    }
    for (int k = 0; k < ncases && !rc; k++) {
        cases[k].blocks = (int)g.blocks;
        cases[k].issue = g.issue;
        cases[k].orders = g.orders;
        if (g.repeat > 1 && flows_case_repeat(&cases[k], (int)g.repeat))
            rc = err_set(e, ERR_SYSTEM, "out of memory");
        if (!rc)
            rc = flows_issue_check(&cases[k], e);
    }
    fabric *f = NULL;
    tlp_net *tn = NULL;
    if (!rc && g.tlp) {
        tn = tlp_new(t, e);
        if (tn)
            tlp_disable(tn, g.without);
        else
            rc = e->code;
    } else if (!rc) {
        f = fabric_new(t, e);
        if (f)
            fabric_disable(f, g.without);
        else
            rc = e->code;
    }
    ofile out;
    memset(&out, 0, sizeof out);
    if (!rc)
        rc = ofile_open(&out, g.cc.out, e);
    report *rep = rc ? NULL : report_new(out.f, g.cc.fmt);
    if (!rc && !rep)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc) {
        report_meta(rep, "format", "collsim-meas 1");
        report_meta(rep, "kind", "flows");
        report_meta(rep, "machine", "simulated: %s", g.cc.topo);
        report_meta(rep, "calibration", "%s", g.cc.calib ? g.cc.calib : "none (preset parameters)");
        if (g.tlp)
            report_meta(rep, "engine", "tlp (transaction level, window %g us)", g.window_us);
        if (g.issue == FLOWS_ISSUE_TORCH || g.repeat > 1)
            report_meta(rep, "issue", "%s, %ld round%s%s", g.issue == FLOWS_ISSUE_TORCH ? "torch" : "streams",
                        g.repeat > 1 ? g.repeat : 1, g.repeat > 1 ? "s" : "",
                        g.orders == FLOWS_ORDER_CE    ? ", orders ce"
                        : g.orders == FLOWS_ORDER_DST ? ", orders dst"
                                                      : "");
        char cmdline[1024];
        report_meta(rep, "command", "%s",
                    cli_command_line(cmdline, sizeof cmdline, "collsim", argc, argv));
        report_table(rep, "flows", cols, 9);
    }
    int most = 1;
    for (int k = 0; k < ncases; k++)
        most = cases[k].n > most ? cases[k].n : most;
    sim_ps *tps = rc ? NULL : malloc(sizeof *tps * (size_t)most);
    if (!rc && !tps)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    for (int k = 0; k < ncases && !rc; k++) {
        rc = g.tlp ? tlp_flows_run(tn, &cases[k], (int64_t)(g.window_us * 1e6), tps, e)
                   : flows_run(f, &cases[k], tps, e);
        if (rc)
            break;
        double total = 0;
        sim_ps tmax = 0;
        char s[16], d[16];
        for (int i = 0; i < cases[k].n; i++) {
            double us = (double)tps[i] / 1e6;
            endpoint(s, sizeof s, cases[k].src[i]);
            endpoint(d, sizeof d, cases[k].dst[i]);
            report_int(rep, k);
            report_str(rep, cases[k].pattern);
            report_str(rep, flows_op_name(cases[k].op));
            report_int(rep, i);
            report_str(rep, s);
            report_str(rep, d);
            report_int(rep, (long long)cases[k].bytes);
            report_num(rep, us);
            report_num(rep, us > 0 ? cases[k].bytes / (us * 1e3) : 0);
            report_end_row(rep);
            total += cases[k].bytes;
            if (tps[i] > tmax)
                tmax = tps[i];
        }
        if (cases[k].n > 1) {
            double us = (double)tmax / 1e6;
            report_int(rep, k);
            report_str(rep, cases[k].pattern);
            report_str(rep, flows_op_name(cases[k].op));
            report_int(rep, -1);
            report_str(rep, "*");
            report_str(rep, "*");
            report_int(rep, (long long)total);
            report_num(rep, us);
            report_num(rep, us > 0 ? total / (us * 1e3) : 0);
            report_end_row(rep);
        }
        if (g.tlp) {
            /* The turning share of the root ports' forwarding (docs/model.md
             * "The collapse from the turnaround"), where there is one. */
            tlp_stats st = tlp_last_stats(tn);
            for (int c = 0; c < 2; c++)
                if (st.up[c] > 0)
                    report_note(rep, "case %d: %s forwarded up by root ports in the first packet "
                                "phase %llu, turning %llu (share %.3f), from another requester "
                                "than the previous %.3f", k,
                                c ? "completions" : "posted writes", (unsigned long long)st.up[c],
                                (unsigned long long)st.turned[c],
                                (double)st.turned[c] / (double)st.up[c],
                                (double)st.switched[c] / (double)st.up[c]);
        }
    }
    if (!rc)
        rc = report_finish(rep, e);
    if (!rc)
        rc = ofile_commit(&out, e);
    else if (out.f)
        ofile_abort(&out);
    report_free(rep);
    fabric_free(f);
    tlp_free(tn);
    free(tps);
    flows_cases_free(cases, ncases);
    topo_free(t);
    return rc;
}
