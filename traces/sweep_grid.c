/* Sweep grid parser. Lines are tokenised on blanks after '#' comments are cut;
 * all strings live in the grid's arena, arrays grow with realloc. A run number
 * is decoded in mixed radix (input, combo, vary axes in file order, the last
 * axis least significant), so a grid of any size costs memory only for what
 * the file says. Invariants: every key appears in at most one of set, one
 * vary line or the combo lines; values have no blanks, ',' or '"', so csv
 * knob cells never need quoting. */
#include "traces/sweep_grid.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/arena.h"
#include "sim/input.h"
#include "sim/line.h"

enum { MAX_RUNS_LOG10 = 8, GRID_LINE_MAX = 65536 };
#define MAX_RUNS 100000000L   /* more is a typo, not a sweep (and 8 bytes each) */

typedef struct input {
    sweep_kind kind;
    const char *name, *path;
    long line;
} input;

typedef struct axis {
    int col;
    int nvals;
    const char **vals;
} axis;

typedef struct combo {
    const char *val[SWEEP_MAX_KEYS];
} combo;

struct sweep_grid {
    arena *a;
    const char *name;
    const char *dir;
    input *in;
    int nin;
    const char *col[SWEEP_MAX_KEYS];
    long col_line[SWEEP_MAX_KEYS];
    int col_vary[SWEEP_MAX_KEYS];  /* 1 = from a vary line, 0 = from combos */
    int ncols;
    axis ax[SWEEP_MAX_KEYS];
    int nax;
    combo *co;
    int nco;
    sweep_entry *ent;
    int nent;
    long runs;
};

/* Grow *p (n elements of size sz) by one; returns the new element or NULL. */
static void *push(void *p, int *n, size_t sz)
{
    void **pp = p;
    void *q = realloc(*pp, (size_t)(*n + 1) * sz);
    if (!q)
        return NULL;
    *pp = q;
    char *el = (char *)q + (size_t)(*n)++ * sz;
    memset(el, 0, sz);
    return el;
}

static int oom(err *e) { return err_set(e, ERR_SYSTEM, "sweep grid: out of memory"); }

const char *sweep_kind_name(sweep_kind k) { return k == SWEEP_TRACE ? "trace" : "scenario"; }

static int key_ok(const char *k)
{
    if (!*k)
        return 0;
    for (; *k; k++)
        if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
              (*k >= '0' && *k <= '9') || *k == '_' || *k == '.' || *k == '-'))
            return 0;
    return 1;
}

static int value_ok(const char *v) { return *v && !strpbrk(v, ",\""); }

/* Relative paths are taken from the grid file's folder. */
static char *resolve(sweep_grid *g, const char *p)
{
    if (p[0] == '/' || !g->dir[0])
        return arena_strdup(g->a, p);
    size_t n = strlen(g->dir) + strlen(p) + 2;
    char *s = arena_alloc(g->a, n);
    if (s)
        snprintf(s, n, "%s/%s", g->dir, p);
    return s;
}

static int add_input(sweep_grid *g, sweep_kind kind, const char *name, const char *path,
                     long line, err *e)
{
    if (strpbrk(name, "\n\r"))
        return err_at(e, g->name, line, "input name '%s' has a line break", name);
    input *in = push(&g->in, &g->nin, sizeof *in);
    if (!in)
        return oom(e);
    in->kind = kind;
    in->name = arena_strdup(g->a, name);
    in->path = path;
    in->line = line;
    return in->name ? 0 : oom(e);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A scenario is a file if one exists at its resolved path, else a built-in name. */
static int add_scenario(sweep_grid *g, const char *tok, long line, err *e)
{
    char *path = resolve(g, tok);
    struct stat st;
    if (!path)
        return oom(e);
    return add_input(g, SWEEP_SCENARIO, tok,
                     stat(path, &st) == 0 ? path : arena_strdup(g->a, tok), line, e);
}

/* A trace path, or a folder: then each of its files (not dot-files), sorted. */
static int add_trace(sweep_grid *g, const char *tok, long line, err *e)
{
    char *path = resolve(g, tok);
    struct stat st;
    if (!path)
        return oom(e);
    if (stat(path, &st) != 0)
        return err_at(e, g->name, line, "trace '%s': %s", tok, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return add_input(g, SWEEP_TRACE, tok, path, line, e);
    DIR *d = opendir(path);
    if (!d)
        return err_at(e, g->name, line, "trace folder '%s': %s", tok, strerror(errno));
    char **names = NULL;
    int n = 0, rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char **slot = push(&names, &n, sizeof *names);
        if (!slot || !(*slot = arena_strdup(g->a, de->d_name)))
            rc = oom(e);
    }
    closedir(d);
    if (!rc && n)
        qsort(names, (size_t)n, sizeof *names, cmp_str);
    size_t tl = strlen(tok);
    while (tl > 1 && tok[tl - 1] == '/')
        tl--;
    int found = 0;
    for (int i = 0; i < n && !rc; i++) {
        size_t k = tl + strlen(names[i]) + 2;
        char *nm = arena_alloc(g->a, k);
        if (!nm)
            rc = oom(e);
        else
            snprintf(nm, k, "%.*s/%s", (int)tl, tok, names[i]);
        char *p = rc ? NULL : resolve(g, nm);
        if (!rc && !p)
            rc = oom(e);
        if (!rc && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            rc = add_input(g, SWEEP_TRACE, nm, p, line, e);
            found++;
        }
    }
    free(names);
    if (!rc && !found)
        rc = err_at(e, g->name, line, "trace folder '%s' has no files", tok);
    return rc;
}

static int find_col(const sweep_grid *g, const char *key)
{
    for (int i = 0; i < g->ncols; i++)
        if (!strcmp(g->col[i], key))
            return i;
    return -1;
}

static int add_entry(sweep_grid *g, const char *key, const char *value, long line,
                     int fixed, err *e)
{
    sweep_entry *en = push(&g->ent, &g->nent, sizeof *en);
    if (!en)
        return oom(e);
    *en = (sweep_entry){key, value, line, fixed};
    return 0;
}

/* Split "KEY=VALUE"; the key must be new to set/vary, or (combo) a combo key. */
static int split_kv(sweep_grid *g, char *tok, long line, const char *what, char **key,
                    char **value, err *e)
{
    char *eq = strchr(tok, '=');
    if (!eq)
        return err_at(e, g->name, line, "%s: expected KEY=VALUE, got '%s'", what, tok);
    *eq = '\0';
    *key = tok;
    *value = eq + 1;
    if (!key_ok(tok))
        return err_at(e, g->name, line, "%s: bad key '%s' (letters, digits, _ . -)", what,
                      tok);
    return 0;
}

static int key_taken(sweep_grid *g, const char *key, long line, int in_combo, err *e)
{
    for (int i = 0; i < g->nent; i++)
        if (g->ent[i].fixed && !strcmp(g->ent[i].key, key))
            return err_at(e, g->name, line, "key '%s' is already set on line %ld", key,
                          g->ent[i].line);
    int c = find_col(g, key);
    if (c >= 0 && (g->col_vary[c] || !in_combo))
        return err_at(e, g->name, line, "key '%s' is already %s on line %ld", key,
                      g->col_vary[c] ? "varied" : "in a combo", g->col_line[c]);
    return 0;
}

static int new_col(sweep_grid *g, const char *key, long line, int vary, err *e)
{
    if (g->ncols >= SWEEP_MAX_KEYS) {
        /* -1, not err_at's code: callers read a column index or < 0. */
        err_at(e, g->name, line, "more than %d varied or combo keys", SWEEP_MAX_KEYS);
        return -1;
    }
    g->col[g->ncols] = key;
    g->col_line[g->ncols] = line;
    g->col_vary[g->ncols] = vary;
    return g->ncols++;
}

static int parse_set(sweep_grid *g, char *tok, long line, err *e)
{
    char *k, *v;
    TRY(split_kv(g, tok, line, "set", &k, &v, e));
    if (!value_ok(v))
        return err_at(e, g->name, line, "set %s: empty value or one with ',' or '\"'", k);
    TRY(key_taken(g, k, line, 0, e));
    return add_entry(g, arena_strdup(g->a, k), arena_strdup(g->a, v), line, 1, e);
}

static int parse_vary(sweep_grid *g, char *tok, long line, err *e)
{
    char *k, *v;
    TRY(split_kv(g, tok, line, "vary", &k, &v, e));
    TRY(key_taken(g, k, line, 0, e));
    const char *key = arena_strdup(g->a, k);
    int c = new_col(g, key, line, 1, e);
    if (c < 0)
        return e->code;
    axis *ax = &g->ax[g->nax++];
    ax->col = c;
    for (char *s = v;;) {
        char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (n == 0 || memchr(s, '"', n))
            return err_at(e, g->name, line, "vary %s: empty value or one with '\"'", key);
        const char *val = arena_strndup(g->a, s, n);
        for (int i = 0; i < ax->nvals; i++)
            if (!strcmp(ax->vals[i], val))
                return err_at(e, g->name, line, "vary %s: value '%s' given twice", key, val);
        const char **slot = push(&ax->vals, &ax->nvals, sizeof *ax->vals);
        if (!slot)
            return oom(e);
        *slot = val;
        TRY(add_entry(g, key, val, line, 0, e));
        if (!comma)
            break;
        s = comma + 1;
    }
    return 0;
}

static int parse_combo(sweep_grid *g, char **tok, int ntok, long line, err *e)
{
    if (ntok < 2)
        return err_at(e, g->name, line, "combo: expected KEY=VALUE...");
    combo *co = push(&g->co, &g->nco, sizeof *co);
    if (!co)
        return oom(e);
    for (int t = 1; t < ntok; t++) {
        char *k, *v;
        TRY(split_kv(g, tok[t], line, "combo", &k, &v, e));
        if (!value_ok(v))
            return err_at(e, g->name, line, "combo %s: empty value or one with ',' or '\"'",
                          k);
        TRY(key_taken(g, k, line, 1, e));
        int c = find_col(g, k);
        if (c < 0 && (c = new_col(g, arena_strdup(g->a, k), line, 0, e)) < 0)
            return e->code;
        if (co->val[c])
            return err_at(e, g->name, line, "combo: key '%s' given twice", k);
        co->val[c] = arena_strdup(g->a, v);
        TRY(add_entry(g, g->col[c], co->val[c], line, 0, e));
    }
    return 0;
}

/* One directive line, already cut into tokens. */
static int parse_line(sweep_grid *g, char **tok, int ntok, long line, err *e)
{
    const char *d = tok[0];
    if (!strcmp(d, "scenario") || !strcmp(d, "trace")) {
        if (ntok < 2)
            return err_at(e, g->name, line, "%s: expected at least one name", d);
        for (int t = 1; t < ntok; t++)
            TRY(d[0] == 's' ? add_scenario(g, tok[t], line, e) : add_trace(g, tok[t], line, e));
        return 0;
    }
    if (!strcmp(d, "set") || !strcmp(d, "vary")) {
        if (ntok != 2)
            return err_at(e, g->name, line, "%s: expected one KEY=%s", d,
                          d[0] == 's' ? "VALUE" : "V1,V2,...");
        return d[0] == 's' ? parse_set(g, tok[1], line, e) : parse_vary(g, tok[1], line, e);
    }
    if (!strcmp(d, "combo"))
        return parse_combo(g, tok, ntok, line, e);
    return err_at(e, g->name, line, "unknown directive '%s' (scenario, trace, set, vary, combo)",
                  d);
}

static int count_runs(sweep_grid *g, err *e)
{
    if (g->nin == 0)
        return err_at(e, g->name, 0, "no scenario or trace line: nothing to run");
    long runs = g->nin;
    long mul[SWEEP_MAX_KEYS + 1];
    int nmul = 0;
    mul[nmul++] = g->nco ? g->nco : 1;
    for (int i = 0; i < g->nax; i++)
        mul[nmul++] = g->ax[i].nvals;
    for (int i = 0; i < nmul; i++) {
        if (runs > MAX_RUNS / mul[i])
            return err_at(e, g->name, 0, "the grid has more than 10^%d runs",
                          MAX_RUNS_LOG10);
        runs *= mul[i];
    }
    g->runs = runs;
    return 0;
}

int sweep_grid_parse(FILE *f, const char *name, const char *dir, sweep_grid **out, err *e)
{
    *out = NULL;
    sweep_grid *g = calloc(1, sizeof *g);
    if (!g || !(g->a = arena_new())) {
        free(g);
        return oom(e);
    }
    g->name = arena_strdup(g->a, name);
    g->dir = arena_strdup(g->a, dir ? dir : "");
    char *buf = NULL;
    size_t cap = 0;
    long line = 0;
    int rc = 0, header = 0;
    size_t len;
    int st;
    while (!rc && (st = line_read(f, &buf, &cap, GRID_LINE_MAX, &len)) != LINE_EOF) {
        line++;
        if (st != LINE_OK) {
            rc = line_fail(st, g->name, line, GRID_LINE_MAX, e);
            break;
        }
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        char *tok[SWEEP_MAX_KEYS + 2];
        int ntok = 0;
        char *save = NULL;
        const char *blank = " \t\r\n";
        for (char *s = strtok_r(buf, blank, &save); s; s = strtok_r(NULL, blank, &save)) {
            if (ntok == SWEEP_MAX_KEYS + 2) {
                rc = err_at(e, g->name, line, "too many words (at most %d)", ntok);
                break;
            }
            tok[ntok++] = s;
        }
        if (rc || ntok == 0)
            continue;
        if (!header) {
            if (ntok != 2 || strcmp(tok[0], "collsim-grid") != 0)
                rc = err_at(e, g->name, line, "expected 'collsim-grid 1' as the first line");
            else if (strcmp(tok[1], "1") != 0)
                rc = err_at(e, g->name, line, "collsim-grid version %s is not supported (1)",
                            tok[1]);
            header = 1;
            continue;
        }
        rc = parse_line(g, tok, ntok, line, e);
    }
    free(buf);
    if (!rc && ferror(f))
        rc = err_set(e, ERR_SYSTEM, "%s: read error", g->name);
    if (!rc && !header)
        rc = err_at(e, g->name, 0, "empty file (expected 'collsim-grid 1')");
    if (!rc)
        rc = count_runs(g, e);
    if (rc) {
        sweep_grid_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int sweep_grid_load(const char *path, sweep_grid **out, err *e)
{
    static const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES, .what = "a sweep grid"};
    input *in;
    TRY(input_open(path, &lim, &in, e));
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        dir[0] = '\0';
    if (slash == path)
        snprintf(dir, sizeof dir, "/");
    return input_close(in, sweep_grid_parse(input_file(in), path, dir, out, e), e);
}

void sweep_grid_free(sweep_grid *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nax; i++)
        free(g->ax[i].vals);
    free(g->in);
    free(g->co);
    free(g->ent);
    arena_free(g->a);
    free(g);
}

const char *sweep_grid_name(const sweep_grid *g) { return g->name; }
long sweep_grid_runs(const sweep_grid *g) { return g->runs; }
int sweep_grid_ncols(const sweep_grid *g) { return g->ncols; }
const char *sweep_grid_col(const sweep_grid *g, int i) { return g->col[i]; }
int sweep_grid_nentries(const sweep_grid *g) { return g->nent; }
sweep_entry sweep_grid_entry(const sweep_grid *g, int i) { return g->ent[i]; }
int sweep_grid_ninputs(const sweep_grid *g) { return g->nin; }

int sweep_grid_nfixed(const sweep_grid *g)
{
    int n = 0;
    for (int i = 0; i < g->nent; i++)
        n += g->ent[i].fixed;
    return n;
}

void sweep_grid_fixed(const sweep_grid *g, int i, const char **key, const char **value)
{
    for (int k = 0; k < g->nent; k++)
        if (g->ent[k].fixed && i-- == 0) {
            *key = g->ent[k].key;
            *value = g->ent[k].value;
            return;
        }
    ASSERTF(0, "fixed knob %d out of range", i);
}

long sweep_grid_input(const sweep_grid *g, int i, sweep_kind *kind, const char **name,
                      const char **path)
{
    *kind = g->in[i].kind;
    *name = g->in[i].name;
    *path = g->in[i].path;
    return g->in[i].line;
}

void sweep_grid_point(const sweep_grid *g, long run, sweep_point *pt)
{
    ASSERTF(run >= 0 && run < g->runs, "run %ld of %ld", run, g->runs);
    memset(pt, 0, sizeof *pt);
    pt->run = run;
    long r = run;
    for (int i = g->nax - 1; i >= 0; i--) {
        const axis *ax = &g->ax[i];
        pt->val[ax->col] = ax->vals[r % ax->nvals];
        r /= ax->nvals;
    }
    if (g->nco) {
        const combo *co = &g->co[r % g->nco];
        r /= g->nco;
        for (int c = 0; c < g->ncols; c++)
            if (!g->col_vary[c])
                pt->val[c] = co->val[c];
    }
    const input *in = &g->in[r];
    pt->kind = in->kind;
    pt->input = in->name;
    pt->path = in->path;
}
