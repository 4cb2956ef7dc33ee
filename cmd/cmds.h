/* The collsim subcommands; each lives in its own file under cmd/ and
 * returns an exit code (enum err_code). */
#ifndef CMD_CMDS_H
#define CMD_CMDS_H

#include "sim/cli.h"

cli_run_fn cmd_coll;      /* cmd/cmd_coll.c */
cli_run_fn cmd_flows;     /* cmd/cmd_flows.c */
cli_run_fn cmd_topo;      /* cmd/cmd_topo.c */
cli_run_fn cmd_trace;     /* cmd/cmd_trace.c */
cli_run_fn cmd_replay;    /* cmd/cmd_replay.c */
cli_run_fn cmd_whatif;    /* cmd/cmd_whatif.c */
cli_run_fn cmd_sweep;     /* cmd/cmd_sweep.c */
cli_run_fn cmd_calibrate; /* cmd/cmd_calibrate.c */
cli_run_fn cmd_validate;  /* cmd/cmd_validate.c */

#endif
