/* The collsim trace format (`collsim-trace 1`, docs/formats.md "Traces"):
 * line-oriented text, one operation per line, read and written through zlib
 * so plain and gzipped files are handled alike. The reader streams: it holds
 * one line at a time, so memory does not grow with the file. A trace is the
 * SPMD program of one tensor-parallel group: every op runs on all ranks.
 * Host ops (host, sync, issue_us) describe each rank's CPU: the replay keeps
 * a CPU lane per rank next to its GPU streams (traces/replay.h). */
#ifndef TRACES_TRACE_H
#define TRACES_TRACE_H

#include <stdint.h>

#include "models/coll/coll.h"
#include "sim/err.h"

#define TRACE_MAX_STREAMS 8   /* streams 0..7 per rank */
#define TRACE_NAME_MAX 64
#define TRACE_MAX_VALUE 1e12  /* largest duration (us) or token count */
#define TRACE_MAX_LINES (1L << 24)  /* 16.8M lines: more is refused (exit 3) */

typedef enum trace_phase {
    PHASE_DECODE, PHASE_DRAFT, PHASE_VERIFY, PHASE_PREFILL, PHASE_OTHER, PHASE_N
} trace_phase;

typedef enum trace_op_kind {
    OP_CYCLE,    /* start of a cycle; tokens = tokens it produces */
    OP_PHASE,    /* start of a phase (joins all streams); phase, graph */
    OP_COMPUTE,  /* dur_us of GPU work on stream, from kernels kernels */
    OP_COLL,     /* a collective on stream (kind, bytes, dtype, group, algo) */
    OP_IDLE,     /* dur_us of nothing on stream (host gap) */
    OP_WAIT,     /* stream waits until stream `on` has finished what it has */
    OP_HOST,     /* dur_us of work on each rank's CPU (the host lane), GPU untouched */
    OP_SYNC,     /* each rank's CPU waits until its GPU streams are done (D2H, .item()) */
    OP_N
} trace_op_kind;

typedef struct trace_op {
    trace_op_kind kind;
    int stream;            /* 0..TRACE_MAX_STREAMS-1 */
    double dur_us;         /* OP_COMPUTE, OP_IDLE */
    int kernels;           /* kernels this op stands for (launch overhead) */
    double tokens;         /* OP_CYCLE: tokens produced by the cycle */
    trace_phase phase;     /* OP_PHASE */
    int graph;             /* OP_PHASE: 1 if launched as one CUDA graph */
    coll_kind coll;        /* OP_COLL */
    uint64_t bytes;        /* OP_COLL, as nccl-tests counts the size */
    coll_dtype dtype;      /* OP_COLL */
    int group;             /* OP_COLL: ranks 0..group-1 */
    coll_algo algo;        /* OP_COLL: ALGO_AUTO = no override */
    double measured_us;    /* OP_COLL: transfer time seen in a capture, <0 none */
    double wait_us;        /* OP_COLL: waiting for other ranks seen, <0 none */
    double issue_us;       /* OP_COMPUTE, OP_COLL: CPU time of its launch call(s) before
                              its kernels can run, as captured (replaces the launch
                              costs; the op is CPU-issued even in a graph phase), <0 none */
    int on;                /* OP_WAIT: the stream waited on */
    char name[TRACE_NAME_MAX];  /* optional label, "" if none */
} trace_op;

typedef struct trace_reader trace_reader;
typedef struct trace_writer trace_writer;

/* Open a trace (plain or gzip; "-" = stdin) and read its header and meta
 * lines. ERR_SYSTEM if it cannot be opened, ERR_INPUT "file:line: what". */
int trace_open(const char *path, trace_reader **out, err *e);
void trace_close(trace_reader *r);                       /* NULL ok */
/* Meta value of key from the header ("meta KEY VALUE"), NULL if absent. */
const char *trace_meta(const trace_reader *r, const char *key);
/* Next op: 1 = got one, 0 = end of trace, else an error code (ERR_INPUT
 * with file:line, e.g. a truncated gzip stream). */
int trace_next(trace_reader *r, trace_op *op, err *e);
long trace_line(const trace_reader *r);                  /* current line */

/* Write a trace to an already-open ofile-style FILE* path (gzip if the name
 * ends in .gz). The writer only formats; the caller commits or aborts. */
trace_writer *trace_writer_new(const char *path, err *e);
int trace_write_meta(trace_writer *w, const char *key, const char *value, err *e);
int trace_write_comment(trace_writer *w, const char *text, err *e);
int trace_write_op(trace_writer *w, const trace_op *op, err *e);
/* Flush, close and rename into place (ERR_SYSTEM on failure); abort
 * removes the partial file. Both free w. */
int trace_writer_commit(trace_writer *w, err *e);
void trace_writer_abort(trace_writer *w);                /* NULL ok */

/* A zeroed op of the given kind with the defaults (stream 0, kernels 1 for
 * compute and coll, group 0 = all, measured/wait -1). */
void trace_op_init(trace_op *op, trace_op_kind kind);
const char *trace_phase_name(trace_phase p);
int trace_phase_parse(const char *s, trace_phase *out);  /* 0 ok, -1 unknown */

#endif
