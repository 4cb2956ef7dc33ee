/* Collective benchmark: the time to predict one allreduce (build the task
 * graph on a real topology and run it), ring and one-shot, on 8, 64 and
 * 1,024 GPUs, each also as a ratio to a reference run in the same process
 * (qsort of 2^20 doubles), so the figures compare across machines.
 * bench_simgrid compares the engine with SimGrid on the same flows. The cache is
 * bypassed: every row is a fresh simulation (streamed, with symmetric ring
 * steps bundled, as `collsim coll` runs them). Usage: bench_coll [--quick]. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "models/coll/coll.h"
#include "models/topo/topo.h"
#include "bench/bench_common.h"
#include "sim/report.h"

static const struct {
    const char *topo;
    coll_algo algo;
    uint64_t bytes;
    int reps;
} cases[] = {
    {"rtxpro6000-8x-pcie5-2s", ALGO_RING, 43008, 200},
    {"rtxpro6000-8x-pcie5-2s", ALGO_ONESHOT, 43008, 200},
    {"nvswitch-8", ALGO_RING, 1 << 20, 200},
    {"nvswitch-8", ALGO_ONESHOT, 1 << 20, 200},
    {"nvswitch-64", ALGO_RING, 1 << 20, 5},
    {"nvswitch-64", ALGO_ONESHOT, 1 << 20, 5},
    {"nvswitch-1024", ALGO_RING, 1 << 20, 1},
    {"nvswitch-1024", ALGO_ONESHOT, 1 << 20, 1},
};

static const report_col cols[] = {
    {"topology", NULL, 22, -1},  {"algo", NULL, 8, -1},      {"bytes", NULL, 8, -1},
    {"events", NULL, 9, -1},     {"predict_ms", NULL, 10, 3}, {"per_ref", "t/ref", 8, 4},
    {"Mevents_per_s", "Mev/s", 7, 2}, {"predicted_us", NULL, 12, 2},
};

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    double ref = bench_reference_s();
    report *r = report_new(stdout, REPORT_TABLE);
    report_meta(r, "reference", "qsort of 2^20 doubles: %.1f ms", ref * 1e3);
    report_table(r, "allreduce prediction", cols, (int)(sizeof cols / sizeof cols[0]));
    int rc = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (quick && strstr(cases[i].topo, "1024"))
            continue;
        err e = {0};
        topo *t = NULL;
        if (topo_load(cases[i].topo, &t, &e)) {
            fprintf(stderr, "bench_coll: %s\n", e.msg);
            return 1;
        }
        coll_ctx *c = coll_ctx_new(t);
        coll_req q;
        coll_req_init(&q, t);
        q.algo = cases[i].algo;
        q.bytes = cases[i].bytes;
        coll_result res = {0};
        double t0 = bench_now_s();
        for (int k = 0; k < cases[i].reps && !rc; k++)
            rc = coll_predict_timeline(c, &q, &res, NULL, &e);
        double dt = (bench_now_s() - t0) / cases[i].reps;
        if (rc) {
            fprintf(stderr, "bench_coll: %s: %s\n", cases[i].topo, e.msg);
            break;
        }
        report_str(r, cases[i].topo);
        report_str(r, coll_algo_name(cases[i].algo));
        report_int(r, (long long)cases[i].bytes);
        report_int(r, (long long)res.events);
        report_num(r, dt * 1e3);
        report_num(r, dt / ref);
        report_num(r, (double)res.events / dt * 1e-6);
        report_num(r, (double)res.time_ps / 1e6);
        report_end_row(r);
        coll_ctx_free(c);
        topo_free(t);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    report_note(r, "peak RSS %.1f MiB", (double)ru.ru_maxrss / 1024.0);
    err e = {0};
    if (report_finish(r, &e))
        rc = 1;
    report_free(r);
    return rc ? 1 : 0;
}
