/* GPU discovery and the process-wide pieces every mode shares. NVML is
 * loaded with dlopen only to print the `nvidia-smi topo -m` equivalent and
 * the driver version; without it the matrix falls back to what CUDA reports
 * (peer access and its performance rank). */
#include "hwcheck/gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double gpu_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* --- watchdog ---------------------------------------------------------------
 * One detached thread per process polls the deadline of the current step
 * every 50 ms. State is shared under a mutex; the control block pointer and
 * the temporary file's name are copied in so the thread never touches a
 * gpu_ctx that is being freed. */
static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static int wd_started;
static double wd_deadline_us; /* 0: disarmed */
static double wd_limit_s;
static int wd_dev;
static char wd_what[200];
static char wd_tmp[4200];
static volatile kern_ctl *wd_ctl;

static void *wd_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&wd_mu);
        int fire = wd_deadline_us > 0 && gpu_now_us() > wd_deadline_us;
        char msg[512];
        if (fire) {
            if (wd_dev >= 0)
                snprintf(msg, sizeof msg,
                         "hwcheck: GPU %d: %s: not finished after %.0f s (host-side limit)\n",
                         wd_dev, wd_what, wd_limit_s);
            else
                snprintf(msg, sizeof msg, "hwcheck: %s: not finished after %.0f s (host-side limit)\n",
                         wd_what, wd_limit_s);
            if (wd_ctl)
                wd_ctl->abort = 1;
            if (wd_tmp[0])
                unlink(wd_tmp);
        }
        pthread_mutex_unlock(&wd_mu);
        if (fire) {
            fflush(stdout);
            ssize_t w = write(2, msg, strlen(msg));
            (void)w;
            _exit(ERR_SYSTEM);
        }
    }
    return NULL;
}

static void wd_arm(int dev, const char *what, double limit_s)
{
    pthread_mutex_lock(&wd_mu);
    if (!wd_started) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, wd_main, NULL) == 0)
            wd_started = 1;
        pthread_attr_destroy(&at);
    }
    wd_dev = dev;
    snprintf(wd_what, sizeof wd_what, "%s", what);
    wd_limit_s = limit_s;
    wd_deadline_us = gpu_now_us() + limit_s * 1e6;
    pthread_mutex_unlock(&wd_mu);
}

void gpu_step(gpu_ctx *g, int dev, const char *what)
{
    if (g)
        wd_ctl = g->ctl;
    wd_arm(dev, what, (g ? g->host_wait_s : 30.0) + 10.0);
}

void gpu_step_done(gpu_ctx *g)
{
    (void)g;
    pthread_mutex_lock(&wd_mu);
    wd_deadline_us = 0;
    pthread_mutex_unlock(&wd_mu);
}

void gpu_step_file(const char *tmp_path)
{
    pthread_mutex_lock(&wd_mu);
    snprintf(wd_tmp, sizeof wd_tmp, "%s", tmp_path ? tmp_path : "");
    pthread_mutex_unlock(&wd_mu);
}

void gpu_capture_abandon(int dev, cudaStream_t s)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaSetDevice(dev);
    if (cudaStreamIsCapturing(s, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
        cudaGraph_t graph = NULL;
        cudaStreamEndCapture(s, &graph);
        if (graph)
            cudaGraphDestroy(graph);
    }
    (void)cudaGetLastError(); /* the capture's error is reported by the caller */
}

static int read_numa(const char *busid)
{
    char path[128], lower[32];
    size_t i;
    for (i = 0; busid[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)(busid[i] >= 'A' && busid[i] <= 'F' ? busid[i] - 'A' + 'a' : busid[i]);
    lower[i] = 0;
    /* CUDA prints an 8-digit domain, sysfs a 4-digit one. */
    const char *id = strlen(lower) == 16 ? lower + 4 : lower;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", id);
    FILE *f = fopen(path, "r");
    int node = -1;
    if (f) {
        if (fscanf(f, "%d", &node) != 1)
            node = -1;
        fclose(f);
    }
    return node;
}

int gpu_open(gpu_ctx **out, int ngpus, double timeout_ms, double host_wait_s, int argc,
             char **argv, err *e)
{
    *out = NULL;
    int count = 0;
    double wait_s = host_wait_s > 0 ? host_wait_s : 30.0 + 10.0 * timeout_ms * 1e-3;
    wd_arm(-1, "CUDA initialisation", wait_s + 10.0);
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
        return err_set(e, ERR_SYSTEM, "no usable GPU: cudaGetDeviceCount: %s",
                       rc != cudaSuccess ? cudaGetErrorString(rc) : "no CUDA device visible");
    if (ngpus > count)
        return err_set(e, ERR_SYSTEM, "-g %d: only %d GPU%s visible", ngpus, count,
                       count == 1 ? "" : "s");
    gpu_ctx *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(e, ERR_SYSTEM, "out of memory");
    *out = g;
    g->n = ngpus > 0 ? ngpus : count < GPU_MAX ? count : GPU_MAX;
    g->timeout_ms = timeout_ms;
    g->host_wait_s = wait_s;
    for (int d = 0; d < g->n; d++) {
        struct cudaDeviceProp p;
        GPU_CU(d, cudaGetDeviceProperties(&p, d));
        snprintf(g->name[d], sizeof g->name[d], "%.95s", p.name);
        GPU_CU(d, cudaDeviceGetPCIBusId(g->busid[d], (int)sizeof g->busid[d], d));
        g->numa[d] = read_numa(g->busid[d]);
        g->sms[d] = p.multiProcessorCount;
        GPU_CU(d, cudaSetDevice(d));
        GPU_CU(d, cudaStreamCreateWithFlags(&g->stream[d], cudaStreamNonBlocking));
    }
    for (int i = 0; i < g->n; i++)
        for (int j = 0; j < g->n; j++) {
            if (i == j)
                continue;
            int ok = 0;
            GPU_CU(i, cudaDeviceCanAccessPeer(&ok, i, j));
            if (ok) {
                GPU_CU(i, cudaSetDevice(i));
                cudaError_t prc = cudaDeviceEnablePeerAccess(j, 0);
                if (prc == cudaErrorPeerAccessAlreadyEnabled)
                    (void)cudaGetLastError();
                else if (prc != cudaSuccess)
                    return err_set(e, ERR_SYSTEM, "GPU %d: cudaDeviceEnablePeerAccess(%d): %s", i,
                                   j, cudaGetErrorString(prc));
            }
            g->peer[i][j] = ok;
        }
    GPU_CU(0, cudaSetDevice(0));
    void *h = NULL;
    GPU_CU(0, cudaHostAlloc(&h, sizeof(kern_ctl), cudaHostAllocMapped | cudaHostAllocPortable));
    g->ctl = h;
    memset(h, 0, sizeof(kern_ctl));
    void *dptr = NULL;
    GPU_CU(0, cudaHostGetDevicePointer(&dptr, h, 0));
    g->ctl_dev = dptr;
    if (gethostname(g->meta.machine, sizeof g->meta.machine) != 0)
        snprintf(g->meta.machine, sizeof g->meta.machine, "unknown");
    g->meta.machine[sizeof g->meta.machine - 1] = 0;
    char cmd[sizeof g->meta.command - 16];
    meas_command(argc, argv, cmd, sizeof cmd);
    snprintf(g->meta.command, sizeof g->meta.command, "hwcheck %s", cmd);
    gpu_fill_meta(g, &g->meta);
    wd_ctl = g->ctl;
    gpu_step_done(g);
    return 0;
}

void gpu_close(gpu_ctx *g)
{
    if (!g)
        return;
    if (g->wedged) {
        /* Work is still in flight: abort the communicators (their kernels
         * give up), free nothing, and keep the watchdog armed until the
         * process has exited. */
        g->ctl->abort = 1;
        wd_arm(-1, "teardown after the error above", 10.0);
        if (g->have_comms)
            for (int d = 0; d < g->n; d++)
                ncclCommAbort(g->comm[d]);
        wd_ctl = NULL;
        return;
    }
    gpu_step(g, -1, "teardown");
    if (g->have_comms)
        for (int d = 0; d < g->n; d++)
            ncclCommDestroy(g->comm[d]);
    for (int d = 0; d < g->n; d++)
        if (g->stream[d]) {
            cudaSetDevice(d);
            cudaStreamDestroy(g->stream[d]);
        }
    wd_ctl = NULL;
    if (g->ctl)
        cudaFreeHost(g->ctl);
    free(g);
    gpu_step_done(NULL);
}

/* Refuse an environment that asks for NVLink multicast, then switch it off. */
static int nvls_off(err *e)
{
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    if (nvls && strcmp(nvls, "0") != 0)
        return err_set(e, ERR_USAGE,
                       "NCCL_NVLS_ENABLE=%s: hwcheck never uses NVLink multicast; unset it or set 0",
                       nvls);
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    return 0;
}

int gpu_nccl_one(gpu_ctx *g, ncclComm_t *comm, err *e)
{
    TRY(nvls_off(e));
    int dev = 0;
    gpu_step(g, 0, "ncclCommInitAll (1 rank)");
    GPU_NC(0, ncclCommInitAll(comm, 1, &dev));
    gpu_step_done(g);
    return 0;
}

int gpu_nccl(gpu_ctx *g, const char *const *env, int nenv, err *e)
{
    if (g->have_comms)
        return 0;
    for (int i = 0; i < nenv; i++) {
        char name[128];
        const char *eq = strchr(env[i], '=');
        size_t len = (size_t)(eq - env[i]);
        if (len >= sizeof name)
            return err_set(e, ERR_USAGE, "--env: name too long in '%s'", env[i]);
        memcpy(name, env[i], len);
        name[len] = 0;
        if (setenv(name, eq + 1, 1) != 0)
            return err_set(e, ERR_SYSTEM, "setenv %s failed", name);
    }
    TRY(nvls_off(e));
    int devs[GPU_MAX];
    for (int d = 0; d < g->n; d++)
        devs[d] = d;
    gpu_step(g, 0, "ncclCommInitAll");
    GPU_NC(0, ncclCommInitAll(g->comm, g->n, devs));
    g->have_comms = 1;
    gpu_step_done(g);
    return 0;
}

void gpu_ctl_reset(gpu_ctx *g) { memset((void *)g->ctl, 0, sizeof *g->ctl); }

static const char *where_name(int w)
{
    switch (w) {
    case KERN_WHERE_BARRIER0: return "start barrier";
    case KERN_WHERE_BARRIER1: return "second barrier";
    case KERN_WHERE_BARRIER2: return "end barrier";
    case KERN_WHERE_PINGPONG: return "flag ping-pong";
    default: return "wait";
    }
}

static int ctl_error(gpu_ctx *g, int dev, const char *what, err *e)
{
    if (g->ctl->error == KERN_OK)
        return 0;
    return err_set(e, ERR_SYSTEM,
                   "GPU %d: %s: kernel gave up (%s) in the %s of rank %d, block %d, waiting for "
                   "flag value %u (device-side limit %g ms)",
                   dev, what, g->ctl->error == KERN_ERR_TIMEOUT ? "timeout" : "aborted",
                   where_name(g->ctl->where), g->ctl->rank, g->ctl->block, g->ctl->waited_for,
                   g->timeout_ms);
}

int gpu_wait(gpu_ctx *g, int dev, cudaStream_t s, const char *what, err *e)
{
    gpu_step(g, dev, what);
    GPU_CU(dev, cudaSetDevice(dev));
    double t0 = gpu_now_us(), limit_us = g->host_wait_s * 1e6;
    for (;;) {
        cudaError_t rc = cudaStreamQuery(s);
        if (rc == cudaSuccess)
            break;
        if (rc != cudaErrorNotReady)
            return err_set(e, ERR_SYSTEM, "GPU %d: %s: %s", dev, what, cudaGetErrorString(rc));
        double el = gpu_now_us() - t0;
        if (el > limit_us) {
            g->ctl->abort = 1; /* let spinning kernels go; the process is ending */
            g->wedged = 1;
            wd_arm(dev, "teardown after the host-side limit", 10.0);
            return err_set(e, ERR_SYSTEM, "GPU %d: %s: not finished after %.0f s (host-side limit)",
                           dev, what, g->host_wait_s);
        }
        if (el > 2000)
            sched_yield();
    }
    gpu_step_done(g);
    return ctl_error(g, dev, what, e);
}

int gpu_wait_all(gpu_ctx *g, const char *what, err *e)
{
    for (int d = 0; d < g->n; d++)
        TRY(gpu_wait(g, d, g->stream[d], what, e));
    return 0;
}

/* --- metadata ------------------------------------------------------------- */

typedef int nvml_fn0(void);
typedef int nvml_drv_fn(char *, unsigned int);
typedef int nvml_handle_fn(const char *, void **);
typedef int nvml_anc_fn(void *, void *, int *);
typedef int nvml_p2p_fn(void *, void *, int, int *);
typedef int nvml_link_fn(void *, unsigned int, int *);

typedef struct nvml {
    void *lib;
    nvml_fn0 *init, *shutdown;
    nvml_drv_fn *driver;
    nvml_handle_fn *handle;
    nvml_anc_fn *ancestor;
    nvml_p2p_fn *p2p;
    nvml_link_fn *link;
} nvml;

static int nvml_load(nvml *n)
{
    memset(n, 0, sizeof *n);
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return -1;
    *(void **)&n->init = dlsym(n->lib, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
    *(void **)&n->driver = dlsym(n->lib, "nvmlSystemGetDriverVersion");
    *(void **)&n->handle = dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&n->ancestor = dlsym(n->lib, "nvmlDeviceGetTopologyCommonAncestor");
    *(void **)&n->p2p = dlsym(n->lib, "nvmlDeviceGetP2PStatus");
    *(void **)&n->link = dlsym(n->lib, "nvmlDeviceGetNvLinkState");
    if (!n->init || !n->shutdown || !n->driver || !n->handle || n->init() != 0) {
        dlclose(n->lib);
        n->lib = NULL;
        return -1;
    }
    return 0;
}

/* NVML constants (nvml.h): topology levels, P2P caps index NVLINK = 2. */
static const char *level_name(int lvl)
{
    switch (lvl) {
    case 0: return "X";
    case 10: return "PIX";
    case 20: return "PXB";
    case 30: return "PHB";
    case 40: return "NODE";
    default: return "SYS";
    }
}

static void topo_rows(gpu_ctx *g, meas_meta *m, nvml *nv)
{
    void *h[GPU_MAX] = {0};
    int links[GPU_MAX] = {0};
    if (nv->lib)
        for (int d = 0; d < g->n; d++) {
            if (nv->handle(g->busid[d], &h[d]) != 0)
                h[d] = NULL;
            for (unsigned l = 0; h[d] && nv->link && l < 18; l++) {
                int on = 0;
                if (nv->link(h[d], l, &on) == 0 && on == 1)
                    links[d]++;
            }
        }
    char *row = m->topo[0];
    int k = snprintf(row, 256, "%6s", "");
    for (int j = 0; j < g->n && k < 240; j++)
        k += snprintf(row + k, (size_t)(256 - k), " %5s%d", "GPU", j);
    snprintf(row + k, (size_t)(256 - k), "  NUMA  bus");
    m->ntopo = 1;
    for (int i = 0; i < g->n && m->ntopo < MEAS_MAX_TOPO; i++) {
        row = m->topo[m->ntopo++];
        k = snprintf(row, 256, "GPU%-3d", i);
        for (int j = 0; j < g->n && k < 240; j++) {
            char cell[16];
            if (i == j) {
                snprintf(cell, sizeof cell, "X");
            } else if (h[i] && h[j]) {
                int st = -1, lvl = 50;
                if (nv->p2p && nv->p2p(h[i], h[j], 2, &st) == 0 && st == 0)
                    snprintf(cell, sizeof cell, "NV%d", links[i]);
                else if (nv->ancestor && nv->ancestor(h[i], h[j], &lvl) == 0)
                    snprintf(cell, sizeof cell, "%s", level_name(lvl));
                else
                    snprintf(cell, sizeof cell, "?");
            } else {
                int rank = 0;
                cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, i, j);
                snprintf(cell, sizeof cell, g->peer[i][j] ? "P2P/%d" : "noP2P", rank);
            }
            k += snprintf(row + k, (size_t)(256 - k), " %8s", cell);
        }
        snprintf(row + k, (size_t)(256 - k), "  %4d  %s", g->numa[i], g->busid[i]);
    }
}

void gpu_fill_meta(gpu_ctx *g, meas_meta *m)
{
    int k = 0;
    m->gpus[0] = 0;
    for (int d = 0; d < g->n && k < (int)sizeof m->gpus - 1; d++)
        k += snprintf(m->gpus + k, sizeof m->gpus - (size_t)k, "%s%d: %s (%s, %d SMs)",
                      d ? "; " : "", d, g->name[d], g->busid[d], g->sms[d]);
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    snprintf(m->cuda, sizeof m->cuda, "runtime %d.%d, driver API %d.%d", rt / 1000,
             rt % 1000 / 10, drv / 1000, drv % 1000 / 10);
    int nv = 0;
    ncclGetVersion(&nv);
    snprintf(m->nccl, sizeof m->nccl, "%d.%d.%d", nv / 10000, nv / 100 % 100, nv % 100);
    meas_now(m->date, sizeof m->date);
    nvml n;
    snprintf(m->driver, sizeof m->driver, "unknown (NVML not loadable)");
    if (nvml_load(&n) == 0) {
        char v[80];
        if (n.driver(v, sizeof v) == 0)
            snprintf(m->driver, sizeof m->driver, "%.63s", v);
    }
    topo_rows(g, m, &n);
    if (n.lib) {
        n.shutdown();
        dlclose(n.lib);
    }
}
