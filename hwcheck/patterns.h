/* The named point-to-point and contention patterns shared by `hwcheck flows`
 * (which runs them) and `collsim flows` (which predicts them): one static
 * table. Pure C11 with no CUDA and no project dependencies other than libc,
 * so collsim can compile hwcheck/patterns.c in as it is.
 * A pattern on n GPUs is a list of cases; the flows of one case run
 * concurrently. A flow endpoint is a GPU index or PATTERNS_HOST (pinned host
 * memory on the GPU's NUMA node). Everything is a pure function of n. */
#ifndef HWCHECK_PATTERNS_H
#define HWCHECK_PATTERNS_H

enum { PATTERNS_HOST = -1, PATTERNS_MAX_FLOWS = 1024 };

typedef struct patterns_flow {
    int src, dst; /* GPU index, or PATTERNS_HOST */
} patterns_flow;

typedef struct patterns_entry {
    const char *name;
    const char *summary;
    int min_gpus;   /* fewer GPUs: the pattern is skipped (with a message) */
    int host;       /* 1: host<->device copies (hwcheck host), 0: GPU<->GPU */
    int latency;    /* 1: one-way flag latency instead of bandwidth */
    /* Number of cases on n GPUs (0 if n < min_gpus). */
    int (*ncases)(int n);
    /* Flows of case c (0 <= c < ncases(n)) into out[max]; returns the count. */
    int (*flows)(int n, int c, patterns_flow *out, int max);
} patterns_entry;

/* The table, in a fixed order; patterns_count() entries. */
int patterns_count(void);
const patterns_entry *patterns_at(int i);          /* NULL if out of range */
const patterns_entry *patterns_find(const char *name); /* NULL if unknown */
/* Flows of case c of p on n GPUs; returns the count, 0 if c is out of range. */
int patterns_case(const patterns_entry *p, int n, int c, patterns_flow *out, int max);

#endif
