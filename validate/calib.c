/* Calibration profiles: parse, write, look up, and map onto topo_params.
 * Keys are checked against a static table (machine-wide parameters) or the
 * link-class grammar `link.<link kind>.<node kind>-<node kind>.<bw_GBps|lat_ns>`;
 * values must lie in the key's range. Entries are a growing array in file
 * order; strings are owned copies. */
#include "validate/calib.h"

#include "sim/input.h"
#include "sim/line.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CALIB_LINE_MAX = 4095 };

struct calib {
    calib_entry *ents;
    int n, cap;
    char **comments;
    int ncomments;
    char *source;
};

static const calib_param_desc params[] = {
    {"pcie_mps_bytes", "PCIe max payload size of writes", 64, 4096},
    {"pcie_mrrs_bytes", "PCIe max read request size", 64, 4096},
    {"pcie_tlp_overhead_bytes", "framing, header and LCRC bytes per TLP", 0, 64},
    {"read_tags", "outstanding non-posted reads per GPU", 1, 16384},
    {"ce_read_tags", "of those, what a GPU's copy engine may hold (0 = all)", 0, 16384},
    {"read_extra_lat_ns", "completer turnaround added to a read round trip", 0, 1e5},
    {"arb_collapse_GBps", "posted-write arbitration collapse rate (0 = none)", 0, 1e3},
    {"arb_collapse_read_GBps", "read-completion arbitration collapse rate (0 = none)", 0, 1e3},
    {"socket_read_GBps", "peer read completions across a socket link (0 = link rate)", 0,
     1e5},
    {"tlp_turn_ns", "root ports' ordering turnaround of peer posted writes (transaction level)",
     0, 1e6},
    {"tlp_turn_cpl_ns", "the same for peer read completions (transaction level)", 0, 1e6},
    {"tlp_dllp_bytes", "DLLP bytes a PCIe receiver returns on the other direction per TLP", 0, 256},
    {"sm_req_bytes", "largest PCIe request of an SM load or store", 16, 4096},
    {"cta_store_GBps", "peer stores one thread block sustains (0 = no limit)", 0, 1e5},
    {"cta_load_GBps", "peer loads one thread block sustains (0 = no limit)", 0, 1e5},
    {"cta_store_host_GBps", "stores into pinned host memory one thread block sustains (0 = as to a peer)", 0, 1e5},
    {"cta_load_host_GBps", "loads from pinned host memory one thread block sustains (0 = as from a peer)", 0, 1e5},
    {"host_sm_mixed_GBps", "one GPU's SM loads from and stores into host memory together (0 = no bound)", 0, 1e5},
    {"cta_ceil_GBps", "one thread block's ceiling copying inside its GPU, at any depth (0 = the reference block)", 0, 1e5},
    {"cta_ceil_far_GBps", "the same storing outside its GPU (host memory, a peer)", 0, 1e5},
    {"l2_load_speedup", "a block's loads from L2 against the same from HBM (<= 1 = none)", 0, 100},
    {"trip_load_ns", "a block's trip of loads grows by this per load each thread keeps in flight beyond one (0 = none)", 0, 1e6},
    {"trip_GBps", "the SM's issue of a trip's bytes: a trip grows by its bytes at this rate (0 = none)", 0, 1e5},
    {"launch_us", "kernel launch overhead", 0, 1e4},
    {"graph_node_us", "per-node cost inside a CUDA graph", 0, 1e4},
    {"kernel_turn_us", "an eager kernel queued behind another: the GPU's turnaround (0 = graph_node_us)", 0, 1e4},
    {"hostmem_GBps", "per-socket DRAM bandwidth for SHM staging", 1e-3, 1e5},
    {"copy_setup_us", "fixed cost of one copy-engine transfer", 0, 1e4},
    {"copy_host_setup_us", "copy_setup_us for a copy to or from host memory (0 = copy_setup_us)", 0, 1e4},
    {"copy_issue_us", "host cost of issuing one copy (a timed loop's floor per copy)", 0, 1e4},
    {"fence_sys_us", "a system-scope fence before a barrier's release store (beyond the store)", 0, 1e4},
    {"fence_ack_us", "that fence's wait after a block's stores into a peer, beyond its wait after local stores (0 = the route's write latency)", 0, 1e4},
    {"kernel_base_us", "device-side fixed cost of a kernel (start to finish)", 0, 1e4},
    {"nccl_start_ll_us", "NCCL LL kernel start per collective", 0, 1e4},
    {"nccl_start_ll128_us", "NCCL LL128 kernel start per collective", 0, 1e4},
    {"nccl_start_simple_us", "NCCL Simple kernel start per collective", 0, 1e4},
    {"nccl_step_ll_us", "NCCL LL device-side cost per pipelined step", 0, 1e4},
    {"nccl_step_ll128_us", "NCCL LL128 device-side cost per pipelined step", 0, 1e4},
    {"nccl_step_simple_us", "NCCL Simple device-side cost per pipelined step", 0, 1e4},
    {"nccl_call_us", "host cost of one eager NCCL call (0 = launch_us)", 0, 1e4},
    {"nccl_graph_call_us", "per NCCL call inside a CUDA graph (0 = graph_node_us)", 0, 1e4},
    {"nccl_host_us", "NCCL's host work per eager one-rank collective beyond a kernel launch", 0,
     1e4},
    {"nccl_group_us", "NCCL's host work per kernel-launching group end beyond the launch", 0,
     1e4},
    {"nccl_p2p_op_us", "host cost of each ncclSend / ncclRecv in a group", 0, 1e4},
    {"nccl_chan_us", "NCCL's host work per channel of an eager collective beyond its first", 0,
     1e4},
    {NULL, NULL, 0, 0},
};

static const char *const link_kinds[LINK_NKINDS] = {"pcie", "fabric", "socket", "nvlink",
                                                    "mem"};
/* Node kind names in topo_kind order. */
static const char *node_kind_name(int k)
{
    static const char *const names[TOPO_NKINDS] = {
        [TOPO_GPU] = "gpu",   [TOPO_SWITCH] = "switch",     [TOPO_ROOT] = "root",
        [TOPO_CPU] = "cpu",   [TOPO_NVSWITCH] = "nvswitch", [TOPO_HOSTMEM] = "hostmem",
    };
    return (unsigned)k < TOPO_NKINDS ? names[k] : NULL;
}

const calib_param_desc *calib_params_table(void) { return params; }

const char *calib_link_class(topo_link_kind lk, topo_kind ka, topo_kind kb, char *buf)
{
    if (ka > kb) {
        topo_kind t = ka;
        ka = kb;
        kb = t;
    }
    snprintf(buf, 48, "%s.%s-%s", (unsigned)lk < LINK_NKINDS ? link_kinds[lk] : "?",
             node_kind_name(ka) ? node_kind_name(ka) : "?",
             node_kind_name(kb) ? node_kind_name(kb) : "?");
    return buf;
}

static int kind_index(const char *s, size_t n, int link)
{
    int count = link ? LINK_NKINDS : TOPO_NKINDS;
    for (int k = 0; k < count; k++) {
        const char *name = link ? link_kinds[k] : node_kind_name(k);
        if (strlen(name) == n && !strncmp(s, name, n))
            return k;
    }
    return -1;
}

/* Range of key: 0 ok (lo/hi set), -1 unknown key. */
static int key_range(const char *key, double *lo, double *hi)
{
    for (const calib_param_desc *p = params; p->key; p++)
        if (!strcmp(key, p->key)) {
            *lo = p->lo;
            *hi = p->hi;
            return 0;
        }
    if (strncmp(key, "link.", 5))
        return -1;
    const char *lk = key + 5, *dot = strchr(lk, '.');
    if (!dot || kind_index(lk, (size_t)(dot - lk), 1) < 0)
        return -1;
    const char *ka = dot + 1, *dash = strchr(ka, '-');
    if (!dash || kind_index(ka, (size_t)(dash - ka), 0) < 0)
        return -1;
    const char *kb = dash + 1, *dot2 = strchr(kb, '.');
    if (!dot2 || kind_index(kb, (size_t)(dot2 - kb), 0) < 0)
        return -1;
    if (kind_index(ka, (size_t)(dash - ka), 0) > kind_index(kb, (size_t)(dot2 - kb), 0))
        return -1;  /* one spelling per class: node kinds in enum order */
    if (!strcmp(dot2 + 1, "bw_GBps")) {
        *lo = 1e-6;
        *hi = 1e5;
        return 0;
    }
    if (!strcmp(dot2 + 1, "lat_ns")) {
        *lo = 0;
        *hi = 1e6;
        return 0;
    }
    return -1;
}

int calib_key_valid(const char *key)
{
    double lo, hi;
    return key_range(key, &lo, &hi) == 0;
}

calib *calib_new(void)
{
    calib *c = calloc(1, sizeof *c);
    if (c && !(c->source = strdup(""))) {
        free(c);
        return NULL;
    }
    return c;
}

void calib_free(calib *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        free((char *)c->ents[i].key);
        free((char *)c->ents[i].note);
    }
    for (int i = 0; i < c->ncomments; i++)
        free(c->comments[i]);
    free(c->comments);
    free(c->ents);
    free(c->source);
    free(c);
}

static int find(const calib *c, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->ents[i].key, key))
            return i;
    return -1;
}

static int put(calib *c, const char *key, double value, double sd, long line, err *e)
{
    int i = find(c, key);
    if (i < 0) {
        if (c->n == c->cap) {
            int cap = c->cap ? 2 * c->cap : 16;
            calib_entry *p = realloc(c->ents, (size_t)cap * sizeof *p);
            if (!p)
                return err_set(e, ERR_SYSTEM, "out of memory");
            c->ents = p;
            c->cap = cap;
        }
        char *k = strdup(key), *note = strdup("");
        if (!k || !note) {
            free(k);
            free(note);
            return err_set(e, ERR_SYSTEM, "out of memory");
        }
        i = c->n++;
        c->ents[i].key = k;
        c->ents[i].note = note;
    }
    c->ents[i].value = value;
    c->ents[i].sd = sd;
    c->ents[i].line = line;
    return 0;
}

int calib_set(calib *c, const char *key, double value, double sd, err *e)
{
    double lo, hi;
    if (key_range(key, &lo, &hi))
        return err_set(e, ERR_USAGE, "unknown calibration key '%s'", key);
    if (!(value >= lo && value <= hi))
        return err_set(e, ERR_USAGE, "%s = %g is outside [%g, %g]", key, value, lo, hi);
    return put(c, key, value, sd, 0, e);
}

int calib_set_note(calib *c, const char *key, const char *note, err *e)
{
    int i = find(c, key);
    if (i < 0)
        return err_set(e, ERR_USAGE, "calibration has no key '%s'", key);
    char *n = strdup(note);
    if (!n)
        return err_set(e, ERR_SYSTEM, "out of memory");
    free((char *)c->ents[i].note);
    c->ents[i].note = n;
    return 0;
}

int calib_comment(calib *c, const char *text, err *e)
{
    char **p = realloc(c->comments, (size_t)(c->ncomments + 1) * sizeof *p);
    if (!p)
        return err_set(e, ERR_SYSTEM, "out of memory");
    c->comments = p;
    if (!(p[c->ncomments] = strdup(text)))
        return err_set(e, ERR_SYSTEM, "out of memory");
    c->ncomments++;
    return 0;
}

int calib_get(const calib *c, const char *key, double *value)
{
    int i = find(c, key);
    if (i < 0)
        return -1;
    *value = c->ents[i].value;
    return 0;
}

int calib_count(const calib *c) { return c->n; }
const calib_entry *calib_at(const calib *c, int i)
{
    ASSERTF(i >= 0 && i < c->n, "i=%d n=%d", i, c->n);
    return &c->ents[i];
}
const char *calib_source(const calib *c) { return c->source; }

/* A decimal number (strtod alone also takes hex floats, "inf" and "nan"). */
static int parse_number(const char *s, double *out)
{
    if (s[strspn(s, "0123456789+-.eE")])
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int calib_parse(FILE *f, const char *name, calib **out, err *e)
{
    *out = NULL;
    calib *c = calib_new();
    if (!c)
        return err_set(e, ERR_SYSTEM, "out of memory");
    free(c->source);
    if (!(c->source = strdup(name))) {
        calib_free(c);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    char *buf = NULL;
    size_t cap = 0, len;
    long line = 0;
    int rc = 0, header = 0, st;
    while (!rc && (st = line_read(f, &buf, &cap, CALIB_LINE_MAX, &len)) != LINE_EOF) {
        line++;
        if (st != LINE_OK) {
            rc = line_fail(st, name, line, CALIB_LINE_MAX, e);
            break;
        }
        char *hash = strchr(buf, '#'), *note = NULL;
        if (hash) {
            *hash = 0;
            note = hash + 1;
            note += strspn(note, " \t");
            size_t nl = strlen(note);
            while (nl && strchr(" \t\r\n", note[nl - 1]))
                note[--nl] = 0;
        }
        char *tok[6];
        int n = 0;
        for (char *p = strtok(buf, " \t\r\n"); p; p = strtok(NULL, " \t\r\n")) {
            if (n == 5) {
                n = 6;
                break;
            }
            tok[n++] = p;
        }
        if (n == 0)
            continue;
        if (!header) {
            if (n != 2 || strcmp(tok[0], "collsim-calib") || strcmp(tok[1], "1"))
                rc = err_at(e, name, line, "expected 'collsim-calib 1' as the first line");
            header = 1;
            continue;
        }
        double lo, hi, v, sd = NAN;
        if (key_range(tok[0], &lo, &hi)) {
            rc = err_at(e, name, line, "unknown key '%s' (docs/formats.md lists them)", tok[0]);
        } else if (n != 2 && n != 4) {
            rc = err_at(e, name, line, "expected 'KEY VALUE' or 'KEY VALUE +- SD'");
        } else if (parse_number(tok[1], &v)) {
            rc = err_at(e, name, line, "bad number '%s' for %s", tok[1], tok[0]);
        } else if (!(v >= lo && v <= hi)) {
            rc = err_at(e, name, line, "%s = %g is outside [%g, %g]", tok[0], v, lo, hi);
        } else if (topo_param_integer(tok[0]) &&
                   (v != floor(v) ||
                    (topo_param_integer(tok[0]) == 2 && ((long)v & ((long)v - 1))))) {
            rc = err_at(e, name, line, "%s = %s must be %s", tok[0], tok[1],
                        topo_param_integer(tok[0]) == 2 ? "a power of two" : "an integer");
        } else if (n == 4 && (strcmp(tok[2], "+-") || parse_number(tok[3], &sd) || sd < 0)) {
            rc = err_at(e, name, line, "expected '+- SD' (a non-negative number) after the value");
        } else if (find(c, tok[0]) >= 0) {
            rc = err_at(e, name, line, "%s given twice (first on line %ld)", tok[0],
                        c->ents[find(c, tok[0])].line);
        } else if (!(rc = put(c, tok[0], v, sd, line, e)) && note && *note) {
            rc = calib_set_note(c, tok[0], note, e);
        }
    }
    free(buf);
    if (!rc && ferror(f))
        rc = err_set(e, ERR_SYSTEM, "%s: read error", name);
    if (!rc && !header)
        rc = err_at(e, name, 0, "empty file (expected 'collsim-calib 1')");
    if (rc) {
        calib_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int calib_load(const char *path, calib **out, err *e)
{
    static const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES,
                                     .what = "a calibration profile"};
    input *in;
    TRY(input_open(path, &lim, &in, e));
    return input_close(in, calib_parse(input_file(in), path, out, e), e);
}

int calib_write(const calib *c, FILE *f, err *e)
{
    fprintf(f, "collsim-calib 1\n");
    for (int i = 0; i < c->ncomments; i++)
        fprintf(f, "# %s\n", c->comments[i]);
    for (int i = 0; i < c->n; i++) {
        const calib_entry *x = &c->ents[i];
        char val[64];
        if (isnan(x->sd))
            snprintf(val, sizeof val, "%.6g", x->value);
        else
            snprintf(val, sizeof val, "%.6g +- %.2g", x->value, x->sd);
        if (x->note[0])
            fprintf(f, "%-32s %-20s # %s\n", x->key, val, x->note);
        else
            fprintf(f, "%-32s %s\n", x->key, val);
    }
    if (ferror(f))
        return err_set(e, ERR_SYSTEM, "writing the calibration failed");
    return 0;
}

void calib_apply_params(const calib *c, topo_params *p)
{
    double v;
    if (!calib_get(c, "pcie_mps_bytes", &v))
        p->pcie_mps_bytes = (int)lround(v);
    if (!calib_get(c, "pcie_mrrs_bytes", &v))
        p->pcie_mrrs_bytes = (int)lround(v);
    if (!calib_get(c, "pcie_tlp_overhead_bytes", &v))
        p->pcie_tlp_overhead_bytes = (int)lround(v);
    if (!calib_get(c, "read_tags", &v))
        p->read_tags = (int)lround(v);
    if (!calib_get(c, "ce_read_tags", &v))
        p->ce_read_tags = (int)lround(v);
    if (!calib_get(c, "read_extra_lat_ns", &v))
        p->read_extra_lat_ps = llround(v * 1e3);
    if (!calib_get(c, "arb_collapse_GBps", &v))
        p->arb_collapse_Bps = v * 1e9;
    if (!calib_get(c, "arb_collapse_read_GBps", &v))
        p->arb_collapse_read_Bps = v * 1e9;
    if (!calib_get(c, "socket_read_GBps", &v))
        p->socket_read_Bps = v * 1e9;
    if (!calib_get(c, "tlp_turn_ns", &v))
        p->tlp_turn_ps = llround(v * 1e3);
    if (!calib_get(c, "tlp_turn_cpl_ns", &v))
        p->tlp_turn_cpl_ps = llround(v * 1e3);
    if (!calib_get(c, "tlp_dllp_bytes", &v))
        p->tlp_dllp_bytes = (int)lround(v);
    if (!calib_get(c, "sm_req_bytes", &v))
        p->sm_req_bytes = (int)lround(v);
    if (!calib_get(c, "cta_store_GBps", &v))
        p->cta_store_Bps = v * 1e9;
    if (!calib_get(c, "cta_load_GBps", &v))
        p->cta_load_Bps = v * 1e9;
    if (!calib_get(c, "cta_store_host_GBps", &v))
        p->cta_store_host_Bps = v * 1e9;
    if (!calib_get(c, "cta_load_host_GBps", &v))
        p->cta_load_host_Bps = v * 1e9;
    if (!calib_get(c, "host_sm_mixed_GBps", &v))
        p->host_sm_mixed_Bps = v * 1e9;
    if (!calib_get(c, "cta_ceil_GBps", &v))
        p->cta_ceil_Bps = v * 1e9;
    if (!calib_get(c, "cta_ceil_far_GBps", &v))
        p->cta_ceil_far_Bps = v * 1e9;
    if (!calib_get(c, "l2_load_speedup", &v))
        p->l2_load_speedup = v;
    if (!calib_get(c, "trip_load_ns", &v))
        p->trip_load_ps = llround(v * 1e3);
    if (!calib_get(c, "trip_GBps", &v))
        p->trip_Bps = v * 1e9;
    if (!calib_get(c, "launch_us", &v))
        p->launch_ps = llround(v * 1e6);
    if (!calib_get(c, "graph_node_us", &v))
        p->graph_node_ps = llround(v * 1e6);
    if (!calib_get(c, "kernel_turn_us", &v))
        p->kernel_turn_ps = llround(v * 1e6);
    if (!calib_get(c, "copy_setup_us", &v))
        p->copy_setup_ps = llround(v * 1e6);
    if (!calib_get(c, "copy_host_setup_us", &v))
        p->copy_host_setup_ps = llround(v * 1e6);
    if (!calib_get(c, "copy_issue_us", &v))
        p->copy_issue_ps = llround(v * 1e6);
    if (!calib_get(c, "fence_sys_us", &v))
        p->fence_sys_ps = llround(v * 1e6);
    if (!calib_get(c, "fence_ack_us", &v))
        p->fence_ack_ps = llround(v * 1e6);
    if (!calib_get(c, "kernel_base_us", &v))
        p->kernel_base_ps = llround(v * 1e6);
    if (!calib_get(c, "hostmem_GBps", &v))
        p->hostmem_Bps = v * 1e9;
    static const char *const proto_keys[TOPO_NCCL_NPROTO] = {"ll", "ll128", "simple"};
    for (int i = 0; i < TOPO_NCCL_NPROTO; i++) {
        char key[48];
        snprintf(key, sizeof key, "nccl_start_%s_us", proto_keys[i]);
        if (!calib_get(c, key, &v))
            p->nccl_start_ps[i] = llround(v * 1e6);
        snprintf(key, sizeof key, "nccl_step_%s_us", proto_keys[i]);
        if (!calib_get(c, key, &v))
            p->nccl_step_ps[i] = llround(v * 1e6);
    }
    if (!calib_get(c, "nccl_call_us", &v))
        p->nccl_call_ps = llround(v * 1e6);
    if (!calib_get(c, "nccl_graph_call_us", &v))
        p->nccl_graph_call_ps = llround(v * 1e6);
    if (!calib_get(c, "nccl_host_us", &v))
        p->nccl_host_ps = llround(v * 1e6);
    if (!calib_get(c, "nccl_group_us", &v))
        p->nccl_group_ps = llround(v * 1e6);
    if (!calib_get(c, "nccl_p2p_op_us", &v))
        p->nccl_p2p_op_ps = llround(v * 1e6);
    if (!calib_get(c, "nccl_chan_us", &v))
        p->nccl_chan_ps = llround(v * 1e6);
}

/* Class of link id of t into buf (48 bytes). */
static const char *class_of(const topo *t, int id, char *buf)
{
    const topo_link *l = topo_link_at(t, id);
    return calib_link_class(l->kind, topo_node_at(t, l->a)->kind, topo_node_at(t, l->b)->kind,
                            buf);
}

int calib_apply(const calib *c, const topo *t, topo **out, err *e)
{
    *out = NULL;
    /* Every link key must match a class of t. */
    for (int i = 0; i < c->n; i++) {
        const char *k = c->ents[i].key;
        if (strncmp(k, "link.", 5))
            continue;
        const char *cls = k + 5, *dot = strrchr(cls, '.');
        int found = 0;
        char buf[48];
        for (int j = 0; j < topo_nlinks(t) && !found; j++)
            found = strlen(class_of(t, j, buf)) == (size_t)(dot - cls) &&
                    !strncmp(buf, cls, (size_t)(dot - cls));
        if (!found)
            return err_at(e, c->source[0] ? c->source : "calibration", c->ents[i].line,
                          "topology '%s' has no link of class %.*s", topo_name(t),
                          (int)(dot - cls), cls);
    }
    topo *n = topo_new(topo_name(t));
    if (!n)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int rc = 0;
    for (int i = 0; i < topo_nnodes(t) && !rc; i++) {
        const topo_node *x = topo_node_at(t, i);
        if (topo_add_node(n, x->name, x->kind, x->numa, e) != i)
            rc = e && e->code ? e->code : ERR_SYSTEM;
        else if (x->read_tags > 0)
            rc = topo_set_read_tags(n, i, x->read_tags, e);
    }
    for (int i = 0; i < topo_nnodes(t) && !rc; i++)
        if (topo_node_at(t, i)->pci_parent >= 0)
            rc = topo_set_parent(n, i, topo_node_at(t, i)->pci_parent, e);
    for (int i = 0; i < topo_nlinks(t) && !rc; i++) {
        topo_link l = *topo_link_at(t, i);
        char cls[48], key[80];
        double v;
        class_of(t, i, cls);
        if (l.kind == LINK_PCIE && !topo_link_bw_given(t, i))
            l.bw_Bps = 0;   /* from the link math, with the new params */
        snprintf(key, sizeof key, "link.%s.bw_GBps", cls);
        if (!calib_get(c, key, &v))
            l.bw_Bps = v * 1e9;
        snprintf(key, sizeof key, "link.%s.lat_ns", cls);
        if (!calib_get(c, key, &v))
            l.lat_ps = llround(v * 1e3);
        if (topo_add_link(n, &l, e) < 0)
            rc = e && e->code ? e->code : ERR_SYSTEM;
    }
    for (int i = 0; i < topo_p2p_count(t) && !rc; i++) { /* NVML's P2P statuses */
        int a, b;
        topo_p2p s;
        topo_p2p_at(t, i, &a, &b, &s);
        rc = topo_set_p2p(n, a, b, s, e);
    }
    if (!rc) {
        *topo_params_mut(n) = *topo_params_get(t);
        calib_apply_params(c, topo_params_mut(n));
        rc = topo_finish(n, c->source[0] ? c->source : "calibration", e);
    }
    if (rc) {
        topo_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

int calib_load_topo(const char *name_or_path, const char *calib_path, topo **out, err *e)
{
    *out = NULL;
    topo *t;
    TRY(topo_load(name_or_path, &t, e));
    if (!calib_path) {
        *out = t;
        return 0;
    }
    calib *c;
    int rc = calib_load(calib_path, &c, e);
    if (!rc) {
        rc = calib_apply(c, t, out, e);
        calib_free(c);
    }
    topo_free(t);
    return rc;
}

int calib_writer(FILE *f, void *c, err *e) { return calib_write(c, f, e); }
