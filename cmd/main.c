/* collsim entry point: dispatch to the subcommand table, print the error
 * message of a failed command on stderr, and return its exit code. A write
 * to stdout that failed (a full disk, a closed stdout, a reader that went
 * away: SIGPIPE is ignored so it shows as EPIPE) is an error (exit 4). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "sim/cli.h"
#include "sim/version.h"

/* Defined in cmd/cmds.c; no library includes it. */
extern const cli_cmd collsim_cmds[];

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
    /* Memory freed stays with the process for the next allocation (no
     * mmap per large block, no trim): a page touched the first time costs
     * a fault, some 2 us on a virtual machine, as much as 20,000
     * instructions, and a prediction frees and allocates its scratch
     * tables as it goes. */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
    err e = {0};
    int rc = cli_dispatch("collsim", COLLSIM_VERSION, collsim_cmds, argc, argv, &e);
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout)) && (rc == 0 || !e.msg[0])) {
        rc = err_set(&e, ERR_SYSTEM, "writing stdout failed%s%s", errno ? ": " : "",
                     errno ? strerror(errno) : "");
    }
    if (rc != 0 && e.msg[0])
        fprintf(stderr, "collsim: %s\n", e.msg);
    return rc;
}
