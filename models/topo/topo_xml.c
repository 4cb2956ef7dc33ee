/* Import of NCCL's topology dump (NCCL_TOPO_DUMP_FILE) with libxml2.
 * <system> holds <cpu numaid> elements; each becomes a socket with its host
 * memory, and each top-level <pci> under it gets its own root port. A <pci>
 * of bridge class 0x0604xx becomes a PCIe switch whose PCI parent is the
 * enclosing switch or root port; a <pci> holding <gpu dev> becomes that GPU
 * (GPU index = order of dev). Other devices (NICs, NVMe) are skipped. Each
 * element's link_speed/link_width describe its upstream link. <nvlink>
 * entries to NVSwitches (tclass 0x068000) join the GPU to one non-blocking
 * NVSwitch node with the summed lane count, as NCCL itself merges them;
 * entries to another GPU become a direct NVLink. Values the XML does not
 * carry (latencies, socket and memory links) are the documented defaults. */
#include "models/topo/topo.h"
#include "sim/xmldoc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/tree.h>


typedef struct xgpu {
    int dev, sm, parent, gen, width;
    long line;
    char busid[64];
    xmlNodePtr el; /* the <gpu> element (its <nvlink> children) */
} xgpu;

typedef struct xctx {
    const char *file;
    topo *t;
    err *e;
    int nrp, nsw;
    int cpus[256];
    int ncpu;
    xgpu *gpus;
    int ngpus, cap_gpus;
    int speed_kept, width_kept, width0;  /* PCIe links: the XML's gaps (assumptions) */
    int nvlinks;
} xctx;

static int is_el(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

/* Copy attribute name of n into buf; 1 if present. */
static int attr(xmlNodePtr n, const char *name, char *buf, size_t size)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    if (!v)
        return 0;
    snprintf(buf, size, "%s", (const char *)v);
    xmlFree(v);
    return 1;
}

static int attr_long(xctx *c, xmlNodePtr n, const char *name, int base, long lo, long hi,
                     long *out)
{
    char buf[64];
    if (!attr(n, name, buf, sizeof buf))
        return err_at(c->e, c->file, xmlGetLineNo(n), "<%s> lacks attribute %s", n->name, name);
    errno = 0;
    char *end;
    long v = strtol(buf, &end, base);
    if (end == buf || *end || errno || v < lo || v > hi)
        return err_at(c->e, c->file, xmlGetLineNo(n), "<%s %s=\"%s\">: not a number in "
                      "%ld..%ld", n->name, name, buf, lo, hi);
    *out = v;
    return 0;
}

/* link_speed "32.0 GT/s PCIe" -> gen 5 and link_width; missing, empty or
 * "Unknown..." values keep the inherited ones; link_width "0" is x16. */
static int pci_link(xctx *c, xmlNodePtr n, int *gen, int *width)
{
    static const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    char buf[64];
    if (attr(n, "link_speed", buf, sizeof buf) && buf[0] && strncmp(buf, "Unknown", 7)) {
        char *end;
        double v = strtod(buf, &end);
        int g = 0;
        for (int i = 1; i <= 6 && end != buf; i++)
            if (fabs(v - gts[i]) < 0.05)
                g = i;
        while (*end == ' ')
            end++;
        if (!g || (*end && strncmp(end, "GT/s", 4)))
            return err_at(c->e, c->file, xmlGetLineNo(n), "link_speed \"%s\" is not a PCIe "
                          "rate (2.5, 5.0, 8.0, 16.0, 32.0 or 64.0 GT/s)", buf);
        *gen = g;
    } else {
        c->speed_kept++;
    }
    if (attr(n, "link_width", buf, sizeof buf) && !strcmp(buf, "0")) {
        *width = 16;   /* NCCL reads a width of 0 (sysfs gave none) as x16 (graph/topo.cc) */
        c->width0++;
    } else if (!attr(n, "link_width", buf, sizeof buf) || !buf[0]) {
        c->width_kept++;
    } else {
        char *end;
        long w = strtol(buf, &end, 10);
        if (*end || (w != 1 && w != 2 && w != 4 && w != 8 && w != 12 && w != 16 && w != 32))
            return err_at(c->e, c->file, xmlGetLineNo(n), "link_width \"%s\" is not a PCIe "
                          "width", buf);
        *width = (int)w;
    }
    return 0;
}

static int add_pci_link(xctx *c, int child, int parent, int gen, int width)
{
    topo_link l = {.a = child, .b = parent, .kind = LINK_PCIE, .pcie_gen = gen,
                   .pcie_width = width,
                   .lat_ps = topo_default_pci_lat_ps(topo_node_at(c->t, child)->kind,
                                                     topo_node_at(c->t, parent)->kind)};
    if (topo_add_link(c->t, &l, c->e) < 0)
        return ERR_INPUT;
    return 0;
}

static int add_node(xctx *c, const char *name, topo_kind k, int numa, int parent)
{
    int id = topo_add_node(c->t, name, k, numa, c->e);
    if (id < 0 || (parent >= 0 && topo_set_parent(c->t, id, parent, c->e)))
        return -1;
    return id;
}

static int walk_pci(xctx *c, xmlNodePtr n, int parent, int numa, int gen, int width)
{
    char buf[64], name[32];
    long cls = 0;
    topo_set_line(c->t, xmlGetLineNo(n));
    TRY(pci_link(c, n, &gen, &width));
    xmlNodePtr gpu = NULL;
    for (xmlNodePtr k = n->children; k; k = k->next)
        if (is_el(k, "gpu"))
            gpu = k;
    if (gpu) {
        long dev, sm = 0;
        TRY(attr_long(c, gpu, "dev", 10, 0, 4095, &dev));
        if (attr(gpu, "sm", buf, sizeof buf))
            TRY(attr_long(c, gpu, "sm", 10, 0, 1000, &sm));
        if (c->ngpus == c->cap_gpus) {
            int nc = c->cap_gpus ? 2 * c->cap_gpus : 16;
            xgpu *g = realloc(c->gpus, sizeof *g * (size_t)nc);
            if (!g)
                return err_set(c->e, ERR_SYSTEM, "out of memory");
            c->gpus = g;
            c->cap_gpus = nc;
        }
        xgpu *g = &c->gpus[c->ngpus++];
        *g = (xgpu){(int)dev, (int)sm, parent, gen, width, xmlGetLineNo(gpu), "", gpu};
        topo_params *tp = topo_params_mut(c->t);
        if (sm > 0 && (tp->gpu_sm == 0 || sm < tp->gpu_sm))
            tp->gpu_sm = (int)sm; /* NCCL uses the lowest (ncclTopoGetCompCap) */
        attr(n, "busid", g->busid, sizeof g->busid);
        return 0;
    }
    if (attr(n, "class", buf, sizeof buf))
        TRY(attr_long(c, n, "class", 16, 0, 0xffffff, &cls));
    if ((cls >> 8) != 0x0604)
        return 0; /* a NIC, NVMe drive or other endpoint: not modelled */
    snprintf(name, sizeof name, "sw%d", c->nsw++);
    int sw = add_node(c, name, TOPO_SWITCH, numa, parent);
    if (sw < 0 || add_pci_link(c, sw, parent, gen, width))
        return c->e ? c->e->code : ERR_INPUT;
    for (xmlNodePtr k = n->children; k; k = k->next)
        if (is_el(k, "pci"))
            TRY(walk_pci(c, k, sw, numa, gen, width));
    return 0;
}

/* The CPU family as NCCL reads it from <cpu arch vendor familyid modelid>
 * (src/graph/topo.cc: Intel models by familyid 6 and modelid thresholds). */
static void xml_cpu_kind(xctx *c, xmlNodePtr n)
{
    char arch[32] = "", vendor[32] = "", buf[32];
    long fam = 0, model = 0;
    attr(n, "arch", arch, sizeof arch);
    attr(n, "vendor", vendor, sizeof vendor);
    if (attr(n, "familyid", buf, sizeof buf))
        fam = strtol(buf, NULL, 0);
    if (attr(n, "modelid", buf, sizeof buf))
        model = strtol(buf, NULL, 0);
    topo_cpu k = CPU_UNKNOWN;
    if (!strcmp(arch, "arm64"))
        k = CPU_ARM;
    else if (!strcmp(arch, "ppc64"))
        k = CPU_POWER;
    else if (!strcmp(vendor, "AuthenticAMD"))
        k = CPU_AMD;
    else if (!strcmp(vendor, "GenuineIntel"))
        k = fam == 6 && model >= 0xCF ? CPU_INTEL_ERP : fam == 6 && model >= 0x8F ? CPU_INTEL_SRP
          : fam == 6 && model >= 0x55 ? CPU_INTEL_SKL : CPU_INTEL_BDW;
    else if (!strcmp(vendor, "CentaurHauls") || strstr(vendor, "Shanghai"))
        k = fam == 7 && model == 0x5B ? CPU_ZHAOXIN_YONGFENG : CPU_ZHAOXIN;
    if (k != CPU_UNKNOWN)
        topo_params_mut(c->t)->cpu = k;
}

static int walk_cpu(xctx *c, xmlNodePtr n)
{
    char name[32];
    long numa;
    TRY(attr_long(c, n, "numaid", 10, 0, 65535, &numa));
    topo_set_line(c->t, xmlGetLineNo(n));
    snprintf(name, sizeof name, "cpu%ld", numa);
    if (topo_find(c->t, name) >= 0)
        return err_at(c->e, c->file, xmlGetLineNo(n), "second <cpu numaid=\"%ld\"> (dumps of "
                      "several hosts are not supported)", numa);
    if (c->ncpu == (int)(sizeof c->cpus / sizeof *c->cpus))
        return err_at(c->e, c->file, xmlGetLineNo(n), "more than 256 <cpu> elements");
    int cpu = add_node(c, name, TOPO_CPU, (int)numa, -1);
    snprintf(name, sizeof name, "mem%ld", numa);
    int mem = add_node(c, name, TOPO_HOSTMEM, (int)numa, -1);
    if (cpu < 0 || mem < 0)
        return c->e ? c->e->code : ERR_INPUT;
    c->cpus[c->ncpu++] = cpu;
    xml_cpu_kind(c, n);
    topo_link l = {.a = cpu, .b = mem, .kind = LINK_MEM};
    topo_default_link(LINK_MEM, 0, &l.bw_Bps, &l.lat_ps);
    if (topo_add_link(c->t, &l, c->e) < 0)
        return ERR_INPUT;
    for (xmlNodePtr k = n->children; k; k = k->next) {
        if (!is_el(k, "pci"))
            continue;
        topo_set_line(c->t, xmlGetLineNo(k));
        snprintf(name, sizeof name, "rp%d", c->nrp++);
        int rp = add_node(c, name, TOPO_ROOT, (int)numa, cpu);
        if (rp < 0)
            return c->e ? c->e->code : ERR_INPUT;
        topo_link r = {.a = rp, .b = cpu, .kind = LINK_FABRIC};
        topo_default_link(LINK_FABRIC, 0, &r.bw_Bps, &r.lat_ps);
        if (topo_add_link(c->t, &r, c->e) < 0)
            return ERR_INPUT;
        TRY(walk_pci(c, k, rp, (int)numa, 5, 16));
    }
    return 0;
}

static int cmp_dev(const void *a, const void *b)
{
    return ((const xgpu *)a)->dev - ((const xgpu *)b)->dev;
}

static int add_gpus(xctx *c)
{
    char name[32];
    qsort(c->gpus, (size_t)c->ngpus, sizeof *c->gpus, cmp_dev);
    for (int i = 0; i < c->ngpus; i++) {
        xgpu *g = &c->gpus[i];
        if (i && g->dev == c->gpus[i - 1].dev)
            return err_at(c->e, c->file, g->line, "<gpu dev=\"%d\"> appears twice (first at "
                          "line %ld)", g->dev, c->gpus[i - 1].line);
        topo_set_line(c->t, g->line);
        snprintf(name, sizeof name, "gpu%d", i);
        int id = add_node(c, name, TOPO_GPU, topo_node_at(c->t, g->parent)->numa, g->parent);
        if (id < 0 || add_pci_link(c, id, g->parent, g->gen, g->width))
            return c->e ? c->e->code : ERR_INPUT;
    }
    return 0;
}

static int add_nvlinks(xctx *c)
{
    char target[64], buf[32];
    int nvs = -1;
    for (int i = 0; i < c->ngpus; i++) {
        xgpu *g = &c->gpus[i];
        int self = topo_gpu_node(c->t, i), to_switch = 0;
        for (xmlNodePtr k = g->el->children; k; k = k->next) {
            if (!is_el(k, "nvlink"))
                continue;
            long count, tclass = 0;
            TRY(attr_long(c, k, "count", 10, 1, 1024, &count));
            if (!attr(k, "target", target, sizeof target))
                return err_at(c->e, c->file, xmlGetLineNo(k), "<nvlink> lacks attribute target");
            if (attr(k, "tclass", buf, sizeof buf))
                TRY(attr_long(c, k, "tclass", 16, 0, 0xffffff, &tclass));
            if (tclass == 0x068000) {
                to_switch += (int)count;
                continue;
            }
            int peer = -1;
            for (int j = 0; j < c->ngpus; j++)
                if (!strcasecmp(c->gpus[j].busid, target))
                    peer = j;
            if ((tclass >> 16) != 0x03)
                continue; /* NVLink to a CPU (POWER) or unknown class: not modelled */
            if (peer < 0)
                return err_at(c->e, c->file, xmlGetLineNo(k), "<nvlink target=\"%s\">: no GPU "
                              "with that busid in the file", target);
            if (peer < i)
                continue; /* the pair was added from the peer's side */
            topo_set_line(c->t, xmlGetLineNo(k));
            topo_link l = {.a = self, .b = topo_gpu_node(c->t, peer), .kind = LINK_NVLINK,
                           .nvlinks = (int)count};
            topo_default_link(LINK_NVLINK, g->sm, &l.bw_Bps, &l.lat_ps);
            l.bw_Bps *= (double)count;
            c->nvlinks++;
            if (topo_add_link(c->t, &l, c->e) < 0)
                return ERR_INPUT;
        }
        if (to_switch) {
            topo_set_line(c->t, g->line);
            if (nvs < 0 && (nvs = add_node(c, "nvs0", TOPO_NVSWITCH, -1, -1)) < 0)
                return c->e ? c->e->code : ERR_INPUT;
            topo_link l = {.a = self, .b = nvs, .kind = LINK_NVLINK, .nvlinks = to_switch};
            topo_default_link(LINK_NVLINK, g->sm, &l.bw_Bps, &l.lat_ps);
            l.bw_Bps *= (double)to_switch;
            c->nvlinks++;
            if (topo_add_link(c->t, &l, c->e) < 0)
                return ERR_INPUT;
        }
    }
    return 0;
}

static int build(xctx *c, xmlNodePtr root)
{
    if (!root || !is_el(root, "system"))
        return err_at(c->e, c->file, root ? xmlGetLineNo(root) : 0, "not an NCCL topology "
                      "dump: the root element must be <system>");
    for (xmlNodePtr k = root->children; k; k = k->next)
        if (is_el(k, "cpu"))
            TRY(walk_cpu(c, k));
    if (c->ngpus == 0)
        return err_at(c->e, c->file, 0, "no <gpu> elements");
    TRY(add_gpus(c));
    TRY(add_nvlinks(c));
    /* Sockets: a full mesh of socket links, as NCCL joins CPUs. */
    topo_set_line(c->t, xmlGetLineNo(root));
    for (int i = 0; i < c->ncpu; i++)
        for (int j = i + 1; j < c->ncpu; j++) {
            topo_link l = {.a = c->cpus[i], .b = c->cpus[j], .kind = LINK_SOCKET};
            topo_default_link(LINK_SOCKET, 0, &l.bw_Bps, &l.lat_ps);
            if (topo_add_link(c->t, &l, c->e) < 0)
                return ERR_INPUT;
        }
    return 0;
}

/* The file's base name without extension, as a topology name. */
static void base_name(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    snprintf(out, n, "%s", b ? b + 1 : path);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = 0;
    for (char *s = out; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-", *s))
            *s = '_';
    if (!out[0] || !strcmp(out, "-"))  /* stdin */
        snprintf(out, n, "imported");
}

/* What the XML left to the importer, for "# assumed:" lines. */
static int assumptions(xctx *c)
{
    double bw;
    int64_t lat;
    if (c->speed_kept)
        TRY(topo_assume(c->t, c->e, "%d PCIe link%s without a link_speed: the parent's "
                        "(Gen5 below a root port)", c->speed_kept,
                        c->speed_kept == 1 ? "" : "s"));
    if (c->width_kept)
        TRY(topo_assume(c->t, c->e, "%d PCIe link%s without a link_width: the parent's (x16 "
                        "below a root port)", c->width_kept, c->width_kept == 1 ? "" : "s"));
    if (c->width0)
        TRY(topo_assume(c->t, c->e, "%d PCIe link%s of link_width 0: x16, as NCCL reads it",
                        c->width0, c->width0 == 1 ? "" : "s"));
    topo_default_link(LINK_SOCKET, 0, &bw, &lat);
    TRY(topo_assume(c->t, c->e, "links the XML does not describe take collsim's defaults "
                    "(docs/model.md): socket link %.1f GB/s, %.0f ns", bw / 1e9,
                    (double)lat / 1e3));
    topo_default_link(LINK_MEM, 0, &bw, &lat);
    TRY(topo_assume(c->t, c->e, "host memory %.1f GB/s per socket; a root port's fabric and "
                    "each PCIe hop's latency by the kinds it joins", bw / 1e9));
    TRY(topo_assume(c->t, c->e, "the param lines but cpu: collsim's defaults (the XML has "
                    "none; collsim calibrate fits them to measurements)"));
    if (c->nvlinks)
        TRY(topo_assume(c->t, c->e, "NVLink lanes at NCCL's bandwidth per lane for each GPU's "
                        "SM version (topo_nvlink_lane_GBps)"));
    return 0;
}

int topo_import_xml(const char *path, topo **out, err *e)
{
    *out = NULL;
    xmlDocPtr doc;
    TRY(xmldoc_read(path, "an NCCL topology XML dump", &doc, e));
    char name[64];
    base_name(path, name, sizeof name);
    xctx c = {.file = path, .t = topo_new(path), .e = e};
    int rc = c.t && !topo_set_name(c.t, name) ? build(&c, xmlDocGetRootElement(doc))
                                               : err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc)
        rc = assumptions(&c);
    if (!rc)
        rc = topo_finish(c.t, path, e);
    free(c.gpus);
    xmlFreeDoc(doc);
    if (rc) {
        topo_free(c.t);
        return rc;
    }
    *out = c.t;
    return 0;
}
