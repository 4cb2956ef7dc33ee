/* Event queue: a binary min-heap of events ordered by (time_ps, insertion
 * sequence), so events at the same time come out in the order they were
 * pushed (or last moved). Each event stores its heap position, so it can be
 * moved or cancelled in O(log n) without lazy deletion. Events live in a pool
 * with a free list: no malloc once the queue has reached its peak size.
 * An event carries a kind and an int32 argument, both opaque to the queue. */
#ifndef SIM_EVQ_H
#define SIM_EVQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct evq evq;

evq *evq_new(void);          /* NULL on out of memory */
void evq_free(evq *q);       /* NULL ok */
void evq_clear(evq *q);      /* drop every event; memory is kept */
/* Schedule an event; returns its id (valid until popped or cancelled), or -1
 * on out of memory. O(log n). */
int32_t evq_push(evq *q, int64_t time_ps, uint32_t kind, int32_t arg);
/* Reschedule event ev to time_ps; it takes a fresh sequence number, as if
 * pushed now. O(log n). 0, or -1 on out of memory (only when renumbering). */
int evq_move(evq *q, int32_t ev, int64_t time_ps);
void evq_cancel(evq *q, int32_t ev);   /* remove ev; its id is freed. O(log n) */
/* Take a sequence number as a push would, for no event (the events after it
 * stand in the same order to each other). 0, or -1 on OOM (renumbering). */
int evq_skip(evq *q);
size_t evq_len(const evq *q);
int64_t evq_top_ps(const evq *q);      /* earliest time; INT64_MAX if empty */
int64_t evq_time_ps(const evq *q, int32_t ev); /* when ev is scheduled */
/* Remove the earliest event into the outputs (any may be NULL); returns 1,
 * or 0 if the queue is empty. The event's id is freed. O(log n). */
int evq_pop(evq *q, int64_t *time_ps, uint32_t *kind, int32_t *arg);
/* Sequence numbers are 32 bits; before they wrap, the queued events are
 * renumbered 0..n-1 in their current order (O(n log n), once per 2^32
 * pushes). 0, or -1 on OOM. evq_set_seq sets the next one (for tests). */
int evq_renumber(evq *q);
void evq_set_seq(evq *q, uint32_t seq);

#endif
