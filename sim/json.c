/* JSON through yajl_gen (see json.h). */
#include "sim/json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static void print_cb(void *ctx, const char *s, size_t len) { fwrite(s, 1, len, (FILE *)ctx); }

yajl_gen json_gen_new(FILE *f)
{
    yajl_gen g = yajl_gen_alloc(NULL);
    if (g)
        yajl_gen_config(g, yajl_gen_print_callback, print_cb, (void *)f);
    return g;
}

void json_str(yajl_gen g, const char *s)
{
    s = s ? s : "";
    yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

void json_int(yajl_gen g, long long v) { yajl_gen_integer(g, v); }

void json_num(yajl_gen g, double v)
{
    if (!isfinite(v)) {
        yajl_gen_null(g);
        return;
    }
    char buf[40];
    int n = snprintf(buf, sizeof buf, "%.15g", v);
    yajl_gen_number(g, buf, (size_t)n);
}

void json_num_text(yajl_gen g, const char *s) { yajl_gen_number(g, s, strlen(s)); }

void json_us(yajl_gen g, int64_t ps)
{
    char buf[48];
    int64_t a = ps < 0 ? -ps : ps;
    int n = snprintf(buf, sizeof buf, "%s%" PRId64 ".%06" PRId64, ps < 0 ? "-" : "",
                     a / 1000000, a % 1000000);
    yajl_gen_number(g, buf, (size_t)n);
}

void json_kv_str(yajl_gen g, const char *k, const char *v)
{
    json_str(g, k);
    json_str(g, v);
}

void json_kv_int(yajl_gen g, const char *k, long long v)
{
    json_str(g, k);
    json_int(g, v);
}

void json_kv_num(yajl_gen g, const char *k, double v)
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
    yajl_gen_map_open(t->g);
    json_kv_str(t->g, "displayTimeUnit", "ns");
    json_str(t->g, "traceEvents");
    yajl_gen_array_open(t->g);
    return 0;
}

static void meta(timeline *t, int pid, int tid, const char *what, const char *key,
                 const char *sval, long long ival)
{
    yajl_gen g = t->g;
    yajl_gen_map_open(g);
    json_kv_str(g, "ph", "M");
    json_kv_int(g, "pid", pid);
    if (tid >= 0)
        json_kv_int(g, "tid", tid);
    json_kv_str(g, "name", what);
    json_str(g, "args");
    yajl_gen_map_open(g);
    if (sval)
        json_kv_str(g, key, sval);
    else
        json_kv_int(g, key, ival);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
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
    yajl_gen g = t->g;
    yajl_gen_map_open(g);
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
    yajl_gen_map_open(g);
}

void tl_slice_end(timeline *t)
{
    yajl_gen_map_close(t->g);
    yajl_gen_map_close(t->g);
    fputc('\n', t->f);  /* one event per line: diffable, greppable */
}

void tl_instant(timeline *t, int pid, int tid, int64_t ts_ps, const char *name)
{
    yajl_gen g = t->g;
    yajl_gen_map_open(g);
    json_kv_str(g, "ph", "i");
    json_kv_str(g, "s", "t");
    json_kv_int(g, "pid", pid);
    json_kv_int(g, "tid", tid);
    json_str(g, "ts");
    json_us(g, ts_ps);
    json_kv_str(g, "name", name);
    yajl_gen_map_close(g);
    fputc('\n', t->f);
}

void tl_counter(timeline *t, int pid, int64_t ts_ps, const char *name, const char *key,
                double value)
{
    yajl_gen g = t->g;
    yajl_gen_map_open(g);
    json_kv_str(g, "ph", "C");
    json_kv_int(g, "pid", pid);
    json_str(g, "ts");
    json_us(g, ts_ps);
    json_kv_str(g, "name", name);
    json_str(g, "args");
    yajl_gen_map_open(g);
    json_kv_num(g, key, value);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
    fputc('\n', t->f);
}

int tl_close(timeline *t, err *e)
{
    yajl_gen_array_close(t->g);
    yajl_gen_map_close(t->g);
    yajl_gen_free(t->g);
    t->g = NULL;
    fputc('\n', t->f);
    if (fflush(t->f) != 0 || ferror(t->f))
        return err_set(e, ERR_SYSTEM, "timeline: write failed");
    return 0;
}
