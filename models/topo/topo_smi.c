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
#include <stdlib.h>
#include <string.h>

enum { MAX_SMI_GPUS = 1024, MAX_SMI_LINE = 1 << 16 };

/* Matrix codes, in the order of the kinds of relation. */
typedef enum { C_X, C_PIX, C_PXB, C_PHB, C_NODE, C_SYS, C_NV } code;

typedef struct smi {
    const char *file;
    err *e;
    int n;
    code *c;        /* n x n */
    int *nv;        /* n x n lane counts for C_NV */
    int *numa;      /* -1 unknown */
    long *line;     /* row line numbers */
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
        int starts_blank = buf[0] == ' ' || buf[0] == '\t';
        int nt = split(buf, tok, MAX_SMI_GPUS + 64);
        if (row < 0) {
            /* The header: indented, GPU0 GPU1 ... then other devices and
             * the affinity headings; `collsim topo show` writes it as a
             * comment, "#   GPU0 ...". */
            int hash = nt > 1 && !strcmp(tok[0], "#") && !strcmp(tok[1], "GPU0");
            if (hash)
                memmove(tok, tok + 1, sizeof *tok * (size_t)--nt);
            if ((!starts_blank && !hash) || nt < 1 || strcmp(tok[0], "GPU0"))
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
} bctx;

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
    int *lsw_of = malloc(sizeof(int) * (size_t)n);
    bctx b = {t, e, 0, 0, 0};
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
    for (int g = 0; g < n; g++)
        cpu_of[g] = rp_of[g] = psw_of[g] = lsw_of[g] = -1;
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
            int m = mk_node(&b, name, TOPO_HOSTMEM, sock[g], -1);
            mk_link(&b, cs, m, LINK_MEM, 0);
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
                mk_link(&b, psw_of[pxb[g]], parent, LINK_PCIE, 0);
            }
            parent = psw_of[pxb[g]];
        }
        if (multi || !alone) {
            if (lsw_of[pix[g]] < 0) {
                snprintf(name, sizeof name, "sw%d", b.nsw++);
                lsw_of[pix[g]] = mk_node(&b, name, TOPO_SWITCH, sock[g], parent);
                mk_link(&b, lsw_of[pix[g]], parent, LINK_PCIE, 0);
            }
            parent = lsw_of[pix[g]];
        }
        gpar[g] = parent;
    }
    for (int g = 0; g < n && !b.rc; g++) {
        topo_set_line(t, s->line[g]);
        snprintf(name, sizeof name, "gpu%d", g);
        int id = mk_node(&b, name, TOPO_GPU, sock[g], gpar[g]);
        mk_link(&b, id, gpar[g], LINK_PCIE, 0);
    }
    /* Sockets: a full mesh of socket links. */
    for (int g = 0; g < n && !b.rc; g++)
        for (int h = 0; h < g && !b.rc; h++) {
            int first_g = 1, first_h = 1;
            for (int k = 0; k < g; k++)
                first_g &= sock[k] != sock[g];
            for (int k = 0; k < h; k++)
                first_h &= sock[k] != sock[h];
            if (first_g && first_h && sock[g] != sock[h])
                mk_link(&b, cpu_of[h], cpu_of[g], LINK_SOCKET, 0);
        }
    /* NVLink: one NVSwitch if every pair (3+ GPUs) has the same NV#. */
    int same = n >= 3, k0 = n >= 2 ? s->nv[1] : 0;
    for (int a = 0; a < n; a++)
        for (int c = 0; c < n; c++)
            if (a != c && (s->c[a * n + c] != C_NV || s->nv[a * n + c] != k0))
                same = 0;
    if (same) {
        int nvs = mk_node(&b, "nvs0", TOPO_NVSWITCH, -1, -1);
        for (int g = 0; g < n && !b.rc; g++)
            mk_link(&b, topo_gpu_node(t, g), nvs, LINK_NVLINK, k0);
    } else {
        for (int a = 0; a < n && !b.rc; a++)
            for (int c = a + 1; c < n && !b.rc; c++)
                if (s->c[a * n + c] == C_NV)
                    mk_link(&b, topo_gpu_node(t, a), topo_gpu_node(t, c), LINK_NVLINK,
                            s->nv[a * n + c]);
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
    return b.rc;
}

int topo_import_smi(FILE *f, const char *name, topo **out, err *e)
{
    *out = NULL;
    smi s = {.file = name, .e = e};
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
