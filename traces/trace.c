/* Reader and writer of the `collsim-trace 1` format (docs/formats.md).
 * The reader goes through sim/input (plain or gzip, found by its magic
 * bytes), the writer through zlib when the written name ends in .gz. The
 * reader keeps one line (<= 4 KiB) and the header's meta lines; a truncated
 * or corrupted gzip stream is reported
 * as ERR_INPUT at the line where it broke. The writer writes into a temporary
 * file (sim/ofile.h) so a failed run never leaves a partial trace. */
#include "traces/trace.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "sim/input.h"
#include "sim/line.h"
#include "sim/ofile.h"

enum { LINE_MAX_BYTES = 4096, META_MAX = 32 };   /* lines of at most 4,095 bytes */
#define TRACE_MAX_BYTES (4ull << 30)

static const char *const phase_names[PHASE_N] = {"decode", "draft", "verify", "prefill",
                                                 "other"};

struct trace_reader {
    input *in;
    char path[512];
    long line;
    char buf[LINE_MAX_BYTES];
    int nmeta;
    char meta_key[META_MAX][48];
    char meta_val[META_MAX][256];
    long meta_line[META_MAX];
    int pending;          /* buf holds the first op line, not yet returned */
    int default_group;    /* meta ranks */
    int default_graph;    /* meta graph */
};

struct trace_writer {
    ofile of;
    gzFile gz;            /* NULL for plain output */
    int failed;
    long lines;
};

const char *trace_phase_name(trace_phase p)
{
    return (unsigned)p < PHASE_N ? phase_names[p] : "?";
}

int trace_phase_parse(const char *s, trace_phase *out)
{
    for (int i = 0; i < PHASE_N; i++)
        if (!strcmp(s, phase_names[i])) {
            *out = (trace_phase)i;
            return 0;
        }
    return -1;
}

void trace_op_init(trace_op *op, trace_op_kind kind)
{
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->kernels = (kind == OP_COMPUTE || kind == OP_COLL) ? 1 : 0;
    op->measured_us = -1;
    op->wait_us = -1;
    op->issue_us = -1;
    op->graph = -1;
    op->dtype = DTYPE_BF16;
    op->algo = ALGO_AUTO;
    op->coll = COLL_ALLREDUCE;
}

/* ---- reading ------------------------------------------------------------ */

/* Read the next line into r->buf without its newline; 1 = got one, 0 = EOF. */
static int read_line(trace_reader *r, err *e)
{
    size_t n;
    int st = line_get(input_file(r->in), r->buf, sizeof r->buf, &n);
    if (st == LINE_EOF)
        return input_error(r->in, e);
    if (++r->line > TRACE_MAX_LINES)
        return err_at(e, r->path, r->line, "more than %ld lines: not a trace this tool replays "
                      "(split it)", (long)TRACE_MAX_LINES);
    int failed = st == LINE_OK ? 0 : input_error(r->in, e);
    if (st != LINE_OK)
        return failed ? failed : line_fail(st, r->path, r->line, sizeof r->buf - 1, e);
    if (n > 0 && r->buf[n - 1] == '\r')
        r->buf[--n] = 0;
    char *hash = strchr(r->buf, '#');
    if (hash)
        *hash = 0;
    return 1;
}

static long meta_line(const trace_reader *r, const char *key)
{
    for (int i = 0; i < r->nmeta; i++)
        if (!strcmp(r->meta_key[i], key))
            return r->meta_line[i];
    return 0;
}

static int is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t')
            return 0;
    return 1;
}

int trace_open(const char *path, trace_reader **out, err *e)
{
    *out = NULL;
    trace_reader *r = calloc(1, sizeof *r);
    if (!r)
        return err_set(e, ERR_SYSTEM, "out of memory");
    snprintf(r->path, sizeof r->path, "%s", path);
    static const input_limits lim = {.max_bytes = TRACE_MAX_BYTES, .what = "a trace",
                                     .gzip = 1};
    int rc = input_open(path, &lim, &r->in, e);
    if (rc) {
        free(r);
        return rc;
    }
    r->default_graph = 0;
    rc = read_line(r, e);
    if (rc < 0 || rc > 1) {
        trace_close(r);
        return rc;
    }
    if (rc == 0 || strncmp(r->buf, "collsim-trace ", 14) != 0) {
        rc = err_at(e, path, 1, "not a collsim trace (first line must be 'collsim-trace 1')");
        trace_close(r);
        return rc;
    }
    if (strcmp(r->buf + 14, "1") != 0 && strncmp(r->buf + 14, "1 ", 2) != 0) {
        rc = err_at(e, path, 1, "unsupported trace version '%s' (this collsim reads 1)",
                      r->buf + 14);
        trace_close(r);
        return rc;
    }
    for (;;) {
        rc = read_line(r, e);
        if (rc == 0)
            break;
        if (rc != 1) {
            trace_close(r);
            return rc;
        }
        if (is_blank(r->buf))
            continue;
        char *p = r->buf + strspn(r->buf, " \t");
        if (strncmp(p, "meta", 4) != 0 || (p[4] != ' ' && p[4] != '\t')) {
            r->pending = 1;
            break;
        }
        p += 4 + strspn(p + 4, " \t");
        size_t klen = strcspn(p, " \t");
        if (klen == 0 || klen >= sizeof r->meta_key[0]) {
            rc = err_at(e, path, r->line, "bad meta line (want 'meta KEY VALUE')");
            trace_close(r);
            return rc;
        }
        if (r->nmeta == META_MAX) {
            rc = err_at(e, path, r->line, "more than %d meta lines", META_MAX);
            trace_close(r);
            return rc;
        }
        memcpy(r->meta_key[r->nmeta], p, klen);
        r->meta_key[r->nmeta][klen] = 0;
        for (int i = 0; i < r->nmeta; i++)
            if (!strcmp(r->meta_key[i], r->meta_key[r->nmeta])) {
                rc = err_at(e, path, r->line, "meta %s given twice", r->meta_key[i]);
                trace_close(r);
                return rc;
            }
        p += klen;
        p += strspn(p, " \t");
        size_t vlen = strlen(p);
        while (vlen > 0 && (p[vlen - 1] == ' ' || p[vlen - 1] == '\t'))
            vlen--;
        if (vlen >= sizeof r->meta_val[0])
            vlen = sizeof r->meta_val[0] - 1;
        memcpy(r->meta_val[r->nmeta], p, vlen);
        r->meta_val[r->nmeta][vlen] = 0;
        r->meta_line[r->nmeta] = r->line;
        r->nmeta++;
    }
    const char *v = trace_meta(r, "ranks");
    if (v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 1 << 20) {
            rc = err_at(e, path, meta_line(r, "ranks"), "meta ranks '%s' is not a positive "
                        "integer", v);
            trace_close(r);
            return rc;
        }
        r->default_group = (int)n;
    }
    v = trace_meta(r, "graph");
    if (v) {
        if (strcmp(v, "0") && strcmp(v, "1")) {
            rc = err_at(e, path, meta_line(r, "graph"), "meta graph '%s' must be 0 or 1", v);
            trace_close(r);
            return rc;
        }
        r->default_graph = v[0] == '1';
    }
    *out = r;
    return 0;
}

void trace_close(trace_reader *r)
{
    if (!r)
        return;
    input_close(r->in, 0, NULL);
    free(r);
}

const char *trace_meta(const trace_reader *r, const char *key)
{
    for (int i = 0; i < r->nmeta; i++)
        if (!strcmp(r->meta_key[i], key))
            return r->meta_val[i];
    return NULL;
}

long trace_line(const trace_reader *r) { return r->line; }

static int parse_num(trace_reader *r, const char *what, const char *s, double lo,
                     double *out, err *e)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo)
        return err_at(e, r->path, r->line, "bad %s '%s'", what, s);
    /* Times are microseconds and counts tokens: past 1e12 (11.6 days) is
     * not a trace, and beyond 2^62 ps a time no longer fits the replay. */
    if (v > TRACE_MAX_VALUE)
        return err_at(e, r->path, r->line, "%s '%s' is out of range (at most %g)", what, s,
                      TRACE_MAX_VALUE);
    *out = v;
    return 0;
}

static int parse_int(trace_reader *r, const char *what, const char *s, long lo, long hi,
                     long *out, err *e)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return err_at(e, r->path, r->line, "bad %s '%s' (want an integer in %ld..%ld)", what,
                      s, lo, hi);
    *out = v;
    return 0;
}

/* Which key=value fields each directive accepts. */
enum { F_STREAM = 1, F_KERNELS = 2, F_NAME = 4, F_GROUP = 8, F_DTYPE = 16, F_ALGO = 32,
       F_MEAS = 64, F_WAIT = 128, F_GRAPH = 256, F_ISSUE = 512 };

static int parse_field(trace_reader *r, trace_op *op, char *w, unsigned allowed,
                       unsigned *seen, err *e)
{
    char *eq = strchr(w, '=');
    if (!eq || eq == w)
        return err_at(e, r->path, r->line, "unexpected word '%s' (fields are key=value)", w);
    *eq = 0;
    const char *k = w, *v = eq + 1;
    static const struct { const char *key; unsigned bit; } bits[] = {
        {"stream", F_STREAM}, {"kernels", F_KERNELS}, {"name", F_NAME}, {"group", F_GROUP},
        {"dtype", F_DTYPE}, {"algo", F_ALGO}, {"measured_us", F_MEAS}, {"wait_us", F_WAIT},
        {"graph", F_GRAPH}, {"issue_us", F_ISSUE}};
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (!strcmp(k, bits[i].key)) {
            if (*seen & bits[i].bit)
                return err_at(e, r->path, r->line, "key '%s' given twice", k);
            *seen |= bits[i].bit;
        }
    long n;
    double d;
    if (!strcmp(k, "stream") && (allowed & F_STREAM)) {
        TRY(parse_int(r, "stream", v, 0, TRACE_MAX_STREAMS - 1, &n, e));
        op->stream = (int)n;
    } else if (!strcmp(k, "kernels") && (allowed & F_KERNELS)) {
        TRY(parse_int(r, "kernels", v, 0, 1L << 30, &n, e));
        op->kernels = (int)n;
    } else if (!strcmp(k, "name") && (allowed & F_NAME)) {
        if (strlen(v) >= TRACE_NAME_MAX)
            return err_at(e, r->path, r->line, "name longer than %d bytes", TRACE_NAME_MAX - 1);
        if (!*v || strchr(v, '='))
            return err_at(e, r->path, r->line, "name '%s' must be a word without '=' "
                          "(docs/formats.md)", v);
        snprintf(op->name, sizeof op->name, "%s", v);
    } else if (!strcmp(k, "group") && (allowed & F_GROUP)) {
        TRY(parse_int(r, "group", v, 1, 1L << 20, &n, e));
        op->group = (int)n;
    } else if (!strcmp(k, "dtype") && (allowed & F_DTYPE)) {
        if (coll_dtype_parse(v, &op->dtype) != 0)
            return err_at(e, r->path, r->line, "unknown dtype '%s' (bf16, fp16, fp32)", v);
    } else if (!strcmp(k, "algo") && (allowed & F_ALGO)) {
        if (coll_algo_parse(v, &op->algo) != 0)
            return err_at(e, r->path, r->line, "unknown algo '%s'", v);
    } else if (!strcmp(k, "measured_us") && (allowed & F_MEAS)) {
        TRY(parse_num(r, "measured_us", v, 0, &d, e));
        op->measured_us = d;
    } else if (!strcmp(k, "wait_us") && (allowed & F_WAIT)) {
        TRY(parse_num(r, "wait_us", v, 0, &d, e));
        op->wait_us = d;
    } else if (!strcmp(k, "issue_us") && (allowed & F_ISSUE)) {
        TRY(parse_num(r, "issue_us", v, 0, &d, e));
        op->issue_us = d;
    } else if (!strcmp(k, "graph") && (allowed & F_GRAPH)) {
        TRY(parse_int(r, "graph", v, 0, 1, &n, e));
        op->graph = (int)n;
    } else {
        return err_at(e, r->path, r->line, "unknown key '%s'", k);
    }
    return 0;
}

int trace_next(trace_reader *r, trace_op *op, err *e)
{
    for (;;) {
        if (!r->pending) {
            int rc = read_line(r, e);
            if (rc != 1)
                return rc;
        }
        r->pending = 0;
        char *words[16];
        int nw = 0;
        for (char *t = strtok(r->buf, " \t"); t; t = strtok(NULL, " \t")) {
            if (nw == 16)
                return err_at(e, r->path, r->line, "too many words on one line");
            words[nw++] = t;
        }
        if (nw == 0)
            continue;
        const char *d = words[0];
        int npos;
        unsigned allowed;
        if (!strcmp(d, "cycle")) {
            trace_op_init(op, OP_CYCLE);
            npos = 1, allowed = F_NAME;
        } else if (!strcmp(d, "phase")) {
            trace_op_init(op, OP_PHASE);
            npos = 1, allowed = F_GRAPH | F_NAME;
        } else if (!strcmp(d, "compute")) {
            trace_op_init(op, OP_COMPUTE);
            npos = 1, allowed = F_STREAM | F_KERNELS | F_NAME | F_ISSUE;
        } else if (!strcmp(d, "coll")) {
            trace_op_init(op, OP_COLL);
            npos = 2, allowed = F_STREAM | F_KERNELS | F_NAME | F_GROUP | F_DTYPE | F_ALGO |
                                F_MEAS | F_WAIT | F_ISSUE;
        } else if (!strcmp(d, "idle")) {
            trace_op_init(op, OP_IDLE);
            npos = 1, allowed = F_STREAM | F_NAME;
        } else if (!strcmp(d, "wait")) {
            trace_op_init(op, OP_WAIT);
            npos = 1, allowed = F_STREAM;
        } else if (!strcmp(d, "host")) {
            trace_op_init(op, OP_HOST);
            npos = 1, allowed = F_NAME;
        } else if (!strcmp(d, "sync")) {
            trace_op_init(op, OP_SYNC);
            npos = 0, allowed = F_NAME;
        } else if (!strcmp(d, "meta")) {
            return err_at(e, r->path, r->line, "meta lines must come before the first op");
        } else {
            return err_at(e, r->path, r->line, "unknown op '%s'", d);
        }
        if (nw < 1 + npos)
            return err_at(e, r->path, r->line, "'%s' needs %d argument%s", d, npos,
                          npos > 1 ? "s" : "");
        for (int i = 1; i < 1 + npos; i++)
            if (strchr(words[i], '='))
                return err_at(e, r->path, r->line, "'%s' needs %d argument%s before fields", d,
                              npos, npos > 1 ? "s" : "");
        double v;
        long n;
        switch (op->kind) {
        case OP_CYCLE:
            TRY(parse_num(r, "token count", words[1], 0, &v, e));
            if (v <= 0)
                return err_at(e, r->path, r->line, "a cycle must produce tokens (> 0)");
            op->tokens = v;
            break;
        case OP_PHASE:
            if (trace_phase_parse(words[1], &op->phase) != 0)
                return err_at(e, r->path, r->line,
                              "unknown phase '%s' (decode, draft, verify, prefill, other)",
                              words[1]);
            break;
        case OP_COMPUTE:
        case OP_IDLE:
        case OP_HOST:
            TRY(parse_num(r, "duration", words[1], 0, &v, e));
            op->dur_us = v;
            break;
        case OP_COLL:
            if (coll_kind_parse(words[1], &op->coll) != 0)
                return err_at(e, r->path, r->line, "unknown collective '%s'", words[1]);
            {
                char *end;
                errno = 0;
                unsigned long long b = strtoull(words[2], &end, 10);
                if (end == words[2] || *end || errno || words[2][0] == '-' ||
                    b > COLL_MAX_BYTES)
                    return err_at(e, r->path, r->line, "bad byte count '%s' (at most 64 GiB)",
                                  words[2]);
                op->bytes = b;
            }
            op->group = r->default_group;
            break;
        case OP_WAIT:
            TRY(parse_int(r, "stream", words[1], 0, TRACE_MAX_STREAMS - 1, &n, e));
            op->on = (int)n;
            break;
        default:
            break;
        }
        unsigned seen = 0;
        for (int i = 1 + npos; i < nw; i++)
            TRY(parse_field(r, op, words[i], allowed, &seen, e));
        if (op->kind == OP_PHASE && op->graph < 0)
            op->graph = r->default_graph;
        if (op->kind == OP_WAIT && op->on == op->stream)
            return err_at(e, r->path, r->line, "a stream cannot wait on itself");
        return 1;
    }
}

/* ---- writing ------------------------------------------------------------ */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

trace_writer *trace_writer_new(const char *path, err *e)
{
    trace_writer *w = calloc(1, sizeof *w);
    if (!w) {
        err_set(e, ERR_SYSTEM, "out of memory");
        return NULL;
    }
    if (ofile_open(&w->of, path, e) != 0) {
        free(w);
        return NULL;
    }
    if (ends_with(path, ".gz")) {
        int fd = dup(fileno(w->of.f));
        w->gz = fd >= 0 ? gzdopen(fd, "wb6") : NULL;
        if (!w->gz) {
            if (fd >= 0)
                close(fd);
            ofile_abort(&w->of);
            free(w);
            err_set(e, ERR_SYSTEM, "%s: cannot start gzip stream", path);
            return NULL;
        }
    }
    if (trace_write_comment(w, NULL, e) != 0) {
        trace_writer_abort(w);
        return NULL;
    }
    return w;
}

static int wputs(trace_writer *w, const char *s, err *e)
{
    if (++w->lines > TRACE_MAX_LINES)
        return err_set(e, ERR_INPUT, "%s: more than %ld lines, which no reader takes",
                       w->of.path, (long)TRACE_MAX_LINES);
    int bad = w->gz ? gzputs(w->gz, s) < 0 : fputs(s, w->of.f) == EOF;
    if (bad) {
        w->failed = 1;
        return err_set(e, ERR_SYSTEM, "%s: write failed", w->of.path);
    }
    return 0;
}

int trace_write_comment(trace_writer *w, const char *text, err *e)
{
    if (!text)
        return wputs(w, "collsim-trace 1\n", e);
    char line[LINE_MAX_BYTES];
    snprintf(line, sizeof line, "# %s\n", text);
    return wputs(w, line, e);
}

int trace_write_meta(trace_writer *w, const char *key, const char *value, err *e)
{
    char line[LINE_MAX_BYTES];
    snprintf(line, sizeof line, "meta %s %s\n", key, value);
    return wputs(w, line, e);
}

/* Shortest decimal that reads back as the same double, capped at 0.001 ns
 * resolution so files stay small and deterministic. */
static void fmt_us(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%.6f", v);
    char *p = buf + strlen(buf) - 1;
    while (*p == '0')
        *p-- = 0;
    if (*p == '.')
        *p = 0;
}

/* What the reader would refuse is refused when written, so a tool never
 * writes a trace that its own reader rejects. */
static int op_in_range(const trace_op *op, err *e)
{
    double v = op->kind == OP_CYCLE ? op->tokens
               : op->kind == OP_COMPUTE || op->kind == OP_IDLE || op->kind == OP_HOST
                   ? op->dur_us : 0;
    if (!(v >= 0 && v <= TRACE_MAX_VALUE) || (op->kind == OP_CYCLE && !(v > 0)))
        return err_set(e, ERR_INPUT, "%s %g is out of range (0 to %g)",
                       op->kind == OP_CYCLE ? "token count" : "duration", v, TRACE_MAX_VALUE);
    if (op->kind == OP_COLL) {
        if (op->bytes > COLL_MAX_BYTES)
            return err_set(e, ERR_INPUT, "%s of %llu bytes is beyond 64 GiB",
                           coll_kind_name(op->coll), (unsigned long long)op->bytes);
        if (op->measured_us > TRACE_MAX_VALUE || op->wait_us > TRACE_MAX_VALUE ||
            op->issue_us > TRACE_MAX_VALUE)
            return err_set(e, ERR_INPUT, "%s time out of range (at most %g us)",
                           coll_kind_name(op->coll), TRACE_MAX_VALUE);
    }
    if (op->kernels < 0 || op->kernels > (1 << 30) || op->group > (1 << 20))
        return err_set(e, ERR_INPUT, "kernels %d or group %d out of range", op->kernels,
                       op->group);
    return 0;
}

int trace_write_op(trace_writer *w, const trace_op *op, err *e)
{
    char line[LINE_MAX_BYTES], num[64];
    size_t n = 0;
    TRY(op_in_range(op, e));
#define APP(...) n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0, __VA_ARGS__)
    switch (op->kind) {
    case OP_CYCLE:
        fmt_us(num, sizeof num, op->tokens);
        APP("cycle %s", num);
        break;
    case OP_PHASE:
        APP("phase %s", trace_phase_name(op->phase));
        if (op->graph >= 0)
            APP(" graph=%d", op->graph);
        break;
    case OP_COMPUTE:
        fmt_us(num, sizeof num, op->dur_us);
        APP("compute %s", num);
        if (op->kernels != 1)
            APP(" kernels=%d", op->kernels);
        if (op->issue_us >= 0) {
            fmt_us(num, sizeof num, op->issue_us);
            APP(" issue_us=%s", num);
        }
        break;
    case OP_COLL:
        APP("coll %s %llu", coll_kind_name(op->coll), (unsigned long long)op->bytes);
        if (op->group > 0)
            APP(" group=%d", op->group);
        if (op->dtype != DTYPE_BF16)
            APP(" dtype=%s", coll_dtype_name(op->dtype));
        if (op->algo != ALGO_AUTO)
            APP(" algo=%s", coll_algo_name(op->algo));
        if (op->kernels != 1)
            APP(" kernels=%d", op->kernels);
        if (op->measured_us >= 0) {
            fmt_us(num, sizeof num, op->measured_us);
            APP(" measured_us=%s", num);
        }
        if (op->wait_us >= 0) {
            fmt_us(num, sizeof num, op->wait_us);
            APP(" wait_us=%s", num);
        }
        if (op->issue_us >= 0) {
            fmt_us(num, sizeof num, op->issue_us);
            APP(" issue_us=%s", num);
        }
        break;
    case OP_HOST:
        fmt_us(num, sizeof num, op->dur_us);
        APP("host %s", num);
        break;
    case OP_SYNC:
        APP("sync");
        break;
    case OP_IDLE:
        fmt_us(num, sizeof num, op->dur_us);
        APP("idle %s", num);
        break;
    case OP_WAIT:
        APP("wait %d", op->on);
        break;
    default:
        return err_set(e, ERR_USAGE, "trace_write_op: bad op kind %d", (int)op->kind);
    }
    if (op->stream != 0 && op->kind != OP_CYCLE && op->kind != OP_PHASE &&
        op->kind != OP_HOST && op->kind != OP_SYNC)
        APP(" stream=%d", op->stream);
    if (op->name[0])
        APP(" name=%s", op->name);
    APP("\n");
#undef APP
    return wputs(w, line, e);
}

int trace_writer_commit(trace_writer *w, err *e)
{
    int rc = 0;
    if (w->gz && gzclose(w->gz) != Z_OK && !w->failed)
        rc = err_set(e, ERR_SYSTEM, "%s: gzip write failed", w->of.path);
    w->gz = NULL;
    if (rc == 0 && w->failed)
        rc = err_set(e, ERR_SYSTEM, "%s: write failed", w->of.path);
    if (rc != 0)
        ofile_abort(&w->of);
    else
        rc = ofile_commit(&w->of, e);
    free(w);
    return rc;
}

void trace_writer_abort(trace_writer *w)
{
    if (!w)
        return;
    if (w->gz)
        gzclose(w->gz);
    ofile_abort(&w->of);
    free(w);
}
