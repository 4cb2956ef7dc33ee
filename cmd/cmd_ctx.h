/* The option glue the commands share: topology, calibration, NCCL settings,
 * output, timeline and format, with their cli_opt setters, loading and the
 * metadata every report records. A command's option struct starts with a
 * cmd_ctx, so these setters work on it directly (the ctx of cli_parse). */
#ifndef CMD_CMD_CTX_H
#define CMD_CMD_CTX_H

#include "models/coll/coll.h"
#include "models/topo/topo.h"
#include "sim/cli.h"
#include "sim/report.h"

#define CMD_DEFAULT_TOPO "rtxpro6000-8x-pcie5-2s"

typedef struct cmd_ctx {
    const char *topo;      /* --topo (default CMD_DEFAULT_TOPO) */
    const char *calib;     /* --calib FILE, NULL for none */
    const char *out;       /* --output, "-" = stdout */
    const char *timeline;  /* --timeline, NULL for none, "-" = stdout */
    report_format fmt;     /* --format */
    nccl_env env;          /* --env settings */
    char envs[512];        /* ... as given, for the metadata */
    int topo_given, env_given, out_given;
} cmd_ctx;

void cmd_ctx_init(cmd_ctx *c);
/* cli_opt setters; ctx is a struct whose first member is a cmd_ctx. */
cli_set_fn cmd_set_topo, cmd_set_calib, cmd_set_output, cmd_set_timeline, cmd_set_format,
    cmd_set_env;
/* The topology, calibrated when --calib was given (caller frees). */
int cmd_load_topo(const cmd_ctx *c, topo **out, err *e);
/* "calibration" and "env" metadata lines (what every report records). */
void cmd_meta(const cmd_ctx *c, report *r);
/* --engine E: *tlp = 1 for tlp (the transaction level), 0 for flow; else
 * ERR_USAGE naming both. */
int cmd_parse_engine(const char *a, int *tlp, err *e);
/* --timeline - with the report also on stdout: the report goes to stderr. */
int cmd_report_to_stderr(const cmd_ctx *c);

#endif
