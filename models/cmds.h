/* The collsim subcommands; each is implemented in the module that owns it
 * and returns an exit code (enum err_code). */
#ifndef MODELS_CMDS_H
#define MODELS_CMDS_H

#include "sim/cli.h"

cli_run_fn cmd_coll;      /* models/cmd_coll.c */
cli_run_fn cmd_flows;     /* models/cmd_flows.c */
cli_run_fn cmd_topo;      /* models/cmd_topo.c */
cli_run_fn cmd_trace;     /* traces/cmd_trace.c */
cli_run_fn cmd_replay;    /* traces/cmd_replay.c */
cli_run_fn cmd_whatif;    /* traces/cmd_whatif.c */
cli_run_fn cmd_sweep;     /* traces/cmd_sweep.c */
cli_run_fn cmd_calibrate; /* validate/cmd_calibrate.c */
cli_run_fn cmd_validate;  /* validate/cmd_validate.c */

#endif
