/* `collsim replay TRACE...`: predict each trace on a topology and print one
 * row per trace with the columns of the `replay` measurement kind
 * (docs/formats.md), so hwcheck's measured replay lines up with it.
 * --timeline writes the first cycle of the first trace as Perfetto JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cmds.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "traces/replay.h"
#include "validate/calib.h"

static const char usage[] =
    "usage: collsim replay TRACE... [--topo T] [--calib FILE] [--allreduce ALG] [--proto P]\n"
    "                      [--env NCCL_X=Y]... [--graph 0|1] [--measured]\n"
    "                      [--compute-scale X] [--timeline OUT.json]\n"
    "                      [--format table|csv|json]\n"
    "  ALG: ring|tree|oneshot|twoshot|oneshot-push|twoshot-push|auto (auto: as the trace)\n"
    "  --measured: use captured collective times (measured_us) where a trace has them\n";

int cmd_replay(int argc, char **argv, err *e)
{
    const char *topo_name = "rtxpro6000-8x-pcie5-2s", *tl_path = NULL, *calib_path = NULL;
    const char *files[256];
    int nfiles = 0;
    replay_opts o;
    replay_opts_init(&o);
    report_format fmt = REPORT_TABLE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        long n;
        if (!strcmp(a, "--topo") && more)
            topo_name = argv[++i];
        else if (!strcmp(a, "--calib") && more)
            calib_path = argv[++i];
        else if (!strcmp(a, "--allreduce") && more) {
            if (coll_algo_parse(argv[++i], &o.allreduce) != 0)
                return err_set(e, ERR_USAGE, "--allreduce: unknown algorithm '%s'", argv[i]);
        } else if (!strcmp(a, "--proto") && more) {
            if (coll_proto_parse(argv[++i], &o.proto) != 0)
                return err_set(e, ERR_USAGE, "--proto: unknown protocol '%s'", argv[i]);
        } else if (!strcmp(a, "--env") && more)
            TRY(coll_env_set(&o.env, argv[++i], e));
        else if (!strcmp(a, "--graph") && more) {
            TRY(cli_parse_long("--graph", argv[++i], 0, 1, &n, e));
            o.graph = (int)n;
        } else if (!strcmp(a, "--measured"))
            o.measured = 1;
        else if (!strcmp(a, "--compute-scale") && more) {
            TRY(cli_parse_double("--compute-scale", argv[++i], &o.compute_scale, e));
            if (!(o.compute_scale > 0))
                return err_set(e, ERR_USAGE, "--compute-scale must be > 0");
        } else if (!strcmp(a, "--timeline") && more)
            tl_path = argv[++i];
        else if (!strcmp(a, "--format") && more)
            TRY(cli_parse_format(argv[++i], &fmt, e));
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (a[0] == '-' && a[1])
            return err_set(e, ERR_USAGE, "replay: unknown or incomplete option '%s'\n%s", a, usage);
        else if (nfiles == 256)
            return err_set(e, ERR_USAGE, "replay: at most 256 traces");
        else
            files[nfiles++] = a;
    }
    if (nfiles == 0)
        return err_set(e, ERR_USAGE, "replay: no trace given\n%s", usage);
    topo *t = NULL;
    TRY(calib_path ? calib_load_topo(topo_name, calib_path, &t, e) : topo_load(topo_name, &t, e));
    coll_ctx *c = coll_ctx_new(t);
    if (!c) {
        topo_free(t);
        return err_set(e, ERR_SYSTEM, "%s: cannot create the collective model", topo_name);
    }
    replay_result *res = calloc((size_t)nfiles, sizeof *res);
    ofile tl = {0};
    int rc = res ? 0 : err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc && tl_path)
        rc = ofile_open(&tl, tl_path, e);
    for (int i = 0; i < nfiles && !rc; i++)
        rc = replay_file(files[i], t, c, &o, i == 0 && tl_path ? tl.f : NULL, &res[i], e);
    if (tl_path && tl.f) {
        if (rc)
            ofile_abort(&tl);
        else
            rc = ofile_commit(&tl, e);
    }
    if (!rc) {
        report *r = report_new(stdout, fmt);
        static const report_col cols[] = {
            {"trace", NULL, 24, -1},     {"allreduce", NULL, 9, -1},
            {"cycles", NULL, 8, -1},     {"tokens", NULL, 10, -1},
            {"cycle_us", NULL, 11, 2},   {"tok_per_s", NULL, 10, 2},
            {"compute_us", NULL, 11, 2}, {"comm_us", NULL, 10, 2},
            {"launch_us", NULL, 10, 2},  {"idle_us", NULL, 10, 2},
        };
        report_meta(r, "topo", "%s", topo_name);
        report_table(r, "replay", cols, 10);
        uint64_t preds = 0, colls = 0;
        for (int i = 0; i < nfiles; i++) {
            const char *base = strrchr(files[i], '/');
            report_str(r, base ? base + 1 : files[i]);
            report_str(r, o.allreduce == ALGO_AUTO ? "trace" : coll_algo_name(o.allreduce));
            report_int(r, res[i].cycles);
            report_num(r, res[i].tokens);
            report_num(r, res[i].cycle_us);
            report_num(r, res[i].tok_per_s);
            report_num(r, res[i].compute_us);
            report_num(r, res[i].comm_us);
            report_num(r, res[i].launch_us);
            report_num(r, res[i].idle_us);
            report_end_row(r);
            preds += res[i].predictions;
            colls += res[i].colls;
        }
        report_note(r, "%llu collectives replayed, %llu distinct predictions",
                    (unsigned long long)colls, (unsigned long long)preds);
        rc = report_finish(r, e);
        report_free(r);
    }
    free(res);
    coll_ctx_free(c);
    topo_free(t);
    return rc;
}
