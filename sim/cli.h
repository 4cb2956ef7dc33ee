/* Command-line helpers shared by collsim and hwcheck: the subcommand table,
 * size and number parsing with K/M/G suffixes (powers of two), --format. */
#ifndef SIM_CLI_H
#define SIM_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"
#include "sim/report.h"

/* A subcommand: run() returns an exit code (enum err_code) and fills e. */
typedef int cli_run_fn(int argc, char **argv, err *e);
typedef struct cli_cmd {
    const char *name;
    const char *summary;
    cli_run_fn *run;
} cli_cmd;

/* Dispatch argv[1] through a table ending in a {NULL} entry; handles
 * --help/-h/--version/--list. prog names the binary in messages. */
int cli_dispatch(const char *prog, const char *version, const cli_cmd *cmds,
                 int argc, char **argv, err *e);
/* Print "usage: ..." lines for a table (used by --help). */
void cli_print_commands(const char *prog, const cli_cmd *cmds);

/* "4096", "4K", "16M", "1G" (powers of two) -> bytes; ERR_USAGE naming what
 * on junk, negative values or overflow past 2^62. */
int cli_parse_size(const char *what, const char *s, uint64_t *out, err *e);
int cli_parse_double(const char *what, const char *s, double *out, err *e);
int cli_parse_long(const char *what, const char *s, long lo, long hi, long *out,
                   err *e);
/* "prog arg1 arg2 ..." into buf (n bytes, truncated), for the command line
 * recorded in output files; returns buf. */
char *cli_command_line(char *buf, size_t n, const char *prog, int argc, char **argv);
/* table|csv|json -> report_format; ERR_USAGE otherwise. */
int cli_parse_format(const char *s, report_format *out, err *e);

#endif
