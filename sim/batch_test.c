/* Unit tests of the worker pool: every job comes back exactly once with its
 * own record, whatever the number of workers; a worker that dies costs only
 * its job; a nonzero done() stops the batch. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/batch.h"

typedef struct rec {
    long job;
    long square;
    int pid;
} rec;

/* The job: square its number; job 13 kills its own worker when asked to. */
static void job_square(void *ctx, long job, void *out)
{
    const int *crash = ctx;
    rec *r = out;
    if (*crash && job == 13)
        raise(SIGKILL);
    r->job = job;
    r->square = job * job;
    r->pid = (int)getpid();
}

typedef struct seen {
    int count[64];
    int died[64];
    int calls;
    int stop_after;     /* done returns 9 at this many calls; 0 = never */
    int other_pid;      /* a record came from a process other than ours */
} seen;

static int on_done(void *ctx, long job, const void *out, const char *why)
{
    seen *s = ctx;
    const rec *r = out;
    s->calls++;
    if (r) {
        assert_int_equal(r->job, job);
        assert_int_equal(r->square, job * job);
        s->count[job]++;
        if (r->pid != (int)getpid())
            s->other_pid = 1;
    } else {
        assert_non_null(strstr(why, "signal 9"));
        s->died[job]++;
    }
    return s->stop_after && s->calls == s->stop_after ? 9 : 0;
}

static void run_pool(int workers, int crash, int stop_after, seen *s, int *rc)
{
    long jobs[40];
    for (long i = 0; i < 40; i++)
        jobs[i] = i;
    err e = {0};
    batch *b = batch_new(workers, sizeof(rec), job_square, &crash, &e);
    assert_non_null(b);
    memset(s, 0, sizeof *s);
    s->stop_after = stop_after;
    *rc = batch_run(b, jobs, 40, on_done, s, &e);
    batch_free(b);
}

static void test_every_job_once(void **state)
{
    (void)state;
    for (int workers = 1; workers <= 3; workers++) {
        seen s;
        int rc;
        run_pool(workers, 0, 0, &s, &rc);
        /* 40 jobs, each delivered exactly once with its square, computed in
         * a forked worker (another pid) even with one worker. */
        assert_int_equal(rc, 0);
        assert_int_equal(s.calls, 40);
        for (int j = 0; j < 40; j++)
            assert_int_equal(s.count[j], 1);
        assert_int_equal(s.other_pid, 1);
    }
}

static void test_worker_death(void **state)
{
    (void)state;
    seen s;
    int rc;
    run_pool(2, 1, 0, &s, &rc);
    /* Job 13 kills its worker: it alone is reported dead (signal 9); the
     * others of its chunk run again singly, so all 39 others still come back
     * exactly once each. */
    assert_int_equal(rc, 0);
    assert_int_equal(s.calls, 40);
    for (int j = 0; j < 40; j++) {
        assert_int_equal(s.died[j], j == 13);
        assert_int_equal(s.count[j], j != 13);
    }
}

static void test_stop(void **state)
{
    (void)state;
    for (int workers = 1; workers <= 2; workers++) {
        seen s;
        int rc;
        run_pool(workers, 0, 5, &s, &rc);
        /* done() returns 9 on its 5th call: batch_run returns 9 at once and
         * delivers nothing more. */
        assert_int_equal(rc, 9);
        assert_int_equal(s.calls, 5);
    }
}

static void test_range(void **state)
{
    (void)state;
    int crash = 1;
    for (int workers = 1; workers <= 2; workers++) {
        err e = {0};
        batch *b = batch_new(workers, sizeof(rec), job_square, &crash, &e);
        assert_non_null(b);
        seen s;
        memset(&s, 0, sizeof s);
        /* Jobs 3, 8, ..., 63 (first 3, stride 5, 13 of them), never listed:
         * each comes back exactly once; 13 is among them and kills its
         * worker (reported dead, the rest still run); no other job runs. */
        assert_int_equal(batch_run_range(b, 3, 5, 13, on_done, &s, &e), 0);
        batch_free(b);
        assert_int_equal(s.calls, 13);
        for (int j = 0; j < 64; j++) {
            int in = j >= 3 && (j - 3) % 5 == 0;
            assert_int_equal(s.count[j], in && j != 13);
            assert_int_equal(s.died[j], j == 13);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_job_once),
        cmocka_unit_test(test_worker_death),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
