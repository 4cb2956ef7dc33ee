/* Worker pool over fork and one socket pair per worker. The parent sends a
 * chunk (a count k, then k job numbers) down a worker's socket; the worker
 * runs them and sends the k records back in one write, so a cheap job costs
 * a fraction of a round trip. A short read means the worker died: the records
 * that did arrive are delivered, a chunk of one job is reported failed, and
 * the unfinished jobs of a longer chunk are queued to run again one at a time
 * (so the one that kills a worker is found and reported alone); the worker is
 * reaped and replaced. Chunks are about a quarter of a worker's share of what
 * is left, at most CHUNK_MAX, so the last jobs spread over all workers.
 * Sockets (not pipes) so that send(MSG_NOSIGNAL) never raises SIGPIPE,
 * leaving the process's signal dispositions alone. Workers close every
 * socket but their own, so the parent's exit (or batch_free) ends them. */
#include "sim/batch.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { CHUNK_MAX = 64 };

typedef struct worker {
    pid_t pid;                /* 0 = not running */
    int fd;                   /* parent's end of the socket pair, -1 if none */
    int n;                    /* jobs in flight (0 = idle) */
    long chunk[CHUNK_MAX];
} worker;

struct batch {
    int nworkers;
    size_t rec_bytes;
    batch_job_fn *fn;
    void *fn_ctx;
    char *recs;               /* CHUNK_MAX records: receive buffer */
    worker *w;
    long *retry;              /* jobs to run again singly */
    long nretry, capretry;
};

/* Read or write exactly n bytes; returns n, or less on EOF/error. */
static size_t io_full(int fd, void *buf, size_t n, int writing)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = writing ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL)
                            : read(fd, (char *)buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        done += (size_t)k;
    }
    return done;
}

static void worker_main(batch *b, int fd)
{
    long k, jobs[CHUNK_MAX];
    while (io_full(fd, &k, sizeof k, 0) == sizeof k && k >= 1 && k <= CHUNK_MAX &&
           io_full(fd, jobs, (size_t)k * sizeof *jobs, 0) == (size_t)k * sizeof *jobs) {
        size_t bytes = (size_t)k * b->rec_bytes;
        memset(b->recs, 0, bytes);
        for (long i = 0; i < k; i++)
            b->fn(b->fn_ctx, jobs[i], b->recs + (size_t)i * b->rec_bytes);
        if (io_full(fd, b->recs, bytes, 1) != bytes)
            break;
    }
    _exit(0);  /* not exit(): the parent's stdio buffers are not ours to flush */
}

static int worker_start(batch *b, int i, err *e)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return err_set(e, ERR_SYSTEM, "batch: socketpair: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(sv[0]);
        close(sv[1]);
        return err_set(e, ERR_SYSTEM, "batch: fork: %s", strerror(saved));
    }
    if (pid == 0) {
        close(sv[0]);
        for (int k = 0; k < b->nworkers; k++)
            if (b->w[k].fd >= 0)
                close(b->w[k].fd);
        worker_main(b, sv[1]);
    }
    close(sv[1]);
    b->w[i].pid = pid;
    b->w[i].fd = sv[0];
    b->w[i].n = 0;
    return 0;
}

/* Close a worker's socket, make sure it ends, reap it; describe how it died. */
static void worker_stop(worker *w, int kill_it, char *why, size_t n)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    w->n = 0;
    if (w->pid <= 0)
        return;
    if (kill_it)
        kill(w->pid, SIGKILL);
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (why && WIFSIGNALED(st))
        snprintf(why, n, "worker killed by signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    else if (why)
        snprintf(why, n, "worker exited with status %d", WEXITSTATUS(st));
    w->pid = 0;
}

batch *batch_new(int workers, size_t rec_bytes, batch_job_fn *fn, void *fn_ctx, err *e)
{
    ASSERTF(workers >= 1 && rec_bytes > 0, "workers=%d rec_bytes=%zu", workers, rec_bytes);
    batch *b = calloc(1, sizeof *b);
    if (!b || !(b->recs = malloc(CHUNK_MAX * rec_bytes)) ||
        !(b->w = calloc((size_t)workers, sizeof *b->w))) {
        if (b)
            free(b->recs);
        free(b);
        err_set(e, ERR_SYSTEM, "batch: out of memory");
        return NULL;
    }
    b->nworkers = workers;
    b->rec_bytes = rec_bytes;
    b->fn = fn;
    b->fn_ctx = fn_ctx;
    for (int i = 0; i < workers; i++)
        b->w[i].fd = -1;
    for (int i = 0; i < workers; i++)
        if (worker_start(b, i, e) != 0) {
            batch_free(b);
            return NULL;
        }
    return b;
}

void batch_free(batch *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->nworkers; i++)
        worker_stop(&b->w[i], b->w[i].n > 0, NULL, 0);
    free(b->w);
    free(b->recs);
    free(b->retry);
    free(b);
}

int batch_workers(const batch *b) { return b->nworkers; }

static int queue_retry(batch *b, long job, err *e)
{
    if (b->nretry == b->capretry) {
        long cap = b->capretry ? 2 * b->capretry : 64;
        long *p = realloc(b->retry, (size_t)cap * sizeof *p);
        if (!p)
            return err_set(e, ERR_SYSTEM, "batch: out of memory");
        b->retry = p;
        b->capretry = cap;
    }
    b->retry[b->nretry++] = job;
    return 0;
}

/* Give idle worker i its next chunk: a job to retry alone, else the next
 * jobs of the list. A worker found dead is replaced once. */
/* The jobs of one batch_run: a list, or first + k * stride for k < n. */
typedef struct joblist {
    const long *jobs;
    long first, stride, n;
} joblist;

static int dispatch(batch *b, int i, const joblist *jl, long *next, err *e)
{
    long njobs = jl->n;
    worker *w = &b->w[i];
    long k;
    if (b->nretry > 0) {
        k = 1;
        w->chunk[0] = b->retry[--b->nretry];
    } else {
        if (*next >= njobs)
            return 0;
        k = (njobs - *next) / (4L * b->nworkers);
        k = k < 1 ? 1 : k > CHUNK_MAX ? CHUNK_MAX : k;
        for (long j = 0; j < k; j++)
            w->chunk[j] = jl->jobs ? jl->jobs[*next + j] : jl->first + (*next + j) * jl->stride;
        *next += k;
    }
    long msg[CHUNK_MAX + 1];
    msg[0] = k;
    memcpy(msg + 1, w->chunk, (size_t)k * sizeof *msg);
    size_t bytes = (size_t)(k + 1) * sizeof *msg;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (io_full(w->fd, msg, bytes, 1) == bytes) {
            w->n = (int)k;
            return 0;
        }
        worker_stop(w, 1, NULL, 0);
        TRY(worker_start(b, i, e));
    }
    return err_set(e, ERR_SYSTEM, "batch: worker %d dies before taking a job", i);
}

/* Worker i has something to say: its chunk's records, or its death. */
static int collect(batch *b, int i, batch_done_fn *done, void *done_ctx, err *e)
{
    worker *w = &b->w[i];
    int n = w->n, rc = 0;
    size_t got = io_full(w->fd, b->recs, (size_t)n * b->rec_bytes, 0);
    int whole = (int)(got / b->rec_bytes);
    w->n = 0;
    for (int k = 0; k < whole && !rc; k++)
        rc = done(done_ctx, w->chunk[k], b->recs + (size_t)k * b->rec_bytes, NULL);
    if (whole == n || rc)
        return rc;
    char why[160];
    long chunk[CHUNK_MAX];
    memcpy(chunk, w->chunk, sizeof chunk);
    worker_stop(w, 1, why, sizeof why);
    if (n == 1)
        rc = done(done_ctx, chunk[0], NULL, why);
    for (int k = n - 1; k >= whole && n > 1 && !rc; k--)
        rc = queue_retry(b, chunk[k], e);
    return rc ? rc : worker_start(b, i, e);
}

static int run(batch *b, const joblist *jl, batch_done_fn *done, void *done_ctx, err *e);

int batch_run(batch *b, const long *jobs, long njobs, batch_done_fn *done,
              void *done_ctx, err *e)
{
    joblist jl = {jobs, 0, 0, njobs};
    return run(b, &jl, done, done_ctx, e);
}

int batch_run_range(batch *b, long first, long stride, long njobs, batch_done_fn *done,
                    void *done_ctx, err *e)
{
    joblist jl = {NULL, first, stride, njobs};
    return run(b, &jl, done, done_ctx, e);
}

static int run(batch *b, const joblist *jl, batch_done_fn *done, void *done_ctx, err *e)
{
    struct pollfd *pfd = calloc((size_t)b->nworkers, sizeof *pfd);
    int *who = calloc((size_t)b->nworkers, sizeof *who);
    if (!pfd || !who) {
        free(pfd);
        free(who);
        return err_set(e, ERR_SYSTEM, "batch: out of memory");
    }
    long next = 0;
    int rc = 0;
    b->nretry = 0;
    for (;;) {
        int n = 0;
        for (int i = 0; i < b->nworkers && !rc; i++) {
            if (b->w[i].n == 0)
                rc = dispatch(b, i, jl, &next, e);
            if (b->w[i].n > 0) {
                pfd[n] = (struct pollfd){.fd = b->w[i].fd, .events = POLLIN};
                who[n++] = i;
            }
        }
        if (rc || n == 0)
            break;
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = err_set(e, ERR_SYSTEM, "batch: poll: %s", strerror(errno));
            break;
        }
        for (int k = 0; k < n && !rc; k++)
            if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
                rc = collect(b, who[k], done, done_ctx, e);
    }
    /* Stopped early: abandon the chunks in flight by replacing their
     * workers, so a later batch_run starts with idle workers. */
    for (int i = 0; i < b->nworkers && rc; i++)
        if (b->w[i].n > 0) {
            worker_stop(&b->w[i], 1, NULL, 0);
            worker_start(b, i, NULL);
        }
    free(pfd);
    free(who);
    return rc;
}
