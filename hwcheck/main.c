/* hwcheck entry point: the mode table, dispatch, and the one place that
 * prints an error (prefixed "hwcheck: ") and turns it into the exit code.
 * A failed write to stdout is an error (exit 4), as in collsim. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "hwcheck/modes.h"
#include "sim/cli.h"
#include "sim/version.h"

static const cli_cmd modes[] = {
    {"coll", "NCCL collectives and the project's allreduce kernels (nccl-tests flags)", coll_run},
    {"p2p", "GPU<->GPU bandwidth (read/write/copy, one and both directions) and latency", p2p_run},
    {"flows", "a named multi-flow contention pattern (--pattern, --list)", flows_run},
    {"host", "host<->device copies: alone, concurrent, bidirectional", host_run},
    {"launch", "kernel launch, graph launch, graph node and sync overheads", launch_run},
    {"replay", "run a trace: spin kernels for compute, real collectives", replay_run},
    {"all", "the whole calibration suite into one directory (-o DIR)", all_run},
    {NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    err e = {0};
    int rc = cli_dispatch("hwcheck", COLLSIM_VERSION, modes, argc, argv, &e);
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout)) && (rc == 0 || !e.msg[0]))
        rc = err_set(&e, ERR_SYSTEM, "writing stdout failed%s%s", errno ? ": " : "",
                     errno ? strerror(errno) : "");
    if (rc != 0 && e.msg[0])
        fprintf(stderr, "hwcheck: %s\n", e.msg);
    return rc;
}
