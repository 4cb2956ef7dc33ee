/* Subcommand dispatch and argument parsing. Parsers reject trailing junk,
 * negative sizes and overflow instead of wrapping. */
#include "sim/cli.h"
#include "sim/version.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Where the documents are: the installed DOCDIR when it holds them, else
 * the source tree's docs/ this binary was built from (COLLSIM_SRCDOCS, the
 * Makefile's), so --help never names a folder that is not there. what is a
 * file name, or a parenthesised list. */
static void docs_line(FILE *f, const char *prog, const char *what)
{
    char p[4200];
    const char *sep = what[0] == '(' ? " " : "/";
    snprintf(p, sizeof p, "%s/cli.md", COLLSIM_DOCDIR);
    int installed = access(p, R_OK) == 0;
    snprintf(p, sizeof p, "%s/cli.md", COLLSIM_SRCDOCS);
    if (installed || !COLLSIM_SRCDOCS[0] || access(p, R_OK) != 0)
        fprintf(f, "docs: man %s; %s%s%s\n", prog, COLLSIM_DOCDIR, sep, what);
    else
        fprintf(f, "docs: man %s, once installed (make install); now the source tree's %s%s%s "
                   "(nothing is installed in %s)\n", prog, COLLSIM_SRCDOCS, sep, what,
                COLLSIM_DOCDIR);
}

void cli_print_commands(const char *prog, const cli_cmd *cmds)
{
    printf("usage: %s <command> [options]   (%s <command> --help)\n\ncommands:\n",
           prog, prog);
    for (const cli_cmd *c = cmds; c->name; c++)
        printf("  %-12s %s\n", c->name, c->summary);
    putchar('\n');
    docs_line(stdout, prog, "(cli.md, formats.md, model.md, ...)");
}

int cli_dispatch(const char *prog, const char *version, const cli_cmd *cmds,
                 int argc, char **argv, err *e)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        cli_print_commands(prog, cmds);
        return argc < 2 ? err_set(e, ERR_USAGE, "no command given") : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("%s %s\n", prog, version);
        return 0;
    }
    if (!strcmp(argv[1], "--list")) {
        for (const cli_cmd *c = cmds; c->name; c++)
            printf("%s\n", c->name);
        return 0;
    }
    for (const cli_cmd *c = cmds; c->name; c++)
        if (!strcmp(c->name, argv[1]))
            return c->run(argc - 1, argv + 1, e);
    return err_set(e, ERR_USAGE, "unknown command '%s' (try %s --help)", argv[1],
                   prog);
}

int cli_parse_size(const char *what, const char *s, uint64_t *out, err *e)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return err_set(e, ERR_USAGE, "%s: '%s' is not a size", what, s ? s : "");
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno == ERANGE)
        return err_set(e, ERR_USAGE, "%s: '%s' is not a size", what, s);
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return err_set(e, ERR_USAGE, "%s: '%s' is not a size (use N, NK, NM, NG)",
                       what, s);
    if (v > (UINT64_C(1) << 62) >> shift)
        return err_set(e, ERR_USAGE, "%s: '%s' is too large (limit 2^62 bytes)",
                       what, s);
    *out = (uint64_t)v << shift;
    return 0;
}

int cli_check_list(const char *what, const char *s, size_t max, err *e)
{
    size_t n = strlen(s);
    if (n == 0)
        return err_set(e, ERR_USAGE, "%s: empty list", what);
    if (n > max)
        return err_set(e, ERR_USAGE, "%s: list longer than %zu bytes", what, max);
    if (s[0] == ',' || s[n - 1] == ',' || strstr(s, ",,"))
        return err_set(e, ERR_USAGE, "%s: empty item in '%s'", what, s);
    return 0;
}

int cli_parse_double(const char *what, const char *s, double *out, err *e)
{
    errno = 0;
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || errno == ERANGE || !isfinite(v))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a number", what, s ? s : "");
    *out = v;
    return 0;
}

int cli_parse_long(const char *what, const char *s, long lo, long hi, long *out,
                   err *e)
{
    errno = 0;
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || errno == ERANGE)
        return err_set(e, ERR_USAGE, "%s: '%s' is not an integer", what, s ? s : "");
    if (v < lo || v > hi)
        return err_set(e, ERR_USAGE, "%s: %ld is out of range [%ld, %ld]", what, v,
                       lo, hi);
    *out = v;
    return 0;
}

void cli_help(FILE *f, const char *synopsis, const char *desc, const cli_opt *opts)
{
    fprintf(f, "usage: %s\n", synopsis);
    if (desc && *desc)
        fprintf(f, "%s\n", desc);
    fputs("options:\n", f);
    for (const cli_opt *o = opts; o->name; o++) {
        char left[64];
        int n = o->short_name ? snprintf(left, sizeof left, "-%c, --%s", o->short_name, o->name)
                              : snprintf(left, sizeof left, "    --%s", o->name);
        if (o->arg && n > 0 && (size_t)n < sizeof left)
            snprintf(left + n, sizeof left - (size_t)n, " %s", o->arg);
        fprintf(f, "  %-28s %s\n", left, o->help);
    }
    fprintf(f, "  %-28s %s\n", "-h, --help", "this help");
    docs_line(f, "collsim", "cli.md");
}

static const cli_opt *find_opt(const cli_opt *opts, const char *a, const char **inl)
{
    *inl = NULL;
    if (a[0] == '-' && a[1] == '-') {
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (const cli_opt *o = opts; o->name; o++)
            if (strlen(o->name) == len && !strncmp(o->name, name, len)) {
                *inl = eq ? eq + 1 : NULL;
                return o;
            }
        return NULL;
    }
    for (const cli_opt *o = opts; o->name; o++)
        if (o->short_name && a[1] == o->short_name) {
            *inl = a[2] ? a + 2 : NULL;
            return o;
        }
    return NULL;
}

int cli_parse(const char *cmd, const char *synopsis, const char *desc, const cli_opt *opts,
              void *ctx, int argc, char **argv, const char **pos, int maxpos, int *npos,
              err *e)
{
    *npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli_help(stdout, synopsis, desc, opts);
            return CLI_HELP_SHOWN;
        }
        if (a[0] != '-' || !a[1]) {
            if (*npos >= maxpos)
                return err_set(e, ERR_USAGE, "unexpected argument '%s' (%s --help)", a, cmd);
            pos[(*npos)++] = a;
            continue;
        }
        const char *inl;
        const cli_opt *o = find_opt(opts, a, &inl);
        if (!o)
            return err_set(e, ERR_USAGE, "unknown option '%s' (%s --help)", a, cmd);
        const char *val = NULL;
        if (o->arg) {
            if (inl)
                val = inl;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return err_set(e, ERR_USAGE, "option '%s' needs a value (%s; %s --help)", a, o->arg,
                               cmd);
        } else if (inl) {
            return err_set(e, ERR_USAGE, "option '--%s' takes no value (%s --help)", o->name, cmd);
        }
        TRY(o->set(ctx, val, e));
    }
    return 0;
}

char *cli_command_line(char *buf, size_t n, const char *prog, int argc, char **argv)
{
    size_t k = (size_t)snprintf(buf, n, "%s", prog);
    for (int i = 0; i < argc && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, " %s", argv[i]);
    return buf;
}

int cli_parse_format(const char *s, report_format *out, err *e)
{
    if (!strcmp(s, "table"))
        *out = REPORT_TABLE;
    else if (!strcmp(s, "csv"))
        *out = REPORT_CSV;
    else if (!strcmp(s, "json"))
        *out = REPORT_JSON;
    else
        return err_set(e, ERR_USAGE, "--format: '%s' (expected table, csv or json)",
                       s);
    return 0;
}

/* Optimal string alignment distance, case-insensitive; strings longer than
 * 63 characters are compared on their first 63. */
static int edit_distance(const char *a, const char *b)
{
    enum { M = 64 };
    int d[M][M];
    size_t la = strlen(a), lb = strlen(b);
    la = la < M - 1 ? la : M - 1;
    lb = lb < M - 1 ? lb : M - 1;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

const char *cli_suggest(const char *s, const char *const *names, int n)
{
    int limit = (int)strlen(s) / 3, best = -1, bestd = 0;
    if (limit < 2)
        limit = 2;
    for (int i = 0; i < n; i++) {
        if (!names[i])
            continue;
        int d = edit_distance(s, names[i]);
        /* A prefix of a longer name ("h200" for "h200-8x-nvswitch") also counts. */
        size_t ls = strlen(s);
        if (ls >= 3 && !strncasecmp(names[i], s, ls))
            d = 1;
        if (d <= limit && (best < 0 || d < bestd)) {
            best = i;
            bestd = d;
        }
    }
    return best < 0 ? NULL : names[best];
}

int cli_unknown(err *e, int code, const char *what, const char *s, const char *const *names,
                int n)
{
    char list[640];
    size_t k = 0;
    list[0] = 0;
    for (int i = 0; i < n && k < sizeof list; i++)
        if (names[i])
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", names[i]);
    const char *sug = cli_suggest(s, names, n);
    if (sug)
        return err_set(e, code, "%s: unknown '%s' (did you mean '%s'?); valid: %s", what, s, sug,
                       list);
    return err_set(e, code, "%s: unknown '%s'; valid: %s", what, s, list);
}
