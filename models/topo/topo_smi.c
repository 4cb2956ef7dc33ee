/* Import of `nvidia-smi topo -m` output: the GPU x GPU matrix of path codes
 * (X, PIX, PXB, PHB, NODE, SYS, NV#) and the NUMA affinity column. Text
 * around it (a shell prompt, a markdown fence, NIC rows, the legend) is
 * ignored. The importer builds the simplest PCI tree with those codes:
 * sockets = NUMA ids (or groups of GPUs not joined by SYS); per socket one
 * root port per group joined by PIX/PXB/PHB; under a root port a switch per
 * PIX group, with a parent switch over the PIX groups joined by PXB; a GPU
 * alone in its group hangs on the root port. NV# pairs get direct NVLinks,
 * or one NVSwitch if every pair has the same NV#. All PCIe links are Gen5
 * x16, other values the documented defaults. The built topology's codes are
 * checked against every matrix entry, so an impossible matrix is an error. */
#include "models/topo/topo.h"

#include "sim/line.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SMI_GPUS = 1024, MAX_SMI_LINE = 1 << 16 };

/* Matrix codes, in the order of the kinds of relation. */
typedef enum { C_X, C_PIX, C_PXB, C_PHB, C_NODE, C_SYS, C_NV } code;

/* What other tools' text in the same input says about GPU k (k-th GPU of
 * `nvidia-smi -q`, of `nvidia-smi nvlink -s`, k-th NVIDIA display device of
 * `lspci -vv`: all in PCI bus order, as nvidia-smi numbers GPUs). 0 = not given. */
typedef struct gpu_info {
    int q_gen, q_host_gen, q_width;   /* nvidia-smi -q: GPU Link Info Max, Host Max */
    int l_gen, l_width;               /* lspci -vv: LnkCap speed, LnkSta width */
    double lane_GBps;                 /* nvidia-smi nvlink -s: slowest active link */
    char product[64];                 /* Product Name, or the name in nvlink -s */
} gpu_info;

enum { MAX_NUMA = 64 };

typedef struct smi {
    const char *file;
    err *e;
    int n;
    code *c;        /* n x n */
    int *nv;        /* n x n lane counts for C_NV */
    int *numa;      /* -1 unknown */
    long *line;     /* row line numbers */
    /* Other tools' sections (side_line): */
    gpu_info *gi;   /* MAX_SMI_GPUS */
    int nq, q_cur, q_sub, nl_cur, nlspci, l_cur;
    int in_dist, nd, dist[MAX_NUMA][MAX_NUMA];   /* numactl -H node distances */
    int sockets, numa_nodes;                      /* lscpu */
} smi;

static int split(char *s, char **tok, int max)
{
    int n = 0;
    for (char *p = strtok(s, " \t\r\n"); p && n < max; p = strtok(NULL, " \t\r\n"))
        tok[n++] = p;
    return n;
}

static int gpu_index(const char *s)
{
    if (strncmp(s, "GPU", 3) || s[3] < '0' || s[3] > '9')
        return -1;
    char *end;
    long v = strtol(s + 3, &end, 10);
    return *end || v >= MAX_SMI_GPUS ? -1 : (int)v;
}

static int parse_code(const char *s, code *c, int *nv)
{
    static const char *const names[] = {"X", "PIX", "PXB", "PHB", "NODE", "SYS"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(s, names[i])) {
            *c = (code)i;
            *nv = 0;
            return 0;
        }
    if (!strncmp(s, "NV", 2) && s[2] >= '1' && s[2] <= '9') {
        char *end;
        long v = strtol(s + 2, &end, 10);
        if (!*end && v <= 1024) {
            *c = C_NV;
            *nv = (int)v;
            return 0;
        }
    }
    return -1;
}

/* "key : value" of nvidia-smi -q (and lscpu "key: value"): key and value
 * trimmed into k and v; 0 if the line has no colon. */
static int key_value(const char *line, char *k, size_t nk, char *v, size_t nv)
{
    const char *c = strchr(line, ':');
    if (!c)
        return 0;
    const char *a = line;
    while (*a == ' ' || *a == '\t')
        a++;
    size_t l = (size_t)(c - a);
    while (l && (a[l - 1] == ' ' || a[l - 1] == '\t'))
        l--;
    snprintf(k, nk, "%.*s", (int)l, a);
    const char *b = c + 1;
    while (*b == ' ' || *b == '\t')
        b++;
    snprintf(v, nv, "%s", b);
    size_t m = strlen(v);
    while (m && (v[m - 1] == ' ' || v[m - 1] == '\n' || v[m - 1] == '\r' || v[m - 1] == '\t'))
        v[--m] = 0;
    return 1;
}

static int gts_gen(double gts)
{
    static const double g[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    for (int i = 0; i < 6; i++)
        if (gts > g[i] * 0.9 && gts < g[i] * 1.1)
            return i + 1;
    return 0;
}

/* A PCI address at the start: [dddd:]bb:dd.f */
static int is_bdf(const char *p)
{
    unsigned a, b, c, d;
    int n = 0;
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
        return 0;
    if (sscanf(p, "%x:%x:%x.%x%n", &a, &b, &c, &d, &n) == 4 && n > 0)
        return p[n] == 0 || p[n] == ' ' || p[n] == '\t' || p[n] == '\r' || p[n] == '\n';
    n = 0;
    return sscanf(p, "%x:%x.%x%n", &b, &c, &d, &n) == 3 && n > 0 &&
           (p[n] == 0 || p[n] == ' ' || p[n] == '\t');
}

/* One line of the input outside the matrix: the sections of `nvidia-smi -q`,
 * `nvidia-smi nvlink -s`, `lspci -vv`, `numactl -H` and `lscpu`, recognised
 * by their own headings (docs/formats.md "Imports"). Unknown text is ignored. */
static void side_line(smi *s, const char *line)
{
    char k[96], v[160];
    int indented = line[0] == ' ' || line[0] == '\t';
    unsigned x;
    int idx;
    /* nvidia-smi -q: "GPU 00000000:18:00.0" opens a GPU's block. */
    if (!indented && !strncmp(line, "GPU ", 4) && is_bdf(line + 4)) {
        s->q_cur = s->nq < MAX_SMI_GPUS ? s->nq++ : -1;
        s->q_sub = 0;
        s->nl_cur = -1;
        return;
    }
    /* nvidia-smi's summary table: "|   0  NVIDIA H200     On  |   00000000:00:06.0 Off |"
     * (a GPU's first row: index, name, persistence mode, then its bus id). */
    if (line[0] == '|' && sscanf(line, "| %d ", &idx) == 1 && idx >= 0 && idx < MAX_SMI_GPUS) {
        const char *bar = strchr(line + 1, '|'), *bus = bar ? bar + 1 : NULL;
        while (bus && *bus == ' ')
            bus++;
        if (bus && is_bdf(bus) && !s->gi[idx].product[0]) {
            const char *a = line + 1;
            while (*a == ' ')
                a++;
            while (*a >= '0' && *a <= '9')
                a++;
            while (*a == ' ')
                a++;
            const char *z = bar;
            while (z > a && z[-1] == ' ')
                z--;
            /* the persistence mode closes the cell */
            if (z - a > 3 && !strncmp(z - 3, " On", 3))
                z -= 3;
            else if (z - a > 4 && !strncmp(z - 4, " Off", 4))
                z -= 4;
            while (z > a && z[-1] == ' ')
                z--;
            snprintf(s->gi[idx].product, sizeof s->gi[idx].product, "%.*s", (int)(z - a), a);
        }
        return;
    }
    /* nvidia-smi nvlink -s: "GPU 0: NVIDIA H200 (UUID: GPU-...)" */
    if (!indented && sscanf(line, "GPU %d:", &idx) == 1 && strstr(line, "(UUID:")) {
        s->nl_cur = idx >= 0 && idx < MAX_SMI_GPUS ? idx : -1;
        s->q_cur = -1;
        if (s->nl_cur >= 0 && !s->gi[idx].product[0]) {
            const char *a = strchr(line, ':') + 1, *b = strstr(line, " (UUID:");
            while (*a == ' ')
                a++;
            snprintf(s->gi[idx].product, sizeof s->gi[idx].product, "%.*s", (int)(b - a), a);
        }
        return;
    }
    double rate;
    if (s->nl_cur >= 0 && indented && sscanf(line, " Link %u: %lf GB/s", &x, &rate) == 2) {
        gpu_info *g = &s->gi[s->nl_cur];
        if (rate > 0 && (g->lane_GBps == 0 || rate < g->lane_GBps))
            g->lane_GBps = rate;
        return;
    }
    /* lspci -vv: a device line opens a block; NVIDIA display devices count. */
    if (!indented && is_bdf(line)) {
        s->l_cur = -1;
        if (strstr(line, "NVIDIA") && (strstr(line, "VGA compatible controller") ||
                                       strstr(line, "3D controller")))
            s->l_cur = s->nlspci < MAX_SMI_GPUS ? s->nlspci++ : -1;
        s->q_cur = s->nl_cur = -1;
        return;
    }
    if (s->l_cur >= 0 && indented) {
        const char *p = strstr(line, "LnkCap:"), *q = strstr(line, "LnkSta:");
        const char *sp = p ? strstr(p, "Speed ") : NULL, *w = strstr(line, "Width x");
        double gts;
        if (p && sp && sscanf(sp, "Speed %lfGT/s", &gts) == 1)
            s->gi[s->l_cur].l_gen = gts_gen(gts);
        if (q && w)
            s->gi[s->l_cur].l_width = atoi(w + 7);
        return;
    }
    /* numactl -H: "node distances:", a heading row, then "  0:  10  21 ...". */
    if (!strncmp(line, "node distances:", 15)) {
        s->in_dist = 1;
        return;
    }
    if (s->in_dist) {
        char *end;
        long r = strtol(line, &end, 10);
        if (end != line && *end == ':' && r >= 0 && r < MAX_NUMA) {
            const char *p = end + 1;
            for (int c = 0; c < MAX_NUMA; c++) {
                long d = strtol(p, &end, 10);
                if (end == p)
                    break;
                s->dist[r][c] = (int)d;
                p = end;
            }
            if (r + 1 > s->nd)
                s->nd = (int)r + 1;
            return;
        }
        if (strncmp(line, "node ", 5))
            s->in_dist = 0;
        if (s->in_dist)
            return;
    }
    if (!key_value(line, k, sizeof k, v, sizeof v)) {
        /* A heading of nvidia-smi -q: "PCIe Generation", "Link Width", or another. */
        if (s->q_cur >= 0 && sscanf(line, " %95[^\r\n]", k) == 1) {
            size_t l = strlen(k);
            while (l && (k[l - 1] == ' ' || k[l - 1] == '\t'))
                k[--l] = 0;
            s->q_sub = !strcmp(k, "PCIe Generation") ? 1 : !strcmp(k, "Link Width") ? 2 : 0;
        }
        return;
    }
    if (!indented && !strcmp(k, "Socket(s)"))
        s->sockets = atoi(v);
    else if (!indented && !strcmp(k, "NUMA node(s)"))
        s->numa_nodes = atoi(v);
    if (s->q_cur < 0)
        return;
    gpu_info *g = &s->gi[s->q_cur];
    if (!strcmp(k, "Product Name") && v[0])
        snprintf(g->product, sizeof g->product, "%s", v);
    else if (s->q_sub == 1 && !strcmp(k, "Max"))
        g->q_gen = atoi(v);
    else if (s->q_sub == 1 && !strcmp(k, "Host Max"))
        g->q_host_gen = atoi(v);
    else if (s->q_sub == 2 && !strcmp(k, "Max"))
        g->q_width = atoi(v);
}

/* Remove ANSI escapes (ESC [ ... letter: nvidia-smi underlines its header). */
static void strip_ansi(char *b)
{
    char *w = b;
    for (char *r = b; *r; r++) {
        if (*r == 0x1b && r[1] == '[') {
            r += 2;
            while (*r && !((*r >= 'A' && *r <= 'Z') || (*r >= 'a' && *r <= 'z')))
                r++;
            if (!*r)
                break;
            continue;
        }
        *w++ = *r;
    }
    *w = 0;
}

/* Read the matrix; fills s->n, c, nv, numa, line. */
static int read_matrix(smi *s, FILE *f)
{
    char *buf = NULL, **tok = malloc(sizeof(char *) * (MAX_SMI_GPUS + 64));
    size_t cap = 0;
    size_t len;
    long ln = 0;
    int rc = 0, ndev = 0, cpu_col = 0, numa_col = 0, row = -1;
    if (!tok)
        return err_set(s->e, ERR_SYSTEM, "out of memory");
    int st;
    while ((st = line_read(f, &buf, &cap, MAX_SMI_LINE, &len)) != LINE_EOF) {
        ln++;
        if (st != LINE_OK) {
            rc = line_fail(st, s->file, ln, MAX_SMI_LINE, s->e);
            break;
        }
        /* `collsim topo show` writes the header as a comment: "#   GPU0 ..." */
        if (row < 0 && buf[0] == '#' && (buf[1] == ' ' || buf[1] == '\t'))
            buf[0] = ' ';
        strip_ansi(buf);
        if (row < 0 || row >= s->n)
            side_line(s, buf);
        int starts_blank = buf[0] == ' ' || buf[0] == '\t';
        int nt = split(buf, tok, MAX_SMI_GPUS + 64);
        if (row < 0) {
            /* The header: indented, GPU0 GPU1 ... then other devices and
             * the affinity headings. */
            if (!starts_blank || nt < 1 || strcmp(tok[0], "GPU0"))
                continue;
            int n = 0;
            while (n < nt && gpu_index(tok[n]) == n)
                n++;
            /* A GPU label out of order, repeated or past the limit would
             * silently drop GPUs from here on. */
            for (int i = n; i < nt && !rc; i++)
                if (!strncmp(tok[i], "GPU", 3) && tok[i][3] >= '0' && tok[i][3] <= '9')
                    rc = n == MAX_SMI_GPUS
                             ? err_at(s->e, s->file, ln, "header: more than %d GPUs",
                                      MAX_SMI_GPUS)
                             : err_at(s->e, s->file, ln, "header: '%s' where GPU%d was "
                                      "expected (labels must run GPU0..GPU%d in order)",
                                      tok[i], n, MAX_SMI_GPUS - 1);
            if (rc)
                break;
            ndev = n;
            for (int i = n; i < nt; i++) {
                if (!strcmp(tok[i], "CPU"))
                    cpu_col = 1;
                else if (!strcmp(tok[i], "NUMA") && i + 1 < nt && !strcmp(tok[i + 1], "Affinity"))
                    numa_col = 1;
                else if (!cpu_col && !numa_col && strcmp(tok[i], "GPU") &&
                         strcmp(tok[i], "Affinity") && strcmp(tok[i], "ID"))
                    ndev++; /* NIC0, mlx5_0, ...: a device column */
            }
            s->n = n;
            s->c = calloc((size_t)n * (size_t)n, sizeof *s->c);
            s->nv = calloc((size_t)n * (size_t)n, sizeof *s->nv);
            s->numa = malloc(sizeof(int) * (size_t)n);
            s->line = calloc((size_t)n, sizeof(long));
            if (!s->c || !s->nv || !s->numa || !s->line) {
                rc = err_set(s->e, ERR_SYSTEM, "out of memory");
                break;
            }
            row = 0;
            continue;
        }
        if (nt == 0 && row == 0)
            continue;
        if (row >= s->n)
            continue; /* NIC rows, legend: not ours, but read (and checked) to the end */
        if (nt == 0 || gpu_index(tok[0]) != row) {
            rc = err_at(s->e, s->file, ln, "expected the row of GPU%d", row);
            break;
        }
        if (nt < 1 + ndev) {
            rc = err_at(s->e, s->file, ln, "row GPU%d has %d entries, the header %d devices",
                        row, nt - 1, ndev);
            break;
        }
        for (int j = 0; j < s->n && !rc; j++) {
            code c = C_X;
            int nv = 0;
            if (parse_code(tok[1 + j], &c, &nv))
                rc = err_at(s->e, s->file, ln, "GPU%d-GPU%d: unknown code '%s' (X, PIX, PXB, "
                            "PHB, NODE, SYS, NV#)", row, j, tok[1 + j]);
            else if ((c == C_X) != (j == row))
                rc = err_at(s->e, s->file, ln, "GPU%d-GPU%d: '%s' %s", row, j, tok[1 + j],
                            j == row ? "on the diagonal (expected X)" : "off the diagonal");
            s->c[row * s->n + j] = c;
            s->nv[row * s->n + j] = nv;
        }
        if (rc)
            break;
        /* NUMA: the column after CPU Affinity, or "NUMA <id>" (wiki style). */
        s->numa[row] = -1;
        const char *nstr = NULL;
        if (numa_col)
            nstr = nt > 1 + ndev + cpu_col ? tok[1 + ndev + cpu_col] : NULL;
        for (int i = 1 + ndev; !numa_col && i + 1 < nt; i++)
            if (!strcmp(tok[i], "NUMA"))
                nstr = tok[i + 1];
        if (nstr) {
            char *end;
            errno = 0;
            long v = strtol(nstr, &end, 10);
            if (end != nstr && !*end && !errno && v >= 0 && v <= 65535) {
                s->numa[row] = (int)v;
            } else if (strcmp(nstr, "N/A") != 0) {
                rc = err_at(s->e, s->file, ln, "GPU%d: NUMA node '%s' is not N/A or 0..65535",
                            row, nstr);
                break;
            }
        }
        s->line[row] = ln;
        row++;
    }
    free(buf);
    free(tok);
    if (rc)
        return rc;
    if (ferror(f))
        return err_set(s->e, ERR_SYSTEM, "%s: read error", s->file);
    if (row < 0)
        return err_at(s->e, s->file, 0, "no nvidia-smi topo -m matrix (an indented header "
                      "line starting with GPU0)");
    if (row < s->n)
        return err_at(s->e, s->file, ln, "the matrix ends after %d of %d GPU rows", row, s->n);
    for (int a = 0; a < s->n; a++)
        for (int b = 0; b < a; b++)
            if (s->c[a * s->n + b] != s->c[b * s->n + a] ||
                s->nv[a * s->n + b] != s->nv[b * s->n + a])
                return err_at(s->e, s->file, s->line[a], "GPU%d-GPU%d differs from "
                              "GPU%d-GPU%d: the matrix must be symmetric", a, b, b, a);
    return 0;
}

/* Union-find over GPUs joined by codes up to `upto` (PIX..NODE). */
static int uf_find(int *p, int x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

static void groups(const smi *s, code upto, int *rep)
{
    for (int i = 0; i < s->n; i++)
        rep[i] = i;
    for (int a = 0; a < s->n; a++)
        for (int b = a + 1; b < s->n; b++) {
            code c = s->c[a * s->n + b];
            if (c >= C_PIX && c <= upto) {
                int x = uf_find(rep, a), y = uf_find(rep, b);
                if (x != y)
                    rep[x > y ? x : y] = x < y ? x : y; /* smallest GPU represents */
            }
        }
    for (int i = 0; i < s->n; i++)
        rep[i] = uf_find(rep, i);
}

typedef struct bctx {
    topo *t;
    err *e;
    int rc;
    int nrp, nsw;
    int up_gen, up_width;   /* switch uplinks' PCIe generation and width */
} bctx;

/* Usable data rate of an NVLink lane per direction over the rate nvidia-smi
 * nvlink -s reports: h200-2x's fitted 379.4 GB/s over its 18 lanes of
 * 26.562 GB/s (validate/data/h200-2x/machine.txt, presets.c build_h200_2x). */
#define NVLINK_DATA_FRACTION (379.4 / (18 * 26.562))

/* A GPU model by product name: compute capability x10 (NVIDIA's CUDA GPUs
 * page) and the memory's peak rate in GB/s (each product's datasheet: bus width
 * x data rate, or the HBM figure); most specific first, so "H100 PCIe" is
 * matched before "H100". mem_GBps 0: the model has more than one memory
 * (GH200 96 or 144 GB, H800 SXM or PCIe), said as an assumption. */
typedef struct product_spec {
    const char *name;
    int sm;
    double mem_GBps;
} product_spec;

static const product_spec *product_find(const char *p)
{
    static const product_spec t[] = {
        {"GB300", 103, 8000}, {"GB200", 100, 8000}, {"B300", 103, 8000}, {"B200", 100, 8000},
        {"RTX PRO 6000", 120, 1792},   /* 512-bit GDDR7 at 28 Gbps */
        {"RTX 5090", 120, 1792},       /* 512-bit GDDR7 at 28 Gbps */
        {"RTX 50", 120, 0}, {"GH200", 90, 0},
        {"H100 PCIe", 90, 2000}, {"H100 NVL", 90, 3900}, {"H100", 90, 3350},
        {"H200", 90, 4800},            /* H200 SXM and NVL: HBM3e 4.8 TB/s */
        {"H800", 90, 0}, {"H20", 90, 4000},
        {"RTX 6000 Ada", 89, 960}, {"RTX 4090", 89, 1008},   /* 384-bit GDDR6X at 21 Gbps */
        {"RTX 40", 89, 0}, {"L40", 89, 864}, {"L4", 89, 300},
        {"A100-SXM4-40GB", 80, 1555}, {"A100-PCIE-40GB", 80, 1555}, {"A100 80GB PCIe", 80, 1935},
        {"A100", 80, 2039}, {"A800", 80, 0}, {"A30", 80, 933}, {"RTX A6000", 86, 768},
        {"RTX A5000", 86, 768}, {"RTX A4000", 86, 448}, {"RTX 3090", 86, 936}, {"RTX 30", 86, 0},
        {"A40", 86, 696}, {"A10", 86, 600}, {"RTX 2080 Ti", 75, 616}, {"RTX 20", 75, 0},
        {"Quadro RTX", 75, 0}, {"TITAN RTX", 75, 672}, {"T4", 75, 320}, {"V100", 70, 900},
        {"TITAN V", 70, 653}, {"P100", 60, 732},
    };
    for (size_t i = 0; p[0] && i < sizeof t / sizeof t[0]; i++)
        if (strstr(p, t[i].name))
            return &t[i];
    return NULL;
}

static int product_sm(const char *p)
{
    const product_spec *q = product_find(p);
    return q ? q->sm : 0;
}

static double product_mem_GBps(const char *p)
{
    const product_spec *q = product_find(p);
    return q ? q->mem_GBps : 0;
}

static void assume(bctx *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void assume(bctx *b, const char *fmt, ...)
{
    char buf[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int i = 0; i < topo_nassumed(b->t); i++)
        if (!strcmp(topo_assumed(b->t, i), buf))
            return;   /* said once: the same default on several links */
    if (!b->rc)
        b->rc = topo_assume(b->t, b->e, "%s", buf);
}

/* The socket of NUMA node numa: the smallest node within distance < 20
 * (numactl -H; *how = 1), numa / NPS (lscpu counts; *how = 2), or numa
 * itself (*how stays 0). */
static int numa_socket(const smi *s, int numa, int *how)
{
    if (numa >= 0 && numa < s->nd) {
        for (int j = 0; j < s->nd; j++)
            if (s->dist[numa][j] > 0 && s->dist[numa][j] < 20) {
                *how = 1;
                return j;
            }
    }
    if (numa >= 0 && s->sockets > 0 && s->numa_nodes >= s->sockets &&
        s->numa_nodes % s->sockets == 0 && numa < s->numa_nodes) {
        *how = 2;
        return numa / (s->numa_nodes / s->sockets);
    }
    return numa;
}

/* Two NUMA nodes of one socket: the socket's internal fabric, a SYS hop for
 * nvidia-smi (different NUMA nodes), at the fabric's default rate. */
/* How many NUMA nodes share numa's socket (the NPS setting): the nodes within
 * distance < 20 (numactl -H), or lscpu's nodes / sockets; 1 without either. */
static int numa_per_socket(const smi *s, int numa)
{
    int k = 0;
    if (numa >= 0 && numa < s->nd)
        for (int j = 0; j < s->nd; j++)
            k += s->dist[numa][j] > 0 && s->dist[numa][j] < 20;
    if (k > 0)
        return k;
    if (numa >= 0 && s->sockets > 0 && s->numa_nodes >= s->sockets &&
        s->numa_nodes % s->sockets == 0 && numa < s->numa_nodes)
        return s->numa_nodes / s->sockets;
    return 1;
}

static void mk_quadrant(bctx *b, int x, int y)
{
    if (b->rc)
        return;
    topo_link l = {.a = x, .b = y, .kind = LINK_SOCKET};
    topo_default_link(LINK_FABRIC, 90, &l.bw_Bps, &l.lat_ps);
    if (topo_add_link(b->t, &l, b->e) < 0)
        b->rc = b->e ? b->e->code : ERR_INPUT;
}

/* The GPU's own PCIe link from the tools' text; 0 if not given. */
static int gpu_pcie(const gpu_info *q, int *gen, int *width)
{
    *gen = q->q_gen > 0 ? (q->q_host_gen > 0 && q->q_host_gen < q->q_gen ? q->q_host_gen : q->q_gen)
                        : q->l_gen;
    *width = q->q_width > 0 ? q->q_width : q->l_width;
    return *gen >= 1 && *gen <= 6 && *width >= 1 && *width <= 32;
}

static void mk_pcie(bctx *b, int x, int y, int gen, int width)
{
    if (b->rc)
        return;
    topo_link l = {.a = x, .b = y, .kind = LINK_PCIE, .pcie_gen = gen, .pcie_width = width};
    l.lat_ps = topo_default_pci_lat_ps(topo_node_at(b->t, x)->kind, topo_node_at(b->t, y)->kind);
    if (topo_add_link(b->t, &l, b->e) < 0)
        b->rc = b->e ? b->e->code : ERR_INPUT;
}

static void mk_nvlink(bctx *b, int x, int y, int lanes, double bw_Bps)
{
    if (b->rc)
        return;
    topo_link l = {.a = x, .b = y, .kind = LINK_NVLINK, .nvlinks = lanes};
    double per;
    topo_default_link(LINK_NVLINK, 90, &per, &l.lat_ps);
    l.bw_Bps = bw_Bps;
    if (topo_add_link(b->t, &l, b->e) < 0)
        b->rc = b->e ? b->e->code : ERR_INPUT;
}

/* A lane's data rate for GPUs a and b (c < 0: a to an NVSwitch): from
 * nvidia-smi nvlink -s when given for both, else NCCL's figure for sm. */
static double lane_Bps(bctx *b, const smi *s, int a, int c, int sm)
{
    double ra = s->gi[a].lane_GBps, rc = c >= 0 ? s->gi[c].lane_GBps : ra;
    if (ra > 0 && rc > 0)
        return (ra < rc ? ra : rc) * NVLINK_DATA_FRACTION * 1e9;
    int fsm = sm ? sm : 90;
    assume(b, "NVLink lanes at %.1f GB/s each way (NCCL's SM %d figure; no `nvidia-smi nvlink -s` "
           "rate for GPU%d)", topo_nvlink_lane_GBps(fsm), fsm, ra > 0 ? c : a);
    return topo_nvlink_lane_GBps(fsm) * 1e9;
}

static int mk_node(bctx *b, const char *name, topo_kind k, int numa, int parent)
{
    if (b->rc)
        return -1;
    int id = topo_add_node(b->t, name, k, numa, b->e);
    if (id < 0 || (parent >= 0 && topo_set_parent(b->t, id, parent, b->e))) {
        b->rc = b->e ? b->e->code : ERR_INPUT;
        return -1;
    }
    return id;
}

static void mk_link(bctx *b, int x, int y, topo_link_kind k, int lanes)
{
    if (b->rc)
        return;
    topo_link l = {.a = x, .b = y, .kind = k};
    if (k == LINK_PCIE) {
        l.pcie_gen = 5;
        l.pcie_width = 16;
        l.lat_ps = topo_default_pci_lat_ps(topo_node_at(b->t, x)->kind,
                                           topo_node_at(b->t, y)->kind);
    } else {
        topo_default_link(k, 90, &l.bw_Bps, &l.lat_ps);
    }
    if (k == LINK_NVLINK) {
        l.nvlinks = lanes;
        l.bw_Bps *= lanes;
    }
    if (topo_add_link(b->t, &l, b->e) < 0)
        b->rc = b->e ? b->e->code : ERR_INPUT;
}

static int build(const smi *s, topo *t, err *e)
{
    int n = s->n;
    char name[48];
    int *sock = malloc(sizeof(int) * (size_t)n), *root = malloc(sizeof(int) * (size_t)n);
    int *pxb = malloc(sizeof(int) * (size_t)n), *pix = malloc(sizeof(int) * (size_t)n);
    int *gpar = malloc(sizeof(int) * (size_t)n), *cpu_of = malloc(sizeof(int) * (size_t)n);
    int *rp_of = malloc(sizeof(int) * (size_t)n), *psw_of = malloc(sizeof(int) * (size_t)n);
    int *lsw_of = malloc(sizeof(int) * (size_t)n), *mem_of = malloc(sizeof(int) * (size_t)n);
    bctx b = {t, e, 0, 0, 0, 5, 16};
    if (!sock || !root || !pxb || !pix || !gpar || !cpu_of || !rp_of || !psw_of || !lsw_of) {
        b.rc = err_set(e, ERR_SYSTEM, "out of memory");
        goto out;
    }
    /* Sockets: the NUMA ids if every row has one, else groups without SYS. */
    int all_numa = 1;
    for (int g = 0; g < n; g++)
        all_numa &= s->numa[g] >= 0;
    groups(s, C_NODE, sock);
    for (int g = 0; g < n; g++)
        sock[g] = all_numa ? s->numa[g] : sock[g];
    groups(s, C_PHB, root);
    groups(s, C_PXB, pxb);
    groups(s, C_PIX, pix);
    /* GPU model: gpu_sm when every GPU's product name is known and the same. */
    int sm = product_sm(s->gi[0].product);
    for (int g = 1; g < n; g++)
        if (product_sm(s->gi[g].product) != sm)
            sm = 0;
    if (sm)
        topo_params_mut(t)->gpu_sm = sm;
    else if (s->gi[0].product[0])
        assume(&b, "gpu_sm 0: the GPUs' product names ('%s'...) are not one model of the "
               "importer's table (NCCL's emulation then takes SM 80)", s->gi[0].product);
    else
        assume(&b, "gpu_sm 0: no product name (give `nvidia-smi -q` or `nvidia-smi nvlink -s` "
               "text; NCCL's emulation then takes SM 80)");
    /* GPU memory: the product's peak when every GPU's is known and the same; else
     * the topology's default, said (a local copy's time follows it). */
    double mem = product_mem_GBps(s->gi[0].product);
    for (int g = 1; g < n; g++)
        if (product_mem_GBps(s->gi[g].product) != mem)
            mem = 0;
    if (mem > 0)
        topo_params_mut(t)->gpu_mem_Bps = mem * 1e9;
    else
        assume(&b, "GPU memory %g GB/s (collsim's default; %s)",
               topo_params_get(t)->gpu_mem_Bps * 1e-9,
               s->gi[0].product[0] ? "the product names' memory is not in the importer's table"
                                   : "no product name");
    /* Costs (launch, kernel start, block rates, ...): no tool's text gives them. */
    assume(&b, "the param lines but gpu_sm and gpu_mem_GBps: collsim's defaults (the text gives "
           "no costs; collsim calibrate fits those its measurements determine)");
    /* PCIe per GPU: nvidia-smi -q's Max (below Host Max), else lspci's LnkCap speed and
     * LnkSta width; never Current (an idle GPU drops to Gen1). */
    int known = 0;
    for (int g = 0; g < n; g++) {
        int gen, width;
        if (!gpu_pcie(&s->gi[g], &gen, &width))
            continue;
        b.up_gen = known && b.up_gen > gen ? b.up_gen : gen;
        b.up_width = known && b.up_width > width ? b.up_width : width;
        known++;
    }
    if (!known)
        assume(&b, "PCIe Gen5 x16 on every link (no `nvidia-smi -q` or `lspci -vv` text)");
    for (int g = 0; g < n; g++)
        cpu_of[g] = rp_of[g] = psw_of[g] = lsw_of[g] = mem_of[g] = -1;
    /* cpu_of/rp_of/psw_of/lsw_of are indexed by the representative GPU. */
    for (int g = 0; g < n && !b.rc; g++) {
        int cs = -1;
        for (int h = 0; h < g && cs < 0; h++)
            if (sock[h] == sock[g])
                cs = cpu_of[h];
        if (cs < 0) {
            snprintf(name, sizeof name, "cpu%d", sock[g]);
            cs = mk_node(&b, name, TOPO_CPU, sock[g], -1);
            snprintf(name, sizeof name, "mem%d", sock[g]);
            mem_of[g] = mk_node(&b, name, TOPO_HOSTMEM, sock[g], -1);
        }
        cpu_of[g] = cs;
        int r = root[g];
        if (rp_of[r] < 0) {
            snprintf(name, sizeof name, "rp%d", b.nrp++);
            rp_of[r] = mk_node(&b, name, TOPO_ROOT, sock[g], cs);
            mk_link(&b, rp_of[r], cs, LINK_FABRIC, 0);
        }
        /* Does this GPU's PXB group hold more than one PIX group, and is its
         * PIX group more than itself? */
        int multi = 0, alone = 1;
        for (int h = 0; h < n; h++) {
            multi |= pxb[h] == pxb[g] && pix[h] != pix[g];
            alone &= h == g || pix[h] != pix[g];
        }
        int parent = rp_of[r];
        if (multi) {
            if (psw_of[pxb[g]] < 0) {
                snprintf(name, sizeof name, "sw%d", b.nsw++);
                psw_of[pxb[g]] = mk_node(&b, name, TOPO_SWITCH, sock[g], parent);
                mk_pcie(&b, psw_of[pxb[g]], parent, b.up_gen, b.up_width);
            }
            parent = psw_of[pxb[g]];
        }
        if (multi || !alone) {
            if (lsw_of[pix[g]] < 0) {
                snprintf(name, sizeof name, "sw%d", b.nsw++);
                lsw_of[pix[g]] = mk_node(&b, name, TOPO_SWITCH, sock[g], parent);
                mk_pcie(&b, lsw_of[pix[g]], parent, b.up_gen, b.up_width);
            }
            parent = lsw_of[pix[g]];
        }
        gpar[g] = parent;
    }
    for (int g = 0; g < n && !b.rc; g++) {
        topo_set_line(t, s->line[g]);
        snprintf(name, sizeof name, "gpu%d", g);
        int id = mk_node(&b, name, TOPO_GPU, sock[g], gpar[g]);
        int gen, width;
        if (!gpu_pcie(&s->gi[g], &gen, &width)) {
            gen = 5;
            width = 16;
            if (known)
                assume(&b, "GPU%d's PCIe link Gen5 x16 (not in the `nvidia-smi -q` / `lspci -vv` "
                       "text)", g);
        }
        mk_pcie(&b, id, gpar[g], gen, width);
        if (known && b.nsw)
            assume(&b, "switch uplinks at Gen%d x%d, the fastest GPU link given (the tools' text "
                   "has the GPUs' own links only)", b.up_gen, b.up_width);
    }
    /* CPU nodes (one per NUMA node): grouped into sockets by numactl -H's
     * distances or lscpu's counts; within a socket a full mesh of quadrant
     * links, between sockets one socket link between their first nodes;
     * without either, every NUMA node a socket (a full mesh). */
    int *pkg = malloc(sizeof(int) * (size_t)n), grouped = 0, nnuma = 0;
    if (!pkg && !b.rc)
        b.rc = err_set(e, ERR_SYSTEM, "out of memory");
    for (int g = 0; g < n && pkg; g++) {
        int first = 1;
        for (int k = 0; k < g; k++)
            first &= sock[k] != sock[g];
        nnuma += first;
        pkg[g] = numa_socket(s, sock[g], &grouped);
    }
    if (pkg && nnuma > 1 && grouped == 1)
        assume(&b, "NUMA nodes grouped into sockets by `numactl -H` distances (< 20 = same "
               "socket); nodes of one socket joined at %.0f GB/s (the fabric default)", 100.0);
    else if (pkg && nnuma > 1 && grouped == 2)
        assume(&b, "NUMA node k on socket k / %d (`lscpu` gives %d sockets, %d NUMA nodes, not "
               "the map); nodes of one socket joined at %.0f GB/s (the fabric default)",
               s->numa_nodes / s->sockets, s->sockets, s->numa_nodes, 100.0);
    else if (pkg && nnuma > 1)
        assume(&b, "each of the %d NUMA nodes is its own socket (no `numactl -H` or `lscpu` text "
               "to group them)", nnuma);
    for (int g = 0; g < n && !b.rc && pkg; g++)
        for (int h = 0; h < g && !b.rc; h++) {
            int first_g = 1, first_h = 1, lead_g = 1, lead_h = 1;
            for (int k = 0; k < g; k++) {
                first_g &= sock[k] != sock[g];
                lead_g &= pkg[k] != pkg[g];
            }
            for (int k = 0; k < h; k++) {
                first_h &= sock[k] != sock[h];
                lead_h &= pkg[k] != pkg[h];
            }
            if (!first_g || !first_h || sock[g] == sock[h])
                continue;
            if (pkg[g] == pkg[h])
                mk_quadrant(&b, cpu_of[h], cpu_of[g]);
            else if (lead_g && lead_h)
                mk_link(&b, cpu_of[h], cpu_of[g], LINK_SOCKET, 0);
        }
    free(pkg);
    /* Host memory per NUMA node: the socket's default DRAM rate split over the
     * socket's NUMA nodes (under NPS2/NPS4 a node interleaves only its own
     * share of the memory channels, and NCCL's SHM buffers sit on the GPU's
     * node); the text names no DIMMs, so the socket's rate is assumed. */
    int nps_max = 1;
    double mem_Bps;
    int64_t mem_lat;
    topo_default_link(LINK_MEM, 90, &mem_Bps, &mem_lat);
    for (int g = 0; g < n && !b.rc; g++) {
        if (mem_of[g] < 0)
            continue;
        int nps = grouped ? numa_per_socket(s, sock[g]) : 1;
        nps_max = nps > nps_max ? nps : nps_max;
        topo_link l = {.a = cpu_of[g], .b = mem_of[g], .kind = LINK_MEM,
                       .bw_Bps = mem_Bps / nps, .lat_ps = mem_lat};
        if (topo_add_link(t, &l, e) < 0)
            b.rc = e ? e->code : ERR_INPUT;
    }
    if (nps_max > 1)
        assume(&b, "host memory %.1f GB/s per NUMA node: collsim's %.0f GB/s socket default over "
               "the %d NUMA nodes of a socket (each interleaves its own memory channels); the "
               "text names no DIMMs", mem_Bps / 1e9 / nps_max, mem_Bps / 1e9, nps_max);
    else
        assume(&b, "host memory %.0f GB/s per socket (collsim's default; the text names no "
               "DIMMs)", mem_Bps / 1e9);
    /* NVLink: one NVSwitch if every pair (3+ GPUs) has the same NV#. */
    int same = n >= 3, k0 = n >= 2 ? s->nv[1] : 0;
    for (int a = 0; a < n; a++)
        for (int c = 0; c < n; c++)
            if (a != c && (s->c[a * n + c] != C_NV || s->nv[a * n + c] != k0))
                same = 0;
    if (same) {
        int nvs = mk_node(&b, "nvs0", TOPO_NVSWITCH, -1, -1);
        for (int g = 0; g < n && !b.rc; g++)
            mk_nvlink(&b, topo_gpu_node(t, g), nvs, k0, k0 * lane_Bps(&b, s, g, -1, sm));
    } else {
        for (int a = 0; a < n && !b.rc; a++)
            for (int c = a + 1; c < n && !b.rc; c++)
                if (s->c[a * n + c] == C_NV)
                    mk_nvlink(&b, topo_gpu_node(t, a), topo_gpu_node(t, c), s->nv[a * n + c],
                              s->nv[a * n + c] * lane_Bps(&b, s, a, c, sm));
    }
out:
    free(sock);
    free(root);
    free(pxb);
    free(pix);
    free(gpar);
    free(cpu_of);
    free(rp_of);
    free(psw_of);
    free(lsw_of);
    free(mem_of);
    return b.rc;
}

int topo_import_smi(FILE *f, const char *name, topo **out, err *e)
{
    *out = NULL;
    gpu_info *gi = calloc(MAX_SMI_GPUS, sizeof *gi);
    if (!gi)
        return err_set(e, ERR_SYSTEM, "out of memory");
    smi s;
    memset(&s, 0, sizeof s);
    s.file = name;
    s.e = e;
    s.gi = gi;
    s.q_cur = s.nl_cur = s.l_cur = -1;
    int rc = read_matrix(&s, f);
    topo *t = NULL;
    if (!rc && !(t = topo_new(name)))
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc) {
        const char *b = strrchr(name, '/');
        char tn[64];
        snprintf(tn, sizeof tn, "%s", b ? b + 1 : name);
        char *dot = strrchr(tn, '.');
        if (dot && dot != tn)
            *dot = 0;
        for (char *p = tn; *p; p++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-", *p))
                *p = '_';
        rc = topo_set_name(t, tn[0] ? tn : "imported");
    }
    if (!rc)
        rc = build(&s, t, e);
    if (!rc)
        rc = topo_finish(t, name, e);
    /* Every entry of the matrix must come out of the built tree. */
    char got[8];
    static const char *const want_names[] = {"X", "PIX", "PXB", "PHB", "NODE", "SYS"};
    for (int a = 0; !rc && a < s.n; a++)
        for (int b = 0; !rc && b < s.n; b++) {
            topo_gpu_path_smi(t, a, b, got);
            code c = s.c[a * s.n + b];
            char want[16];
            if (c == C_NV)
                snprintf(want, sizeof want, "NV%d", s.nv[a * s.n + b]);
            else
                snprintf(want, sizeof want, "%s", want_names[c]);
            if (strcmp(got, want))
                rc = err_at(e, name, s.line[a], "GPU%d-GPU%d is %s, but no PCI tree with the "
                            "other entries gives that (the importer's tree says %s)", a, b,
                            want, got);
        }
    free(s.c);
    free(s.nv);
    free(s.numa);
    free(s.line);
    free(s.gi);
    if (rc) {
        topo_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int topo_smi_p2p(FILE *f, const char *name, topo *t, err *e)
{
    char *buf = NULL, **tok = malloc(sizeof(char *) * (MAX_SMI_GPUS + 8));
    size_t cap = 0, len;
    long ln = 0;
    int rc = 0, n = -1, rows = 0, st;
    if (!tok)
        return err_set(e, ERR_SYSTEM, "out of memory");
    while (!rc && (st = line_read(f, &buf, &cap, MAX_SMI_LINE, &len)) != LINE_EOF) {
        ln++;
        if (st == LINE_ERROR)
            break;
        if (st != LINE_OK) {
            rc = err_at(e, name, ln, st == LINE_LONG ? "line longer than %d bytes"
                                                     : "NUL byte in a text file", MAX_SMI_LINE);
            break;
        }
        int starts_blank = buf[0] == ' ' || buf[0] == '\t';
        int nt = split(buf, tok, MAX_SMI_GPUS + 8);
        if (n < 0) { /* the header: GPU0 GPU1 ... */
            if (!starts_blank || nt < 1 || strcmp(tok[0], "GPU0"))
                continue;
            for (n = 0; n < nt && gpu_index(tok[n]) == n;)
                n++;
            if (n != topo_ngpus(t))
                rc = err_at(e, name, ln, "the P2P matrix has %d GPUs, the topology %d", n,
                            topo_ngpus(t));
            continue;
        }
        if (nt < 1 || gpu_index(tok[0]) != rows)
            continue; /* the legend, blank lines */
        if (nt != n + 1) {
            rc = err_at(e, name, ln, "row GPU%d has %d entries, expected %d", rows, nt - 1, n);
            break;
        }
        for (int b = 0; b < n && !rc; b++) {
            topo_p2p p;
            if (b == rows) {
                if (strcmp(tok[1 + b], "X"))
                    rc = err_at(e, name, ln, "GPU%d-GPU%d: expected X on the diagonal, got '%s'",
                                rows, b, tok[1 + b]);
            } else if (topo_p2p_parse(tok[1 + b], &p)) {
                rc = err_at(e, name, ln, "GPU%d-GPU%d: unknown P2P status '%s' (OK, NS, CNS, "
                            "GNS, TNS, U)", rows, b, tok[1 + b]);
            } else {
                rc = topo_set_p2p(t, rows, b, p, e);
            }
        }
        if (++rows == n)
            break;
    }
    if (!rc && n < 0)
        rc = err_at(e, name, ln, "no P2P matrix (a header line 'GPU0 GPU1 ...')");
    else if (!rc && rows < n)
        rc = err_at(e, name, ln, "the P2P matrix ends after %d of %d rows", rows, n);
    free(buf);
    free(tok);
    return rc;
}
