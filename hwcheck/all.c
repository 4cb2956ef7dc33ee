/* `hwcheck all -o DIR`: the calibration suite in one process, one file per
 * part (host.csv, launch.csv, nccl-host.csv, p2p.csv, flows.csv, coll-*.csv), each with the
 * full metadata, the exact command, and the equivalent single-mode command
 * (`part`). A part that fails is reported and the others still run; parts
 * that need more GPUs than there are write their file with a note saying so.
 * On one GPU the custom kernels run as 2, 4 and 8 virtual ranks (shm-ring, a
 * 2-rank ring, as 2 only). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "hwcheck/modes.h"
#include "hwcheck/patterns.h"

typedef enum part_kind { P_XFER, P_LAUNCH, P_COLL } part_kind;

typedef struct suite {
    gpu_ctx *g;
    const opts *top;
    const char *dir;
    int failed, worst;
    long long wrong;
} suite;

static void part(suite *s, part_kind pk, meas_kind kind, const char *file, const opts *o,
                 const char *const *pats, int npats, const char *equivalent)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", s->dir, file);
    if (s->g->wedged) { /* an earlier part ran out of time: its work may still run */
        printf("SKIPPED %-32s an earlier part passed the host-side limit\n", file);
        s->failed++;
        fflush(stdout);
        return;
    }
    meas_meta m = s->g->meta;
    meas_extra(&m, "part", "%s", equivalent);
    if (o->vranks)
        meas_extra(&m, "virtual_ranks", "%d (on GPU 0, separate buffers and streams)", o->vranks);
    if (pk == P_COLL && o->impl == OPTS_IMPL_NCCL)
        meas_extra(&m, "buffers", "%s", o->cuda_alloc ? "cudaMalloc" : "ncclMemAlloc");
    err e = {0};
    out_file out;
    long long wrong = 0;
    double t0 = gpu_now_us();
    int rc = out_open(&out, path, REPORT_CSV, kind, &m, &e);
    if (rc == 0) {
        if (pk == P_XFER)
            for (int i = 0; i < npats && rc == 0; i++)
                rc = xfer_measure(s->g, o, pats[i], &out, &e);
        else if (pk == P_LAUNCH)
            rc = launch_measure(s->g, o, &out, &e);
        else
            rc = coll_measure(s->g, o, &out, &wrong, &e);
        if (rc == 0)
            rc = out_commit(&out, &e);
        else
            out_abort(&out);
    }
    if (rc != 0) {
        printf("FAILED  %-32s %s\n", file, e.msg);
        s->failed++;
        if (rc > s->worst)
            s->worst = rc;
    } else {
        printf("wrote   %-32s %6.1f s%s\n", file, (gpu_now_us() - t0) * 1e-6,
               pk == P_COLL ? (wrong ? "  WRONG RESULTS" : "  results correct") : "");
        s->wrong += wrong;
    }
    fflush(stdout);
}

static void coll_part(suite *s, ref_coll c, opts_impl impl, int vranks, int graph)
{
    opts o;
    opts_init(&o, OPTS_COLL);
    o.coll = c;
    o.impl = impl;
    o.vranks = vranks;
    o.graph = graph;
    o.min_bytes = 1024;
    o.max_bytes = 32u << 20;
    o.timeout_ms = s->top->timeout_ms;
    o.nenv = s->top->nenv;
    memcpy(o.env, s->top->env, sizeof o.env);
    char file[128], eq[256], v[32] = "";
    if (vranks)
        snprintf(v, sizeof v, "-v%d", vranks);
    if (impl == OPTS_IMPL_NCCL)
        snprintf(file, sizeof file, "coll-nccl-%s%s.csv", ref_coll_name(c), graph ? "-graph" : "");
    else
        snprintf(file, sizeof file, "coll-%s%s%s.csv", opts_impl_name(impl), v,
                 graph ? "-graph" : "");
    snprintf(eq, sizeof eq, "hwcheck coll %s --impl %s -b 1K -e 32M -f 2 -n %d -w %d -c 1%s%s%s",
             ref_coll_name(c), opts_impl_name(impl), o.iters, o.warmup, graph ? " --graph" : "",
             vranks ? " --virtual-ranks " : "", vranks ? v + 2 : "");
    part(s, P_COLL, MEAS_COLL, file, &o, NULL, 0, eq);
}

int all_run(int argc, char **argv, err *e)
{
    opts top;
    opts_init(&top, OPTS_ALL);
    TRY(opts_parse(&top, argc, argv, e));
    if (top.help) {
        opts_usage(stdout, "all", "-o DIR", OPTS_ALL);
        return 0;
    }
    if (!top.out)
        return err_set(e, ERR_USAGE, "all: -o DIR is required");
    int made = mkdir(top.out, 0777) == 0;
    if (!made && errno != EEXIST)
        return err_set(e, ERR_SYSTEM, "%s: cannot create directory: %s", top.out, strerror(errno));
    suite s = {0};
    s.top = &top;
    s.dir = top.out;
    int rc = gpu_open(&s.g, 0, top.timeout_ms, top.host_wait_s, argc, argv, e);
    if (rc) {
        if (made)
            rmdir(top.out);   /* nothing was written: leave no empty directory */
        return rc;
    }
    printf("hwcheck all: %d GPU%s: %s\n", s.g->n, s.g->n == 1 ? "" : "s", s.g->meta.gpus);

    static const char *const host_p[] = {"h2d", "d2h", "h2d-d2h"};
    static const char *const p2p_p[] = {"pair", "bidir", "latency"};
    static const char *const flow_p[] = {"same-source", "same-uplink", "all-to-all", "ring",
                                         "fan-in"};
    opts o;
    opts_init(&o, OPTS_HOST);
    o.timeout_ms = top.timeout_ms;
    part(&s, P_XFER, MEAS_HOST, "host.csv", &o, host_p, 3, "hwcheck host -b 4K -e 256M -f 4");
    opts_init(&o, OPTS_LAUNCH);
    o.timeout_ms = top.timeout_ms;
    part(&s, P_LAUNCH, MEAS_LAUNCH, "launch.csv", &o, NULL, 0, "hwcheck launch -n 1000 -w 100");
    /* NCCL's host cost per call, in interleaved rounds against launch-host (the only
     * launch rows collsim calibrate fits NCCL's host keys on: validate/points.c). */
    opts_init(&o, OPTS_LAUNCH);
    o.timeout_ms = top.timeout_ms;
    o.nccl_only = 1;
    o.iters = 2000;
    o.warmup = 200;
    part(&s, P_LAUNCH, MEAS_LAUNCH, "nccl-host.csv", &o, NULL, 0,
         "hwcheck launch --nccl-only -n 2000 -w 200");
    opts_init(&o, OPTS_P2P);
    o.timeout_ms = top.timeout_ms;
    o.min_bytes = 64u << 10;
    o.max_bytes = 64u << 20;
    o.factor = 8;
    part(&s, P_XFER, MEAS_P2P, "p2p.csv", &o, p2p_p, 3, "hwcheck p2p -b 64K -e 64M -f 8");
    opts_init(&o, OPTS_FLOWS);
    o.timeout_ms = top.timeout_ms;
    part(&s, P_XFER, MEAS_FLOWS, "flows.csv", &o, flow_p, 5,
         "hwcheck flows --pattern P -b 64M -e 64M, for P in same-source same-uplink all-to-all "
         "ring fan-in");

    for (int c = 0; c < REF_NCOLLS; c++)
        coll_part(&s, (ref_coll)c, OPTS_IMPL_NCCL, 0, 0);
    coll_part(&s, REF_ALLREDUCE, OPTS_IMPL_NCCL, 0, 1);
    for (int impl = OPTS_IMPL_ONESHOT; impl < OPTS_NIMPLS; impl++) {
        /* shm-ring is a 2-rank ring (coll_measure refuses any other count): 2 real GPUs
         * or 2 virtual ranks only; the others run on every GPU and as 2, 4 and 8. */
        int pair_only = impl == OPTS_IMPL_SHM_RING;
        if (s.g->n >= 2 && (!pair_only || s.g->n == 2)) {
            coll_part(&s, REF_ALLREDUCE, (opts_impl)impl, 0, 0);
            coll_part(&s, REF_ALLREDUCE, (opts_impl)impl, 0, 1);
        }
        for (int v = 2; v <= (pair_only ? 2 : 8); v *= 2)
            coll_part(&s, REF_ALLREDUCE, (opts_impl)impl, v, 0);
        coll_part(&s, REF_ALLREDUCE, (opts_impl)impl, pair_only ? 2 : 8, 1);
    }
    if (s.g->n < 2)
        printf("note: 1 GPU: p2p and flows need 2 or more GPUs (files hold the note); custom "
               "kernels ran as virtual ranks only\n");
    gpu_close(s.g);
    if (s.failed)
        return err_set(e, s.worst, "all: %d part%s failed (see above)", s.failed,
                       s.failed == 1 ? "" : "s");
    if (s.wrong)
        return err_set(e, ERR_CHECK, "all: %lld wrong elements in collective results", s.wrong);
    return 0;
}
