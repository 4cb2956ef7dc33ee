/* The topology text format `collsim-topo 1` (docs/formats.md): reader and
 * writer. One statement per line (name, param, node, link), `#` comments,
 * every number with its unit in its key. PCI parents may be named before
 * they are defined; they are resolved at the end of the file, so cycles
 * are possible in the input and reported with the line of the node. The
 * writer prints the same statements, so write(parse(x)) round-trips. */
#include "models/topo/topo.h"

#include "sim/line.h"
#include "sim/num.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_TOKENS = 16, MAX_LINE = 4095 };

/* Machine-wide parameters: key (with unit), field, unit scale to the stored
 * unit, range in the file's unit. */
typedef enum { P_INT, P_I64, P_DBL } ptype;
static const struct param_def {
    const char *key;
    ptype type;
    size_t off;
    double scale; /* stored = file value x scale */
    double lo, hi;
    int pow2;
} param_defs[] = {
    {"pcie_mps_bytes", P_INT, offsetof(topo_params, pcie_mps_bytes), 1, 128, 4096, 1},
    {"pcie_mrrs_bytes", P_INT, offsetof(topo_params, pcie_mrrs_bytes), 1, 128, 4096, 1},
    {"pcie_tlp_overhead_bytes", P_INT, offsetof(topo_params, pcie_tlp_overhead_bytes), 1,
     0, 64, 0},
    {"read_tags", P_INT, offsetof(topo_params, read_tags), 1, 1, 16384, 0},
    {"ce_read_tags", P_INT, offsetof(topo_params, ce_read_tags), 1, 0, 16384, 0},
    {"read_extra_lat_ns", P_I64, offsetof(topo_params, read_extra_lat_ps), 1e3, 0, 1e6, 0},
    {"arb_collapse_GBps", P_DBL, offsetof(topo_params, arb_collapse_Bps), 1e9, 0, 1e5, 0},
    {"arb_collapse_read_GBps", P_DBL, offsetof(topo_params, arb_collapse_read_Bps), 1e9, 0,
     1e5, 0},
    {"socket_read_GBps", P_DBL, offsetof(topo_params, socket_read_Bps), 1e9, 0, 1e5, 0},
    {"sm_req_bytes", P_INT, offsetof(topo_params, sm_req_bytes), 1, 16, 4096, 1},
    {"cta_store_GBps", P_DBL, offsetof(topo_params, cta_store_Bps), 1e9, 0, 1e5, 0},
    {"cta_load_GBps", P_DBL, offsetof(topo_params, cta_load_Bps), 1e9, 0, 1e5, 0},
    {"launch_us", P_I64, offsetof(topo_params, launch_ps), 1e6, 0, 1e6, 0},
    {"graph_node_us", P_I64, offsetof(topo_params, graph_node_ps), 1e6, 0, 1e6, 0},
    {"kernel_turn_us", P_I64, offsetof(topo_params, kernel_turn_ps), 1e6, 0, 1e6, 0},
    {"nvlink_req_bytes", P_DBL, offsetof(topo_params, nvlink_req_bytes), 1, 0, 4096, 0},
    {"event_record_us", P_I64, offsetof(topo_params, event_record_ps), 1e6, 0, 1e6, 0},
    {"loop_issue_us", P_I64, offsetof(topo_params, loop_issue_ps), 1e6, 0, 1e6, 0},
    {"hostmem_GBps", P_DBL, offsetof(topo_params, hostmem_Bps), 1e9, 1e-3, 1e5, 0},
    {"kernel_base_us", P_I64, offsetof(topo_params, kernel_base_ps), 1e6, 0, 1e6, 0},
    {"gpu_mem_GBps", P_DBL, offsetof(topo_params, gpu_mem_Bps), 1e9, 0, 1e5, 0},
    {"copy_setup_us", P_I64, offsetof(topo_params, copy_setup_ps), 1e6, 0, 1e6, 0},
    {"copy_host_setup_us", P_I64, offsetof(topo_params, copy_host_setup_ps), 1e6, 0, 1e6, 0},
    {"copy_issue_us", P_I64, offsetof(topo_params, copy_issue_ps), 1e6, 0, 1e6, 0},
    {"fence_sys_us", P_I64, offsetof(topo_params, fence_sys_ps), 1e6, 0, 1e6, 0},
    {"fence_ack_us", P_I64, offsetof(topo_params, fence_ack_ps), 1e6, 0, 1e6, 0},
    {"block_wait_us", P_I64, offsetof(topo_params, block_wait_ps), 1e6, 0, 1e6, 0},
    {"gpu_sm", P_INT, offsetof(topo_params, gpu_sm), 1, 0, 1000, 0},
    {"tlp_rcb_bytes", P_INT, offsetof(topo_params, tlp_rcb_bytes), 1, 64, 128, 1},
    {"tlp_cpl_bytes", P_INT, offsetof(topo_params, tlp_cpl_bytes), 1, 64, 4096, 1},
    {"tlp_switch_hdr_credits", P_INT, offsetof(topo_params, tlp_sw_hdr), 1, 0, 1e6, 0},
    {"tlp_switch_data_bytes", P_INT, offsetof(topo_params, tlp_sw_data_bytes), 1, 0, 1e8, 0},
    {"tlp_root_hdr_credits", P_INT, offsetof(topo_params, tlp_rc_hdr), 1, 0, 1e6, 0},
    {"tlp_root_data_bytes", P_INT, offsetof(topo_params, tlp_rc_data_bytes), 1, 0, 1e8, 0},
    {"tlp_ep_hdr_credits", P_INT, offsetof(topo_params, tlp_ep_hdr), 1, 0, 1e6, 0},
    {"tlp_ep_data_bytes", P_INT, offsetof(topo_params, tlp_ep_data_bytes), 1, 0, 1e8, 0},
    {"tlp_root_cpl_hdr_credits", P_INT, offsetof(topo_params, tlp_rc_cpl_hdr), 1, 0, 1e6, 0},
    {"tlp_root_cpl_data_bytes", P_INT, offsetof(topo_params, tlp_rc_cpl_data_bytes), 1, 0, 1e8,
     0},
    {"tlp_fc_ns", P_I64, offsetof(topo_params, tlp_fc_ps), 1e3, 0, 1e6, 0},
    {"tlp_turn_ns", P_I64, offsetof(topo_params, tlp_turn_ps), 1e3, 0, 1e6, 0},
    {"tlp_turn_cpl_ns", P_I64, offsetof(topo_params, tlp_turn_cpl_ps), 1e3, 0, 1e6, 0},
    {"tlp_dllp_bytes", P_INT, offsetof(topo_params, tlp_dllp_bytes), 1, 0, 256, 0},
    {"nccl_start_ll_us", P_I64, offsetof(topo_params, nccl_start_ps[TOPO_NCCL_LL]), 1e6, 0,
     1e4, 0},
    {"nccl_start_ll128_us", P_I64, offsetof(topo_params, nccl_start_ps[TOPO_NCCL_LL128]), 1e6,
     0, 1e4, 0},
    {"nccl_start_simple_us", P_I64, offsetof(topo_params, nccl_start_ps[TOPO_NCCL_SIMPLE]),
     1e6, 0, 1e4, 0},
    {"nccl_step_ll_us", P_I64, offsetof(topo_params, nccl_step_ps[TOPO_NCCL_LL]), 1e6, 0, 1e4,
     0},
    {"nccl_step_ll128_us", P_I64, offsetof(topo_params, nccl_step_ps[TOPO_NCCL_LL128]), 1e6, 0,
     1e4, 0},
    {"nccl_step_simple_us", P_I64, offsetof(topo_params, nccl_step_ps[TOPO_NCCL_SIMPLE]), 1e6,
     0, 1e4, 0},
    {"nccl_call_us", P_I64, offsetof(topo_params, nccl_call_ps), 1e6, 0, 1e4, 0},
    {"nccl_graph_call_us", P_I64, offsetof(topo_params, nccl_graph_call_ps), 1e6, 0, 1e4, 0},
    {"nccl_host_us", P_I64, offsetof(topo_params, nccl_host_ps), 1e6, 0, 1e4, 0},
    {"nccl_group_us", P_I64, offsetof(topo_params, nccl_group_ps), 1e6, 0, 1e4, 0},
    {"nccl_p2p_op_us", P_I64, offsetof(topo_params, nccl_p2p_op_ps), 1e6, 0, 1e4, 0},
    {"nccl_chan_us", P_I64, offsetof(topo_params, nccl_chan_ps), 1e6, 0, 1e4, 0},
    {"nvlink_half_blocks", P_DBL, offsetof(topo_params, nvlink_half_blocks), 1, 0, 1e4, 0},
    {"cta_store_host_GBps", P_DBL, offsetof(topo_params, cta_store_host_Bps), 1e9, 0, 1e5, 0},
    {"cta_load_host_GBps", P_DBL, offsetof(topo_params, cta_load_host_Bps), 1e9, 0, 1e5, 0},
    {"host_sm_mixed_GBps", P_DBL, offsetof(topo_params, host_sm_mixed_Bps), 1e9, 0, 1e5, 0},
    {"cta_ceil_GBps", P_DBL, offsetof(topo_params, cta_ceil_Bps), 1e9, 0, 1e5, 0},
    {"cta_ceil_far_GBps", P_DBL, offsetof(topo_params, cta_ceil_far_Bps), 1e9, 0, 1e5, 0},
    {"l2_load_speedup", P_DBL, offsetof(topo_params, l2_load_speedup), 1, 0, 100, 0},
    {"trip_load_ns", P_I64, offsetof(topo_params, trip_load_ps), 1e3, 0, 1e6, 0},
    {"trip_GBps", P_DBL, offsetof(topo_params, trip_Bps), 1e9, 0, 1e5, 0},
    {"l2_MB", P_DBL, offsetof(topo_params, l2_bytes), 1e6, 0, 1e6, 0},
};
enum { NPARAMS = sizeof param_defs / sizeof param_defs[0] };

int topo_param_integer(const char *key)
{
    for (int i = 0; i < NPARAMS; i++)
        if (!strcmp(param_defs[i].key, key))
            return param_defs[i].type != P_INT ? 0 : param_defs[i].pow2 ? 2 : 1;
    return 0;
}

const char *topo_param_key(const topo_params *p, int i, double *value)
{
    if (i < 0 || i >= NPARAMS)
        return NULL;
    const struct param_def *d = &param_defs[i];
    const char *base = (const char *)p + d->off;
    if (d->type == P_INT)
        *value = *(const int *)base;
    else if (d->type == P_I64)
        *value = (double)*(const int64_t *)base / d->scale;
    else
        *value = *(const double *)base / d->scale;
    return d->key;
}

static const char *const node_kinds[TOPO_NKINDS] = {
    "gpu", "switch", "root", "cpu", "nvswitch", "hostmem",
};
static const char *const link_kinds[LINK_NKINDS] = {
    "pcie", "fabric", "socket", "nvlink", "mem",
};

static int lookup(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

static int valid_name(const char *s)
{
    if (!*s || strlen(s) > 63)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || strchr("_.:-", *s)))
            return 0;
    return 1;
}

typedef struct pending_parent {
    int node;
    long line;
    char parent[64];
} pending_parent;

typedef struct pctx {
    const char *file;
    long line;
    topo *t;
    err *e;
    pending_parent *pp;
    int npp, cap_pp;
    int named;                     /* a `name` line was read */
    unsigned char seen[NPARAMS + 1];   /* params given (the last: cpu) */
} pctx;

static int param_line(pctx *c, char **tok, int n)
{
    if (n != 3)
        return err_at(c->e, c->file, c->line, "expected 'param KEY VALUE'");
    if (!strcmp(tok[1], "cpu")) {
        if (c->seen[NPARAMS]++)
            return err_at(c->e, c->file, c->line, "param cpu given twice");
        if (topo_cpu_parse(tok[2], &topo_params_mut(c->t)->cpu)) {
            char all[256] = "";
            for (int i = 0; i < CPU_NKINDS; i++)
                snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "",
                         topo_cpu_name((topo_cpu)i));
            return err_at(c->e, c->file, c->line, "param cpu: '%s' is not one of %s", tok[2],
                          all);
        }
        return 0;
    }
    for (int i = 0; i < NPARAMS; i++) {
        const struct param_def *d = &param_defs[i];
        if (strcmp(d->key, tok[1]))
            continue;
        if (c->seen[i]++)
            return err_at(c->e, c->file, c->line, "param %s given twice", d->key);
        double v;
        if (num_decimal(tok[2], &v))
            return err_at(c->e, c->file, c->line, "param %s: '%s' is not a number", d->key,
                          tok[2]);
        if (v < d->lo || v > d->hi)
            return err_at(c->e, c->file, c->line, "param %s: %s not in %g..%g", d->key,
                          tok[2], d->lo, d->hi);
        char *base = (char *)topo_params_mut(c->t) + d->off;
        if (d->type == P_INT) {
            if (v != floor(v) || (d->pow2 && ((long)v & ((long)v - 1))))
                return err_at(c->e, c->file, c->line, "param %s: %s must be %s", d->key,
                              tok[2], d->pow2 ? "a power of two" : "an integer");
            *(int *)base = (int)v;
        } else if (d->type == P_I64) {
            *(int64_t *)base = llround(v * d->scale);
        } else {
            *(double *)base = v * d->scale;
        }
        return 0;
    }
    return err_at(c->e, c->file, c->line, "unknown param '%s'", tok[1]);
}

static int node_line(pctx *c, char **tok, int n)
{
    if (n < 3)
        return err_at(c->e, c->file, c->line,
                      "expected 'node NAME KIND [numa=N] [parent=P] [tags=N]'");
    if (!valid_name(tok[1]))
        return err_at(c->e, c->file, c->line, "bad node name '%s' (letters, digits, _.:-, "
                      "at most 63)", tok[1]);
    int kind = lookup(node_kinds, TOPO_NKINDS, tok[2]);
    if (kind < 0)
        return err_at(c->e, c->file, c->line, "unknown node kind '%s' (gpu, switch, root, "
                      "cpu, nvswitch, hostmem)", tok[2]);
    long numa = -1, tags = -1;
    const char *parent = NULL;
    for (int i = 3; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        if (!eq)
            return err_at(c->e, c->file, c->line, "expected key=value, got '%s'", tok[i]);
        *eq = 0;
        const char *v = eq + 1;
        if (!strcmp(tok[i], "numa") && numa < 0) {
            if (num_long(v, &numa) || numa < 0 || numa > 65535)
                return err_at(c->e, c->file, c->line, "numa=%s is not in 0..65535", v);
        } else if (!strcmp(tok[i], "tags") && tags < 0) {
            if (num_long(v, &tags) || tags < 1 || tags > 16384)
                return err_at(c->e, c->file, c->line, "tags=%s is not in 1..16384", v);
            if (kind != TOPO_GPU)
                return err_at(c->e, c->file, c->line, "tags= is for a gpu node (read tags)");
        } else if (!strcmp(tok[i], "parent") && !parent) {
            if (!valid_name(v))
                return err_at(c->e, c->file, c->line, "bad parent name '%s'", v);
            parent = v;
        } else {
            return err_at(c->e, c->file, c->line, "unknown or repeated key '%s' for a node",
                          tok[i]);
        }
    }
    topo_set_line(c->t, c->line);
    int id = topo_add_node(c->t, tok[1], (topo_kind)kind, (int)numa, c->e);
    if (id < 0)
        return c->e ? c->e->code : ERR_INPUT;
    if (tags > 0)
        TRY(topo_set_read_tags(c->t, id, (int)tags, c->e));
    if (parent) {
        if (c->npp >= c->cap_pp) {
            int nc = c->cap_pp ? 2 * c->cap_pp : 64;
            pending_parent *p = realloc(c->pp, sizeof *p * (size_t)nc);
            if (!p)
                return err_set(c->e, ERR_SYSTEM, "out of memory");
            c->pp = p;
            c->cap_pp = nc;
        }
        pending_parent *p = &c->pp[c->npp++];
        p->node = id;
        p->line = c->line;
        snprintf(p->parent, sizeof p->parent, "%s", parent);
    }
    return 0;
}

/* p2p A B STATUS: NVML's P2P status from GPU A to GPU B and back (nvidia-smi
 * topo -p2p r); A or B may be `*`: every GPU defined so far. */
static int p2p_line(pctx *c, char **tok, int n)
{
    topo_p2p st;
    if (n != 4 || topo_p2p_parse(tok[3], &st))
        return err_at(c->e, c->file, c->line, "expected 'p2p GPU_A GPU_B STATUS' (STATUS: OK, "
                      "NS, CNS, GNS, TNS, U; a GPU may be '*')");
    int g[2][2];
    for (int k = 0; k < 2; k++) {
        if (!strcmp(tok[1 + k], "*")) {
            g[k][0] = 0;
            g[k][1] = topo_ngpus(c->t) - 1;
            continue;
        }
        int v = topo_find(c->t, tok[1 + k]);
        if (v < 0 || topo_node_at(c->t, v)->gpu < 0)
            return err_at(c->e, c->file, c->line, "p2p: '%s' is not a GPU defined above",
                          tok[1 + k]);
        g[k][0] = g[k][1] = topo_node_at(c->t, v)->gpu;
    }
    for (int a = g[0][0]; a <= g[0][1]; a++)
        for (int b = g[1][0]; b <= g[1][1]; b++)
            if (a != b && (topo_set_p2p(c->t, a, b, st, c->e) || topo_set_p2p(c->t, b, a, st, c->e)))
                return c->e ? c->e->code : ERR_SYSTEM;
    return 0;
}

static int link_line(pctx *c, char **tok, int n)
{
    if (n < 4)
        return err_at(c->e, c->file, c->line, "expected 'link A B KIND key=value...'");
    int a = topo_find(c->t, tok[1]), b = topo_find(c->t, tok[2]);
    if (a < 0 || b < 0)
        return err_at(c->e, c->file, c->line, "unknown node '%s' (nodes must be defined "
                      "before their links)", a < 0 ? tok[1] : tok[2]);
    int kind = lookup(link_kinds, LINK_NKINDS, tok[3]);
    if (kind < 0)
        return err_at(c->e, c->file, c->line, "unknown link kind '%s' (pcie, fabric, "
                      "socket, nvlink, mem)", tok[3]);
    topo_link l = {.a = a, .b = b, .kind = (topo_link_kind)kind, .lat_ps = -1};
    int have_bw = 0, have_lat = 0;
    long gen = -1, width = -1, lanes = -1;
    for (int i = 4; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        if (!eq)
            return err_at(c->e, c->file, c->line, "expected key=value, got '%s'", tok[i]);
        *eq = 0;
        const char *k = tok[i], *v = eq + 1;
        double d;
        long *iv = NULL;
        if (!strcmp(k, "bw_GBps") && !have_bw) {
            if (num_decimal(v, &d) || !(d > 0) || d > 1e5)
                return err_at(c->e, c->file, c->line, "bw_GBps=%s must be a number > 0 and "
                              "<= 100000 (100 TB/s)", v);
            l.bw_Bps = d * 1e9;
            have_bw = 1;
            continue;
        }
        if (!strcmp(k, "bw_back_GBps") && !(l.bw_back_Bps > 0) && kind != LINK_PCIE) {
            if (num_decimal(v, &d) || !(d > 0) || d > 1e5)
                return err_at(c->e, c->file, c->line, "bw_back_GBps=%s must be a number > 0 "
                              "and <= 100000 (100 TB/s)", v);
            l.bw_back_Bps = d * 1e9;
            continue;
        }
        if (!strcmp(k, "lat_ns") && !have_lat) {
            if (num_decimal(v, &d) || d < 0 || d > 1e6)
                return err_at(c->e, c->file, c->line, "lat_ns=%s must be a number in "
                              "0..1000000", v);
            l.lat_ps = llround(d * 1e3);
            have_lat = 1;
            continue;
        }
        if (kind == LINK_PCIE && !strcmp(k, "gen") && gen < 0)
            iv = &gen;
        else if (kind == LINK_PCIE && !strcmp(k, "width") && width < 0)
            iv = &width;
        else if (kind == LINK_NVLINK && !strcmp(k, "lanes") && lanes < 0)
            iv = &lanes;
        if (!iv)
            return err_at(c->e, c->file, c->line, "unknown or repeated key '%s' for a %s "
                          "link", k, link_kinds[kind]);
        if (num_long(v, iv) || *iv < 1 || *iv > 1024)
            return err_at(c->e, c->file, c->line, "%s=%s is not a positive integer", k, v);
    }
    if (!have_lat)
        return err_at(c->e, c->file, c->line, "link %s-%s: lat_ns= is required", tok[1],
                      tok[2]);
    if (kind == LINK_PCIE && (gen < 0 || width < 0))
        return err_at(c->e, c->file, c->line, "pcie link %s-%s: gen= and width= are "
                      "required", tok[1], tok[2]);
    if (kind != LINK_PCIE && !have_bw)
        return err_at(c->e, c->file, c->line, "%s link %s-%s: bw_GBps= is required",
                      link_kinds[kind], tok[1], tok[2]);
    if (kind == LINK_NVLINK && lanes < 0)
        return err_at(c->e, c->file, c->line, "nvlink %s-%s: lanes= is required", tok[1],
                      tok[2]);
    l.pcie_gen = (int)gen;
    l.pcie_width = (int)width;
    l.nvlinks = (int)lanes;
    topo_set_line(c->t, c->line);
    return topo_add_link(c->t, &l, c->e) < 0 ? (c->e ? c->e->code : ERR_INPUT) : 0;
}

static int parse_lines(pctx *c, FILE *f)
{
    char *buf = NULL;
    size_t cap = 0;
    size_t len;
    int rc = 0, header = 0, st;
    while ((st = line_read(f, &buf, &cap, MAX_LINE, &len)) != LINE_EOF) {
        c->line++;
        if (st != LINE_OK) {
            rc = line_fail(st, c->file, c->line, MAX_LINE, c->e);
            break;
        }
        if (!strncmp(buf, "# assumed: ", 11)) {
            size_t l = strlen(buf);
            while (l > 11 && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
                buf[--l] = 0;
            if ((rc = topo_assume(c->t, c->e, "%s", buf + 11)) != 0)
                break;
            continue;
        }
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = 0;
        char *tok[MAX_TOKENS];
        int n = 0;
        for (char *s = strtok(buf, " \t\r\n"); s; s = strtok(NULL, " \t\r\n")) {
            if (n == MAX_TOKENS) {
                n = -1;
                break;
            }
            tok[n++] = s;
        }
        if (n < 0) {
            rc = err_at(c->e, c->file, c->line, "too many fields");
            break;
        }
        if (!header) {
            if (c->line != 1 || n != 2 || strcmp(tok[0], "collsim-topo") || strcmp(tok[1], "1")) {
                rc = err_at(c->e, c->file, c->line, "not a topology file: the first line must "
                            "be 'collsim-topo 1'");
                break;
            }
            header = 1;
            continue;
        }
        if (n == 0)
            continue;
        if (!strcmp(tok[0], "name")) {
            if (c->named++)
                rc = err_at(c->e, c->file, c->line, "name given twice");
            else if (n != 2 || !valid_name(tok[1]))
                rc = err_at(c->e, c->file, c->line, "expected 'name NAME' (letters, digits, "
                            "_.:-)");
            else if (topo_set_name(c->t, tok[1]))
                rc = err_set(c->e, ERR_SYSTEM, "out of memory");
        } else if (!strcmp(tok[0], "param")) {
            rc = param_line(c, tok, n);
        } else if (!strcmp(tok[0], "node")) {
            rc = node_line(c, tok, n);
        } else if (!strcmp(tok[0], "link")) {
            rc = link_line(c, tok, n);
        } else if (!strcmp(tok[0], "p2p")) {
            rc = p2p_line(c, tok, n);
        } else {
            rc = err_at(c->e, c->file, c->line, "unknown statement '%s' (name, param, node, "
                        "link, p2p)", tok[0]);
        }
        if (rc)
            break;
    }
    free(buf);
    if (!rc && ferror(f))
        rc = err_set(c->e, ERR_SYSTEM, "%s: read error", c->file);
    if (!rc && !header)
        rc = err_at(c->e, c->file, 0, "empty file (expected 'collsim-topo 1')");
    return rc;
}

int topo_parse(FILE *f, const char *name, topo **out, err *e)
{
    *out = NULL;
    pctx c = {.file = name, .t = topo_new(name), .e = e};
    if (!c.t)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int rc = parse_lines(&c, f);
    for (int i = 0; !rc && i < c.npp; i++) {
        int p = topo_find(c.t, c.pp[i].parent);
        if (p < 0)
            rc = err_at(e, name, c.pp[i].line, "unknown parent node '%s'", c.pp[i].parent);
        else
            rc = topo_set_parent(c.t, c.pp[i].node, p, e);
    }
    free(c.pp);
    if (!rc)
        rc = topo_finish(c.t, name, e);
    if (rc) {
        topo_free(c.t);
        return rc;
    }
    *out = c.t;
    return 0;
}

/* Shortest decimal form of v/scale with at most `digits` decimals. */
static void fmt_fixed(char *buf, size_t n, double v, int digits)
{
    snprintf(buf, n, "%.*f", digits, v);
    char *dot = strchr(buf, '.');
    if (!dot)
        return;
    char *end = buf + strlen(buf) - 1;
    while (end > dot && *end == '0')
        *end-- = 0;
    if (end == dot)
        *end = 0;
}

int topo_write(const topo *t, FILE *f, err *e)
{
    char b1[64];
    fprintf(f, "collsim-topo 1\nname %s\n", topo_name(t));
    for (int i = 0; i < topo_nassumed(t); i++)
        fprintf(f, "# assumed: %s\n", topo_assumed(t, i));
    const topo_params *p = topo_params_get(t);
    for (int i = 0; i < NPARAMS; i++) {
        const struct param_def *d = &param_defs[i];
        const char *base = (const char *)p + d->off;
        if (d->type == P_INT)
            fprintf(f, "param %s %d\n", d->key, *(const int *)base);
        else if (d->type == P_I64) {
            fmt_fixed(b1, sizeof b1, (double)*(const int64_t *)base / d->scale, 6);
            fprintf(f, "param %s %s\n", d->key, b1);
        } else {
            fprintf(f, "param %s %.15g\n", d->key, *(const double *)base / d->scale);
        }
    }
    fprintf(f, "param cpu %s\n", topo_cpu_name(p->cpu));
    for (int v = 0; v < topo_nnodes(t); v++) {
        const topo_node *n = topo_node_at(t, v);
        fprintf(f, "node %s %s", n->name, node_kinds[n->kind]);
        if (n->numa >= 0)
            fprintf(f, " numa=%d", n->numa);
        if (n->pci_parent >= 0)
            fprintf(f, " parent=%s", topo_node_at(t, n->pci_parent)->name);
        if (n->read_tags > 0)
            fprintf(f, " tags=%d", n->read_tags);
        fputc('\n', f);
    }
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        fprintf(f, "link %s %s %s", topo_node_at(t, l->a)->name, topo_node_at(t, l->b)->name,
                link_kinds[l->kind]);
        if (l->kind == LINK_PCIE)
            fprintf(f, " gen=%d width=%d", l->pcie_gen, l->pcie_width);
        if (l->kind == LINK_NVLINK)
            fprintf(f, " lanes=%d", l->nvlinks);
        if (topo_link_bw_given(t, i))
            fprintf(f, " bw_GBps=%.15g", l->bw_Bps / 1e9);
        if (l->bw_back_Bps > 0)
            fprintf(f, " bw_back_GBps=%.15g", l->bw_back_Bps / 1e9);
        fmt_fixed(b1, sizeof b1, (double)l->lat_ps / 1e3, 3);
        fprintf(f, " lat_ns=%s\n", b1);
    }
    /* One direction per line would read back as both: write each pair once
     * when its two directions agree, else both (the later line wins). */
    for (int i = 0; i < topo_p2p_count(t); i++) {
        int a, b;
        topo_p2p s;
        topo_p2p_at(t, i, &a, &b, &s);
        if (a > b && topo_gpu_p2p(t, b, a) == s)
            continue;
        fprintf(f, "p2p %s %s %s\n", topo_node_at(t, topo_gpu_node(t, a))->name,
                topo_node_at(t, topo_gpu_node(t, b))->name, topo_p2p_name(s));
    }
    if (fflush(f) != 0 || ferror(f))
        return err_set(e, ERR_SYSTEM, "writing topology failed");
    return 0;
}
