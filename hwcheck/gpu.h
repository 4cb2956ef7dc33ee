/* The GPUs of one hwcheck process: discovery, peer access between every pair
 * that allows it, one stream per GPU, the mapped kernel control block, the
 * metadata every output file carries, NCCL communicators (created on first
 * use, NVLink multicast off), and bounded waits. Every CUDA and NCCL call is
 * checked; a failure is ERR_SYSTEM with a message naming the GPU and call. */
#ifndef HWCHECK_GPU_H
#define HWCHECK_GPU_H

#include <cuda_runtime.h>
#include <nccl.h>

#include "hwcheck/meas.h"
#include "kernels/kernels.h"
#include "sim/err.h"

enum { GPU_MAX = 16 };

typedef struct gpu_ctx {
    int n;                          /* GPUs in use: CUDA devices 0..n-1 */
    char name[GPU_MAX][96];
    char busid[GPU_MAX][24];
    int numa[GPU_MAX];              /* NUMA node of the GPU (-1 unknown) */
    int sms[GPU_MAX];
    int peer[GPU_MAX][GPU_MAX];     /* 1 if i can access j's memory */
    cudaStream_t stream[GPU_MAX];
    kern_ctl *ctl;                  /* mapped control block (host view) */
    kern_ctl *ctl_dev;              /* the same, device view */
    double timeout_ms;              /* device-side wait limit */
    double host_wait_s;             /* host-side wait limit per synchronization */
    int wedged;                     /* a host wait ran out: work may still be in flight */
    ncclComm_t comm[GPU_MAX];       /* valid once gpu_nccl() succeeded */
    int have_comms;
    meas_meta meta;
} gpu_ctx;

/* CUDA call on GPU g (a function returning int with an err *e in scope). */
#define GPU_CU(g, call)                                                                  \
    do {                                                                                 \
        cudaError_t gpu_rc_ = (call);                                                    \
        if (gpu_rc_ != cudaSuccess)                                                      \
            return err_set(e, ERR_SYSTEM, "GPU %d: %s: %s", (g), #call,                  \
                           cudaGetErrorString(gpu_rc_));                                 \
    } while (0)
#define GPU_NC(g, call)                                                                  \
    do {                                                                                 \
        ncclResult_t gpu_nrc_ = (call);                                                  \
        if (gpu_nrc_ != ncclSuccess)                                                     \
            return err_set(e, ERR_SYSTEM, "GPU %d: %s: %s", (g), #call,                  \
                           ncclGetErrorString(gpu_nrc_));                                \
    } while (0)

/* Open GPUs 0..ngpus-1 (host_wait_s > 0 sets the host-side limit per wait,
 * else 30 s + 10 x timeout_ms) (ngpus 0: all visible; 1..: at most that many).
 * argv is recorded as the command. ERR_SYSTEM if there is no usable GPU. */
int gpu_open(gpu_ctx **out, int ngpus, double timeout_ms, double host_wait_s, int argc,
             char **argv, err *e);
/* NULL ok; destroys comms, streams, control block. After a host wait ran out
 * (g->wedged) it aborts the communicators and frees nothing (a free would wait
 * for the work still in flight). */
void gpu_close(gpu_ctx *g);
/* Set env ("NAME=VALUE", before NCCL starts), force NCCL_NVLS_ENABLE=0 and
 * create one communicator per GPU (ncclCommInitAll). ERR_USAGE if the
 * environment asks for NVLink multicast. */
int gpu_nccl(gpu_ctx *g, const char *const *env, int nenv, err *e);
/* A communicator of one rank on GPU 0 (NVLink multicast off), whatever the
 * context holds; the caller destroys it (ncclCommDestroy). */
int gpu_nccl_one(gpu_ctx *g, ncclComm_t *comm, err *e);
/* Wait for stream s of GPU dev, bounded by host_wait_s (then the abort flag is
 * raised); also reports a kernel that gave up (ctl->error). what names the
 * operation in messages. */
int gpu_wait(gpu_ctx *g, int dev, cudaStream_t s, const char *what, err *e);
/* gpu_wait on the main stream of every GPU. */
int gpu_wait_all(gpu_ctx *g, const char *what, err *e);
/* The watchdog: every host-side step that can block (NCCL calls, captures,
 * waits, teardown) runs under a deadline. gpu_step(g, dev, what) names the
 * step and restarts the clock (limit: host_wait_s + 10 s, past gpu_wait's own
 * limit so that a wait reports first); gpu_step_done(g) disarms it. If a step
 * overruns, the watchdog thread raises the abort flag, removes the output's
 * temporary file, prints "hwcheck: GPU d: what: not finished after N s
 * (host-side limit)" and ends the process with exit code 4. */
void gpu_step(gpu_ctx *g, int dev, const char *what);
void gpu_step_done(gpu_ctx *g);
/* The temporary file the watchdog removes before it ends the process (NULL: none). */
void gpu_step_file(const char *tmp_path);
/* End the capture on stream s of GPU dev if one is open, and drop what it
 * captured (every error path while capturing goes through this). */
void gpu_capture_abandon(int dev, cudaStream_t s);
/* Clear the control block before a new run. */
void gpu_ctl_reset(gpu_ctx *g);
/* Monotonic wall clock in microseconds. */
double gpu_now_us(void);
/* Fill m->gpus/driver/cuda/nccl/date/topo from the context (machine and
 * command are set by gpu_open). */
void gpu_fill_meta(gpu_ctx *g, meas_meta *m);

#endif
