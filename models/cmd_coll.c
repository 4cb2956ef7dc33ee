/* `collsim coll`: predicted times of a collective over a size range, printed
 * in the layout of nccl-tests (size count type redop root time algbw busbw)
 * plus what was chosen, through the shared report writer. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cmds.h"
#include "models/coll.h"
#include "models/topo.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "validate/calib.h"

static const char usage[] =
    "usage: collsim coll <allreduce|reducescatter|allgather|broadcast|alltoall> [--topo T]\n"
    "         [-g N] [-b MIN] [-e MAX] [-f FACTOR] [-d bf16|fp16|fp32]\n"
    "         [--algo ring|tree|oneshot|twoshot|oneshot-push|twoshot-push|auto]\n"
    "         [--proto LL|LL128|Simple|auto] [--channels C] [--root R] [--graph]\n"
    "         [--calib FILE] [--env NCCL_X=Y]... [--timeline OUT.json]\n"
    "         [--format table|csv|json] [-o FILE]\n"
    "Predicts each size from -b to -e (times -f); sizes take K/M/G (powers of 2).\n"
    "T is a preset (collsim topo list) or a topology file; default rtxpro6000-8x-pcie5-2s.\n"
    "busbw follows nccl-tests: allreduce x 2(n-1)/n, reducescatter/allgather/alltoall\n"
    "x (n-1)/n, broadcast x 1.\n";

/* nccl-tests' bus bandwidth factor. */
static double bus_factor(coll_kind k, int n)
{
    switch (k) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_BROADCAST: return 1.0;
    default: return (double)(n - 1) / n;
    }
}

static const report_col cols_table[] = {
    {"size_bytes", "size", 12, -1}, {"count", "count", 12, -1}, {"dtype", "type", 8, -1},
    {"redop", "redop", 6, -1},      {"root", "root", 5, -1},    {"time_us", "time", 10, 2},
    {"algbw_GBps", "algbw", 8, 2},  {"busbw_GBps", "busbw", 8, 2}, {"algo", "algo", 13, -1},
    {"proto", "proto", 7, -1},      {"channels", "ch", 4, -1},
};
static const report_col cols_csv[] = {
    {"size_bytes", NULL, 0, -1}, {"count", NULL, 0, -1},   {"dtype", NULL, 0, -1},
    {"algo", NULL, 0, -1},       {"proto", NULL, 0, -1},   {"channels", NULL, 0, -1},
    {"time_us", NULL, 0, 3},     {"algbw_GBps", NULL, 0, 3}, {"busbw_GBps", NULL, 0, 3},
};

int cmd_coll(int argc, char **argv, err *e)
{
    static const struct option opts[] = {
        {"topo", required_argument, 0, 't'}, {"algo", required_argument, 0, 'A'},
        {"proto", required_argument, 0, 'P'}, {"channels", required_argument, 0, 'C'},
        {"root", required_argument, 0, 'r'}, {"graph", no_argument, 0, 'G'},
        {"calib", required_argument, 0, 'c'}, {"env", required_argument, 0, 'E'},
        {"timeline", required_argument, 0, 'T'}, {"format", required_argument, 0, 'F'},
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *topo_name = NULL, *timeline = NULL, *out_path = "-", *calib_path = NULL;
    uint64_t minb = 8, maxb = 128u << 20;
    double factor = 2;
    long ng = 0, channels = 0, root = 0;
    report_format fmt = REPORT_TABLE;
    coll_algo algo = ALGO_AUTO;
    coll_proto proto = PROTO_AUTO;
    coll_dtype dtype = DTYPE_BF16;
    int graph = 0;
    nccl_env env;
    memset(&env, 0, sizeof env);
    env.p2p_level = -1;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "t:g:b:e:f:d:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 't': topo_name = optarg; break;
        case 'g': TRY(cli_parse_long("-g", optarg, 1, 4096, &ng, e)); break;
        case 'b': TRY(cli_parse_size("-b", optarg, &minb, e)); break;
        case 'e': TRY(cli_parse_size("-e", optarg, &maxb, e)); break;
        case 'f': TRY(cli_parse_double("-f", optarg, &factor, e)); break;
        case 'd':
            if (coll_dtype_parse(optarg, &dtype))
                return err_set(e, ERR_USAGE, "-d: '%s' (bf16, fp16 or fp32)", optarg);
            break;
        case 'A':
            if (coll_algo_parse(optarg, &algo))
                return err_set(e, ERR_USAGE, "--algo: '%s' is not an algorithm", optarg);
            break;
        case 'P':
            if (coll_proto_parse(optarg, &proto))
                return err_set(e, ERR_USAGE, "--proto: '%s' (LL, LL128, Simple, auto)", optarg);
            break;
        case 'C': TRY(cli_parse_long("--channels", optarg, 1, 64, &channels, e)); break;
        case 'r': TRY(cli_parse_long("--root", optarg, 0, 4095, &root, e)); break;
        case 'G': graph = 1; break;
        case 'c': calib_path = optarg; break;
        case 'E': TRY(coll_env_set(&env, optarg, e)); break;
        case 'T': timeline = optarg; break;
        case 'F': TRY(cli_parse_format(optarg, &fmt, e)); break;
        case 'o': out_path = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: return err_set(e, ERR_USAGE, "bad option (collsim coll --help)");
        }
    }
    if (optind + 1 != argc)
        return err_set(e, ERR_USAGE, "coll: name one collective (collsim coll --help)");
    coll_kind kind;
    if (coll_kind_parse(argv[optind], &kind))
        return err_set(e, ERR_USAGE, "coll: unknown collective '%s'", argv[optind]);
    if (!topo_name)
        topo_name = "rtxpro6000-8x-pcie5-2s";
    if (factor < 1.000001 && minb != maxb)
        return err_set(e, ERR_USAGE, "-f: factor must be > 1");
    if (minb > maxb)
        return err_set(e, ERR_USAGE, "-b %llu is larger than -e %llu", (unsigned long long)minb,
                       (unsigned long long)maxb);
    topo *t = NULL;
    TRY(calib_path ? calib_load_topo(topo_name, calib_path, &t, e) : topo_load(topo_name, &t, e));
    int rc = 0;
    coll_ctx *ctx = coll_ctx_new(t);
    if (!rc && !ctx)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    coll_req req;
    coll_req_init(&req, t);
    req.kind = kind;
    req.dtype = dtype;
    req.algo = algo;
    req.proto = proto;
    req.channels = (int)channels;
    req.root = (int)root;
    req.graph = graph;
    req.env = env;
    if (ng)
        req.nranks = (int)ng;
    ofile out;
    memset(&out, 0, sizeof out);
    if (!rc)
        rc = ofile_open(&out, out_path, e);
    report *rep = rc ? NULL : report_new(out.f, fmt);
    if (!rc && !rep)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc) {
        if (fmt != REPORT_CSV) {
            report_meta(rep, "collective", "%s", coll_kind_name(kind));
            report_meta(rep, "topology", "%s (%d GPUs, %d used)", topo_name, topo_ngpus(t),
                        req.nranks);
        }
        if (fmt == REPORT_CSV)
            report_table(rep, NULL, cols_csv, 9);
        else
            report_table(rep, coll_kind_name(kind), cols_table, 11);
    }
    int esz = coll_dtype_size(dtype);
    for (uint64_t sz = minb; !rc && sz <= maxb;) {
        req.bytes = sz;
        coll_result res;
        rc = coll_predict(ctx, &req, &res, e);
        if (rc)
            break;
        double us = (double)res.time_ps / 1e6;
        double algbw = us > 0 ? (double)sz / (us * 1e3) : 0;
        double busbw = algbw * bus_factor(kind, req.nranks);
        char chs[16];
        /* All-to-all runs as grouped point-to-point sends, not a ring. */
        const char *aname = kind == COLL_ALLTOALL ? "p2p" : coll_algo_name(res.algo);
        snprintf(chs, sizeof chs, "%d", res.channels);
        report_int(rep, (long long)sz);
        report_int(rep, (long long)(sz / (uint64_t)esz));
        report_str(rep, coll_dtype_name(dtype));
        if (fmt == REPORT_CSV) {
            report_str(rep, aname);
            report_str(rep, res.proto == PROTO_AUTO ? "-" : coll_proto_name(res.proto));
            report_int(rep, res.channels);
        } else {
            report_str(rep, "sum");
            report_int(rep, kind == COLL_BROADCAST ? req.root : -1);
        }
        report_num(rep, us);
        report_num(rep, algbw);
        report_num(rep, busbw);
        if (fmt != REPORT_CSV) {
            report_str(rep, aname);
            report_str(rep, res.proto == PROTO_AUTO ? "-" : coll_proto_name(res.proto));
            report_str(rep, res.channels ? chs : "-");
        }
        report_end_row(rep);
        uint64_t next = (uint64_t)((double)sz * factor);
        if (next <= sz || minb == maxb)
            break;
        sz = next;
    }
    if (!rc)
        rc = report_finish(rep, e);
    if (!rc)
        rc = ofile_commit(&out, e);
    else if (out.f)
        ofile_abort(&out);
    if (!rc && timeline) {
        ofile tl;
        req.bytes = maxb;
        coll_result res;
        rc = ofile_open(&tl, timeline, e);
        if (!rc) {
            rc = coll_predict_timeline(ctx, &req, &res, tl.f, e);
            rc = rc ? (ofile_abort(&tl), rc) : ofile_commit(&tl, e);
        }
    }
    report_free(rep);
    coll_ctx_free(ctx);
    topo_free(t);
    return rc;
}
