/* Binary heap with stored indices (the ROSS / redis-timer idea): the heap
 * array holds (time, seq, event id) keys inline, 16 bytes each, so
 * comparisons touch only the heap; each event records its heap position,
 * updated on every move, so evq_move and evq_cancel find it in O(1) and
 * restore the heap in O(log n). Pops go down the smaller children to a leaf
 * first and then up (one comparison per level instead of two: the element
 * moved from the end is usually late). Invariants: heap[i] <= its children by
 * (time, seq); ev(heap[i]).pos == i; seq strictly increases with every push
 * or move, so keys are unique and the order is total: same input, same
 * order, on every machine. seq is 32 bits: before it would wrap, the queued
 * events are renumbered 0..n-1 in their current order (evq_renumber). */
#include "sim/evq.h"

#include <stdlib.h>
#include <string.h>

#include "sim/err.h"
#include "sim/pool.h"

struct ev {
    int32_t pos;    /* index in heap */
    uint32_t kind;
    int32_t arg;
};

struct ent {
    int64_t t;
    uint32_t seq;
    int32_t ev;
};

struct evq {
    pool evs;          /* struct ev */
    struct ent *heap;
    size_t n, cap;
    uint32_t seq;   /* next sequence number */
};

static inline struct ev *ev_at(const evq *q, int32_t ev)
{
    return &POOL_AT(&q->evs, struct ev, ev);
}

static inline int ent_less(const struct ent *a, const struct ent *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void sift_up(evq *q, size_t i, struct ent e)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ent_less(&e, &q->heap[p]))
            break;
        q->heap[i] = q->heap[p];
        ev_at(q, q->heap[i].ev)->pos = (int32_t)i;
        i = p;
    }
    q->heap[i] = e;
    ev_at(q, e.ev)->pos = (int32_t)i;
}

static void sift_down(evq *q, size_t i, struct ent e)
{
    size_t n = q->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ent_less(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!ent_less(&q->heap[c], &e))
            break;
        q->heap[i] = q->heap[c];
        ev_at(q, q->heap[i].ev)->pos = (int32_t)i;
        i = c;
    }
    q->heap[i] = e;
    ev_at(q, e.ev)->pos = (int32_t)i;
}

/* Put e at slot i (just vacated) and restore the heap around it. */
static void place(evq *q, size_t i, struct ent e)
{
    if (i > 0 && ent_less(&e, &q->heap[(i - 1) / 2]))
        sift_up(q, i, e);
    else
        sift_down(q, i, e);
}

evq *evq_new(void)
{
    evq *q = calloc(1, sizeof(*q));
    if (q)
        pool_init(&q->evs, sizeof(struct ev));
    return q;
}

void evq_free(evq *q)
{
    if (!q)
        return;
    pool_fini(&q->evs);
    free(q->heap);
    free(q);
}

void evq_clear(evq *q)
{
    pool_clear(&q->evs);
    q->n = 0;
    q->seq = 0;
}

void evq_set_seq(evq *q, uint32_t seq) { q->seq = seq; }

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    return ent_less(x, y) ? -1 : ent_less(y, x);
}

int evq_renumber(evq *q)
{
    struct ent *v = malloc((q->n ? q->n : 1) * sizeof(*v));
    if (!v)
        return -1;
    memcpy(v, q->heap, q->n * sizeof(*v));
    qsort(v, q->n, sizeof(*v), cmp_ent);
    /* Same relative order with seq = rank: the heap stays a heap. */
    for (size_t i = 0; i < q->n; i++)
        q->heap[ev_at(q, v[i].ev)->pos].seq = (uint32_t)i;
    q->seq = (uint32_t)q->n;
    free(v);
    return 0;
}

/* The next sequence number; renumbers first if it would wrap. */
static inline int next_seq(evq *q, uint32_t *seq)
{
    if (q->seq == UINT32_MAX && evq_renumber(q))
        return -1;
    *seq = q->seq++;
    return 0;
}

int32_t evq_push(evq *q, int64_t time_ps, uint32_t kind, int32_t arg)
{
    if (q->n == q->cap) {
        size_t ncap = q->cap ? 2 * q->cap : 256;
        struct ent *nh = realloc(q->heap, ncap * sizeof(*nh));
        if (!nh)
            return -1;
        q->heap = nh;
        q->cap = ncap;
    }
    uint32_t seq;
    if (next_seq(q, &seq))
        return -1;
    int32_t ev = pool_get(&q->evs);
    if (ev < 0)
        return -1;
    struct ev *v = ev_at(q, ev);
    v->kind = kind;
    v->arg = arg;
    struct ent e = {time_ps, seq, ev};
    sift_up(q, q->n++, e);
    return ev;
}

int evq_move(evq *q, int32_t ev, int64_t time_ps)
{
    uint32_t seq;
    if (next_seq(q, &seq))
        return -1;
    size_t i = (size_t)ev_at(q, ev)->pos;
    ASSERTF(i < q->n && q->heap[i].ev == ev, "event %d is not queued", ev);
    struct ent e = {time_ps, seq, ev};
    place(q, i, e);
    return 0;
}

int evq_skip(evq *q)
{
    uint32_t seq;
    return next_seq(q, &seq);
}

void evq_cancel(evq *q, int32_t ev)
{
    size_t i = (size_t)ev_at(q, ev)->pos;
    ASSERTF(i < q->n && q->heap[i].ev == ev, "event %d is not queued", ev);
    struct ent last = q->heap[--q->n];
    if (i < q->n)
        place(q, i, last);
    pool_put(&q->evs, ev);
}

size_t evq_len(const evq *q) { return q->n; }

int64_t evq_top_ps(const evq *q) { return q->n ? q->heap[0].t : INT64_MAX; }

int64_t evq_time_ps(const evq *q, int32_t ev)
{
    return q->heap[ev_at(q, ev)->pos].t;
}

int evq_pop(evq *q, int64_t *time_ps, uint32_t *kind, int32_t *arg)
{
    if (q->n == 0)
        return 0;
    struct ent top = q->heap[0];
    struct ev *v = ev_at(q, top.ev);
    if (time_ps)
        *time_ps = top.t;
    if (kind)
        *kind = v->kind;
    if (arg)
        *arg = v->arg;
    struct ent last = q->heap[--q->n];
    size_t n = q->n, i = 0;
    if (n > 0) {  /* hole from the root down to a leaf, then place last */
        for (size_t c; (c = 2 * i + 1) < n; i = c) {
            if (c + 1 < n && ent_less(&q->heap[c + 1], &q->heap[c]))
                c++;
            q->heap[i] = q->heap[c];
            ev_at(q, q->heap[i].ev)->pos = (int32_t)i;
        }
        sift_up(q, i, last);
    }
    pool_put(&q->evs, top.ev);
    return 1;
}
