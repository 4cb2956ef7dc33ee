/* collsim's engine against SimGrid 3.32 on the same flows, in one run.
 * Platform: n GPUs on a crossbar, each with its own up and down link of
 * B = 100 GB/s and 1 us latency (a GPU->GPU route crosses two links: 2 us).
 * Cases, S = 1 MiB:
 *   ring     ring allreduce: 2(n-1) steps, in each every rank sends S/n to the
 *            next; a send waits for the rank's previous send and for the
 *            chunk it forwards (received in the step before);
 *   oneshot  every rank sends S to every other rank at once (n(n-1) flows,
 *            n-1 sharing each link).
 * These are pure-flow cases (no capacity rules, caps or weights), where both
 * engines compute the same max-min shares: ring = 2(n-1)(2 us + S/(nB)),
 * oneshot = 2 us + (n-1)S/B. collsim adds the tasks to its engine (sim/sched)
 * and runs them; SimGrid (network model CM02 without factors, TCP window
 * bound and cross traffic off, so that it is plain max-min sharing) builds
 * the platform and one actor per GPU and runs them, in a child process (one
 * SimGrid engine per process). Both times include building. The answers must
 * agree to 2 ns (SimGrid's default timing precision is 1 ns); otherwise the
 * benchmark fails (exit 1). Usage: bench_simgrid [--quick|--full] (--quick skips
 * 1,024 GPUs; the one-shot at 1,024, where SimGrid takes minutes and 1.7 GiB, only
 * with --full, so that `make bench` fits in about 20 minutes on 2 shared cores). */
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

extern "C" {
#include "sim/report.h"
#include "sim/sched.h"
}

namespace sg4 = simgrid::s4u;

static const double S_BYTES = 1048576.0, B_BPS = 100e9, HOP_S = 1e-6;

static double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The reference the other benchmarks use: qsort of 2^20 doubles, best of 3. */
static double reference_s()
{
    const int N = 1 << 20;
    std::vector<double> v(N);
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t x = 12345;
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            v[i] = (double)(x >> 11) / 9007199254740992.0;
        }
        double t0 = now_s();
        qsort(v.data(), N, sizeof(double), cmp_double);
        best = std::min(best, now_s() - t0);
    }
    return best;
}

/* --- collsim ------------------------------------------------------------- */

static double collsim_case(int n, int oneshot, double *secs)
{
    double t0 = now_s();
    sched *s = sched_new();
    std::vector<int> up(n), down(n);
    for (int r = 0; r < n; r++) {
        up[r] = sched_link(s, B_BPS, "up");
        down[r] = sched_link(s, B_BPS, "down");
    }
    const sim_ps alpha = (sim_ps)llround(2 * HOP_S * 1e12);
    if (oneshot) {
        for (int r = 0; r < n; r++)
            for (int q = 0; q < n; q++)
                if (q != r) {
                    int links[2] = {up[r], down[q]};
                    sched_flow(s, links, 2, S_BYTES, 0, alpha, 0, r, "oneshot");
                }
    } else {
        int steps = 2 * (n - 1);
        for (int k = 0; k < steps; k++)
            for (int r = 0; r < n; r++) {
                int links[2] = {up[r], down[(r + 1) % n]};
                int t = sched_flow(s, links, 2, S_BYTES / n, 0, alpha, 0, r, "ring");
                if (k > 0) {
                    sched_dep(s, t - n, t);                                  /* own step */
                    sched_dep(s, (k - 1) * n + (r + n - 1) % n, t);           /* data */
                }
            }
    }
    err e = {};
    double makespan = -1;
    if (sched_run(s, &e) == 0)
        makespan = (double)sched_makespan(s) * 1e-12;
    else
        fprintf(stderr, "bench_simgrid: collsim: %s\n", e.msg);
    sched_free(s);
    *secs = now_s() - t0;
    return makespan;
}

/* --- SimGrid (in a child process) ------------------------------------------ */

static int dummy;

/* The route a -> b on the tree platform of pcie-N (models/topo/presets.c):
 * 2 GPUs per switch, 2 switches per socket, sockets in a ring; each physical
 * link is a pair of SimGrid links, one per direction. */
struct tree_links {
    std::vector<sg4::Link *> gup, gdown, swup, swdown, rpup, rpdown, sockf, sockb;
};

static std::vector<sg4::LinkInRoute> tree_route(const tree_links &L, int n, int a, int b)
{
    std::vector<sg4::LinkInRoute> r;
    int swa = a / 2, swb = b / 2, sa = a / 4, sb = b / 4, ns = (n + 3) / 4;
    r.emplace_back(L.gup[a]);
    if (swa != swb) {
        r.emplace_back(L.swup[swa]);
        if (sa != sb) {
            r.emplace_back(L.rpup[sa]);
            /* around the ring the short way (forward on ties) */
            int fwd = (sb - sa + ns) % ns, back = (sa - sb + ns) % ns;
            for (int s = sa; s != sb;) {
                if (fwd <= back || ns <= 2) {
                    r.emplace_back(L.sockf[s]);
                    s = (s + 1) % ns;
                } else {
                    int p = (s - 1 + ns) % ns;
                    r.emplace_back(L.sockb[p]);
                    s = p;
                }
            }
            r.emplace_back(L.rpdown[sb]);
        }
        r.emplace_back(L.swdown[swb]);
    }
    r.emplace_back(L.gdown[b]);
    return r;
}

/* tree = 0: the crossbar; 1: the pcie-N tree (links of B_BPS and HOP_S each). */
static void simgrid_case(int n, int oneshot, double *makespan, int tree = 0)
{
    char a0[] = "bench_simgrid", a1[] = "--log=root.thres:critical";
    char *argv[] = {a0, a1, nullptr};
    int argc = 2;
    sg4::Engine e(&argc, argv);
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/TCP-gamma:0");
    sg4::Engine::set_config("network/crosstraffic:0");
    auto *zone = sg4::create_full_zone("xbar");
    std::vector<sg4::Host *> hosts(n);
    std::vector<sg4::Link *> up(n), down(n);
    auto mk = [&](const std::string &name) {
        return zone->create_link(name, B_BPS)->set_latency(HOP_S)->seal();
    };
    for (int i = 0; i < n; i++) {
        hosts[i] = zone->create_host("gpu" + std::to_string(i), 1e9)->seal();
        up[i] = mk("up" + std::to_string(i));
        down[i] = mk("down" + std::to_string(i));
    }
    tree_links L;
    if (tree) {
        int nsw = (n + 1) / 2, ns = (n + 3) / 4;
        L.gup = up;
        L.gdown = down;
        for (int w = 0; w < nsw; w++) {
            L.swup.push_back(mk("swup" + std::to_string(w)));
            L.swdown.push_back(mk("swdown" + std::to_string(w)));
        }
        for (int k = 0; k < ns; k++) {
            L.rpup.push_back(mk("rpup" + std::to_string(k)));
            L.rpdown.push_back(mk("rpdown" + std::to_string(k)));
            L.sockf.push_back(mk("sockf" + std::to_string(k)));
            L.sockb.push_back(mk("sockb" + std::to_string(k)));
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (j != i && (oneshot || j == (i + 1) % n))
                zone->add_route(hosts[i]->get_netpoint(), hosts[j]->get_netpoint(), nullptr,
                                nullptr,
                                tree ? tree_route(L, n, i, j)
                                     : std::vector<sg4::LinkInRoute>{sg4::LinkInRoute(up[i]),
                                                                     sg4::LinkInRoute(down[j])},
                                false);
    zone->seal();
    std::vector<sg4::Mailbox *> mb(n);
    for (int i = 0; i < n; i++)
        mb[i] = sg4::Mailbox::by_name("gpu" + std::to_string(i));
    std::vector<sg4::ActorPtr> actors(n);
    for (int i = 0; i < n; i++) {
        if (oneshot) {
            actors[i] = sg4::Actor::create("rank", hosts[i], [i, n, &mb]() {
                std::vector<sg4::CommPtr> sends;
                for (int j = 0; j < n; j++)
                    if (j != i)
                        sends.push_back(mb[j]->put_async(&dummy, (uint64_t)S_BYTES));
                for (int j = 0; j < n - 1; j++)
                    mb[i]->get<int>();
                for (auto &c : sends)
                    c->wait();
            });
        } else {
            actors[i] = sg4::Actor::create("rank", hosts[i], [i, n, &mb]() {
                sg4::Mailbox *out = mb[(i + 1) % n], *in = mb[i];
                sg4::CommPtr prev;
                for (int k = 0; k < 2 * (n - 1); k++) {
                    if (k > 0) {
                        in->get<int>(); /* the chunk of step k-1 from i-1 */
                        prev->wait();   /* own send of step k-1 */
                    }
                    prev = out->put_async(&dummy, (uint64_t)(S_BYTES / n));
                }
                in->get<int>();
                prev->wait();
            });
        }
    }
    /* Permanent receivers: a send starts at once, as in collsim. */
    for (int i = 0; i < n; i++)
        mb[i]->set_receiver(actors[i]);
    actors.clear();
    e.run();
    *makespan = sg4::Engine::get_clock();
    for (int i = 0; i < n; i++)
        mb[i]->set_receiver(nullptr);
}

/* Runs the SimGrid case in a child; 0 with makespan, seconds and the
 * child's peak RSS (MiB), or -1. */
static int simgrid_fork(int n, int oneshot, double *makespan, double *secs, double *peak_mb)
{
    int fd[2];
    if (pipe(fd))
        return -1;
    fflush(stdout); /* the child must not repeat buffered output */
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        double m = -1;
        simgrid_case(n, oneshot, &m);
        ssize_t w = write(fd[1], &m, sizeof m);
        _exit(w == (ssize_t)sizeof m ? 0 : 1);
    }
    close(fd[1]);
    double m = -1;
    ssize_t got = read(fd[0], &m, sizeof m);
    close(fd[0]);
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
        got != (ssize_t)sizeof m)
        return -1;
    *secs = now_s() - t0;
    *makespan = m;
    *peak_mb = (double)ru.ru_maxrss / 1024.0;
    return 0;
}

int main(int argc, char **argv)
{
    /* --one ring|oneshot xbar|tree N: only SimGrid's case, in this process,
     * for whole-process timing (scripts/bench-cold.sh); prints the answer. */
    if (argc == 5 && !strcmp(argv[1], "--one")) {
        int oneshot = !strcmp(argv[2], "oneshot"), tree = !strcmp(argv[3], "tree");
        int n = atoi(argv[4]);
        if ((!oneshot && strcmp(argv[2], "ring")) || (!tree && strcmp(argv[3], "xbar")) ||
            n < 2 || n > 4096) {
            fprintf(stderr, "usage: bench_simgrid --one ring|oneshot xbar|tree N (2..4096)\n");
            return 2;
        }
        double m = -1;
        simgrid_case(n, oneshot, &m, tree);
        printf("%.9f\n", m);
        return m < 0;
    }
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    int full = argc > 1 && !strcmp(argv[1], "--full");
    static const report_col cols[] = {
        {"case", nullptr, 8, -1},          {"gpus", nullptr, 5, -1},
        {"flows", nullptr, 8, -1},         {"collsim_ms", nullptr, 10, 3},
        {"simgrid_ms", nullptr, 10, 3},    {"speedup", "x", 7, 1},
        {"collsim_us", "answer_us", 10, 4}, {"diff_ns", nullptr, 7, 2},
        {"simgrid_MiB", "sg_MiB", 7, 1},
    };
    double ref = reference_s();
    report *r = report_new(stdout, REPORT_TABLE);
    report_meta(r, "reference", "qsort of 2^20 doubles: %.1f ms", ref * 1e3);
    report_meta(r, "simgrid", "%d.%d.%d, network model CM02 without factors (max-min)",
                SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR, SIMGRID_VERSION_PATCH);
    report_table(r, "collsim engine vs SimGrid on the same flows", cols,
                 (int)(sizeof cols / sizeof cols[0]));
    int bad = 0;
    const int ns[] = {8, 64, 256, 1024};
    for (int oneshot = 0; oneshot <= 1; oneshot++)
        for (int n : ns) {
            if ((quick && n > 256) || (oneshot && n > 256 && !full))
                continue;
            /* collsim: best of up to 3 repetitions while under 2 s. */
            double cs = 1e30, cm = -1;
            for (int rep = 0; rep < 3 && (rep == 0 || cs < 2); rep++) {
                double t;
                cm = collsim_case(n, oneshot, &t);
                cs = std::min(cs, t);
            }
            double sm = -1, ss = 0, speak = 0;
            if (simgrid_fork(n, oneshot, &sm, &ss, &speak)) {
                fprintf(stderr, "bench_simgrid: SimGrid run failed (%d GPUs)\n", n);
                bad = 1;
                continue;
            }
            double diff_ns = (cm - sm) * 1e9;
            if (cm < 0 || !(fabs(diff_ns) <= 2.0)) {
                fprintf(stderr, "bench_simgrid: %s on %d GPUs: collsim %.9f s, SimGrid %.9f s\n",
                        oneshot ? "oneshot" : "ring", n, cm, sm);
                bad = 1;
            }
            report_str(r, oneshot ? "oneshot" : "ring");
            report_int(r, n);
            report_int(r, oneshot ? (long long)n * (n - 1) : 2LL * (n - 1) * n);
            report_num(r, cs * 1e3);
            report_num(r, ss * 1e3);
            report_num(r, ss / cs);
            report_num(r, cm * 1e6);
            report_num(r, diff_ns);
            report_num(r, speak);
            report_end_row(r);
        }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    report_note(r, "x = SimGrid time / collsim time (both build + run, one process each); "
                   "collsim peak RSS %.1f MiB; answers agree to 2 ns or the bench fails",
                (double)ru.ru_maxrss / 1024.0);
    err e = {};
    if (report_finish(r, &e))
        bad = 1;
    report_free(r);
    return bad;
}
