/* Worker pool over fork and one socket pair per worker. The parent sends a
 * job number (a long) down a worker's socket and reads back exactly
 * rec_bytes; a short read means the worker died, and the parent reaps it,
 * reports the job failed and forks a replacement. Sockets (not pipes) so
 * that send(MSG_NOSIGNAL) never raises SIGPIPE in either process, leaving
 * the process's signal dispositions alone. Invariants: a worker has at most
 * one job in flight (job >= 0 in its slot), so a death names exactly one job;
 * workers close every socket but their own, so the parent's exit (or
 * batch_free closing the sockets) ends them. */
#define _DEFAULT_SOURCE
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

typedef struct worker {
    pid_t pid;  /* 0 = not running */
    int fd;     /* parent's end of the socket pair, -1 if none */
    long job;   /* job in flight, -1 if idle */
} worker;

struct batch {
    int nworkers;
    size_t rec_bytes;
    batch_job_fn *fn;
    void *fn_ctx;
    void *rec;      /* rec_bytes: the parent's receive buffer */
    worker *w;
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
    void *rec = malloc(b->rec_bytes);
    long job;
    if (!rec)
        _exit(4);
    while (io_full(fd, &job, sizeof job, 0) == sizeof job) {
        memset(rec, 0, b->rec_bytes);
        b->fn(b->fn_ctx, job, rec);
        if (io_full(fd, rec, b->rec_bytes, 1) != b->rec_bytes)
            break;
    }
    free(rec);
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
    b->w[i] = (worker){.pid = pid, .fd = sv[0], .job = -1};
    return 0;
}

/* Close a worker's socket, make sure it ends, reap it; describe how it died. */
static void worker_stop(worker *w, int kill_it, char *why, size_t n)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
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
    if (!b || !(b->rec = malloc(rec_bytes)) ||
        !(b->w = calloc((size_t)workers, sizeof *b->w))) {
        if (b)
            free(b->rec);
        free(b);
        err_set(e, ERR_SYSTEM, "batch: out of memory");
        return NULL;
    }
    b->nworkers = workers;
    b->rec_bytes = rec_bytes;
    b->fn = fn;
    b->fn_ctx = fn_ctx;
    for (int i = 0; i < workers; i++)
        b->w[i] = (worker){.pid = 0, .fd = -1, .job = -1};
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
        worker_stop(&b->w[i], b->w[i].job >= 0, NULL, 0);
    free(b->w);
    free(b->rec);
    free(b);
}

int batch_workers(const batch *b) { return b->nworkers; }

/* Hand jobs[*next] to idle worker i; a worker found dead is replaced once. */
static int dispatch(batch *b, int i, const long *jobs, long *next, err *e)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        long job = jobs[*next];
        if (io_full(b->w[i].fd, &job, sizeof job, 1) == sizeof job) {
            b->w[i].job = job;
            (*next)++;
            return 0;
        }
        worker_stop(&b->w[i], 1, NULL, 0);
        TRY(worker_start(b, i, e));
    }
    return err_set(e, ERR_SYSTEM, "batch: worker %d dies before taking a job", i);
}

int batch_run(batch *b, const long *jobs, long njobs, batch_done_fn *done,
              void *done_ctx, err *e)
{
    struct pollfd *pfd = calloc((size_t)b->nworkers, sizeof *pfd);
    int *who = calloc((size_t)b->nworkers, sizeof *who);
    if (!pfd || !who) {
        free(pfd);
        free(who);
        return err_set(e, ERR_SYSTEM, "batch: out of memory");
    }
    long next = 0;
    int rc = 0, inflight = 0;
    for (int i = 0; i < b->nworkers && next < njobs && !rc; i++)
        if ((rc = dispatch(b, i, jobs, &next, e)) == 0)
            inflight++;
    while (inflight > 0 && !rc) {
        int n = 0;
        for (int i = 0; i < b->nworkers; i++)
            if (b->w[i].job >= 0) {
                pfd[n] = (struct pollfd){.fd = b->w[i].fd, .events = POLLIN};
                who[n++] = i;
            }
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = err_set(e, ERR_SYSTEM, "batch: poll: %s", strerror(errno));
            break;
        }
        for (int k = 0; k < n && !rc; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            worker *w = &b->w[who[k]];
            long job = w->job;
            w->job = -1;
            inflight--;
            if (io_full(w->fd, b->rec, b->rec_bytes, 0) == b->rec_bytes) {
                rc = done(done_ctx, job, b->rec, NULL);
            } else {
                char why[160];
                worker_stop(w, 1, why, sizeof why);
                rc = done(done_ctx, job, NULL, why);
                if (!rc)
                    rc = worker_start(b, who[k], e);
            }
            if (!rc && next < njobs && (rc = dispatch(b, who[k], jobs, &next, e)) == 0)
                inflight++;
        }
    }
    /* Stopped early: abandon the jobs in flight by replacing their workers,
     * so a later batch_run starts with idle workers. */
    for (int i = 0; i < b->nworkers && rc; i++)
        if (b->w[i].job >= 0) {
            worker_stop(&b->w[i], 1, NULL, 0);
            if (worker_start(b, i, NULL) != 0)
                b->w[i].job = -1;
        }
    free(pfd);
    free(who);
    return rc;
}
