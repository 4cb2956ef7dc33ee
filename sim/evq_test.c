/* Unit tests of the event queue: order by (time, insertion sequence), moves
 * and cancels through stored heap positions, and a randomized comparison
 * against a naive reference (a linear scan for the minimum). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sim/evq.h"

static void test_order_and_ties(void **state)
{
    (void)state;
    evq *q = evq_new();
    assert_non_null(q);
    /* Pushed: a@5, b@1, c@5, d@3, e@1. Time first, then push order among
     * equal times: b, e (both 1), d (3), a, c (both 5). */
    const int64_t t[] = {5, 1, 5, 3, 1};
    for (int i = 0; i < 5; i++)
        assert_true(evq_push(q, t[i], 7, i) >= 0);
    assert_int_equal(evq_len(q), 5);
    assert_int_equal(evq_top_ps(q), 1);
    const int want[] = {1, 4, 3, 0, 2};
    for (int i = 0; i < 5; i++) {
        int64_t tt;
        uint32_t kind;
        int32_t arg;
        assert_int_equal(evq_pop(q, &tt, &kind, &arg), 1);
        assert_int_equal(arg, want[i]);
        assert_int_equal(tt, t[want[i]]);
        assert_int_equal(kind, 7);
    }
    /* Empty: pop says 0 and the top time is INT64_MAX. */
    assert_int_equal(evq_pop(q, NULL, NULL, NULL), 0);
    assert_true(evq_top_ps(q) == INT64_MAX);
    evq_free(q);
    evq_free(NULL);
}

static void test_move_and_cancel(void **state)
{
    (void)state;
    evq *q = evq_new();
    int32_t a = evq_push(q, 10, 0, 0);
    int32_t b = evq_push(q, 20, 0, 1);
    int32_t c = evq_push(q, 30, 0, 2);
    /* c moved to 5 comes first; a moved to 20 ties with b but takes a fresh
     * sequence number, so it comes after b: order c, b, a. */
    evq_move(q, c, 5);
    evq_move(q, a, 20);
    assert_int_equal(evq_time_ps(q, a), 20);
    (void)b;
    const int want[] = {2, 1, 0};
    for (int i = 0; i < 3; i++) {
        int32_t arg;
        assert_int_equal(evq_pop(q, NULL, NULL, &arg), 1);
        assert_int_equal(arg, want[i]);
    }
    /* 100 events at (37 i) mod 100, every third cancelled: the rest come out
     * sorted by time, 66 of them (i = 0..99, i % 3 != 0). */
    int32_t ids[100];
    for (int i = 0; i < 100; i++)
        ids[i] = evq_push(q, (37 * i) % 100, 0, i);
    for (int i = 0; i < 100; i += 3)
        evq_cancel(q, ids[i]);
    assert_int_equal(evq_len(q), 66);
    int64_t prev = -1;
    int n = 0;
    int64_t tt;
    int32_t arg;
    while (evq_pop(q, &tt, NULL, &arg)) {
        assert_true(tt > prev); /* times (37 i) mod 100 are distinct */
        assert_int_not_equal(arg % 3, 0);
        assert_int_equal(tt, (37 * arg) % 100);
        prev = tt;
        n++;
    }
    assert_int_equal(n, 66);
    evq_free(q);
}

/* Reference model: live events in an array; the minimum by (time, seq). */
struct ref {
    int64_t t;
    uint64_t seq;
    int32_t id;
    int live;
};

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void test_random_against_reference(void **state)
{
    (void)state;
    enum { N = 20000 };
    evq *q = evq_new();
    struct ref *r = calloc(N, sizeof(*r));
    assert_non_null(r);
    uint64_t s = 42, seq = 0;
    int nref = 0;
    for (int step = 0; step < N; step++) {
        uint64_t op = lcg(&s) % 10;
        int nlive = 0;
        for (int i = 0; i < nref; i++)
            nlive += r[i].live;
        if (op < 5 || nlive == 0) { /* push, times in a small range: many ties */
            int64_t t = (int64_t)(lcg(&s) % 50);
            int32_t id = evq_push(q, t, 0, nref);
            assert_true(id >= 0);
            r[nref++] = (struct ref){t, seq++, id, 1};
        } else {
            int k = (int)(lcg(&s) % (uint64_t)nlive), i = 0;
            for (;; i++)
                if (r[i].live && k-- == 0)
                    break;
            if (op < 7) { /* move */
                r[i].t = (int64_t)(lcg(&s) % 50);
                r[i].seq = seq++;
                evq_move(q, r[i].id, r[i].t);
            } else if (op < 8) { /* cancel */
                r[i].live = 0;
                evq_cancel(q, r[i].id);
            } else { /* pop: must be the reference minimum */
                int best = -1;
                for (int j = 0; j < nref; j++)
                    if (r[j].live && (best < 0 || r[j].t < r[best].t ||
                                      (r[j].t == r[best].t && r[j].seq < r[best].seq)))
                        best = j;
                int64_t t;
                int32_t arg;
                assert_int_equal(evq_pop(q, &t, NULL, &arg), 1);
                assert_int_equal(arg, best);
                assert_int_equal(t, r[best].t);
                r[best].live = 0;
            }
        }
        if (nref == N)
            break;
    }
    free(r);
    evq_free(q);
}

static void test_sequence_wrap(void **state)
{
    (void)state;
    evq *q = evq_new();
    /* Start 3 below the 32-bit limit: pushes 0..9 all at time 5 (plus one at
     * time 1) cross the renumbering; ties must still come out in push order:
     * the one at time 1, then 0, 1, ..., 9. */
    evq_set_seq(q, UINT32_MAX - 3);
    for (int i = 0; i < 10; i++) {
        assert_true(evq_push(q, 5, 0, i) >= 0);
        if (i == 4)
            assert_true(evq_push(q, 1, 0, 100) >= 0);
    }
    int32_t arg;
    assert_int_equal(evq_pop(q, NULL, NULL, &arg), 1);
    assert_int_equal(arg, 100);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(evq_pop(q, NULL, NULL, &arg), 1);
        assert_int_equal(arg, i);
    }
    evq_free(q);
}

static void test_clear_reuses(void **state)
{
    (void)state;
    evq *q = evq_new();
    for (int i = 0; i < 1000; i++)
        evq_push(q, i, 0, i);
    evq_clear(q);
    /* After a clear the queue is empty and works as new. */
    assert_int_equal(evq_len(q), 0);
    evq_push(q, 3, 1, 9);
    int32_t arg;
    assert_int_equal(evq_pop(q, NULL, NULL, &arg), 1);
    assert_int_equal(arg, 9);
    evq_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_ties),
        cmocka_unit_test(test_move_and_cancel),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_sequence_wrap),
        cmocka_unit_test(test_clear_reuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
