/* `hwcheck launch`: kernel-launch and CUDA-graph overheads on GPU 0.
 *   launch       back-to-back empty kernel launches, wall time per launch
 *   graph-launch back-to-back launches of a one-node graph, per launch
 *   graph-node   (T(graph of K nodes) - T(graph of 1 node)) / (K-1), per node
 *   sync         launch one empty kernel and wait for it, per round trip
 *   spin-error   |requested - measured| of a 100 us spin kernel (trace replay) */
#include <math.h>
#include <string.h>

#include "hwcheck/modes.h"

enum { GRAPH_NODES = 100 };

static void row(out_file *out, const char *what, long long count, double us)
{
    report_str(out->rep, what);
    report_int(out->rep, count);
    report_num(out->rep, us);
    report_end_row(out->rep);
}

static int make_graph(int nodes, cudaStream_t s, cudaGraphExec_t *exec, err *e)
{
    cudaGraph_t graph = NULL;
    GPU_CU(0, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaError_t rc = cudaSuccess;
    for (int i = 0; i < nodes && rc == cudaSuccess; i++)
        rc = kern_empty(s);
    /* End the capture whatever happened, then instantiate outside it. */
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    gpu_capture_abandon(0, s);
    if (rc == cudaSuccess)
        rc = end;
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiate(exec, graph, 0);
    if (graph)
        cudaGraphDestroy(graph);
    GPU_CU(0, rc);
    return 0;
}

/* Per-launch time of n back-to-back launches of exec (or of empty kernels). */
static int timed(gpu_ctx *g, cudaGraphExec_t exec, int n, double *us, err *e)
{
    cudaStream_t s = g->stream[0];
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++)
        GPU_CU(0, exec ? cudaGraphLaunch(exec, s) : kern_empty(s));
    TRY(gpu_wait(g, 0, s, exec ? "graph launches" : "kernel launches", e));
    *us = (gpu_now_us() - t0) / n;
    return 0;
}

int launch_measure(gpu_ctx *g, const opts *o, out_file *out, err *e)
{
    cudaStream_t s = g->stream[0];
    GPU_CU(0, cudaSetDevice(0));
    double us;
    TRY(timed(g, NULL, o->warmup > 0 ? o->warmup : 1, &us, e));
    TRY(timed(g, NULL, o->iters, &us, e));
    row(out, "launch", o->iters, us);

    cudaGraphExec_t one, many;
    TRY(make_graph(1, s, &one, e));
    TRY(make_graph(GRAPH_NODES, s, &many, e));
    int glaunches = o->iters / 10 > 10 ? o->iters / 10 : 10;
    double t1, tk;
    int rc = timed(g, one, glaunches, &t1, e);
    if (rc == 0)
        rc = timed(g, one, glaunches, &t1, e);
    if (rc == 0)
        rc = timed(g, many, glaunches, &tk, e);
    if (rc == 0)
        rc = timed(g, many, glaunches, &tk, e);
    cudaGraphExecDestroy(one);
    cudaGraphExecDestroy(many);
    TRY(rc);
    row(out, "graph-launch", glaunches, t1);
    row(out, "graph-node", (long long)glaunches * GRAPH_NODES, (tk - t1) / (GRAPH_NODES - 1));

    int nsync = o->iters / 10 > 10 ? o->iters / 10 : 10;
    double t0 = gpu_now_us();
    for (int i = 0; i < nsync; i++) {
        GPU_CU(0, kern_empty(s));
        TRY(gpu_wait(g, 0, s, "sync round trip", e));
    }
    row(out, "sync", nsync, (gpu_now_us() - t0) / nsync);

    /* Spin accuracy: 20 spins of 100 us back to back, events around them. */
    cudaEvent_t a, b;
    GPU_CU(0, cudaEventCreate(&a));
    GPU_CU(0, cudaEventCreate(&b));
    GPU_CU(0, cudaEventRecord(a, s));
    for (int i = 0; i < 20; i++)
        GPU_CU(0, kern_spin(100000, 1, g->ctl_dev, s));
    GPU_CU(0, cudaEventRecord(b, s));
    TRY(gpu_wait(g, 0, s, "spin kernels", e));
    float ms = 0;
    GPU_CU(0, cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    row(out, "spin-error", 20, fabs((double)ms * 1e3 / 20 - 100.0));
    return 0;
}

int launch_run(int argc, char **argv, err *e)
{
    opts o;
    opts_init(&o, OPTS_LAUNCH);
    TRY(opts_parse(&o, argc, argv, e));
    if (o.help) {
        opts_usage(stdout, "launch", "", OPTS_LAUNCH);
        return 0;
    }
    gpu_ctx *g = NULL;
    int rc = gpu_open(&g, 1, o.timeout_ms, o.host_wait_s, argc, argv, e);
    out_file out;
    if (rc == 0)
        rc = out_open(&out, o.out, o.fmt, MEAS_LAUNCH, &g->meta, e);
    if (rc == 0) {
        rc = launch_measure(g, &o, &out, e);
        if (rc == 0)
            rc = out_commit(&out, e);
        else
            out_abort(&out);
    }
    gpu_close(g);
    return rc;
}
