/* Measurement tables and metadata. The column names are the format (other
 * programs parse them); the titles and widths are for people. */
#include "hwcheck/meas.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hwcheck/patterns.h"

static const report_col transfer_cols[] = {
    {"case", NULL, 5, -1},     {"pattern", NULL, 12, -1}, {"op", NULL, 6, -1},
    {"flow", NULL, 5, -1},     {"src", NULL, 6, -1},      {"dst", NULL, 6, -1},
    {"bytes", NULL, 12, -1},   {"time_us", "time(us)", 12, 2},
    {"bw_GBps", "bw(GB/s)", 10, 2},
};
static const report_col launch_cols[] = {
    {"what", NULL, 14, -1}, {"count", NULL, 8, -1}, {"time_us", "time(us)", 10, 3},
};
static const report_col coll_cols[] = {
    {"size_bytes", "size", 12, -1},  {"count", NULL, 12, -1},
    {"dtype", "type", 6, -1},        {"algo", NULL, 12, -1},
    {"proto", NULL, 6, -1},          {"channels", "ch", 3, -1},
    {"time_us", "time(us)", 10, 2},  {"algbw_GBps", "algbw", 8, 2},
    {"busbw_GBps", "busbw", 8, 2},   {"impl", NULL, 12, -1},
    {"graph", NULL, 5, -1},          {"wrong", "#wrong", 7, -1},
    {"probe_us", "probe", 7, 3},     {"round_min_us", "rmin", 8, 2},
    {"round_med_us", "rmed", 8, 2},
};
static const report_col replay_cols[] = {
    {"trace", NULL, 24, -1},          {"allreduce", NULL, 12, -1},
    {"cycles", NULL, 7, -1},          {"tokens", NULL, 9, 2},
    {"cycle_us", "cycle(us)", 10, 2}, {"tok_per_s", "tok/s", 10, 1},
    {"compute_us", "compute", 10, 2}, {"comm_us", "comm", 10, 2},
    {"launch_us", "launch", 10, 2},   {"idle_us", "idle", 10, 2},
};

static const struct {
    const char *name;
    const report_col *cols;
    int ncols;
} kinds[MEAS_NKINDS] = {
    {"p2p", transfer_cols, 9},  {"flows", transfer_cols, 9}, {"host", transfer_cols, 9},
    {"launch", launch_cols, 3}, {"coll", coll_cols, 15},     {"replay", replay_cols, 10},
};

const char *meas_kind_name(meas_kind k) { return kinds[k].name; }

const report_col *meas_cols(meas_kind k, int *ncols)
{
    *ncols = kinds[k].ncols;
    return kinds[k].cols;
}

void meas_write_meta(report *r, meas_kind k, const meas_meta *m)
{
    report_meta(r, "format", "collsim-meas 1");
    report_meta(r, "kind", "%s", kinds[k].name);
    report_meta(r, "machine", "%s", m->machine);
    report_meta(r, "gpus", "%s", m->gpus);
    report_meta(r, "driver", "%s", m->driver);
    report_meta(r, "cuda", "%s", m->cuda);
    report_meta(r, "nccl", "%s", m->nccl);
    report_meta(r, "date", "%s", m->date);
    report_meta(r, "command", "%s", m->command);
    for (int i = 0; i < m->ntopo; i++)
        report_meta(r, "topo", "%s", m->topo[i]);
    for (int i = 0; i < m->nextra; i++)
        report_meta(r, m->extra_key[i], "%s", m->extra_val[i]);
}

void meas_extra(meas_meta *m, const char *key, const char *fmt, ...)
{
    if (m->nextra >= MEAS_MAX_EXTRA)
        return;
    snprintf(m->extra_key[m->nextra], sizeof m->extra_key[0], "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->extra_val[m->nextra], sizeof m->extra_val[0], fmt, ap);
    va_end(ap);
    m->nextra++;
}

void meas_command(int argc, char **argv, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < argc && k + 1 < n; i++) {
        const char *a = argv[i];
        int plain = *a != 0 && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_=./:,+@%") == strlen(a);
        int w = plain ? snprintf(buf + k, n - k, "%s%s", i ? " " : "", a)
                      : snprintf(buf + k, n - k, "%s'%s'", i ? " " : "", a);
        if (w < 0 || (size_t)w >= n - k)
            break;
        k += (size_t)w;
    }
}

void meas_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void meas_endpoint(int gpu, int numa, char *buf, size_t n)
{
    if (gpu == PATTERNS_HOST)
        snprintf(buf, n, "host%d", numa < 0 ? 0 : numa);
    else
        snprintf(buf, n, "%d", gpu);
}

void meas_transfer_row(report *r, int case_no, const char *pattern, const char *op, int flow,
                       const char *src, const char *dst, uint64_t bytes, double time_us)
{
    report_int(r, case_no);
    report_str(r, pattern);
    report_str(r, op);
    report_int(r, flow);
    report_str(r, src);
    report_str(r, dst);
    report_int(r, (long long)bytes);
    report_num(r, time_us);
    report_num(r, time_us > 0 ? (double)bytes / (time_us * 1e3) : 0.0);
}
