/* Sweep driver. Work: rank k of n takes runs K+k, K+k+n, ... (K = rows
 * already written, on --resume) and hands them to its worker pool; every
 * result is a fixed-size record (sweep_rec) that rank 0 receives from its own
 * workers or over MPI. Rank 0 writes rows strictly in run order: a record
 * that arrives early waits in `pending` until the rows before it are out, so
 * the output is a function of the grid alone. Each row is flushed as it is
 * written (json lines first, then csv), so an interrupted sweep leaves
 * OUT.part holding the rows 0..K-1 complete and at most one cut line, which
 * --resume checks against the grid, cuts off and continues after. Numbers
 * are printed with fixed digits and -0 as 0. */
#include "traces/sweep.h"
#include "sim/ofile.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/batch.h"
#include "sim/jw.h"
#include "sim/line.h"

/* One run's result as it travels from a worker (or rank) to rank 0. Zeroed
 * before it is filled, so padding never carries stray bytes. */
typedef struct sweep_rec {
    long run;
    int rc;                        /* 0 ok, else the err code of the failure */
    int pad_;
    double v[SWEEP_MAX_METRICS];
    char msg[SWEEP_MSG];           /* why it failed, one line */
} sweep_rec;

struct sweep {
    const sweep_grid *g;
    const sweep_runner *r;
    batch *pool;
    int nfixed;
    const char **key, **value;     /* nfixed + SWEEP_MAX_KEYS: scratch in workers */
};

/* --- running one point (in a worker) ---------------------------------------- */

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

static void job_run(void *ctx, long run, void *out)
{
    sweep *s = ctx;
    sweep_rec *rec = out;
    sweep_point pt;
    sweep_grid_point(s->g, run, &pt);
    int n = s->nfixed;
    for (int c = 0; c < sweep_grid_ncols(s->g); c++)
        if (pt.val[c]) {
            s->key[n] = sweep_grid_col(s->g, c);
            s->value[n++] = pt.val[c];
        }
    err e = {0};
    double v[SWEEP_MAX_METRICS] = {0};
    rec->run = run;
    rec->rc = s->r->run(s->r->ctx, pt.kind, pt.path, s->nfixed, n, s->key, s->value, v, &e);
    if (rec->rc) {
        snprintf(rec->msg, sizeof rec->msg, "%.*s", SWEEP_MSG - 1, e.msg[0] ? e.msg : "failed");
        one_line(rec->msg);
    } else {
        memcpy(rec->v, v, sizeof v);
    }
}

int sweep_check(const sweep_grid *g, const sweep_runner *r, err *e)
{
    if (!r->check)
        return 0;
    int has[2] = {0, 0};
    for (int i = 0; i < sweep_grid_ninputs(g); i++) {
        sweep_kind kind;
        const char *name, *path;
        long line = sweep_grid_input(g, i, &kind, &name, &path);
        err sub = {0};
        has[kind] = 1;
        if (r->check(r->ctx, kind, path, NULL, NULL, &sub) != 0)
            return err_at(e, sweep_grid_name(g), line, "%s", sub.msg);
    }
    for (int i = 0; i < sweep_grid_nentries(g); i++) {
        sweep_entry en = sweep_grid_entry(g, i);
        for (int k = 0; k < 2; k++) {
            err sub = {0};
            if (!has[k] || r->check(r->ctx, (sweep_kind)k, NULL, en.key, en.value, &sub) == 0)
                continue;
            if (strstr(sub.msg, en.key) && !has[1 - k])   /* it names the knob already */
                return err_at(e, sweep_grid_name(g), en.line, "%s", sub.msg);
            return err_at(e, sweep_grid_name(g), en.line, "%s=%s%s%s: %s", en.key, en.value,
                          has[1 - k] ? " for a " : "",
                          has[1 - k] ? sweep_kind_name((sweep_kind)k) : "", sub.msg);
        }
    }
    return 0;
}

sweep *sweep_new(const sweep_grid *g, const sweep_runner *r, int workers, err *e)
{
    ASSERTF(r->nmetrics > 0 && r->nmetrics <= SWEEP_MAX_METRICS, "nmetrics %d", r->nmetrics);
    sweep *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(e, ERR_SYSTEM, "out of memory");
        return NULL;
    }
    s->g = g;
    s->r = r;
    s->nfixed = sweep_grid_nfixed(g);
    size_t n = (size_t)s->nfixed + SWEEP_MAX_KEYS;
    s->key = calloc(n, sizeof *s->key);
    s->value = calloc(n, sizeof *s->value);
    if (!s->key || !s->value) {
        err_set(e, ERR_SYSTEM, "out of memory");
        sweep_free(s);
        return NULL;
    }
    for (int i = 0; i < s->nfixed; i++)
        sweep_grid_fixed(g, i, &s->key[i], &s->value[i]);
    if (!(s->pool = batch_new(workers, sizeof(sweep_rec), job_run, s, e))) {
        sweep_free(s);
        return NULL;
    }
    return s;
}

void sweep_free(sweep *s)
{
    if (!s)
        return;
    batch_free(s->pool);
    free(s->key);
    free(s->value);
    free(s);
}

/* --- formatting ----------------------------------------------------------------- */

/* Fixed digits; "-0.000" becomes "0.000" so a sign never depends on rounding noise. */
static void fmt_num(char *buf, size_t n, double v, int prec)
{
    if (isnan(v)) {
        snprintf(buf, n, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, n, "%s", v > 0 ? "inf" : "-inf");
        return;
    }
    snprintf(buf, n, "%.*f", prec, v);
    if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
        memmove(buf, buf + 1, strlen(buf));
}

static void csv_cell(FILE *f, const char *c)
{
    if (!strpbrk(c, ",\"\n")) {
        fputs(c, f);
        return;
    }
    fputc('"', f);
    for (; *c; c++) {
        if (*c == '"')
            fputc('"', f);
        fputc(*c, f);
    }
    fputc('"', f);
}

static void csv_header(FILE *f, const sweep *s)
{
    fputs("run,kind,input", f);
    for (int c = 0; c < sweep_grid_ncols(s->g); c++)
        fprintf(f, ",%s", sweep_grid_col(s->g, c));
    fputs(",status", f);
    for (int i = 0; i < s->r->nmetrics; i++)
        fprintf(f, ",%s", s->r->metrics[i].name);
    fputs(",error\n", f);
}

/* The cells that name a run: "run,kind,input,knob...," (a row starts with them). */
static void csv_key_cells(FILE *f, const sweep *s, long run)
{
    sweep_point pt;
    sweep_grid_point(s->g, run, &pt);
    fprintf(f, "%ld,%s,", run, sweep_kind_name(pt.kind));
    csv_cell(f, pt.input);
    for (int c = 0; c < sweep_grid_ncols(s->g); c++)
        fprintf(f, ",%s", pt.val[c] ? pt.val[c] : "");
    fputc(',', f);
}

static void csv_row(FILE *f, const sweep *s, const sweep_rec *rec)
{
    csv_key_cells(f, s, rec->run);
    fputs(rec->rc ? "failed" : "ok", f);
    for (int i = 0; i < s->r->nmetrics; i++) {
        char num[64] = "";
        if (!rec->rc && isfinite(rec->v[i]))  /* a value that does not exist: empty */
            fmt_num(num, sizeof num, rec->v[i], s->r->metrics[i].prec);
        fprintf(f, ",%s", num);
    }
    fputc(',', f);
    csv_cell(f, rec->rc ? rec->msg : "");
    fputc('\n', f);
}

static void jsonl_row(FILE *f, const sweep *s, const sweep_rec *rec)
{
    sweep_point pt;
    sweep_grid_point(s->g, rec->run, &pt);
    jw y;
    jw_init(&y, f);
    jw_open(&y, 1);
    jw_str(&y, "run");
    char num[64];
    snprintf(num, sizeof num, "%lld", (long long)rec->run);
    jw_raw(&y, num);
    jw_str(&y, "kind");
    jw_str(&y, sweep_kind_name(pt.kind));
    jw_str(&y, "input");
    jw_str(&y, pt.input);
    for (int c = 0; c < sweep_grid_ncols(s->g); c++) {
        jw_str(&y, sweep_grid_col(s->g, c));
        if (pt.val[c])
            jw_str(&y, pt.val[c]);
        else
            jw_raw(&y, "null");
    }
    jw_str(&y, "status");
    jw_str(&y, rec->rc ? "failed" : "ok");
    for (int i = 0; i < s->r->nmetrics; i++) {
        jw_str(&y, s->r->metrics[i].name);
        fmt_num(num, sizeof num, rec->v[i], s->r->metrics[i].prec);
        jw_raw(&y, rec->rc || !isfinite(rec->v[i]) ? "null" : num);
    }
    jw_str(&y, "error");
    if (rec->rc)
        jw_str(&y, rec->msg);
    else
        jw_raw(&y, "null");
    jw_close(&y);
    fputc('\n', f);
}

/* --- the writer on rank 0 ------------------------------------------------------- */

typedef struct writer {
    sweep *s;
    const sweep_opts *o;
    sweep_summary *sum;
    sweep_mpi *m;
    err *e;
    FILE *csv;                 /* OUT.part, or stdout for --format csv */
    FILE *jl;
    report *rep;               /* stdout table/json */
    report_col *cols;
    char csv_part[4200], jl_part[4200];
    ofile csv_dev, jl_dev;     /* an existing device or pipe, written in place */
    long first, next, runs;    /* rows first..next-1 written this time */
    long remote_left;          /* records still to come from other ranks */
    unsigned char *sent;       /* rank > 0: bit k: my k-th job's record was sent */
    sweep_rec **pending;       /* records of runs next.. that came early: run
                                  r at [r % npend], npend a power of 2 that
                                  grows with how far ahead records come */
    long npend;
    int rc;                    /* set once: stop writing */
} writer;

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* An existing target that is not a regular file (a device, a pipe): it is
 * written in place through ofile, never replaced by a renamed part file. */
static int is_device(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

/* A string holding what fill() writes to a stream. Caller frees. */
static char *capture(void (*fill)(FILE *, const sweep *, long), const sweep *s, long run)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fill(f, s, run);
    fclose(f);
    return buf;
}

static void header_fill(FILE *f, const sweep *s, long run)
{
    (void)run;
    csv_header(f, s);
}

enum { PART_LINE_MAX = 1 << 20 };   /* a row this sweep wrote is far shorter */

/* getline bounded at PART_LINE_MAX: the line with its '\n' if it has one;
 * -1 at the end (or a read error), -2 for a line too long or with a NUL. */
static ssize_t part_line(FILE *f, char **line, size_t *cap)
{
    size_t len;
    int st = line_read(f, line, cap, PART_LINE_MAX, &len);
    if (st == LINE_LONG || st == LINE_NUL)
        return -2;
    if (st != LINE_OK)
        return -1;
    if (!feof(f)) {   /* it ended at a '\n': put it back */
        if (*cap < len + 2) {
            char *q = realloc(*line, len + 2);
            if (!q)
                return -1;
            *line = q;
            *cap = len + 2;
        }
        (*line)[len++] = '\n';
        (*line)[len] = '\0';
    }
    return (ssize_t)len;
}

/* Check a part file's rows against the grid; keep the complete matching
 * prefix (K rows, at most limit), cut what follows, and leave the file open
 * for append. With path = a finished OUT (finished = 1) only check,
 * read-only: a mismatch is refused with advice that does not overwrite it. */
static int resume_csv(writer *w, const char *part, int finished, long *K, long limit, err *e)
{
    const char *again = finished ? "it is left as it is: write this grid elsewhere (-o NEW.csv), "
                                   "or remove it to start over"
                                 : "run without --resume to start over";
    FILE *f = fopen(part, finished ? "r" : "r+");
    if (!f)
        return err_set(e, ERR_SYSTEM, "%s: %s", part, strerror(errno));
    char *line = NULL, *want = capture(header_fill, w->s, 0);
    size_t cap = 0;
    long lineno = 1, keep = 0, rows = 0;
    int rc = want ? 0 : err_set(e, ERR_SYSTEM, "out of memory");
    ssize_t n = rc ? -1 : part_line(f, &line, &cap);
    if (n == -2)
        rc = err_at(e, part, 1, "a line longer than %d bytes or with a NUL byte: not this "
                    "grid's header; %s", PART_LINE_MAX, again);
    if (n > 0 && line[n - 1] == '\n') {
        if (strcmp(line, want) != 0)
            rc = err_at(e, part, 1, "its header is not this grid's; %s", again);
        keep = ftell(f);
    } else if (!rc && finished) {
        rc = err_at(e, part, 1, "no complete header: not a finished sweep; %s", again);
    } else if (!rc) {
        rewind(f);   /* cut before its header was complete: start afresh */
        csv_header(f, w->s);
        keep = ftell(f);
    }
    while (!rc && rows < limit && (n = part_line(f, &line, &cap)) > 0 && line[n - 1] == '\n') {
        lineno++;
        if (rows >= w->runs) {
            rc = err_at(e, part, lineno, "more rows than the grid's %ld runs; %s", w->runs,
                        again);
            break;
        }
        free(want);
        want = capture(csv_key_cells, w->s, rows);
        size_t wl = want ? strlen(want) : 0;
        if (!want)
            rc = err_set(e, ERR_SYSTEM, "out of memory");
        else if (strncmp(line, want, wl) != 0 ||
                 (strncmp(line + wl, "ok,", 3) != 0 && strncmp(line + wl, "failed,", 7) != 0))
            rc = err_at(e, part, lineno, "row is not run %ld of this grid (expected '%.*s...'); %s",
                        rows, (int)(wl > 200 ? 200 : wl), want, again);
        else if (!finished && strncmp(line + wl, "failed,", 7) == 0)
            w->sum->failed++;
        if (!rc) {
            rows++;
            keep = ftell(f);
        }
    }
    if (!rc && n == -2)
        rc = err_at(e, part, lineno + 1, "a line longer than %d bytes or with a NUL byte: not a "
                    "row of this sweep; %s", PART_LINE_MAX, again);
    free(line);
    free(want);
    if (finished) {
        fclose(f);
        *K = rows;
        return rc;
    }
    if (!rc && (fflush(f) != 0 || ftruncate(fileno(f), keep) != 0 ||
                fseek(f, keep, SEEK_SET) != 0))
        rc = err_set(e, ERR_SYSTEM, "%s: %s", part, strerror(errno));
    if (rc) {
        fclose(f);
        return rc;
    }
    w->csv = f;
    *K = rows;
    return 0;
}

/* Keep the first complete lines of the json lines part file, at most K (the
 * csv's rows); *J gets how many: fewer when a kill fell between the writes
 * of one row. */
static int resume_jsonl(writer *w, long K, long *J, err *e)
{
    FILE *f = fopen(w->jl_part, "r+");
    if (!f)
        return err_set(e, ERR_SYSTEM, "%s: %s (cannot resume the json lines without it)",
                       w->jl_part, strerror(errno));
    long rows = 0, keep = 0, at = 0;
    int c;
    while (rows < K && (c = getc(f)) != EOF) {
        at++;
        if (c == '\n') {
            rows++;
            keep = at;   /* a cut last line is dropped */
        }
    }
    *J = rows;
    int rc = 0;
    if (ferror(f) || fflush(f) != 0 || ftruncate(fileno(f), keep) != 0 ||
        fseek(f, keep, SEEK_SET) != 0)
        rc = err_set(e, ERR_SYSTEM, "%s: %s", w->jl_part, strerror(errno));
    if (rc) {
        fclose(f);
        return rc;
    }
    w->jl = f;
    return 0;
}

static int open_fresh(FILE **f, const char *path, err *e)
{
    if (!(*f = fopen(path, "w")))
        return err_set(e, ERR_SYSTEM, "%s: cannot create: %s", path, strerror(errno));
    return 0;
}

static int stdout_report(writer *w, err *e)
{
    const sweep *s = w->s;
    int nk = sweep_grid_ncols(s->g), nm = s->r->nmetrics, nc = 3 + nk + 1 + nm + 1;
    if (!(w->cols = calloc((size_t)nc, sizeof *w->cols)) ||
        !(w->rep = report_new(stdout, w->o->stdout_fmt)))
        return err_set(e, ERR_SYSTEM, "out of memory");
    int in_w = 5, k = 0;
    for (int i = 0; i < sweep_grid_ninputs(s->g); i++) {
        sweep_kind kind;
        const char *name, *path;
        sweep_grid_input(s->g, i, &kind, &name, &path);
        int l = (int)strlen(name);
        in_w = l > in_w ? (l > 60 ? 60 : l) : in_w;
    }
    w->cols[k++] = (report_col){"run", NULL, 5, -1};
    w->cols[k++] = (report_col){"kind", NULL, 8, -1};
    w->cols[k++] = (report_col){"input", NULL, in_w, -1};
    for (int c = 0; c < nk; c++) {
        int width = (int)strlen(sweep_grid_col(s->g, c));
        for (int i = 0; i < sweep_grid_nentries(s->g); i++) {
            sweep_entry en = sweep_grid_entry(s->g, i);
            if (!en.fixed && !strcmp(en.key, sweep_grid_col(s->g, c)) &&
                (int)strlen(en.value) > width)
                width = (int)strlen(en.value);
        }
        w->cols[k++] = (report_col){sweep_grid_col(s->g, c), NULL, width, -1};
    }
    w->cols[k++] = (report_col){"status", NULL, 6, -1};
    for (int i = 0; i < nm; i++) {
        int width = (int)strlen(s->r->metrics[i].name);
        w->cols[k++] = (report_col){s->r->metrics[i].name, NULL, width > 11 ? width : 11,
                                    s->r->metrics[i].prec};
    }
    w->cols[k++] = (report_col){"error", NULL, 1, -1};
    report_meta(w->rep, "grid", "%s", sweep_grid_name(s->g));
    report_meta(w->rep, "runs", "%ld", w->runs);
    report_table(w->rep, "sweep", w->cols, nc);
    return 0;
}

static void report_row(writer *w, const sweep_rec *rec)
{
    const sweep *s = w->s;
    sweep_point pt;
    sweep_grid_point(s->g, rec->run, &pt);
    report_int(w->rep, rec->run);
    report_str(w->rep, sweep_kind_name(pt.kind));
    report_str(w->rep, pt.input);
    for (int c = 0; c < sweep_grid_ncols(s->g); c++)
        report_str(w->rep, pt.val[c] ? pt.val[c] : "");
    report_str(w->rep, rec->rc ? "failed" : "ok");
    for (int i = 0; i < s->r->nmetrics; i++) {
        char num[64];
        fmt_num(num, sizeof num, rec->v[i], s->r->metrics[i].prec);
        report_num(w->rep, rec->rc ? NAN : strtod(num, NULL));
    }
    report_str(w->rep, rec->rc ? rec->msg : "");
    report_end_row(w->rep);
}

/* Open the outputs; *K = rows already done (resume). Nothing is created
 * before the checks pass, so a bad --resume leaves the files as they were. */
static int writer_open(writer *w, long *K, err *e)
{
    const sweep_opts *o = w->o;
    *K = 0;
    if (!o->out_path) {
        if (o->stdout_fmt == REPORT_CSV) {
            w->csv = stdout;
            csv_header(stdout, w->s);
            return 0;
        }
        return stdout_report(w, e);
    }
    snprintf(w->csv_part, sizeof w->csv_part, "%s.part", o->out_path);
    if (o->jsonl_path)
        snprintf(w->jl_part, sizeof w->jl_part, "%s.part", o->jsonl_path);
    int dev_csv = is_device(o->out_path), dev_jl = o->jsonl_path && is_device(o->jsonl_path);
    if ((dev_csv || dev_jl) && o->resume)
        return err_set(e, ERR_USAGE, "%s is not a regular file: it cannot be resumed",
                       dev_csv ? o->out_path : o->jsonl_path);
    if (dev_csv) {
        TRY(ofile_open(&w->csv_dev, o->out_path, e));
        w->csv = w->csv_dev.f;
        snprintf(w->csv_part, sizeof w->csv_part, "%s", o->out_path);
        csv_header(w->csv, w->s);
    }
    if (dev_jl) {
        TRY(ofile_open(&w->jl_dev, o->jsonl_path, e));
        w->jl = w->jl_dev.f;
        snprintf(w->jl_part, sizeof w->jl_part, "%s", o->jsonl_path);
    }
    if (o->resume && !exists(w->csv_part) && exists(o->out_path)) {
        /* A finished sweep: check it where it is, read-only, so a file of
         * another grid is never touched; one that is this grid's (all of it,
         * or a prefix when the grid grew) becomes the part file to continue. */
        long k;
        TRY(resume_csv(w, o->out_path, 1, &k, LONG_MAX, e));
        if (rename(o->out_path, w->csv_part) != 0 ||
            (o->jsonl_path && exists(o->jsonl_path) && !exists(w->jl_part) &&
             rename(o->jsonl_path, w->jl_part) != 0))
            return err_set(e, ERR_SYSTEM, "%s: %s", o->out_path, strerror(errno));
    }
    if (dev_csv) {
        /* opened above */
    } else if (o->resume && exists(w->csv_part)) {
        TRY(resume_csv(w, w->csv_part, 0, K, LONG_MAX, e));
        long J = *K;
        if (o->jsonl_path && *K > 0)
            TRY(resume_jsonl(w, *K, &J, e));
        if (J < *K) {
            /* The csv has rows the json lines lack: both go back to the rows
             * they share, and the runs after are done again. */
            fclose(w->csv);
            w->csv = NULL;
            w->sum->failed = 0;
            TRY(resume_csv(w, w->csv_part, 0, K, J, e));
        }
    } else {
        TRY(open_fresh(&w->csv, w->csv_part, e));
        csv_header(w->csv, w->s);
    }
    if (o->jsonl_path && !w->jl)
        TRY(open_fresh(&w->jl, w->jl_part, e));
    if (fflush(w->csv) != 0)
        return err_set(e, ERR_SYSTEM, "%s: %s", w->csv_part, strerror(errno));
    return 0;
}

/* Close the outputs; rename the parts into place when every row is out. */
static int writer_close(writer *w, int complete, err *e)
{
    int rc = 0;
    if (w->rep) {
        rc = report_finish(w->rep, e);
        report_free(w->rep);
        w->rep = NULL;
    }
    if (w->jl && w->jl == w->jl_dev.f) {
        int r = ofile_commit(&w->jl_dev, rc ? NULL : e);
        rc = rc ? rc : r;
    } else if (w->jl && (ferror(w->jl) | fclose(w->jl)) && !rc) {
        rc = err_set(e, ERR_SYSTEM, "%s: write failed", w->jl_part);
    }
    if (w->csv && w->csv == w->csv_dev.f) {
        int r = ofile_commit(&w->csv_dev, rc ? NULL : e);
        rc = rc ? rc : r;
    } else if (w->csv == stdout) {
        if (fflush(stdout) != 0 && !rc)
            rc = err_set(e, ERR_SYSTEM, "writing stdout failed");
    } else if (w->csv && (ferror(w->csv) | fclose(w->csv)) && !rc) {
        rc = err_set(e, ERR_SYSTEM, "%s: write failed", w->csv_part);
    }
    w->csv = w->jl = NULL;
    if (!rc && complete && w->o->out_path) {
        if (w->o->jsonl_path && strcmp(w->jl_part, w->o->jsonl_path) != 0 &&
            rename(w->jl_part, w->o->jsonl_path) != 0)
            rc = err_set(e, ERR_SYSTEM, "%s: %s", w->o->jsonl_path, strerror(errno));
        if (!rc && strcmp(w->csv_part, w->o->out_path) != 0 &&
            rename(w->csv_part, w->o->out_path) != 0)
            rc = err_set(e, ERR_SYSTEM, "%s: %s", w->o->out_path, strerror(errno));
    }
    free(w->cols);
    return rc;
}

/* Write the row of rec (the next in run order). */
static int emit(writer *w, const sweep_rec *rec)
{
    err *e = w->e;
    if (w->jl) {
        jsonl_row(w->jl, w->s, rec);
        if (fflush(w->jl) != 0)
            return err_set(e, ERR_SYSTEM, "%s: %s", w->jl_part, strerror(errno));
    }
    if (w->rep) {
        report_row(w, rec);
        fflush(stdout);
    } else {
        csv_row(w->csv, w->s, rec);
        if (fflush(w->csv) != 0)
            return err_set(e, ERR_SYSTEM, "%s: %s",
                           w->csv == stdout ? "stdout" : w->csv_part, strerror(errno));
    }
    sweep_summary *sum = w->sum;
    if (rec->rc) {
        if (sum->nlisted < SWEEP_FAILED_LISTED) {
            sum->failed_run[sum->nlisted] = rec->run;
            snprintf(sum->failed_msg[sum->nlisted++], SWEEP_MSG, "%s", rec->msg);
        }
        sum->failed++;
    }
    w->next++;
    if (w->o->progress)
        w->o->progress(w->o->progress_ctx, w->next, w->runs, w->first);
    if (w->o->stop_after > 0 && w->next - w->first == w->o->stop_after && w->next < w->runs)
        return err_set(e, ERR_SYSTEM, "stopped after %ld runs (--stop-after); continue with "
                       "--resume", w->o->stop_after);
    return 0;
}

/* Room for records of runs next .. next + need - 1: the window doubles and
 * the waiting records move to their new slots. 0, or -1 out of memory. */
static int pending_grow(writer *w, long need)
{
    long cap = w->npend ? w->npend : 64;
    while (cap < need)
        cap *= 2;
    sweep_rec **p = calloc((size_t)cap, sizeof *p);
    if (!p)
        return -1;
    for (long i = 0; i < w->npend; i++)
        if (w->pending[i])
            p[w->pending[i]->run % cap] = w->pending[i];
    free(w->pending);
    w->pending = p;
    w->npend = cap;
    return 0;
}

/* A record arrives (any order): write it and whatever it unblocks. */
static int place(writer *w, const sweep_rec *rec)
{
    if (w->rc)
        return w->rc;    /* stopped: later records are dropped */
    ASSERTF(rec->run >= w->next && rec->run < w->runs &&
                (rec->run - w->next >= w->npend || !w->pending[rec->run % w->npend]),
            "record for run %ld (next %ld)", rec->run, w->next);
    if (rec->run != w->next) {
        if (rec->run - w->next >= w->npend && pending_grow(w, rec->run - w->next + 1))
            return w->rc = err_set(w->e, ERR_SYSTEM, "out of memory");
        sweep_rec **slot = &w->pending[rec->run % w->npend];
        if (!(*slot = malloc(sizeof *rec)))
            return w->rc = err_set(w->e, ERR_SYSTEM, "out of memory");
        memcpy(*slot, rec, sizeof *rec);
        return 0;
    }
    if ((w->rc = emit(w, rec)) != 0)
        return w->rc;
    while (w->next < w->runs && w->npend && w->pending[w->next % w->npend]) {
        sweep_rec *p = w->pending[w->next % w->npend];
        w->pending[w->next % w->npend] = NULL;
        w->rc = emit(w, p);
        free(p);
        if (w->rc)
            return w->rc;
    }
    return 0;
}

static void dead_rec(sweep_rec *rec, long job, const char *why)
{
    memset(rec, 0, sizeof *rec);
    rec->run = job;
    rec->rc = ERR_SYSTEM;
    snprintf(rec->msg, sizeof rec->msg, "%s", why);
}

/* Rank 0, after each of its own results: take what other ranks have sent. */
static int drain(writer *w, int wait)
{
    sweep_rec rec;
    while (w->remote_left > 0) {
        err sub = {0};
        int got = sweep_mpi_recv(w->m, &rec, sizeof rec, wait, &sub);
        if (got < 0 || got > 1) {
            if (!w->rc)
                *w->e = sub;
            return w->rc = got;
        }
        if (got == 0)
            return w->rc;
        w->remote_left--;
        place(w, &rec);
    }
    return w->rc;
}

static int on_local(void *ctx, long job, const void *out, const char *why)
{
    writer *w = ctx;
    sweep_rec dead;
    if (!out)
        dead_rec(&dead, job, why);
    int rank = sweep_mpi_rank(w->m);
    if (rank != 0) {
        long k = (job - w->first - rank) / sweep_mpi_size(w->m);
        w->sent[k / 8] |= (unsigned char)(1u << (k % 8));
        return sweep_mpi_send(w->m, out ? out : &dead, sizeof dead, w->e);
    }
    place(w, out ? out : &dead);
    if (sweep_mpi_size(w->m) > 1)
        drain(w, 0);
    return w->rc;
}

int sweep_exec(sweep *s, sweep_mpi *m, const sweep_opts *o, sweep_summary *sum, err *e)
{
    memset(sum, 0, sizeof *sum);
    int rank = sweep_mpi_rank(m), size = sweep_mpi_size(m);
    long runs = sweep_grid_runs(s->g);
    writer w = {.s = s, .o = o, .sum = sum, .m = m, .e = e, .runs = runs};
    sum->runs = runs;
    long hdr[2] = {0, 0};   /* rows done, error code */
    if (rank == 0)
        hdr[1] = writer_open(&w, &hdr[0], e);
    int rc = sweep_mpi_bcast(m, hdr, 2, e);
    if (rc || hdr[1]) {
        if (rank == 0)
            writer_close(&w, 0, NULL);
        return rc ? rc : (int)hdr[1];   /* rank 0 has the message */
    }
    w.first = w.next = sum->resumed = hdr[0];
    /* My runs: first + rank, then every size-th; never listed, and the
     * records that come early wait in a window as wide as they come ahead,
     * so nothing grows with the grid before its first run. */
    long mine = runs > w.first + rank ? (runs - w.first - rank + size - 1) / size : 0;
    w.remote_left = rank == 0 ? runs - w.first - mine : 0;
    if (rank != 0 && !(w.sent = calloc((size_t)mine / 8 + 1, 1)))
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc)
        rc = batch_run_range(s->pool, w.first + rank, size, mine, on_local, &w, e);
    /* A rank whose pool failed still owes rank 0 a record per run: failed
     * rows naming why, so rank 0 never waits for ever and loses nothing. */
    for (long k = 0; rank != 0 && rc && w.sent && k < mine; k++)
        if (!(w.sent[k / 8] >> (k % 8) & 1)) {
            sweep_rec rec;
            err sub = {0};
            dead_rec(&rec, w.first + rank + k * size, "");
            snprintf(rec.msg, sizeof rec.msg, "rank %d: %.*s", rank, SWEEP_MSG - 16, e->msg);
            if (sweep_mpi_send(m, &rec, sizeof rec, &sub) != 0)
                break;
        }
    free(w.sent);
    if (rank == 0) {
        if (rc && !w.rc)
            w.rc = rc;       /* the pool failed: still take the others' records */
        if (size > 1 && w.remote_left > 0) {
            int keep = w.rc;
            drain(&w, 1);
            if (keep)
                w.rc = keep;
        }
        rc = w.rc;
        int done = !rc && w.next == runs;
        int crc = writer_close(&w, done, rc ? NULL : e);
        rc = rc ? rc : crc;
        if (!rc && !done)
            rc = err_set(e, ERR_SYSTEM, "sweep: %ld of %ld rows written", w.next, runs);
        for (long i = 0; i < w.npend; i++)
            free(w.pending[i]);
        free(w.pending);
    }
    return rc;
}
