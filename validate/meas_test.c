/* Unit tests of the measurement reader: csv kinds, nccl-tests output, and
 * file:line errors on malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "models/nccl/nccl_tune.h"
#include "validate/meas.h"

static int read_str(const char *text, const char *name, meas_set **m, err *e)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    int rc = meas_read(f, name, m, e);
    fclose(f);
    return rc;
}

static const char flows_csv[] =
    "# format: collsim-meas 1\n"
    "# kind: flows\n"
    "# machine: box\n"
    "# gpus: RTX PRO 6000,RTX PRO 6000,RTX PRO 6000\n"
    "# topo: GPU0 X PIX\n"
    "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n"
    "0,same-source,write,0,0,1,1000000,50,20\n"
    "0,same-source,write,1,0,2,1000000,40,25\n"
    "0,same-source,write,-1,*,*,2000000,50,40\n"
    "# a note after the header\n"
    "1,h2d,copy,0,host1,2,4,nan,nan\n"
    "1,h2d,copy,-1,*,*,4,2,0.002\n";

static void test_flows(void **state)
{
    (void)state;
    meas_set *m;
    err e = {0};
    assert_int_equal(read_str(flows_csv, "f.csv", &m, &e), 0);
    assert_int_equal(meas_kind_of(m), MEAS_FLOWS);
    assert_string_equal(meas_meta(m, "machine"), "box");
    assert_null(meas_meta(m, "driver"));
    /* Three GPU names in the gpus list -> 3 ranks. */
    assert_int_equal(meas_ranks(m), 3);
    assert_int_equal(meas_nxfer(m), 5);
    const meas_xfer *x = meas_xfer_at(m, 1);
    assert_int_equal(x->case_id, 0);
    assert_string_equal(x->pattern, "same-source");
    assert_int_equal(x->op, MEAS_WRITE);
    assert_int_equal(x->src, 0);
    assert_int_equal(x->dst, 2);
    assert_int_equal(x->bytes, 1000000);
    assert_true(x->time_us == 40 && x->bw_GBps == 25);
    assert_int_equal(x->line, 8);
    x = meas_xfer_at(m, 2);
    assert_int_equal(x->flow, -1);
    assert_int_equal(x->src, MEAS_ANY);
    x = meas_xfer_at(m, 3);
    assert_true(MEAS_IS_HOST(x->src));
    assert_int_equal(MEAS_HOST_NODE(x->src), 1);
    assert_true(isnan(x->time_us));
    char buf[16];
    assert_string_equal(meas_ep_name(x->src, buf), "host1");
    meas_free(m);
}

static void test_kinds(void **state)
{
    (void)state;
    meas_set *m;
    err e = {0};
    const char launch[] = "# format: collsim-meas 1\n# kind: launch\n"
                          "what,count,time_us\nlaunch,1000,2.5\ngraph-node,500,0.8\n";
    assert_int_equal(read_str(launch, "l.csv", &m, &e), 0);
    assert_int_equal(meas_nlaunch(m), 2);
    assert_string_equal(meas_launch_at(m, 1)->what, "graph-node");
    assert_int_equal(meas_nxfer(m), 0);
    meas_free(m);
    /* Columns in another order, with an extra column: found by name. */
    const char coll[] = "# format: collsim-meas 1\n# kind: coll\n# collective: allgather\n"
                        "# ranks: 8\n"
                        "extra,size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,"
                        "busbw_GBps,impl,graph,wrong\n"
                        "x,1024,512,bf16,ring,LL,2,10.5,0.1,0.09,nccl,1,0\n";
    assert_int_equal(read_str(coll, "c.csv", &m, &e), 0);
    assert_string_equal(meas_collective(m), "allgather");
    assert_int_equal(meas_ranks(m), 8);
    const meas_coll *k = meas_coll_at(m, 0);
    meas_free(m);
    /* hwcheck's gpus list: "0: NAME (bus, N SMs); 1: ..." -> 2 entries,
     * the commas inside an entry do not count; virtual_ranks wins. */
    const char hw[] = "# format: collsim-meas 1\n# kind: launch\n"
                      "# gpus: 0: NVIDIA H200 (0000:00:06.0, 132 SMs); 1: NVIDIA H200 "
                      "(0000:00:07.0, 132 SMs)\nwhat,count,time_us\nlaunch,10,4\n";
    assert_int_equal(read_str(hw, "hw.csv", &m, &e), 0);
    assert_int_equal(meas_ranks(m), 2);
    meas_free(m);
    const char hw1[] = "# format: collsim-meas 1\n# kind: launch\n"
                       "# gpus: 0: NVIDIA H200 (0000:00:06.0, 132 SMs)\n"
                       "# virtual_ranks: 8 (on GPU 0)\nwhat,count,time_us\nlaunch,10,4\n";
    assert_int_equal(read_str(hw1, "hw.csv", &m, &e), 0);
    assert_int_equal(meas_ranks(m), 8);
    meas_free(m);
    assert_int_equal(read_str(coll, "c.csv", &m, &e), 0);
    k = meas_coll_at(m, 0);
    assert_int_equal(k->bytes, 1024);
    assert_string_equal(k->algo, "ring");
    assert_int_equal(k->channels, 2);
    assert_int_equal(k->graph, 1);
    meas_free(m);
    const char replay[] = "# format: collsim-meas 1\n# kind: replay\n"
                          "trace,allreduce,cycles,tokens,cycle_us,tok_per_s,compute_us,"
                          "comm_us,launch_us,idle_us\n"
                          "t.trace,oneshot,100,250,12000,208.3,8000,3000,500,nan\n";
    assert_int_equal(read_str(replay, "r.csv", &m, &e), 0);
    assert_true(meas_replay_at(m, 0)->cycle_us == 12000);
    assert_true(isnan(meas_replay_at(m, 0)->idle_us));
    meas_free(m);
}

static const char nccl_out[] =
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 4(factor) warmup iters: 5 iters: 20 "
    "agg iters: 1 validation: 1 graph: 1\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   1 on host device  0 [0x01] NVIDIA H200\n"
    "#  Rank  1 Group  0 Pid   1 on host device  1 [0x02] NVIDIA H200\n"
    "host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
    "#\n"
    "#                                                              out-of-place        "
    "               in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)      "
    "      (us)  (GB/s)  (GB/s)       \n"
    "           8             2     float     sum      -1    10.52    0.00    0.00      0"
    "    10.33    0.00    0.00      0\n"
    "        1024           256     float     sum      -1    11.00    0.09    0.09      0"
    "    11.10    0.09    0.09      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 0.045\n";

static void test_nccl_tests(void **state)
{
    (void)state;
    meas_set *m;
    err e = {0};
    /* The collective comes from the file name; out-of-place time is used;
     * graph: 1 in the header; NCCL_ALGO from the log line, lower-cased. */
    assert_int_equal(read_str(nccl_out, "all_reduce_perf.txt", &m, &e), 0);
    assert_true(meas_is_nccl_tests(m));
    assert_int_equal(meas_kind_of(m), MEAS_COLL);
    assert_string_equal(meas_collective(m), "allreduce");
    assert_int_equal(meas_ranks(m), 2);
    assert_int_equal(meas_ncoll(m), 2);
    const meas_coll *k = meas_coll_at(m, 1);
    assert_int_equal(k->bytes, 1024);
    assert_true(k->time_us == 11.00);
    assert_string_equal(k->dtype, "float");
    assert_string_equal(k->algo, "ring");
    assert_string_equal(k->proto, "auto");
    assert_int_equal(k->graph, 1);
    assert_int_equal(k->line, 12);
    /* The header's nGpus 2: one thread drove both GPUs. */
    assert_int_equal(meas_gpus_per_thread(m), 2);
    meas_free(m);
    /* A converted table: -g from an nccl-tests command line (-g 8, -g8,
     * --ngpus=4); none, or a command that is not nccl-tests', is 1. */
    static const char *const cmds[][2] = {
        {"./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8", "8"},
        {"./build/all_reduce_perf -b 8 -e 1024M -f 2 -g2 (as the post prints it)", "2"},
        {"all_gather_perf --ngpus=4 -b 8", "4"},
        {"mpirun -np 8 ./build/all_reduce_perf -b 8 -e 128M", "1"},
        {"hwcheck coll -g 2 --impl nccl", "2"},   /* one thread drives hwcheck's GPUs */
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "# format: collsim-meas 1\n# kind: coll\n# collective: allreduce\n"
                 "# command: %s\nsize_bytes,count,dtype,algo,proto,channels,time_us,"
                 "algbw_GBps,busbw_GBps,impl,graph,wrong\n8,2,fp32,auto,auto,0,10,0,0,nccl,0,0\n",
                 cmds[i][0]);
        assert_int_equal(read_str(text, "c.csv", &m, &e), 0);
        assert_int_equal(meas_gpus_per_thread(m), atoi(cmds[i][1]));
        assert_int_equal(meas_host_probe_ps(m), 0);   /* no host_probe line */
        meas_free(m);
    }
    /* hwcheck: every GPU of the file from one thread, its ranks from the gpus
     * line (2 here, no -g in the command). */
    const char hw[] = "# format: collsim-meas 1\n# kind: coll\n# command: hwcheck coll allreduce\n"
                      "# gpus: 0: NVIDIA H200 (0000:00:06.0, 132 SMs); 1: NVIDIA H200 "
                      "(0000:00:07.0, 132 SMs)\n"
                      "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                      "impl,graph,wrong\n8,4,bf16,auto,auto,0,10,0,0,nccl,0,0\n";
    assert_int_equal(read_str(hw, "hw.csv", &m, &e), 0);
    assert_int_equal(meas_gpus_per_thread(m), 2);
    meas_free(m);
    /* hwcheck coll's host probe: nccl-p2p-1-host in ps; a line that does not
     * read as the two figures gives none. */
    static const struct {
        const char *line;
        long long want;
    } probes[] = {{"launch-host 4.360 us, nccl-p2p-1-host 7.190 us (this process)", 7190000},
                  {"launch-host 4.360 us", 0},
                  {"nccl-p2p-1-host 7.19 us", 0}};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "# format: collsim-meas 1\n# kind: coll\n# command: hwcheck coll allreduce\n"
                 "# host_probe: %s\n"
                 "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                 "impl,graph,wrong\n8,2,float,auto,auto,0,10,0,0,nccl,0,0\n", probes[i].line);
        assert_int_equal(read_str(text, "t.csv", &m, &e), 0);
        assert_int_equal(meas_host_probe_ps(m), probes[i].want);
        meas_free(m);
    }
}

static void expect_error(const char *text, const char *where, const char *what)
{
    meas_set *m = NULL;
    err e = {0};
    assert_int_equal(read_str(text, "bad.csv", &m, &e), ERR_INPUT);
    assert_null(m);
    if (!strstr(e.msg, where) || !strstr(e.msg, what))
        print_error("message '%s' lacks '%s' or '%s'\n", e.msg, where, what);
    assert_non_null(strstr(e.msg, where));
    assert_non_null(strstr(e.msg, what));
}

static void test_errors(void **state)
{
    (void)state;
    const char *hdr = "# format: collsim-meas 1\n# kind: p2p\n"
                      "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n";
    char buf[1024];
    expect_error("# format: collsim-meas 2\n", "bad.csv:1:", "collsim-meas 1");
    expect_error("# format: collsim-meas 1\n# kind: nvlink\n", "bad.csv:2:", "unknown kind");
    expect_error("# format: collsim-meas 1\ncase\n", "bad.csv:2:", "kind");
    expect_error("# format: collsim-meas 1\n# kind: p2p\ncase,op\n", "bad.csv:3:",
                 "column 'pattern'");
    snprintf(buf, sizeof buf, "%s0,pair,poke,0,0,1,100,1,0.1\n", hdr);
    expect_error(buf, "bad.csv:4:", "bad op 'poke'");
    snprintf(buf, sizeof buf, "%s0,pair,write,0,0,1,100,-1,0.1\n", hdr);
    expect_error(buf, "bad.csv:4:", "time_us");
    snprintf(buf, sizeof buf, "%s0,pair,write,0,0,1,1000,1\n", hdr);
    expect_error(buf, "bad.csv:4:", "8 fields");
    /* 1000 B in 1 us is 1 GB/s, not 5. */
    snprintf(buf, sizeof buf, "%s0,pair,write,0,0,1,1000,1,5\n", hdr);
    expect_error(buf, "bad.csv:4:", "does not match");
    snprintf(buf, sizeof buf, "%s0,pair,write,0,*,1,1000,1,1\n", hdr);
    expect_error(buf, "bad.csv:4:", "'*'");
    snprintf(buf, sizeof buf, "%s0,pair,write,-1,*,*,1000,1,1\n", hdr);
    expect_error(buf, "bad.csv:4:", "no flow rows");
    snprintf(buf, sizeof buf, "%s0,pair,write,0,0,1,1000,1,1\n0,pair,write,0,0,2,1000,1,1\n",
             hdr);
    expect_error(buf, "bad.csv:5:", "flow 0 twice");
    expect_error("hello\n", "bad.csv", "nccl-tests");
    expect_error("#  size count type redop root time algbw busbw #wrong\n8 2 float\n",
                 "bad.csv:2:", "columns");
    expect_error("#  size count type redop root time algbw busbw #wrong\n"
                 "8 2 float sum -1 x 0 0 0\n", "bad.csv:2:", "bad time 'x'");
}

/* collsim coll --algo ring,oneshot: one time/busbw pair per algorithm under
 * a line naming them; '-' where an algorithm cannot run a size. */
static const char collsim_multi[] =
    "# predicted_by: collsim 0.1.0 (a model: no GPU ran)\n"
    "# command: collsim coll allreduce --topo h200-2x --algo ring,oneshot -b 4K -e 16K -f 4\n"
    "# collective: allreduce\n"
    "# topology: h200-2x (2 GPUs, 2 used)\n"
    "# graph: 1\n"
    "# algo: ring,oneshot\n"
    "# proto: LL\n"
    "#\n"
    "#                                                                ring          oneshot\n"
    "#       size         count      type   redop    root     time   busbw     time   busbw  winner\n"
    "#        (B)    (elements)                               (us)  (GB/s)     (us)  (GB/s)\n"
    "        4096          2048  bfloat16     sum      -1     9.74    0.42     8.95    0.46  oneshot\n"
    "       16384          8192  bfloat16     sum      -1    10.17    1.61        -       -  ring\n"
    "# '-': the algorithm cannot run that size on this topology\n";

static void test_collsim_tables(void **state)
{
    (void)state;
    meas_set *m;
    err e = {0};
    /* 2 sizes x 2 algorithms, less the '-' cell: 3 rows, one series per
     * algorithm; header metadata read; graph and proto from it. */
    assert_int_equal(read_str(collsim_multi, "multi.txt", &m, &e), 0);
    assert_int_equal(meas_kind_of(m), MEAS_COLL);
    assert_int_equal(meas_ncoll(m), 3);
    assert_string_equal(meas_meta(m, "topology"), "h200-2x (2 GPUs, 2 used)");
    assert_non_null(strstr(meas_meta(m, "command"), "--topo h200-2x"));
    const meas_coll *k = meas_coll_at(m, 1);
    assert_string_equal(k->algo, "oneshot");
    assert_true(k->time_us == 8.95);
    /* algbw = 4096 B / 8.95 us = 0.4577 GB/s (computed: the table omits it) */
    assert_true(fabs(k->algbw_GBps - 4096.0 / 8950.0) < 1e-9);
    assert_int_equal(k->graph, 1);
    assert_string_equal(k->proto, "LL");
    k = meas_coll_at(m, 2);
    assert_string_equal(k->algo, "ring");
    assert_int_equal(k->bytes, 16384);
    assert_int_equal(k->line, 13);
    assert_int_equal(meas_virtual_ranks(m), 0);
    meas_free(m);
    /* The same header lines in real nccl-tests output (no predicted_by:
     * collsim) are not metadata. */
    const char nt[] = "# topology: fake\n#  size count type redop root time algbw busbw #wrong\n"
                      "8 2 float sum -1 5 0 0 0\n";
    assert_int_equal(read_str(nt, "nt.txt", &m, &e), 0);
    assert_null(meas_meta(m, "topology"));
    meas_free(m);
    /* A multi-algorithm header whose names line does not match its column
     * pairs (3 names, 2 pairs) is not taken as one: the missing algbw is
     * reported as before. */
    char bad[2048];
    snprintf(bad, sizeof bad, "%s", collsim_multi);
    char *names = strstr(bad, "ring          oneshot");
    memcpy(names, "ring oneshot twoshot ", 21);
    assert_int_equal(read_str(bad, "bad.txt", &m, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "bad.txt:10:"));
}

static void test_virtual_ranks(void **state)
{
    (void)state;
    meas_set *m;
    err e = {0};
    /* hwcheck --virtual-ranks 4: 4 ranks, and they are virtual. */
    const char v[] = "# format: collsim-meas 1\n# kind: coll\n"
                     "# gpus: 0: NVIDIA H200 (0000:00:06.0, 132 SMs)\n"
                     "# virtual_ranks: 4 (on GPU 0, separate buffers and streams)\n"
                     "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                     "impl,graph,wrong\n1024,512,bf16,oneshot,-,1,17.67,0.06,0.09,oneshot,0,0\n";
    assert_int_equal(read_str(v, "v4.csv", &m, &e), 0);
    assert_int_equal(meas_ranks(m), 4);
    assert_int_equal(meas_virtual_ranks(m), 4);
    meas_free(m);
}

/* The NCCL a coll set ran under (meas_nccl_env), which validate and the
 * NCCL-cost calibration both predict with: `# nccl: 2.27.3` selects 2.27's
 * emulation (nccl_tune_version_parse("2.27"), not the newest, 0); `--env
 * NCCL_PROTO=LL` and `--env=NCCL_MAX_NCHANNELS=4` apply; NCCL_DEBUG, which
 * the model does not know, is ignored. Without those lines: the defaults. */
static void test_nccl_env(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-8x-nvswitch", &t, &e), 0);
    const char v[] = "# format: collsim-meas 1\n# kind: coll\n# nccl: 2.27.3\n"
                     "# command: hwcheck coll --env NCCL_PROTO=LL --env NCCL_DEBUG=INFO "
                     "--env=NCCL_MAX_NCHANNELS=4 -o x.csv\n"
                     "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                     "impl,graph,wrong\n1024,256,float32,ring,LL,1,17.67,0.06,0.09,nccl,0,0\n";
    meas_set *m;
    assert_int_equal(read_str(v, "n.csv", &m, &e), 0);
    nccl_env env = meas_nccl_env(m, t);
    int v227 = nccl_tune_version_parse("2.27");
    assert_true(v227 > 0);
    assert_int_equal(env.version, v227);
    assert_int_equal(env.proto, PROTO_LL);
    assert_int_equal(env.max_channels, 4);
    assert_int_equal(env.algo, ALGO_AUTO);
    coll_dtype d;
    assert_int_equal(meas_dtype_parse(meas_coll_at(m, 0)->dtype, &d), 0);
    assert_int_equal(d, DTYPE_FP32);
    meas_free(m);
    const char plain[] = "# format: collsim-meas 1\n# kind: coll\n"
                         "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,"
                         "busbw_GBps,impl,graph,wrong\n1024,512,half,ring,LL,1,17.67,0.06,0.09,"
                         "nccl,0,0\n";
    assert_int_equal(read_str(plain, "p.csv", &m, &e), 0);
    env = meas_nccl_env(m, t);
    assert_int_equal(env.version, 0);
    assert_int_equal(env.proto, PROTO_AUTO);
    assert_int_equal(env.max_channels, 0);
    assert_int_equal(meas_dtype_parse(meas_coll_at(m, 0)->dtype, &d), 0);
    assert_int_equal(d, DTYPE_FP16);
    meas_free(m);
    /* A relative NCCL_GRAPH_FILE is read beside the measurement file: "g.xml"
     * in data/sets/x.csv is data/sets/g.xml; in a file named without a
     * folder it stays as written. */
    const char gf[] = "# format: collsim-meas 1\n# kind: coll\n"
                      "# command: x --env NCCL_GRAPH_FILE=g.xml\n"
                      "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,"
                      "busbw_GBps,impl,graph,wrong\n1024,512,half,ring,LL,1,17.67,0.06,0.09,"
                      "nccl,0,0\n";
    assert_int_equal(read_str(gf, "data/sets/x.csv", &m, &e), 0);
    assert_string_equal(meas_nccl_env(m, t).graph_file, "data/sets/g.xml");
    meas_free(m);
    assert_int_equal(read_str(gf, "x.csv", &m, &e), 0);
    assert_string_equal(meas_nccl_env(m, t).graph_file, "g.xml");
    meas_free(m);
    topo_free(t);
}

/* Settings a run had that its file does not record (meas_set_run_env,
 * validate --env): nccl-tests output ran under NCCL_P2P_DISABLE=1 reads as
 * p2p_disable 0 alone and 1 with the setting; "" clears it again. A file
 * whose command records --env NCCL_P2P_DISABLE=1 keeps 1 under a given
 * NCCL_P2P_DISABLE=0 (its own record applies after and wins), while a given
 * NCCL_PROTO=Simple it does not set still applies. */
static void test_run_env(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    const char nt[] = "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 "
                      "iters: 50 agg iters: 1 validation: 1 graph: 0\n"
                      "#       size         count      type   redop    root     time   algbw   "
                      "busbw  #wrong     time   algbw   busbw  #wrong\n"
                      "           8             4  bfloat16     sum      -1    21.33    0.00    "
                      "0.00       0    21.33    0.00    0.00       0\n";
    meas_set *m;
    assert_int_equal(read_str(nt, "all_reduce_perf.txt", &m, &e), 0);
    assert_int_equal(meas_nccl_env(m, t).p2p_disable, 0);
    assert_int_equal(meas_set_run_env(m, "NCCL_P2P_DISABLE=1", &e), 0);
    assert_int_equal(meas_nccl_env(m, t).p2p_disable, 1);
    assert_int_equal(meas_set_run_env(m, "", &e), 0);
    assert_int_equal(meas_nccl_env(m, t).p2p_disable, 0);
    meas_free(m);
    const char hw[] = "# format: collsim-meas 1\n# kind: coll\n"
                      "# command: hwcheck coll allreduce --env NCCL_P2P_DISABLE=1\n"
                      "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,"
                      "busbw_GBps,impl,graph,wrong\n1024,512,half,auto,auto,0,17.67,0.06,0.09,"
                      "nccl,0,0\n";
    assert_int_equal(read_str(hw, "hw.csv", &m, &e), 0);
    assert_int_equal(meas_set_run_env(m, "NCCL_P2P_DISABLE=0 NCCL_PROTO=Simple", &e), 0);
    nccl_env env = meas_nccl_env(m, t);
    assert_int_equal(env.p2p_disable, 1);
    assert_int_equal(env.proto, PROTO_SIMPLE);
    meas_free(m);
    topo_free(t);
}

static void test_row_probe(void **state)
{
    (void)state;
    meas_set *m = NULL;
    err e = {0};
    /* hwcheck coll's probe_us column: the host probe taken right before each
     * row (the host's level changes inside a process); 0 = not taken. The
     * file's own host_probe is 7.19 us. */
    const char text[] = "# format: collsim-meas 1\n# kind: coll\n# command: hwcheck coll allreduce\n"
                        "# gpus: 0: NVIDIA H200 (0000:00:06.0, 132 SMs); 1: NVIDIA H200 "
                        "(0000:00:07.0, 132 SMs)\n"
                        "# host_probe: launch-host 4.360 us, nccl-p2p-1-host 7.190 us (x)\n"
                        "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                        "impl,graph,wrong,probe_us\n"
                        "8,4,bf16,auto,auto,0,19,0,0,nccl,0,0,9.500\n"
                        "16,8,bf16,auto,auto,0,13,0,0,nccl,0,0,0.000\n";
    assert_int_equal(read_str(text, "p.csv", &m, &e), 0);
    const meas_coll *a = meas_coll_at(m, 0), *b = meas_coll_at(m, 1);
    assert_true(fabs(a->probe_us - 9.5) < 1e-9 && b->probe_us == 0);
    /* A 2-rank allreduce (one call a rank) from one thread costs 2 x (P -
     * nccl_p2p_op) (docs/model.md "One thread, several ranks"): with the
     * row's 9.5 us, 2 x (9.5 - 0.261) = 18.478 us; a row without one takes
     * the file's 7.19: 2 x (7.19 - 0.261) = 13.858; so does no row. */
    topo_params tp;
    memset(&tp, 0, sizeof tp);
    tp.nccl_p2p_op_ps = 261000;
    coll_req q;
    memset(&q, 0, sizeof q);
    q.kind = COLL_ALLREDUCE;
    q.nranks = 2;
    assert_int_equal(meas_nccl_issue_ps(m, a, &tp, &q, 1), 18478000);
    assert_int_equal(meas_nccl_issue_ps(m, b, &tp, &q, 1), 13858000);
    assert_int_equal(meas_nccl_issue_ps(m, NULL, &tp, &q, 1), 13858000);
    /* The plan's channels beyond the first add nccl_chan_us on each rank:
     * 24 channels at 0.0143 us, 13.858 + 2 x 23 x 0.0143 = 14.5158 us. */
    tp.nccl_chan_ps = 14300;
    assert_int_equal(meas_nccl_issue_ps(m, b, &tp, &q, 24), 14515800);
    assert_int_equal(meas_nccl_issue_ps(m, b, &tp, &q, 1), 13858000);
    meas_free(m);
    /* A probe that is not a number, or negative, names its place. */
    const char bad[] = "# format: collsim-meas 1\n# kind: coll\n"
                       "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                       "impl,graph,wrong,probe_us\n8,4,bf16,auto,auto,0,19,0,0,nccl,0,0,-1\n";
    assert_int_equal(read_str(bad, "q.csv", &m, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "q.csv:4"));
    assert_non_null(strstr(e.msg, "probe_us"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flows),
        cmocka_unit_test(test_run_env),
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_nccl_tests),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_collsim_tables),
        cmocka_unit_test(test_virtual_ranks),
        cmocka_unit_test(test_nccl_env),
        cmocka_unit_test(test_row_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
