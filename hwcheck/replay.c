/* `hwcheck replay TRACE`: placeholder until the trace runner lands. */
#include "hwcheck/modes.h"

int replay_run(int argc, char **argv, err *e)
{
    (void)argc, (void)argv;
    return err_set(e, ERR_SYSTEM, "replay: not implemented yet");
}
