/* The fuzz targets, a table of name and function. Path-based readers get
 * the bytes through one temporary file per process (reused). */
#define _POSIX_C_SOURCE 200809L
#include "fuzz/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "models/topo/topo.h"
#include "traces/kineto.h"
#include "traces/replay.h"
#include "traces/sweep_grid.h"
#include "traces/trace.h"
#include "traces/whatif.h"
#include "validate/calib.h"
#include "validate/meas.h"

static const char *tmp_path(void);
static void rm_tmp(void) { unlink(tmp_path()); }

/* The temporary file: a fuzzing process owns it for its lifetime. */
static const char *tmp_path(void)
{
    static char path[4200];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/collsim-fuzz.%ld", dir && *dir ? dir : "/tmp",
                 (long)getpid());
        atexit(rm_tmp);
    }
    return path;
}

static int put_file(const uint8_t *d, size_t n, int gzip)
{
    const char *p = tmp_path();
    if (gzip) {
        gzFile gz = gzopen(p, "wb1");
        if (!gz)
            return -1;
        if (n && gzwrite(gz, d, (unsigned)n) <= 0) {
            gzclose(gz);
            return -1;
        }
        return gzclose(gz) == Z_OK ? 0 : -1;
    }
    FILE *f = fopen(p, "wb");
    if (!f)
        return -1;
    size_t w = n ? fwrite(d, 1, n, f) : 0;
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

static FILE *mem(const uint8_t *d, size_t n)
{
    /* fmemopen of size 0 fails; an empty file is a case too. */
    static const uint8_t none[1];
    return fmemopen((void *)(n ? d : none), n ? n : 1, "r");
}

static void t_topo(const uint8_t *d, size_t n)
{
    FILE *f = mem(d, n);
    topo *t = NULL;
    err e = {0};
    if (f && topo_parse(f, "fuzz.topo", &t, &e) == 0) {
        FILE *o = fopen("/dev/null", "w");
        if (o) {
            topo_write(t, o, &e);
            fclose(o);
        }
    }
    topo_free(t);
    if (f)
        fclose(f);
}

static void t_smi(const uint8_t *d, size_t n)
{
    FILE *f = mem(d, n);
    topo *t = NULL;
    err e = {0};
    if (f)
        topo_import_smi(f, "fuzz.smi", &t, &e);
    topo_free(t);
    if (f)
        fclose(f);
}

static void t_xml(const uint8_t *d, size_t n)
{
    topo *t = NULL;
    err e = {0};
    if (put_file(d, n, 0) == 0)
        topo_import_xml(tmp_path(), &t, &e);
    topo_free(t);
}

static void t_calib(const uint8_t *d, size_t n)
{
    FILE *f = mem(d, n);
    calib *c = NULL;
    err e = {0};
    if (f && calib_parse(f, "fuzz.calib", &c, &e) == 0) {
        /* Apply it, as --calib does, to the default preset. */
        topo *t = NULL, *ct = NULL;
        if (topo_load("rtxpro6000-8x-pcie5-2s", &t, &e) == 0)
            calib_apply(c, t, &ct, &e);
        topo_free(ct);
        topo_free(t);
    }
    calib_free(c);
    if (f)
        fclose(f);
}

static void t_meas(const uint8_t *d, size_t n)
{
    FILE *f = mem(d, n);
    meas_set *m = NULL;
    err e = {0};
    if (f)
        meas_read(f, "fuzz.csv", &m, &e);
    meas_free(m);
    if (f)
        fclose(f);
}

static void t_grid(const uint8_t *d, size_t n)
{
    FILE *f = mem(d, n);
    sweep_grid *g = NULL;
    err e = {0};
    if (f)
        sweep_grid_parse(f, "fuzz.grid", "", &g, &e);
    sweep_grid_free(g);
    if (f)
        fclose(f);
}

static void t_scenario(const uint8_t *d, size_t n)
{
    whatif_scenario s;
    err e = {0};
    if (put_file(d, n, 0) == 0)
        whatif_scenario_load(tmp_path(), &s, &e);
}

/* Parse every op and replay it without a topology (collectives then fail:
 * the time arithmetic and the reader are what is under test). */
static void trace_common(void)
{
    trace_reader *r = NULL;
    err e = {0};
    if (trace_open(tmp_path(), &r, &e) != 0)
        return;
    replay *rp = replay_new(NULL, NULL, NULL);
    trace_op op;
    while (rp && trace_next(r, &op, &e) == 1) {
        if (op.kind == OP_COLL)
            continue;
        if (replay_op(rp, &op, &e) != 0)
            break;
    }
    if (rp) {
        replay_result res;
        replay_finish(rp, &res, &e);
    }
    replay_free(rp);
    trace_close(r);
}

static void t_trace(const uint8_t *d, size_t n)
{
    if (put_file(d, n, 0) == 0)
        trace_common();
}

static void t_trace_gz(const uint8_t *d, size_t n)
{
    if (put_file(d, n, 1) == 0)
        trace_common();
}

static void kineto_common(void)
{
    kineto_rank *k = NULL;
    err e = {0};
    if (kineto_load(tmp_path(), &k, &e) == 0) {
        trace_writer *w = trace_writer_new("/dev/null", &e);
        kineto_opts o = {1.0, 0};
        kineto_summary s;
        if (w && kineto_write(&k, 1, &o, w, &s, &e) == 0)
            trace_writer_commit(w, &e);
        else
            trace_writer_abort(w);
    }
    kineto_free(k);
}

/* As given: plain JSON, or gzip when the bytes are (the seeds are). */
static void t_kineto(const uint8_t *d, size_t n)
{
    if (put_file(d, n, 0) == 0)
        kineto_common();
}

/* The bytes as JSON inside a gzip stream: mutations reach the JSON. */
static void t_kineto_gz(const uint8_t *d, size_t n)
{
    if (put_file(d, n, 1) == 0)
        kineto_common();
}

static const struct {
    const char *name;
    void (*run)(const uint8_t *, size_t);
} targets[] = {
    {"kineto", t_kineto},     {"kineto-gz", t_kineto_gz}, {"trace", t_trace},
    {"trace-gz", t_trace_gz}, {"topo", t_topo},           {"xml", t_xml},
    {"smi", t_smi},           {"calib", t_calib},         {"scenario", t_scenario},
    {"meas", t_meas},         {"grid", t_grid},
};
enum { NTARGETS = sizeof targets / sizeof targets[0] };

const char *fuzz_target_name(int i) { return i >= 0 && i < NTARGETS ? targets[i].name : NULL; }

int fuzz_run(const char *name, const uint8_t *data, size_t n)
{
    for (int i = 0; i < NTARGETS; i++)
        if (!strcmp(name, targets[i].name)) {
            targets[i].run(data, n);
            return 0;
        }
    return -1;
}
