/* JSON through sim/jw.h (see json.h). */
#include "sim/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

jw *json_gen_new(FILE *f)
{
    jw *g = malloc(sizeof *g);
    if (g)
        jw_init(g, f);
    return g;
}

void json_gen_free(jw *g) { free(g); }

void json_str(jw *g, const char *s)
{
    jw_str(g, s);
}

void json_int(jw *g, long long v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%lld", v);
    jw_raw(g, buf);
}

void json_num(jw *g, double v)
{
    if (!isfinite(v)) {
        jw_raw(g, "null");
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    jw_raw(g, buf);
}

void json_num_text(jw *g, const char *s) { jw_raw(g, s); }

void json_us(jw *g, int64_t ps)
{
    char buf[48];
    int64_t a = ps < 0 ? -ps : ps;
    snprintf(buf, sizeof buf, "%s%" PRId64 ".%06" PRId64, ps < 0 ? "-" : "", a / 1000000,
             a % 1000000);
    jw_raw(g, buf);
}

void json_kv_str(jw *g, const char *k, const char *v)
{
    json_str(g, k);
    json_str(g, v);
}

void json_kv_int(jw *g, const char *k, long long v)
{
    json_str(g, k);
    json_int(g, v);
}

void json_kv_num(jw *g, const char *k, double v)
{
    json_str(g, k);
    json_num(g, v);
}

int tl_open(timeline *t, FILE *f, err *e)
{
    t->f = f;
    t->g = json_gen_new(f);
    if (!t->g)
        return err_set(e, ERR_SYSTEM, "out of memory");
    jw_open(t->g, 1);
    json_kv_str(t->g, "displayTimeUnit", "ns");
    json_str(t->g, "traceEvents");
    jw_open(t->g, 0);
    return 0;
}

static void meta(timeline *t, int pid, int tid, const char *what, const char *key,
                 const char *sval, long long ival)
{
    jw *g = t->g;
    jw_open(g, 1);
    json_kv_str(g, "ph", "M");
    json_kv_int(g, "pid", pid);
    if (tid >= 0)
        json_kv_int(g, "tid", tid);
    json_kv_str(g, "name", what);
    json_str(g, "args");
    jw_open(g, 1);
    if (sval)
        json_kv_str(g, key, sval);
    else
        json_kv_int(g, key, ival);
    jw_close(g);
    jw_close(g);
}

void tl_process(timeline *t, int pid, const char *name, int sort)
{
    meta(t, pid, -1, "process_name", "name", name, 0);
    meta(t, pid, -1, "process_sort_index", "sort_index", NULL, sort);
}

void tl_thread(timeline *t, int pid, int tid, const char *name, int sort)
{
    meta(t, pid, tid, "thread_name", "name", name, 0);
    meta(t, pid, tid, "thread_sort_index", "sort_index", NULL, sort);
}

void tl_slice(timeline *t, int pid, int tid, int64_t ts_ps, int64_t dur_ps, const char *name,
              const char *cat)
{
    jw *g = t->g;
    jw_open(g, 1);
    json_kv_str(g, "ph", "X");
    json_kv_int(g, "pid", pid);
    json_kv_int(g, "tid", tid);
    json_str(g, "ts");
    json_us(g, ts_ps);
    json_str(g, "dur");
    json_us(g, dur_ps);
    json_kv_str(g, "name", name);
    if (cat)
        json_kv_str(g, "cat", cat);
    json_str(g, "args");
    jw_open(g, 1);
}

void tl_slice_end(timeline *t)
{
    jw_close(t->g);
    jw_close(t->g);
    fputc('\n', t->f);  /* one event per line: diffable, greppable */
}

void tl_instant(timeline *t, int pid, int tid, int64_t ts_ps, const char *name)
{
    jw *g = t->g;
    jw_open(g, 1);
    json_kv_str(g, "ph", "i");
    json_kv_str(g, "s", "t");
    json_kv_int(g, "pid", pid);
    json_kv_int(g, "tid", tid);
    json_str(g, "ts");
    json_us(g, ts_ps);
    json_kv_str(g, "name", name);
    jw_close(g);
    fputc('\n', t->f);
}

void tl_counter(timeline *t, int pid, int64_t ts_ps, const char *name, const char *key,
                double value)
{
    jw *g = t->g;
    jw_open(g, 1);
    json_kv_str(g, "ph", "C");
    json_kv_int(g, "pid", pid);
    json_str(g, "ts");
    json_us(g, ts_ps);
    json_kv_str(g, "name", name);
    json_str(g, "args");
    jw_open(g, 1);
    json_kv_num(g, key, value);
    jw_close(g);
    jw_close(g);
    fputc('\n', t->f);
}

char *tl_size_text(uint64_t bytes, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(buf, n, u && v != floor(v) ? "%.3g %s" : "%.0f %s", v, unit[u]);
    return buf;
}

int tl_close(timeline *t, err *e)
{
    jw_close(t->g);
    jw_close(t->g);
    json_gen_free(t->g);
    t->g = NULL;
    fputc('\n', t->f);
    if (fflush(t->f) != 0 || ferror(t->f))
        return err_set(e, ERR_SYSTEM, "timeline: write failed");
    return 0;
}
