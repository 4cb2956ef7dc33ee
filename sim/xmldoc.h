/* An XML input file read whole: one bounded read through sim/input.h, then
 * libxml2 with the network and its own printing off, so a file parses the
 * same for every importer and a parse error reads "file:line: malformed XML:
 * libxml2's message". */
#ifndef SIM_XMLDOC_H
#define SIM_XMLDOC_H

#include <libxml/tree.h>

#include "sim/err.h"

/* Parse path ("-": stdin), at most INPUT_TEXT_MAX_BYTES; what names the format
 * in the limit's message ("an NCCL graph file"). *out is the caller's
 * (xmlFreeDoc). ERR_INPUT with file:line; ERR_SYSTEM for out of memory. */
int xmldoc_read(const char *path, const char *what, xmlDocPtr *out, err *e);

#endif
