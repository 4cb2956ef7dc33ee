/* hwcheck's command-line options: one static table (name, short flag, which
 * modes take it, help, setter), from which parsing and --help are generated.
 * Pure C, no CUDA. Flags -b -e -f -g -n -w -c -d mean what they mean in
 * nccl-tests. */
#ifndef HWCHECK_OPTS_H
#define HWCHECK_OPTS_H

#include <stdint.h>
#include <stdio.h>

#include "hwcheck/ref.h"
#include "sim/err.h"
#include "sim/report.h"

/* Modes, as bits (an option lists the modes that accept it). */
enum {
    OPTS_COLL = 1, OPTS_P2P = 2, OPTS_FLOWS = 4, OPTS_HOST = 8, OPTS_LAUNCH = 16,
    OPTS_REPLAY = 32, OPTS_ALL = 64, OPTS_ANY = 127
};

/* Same order as kern_ar_algo, after OPTS_IMPL_NCCL. */
typedef enum opts_impl {
    OPTS_IMPL_NCCL, OPTS_IMPL_ONESHOT, OPTS_IMPL_TWOSHOT, OPTS_IMPL_ONESHOT_PUSH,
    OPTS_IMPL_TWOSHOT_PUSH, OPTS_IMPL_SHM_RING, OPTS_NIMPLS
} opts_impl;

/* Transfer operations: kernel loads from the peer (read), kernel stores into
 * the peer (write), copy engine (copy); OPTS_OP_ALL runs each in turn. host
 * takes copy or kernel (a copy kernel on the GPU: loads from pinned host
 * memory for h2d, stores into it for d2h), and all for both; default copy. */
typedef enum opts_op {
    OPTS_OP_ALL, OPTS_OP_READ, OPTS_OP_WRITE, OPTS_OP_COPY, OPTS_OP_KERNEL
} opts_op;

enum { OPTS_MAX_ENV = 32, OPTS_MAX_POS = 16 };

typedef struct opts {
    int mode;                 /* one OPTS_* bit */
    ref_coll coll;            /* coll: positional collective (default allreduce) */
    uint64_t min_bytes, max_bytes; /* -b -e */
    double factor;            /* -f */
    int ngpus;                /* -g: GPUs to use (0 = all visible) */
    int iters, warmup, check; /* -n -w -c */
    ref_dtype dtype;          /* -d */
    opts_impl impl;           /* --impl (replay: --allreduce) */
    int allreduce_set;        /* replay: --allreduce given */
    int graph;                /* --graph (coll: in a CUDA graph; replay: capture every phase) */
    int eager;                /* replay --eager: capture no phase */
    int nccl_only;            /* launch --nccl-only: NCCL's host-cost rows alone */
    int post;                 /* launch --post: the slice-post rows alone */
    int peer;                 /* launch --post --peer: also against GPU 1's memory */
    int loop;                 /* launch --loop: the transfer loops' own costs alone */
    int copy_only;            /* launch --copy-only: graph-node and the copy-node rows */
    int pair;                 /* launch --pair: the busy-stream and two-rank pair rows alone */
    int rounds;               /* launch --nccl-only --rounds: rounds, each written (0 = 7,
                                 medians); coll: timed rounds per size (0 = 1) */
    int cuda_alloc;           /* --alloc cuda: NCCL buffers from cudaMalloc (default ncclMemAlloc) */
    int vranks;               /* --virtual-ranks (0 = off) */
    int blocks;               /* --blocks (0 = as vLLM) */
    int threads;              /* --threads: per copy-kernel block (default 512) */
    int unroll;               /* --unroll: 16-byte loads in flight per copy-kernel thread (1) */
    int nenv;
    const char *env[OPTS_MAX_ENV]; /* --env NAME=VALUE, borrowed from argv */
    report_format fmt;        /* --format; else from -o's suffix (.csv, .json), else table */
    int fmt_set;
    const char *out;          /* -o: file (dir for `all`); NULL = stdout */
    const char *pattern;      /* flows: --pattern */
    opts_op op;               /* --op */
    double timeout_ms;        /* --timeout-ms: device-side wait limit */
    double host_wait_s;       /* --host-timeout-s: host-side limit per wait (0: 30 + 10 x timeout) */
    int npos;
    const char *pos[OPTS_MAX_POS]; /* positional arguments (replay traces) */
    int list;                 /* --list */
    int help;                 /* --help */
    int root;                 /* --root (broadcast) */
    uint64_t seed;            /* --seed for the random inputs */
    int drop_rank;            /* --drop-rank: test hook, never launch this rank (-1) */
} opts;

/* Defaults of a mode (one OPTS_* bit). */
void opts_init(opts *o, int mode);
/* Parse argv[1..argc-1] (argv[0] is the mode name) into o; ERR_USAGE naming
 * the bad flag or value. Positional words go to o->pos (coll: the first one
 * names the collective). */
int opts_parse(opts *o, int argc, char **argv, err *e);
/* Print the options a mode accepts, generated from the table. */
void opts_help(FILE *f, int mode);
/* "usage: hwcheck MODE [options] ARGS" and the mode's options. */
void opts_usage(FILE *f, const char *mode, const char *args, int mask);
const char *opts_impl_name(opts_impl i);
int opts_impl_parse(const char *s, opts_impl *out); /* -1 if unknown */
const char *opts_op_name(opts_op op); /* "all", "read", "write", "copy", "kernel" */

#endif
