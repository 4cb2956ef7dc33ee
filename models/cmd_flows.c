/* PLACEHOLDER until the owning work lands: cmd_flows is not implemented yet. */
#include "models/cmds.h"

int cmd_flows(int argc, char **argv, err *e)
{
    (void)argc;
    (void)argv;
    return err_set(e, ERR_SYSTEM, "%s: not implemented yet", "cmd_flows");
}
