/* The XML reader the importers share (xmldoc.h). The whole file is read into
 * one buffer first, so input.h's limit and its file:line for a cut-off read
 * hold for XML as for every text format; the parser context lives only for
 * the parse (the document keeps its own reference to the names it uses). */
#include "sim/xmldoc.h"

#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "sim/input.h"

int xmldoc_read(const char *path, const char *what, xmlDocPtr *out, err *e)
{
    *out = NULL;
    const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES, .what = what};
    input *in;
    TRY(input_open(path, &lim, &in, e));
    char *buf = malloc(INPUT_TEXT_MAX_BYTES);
    size_t len = buf ? fread(buf, 1, INPUT_TEXT_MAX_BYTES, input_file(in)) : 0;
    int bad = ferror(input_file(in)) || fgetc(input_file(in)) != EOF;
    int rc = input_close(in, bad ? err_at(e, path, 0, "read error") : 0, e);
    if (!buf)
        return err_set(e, ERR_SYSTEM, "out of memory");
    if (rc) {
        free(buf);
        return rc;
    }
    xmlInitParser();
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        free(buf);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, (int)len, path, NULL,
                                      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    free(buf);
    if (!doc) {
        xmlErrorPtr er = xmlCtxtGetLastError(ctxt);
        char msg[256];
        snprintf(msg, sizeof msg, "%s", er && er->message ? er->message : "malformed XML");
        size_t n = strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
            msg[--n] = 0;
        rc = err_at(e, path, er ? er->line : 0, "malformed XML: %s", msg);
    }
    xmlFreeParserCtxt(ctxt);
    *out = doc;
    return rc;
}
