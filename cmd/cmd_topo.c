/* `collsim topo`: show a topology (nodes, links, the nvidia-smi style path
 * matrix, optionally every GPU route), list the presets, export one to the
 * text format, and import NCCL XML dumps or `nvidia-smi topo -m` output.
 * All tables go through the report writer; files through ofile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "models/topo/topo.h"
#include "sim/input.h"
#include "sim/ofile.h"

enum { MATRIX_MAX_GPUS = 32, ROUTES_MAX_GPUS = 16 };

static const char *const kind_names[TOPO_NKINDS] = {
    "gpu", "switch", "root", "cpu", "nvswitch", "hostmem",
};
static const char *const link_names[LINK_NKINDS] = {
    "pcie", "fabric", "socket", "nvlink", "mem",
};

static const report_col node_cols[] = {
    {"name", NULL, 12, -1}, {"kind", NULL, 9, -1}, {"gpu", NULL, 4, -1},
    {"numa", NULL, 5, -1}, {"parent", NULL, 12, -1},
};
static const report_col link_cols[] = {
    {"a", NULL, 10, -1}, {"b", NULL, 10, -1}, {"kind", NULL, 7, -1},
    {"gen", NULL, 4, -1}, {"width", NULL, 5, -1}, {"lanes", NULL, 5, -1},
    {"bw_GBps", NULL, 9, 2}, {"bw_from", NULL, 8, -1}, {"lat_ns", NULL, 8, 1},
};
static const report_col count_cols[] = {{"path", NULL, 6, -1}, {"pairs", NULL, 10, -1}};
static const report_col route_cols[] = {
    {"src", NULL, 6, -1}, {"dst", NULL, 6, -1}, {"path", NULL, 5, -1},
    {"lat_ns", NULL, 8, 1}, {"min_bw_GBps", NULL, 11, 2}, {"hops", NULL, 4, -1},
    {"route", NULL, 40, -1},
};
static const report_col preset_cols[] = {{"name", NULL, 24, -1}, {"description", NULL, 1, -1}};

static void path_matrix(report *r, const topo *t)
{
    int n = topo_ngpus(t);
    report_col *cols = calloc((size_t)n + 2, sizeof *cols);
    char (*names)[16] = calloc((size_t)n, sizeof *names);
    if (!cols || !names) {
        free(cols);
        free(names);
        return;
    }
    cols[0] = (report_col){"gpu", "", 6, -1};
    for (int g = 0; g < n; g++) {
        snprintf(names[g], sizeof names[g], "GPU%d", g);
        cols[g + 1] = (report_col){names[g], NULL, 5, -1};
    }
    cols[n + 1] = (report_col){"numa", "NUMA Affinity", 14, -1};
    report_table(r, "gpu paths (nvidia-smi topo -m)", cols, n + 2);
    char buf[8];
    for (int a = 0; a < n; a++) {
        report_str(r, names[a]);
        for (int b = 0; b < n; b++)
            report_str(r, topo_gpu_path_smi(t, a, b, buf));
        int numa = topo_node_at(t, topo_gpu_node(t, a))->numa;
        if (numa >= 0)
            report_int(r, numa);
        else
            report_str(r, "N/A");
        report_end_row(r);
    }
    /* The table's columns must outlive it: it is the last use of them. The
     * legend is for people: csv keeps comments before its headers only. */
    if (report_fmt(r) == REPORT_TABLE)
        report_note(r, "X = self, PIX = at most one PCIe switch, PXB = several switches, PHB = "
                "one host bridge, NODE = host bridges of one NUMA node, SYS = across the "
                "socket link, NV# = # NVLink lanes");
    free(cols);
    free(names);
}

static void path_counts(report *r, const topo *t)
{
    static const char *const codes[] = {"NV", "PIX", "PXB", "PHB", "NODE", "SYS"};
    long long cnt[6] = {0};
    int n = topo_ngpus(t);
    char buf[8];
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            topo_gpu_path_smi(t, a, b, buf);
            for (int i = 0; i < 6; i++)
                if (!strncmp(buf, codes[i], strlen(codes[i])) &&
                    (i || (buf[2] >= '0' && buf[2] <= '9'))) {
                    cnt[i]++;
                    break;
                }
        }
    report_table(r, "gpu pairs by path type (too many GPUs for the matrix)", count_cols, 2);
    for (int i = 0; i < 6; i++) {
        report_str(r, codes[i]);
        report_int(r, cnt[i]);
        report_end_row(r);
    }
}

static void routes_table(report *r, const topo *t)
{
    report_table(r, "routes", route_cols, 7);
    int n = topo_ngpus(t);
    char route[1024], path[8];
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            int na = topo_gpu_node(t, a), nb = topo_gpu_node(t, b);
            const int *links;
            const int8_t *dirs;
            int h = topo_route(t, na, nb, &links, &dirs);
            size_t len = (size_t)snprintf(route, sizeof route, "%s", topo_node_at(t, na)->name);
            double minbw = 1e300;
            for (int i = 0; i < h; i++) {
                const topo_link *l = topo_link_at(t, links[i]);
                int to = dirs[i] ? l->a : l->b;
                if (l->bw_Bps < minbw)
                    minbw = l->bw_Bps;
                if (len < sizeof route)
                    len += (size_t)snprintf(route + len, sizeof route - len, ">%s",
                                            topo_node_at(t, to)->name);
            }
            report_str(r, topo_node_at(t, na)->name);
            report_str(r, topo_node_at(t, nb)->name);
            report_str(r, topo_gpu_path_smi(t, a, b, path));
            report_num(r, (double)topo_route_lat_ps(t, na, nb) / 1e3);
            report_num(r, minbw / 1e9);
            report_int(r, h);
            report_str(r, route);
            report_end_row(r);
        }
}

static int show(const char *name, int routes, report_format fmt, err *e)
{
    topo *t;
    TRY(topo_load(name, &t, e));
    report *r = report_new(stdout, fmt);
    if (!r) {
        topo_free(t);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    const topo_params *p = topo_params_get(t);
    report_meta(r, "topology", "%s", topo_name(t));
    report_meta(r, "gpus", "%d", topo_ngpus(t));
    report_meta(r, "nodes", "%d", topo_nnodes(t));
    report_meta(r, "links", "%d", topo_nlinks(t));
    /* Every key the format takes, from its own table, so that none is left
     * out of the listing. */
    double value;
    const char *key;
    for (int k = 0; (key = topo_param_key(p, k, &value)); k++)
        report_meta(r, key, "%g", value);
    report_table(r, "nodes", node_cols, 5);
    for (int v = 0; v < topo_nnodes(t); v++) {
        const topo_node *n = topo_node_at(t, v);
        report_str(r, n->name);
        report_str(r, kind_names[n->kind]);
        report_int(r, n->gpu);
        report_int(r, n->numa);
        report_str(r, n->pci_parent >= 0 ? topo_node_at(t, n->pci_parent)->name : "-");
        report_end_row(r);
    }
    report_table(r, "links (per direction)", link_cols, 9);
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        report_str(r, topo_node_at(t, l->a)->name);
        report_str(r, topo_node_at(t, l->b)->name);
        report_str(r, link_names[l->kind]);
        report_int(r, l->pcie_gen);
        report_int(r, l->pcie_width);
        report_int(r, l->nvlinks);
        report_num(r, l->bw_Bps / 1e9);
        report_str(r, topo_link_bw_given(t, i) ? "given" : "math");
        report_num(r, (double)l->lat_ps / 1e3);
        report_end_row(r);
    }
    if (topo_ngpus(t) <= MATRIX_MAX_GPUS)
        path_matrix(r, t);
    else
        path_counts(r, t);
    if (routes && topo_ngpus(t) <= ROUTES_MAX_GPUS)
        routes_table(r, t);
    else if (routes)
        report_note(r, "--routes: more than %d GPUs, routes not printed", ROUTES_MAX_GPUS);
    int rc = report_finish(r, e);
    report_free(r);
    topo_free(t);
    return rc;
}

static int list(report_format fmt, err *e)
{
    report *r = report_new(stdout, fmt);
    if (!r)
        return err_set(e, ERR_SYSTEM, "out of memory");
    report_table(r, "topology presets", preset_cols, 2);
    for (int i = 0; topo_preset_name(i); i++) {
        report_str(r, topo_preset_name(i));
        report_str(r, topo_preset_desc(i));
        report_end_row(r);
    }
    int rc = report_finish(r, e);
    report_free(r);
    return rc;
}

static int write_topo(FILE *f, void *t, err *e) { return topo_write(t, f, e); }

static int write_out(const topo *t, const char *out, err *e)
{
    return ofile_write(out, write_topo, (void *)t, e);
}

/* What the options set; each subcommand's table uses some of them. */
typedef struct topo_args {
    cmd_ctx cc;        /* -o (default stdout), --format */
    const char *p2p;   /* import: nvidia-smi topo -p2p r output */
    const char *name;  /* import: the topology's name */
    int routes;
} topo_args;

#define ARGS ((topo_args *)ctx)
static int set_p2p(void *ctx, const char *a, err *e) { (void)e; ARGS->p2p = a; return 0; }
static int set_name(void *ctx, const char *a, err *e)
{
    if (!a[0] || strlen(a) > 63 ||
        strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") != strlen(a))
        return err_set(e, ERR_USAGE, "--name '%s': want up to 63 letters, digits and _ . : -", a);
    ARGS->name = a;
    return 0;
}
static int set_routes(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->routes = 1; return 0; }
#undef ARGS

static const cli_opt show_opts[] = {
    {"routes", 0, NULL, "also every GPU route (up to 16 GPUs)", set_routes},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {NULL, 0, NULL, NULL, NULL},
};
static const cli_opt list_opts[] = {
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {NULL, 0, NULL, NULL, NULL},
};
static const cli_opt file_opts[] = {
    {"output", 'o', "OUT", "write the topology file to OUT (default stdout)", cmd_set_output},
    {NULL, 0, NULL, NULL, NULL},
};
static const cli_opt import_opts[] = {
    {"output", 'o', "OUT", "write the topology file to OUT (default stdout)", cmd_set_output},
    {"p2p", 0, "FILE", "`nvidia-smi topo -p2p r` output: P2P status per GPU pair (NS etc.)",
     set_p2p},
    {"name", 0, "NAME", "the topology's name (default: FILE's, without directory and extension; "
     "from stdin: smi-NGPU or xml-NGPU)", set_name},
    {NULL, 0, NULL, NULL, NULL},
};

static int run_show(const topo_args *a, const char **pos, err *e)
{
    return show(pos[0], a->routes, a->cc.fmt, e);
}

static int run_list(const topo_args *a, const char **pos, err *e)
{
    (void)pos;
    return list(a->cc.fmt, e);
}

static int run_export(const topo_args *a, const char **pos, err *e)
{
    topo *t;
    TRY(topo_load(pos[0], &t, e));
    int rc = write_out(t, a->cc.out, e);
    topo_free(t);
    return rc;
}

static int run_import(const topo_args *a, const char **pos, err *e)
{
    topo *t = NULL;
    int rc;
    if (!strcmp(pos[0], "xml")) {
        rc = topo_import_xml(pos[1], &t, e);
    } else if (!strcmp(pos[0], "smi")) {
        static const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES,
                                         .what = "an nvidia-smi matrix"};
        input *in;
        TRY(input_open(pos[1], &lim, &in, e));
        rc = input_close(in, topo_import_smi(input_file(in), pos[1], &t, e), e);
    } else {
        return err_set(e, ERR_USAGE, "topo import: format must be xml or smi, not '%s'", pos[0]);
    }
    if (!rc && a->p2p) {
        static const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES,
                                         .what = "an nvidia-smi P2P matrix"};
        input *in;
        rc = input_open(a->p2p, &lim, &in, e);
        if (!rc)
            rc = input_close(in, topo_smi_p2p(input_file(in), a->p2p, t, e), e);
    }
    /* a name of its own: given, or what was read when stdin has none */
    if (!rc && (a->name || !strcmp(pos[1], "-"))) {
        char nm[64];
        snprintf(nm, sizeof nm, "%s-%dgpu", pos[0], topo_ngpus(t));
        rc = topo_set_name(t, a->name ? a->name : nm);
    }
    /* what the input did not say, on stderr as in the file */
    for (int i = 0; !rc && i < topo_nassumed(t); i++)
        fprintf(stderr, "collsim: topo import %s: assumed: %s\n", pos[0], topo_assumed(t, i));
    if (!rc)
        rc = write_out(t, a->cc.out, e);
    topo_free(t);
    return rc;
}

/* A subcommand: its words after `collsim topo`, its option table and how
 * many positional arguments it takes. */
typedef int topo_run_fn(const topo_args *a, const char **pos, err *e);
typedef struct topo_sub {
    const char *name, *cmd, *synopsis, *desc;
    const cli_opt *opts;
    int npos;
    topo_run_fn *run;
} topo_sub;

static const topo_sub subs[] = {
    {"show", "collsim topo show", "collsim topo show T [options]",
     "Prints the parameters, nodes, links and the GPU path matrix of topology T:\n"
     "a preset name (collsim topo list) or a collsim-topo file.",
     show_opts, 1, run_show},
    {"list", "collsim topo list", "collsim topo list [options]",
     "Lists the topology presets and families.", list_opts, 0, run_list},
    {"export", "collsim topo export", "collsim topo export T [options]",
     "Writes topology T (a preset or a collsim-topo file) in the collsim-topo format.",
     file_opts, 1, run_export},
    {"import", "collsim topo import", "collsim topo import xml|smi FILE [options]",
     "Converts an NCCL XML topology dump (xml) or `nvidia-smi topo -m` output (smi;\n"
     "FILE - is stdin; `collsim topo show` output reads back) to the collsim-topo\n"
     "format; --p2p adds NVML's P2P status per GPU pair from `nvidia-smi topo -p2p r`.\n"
     "What the input does not say is assumed: '# assumed:' lines in the file and on\n"
     "stderr.",
     import_opts, 2, run_import},
    {NULL, NULL, NULL, NULL, NULL, 0, NULL},
};

int cmd_topo(int argc, char **argv, err *e)
{
    const char *sub = argc > 1 ? argv[1] : NULL;
    if (sub && (!strcmp(sub, "--help") || !strcmp(sub, "-h"))) {
        for (const topo_sub *s = subs; s->name; s++) {
            if (s != subs)
                fputc('\n', stdout);
            cli_help(stdout, s->synopsis, s->desc, s->opts);
        }
        return 0;
    }
    if (!sub)
        return err_set(e, ERR_USAGE, "topo: no subcommand (show, list, export or import; "
                       "collsim topo --help)");
    if (sub[0] == '-')
        return err_set(e, ERR_USAGE, "topo: option '%s' before the subcommand; options follow "
                       "it: collsim topo show|list|export|import ... (collsim topo --help)", sub);
    for (const topo_sub *s = subs; s->name; s++) {
        if (strcmp(s->name, sub))
            continue;
        topo_args a = {.routes = 0};
        cmd_ctx_init(&a.cc);
        const char *pos[2] = {NULL, NULL};
        int npos;
        int prc = cli_parse(s->cmd, s->synopsis, s->desc, s->opts, &a, argc - 1, argv + 1, pos,
                            s->npos, &npos, e);
        if (prc == CLI_HELP_SHOWN)
            return 0;
        TRY(prc);
        if (npos != s->npos)
            return err_set(e, ERR_USAGE, "topo: bad arguments for '%s': usage: %s (%s --help)",
                           sub, s->synopsis, s->cmd);
        return s->run(&a, pos, e);
    }
    return err_set(e, ERR_USAGE, "topo: bad arguments for '%s': not a subcommand (show, list, "
                   "export or import; collsim topo --help)", sub);
}
