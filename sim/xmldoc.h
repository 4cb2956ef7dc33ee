/* An XML file read whole, within sim/input.h's limits, and parsed by
 * libxml2, which is loaded at run time (dlopen of its soname) only when such
 * a file is read, so that every other command starts without it and its
 * dependencies. Its elements are libxml2's own (xmlNode: type, name,
 * children, next); NCCL's topology dump (models/topo/topo_xml.c) and graph file
 * (models/nccl/nccl_graphfile.c) read through it. */
#ifndef SIM_XMLDOC_H
#define SIM_XMLDOC_H

#include <stddef.h>

#include <libxml/tree.h>

#include "sim/err.h"

typedef struct xmldoc xmldoc;

/* Reads and parses path (what names the kind of file in messages: "an NCCL
 * graph file"). Malformed XML: an error at file:line; libxml2 not loadable:
 * ERR_SYSTEM naming it. The caller frees *out with xmldoc_free. */
int xmldoc_read(const char *path, const char *what, xmldoc **out, err *e);
void xmldoc_free(xmldoc *d);      /* NULL ok */

xmlNode *xmldoc_root(const xmldoc *d);          /* NULL if the document has none */
long xmldoc_line(const xmldoc *d, const xmlNode *n);   /* xmlGetLineNo */
/* Attribute name of n into buf (truncated to size); 1 if present, else 0. */
int xmldoc_attr(const xmldoc *d, const xmlNode *n, const char *name, char *buf,
                     size_t size);

#endif
