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
/* A comma list "a,b,c": ERR_USAGE naming what if it is empty or has an empty
 * item ("a,", ",a", "a,,b"), or is longer than max bytes. */
int cli_check_list(const char *what, const char *s, size_t max, err *e);
int cli_parse_long(const char *what, const char *s, long lo, long hi, long *out,
                   err *e);
/* An option of a command: a static table of these drives parsing and --help.
 * set() stores the value into the command's context (arg is NULL for a flag;
 * a repeatable option accumulates); it returns 0 or ERR_USAGE naming the
 * option. The table ends with a {NULL} entry. */
typedef int cli_set_fn(void *ctx, const char *arg, err *e);
typedef struct cli_opt {
    const char *name;   /* long name without "--" */
    char short_name;    /* 0 if none */
    const char *arg;    /* placeholder ("N", "FILE"); NULL for a flag */
    const char *help;   /* one line */
    cli_set_fn *set;
} cli_opt;

enum { CLI_HELP_SHOWN = -1 };
/* Parse argv[1..argc-1] against opts: "--name VALUE", "--name=VALUE", "-x VALUE",
 * "-xVALUE"; other words are positional, stored in pos (at most maxpos) with
 * their count in *npos. "--help"/"-h" prints cli_help to stdout and returns
 * CLI_HELP_SHOWN. ERR_USAGE on an unknown option, a missing value or too many
 * positionals (message names the command). */
int cli_parse(const char *cmd, const char *synopsis, const char *desc, const cli_opt *opts,
              void *ctx, int argc, char **argv, const char **pos, int maxpos, int *npos,
              err *e);
/* The help generated from a table: "usage: SYNOPSIS", desc, one line per option. */
void cli_help(FILE *f, const char *synopsis, const char *desc, const cli_opt *opts);

/* "prog arg1 arg2 ..." into buf (n bytes, truncated), for the command line
 * recorded in output files; returns buf. */
char *cli_command_line(char *buf, size_t n, const char *prog, int argc, char **argv);
/* The name in names[0..n-1] closest to s by edit distance (insertions,
 * deletions, substitutions, adjacent swaps; case ignored), or NULL when none
 * is within max(2, strlen(s)/3) edits. NULL entries in names are skipped. */
const char *cli_suggest(const char *s, const char *const *names, int n);
/* Set e to code with "WHAT: unknown 'S' (did you mean 'X'?); valid: a, b, c"
 * (the suggestion only when there is one); returns code. */
int cli_unknown(err *e, int code, const char *what, const char *s, const char *const *names,
                int n);
/* table|csv|json -> report_format; ERR_USAGE otherwise. */
int cli_parse_format(const char *s, report_format *out, err *e);

#endif
