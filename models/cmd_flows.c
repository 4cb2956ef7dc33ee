/* `collsim flows`: simulate a named point-to-point pattern (or an explicit
 * set of concurrent flows) and print per-flow and aggregate bandwidth and
 * time in the columns `hwcheck flows` writes, so the two compare row by row. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cmds.h"
#include "models/fabric.h"
#include "models/flows.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "validate/calib.h"

static const char usage[] =
    "usage: collsim flows [--topo T] (--pattern P [--gpus a,b,...] | --flows 0>4,1>6,h0>2)\n"
    "         [--bytes N] [--op write|read|copy] [--calib FILE] [--format table|csv|json]\n"
    "         [-o FILE]\n"
    "       collsim flows --list\n"
    "Flows in one case run at the same time; the aggregate row (flow -1) gives their\n"
    "total bandwidth. --bytes takes K/M/G (default 256M). Host memory of NUMA node k is hk.\n";

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

int cmd_flows(int argc, char **argv, err *e)
{
    static const struct option opts[] = {
        {"topo", required_argument, 0, 't'}, {"pattern", required_argument, 0, 'p'},
        {"gpus", required_argument, 0, 'g'}, {"flows", required_argument, 0, 'F'},
        {"bytes", required_argument, 0, 'b'}, {"op", required_argument, 0, 'O'},
        {"format", required_argument, 0, 'f'}, {"output", required_argument, 0, 'o'},
        {"list", no_argument, 0, 'l'}, {"calib", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *topo_name = "rtxpro6000-8x-pcie5-2s", *pattern = NULL, *spec = NULL;
    const char *out_path = "-", *calib_path = NULL;
    uint64_t bytes = 256u << 20;
    flows_op op = FLOWS_WRITE;
    report_format fmt = REPORT_TABLE;
    int gpus[256], ngpus = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "t:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': topo_name = optarg; break;
        case 'p': pattern = optarg; break;
        case 'g': TRY(parse_gpus(optarg, gpus, &ngpus, e)); break;
        case 'F': spec = optarg; break;
        case 'b': TRY(cli_parse_size("--bytes", optarg, &bytes, e)); break;
        case 'O':
            if (flows_op_parse(optarg, &op))
                return err_set(e, ERR_USAGE, "--op: '%s' (write, read or copy)", optarg);
            break;
        case 'f': TRY(cli_parse_format(optarg, &fmt, e)); break;
        case 'o': out_path = optarg; break;
        case 'c': calib_path = optarg; break;
        case 'l':
            for (int i = 0; flows_pattern_name(i); i++)
                printf("%-12s %s\n", flows_pattern_name(i), flows_pattern_desc(i));
            return 0;
        case 'h': fputs(usage, stdout); return 0;
        default: return err_set(e, ERR_USAGE, "bad option (collsim flows --help)");
        }
    }
    if (optind != argc)
        return err_set(e, ERR_USAGE, "flows: unexpected argument '%s'", argv[optind]);
    if (!pattern == !spec)
        return err_set(e, ERR_USAGE, "flows: give one of --pattern or --flows");
    topo *t = NULL;
    TRY(calib_path ? calib_load_topo(topo_name, calib_path, &t, e) : topo_load(topo_name, &t, e));
    flows_case *cases = NULL;
    int ncases = 0, rc = 0;
    if (pattern) {
        rc = flows_expand(t, pattern, op, (double)bytes, gpus, ngpus, &cases, &ncases, e);
    } else {
        cases = calloc(1, sizeof *cases);
        rc = cases ? flows_parse(t, spec, op, (double)bytes, cases, e)
                   : err_set(e, ERR_SYSTEM, "out of memory");
        ncases = 1;
    }
    fabric *f = rc ? NULL : fabric_new(t, e);
    if (!rc && !f)
        rc = e->code;
    ofile out;
    memset(&out, 0, sizeof out);
    if (!rc)
        rc = ofile_open(&out, out_path, e);
    report *rep = rc ? NULL : report_new(out.f, fmt);
    if (!rc && !rep)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc) {
        report_meta(rep, "format", "collsim-meas 1");
        report_meta(rep, "kind", "flows");
        report_meta(rep, "machine", "simulated: %s", topo_name);
        char cmdline[1024];
        report_meta(rep, "command", "%s",
                    cli_command_line(cmdline, sizeof cmdline, "collsim", argc, argv));
        report_table(rep, "flows", cols, 9);
    }
    for (int k = 0; k < ncases && !rc; k++) {
        sim_ps tps[FLOWS_MAX];
        rc = flows_run(f, &cases[k], tps, e);
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
    }
    if (!rc)
        rc = report_finish(rep, e);
    if (!rc)
        rc = ofile_commit(&out, e);
    else if (out.f)
        ofile_abort(&out);
    report_free(rep);
    fabric_free(f);
    free(cases);
    topo_free(t);
    return rc;
}
