/* Engine benchmark: event-queue throughput, synthetic ring allreduces and
 * all-to-alls on a non-blocking crossbar, built directly with sched. Every
 * time is also given as a ratio to a reference run in the same process
 * (qsort of 2^20 doubles, best of 3 before and 3 after), so figures compare
 * across noisy machines; each case is the best of up to 3 repetitions (fewer
 * past 2 s). Ring cases check their makespan against the closed form
 * 2(n-1)(alpha + S/(nB)); a wrong answer fails the benchmark (exit 1). Usage: bench_engine [--format table|csv|json]
 * [--quick] [--ranks N] (--quick skips the 1,024-rank case; --ranks runs only
 * the cases of N ranks, e.g. for a profiler). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim/cli.h"
#include "sim/evq.h"
#include "sim/report.h"
#include "sim/sched.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 11;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Reference: qsort of 1M pseudo-random doubles, best of 3 (seconds). */
static double reference_s(void)
{
    enum { N = 1 << 20 };
    double *v = malloc(N * sizeof(double)), best = 1e30;
    if (!v)
        return 0;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t x = 12345;
        for (int i = 0; i < N; i++)
            v[i] = (double)lcg(&x) / 9007199254740992.0;
        double t0 = now_s();
        qsort(v, N, sizeof(double), cmp_double);
        double dt = now_s() - t0;
        if (dt < best)
            best = dt;
    }
    free(v);
    return best;
}

/* Event queue "hold" model: 4M pop+push pairs on a queue of 1,024 events. */
static double evq_hold_s(uint64_t *nev)
{
    enum { HOLD = 1024, OPS = 4 << 20 };
    evq *q = evq_new();
    uint64_t x = 99;
    for (int i = 0; i < HOLD; i++)
        evq_push(q, (int64_t)(lcg(&x) % 1000000), 0, i);
    double t0 = now_s();
    for (int i = 0; i < OPS; i++) {
        int64_t t;
        int32_t a;
        evq_pop(q, &t, NULL, &a);
        evq_push(q, t + (int64_t)(lcg(&x) % 1000000), 0, a);
    }
    double dt = now_s() - t0;
    evq_free(q);
    *nev = OPS;
    return dt;
}

/* A benchmark case builds its tasks into s (links included) and says what
 * makespan it must produce (-1: unknown). */
typedef struct bench_case {
    const char *name;
    int ranks;
    sim_ps (*build)(sched *s, int ranks);
} bench_case;

/* Ring allreduce over a crossbar: rank r sends on up[r] to down[r+1]; step k
 * of rank r waits for its step k-1 and for r-1's step k-1 (the chunk it
 * forwards). S = 256 MiB, B = 50 GB/s, alpha = 2 us. */
static sim_ps build_ring_xbar(sched *s, int n)
{
    const double S = 256.0 * 1024 * 1024, B = 50e9;
    const sim_ps alpha = 2000000;
    int *up = malloc((size_t)n * 2 * sizeof(int)), *down = up + n;
    if (!up)
        return -2;
    for (int r = 0; r < n; r++) {
        up[r] = sched_link(s, B, "up");
        down[r] = sched_link(s, B, "down");
    }
    int first = sched_ntasks(s), steps = 2 * (n - 1);
    for (int k = 0; k < steps; k++)
        for (int r = 0; r < n; r++) {
            int links[2] = {up[r], down[(r + 1) % n]};
            int t = sched_flow(s, links, 2, S / n, 0, alpha, 0, r, "ring");
            if (t < 0) {
                free(up);
                return -2;
            }
            if (k > 0) {
                sched_dep(s, t - n, t);
                sched_dep(s, first + (k - 1) * n + (r + n - 1) % n, t);
            }
        }
    free(up);
    /* S/n / B rounded up to a ps, as the engine does; exact here for n a
     * power of two (S/n/B = 2^28/n / 5e10 s). */
    double step_s = S / n / B;
    sim_ps step_ps = (sim_ps)(step_s * 1e12 + 0.5);
    return (sim_ps)steps * (alpha + step_ps);
}

/* All-to-all over the same crossbar, every pair's flow a different size
 * (1 MB + 1 KB * pair index), all at once: one component of n(n-1) flows on
 * 2n links, re-solved at each of the n(n-1) distinct departures; stresses
 * the max-min solver rather than the event queue. No closed form. */
static sim_ps build_alltoall_xbar(sched *s, int n)
{
    int *up = malloc((size_t)n * 2 * sizeof(int)), *down = up + n;
    if (!up)
        return -2;
    for (int r = 0; r < n; r++) {
        up[r] = sched_link(s, 50e9, "up");
        down[r] = sched_link(s, 50e9, "down");
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b) {
                int links[2] = {up[a], down[b]};
                if (sched_flow(s, links, 2, 1e6 + 1e3 * (a * n + b), 0, 1000000, 0, a,
                               "a2a") < 0) {
                    free(up);
                    return -2;
                }
            }
    free(up);
    return -1;
}

static const bench_case cases[] = {
    {"ring-xbar", 8, build_ring_xbar},
    {"ring-xbar", 64, build_ring_xbar},
    {"ring-xbar", 1024, build_ring_xbar},
    {"alltoall-xbar", 16, build_alltoall_xbar},
    {"alltoall-xbar", 64, build_alltoall_xbar},
    /* Real-topology cases (models/: PCIe trees, NVSwitch) go here, with a
     * build function that routes over a topo and returns -1 (no closed form)
     * or the makespan the models' own tests derived. */
};

static const report_col cols[] = {
    {"case", NULL, 14, 0},    {"ranks", NULL, 6, 0},       {"tasks", NULL, 9, 0},
    {"events", NULL, 9, 0},   {"build_ms", NULL, 9, 1},    {"run_ms", NULL, 9, 1},
    {"Mevents_per_s", "Mev/s", 7, 2}, {"run_vs_ref", "run/ref", 8, 3},
    {"sim_time_us", NULL, 12, 3},
};

struct result {
    const bench_case *bc;
    int ntasks;
    uint64_t nev;
    double build_s, run_s;
    sim_ps makespan;
};

/* Best of up to 3 builds and runs of one case (fewer past 2 s); 0, or 1 if
 * the engine failed or gave the wrong makespan. */
static int run_case(const bench_case *bc, struct result *res)
{
    int rc = 0;
    double spent = 0;
    err e = {0};
    res->bc = bc;
    res->build_s = res->run_s = 1e30;
    for (int rep = 0; rep < 3 && spent < 2.0; rep++) {
        sched *s = sched_new(); /* links differ per case: a new engine */
        if (!s)
            return ERR_SYSTEM;
        double t0 = now_s();
        sim_ps want = bc->build(s, bc->ranks);
        double t1 = now_s();
        int run = want == -2 ? err_set(&e, ERR_SYSTEM, "out of memory") : sched_run(s, &e);
        double t2 = now_s();
        if (run != 0 || (want >= 0 && sched_makespan(s) != want)) {
            fprintf(stderr, "bench_engine: %s/%d: %s (makespan %lld ps, want %lld)\n",
                    bc->name, bc->ranks, run ? e.msg : "wrong makespan",
                    (long long)sched_makespan(s), (long long)want);
            rc = 1;
        }
        if (t1 - t0 < res->build_s)
            res->build_s = t1 - t0;
        if (t2 - t1 < res->run_s)
            res->run_s = t2 - t1;
        spent += t2 - t0;
        res->nev = sched_events(s);
        res->ntasks = sched_ntasks(s);
        res->makespan = sched_makespan(s);
        sched_free(s);
    }
    return rc;
}

int main(int argc, char **argv)
{
    report_format fmt = REPORT_TABLE;
    int quick = 0, only = 0;
    err e = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
            only = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            if (cli_parse_format(argv[++i], &fmt, &e)) {
                fprintf(stderr, "bench_engine: %s\n", e.msg);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_engine [--format table|csv|json] [--quick] "
                            "[--ranks N]\n");
            return 2;
        }
    }
    enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
    struct result res[NCASES];
    int nres = 0, rc = 0;
    double ref = reference_s();
    uint64_t nhold = 0;
    double hold = only ? 0 : evq_hold_s(&nhold);
    for (size_t c = 0; c < NCASES; c++) {
        if ((quick && cases[c].ranks > 64) || (only && cases[c].ranks != only))
            continue;
        int crc = run_case(&cases[c], &res[nres++]);
        if (crc)
            rc = crc;
    }
    double ref2 = reference_s();
    if (ref2 < ref)
        ref = ref2;

    report *r = report_new(stdout, fmt);
    if (!r)
        return ERR_SYSTEM;
    report_meta(r, "reference", "qsort of 2^20 doubles: %.1f ms (best of 6)", ref * 1e3);
    if (nhold)
        report_meta(r, "evq_hold", "%.1f M pop+push per s (1024 queued), %.3f x ref",
                    (double)nhold / hold * 1e-6, hold / ref);
    report_table(r, "engine", cols, (int)(sizeof(cols) / sizeof(cols[0])));
    for (int i = 0; i < nres; i++) {
        const struct result *x = &res[i];
        report_str(r, x->bc->name);
        report_int(r, x->bc->ranks);
        report_int(r, x->ntasks);
        report_int(r, (long long)x->nev);
        report_num(r, x->build_s * 1e3);
        report_num(r, x->run_s * 1e3);
        report_num(r, (double)x->nev / x->run_s * 1e-6);
        report_num(r, (x->build_s + x->run_s) / ref);
        report_num(r, (double)x->makespan / 1e6);
        report_end_row(r);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    report_note(r, "run/ref = (build + run) / reference; peak RSS %.1f MiB",
                (double)ru.ru_maxrss / 1024.0);
    if (report_finish(r, &e)) {
        fprintf(stderr, "bench_engine: %s\n", e.msg);
        rc = ERR_SYSTEM;
    }
    report_free(r);
    return rc;
}
