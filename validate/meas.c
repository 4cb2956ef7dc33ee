/* Measurement reader. A csv file starts with `# format: collsim-meas 1`;
 * anything else is read as nccl-tests output. csv columns are found by name
 * in the header (order free, extra columns ignored, every column the kind
 * needs present); nccl-tests columns are found from its `#  size count ...`
 * header line and the first (out-of-place) time/algbw/busbw are used.
 * Every error names the file and line. Rows grow by doubling; strings live
 * in the set's arena. */
#include "validate/meas.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/coll/coll.h"
#include "models/fabric/flows.h"
#include "models/nccl/nccl_tune.h"
#include "sim/arena.h"
#include "sim/input.h"
#include "sim/line.h"
#include "sim/num.h"

enum { MAX_FIELDS = 64, MAX_ALGO_COLS = 16, MAX_META = 128, LINE_MAX_BYTES = 8192 };

struct meas_set {
    arena *a;
    const char *name;
    meas_kind kind;
    int nccl_tests;
    int nmeta;
    const char *meta_key[MAX_META], *meta_val[MAX_META];
    int nccl_ranks;              /* Rank lines seen in nccl-tests output */
    int nccl_gpus;               /* its header's nGpus (GPUs per thread), 0 if none */
    const char *nccl_coll;       /* collective named in nccl-tests text */
    const char *run_env;         /* meas_set_run_env's settings, NULL if none */
    void *rows;                  /* array of the kind's row type */
    size_t nrows, caprows, rowsize;
};

static const char *const kind_names[MEAS_NKINDS] = {
    "p2p", "flows", "host", "launch", "coll", "replay",
};
static const char *const op_names[MEAS_NOPS] = {"write", "read", "copy", "copy-write",
                                                 "copy-read", "copy-staged"};

/* Columns each csv kind needs, in the documented order. */
static const char *const xfer_cols[] = {"case", "pattern", "op", "flow", "src",
                                        "dst", "bytes", "time_us", "bw_GBps", NULL};
static const char *const launch_cols[] = {"what", "count", "time_us", NULL};
static const char *const coll_cols[] = {"size_bytes", "count", "dtype", "algo",
                                        "proto", "channels", "time_us", "algbw_GBps",
                                        "busbw_GBps", "impl", "graph", "wrong", NULL};
static const char *const replay_cols[] = {"trace", "allreduce", "cycles", "tokens",
                                          "cycle_us", "tok_per_s", "compute_us",
                                          "comm_us", "launch_us", "idle_us", NULL};

const char *meas_kind_name(meas_kind k)
{
    return (unsigned)k < MEAS_NKINDS ? kind_names[k] : NULL;
}

int meas_kind_parse(const char *s, meas_kind *out)
{
    for (int k = 0; k < MEAS_NKINDS; k++)
        if (!strcmp(s, kind_names[k])) {
            *out = (meas_kind)k;
            return 0;
        }
    return -1;
}

const char *meas_op_name(meas_op op)
{
    return (unsigned)op < MEAS_NOPS ? op_names[op] : NULL;
}

const char *meas_ep_name(int ep, char *buf)
{
    if (ep == MEAS_ANY)
        snprintf(buf, 16, "*");
    else if (MEAS_IS_HOST(ep))
        snprintf(buf, 16, "host%d", MEAS_HOST_NODE(ep));
    else
        snprintf(buf, 16, "%d", ep);
    return buf;
}

/* --- small parsing helpers ------------------------------------------------ */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* A number; "nan" or an empty cell is NaN when allow_nan, never negative. */
static int parse_num(const char *s, int allow_nan, double *out)
{
    if (!*s || !strcmp(s, "nan") || !strcmp(s, "N/A")) {
        if (!allow_nan)
            return -1;
        *out = NAN;
        return 0;
    }
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || errno || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* "3" -> 3, "host1" -> MEAS_HOST_EP(1), "*" -> MEAS_ANY. */
static int parse_ep(const char *s, int *out)
{
    long v;
    if (!strcmp(s, "*")) {
        *out = MEAS_ANY;
        return 0;
    }
    if (!strncmp(s, "host", 4) && num_long(s + 4, &v) == 0 && v >= 0 && v < 1024) {
        *out = MEAS_HOST_EP((int)v);
        return 0;
    }
    if (num_long(s, &v) == 0 && v >= 0 && v < 1 << 20) {
        *out = (int)v;
        return 0;
    }
    return -1;
}

/* Split a csv line in place (double quotes, "" inside quotes); returns the
 * field count or -1 on an unterminated quote or too many fields. */
static int csv_split(char *s, char **fields, int max)
{
    int n = 0;
    for (;;) {
        if (n == max)
            return -1;
        char *w = s;
        fields[n++] = w;
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s)
                    return -1;
                if (*s == '"' && s[1] == '"') {
                    *w++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    *w++ = *s++;
                }
            }
            if (*s && *s != ',')
                return -1;
        } else {
            while (*s && *s != ',')
                *w++ = *s++;
        }
        int more = *s == ',';
        if (*s)
            s++;
        *w = 0;
        fields[n - 1] = trim(fields[n - 1]);
        if (!more)
            return n;
    }
}

static int split_ws(char *s, char **tok, int max)
{
    int n = 0;
    for (char *p = strtok(s, " \t\r\n"); p && n < max; p = strtok(NULL, " \t\r\n"))
        tok[n++] = p;
    return n;
}

static void *push_row(meas_set *m)
{
    if (m->nrows == m->caprows) {
        size_t cap = m->caprows ? 2 * m->caprows : 64;
        void *p = realloc(m->rows, cap * m->rowsize);
        if (!p)
            return NULL;
        m->rows = p;
        m->caprows = cap;
    }
    void *r = (char *)m->rows + m->nrows++ * m->rowsize;
    memset(r, 0, m->rowsize);
    return r;
}

static const char *dup(meas_set *m, const char *s) { return arena_strdup(m->a, s); }

/* --- csv ------------------------------------------------------------------ */

typedef struct csv_ctx {
    meas_set *m;
    const char *const *need;
    int col[MAX_FIELDS];   /* need[i] -> field index */
    int nfields;
    int probe_col;         /* coll: the optional probe_us column's field, -1 if none */
} csv_ctx;

static int csv_header(csv_ctx *c, char **f, int n, long line, err *e)
{
    c->nfields = n;
    c->probe_col = -1;
    for (int j = 0; j < n && c->m->kind == MEAS_COLL; j++)
        if (!strcmp(f[j], "probe_us"))
            c->probe_col = j;
    for (int i = 0; c->need[i]; i++) {
        c->col[i] = -1;
        for (int j = 0; j < n; j++)
            if (!strcmp(f[j], c->need[i]))
                c->col[i] = j;
        if (c->col[i] < 0)
            return err_at(e, c->m->name, line, "%s data needs a column '%s'",
                          kind_names[c->m->kind], c->need[i]);
    }
    return 0;
}

#define BAD(what) err_at(e, m->name, line, "bad %s '%s'", what, cell)

static int csv_row(csv_ctx *c, char **f, int n, long line, err *e)
{
    meas_set *m = c->m;
    if (n != c->nfields)
        return err_at(e, m->name, line, "%d fields, the header has %d", n, c->nfields);
    const char *cell;
#define CELL(i) (cell = f[c->col[i]])
    void *row = push_row(m);
    if (!row)
        return err_set(e, ERR_SYSTEM, "out of memory");
    switch (m->kind) {
    case MEAS_P2P:
    case MEAS_FLOWS:
    case MEAS_HOST: {
        meas_xfer *x = row;
        long v;
        x->line = line;
        if (num_long(CELL(0), &v) || v < 0 || v > INT32_MAX)
            return BAD("case");
        x->case_id = (int)v;
        if (!*CELL(1))
            return BAD("pattern");
        int known = !strcmp(cell, "custom");
        for (int k = 0; flows_pattern_name(k); k++)
            known |= !strcmp(cell, flows_pattern_name(k));
        if (!known)
            return err_at(e, m->name, line, "unknown pattern '%s' (collsim flows --list)", cell);
        x->pattern = dup(m, cell);
        int op = -1;
        for (int k = 0; k < MEAS_NOPS; k++)
            if (!strcmp(CELL(2), op_names[k]))
                op = k;
        if (op < 0)
            return err_at(e, m->name, line, "bad op '%s' (write, read or copy)", cell);
        x->op = (meas_op)op;
        if (num_long(CELL(3), &v) || v < -1 || v > INT32_MAX)
            return BAD("flow");
        x->flow = (int)v;
        if (parse_ep(CELL(4), &x->src))
            return BAD("src");
        if (parse_ep(CELL(5), &x->dst))
            return BAD("dst");
        if ((x->flow < 0) != (x->src == MEAS_ANY) || (x->flow < 0) != (x->dst == MEAS_ANY))
            return err_at(e, m->name, line,
                          "src and dst are '*' exactly on aggregate rows (flow -1)");
        if (x->flow >= 0 && x->src == x->dst)
            return err_at(e, m->name, line, "src and dst are the same: a flow goes nowhere");
        if (num_u64(CELL(6), &x->bytes) || x->bytes == 0 || x->bytes > COLL_MAX_BYTES)
            return BAD("bytes");
        if (parse_num(CELL(7), 1, &x->time_us))
            return BAD("time_us");
        if (parse_num(CELL(8), 1, &x->bw_GBps))
            return BAD("bw_GBps");
        if (x->time_us == 0)
            return err_at(e, m->name, line, "time_us must be positive");
        /* bw = bytes / time, allowing for both printed with 2 decimals. */
        double bw = (double)x->bytes / (x->time_us * 1e3);
        if (!isnan(x->time_us) && !isnan(x->bw_GBps) && strcmp(x->pattern, "latency") &&
            fabs(bw - x->bw_GBps) > 0.02 * x->bw_GBps + 0.006 + bw * 0.006 / x->time_us)
            return err_at(e, m->name, line,
                          "bw_GBps %g does not match bytes / time_us = %g", x->bw_GBps,
                          (double)x->bytes / (x->time_us * 1e3));
        break;
    }
    case MEAS_LAUNCH: {
        meas_launch *l = row;
        l->line = line;
        if (!*CELL(0))
            return BAD("what");
        l->what = dup(m, cell);
        if (num_long(CELL(1), &l->count) || l->count < 1)
            return BAD("count");
        if (parse_num(CELL(2), 0, &l->time_us) || l->time_us <= 0)
            return BAD("time_us");
        break;
    }
    case MEAS_COLL: {
        meas_coll *k = row;
        long v;
        k->line = line;
        if (num_u64(CELL(0), &k->bytes) || k->bytes > COLL_MAX_BYTES)
            return BAD("size_bytes");
        if (num_u64(CELL(1), &k->count))
            return BAD("count");
        k->dtype = dup(m, CELL(2));
        k->algo = dup(m, *CELL(3) ? cell : "auto");
        k->proto = dup(m, *CELL(4) ? cell : "auto");
        if (num_long(CELL(5), &v) || v < 0 || v > 1024)
            return BAD("channels");
        k->channels = (int)v;
        if (parse_num(CELL(6), 0, &k->time_us) || k->time_us <= 0)
            return BAD("time_us");
        if (parse_num(CELL(7), 1, &k->algbw_GBps))
            return BAD("algbw_GBps");
        if (parse_num(CELL(8), 1, &k->busbw_GBps))
            return BAD("busbw_GBps");
        k->impl = dup(m, CELL(9));
        if (num_long(CELL(10), &v) || (v != 0 && v != 1))
            return BAD("graph");
        k->graph = (int)v;
        if (num_long(CELL(11), &k->wrong) || k->wrong < 0)
            return BAD("wrong");
        k->probe_us = 0; /* the optional column; empty or absent: none */
        if (c->probe_col >= 0 && (parse_num(cell = f[c->probe_col], 1, &k->probe_us) ||
                                  k->probe_us >= 1e4))
            return BAD("probe_us");
        if (isnan(k->probe_us))
            k->probe_us = 0;
        break;
    }
    case MEAS_REPLAY: {
        meas_replay *r = row;
        r->line = line;
        r->trace = dup(m, CELL(0));
        r->allreduce = dup(m, CELL(1));
        if (num_long(CELL(2), &r->cycles) || r->cycles < 1)
            return BAD("cycles");
        if (parse_num(CELL(3), 0, &r->tokens))
            return BAD("tokens");
        double *nums[] = {&r->cycle_us, &r->tok_per_s, &r->compute_us,
                          &r->comm_us, &r->launch_us, &r->idle_us};
        for (int i = 0; i < 6; i++)
            if (parse_num(CELL(4 + i), i > 1, nums[i]))
                return BAD(replay_cols[4 + i]);
        if (r->cycle_us <= 0)
            return err_at(e, m->name, line, "cycle_us must be positive");
        break;
    }
    default:
        ASSERTF(0, "kind %d", m->kind);
    }
#undef CELL
    return 0;
}
#undef BAD

static int add_meta(meas_set *m, const char *k, const char *v, long line, err *e)
{
    if (m->nmeta == MAX_META)
        return err_at(e, m->name, line, "more than %d metadata lines", MAX_META);
    m->meta_key[m->nmeta] = dup(m, k);
    m->meta_val[m->nmeta] = dup(m, v);
    m->nmeta++;
    return 0;
}

static int read_csv(meas_set *m, FILE *f, err *e)
{
    char buf[LINE_MAX_BYTES];
    char *fields[MAX_FIELDS];
    long line = 0;
    int have_kind = 0, have_header = 0;
    csv_ctx c = {.m = m};
    char header_text[LINE_MAX_BYTES] = "";
    size_t len;
    int st;
    while ((st = line_get(f, buf, sizeof buf, &len)) != LINE_EOF) {
        line++;
        if (st != LINE_OK)
            return line_fail(st, m->name, line, sizeof buf - 1, e);
        char *s = trim(buf);
        if (!*s)
            continue;
        if (*s == '#') {
            if (have_header)
                continue;  /* notes after the header */
            char *kv = trim(s + 1), *colon = strchr(kv, ':');
            if (!colon)
                continue;  /* a plain comment */
            *colon = 0;
            char *k = trim(kv), *v = trim(colon + 1);
            if (line == 1) {
                if (strcmp(k, "format") || strcmp(v, "collsim-meas 1"))
                    return err_at(e, m->name, line, "expected '# format: collsim-meas 1'");
                continue;
            }
            if (!strcmp(k, "kind")) {
                if (meas_kind_parse(v, &m->kind))
                    return err_at(e, m->name, line,
                                  "unknown kind '%s' (p2p, flows, host, launch, coll, replay)", v);
                have_kind = 1;
            }
            TRY(add_meta(m, k, v, line, e));
            continue;
        }
        if (!have_kind)
            return err_at(e, m->name, line, "no '# kind:' line before the data");
        if (have_header && !strcmp(s, header_text))
            continue;  /* a repeated header (files concatenated) */
        char copy[LINE_MAX_BYTES];
        memcpy(copy, s, strlen(s) + 1);
        int n = csv_split(s, fields, MAX_FIELDS);
        if (n < 0)
            return err_at(e, m->name, line, "malformed csv (quotes or more than %d fields)",
                          MAX_FIELDS);
        if (!have_header) {
            static const char *const *const need[MEAS_NKINDS] = {
                xfer_cols, xfer_cols, xfer_cols, launch_cols, coll_cols, replay_cols};
            static const size_t size[MEAS_NKINDS] = {
                sizeof(meas_xfer), sizeof(meas_xfer), sizeof(meas_xfer),
                sizeof(meas_launch), sizeof(meas_coll), sizeof(meas_replay)};
            c.need = need[m->kind];
            m->rowsize = size[m->kind];
            TRY(csv_header(&c, fields, n, line, e));
            memcpy(header_text, copy, strlen(copy) + 1);
            have_header = 1;
            continue;
        }
        TRY(csv_row(&c, fields, n, line, e));
    }
    if (ferror(f))
        return err_set(e, ERR_SYSTEM, "%s: read error", m->name);
    if (!have_header)
        return err_at(e, m->name, line, "no csv header: the file has no data");
    return 0;
}

/* Every aggregate row must belong to a case that has flow rows, in the
 * same file; a case's flows must all share its pattern. */
static int check_cases(meas_set *m, err *e)
{
    if (m->kind > MEAS_HOST)
        return 0;
    const meas_xfer *x = m->rows;
    for (size_t i = 0; i < m->nrows; i++) {
        int flows = 0;
        for (size_t j = 0; j < m->nrows; j++) {
            if (x[j].case_id != x[i].case_id)
                continue;
            if (strcmp(x[j].pattern, x[i].pattern))
                return err_at(e, m->name, x[j].line, "case %d mixes patterns '%s' and '%s'",
                              x[i].case_id, x[i].pattern, x[j].pattern);
            if (x[j].flow >= 0)
                flows++;
            if (j > i && x[j].flow == x[i].flow)
                return err_at(e, m->name, x[j].line, "case %d has flow %d twice",
                              x[i].case_id, x[i].flow);
        }
        if (!flows)
            return err_at(e, m->name, x[i].line, "case %d has no flow rows", x[i].case_id);
    }
    return 0;
}

/* --- nccl-tests ----------------------------------------------------------- */

static const struct {
    const char *needle, *coll;
} coll_names[] = {
    {"all_reduce", "allreduce"}, {"allreduce", "allreduce"},
    {"reduce_scatter", "reducescatter"}, {"reducescatter", "reducescatter"},
    {"all_gather", "allgather"}, {"allgather", "allgather"},
    {"alltoall", "alltoall"}, {"all_to_all", "alltoall"},
    {"broadcast", "broadcast"},
};

static const char *coll_in(const char *s)
{
    for (size_t i = 0; i < sizeof coll_names / sizeof coll_names[0]; i++)
        if (strstr(s, coll_names[i].needle))
            return coll_names[i].coll;
    return NULL;
}

/* "NCCL_ALGO=Ring", "NCCL_ALGO set by environment to Ring" -> "ring". */
static void env_setting(meas_set *m, const char *s, const char *var, const char *key,
                        long line, err *e)
{
    const char *p = strstr(s, var);
    if (!p || meas_meta(m, key))
        return;
    p += strlen(var);
    if (*p == '=')
        p++;
    else if (!strncmp(p, " set by environment to ", 23))
        p += 23;
    else
        return;
    char v[32];
    size_t n = 0;
    while (p[n] && !isspace((unsigned char)p[n]) && p[n] != ',' && n + 1 < sizeof v) {
        v[n] = strcmp(key, "algo") ? p[n] : (char)tolower((unsigned char)p[n]);
        n++;
    }
    v[n] = 0;
    if (n)
        (void)add_meta(m, key, v, line, e);
}

/* collsim coll's own header (after `# predicted_by: collsim`): its
 * `# key: value` lines become metadata (topology, command, graph, proto,
 * algo), as a csv file's do. */
static void collsim_meta(meas_set *m, const char *s, long line, err *e)
{
    char kv[LINE_MAX_BYTES];
    snprintf(kv, sizeof kv, "%s", s + 1);
    char *colon = strchr(kv, ':');
    if (!colon)
        return;
    *colon = 0;
    char *k = trim(kv), *v = trim(colon + 1);
    if (!*k || strpbrk(k, " \t") || meas_meta(m, k))
        return;
    (void)add_meta(m, k, v, line, e);
}

/* collsim coll --algo A,B,...: "#  size count type redop root time busbw
 * time busbw ... winner" under a line naming the algorithms, one time and
 * busbw pair per algorithm. Fills the columns; 0 if the header is not one. */
static int multi_header(char **tok, int n, int nnames, int *c_time, int *c_busbw)
{
    int groups = (n - 6) / 2;
    if (groups < 1 || groups != nnames || groups > MAX_ALGO_COLS ||
        strcmp(tok[n - 1], "winner") || strcmp(tok[2], "type"))
        return 0;
    for (int g = 0; g < groups; g++) {
        if (strcmp(tok[5 + 2 * g], "time") || strcmp(tok[6 + 2 * g], "busbw"))
            return 0;
        c_time[g] = 5 + 2 * g;
        c_busbw[g] = 6 + 2 * g;
    }
    return groups;
}

/* One size of a multi-algorithm table: a row per algorithm that ran it
 * ('-' where it cannot). graph and proto come from collsim's header. */
static int multi_row(meas_set *m, char **tok, const char *const *names, const int *c_time,
                     const int *c_busbw, int nalgo, long line, err *e)
{
    uint64_t bytes, count;
    const char *cell;
    if (num_u64(cell = tok[0], &bytes))
        return err_at(e, m->name, line, "bad size '%s'", cell);
    if (num_u64(cell = tok[1], &count))
        return err_at(e, m->name, line, "bad count '%s'", cell);
    const char *g = meas_meta(m, "graph"), *proto = meas_meta(m, "proto");
    for (int i = 0; i < nalgo; i++) {
        if (!strcmp(tok[c_time[i]], "-"))
            continue;
        meas_coll *k = push_row(m);
        if (!k)
            return err_set(e, ERR_SYSTEM, "out of memory");
        k->line = line;
        k->bytes = bytes;
        k->count = count;
        k->dtype = dup(m, tok[2]);
        if (parse_num(cell = tok[c_time[i]], 0, &k->time_us) || k->time_us <= 0)
            return err_at(e, m->name, line, "bad time '%s'", cell);
        if (parse_num(cell = tok[c_busbw[i]], 1, &k->busbw_GBps))
            return err_at(e, m->name, line, "bad busbw '%s'", cell);
        k->algbw_GBps = (double)bytes / (k->time_us * 1e3);
        k->graph = g && !strcmp(g, "1");
        k->impl = "nccl";
        k->algo = names[i];
        k->proto = proto ? proto : "auto";
    }
    return 0;
}

static int read_nccl_tests(meas_set *m, FILE *f, err *e)
{
    char buf[LINE_MAX_BYTES];
    char *tok[MAX_FIELDS];
    long line = 0;
    int ncols = 0, c_size = -1, c_count = -1, c_type = -1, c_time = -1, c_algbw = -1,
        c_busbw = -1, c_wrong = -1, graph = 0, collsim = 0;
    /* A multi-algorithm table: the algorithms and their columns. */
    int nalgo = 0, a_time[MAX_ALGO_COLS], a_busbw[MAX_ALGO_COLS];
    const char *a_name[MAX_ALGO_COLS];
    char prev[LINE_MAX_BYTES] = "";   /* the '#' line before this one */
    m->kind = MEAS_COLL;
    m->nccl_tests = 1;
    m->rowsize = sizeof(meas_coll);
    size_t len;
    int st;
    while ((st = line_get(f, buf, sizeof buf, &len)) != LINE_EOF) {
        line++;
        if (st != LINE_OK)
            return line_fail(st, m->name, line, sizeof buf - 1, e);
        char *s = trim(buf);
        if (!*s)
            continue;
        env_setting(m, s, "NCCL_ALGO", "algo", line, e);
        env_setting(m, s, "NCCL_PROTO", "proto", line, e);
        if (!m->nccl_coll)
            m->nccl_coll = coll_in(s);
        if (*s == '#') {
            char *g = strstr(s, "graph: ");
            if (strstr(s, "nThread") && g)
                graph = atoi(g + 7) != 0;
            const char *ng = strstr(s, "nGpus ");
            if (strstr(s, "nThread") && ng && atoi(ng + 6) > 0 && atoi(ng + 6) < 1 << 20)
                m->nccl_gpus = atoi(ng + 6);
            if (strstr(s, " Rank ") && strstr(s, "device"))
                m->nccl_ranks++;
            if (!strncmp(s, "# predicted_by: collsim", 23))
                collsim = 1;
            if (collsim && !ncols)
                collsim_meta(m, s, line, e);
            char copy[LINE_MAX_BYTES];
            memcpy(copy, s + 1, strlen(s));
            int n = split_ws(copy, tok, MAX_FIELDS);
            if (n >= 6 && !strcmp(tok[0], "size") && !strcmp(tok[1], "count")) {
                ncols = n;
                for (int i = n - 1; i >= 0; i--) {
                    if (!strcmp(tok[i], "size")) c_size = i;
                    if (!strcmp(tok[i], "count")) c_count = i;
                    if (!strcmp(tok[i], "type")) c_type = i;
                    if (!strcmp(tok[i], "time")) c_time = i;
                    if (!strcmp(tok[i], "algbw")) c_algbw = i;
                    if (!strcmp(tok[i], "busbw")) c_busbw = i;
                    if (!strcmp(tok[i], "#wrong") || !strcmp(tok[i], "error")) c_wrong = i;
                }
                if (c_algbw < 0 && collsim) {
                    char pcopy[LINE_MAX_BYTES];
                    char *names[MAX_FIELDS];
                    memcpy(pcopy, prev + 1, strlen(prev));
                    int nn = prev[0] ? split_ws(pcopy, names, MAX_FIELDS) : 0;
                    nalgo = multi_header(tok, n, nn, a_time, a_busbw);
                    for (int i = 0; i < nalgo; i++)
                        a_name[i] = dup(m, strcmp(names[i], "p2p") ? names[i] : "auto");
                    if (nalgo)
                        continue;
                }
                if (c_time < 0 || c_algbw < 0 || c_busbw < 0 || c_type < 0)
                    return err_at(e, m->name, line,
                                  "nccl-tests header without type/time/algbw/busbw");
            }
            snprintf(prev, sizeof prev, "%s", s);
            continue;
        }
        if (!isdigit((unsigned char)*s))
            continue;  /* NCCL INFO lines and other log output */
        if (!ncols)
            return err_at(e, m->name, line,
                          "a data row before the nccl-tests '#  size count ...' header "
                          "(is this a collsim csv without '# format: collsim-meas 1'?)");
        int n = split_ws(s, tok, MAX_FIELDS);
        if (n < ncols)
            return err_at(e, m->name, line, "%d columns, the nccl-tests header has %d", n, ncols);
        if (nalgo) {
            TRY(multi_row(m, tok, a_name, a_time, a_busbw, nalgo, line, e));
            continue;
        }
        meas_coll *k = push_row(m);
        if (!k)
            return err_set(e, ERR_SYSTEM, "out of memory");
        k->line = line;
        const char *cell;
        if (num_u64(cell = tok[c_size], &k->bytes))
            return err_at(e, m->name, line, "bad size '%s'", cell);
        if (k->bytes > COLL_MAX_BYTES)
            return err_at(e, m->name, line, "size %s is beyond 64 GiB", cell);
        if (num_u64(cell = tok[c_count], &k->count))
            return err_at(e, m->name, line, "bad count '%s'", cell);
        k->dtype = dup(m, tok[c_type]);
        if (parse_num(cell = tok[c_time], 0, &k->time_us) || k->time_us <= 0)
            return err_at(e, m->name, line, "bad time '%s'", cell);
        if (parse_num(cell = tok[c_algbw], 1, &k->algbw_GBps))
            return err_at(e, m->name, line, "bad algbw '%s'", cell);
        if (parse_num(cell = tok[c_busbw], 1, &k->busbw_GBps))
            return err_at(e, m->name, line, "bad busbw '%s'", cell);
        if (c_wrong >= 0) {
            double w;
            if (!strcmp(tok[c_wrong], "N/A"))
                w = 0;
            else if (parse_num(cell = tok[c_wrong], 0, &w))
                return err_at(e, m->name, line, "bad #wrong '%s'", cell);
            k->wrong = (long)w;
        }
        k->graph = graph;
        k->impl = "nccl";
        k->channels = 0;
        k->algo = meas_meta(m, "algo") ? meas_meta(m, "algo") : "auto";
        k->proto = meas_meta(m, "proto") ? meas_meta(m, "proto") : "auto";
    }
    if (ferror(f))
        return err_set(e, ERR_SYSTEM, "%s: read error", m->name);
    if (!m->nrows)
        return err_at(e, m->name, 0,
                      "neither a collsim measurement ('# format: collsim-meas 1') nor "
                      "nccl-tests output with data rows");
    return 0;
}

/* --- public --------------------------------------------------------------- */

static const char csv_magic[] = "# format: collsim-meas";

/* Read f as a collsim measurement file (csv) or nccl-tests output. */
static int parse(FILE *f, const char *name, int csv, meas_set **out, err *e)
{
    *out = NULL;
    meas_set *m = calloc(1, sizeof *m);
    if (!m || !(m->a = arena_new())) {
        free(m);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    m->name = dup(m, name);
    int rc = csv ? read_csv(m, f, e) : read_nccl_tests(m, f, e);
    if (!rc)
        rc = check_cases(m, e);
    if (rc) {
        meas_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int meas_read(FILE *f, const char *name, meas_set **out, err *e)
{
    char head[sizeof csv_magic] = "";
    size_t n = fread(head, 1, sizeof head - 1, f);
    rewind(f);
    return parse(f, name, n == sizeof head - 1 && !strcmp(head, csv_magic), out, e);
}

int meas_load(const char *path, meas_set **out, err *e)
{
    static const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES,
                                     .what = "a measurement file"};
    input *in;
    TRY(input_open(path, &lim, &in, e));
    size_t n;
    int csv = !strncmp(input_peek(in, sizeof csv_magic - 1, &n), csv_magic, sizeof csv_magic - 1);
    return input_close(in, parse(input_file(in), path, csv, out, e), e);
}

void meas_free(meas_set *m)
{
    if (!m)
        return;
    free(m->rows);
    arena_free(m->a);
    free(m);
}

const char *meas_name(const meas_set *m) { return m->name; }
meas_kind meas_kind_of(const meas_set *m) { return m->kind; }
int meas_is_nccl_tests(const meas_set *m) { return m->nccl_tests; }

const char *meas_meta(const meas_set *m, const char *key)
{
    for (int i = 0; i < m->nmeta; i++)
        if (!strcmp(m->meta_key[i], key))
            return m->meta_val[i];
    return NULL;
}

const char *meas_collective(const meas_set *m)
{
    const char *v = meas_meta(m, "collective");
    if (v)
        return v;
    if (m->nccl_coll)
        return m->nccl_coll;
    if ((v = meas_meta(m, "command")) && (v = coll_in(v)))
        return v;
    if ((v = coll_in(m->name)))
        return v;
    return "allreduce";
}

nccl_env meas_nccl_env(const meas_set *m, const topo *t)
{
    coll_req q0;
    coll_req_init(&q0, t);
    nccl_env env = q0.env;
    const char *nv = meas_meta(m, "nccl");
    int ver = nv ? nccl_tune_version_parse(nv) : -1;
    if (ver >= 0)
        env.version = ver;
    /* The settings the caller says the run had (meas_set_run_env) come
     * first; the --env of the file's own command line then win. */
    char buf[LINE_MAX_BYTES];
    snprintf(buf, sizeof buf, "%s", m->run_env ? m->run_env : "");
    char *save = NULL, *prev = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        nccl_env trial = env;
        err ignored = {0};
        if (coll_env_set(&trial, tok, &ignored) == 0)
            env = trial;
    }
    const char *cmd = meas_meta(m, "command");
    snprintf(buf, sizeof buf, "%s", cmd ? cmd : "");
    save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        const char *as = !strncmp(tok, "--env=", 6) ? tok + 6
                         : prev && !strcmp(prev, "--env") ? tok : NULL;
        nccl_env trial = env;
        err ignored = {0};
        if (as && coll_env_set(&trial, as, &ignored) == 0)
            env = trial;
        prev = tok;
    }
    /* A relative NCCL_GRAPH_FILE names a file beside the measurement file,
     * so a data set and its graph travel together. */
    const char *slash = strrchr(m->name, '/');
    if (env.graph_file[0] && env.graph_file[0] != '/' && slash) {
        char joined[sizeof env.graph_file];
        int len = snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - m->name), m->name,
                           env.graph_file);
        if (len > 0 && (size_t)len < sizeof joined)
            memcpy(env.graph_file, joined, sizeof joined);
    }
    return env;
}

int meas_set_run_env(meas_set *m, const char *envs, err *e)
{
    if (strlen(envs) >= LINE_MAX_BYTES)
        return err_set(e, ERR_USAGE, "%s: NCCL settings longer than %d bytes", m->name,
                       LINE_MAX_BYTES - 1);
    m->run_env = *envs ? dup(m, envs) : NULL;
    return 0;
}

const char *meas_nccl_unemulated(const meas_set *m)
{
    const char *nv = meas_meta(m, "nccl");
    return nv && nccl_tune_version_parse(nv) < 0 ? nv : NULL;
}

int meas_dtype_parse(const char *s, coll_dtype *out)
{
    if (!strcmp(s, "float32"))
        s = "fp32";
    else if (!strcmp(s, "float16"))
        s = "fp16";
    return coll_dtype_parse(s, out);
}

int meas_coll_req(const meas_set *m, const meas_coll *k, const topo *t, coll_kind kind,
                  int nranks, coll_req *q, const char **algo_name, err *e)
{
    coll_req_init(q, t);
    q->env = meas_nccl_env(m, t);
    q->kind = kind;
    q->bytes = k->bytes;
    q->nranks = nranks;
    q->channels = k->channels;
    q->graph = k->graph;
    const char *buffers = meas_meta(m, "buffers");
    q->registered = k->graph && !(buffers && !strcmp(buffers, "cudaMalloc"));
    if (meas_dtype_parse(k->dtype, &q->dtype))
        return err_at(e, meas_name(m), k->line, "unknown data type '%s'", k->dtype);
    const char *algo = k->algo;
    if (coll_algo_parse(algo, &q->algo)) {
        if (coll_algo_parse(k->impl, &q->algo))
            return err_at(e, meas_name(m), k->line, "unknown algorithm '%s'", algo);
        algo = k->impl;
    }
    if (!strcmp(k->proto, "-"))
        q->proto = PROTO_AUTO;
    else if (coll_proto_parse(k->proto, &q->proto))   /* any case */
        return err_at(e, meas_name(m), k->line, "unknown protocol '%s'", k->proto);
    if (algo_name)
        *algo_name = algo;
    return 0;
}

int64_t meas_host_probe_ps(const meas_set *m)
{
    const char *s = meas_meta(m, "host_probe");
    double launch, p2p;
    if (!s || sscanf(s, "launch-host %lf us, nccl-p2p-1-host %lf us", &launch, &p2p) != 2 ||
        !(p2p > 0 && p2p < 1e4))
        return 0;
    return (int64_t)llround(p2p * 1e6);
}

int64_t meas_nccl_issue_ps(const meas_set *m, const meas_coll *k, const topo_params *tp,
                           const coll_req *q, int channels)
{
    int64_t probe = k && k->probe_us > 0 ? (int64_t)llround(k->probe_us * 1e6)
                                         : meas_host_probe_ps(m);
    int ops = coll_p2p_ops(q->kind, q->nranks), gpus = meas_gpus_per_thread(m);
    return topo_nccl_probe_issue_ps(tp, q->graph, q->nranks, ops, gpus, probe) +
           topo_nccl_chan_issue_ps(tp, q->graph, q->nranks, ops, channels, gpus);
}

int meas_gpus_per_thread(const meas_set *m)
{
    if (m->nccl_gpus > 0)
        return m->nccl_gpus;
    const char *cmd = meas_meta(m, "command");
    int hwcheck = cmd && !strncmp(cmd, "hwcheck ", 8);
    if (!cmd || (!strstr(cmd, "_perf") && !hwcheck))
        return 1;
    /* hwcheck drives every GPU of the run from one thread (its -g). */
    if (hwcheck && meas_ranks(m) > 0)
        return meas_ranks(m);
    char buf[LINE_MAX_BYTES];
    snprintf(buf, sizeof buf, "%s", cmd);
    char *save = NULL, *prev = NULL;
    long v = 1;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        const char *num = prev && (!strcmp(prev, "-g") || !strcmp(prev, "--ngpus")) ? tok
                          : !strncmp(tok, "--ngpus=", 8)                             ? tok + 8
                          : !strncmp(tok, "-g", 2) && tok[2]                         ? tok + 2
                                                                                     : NULL;
        long n;
        if (num && num_long(num, &n) == 0 && n > 0 && n < 1 << 20)
            v = n;
        prev = tok;
    }
    return (int)v;
}

int meas_ranks(const meas_set *m)
{
    long v;
    const char *s = meas_meta(m, "ranks");
    if (s && num_long(s, &v) == 0 && v > 0 && v < 1 << 20)
        return (int)v;
    /* hwcheck --virtual-ranks: "8 (on GPU 0, ...)". */
    if ((s = meas_meta(m, "virtual_ranks")) && (v = strtol(s, NULL, 10)) > 0 && v < 1 << 20)
        return (int)v;
    if (m->nccl_ranks)
        return m->nccl_ranks;
    /* hwcheck: "0: NAME (bus, N SMs); 1: ..."; else a comma-separated name list. */
    if ((s = meas_meta(m, "gpus")) && *s) {
        char sep = strchr(s, ';') || (isdigit((unsigned char)s[0]) && strchr(s, ':')) ? ';' : ',';
        int n = 1;
        for (; *s; s++)
            n += *s == sep;
        return n;
    }
    return 0;
}

int meas_virtual_ranks(const meas_set *m)
{
    const char *s = meas_meta(m, "virtual_ranks");
    long v = s ? strtol(s, NULL, 10) : 0;
    return v > 0 && v < 1 << 20 ? (int)v : 0;
}

size_t meas_nxfer(const meas_set *m) { return m->kind <= MEAS_HOST ? m->nrows : 0; }
const meas_xfer *meas_xfer_at(const meas_set *m, size_t i)
{
    ASSERTF(m->kind <= MEAS_HOST && i < m->nrows, "i=%zu", i);
    return (const meas_xfer *)m->rows + i;
}
size_t meas_nlaunch(const meas_set *m) { return m->kind == MEAS_LAUNCH ? m->nrows : 0; }
const meas_launch *meas_launch_at(const meas_set *m, size_t i)
{
    ASSERTF(m->kind == MEAS_LAUNCH && i < m->nrows, "i=%zu", i);
    return (const meas_launch *)m->rows + i;
}
size_t meas_ncoll(const meas_set *m) { return m->kind == MEAS_COLL ? m->nrows : 0; }
const meas_coll *meas_coll_at(const meas_set *m, size_t i)
{
    ASSERTF(m->kind == MEAS_COLL && i < m->nrows, "i=%zu", i);
    return (const meas_coll *)m->rows + i;
}
size_t meas_nreplay(const meas_set *m) { return m->kind == MEAS_REPLAY ? m->nrows : 0; }
const meas_replay *meas_replay_at(const meas_set *m, size_t i)
{
    ASSERTF(m->kind == MEAS_REPLAY && i < m->nrows, "i=%zu", i);
    return (const meas_replay *)m->rows + i;
}
