/* The collsim subcommand table: --help and --list are generated from it. */
#include "cmd/cmds.h"

const cli_cmd collsim_cmds[] = {
    {"coll", "predict a collective over a size range (nccl-tests layout)", cmd_coll},
    {"flows", "simulate a named point-to-point pattern", cmd_flows},
    {"topo", "show or import a topology (show|import)", cmd_topo},
    {"trace", "generate, import or summarise traces (gen|import|show)", cmd_trace},
    {"replay", "predict a trace: cycles, tok/s and the breakdown", cmd_replay},
    {"whatif", "run a scenario for every combination of varied knobs", cmd_whatif},
    {"sweep", "batch replays of a grid, on all cores or under mpirun", cmd_sweep},
    {"calibrate", "fit model parameters to point-to-point measurements", cmd_calibrate},
    {"validate", "compare predictions with measurements", cmd_validate},
    {NULL, NULL, NULL},
};
