/* Unit tests of the sweep grid and driver, against a deterministic fake
 * runner (the real one, what-if and replay, is exercised by
 * tests/cli/sweep.test): grid order and errors, byte-identical output for any
 * number of workers, resume after an interruption or a cut line, failed and
 * crashing runs. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "traces/sweep.h"
#include "traces/sweep_grid.h"

static sweep_grid *parse(const char *text, err *e, int *rc)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    sweep_grid *g = NULL;
    *rc = sweep_grid_parse(f, "t.grid", "", &g, e);
    fclose(f);
    return g;
}

static void test_grid_order(void **state)
{
    (void)state;
    err e = {0};
    int rc;
    sweep_grid *g = parse("# a comment first\n"
                          "collsim-grid 1\n"
                          "scenario s1 s2   # two inputs\n"
                          "set batch=1\n"
                          "vary allreduce=ring,oneshot,twoshot\n"
                          "vary accept_len=2,3\n",
                          &e, &rc);
    assert_int_equal(rc, 0);
    /* 2 inputs x 3 allreduce x 2 accept_len = 12 runs; columns are the
     * varied keys in file order; set lines are not columns. */
    assert_int_equal(sweep_grid_runs(g), 12);
    assert_int_equal(sweep_grid_ncols(g), 2);
    assert_string_equal(sweep_grid_col(g, 0), "allreduce");
    assert_int_equal(sweep_grid_nfixed(g), 1);
    /* Mixed radix, last vary fastest: run 7 = input 1 (7/6), allreduce
     * (7/2)%3 = 0 -> ring, accept_len 7%2 = 1 -> 3. */
    sweep_point pt;
    sweep_grid_point(g, 7, &pt);
    assert_string_equal(pt.input, "s2");
    assert_string_equal(pt.val[0], "ring");
    assert_string_equal(pt.val[1], "3");
    /* Run 5 = input 0, allreduce 2 -> twoshot, accept_len 1 -> 3. */
    sweep_grid_point(g, 5, &pt);
    assert_string_equal(pt.input, "s1");
    assert_string_equal(pt.val[0], "twoshot");
    assert_string_equal(pt.val[1], "3");
    sweep_grid_free(g);

    /* Combos: each combo line is one point, crossed with the vary lines;
     * keys a combo leaves out are NULL (the scenario's default). 1 input x
     * 2 combos x 2 values = 4 runs; run 2 = combo 1 (accept_len unset), v=a. */
    g = parse("collsim-grid 1\nscenario s\ncombo allreduce=ring accept_len=2\n"
              "combo allreduce=oneshot\nvary v=a,b\n", &e, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(sweep_grid_runs(g), 4);
    assert_int_equal(sweep_grid_ncols(g), 3);
    sweep_grid_point(g, 2, &pt);
    assert_string_equal(pt.val[0], "oneshot");
    assert_null(pt.val[1]);
    assert_string_equal(pt.val[2], "a");
    sweep_grid_free(g);
}

static void test_grid_trace_folder(void **state)
{
    (void)state;
    char dir[] = "/tmp/sweep_testXXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    const char *names[] = {"b.trace", "a.trace", ".hidden", "c.trace.gz"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/caps/%s", dir, names[i]);
        if (i == 0) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s/caps", dir);
            assert_int_equal(mkdir(sub, 0700), 0);
        }
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    const char *text = "collsim-grid 1\ntrace caps/\n";
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    sweep_grid *g = NULL;
    err e = {0};
    assert_int_equal(sweep_grid_parse(f, "t.grid", dir, &g, &e), 0);
    fclose(f);
    /* A folder is its files sorted by name, dot-files skipped: a, b, c;
     * named as the grid wrote the folder, opened relative to the grid's. */
    assert_int_equal(sweep_grid_runs(g), 3);
    sweep_point pt;
    sweep_grid_point(g, 0, &pt);
    assert_string_equal(pt.input, "caps/a.trace");
    snprintf(path, sizeof path, "%s/caps/a.trace", dir);
    assert_string_equal(pt.path, path);
    assert_int_equal(pt.kind, SWEEP_TRACE);
    sweep_grid_point(g, 2, &pt);
    assert_string_equal(pt.input, "caps/c.trace.gz");
    sweep_grid_free(g);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/caps/%s", dir, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/caps", dir);
    rmdir(path);
    rmdir(dir);
}

static void test_grid_errors(void **state)
{
    (void)state;
    /* Each bad grid names its line and what is wrong, with ERR_INPUT. */
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"scenario s\n", "t.grid:1: expected 'collsim-grid 1'"},
        {"collsim-grid 2\n", "t.grid:1: collsim-grid version 2"},
        {"collsim-grid 1\nscenario s\nvary allreduce=ring,,oneshot\n", "t.grid:3: vary allreduce"},
        {"collsim-grid 1\nscenario s\nvary a=1,1\n", "t.grid:3: vary a: value '1' given twice"},
        {"collsim-grid 1\nscenario s\nset a=1\nvary a=2,3\n", "t.grid:4: key 'a' is already set on line 3"},
        {"collsim-grid 1\nscenario s\nvary a=2,3\ncombo a=1\n", "t.grid:4: key 'a' is already varied on line 3"},
        {"collsim-grid 1\nscenario s\nfrobnicate x\n", "t.grid:3: unknown directive 'frobnicate'"},
        {"collsim-grid 1\nvary a=1\n", "t.grid: no scenario or trace line"},
        {"collsim-grid 1\nscenario s\nset novalue\n", "t.grid:3: set: expected KEY=VALUE"},
        {"collsim-grid 1\ntrace does/not/exist.trace\n", "t.grid:2: trace 'does/not/exist.trace'"},
        {"collsim-grid 1\nscenario s\nvary a=1,2,3,4,5,6,7,8,9,10\nvary b=1,2,3,4,5,6,7,8,9,10\n"
         "vary c=1,2,3,4,5,6,7,8,9,10\nvary d=1,2,3,4,5,6,7,8,9,10\nvary e=1,2,3,4,5,6,7,8,9,10\n"
         "vary f=1,2,3,4,5,6,7,8,9,10\nvary g=1,2,3,4,5,6,7,8,9,10\nvary h=1,2,3,4,5,6,7,8,9,10\n"
         "vary i=1,2\n", "more than 10^8 runs"},
        {"", "t.grid: empty file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err e = {0};
        int rc;
        sweep_grid *g = parse(cases[i].text, &e, &rc);
        assert_null(g);
        assert_int_equal(rc, ERR_INPUT);
        if (!strstr(e.msg, cases[i].msg))
            fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].msg);
    }
}

/* --- the driver, with a fake runner ------------------------------------------ */

static const sweep_metric fake_metrics[] = {{"tok_per_s", 3}, {"cycle_us", 3}, {"neg", 2}};

/* Deterministic and cheap: a hash of the knobs and input; knob fail=yes makes
 * the run fail, crash=yes kills its worker. */
static int fake_run(void *ctx, sweep_kind kind, const char *path, int nfixed, int n,
                    const char *const *key, const char *const *value, double *m, err *e)
{
    (void)ctx;
    (void)kind;
    (void)nfixed;
    unsigned h = 2166136261u;
    for (const char *p = path; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    for (int i = 0; i < n; i++) {
        if (!strcmp(key[i], "fail") && !strcmp(value[i], "yes"))
            return err_set(e, ERR_INPUT, "fake.trace:%d: asked to fail,\n\"really\"", i);
        if (!strcmp(key[i], "crash") && !strcmp(value[i], "yes"))
            raise(SIGKILL);
        for (const char *p = value[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 16777619u;
    }
    m[0] = (h % 100000) / 7.0;
    m[1] = 1e6 / (1 + h % 977);
    m[2] = -0.001;   /* prints as 0.00, never -0.00 */
    return 0;
}

static const char *fake_grid =
    "collsim-grid 1\nscenario s1 s2\nvary allreduce=ring,oneshot,twoshot\n"
    "vary accept_len=1.5,2,2.5,3\ncombo fail=no\ncombo fail=yes tp=4\ncombo tp=8\n";

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

typedef struct prog {
    long calls, last;
} prog;

static void on_progress(void *ctx, long written, long total, long resumed)
{
    prog *p = ctx;
    (void)resumed;
    assert_true(written > p->last && written <= total);
    p->last = written;
    p->calls++;
}

/* Run the fake grid with `workers` into dir/out.csv (+ .jsonl); returns rc. */
static int run_fake(const char *grid_text, int workers, const char *dir, int resume,
                    long stop_after, sweep_summary *sum, err *e, prog *p)
{
    int rc;
    sweep_grid *g = parse(grid_text, e, &rc);
    assert_non_null(g);
    sweep_runner r = {fake_metrics, 3, fake_run, NULL, NULL};
    char out[256], jl[256];
    snprintf(out, sizeof out, "%s/out.csv", dir);
    snprintf(jl, sizeof jl, "%s/out.jsonl", dir);
    sweep_opts o = {.out_path = out, .jsonl_path = jl, .resume = resume,
                    .stop_after = stop_after, .progress = p ? on_progress : NULL,
                    .progress_ctx = p};
    sweep *s = sweep_new(g, &r, workers, e);
    assert_non_null(s);
    sweep_mpi *m = NULL;
    assert_int_equal(sweep_mpi_init(&m, e), 0);
    rc = sweep_exec(s, m, &o, sum, e);
    sweep_mpi_finish(m);
    sweep_free(s);
    sweep_grid_free(g);
    return rc;
}

static void file_in(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static void test_same_bytes_any_workers(void **state)
{
    (void)state;
    char dir[] = "/tmp/sweep_testXXXXXX";
    assert_non_null(mkdtemp(dir));
    char csv[256], jl[256];
    file_in(csv, sizeof csv, dir, "out.csv");
    file_in(jl, sizeof jl, dir, "out.jsonl");
    char *ref_csv = NULL, *ref_jl = NULL;
    for (int workers = 1; workers <= 3; workers++) {
        sweep_summary sum;
        err e = {0};
        prog p = {0, 0};
        /* 2 inputs x 3 combos x 3 x 4 = 72 runs; the 24 with fail=yes are
         * failed rows, the others ok; every row is written once. */
        assert_int_equal(run_fake(fake_grid, workers, dir, 0, 0, &sum, &e, &p), 0);
        assert_int_equal(sum.runs, 72);
        assert_int_equal(sum.failed, 24);
        assert_int_equal(p.calls, 72);
        assert_int_equal(sum.failed_run[0], 12);   /* combo 1 of input 0: runs 12..23 */
        assert_non_null(strstr(sum.failed_msg[0], "fake.trace:2: asked to fail"));
        char *c = slurp(csv), *j = slurp(jl);
        assert_non_null(c);
        assert_non_null(j);
        if (!ref_csv) {
            ref_csv = c;
            ref_jl = j;
            /* Header, then rows in run order with fixed digits. */
            assert_non_null(strstr(c, "run,kind,input,allreduce,accept_len,fail,tp,status,"
                                      "tok_per_s,cycle_us,neg,error\n0,scenario,s1,ring,1.5,no,,ok,"));
            /* A failed row: empty metrics, the message quoted on one line. */
            assert_non_null(strstr(c, "\n12,scenario,s1,ring,1.5,yes,4,failed,,,,\"fake.trace:2: "
                                      "asked to fail, \"\"really\"\"\"\n"));
            assert_null(strstr(c, "-0.00"));
            assert_non_null(strstr(j, "{\"run\":12,\"kind\":\"scenario\",\"input\":\"s1\","
                                      "\"allreduce\":\"ring\",\"accept_len\":\"1.5\",\"fail\":\"yes\","
                                      "\"tp\":\"4\",\"status\":\"failed\",\"tok_per_s\":null"));
        } else {
            /* Any number of workers: the very same bytes. */
            assert_string_equal(c, ref_csv);
            assert_string_equal(j, ref_jl);
            free(c);
            free(j);
        }
    }
    free(ref_csv);
    free(ref_jl);
    unlink(csv);
    unlink(jl);
    rmdir(dir);
}

static void test_resume(void **state)
{
    (void)state;
    char dir[] = "/tmp/sweep_testXXXXXX";
    assert_non_null(mkdtemp(dir));
    char csv[256], jl[256], part[300], jpart[300];
    file_in(csv, sizeof csv, dir, "out.csv");
    file_in(jl, sizeof jl, dir, "out.jsonl");
    snprintf(part, sizeof part, "%s.part", csv);
    snprintf(jpart, sizeof jpart, "%s.part", jl);
    sweep_summary sum;
    err e = {0};
    assert_int_equal(run_fake(fake_grid, 2, dir, 0, 0, &sum, &e, NULL), 0);
    char *ref = slurp(csv), *ref_jl = slurp(jl);
    unlink(csv);
    unlink(jl);

    /* Stop after 30 rows: no out.csv, out.csv.part holds the header and
     * exactly rows 0..29. */
    assert_int_equal(run_fake(fake_grid, 2, dir, 0, 30, &sum, &e, NULL), ERR_SYSTEM);
    assert_non_null(strstr(e.msg, "stopped after 30 runs"));
    assert_int_equal(access(csv, F_OK), -1);
    char *c = slurp(part);
    int lines = 0;
    for (char *p = c; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 31);
    assert_memory_equal(c, ref, strlen(c));
    free(c);

    /* Simulate a kill mid-row: a cut line at the end of both parts. */
    FILE *f = fopen(part, "a");
    fputs("30,scenario,s1,one", f);
    fclose(f);
    f = fopen(jpart, "a");
    fputs("{\"run\":30,\"ki", f);
    fclose(f);

    /* Resume: 30 rows kept, the cut line dropped, the other 42 run; the
     * result is byte for byte the uninterrupted run, with no .part left. */
    assert_int_equal(run_fake(fake_grid, 3, dir, 1, 0, &sum, &e, NULL), 0);
    assert_int_equal(sum.resumed, 30);
    c = slurp(csv);
    char *j = slurp(jl);
    assert_string_equal(c, ref);
    assert_string_equal(j, ref_jl);
    assert_int_equal(access(part, F_OK), -1);
    free(c);
    free(j);

    /* Resume of a finished sweep: nothing to run, same bytes. */
    assert_int_equal(run_fake(fake_grid, 1, dir, 1, 0, &sum, &e, NULL), 0);
    assert_int_equal(sum.resumed, 72);
    c = slurp(csv);
    assert_string_equal(c, ref);
    free(c);

    /* A part from another grid (a value changed) is refused, left as it
     * was, with the line that differs: row 1 (line 3) has accept_len 2. */
    assert_int_equal(run_fake(fake_grid, 2, dir, 0, 5, &sum, &e, NULL), ERR_SYSTEM);
    unlink(csv);
    unlink(jl);
    const char *other = "collsim-grid 1\nscenario s1 s2\nvary allreduce=ring,oneshot,twoshot\n"
                        "vary accept_len=1.5,2.25,2.5,3\ncombo fail=no\ncombo fail=yes tp=4\n"
                        "combo tp=8\n";
    assert_int_equal(run_fake(other, 2, dir, 1, 0, &sum, &e, NULL), ERR_INPUT);
    assert_non_null(strstr(e.msg, "out.csv.part:3: row is not run 1 of this grid"));
    c = slurp(part);
    assert_memory_equal(c, ref, strlen(c));
    free(c);
    unlink(part);
    unlink(jpart);
    free(ref);
    free(ref_jl);
    rmdir(dir);
}

static void test_crash_is_a_failed_row(void **state)
{
    (void)state;
    char dir[] = "/tmp/sweep_testXXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *grid = "collsim-grid 1\nscenario s\nvary crash=no,yes,no2\n";
    for (int workers = 1; workers <= 2; workers++) {
        sweep_summary sum;
        err e = {0};
        /* Run 1 kills its worker: it is a failed row naming the signal; runs
         * 0 and 2 still have their results. */
        assert_int_equal(run_fake(grid, workers, dir, 0, 0, &sum, &e, NULL), 0);
        assert_int_equal(sum.failed, 1);
        assert_int_equal(sum.failed_run[0], 1);
        assert_non_null(strstr(sum.failed_msg[0], "worker killed by signal 9"));
        char csv[256];
        file_in(csv, sizeof csv, dir, "out.csv");
        char *c = slurp(csv);
        assert_non_null(strstr(c, "\n0,scenario,s,no,ok,"));
        assert_non_null(strstr(c, "\n1,scenario,s,yes,failed,,,,worker killed by signal 9"));
        assert_non_null(strstr(c, "\n2,scenario,s,no2,ok,"));
        free(c);
        unlink(csv);
        file_in(csv, sizeof csv, dir, "out.jsonl");
        unlink(csv);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_order),
        cmocka_unit_test(test_grid_trace_folder),
        cmocka_unit_test(test_grid_errors),
        cmocka_unit_test(test_same_bytes_any_workers),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_crash_is_a_failed_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
