/* collsim entry point: dispatch to the subcommand table, print the error
 * message of a failed command on stderr, and return its exit code. */
#include <stdio.h>

#include "sim/cli.h"
#include "sim/version.h"

/* Defined by the models layer (models/cmds.c); sim/ does not include it. */
extern const cli_cmd collsim_cmds[];

int main(int argc, char **argv)
{
    err e = {0};
    int rc = cli_dispatch("collsim", COLLSIM_VERSION, collsim_cmds, argc, argv, &e);
    if (rc != 0 && e.msg[0])
        fprintf(stderr, "collsim: %s\n", e.msg);
    return rc;
}
