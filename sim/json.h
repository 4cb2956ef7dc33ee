/* collsim's JSON writer: sim/jw.h (libc) streaming into a FILE, with helpers for the
 * values the project writes (numbers as numbers, NaN/inf as null), and the
 * Chrome-trace / Perfetto timeline layout shared by `coll`, `replay` and
 * `whatif` timelines (docs/formats.md "Timelines"):
 *   process TL_PID_GPU(g) "GPU g" (sort g): its threads are the GPU's tracks
 *     (replay: tid 0 "phases" with cycle and phase markers, tid 1+s "stream s";
 *     coll: lanes named by rank, channels and peer, so slices never overlap)
 *   process TL_PID_LINKS "links": one counter per busy link (GB/s)
 *   (whatif: process k+1 per variant k, named by its knobs, GPU 0's threads)
 * Times are picoseconds in, microseconds with six decimals out. The report
 * tables' JSON (sim/report.c) is written by the same jw, so strings are
 * escaped one way everywhere (the bytes yajl_gen writes: sim/report_test.c). */
#ifndef SIM_JSON_H
#define SIM_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "sim/err.h"
#include "sim/jw.h"

/* A writer printing to f (borrowed); NULL on OOM. Free with json_gen_free. */
jw *json_gen_new(FILE *f);
void json_gen_free(jw *g);                        /* NULL ok */
void json_str(jw *g, const char *s);        /* NULL writes "" */
void json_int(jw *g, long long v);
void json_num(jw *g, double v);             /* %.15g; NaN/inf: null */
void json_num_text(jw *g, const char *s);   /* an already formatted number */
void json_us(jw *g, int64_t ps);            /* ps as us, six decimals exactly */
/* Key and value in one call, inside a map. */
void json_kv_str(jw *g, const char *k, const char *v);
void json_kv_int(jw *g, const char *k, long long v);
void json_kv_num(jw *g, const char *k, double v);

/* --- timelines --- */
enum { TL_PID_LINKS = 100000 };
#define TL_PID_GPU(g) (1 + (g))

typedef struct timeline {
    jw *g;
    FILE *f;
} timeline;

/* Open: {"displayTimeUnit":"ns","traceEvents":[ ; ERR_SYSTEM on OOM. */
int tl_open(timeline *t, FILE *f, err *e);
void tl_process(timeline *t, int pid, const char *name, int sort);
void tl_thread(timeline *t, int pid, int tid, const char *name, int sort);
/* A complete event ("X"); add args with json_kv_* between tl_slice and
 * tl_slice_end (args may be empty). cat may be NULL. */
void tl_slice(timeline *t, int pid, int tid, int64_t ts_ps, int64_t dur_ps, const char *name,
              const char *cat);
void tl_slice_end(timeline *t);
/* An instant marker ("i") on a thread. */
void tl_instant(timeline *t, int pid, int tid, int64_t ts_ps, const char *name);
/* A counter sample ("C"): name's series key = value. */
void tl_counter(timeline *t, int pid, int64_t ts_ps, const char *name, const char *key,
                double value);
/* A size for people, as slice names give it: "512 B", "14 KiB", "1.5 MiB"
 * (powers of 1024, three significant digits); returns buf. */
char *tl_size_text(uint64_t bytes, char *buf, size_t n);
/* Close the array and object, flush; ERR_SYSTEM if writing failed. */
int tl_close(timeline *t, err *e);

#endif
