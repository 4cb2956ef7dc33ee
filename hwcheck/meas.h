/* The measurement format (docs/formats.md "Measurements", collsim-meas 1):
 * the column tables of each kind, the metadata block every file starts
 * with, and small row helpers, all through the shared report writer. Pure C
 * (no CUDA): hwcheck's GPU code fills a meas_meta, this module prints it. */
#ifndef HWCHECK_MEAS_H
#define HWCHECK_MEAS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/report.h"

typedef enum meas_kind {
    MEAS_P2P, MEAS_FLOWS, MEAS_HOST, MEAS_LAUNCH, MEAS_COLL, MEAS_REPLAY, MEAS_NKINDS
} meas_kind;

enum { MEAS_MAX_TOPO = 17, MEAS_MAX_EXTRA = 12 };

/* Everything a file says about where and how it was measured. */
typedef struct meas_meta {
    char machine[128];   /* host name */
    char gpus[1024];     /* "0: NVIDIA H200 (0000:18:00.0); 1: ..." */
    char driver[64];     /* driver version, e.g. "580.65.06" */
    char cuda[64];       /* "runtime 13.0, driver API 13.0" */
    char nccl[32];       /* "2.28.3" */
    char date[32];       /* ISO 8601 UTC */
    char command[1024];  /* the exact command line */
    int ntopo;
    char topo[MEAS_MAX_TOPO][256]; /* rows of the nvidia-smi topo -m equivalent */
    int nextra;
    char extra_key[MEAS_MAX_EXTRA][32];
    char extra_val[MEAS_MAX_EXTRA][256];
} meas_meta;

const char *meas_kind_name(meas_kind k);  /* "p2p", "flows", ... */
/* The columns of a kind (static); *ncols receives their number. */
const report_col *meas_cols(meas_kind k, int *ncols);
/* Metadata lines: format, kind, then meta's fields, topo lines, extras. */
void meas_write_meta(report *r, meas_kind k, const meas_meta *m);
/* Add an extra "key: value" to m (ignored beyond MEAS_MAX_EXTRA). */
void meas_extra(meas_meta *m, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The command line as one shell-quoted string into buf[n]. */
void meas_command(int argc, char **argv, char *buf, size_t n);
/* Current time as ISO 8601 UTC ("2026-01-31T12:00:00Z") into buf[n]. */
void meas_now(char *buf, size_t n);
/* Endpoint name: GPU index "3", or "host<numa>" for PATTERNS_HOST. */
void meas_endpoint(int gpu, int numa, char *buf, size_t n);
/* One row of a transfer table (p2p, flows, host); bw from bytes / time. */
void meas_transfer_row(report *r, int case_no, const char *pattern, const char *op, int flow,
                       const char *src, const char *dst, uint64_t bytes, double time_us);

#endif
