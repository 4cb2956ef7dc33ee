/* NCCL_GRAPH_FILE read with libxml2 the way NCCL's own loader reads it
 * (xml.cc ncclTopoXmlGraphLoadGraphs: <graphs version> must be 1;
 * search.cc ncclTopoGetGraphFromXmlSub: id, crossnic, pattern, nchannels,
 * speedintra, speedinter, typeintra, typeinter, samechannels required,
 * latencyinter optional (0); ncclTopoGetChannelFromXml: <gpu dev> in hex,
 * rank= when given, else the GPU of that CUDA device; <net> skipped on one
 * node). Where NCCL would go on with a graph that cannot be right (a ring
 * missing a rank, fewer <channel>s than nchannels) the file is refused
 * with its line. Elements other than <graph>, <channel>, <gpu>, <net> are
 * ignored, as NCCL's loader ignores them. */
#include "models/nccl/nccl_graphfile.h"

#include "sim/xmldoc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/tree.h>

typedef struct gctx {
    const char *file;
    int nranks;
    err *e;
} gctx;

static int is_el(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

/* The attribute's text into buf; 0 if absent (an error when required). */
static int get(gctx *c, xmlNodePtr n, const char *name, int required, char *buf, size_t size,
               int *rc)
{
    xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
    if (!v) {
        if (required && !*rc)
            *rc = err_at(c->e, c->file, xmlGetLineNo(n), "<%s> lacks attribute %s (NCCL: "
                         "\"Attribute %s of node %s not found\")", n->name, name, name, n->name);
        return 0;
    }
    snprintf(buf, size, "%s", (const char *)v);
    xmlFree(v);
    return 1;
}

/* strtol(s, NULL, base) as NCCL reads it, but the whole text must be a number. */
static int get_long(gctx *c, xmlNodePtr n, const char *name, int base, long lo, long hi,
                    long *out, int *rc)
{
    char buf[64];
    if (!get(c, n, name, 1, buf, sizeof buf, rc))
        return -1;
    errno = 0;
    char *end;
    long v = strtol(buf, &end, base);
    if (end == buf || *end || errno || v < lo || v > hi) {
        if (!*rc)
            *rc = err_at(c->e, c->file, xmlGetLineNo(n), "<%s %s=\"%s\">: not a number in "
                         "%ld..%ld", n->name, name, buf, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int get_float(gctx *c, xmlNodePtr n, const char *name, int required, float *out, int *rc)
{
    char buf[64];
    *out = 0;
    if (!get(c, n, name, required, buf, sizeof buf, rc))
        return -1;
    char *end;
    float v = strtof(buf, &end);
    if (end == buf || *end || !(v >= 0) || v > 1e6f) {
        if (!*rc)
            *rc = err_at(c->e, c->file, xmlGetLineNo(n), "<%s %s=\"%s\">: not a bandwidth or "
                         "latency >= 0", n->name, name, buf);
        return -1;
    }
    *out = v;
    return 0;
}

/* search.cc kvDictLinkType. */
static int get_type(gctx *c, xmlNodePtr n, const char *name, int *out, int *rc)
{
    static const struct { const char *s; int v; } types[] = {
        {"LOC", 0}, {"NVL", 1}, {"NVB", 2}, {"PIX", 4}, {"PXB", 5}, {"P2C", 6}, {"PXN", 7},
        {"PHB", 8}, {"SYS", 9}};
    char buf[32];
    if (!get(c, n, name, 1, buf, sizeof buf, rc))
        return -1;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(buf, types[i].s)) {
            *out = types[i].v;
            return 0;
        }
    if (!*rc)
        *rc = err_at(c->e, c->file, xmlGetLineNo(n), "<%s %s=\"%s\">: not a path type (LOC, "
                     "NVL, NVB, PIX, PXB, P2C, PXN, PHB, SYS)", n->name, name, buf);
    return -1;
}

static int read_channel(gctx *c, xmlNodePtr ch, int pattern, int *order, int first, int *rc)
{
    int k = 0, seen[NCCL_TUNE_MAX_RANKS] = {0};
    for (xmlNodePtr s = ch->children; s && !*rc; s = s->next) {
        if (!is_el(s, "gpu"))
            continue;   /* <net>: one node, no NIC; text */
        long dev, rank = -1;
        if (get_long(c, s, "dev", 16, 0, 0xffffffffL, &dev, rc))
            break;
        char buf[32];
        if (get(c, s, "rank", 0, buf, sizeof buf, rc) &&
            get_long(c, s, "rank", 0, 0, 1L << 20, &rank, rc))
            break;
        if (rank < 0)
            rank = dev;   /* one system: NCCL_TOPO_ID(0, dev) is the CUDA device */
        if (rank >= c->nranks) {
            *rc = err_at(c->e, c->file, xmlGetLineNo(s), "<gpu dev=\"%lx\">: rank %ld is not in "
                         "the communicator of %d GPUs (NCCL: \"dev %ld not found\")", dev, rank,
                         c->nranks, dev);
            break;
        }
        if (seen[rank]++ && pattern != 5) {
            *rc = err_at(c->e, c->file, xmlGetLineNo(s), "rank %ld twice in one channel", rank);
            break;
        }
        if (first && k < NCCL_TUNE_MAX_RANKS)
            order[k] = (int)rank;
        k++;
    }
    /* NVLS channels (pattern 5) name their head only; the others every rank. */
    if (!*rc && pattern != 5 && k != c->nranks)
        *rc = err_at(c->e, c->file, xmlGetLineNo(ch), "<channel> names %d GPUs; the "
                     "communicator has %d", k, c->nranks);
    if (!*rc && k == 0)
        *rc = err_at(c->e, c->file, xmlGetLineNo(ch), "<channel> names no GPU");
    return *rc;
}

static int read_graph(gctx *c, xmlNodePtr n, nccl_graphfile_graph *g)
{
    int rc = 0;
    long v;
    memset(g, 0, sizeof *g);
    g->line = xmlGetLineNo(n);
    if (!get_long(c, n, "id", 0, 0, 64, &v, &rc))
        g->id = (int)v;
    if (!get_long(c, n, "crossnic", 0, 0, 2, &v, &rc))
        g->crossnic = (int)v;
    if (!get_long(c, n, "pattern", 0, 1, 6, &v, &rc))
        g->pattern = (int)v;
    if (!get_long(c, n, "nchannels", 0, 0, NCCL_TUNE_MAX_CHANNELS, &v, &rc))
        g->nchannels = (int)v;
    get_float(c, n, "speedintra", 1, &g->speed_intra_GBps, &rc);
    get_float(c, n, "speedinter", 1, &g->speed_inter_GBps, &rc);
    get_float(c, n, "latencyinter", 0, &g->latency_inter_us, &rc);
    get_type(c, n, "typeintra", &g->type_intra, &rc);
    get_type(c, n, "typeinter", &g->type_inter, &rc);
    if (!get_long(c, n, "samechannels", 0, 0, 1, &v, &rc))
        g->same_channels = (int)v;
    int nch = 0;
    for (xmlNodePtr s = n->children; s && !rc; s = s->next)
        if (is_el(s, "channel"))
            rc = read_channel(c, s, g->pattern, g->order, nch++ == 0, &rc);
    if (!rc && nch != g->nchannels)
        rc = err_at(c->e, c->file, g->line, "<graph id=\"%d\"> has nchannels=\"%d\" but %d "
                    "<channel> elements", g->id, g->nchannels, nch);
    return rc;
}

int nccl_graphfile_read(const char *path, int nranks, nccl_graphfile *out, err *e)
{
    memset(out, 0, sizeof *out);
    xmlDocPtr doc;
    TRY(xmldoc_read(path, "an NCCL graph file (NCCL_GRAPH_FILE)", &doc, e));
    int rc = 0;
    gctx c = {path, nranks, e};
    xmlNodePtr root = xmlDocGetRootElement(doc);
    long version;
    if (!root || !is_el(root, "graphs"))
        rc = err_at(e, path, root ? xmlGetLineNo(root) : 0, "not an NCCL graph file (a "
                    "<graphs version=\"1\"> element, as NCCL_GRAPH_DUMP_FILE writes)");
    else if (!get_long(&c, root, "version", 0, 0, 1L << 20, &version, &rc) && version != 1)
        rc = err_at(e, path, xmlGetLineNo(root), "graph file version %ld, NCCL needs 1 (\"XML "
                    "Graph has wrong version\")", version);
    for (xmlNodePtr s = root && !rc ? root->children : NULL; s && !rc; s = s->next) {
        if (!is_el(s, "graph"))
            continue;
        if (out->ngraphs == NCCL_GRAPHFILE_MAX_GRAPHS) {
            rc = err_at(e, path, xmlGetLineNo(s), "more than %d <graph> elements",
                        NCCL_GRAPHFILE_MAX_GRAPHS);
            break;
        }
        rc = read_graph(&c, s, &out->g[out->ngraphs++]);
    }
    xmlFreeDoc(doc);
    return rc;
}

const nccl_graphfile_graph *nccl_graphfile_find(const nccl_graphfile *f, int id)
{
    /* ncclTopoGetGraphFromXml: every matching <graph> is applied in turn, so the last wins. */
    const nccl_graphfile_graph *g = NULL;
    for (int i = 0; i < f->ngraphs; i++)
        if (f->g[i].id == id)
            g = &f->g[i];
    return g && g->nchannels > 0 ? g : NULL;
}
