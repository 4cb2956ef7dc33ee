/* XML documents through libxml2 loaded with dlopen (xmldoc.h). Each
 * document holds the library's handle and the few entry points it needs,
 * resolved by name; the handle is released with the document (dlopen counts
 * references, so a second document costs only the look-ups). The messages
 * are the ones both readers gave when they linked libxml2 directly. */
#include "sim/xmldoc.h"

#include "sim/input.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#ifndef COLLSIM_XML2_LIB
#define COLLSIM_XML2_LIB "libxml2.so.2"
#endif

typedef struct xml_fns {
    void (*init_parser)(void);
    xmlParserCtxtPtr (*new_ctxt)(void);
    void (*free_ctxt)(xmlParserCtxtPtr);
    xmlDocPtr (*read_memory)(xmlParserCtxtPtr, const char *, int, const char *, const char *,
                             int);
    xmlErrorPtr (*last_error)(void *);
    xmlNodePtr (*root)(const xmlDoc *);
    void (*free_doc)(xmlDocPtr);
    long (*line)(const xmlNode *);
    xmlChar *(*get_prop)(const xmlNode *, const xmlChar *);
    xmlFreeFunc *free_fn;   /* the library's xmlFree (a variable holding the function) */
} xml_fns;

struct xmldoc {
    void *lib;
    xml_fns f;
    xmlParserCtxtPtr ctxt;
    xmlDocPtr doc;
};

static int load(xmldoc *d, err *e)
{
    static const struct { const char *name; size_t off; } syms[] = {
        {"xmlInitParser", offsetof(xml_fns, init_parser)},
        {"xmlNewParserCtxt", offsetof(xml_fns, new_ctxt)},
        {"xmlFreeParserCtxt", offsetof(xml_fns, free_ctxt)},
        {"xmlCtxtReadMemory", offsetof(xml_fns, read_memory)},
        {"xmlCtxtGetLastError", offsetof(xml_fns, last_error)},
        {"xmlDocGetRootElement", offsetof(xml_fns, root)},
        {"xmlFreeDoc", offsetof(xml_fns, free_doc)},
        {"xmlGetLineNo", offsetof(xml_fns, line)},
        {"xmlGetProp", offsetof(xml_fns, get_prop)},
        {"xmlFree", offsetof(xml_fns, free_fn)},
    };
    if (!(d->lib = dlopen(COLLSIM_XML2_LIB, RTLD_NOW | RTLD_LOCAL))) {
        const char *why = dlerror();
        return err_set(e, ERR_SYSTEM, "libxml2 (%s), which reads XML files, could not be "
                       "loaded: %s", COLLSIM_XML2_LIB, why ? why : "not found");
    }
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(d->lib, syms[i].name);
        if (!p)
            return err_set(e, ERR_SYSTEM, "libxml2 (%s) lacks %s", COLLSIM_XML2_LIB,
                           syms[i].name);
        /* POSIX dlsym: object and function pointers convert both ways. */
        memcpy((char *)&d->f + syms[i].off, &p, sizeof p);
    }
    return 0;
}

int xmldoc_read(const char *path, const char *what, xmldoc **out, err *e)
{
    *out = NULL;
    const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES, .what = what};
    input *in;
    TRY(input_open(path, &lim, &in, e));
    char *buf = malloc(INPUT_TEXT_MAX_BYTES);
    size_t len = buf ? fread(buf, 1, INPUT_TEXT_MAX_BYTES, input_file(in)) : 0;
    int bad = ferror(input_file(in)) || fgetc(input_file(in)) != EOF;
    int rc = input_close(in, bad ? err_at(e, path, 0, "read error") : 0, e);
    xmldoc *d = buf && !rc ? calloc(1, sizeof *d) : NULL;
    if (!rc && !d)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc)
        rc = load(d, e);
    if (!rc) {
        d->f.init_parser();
        if (!(d->ctxt = d->f.new_ctxt()))
            rc = err_set(e, ERR_SYSTEM, "out of memory");
    }
    if (!rc) {
        d->doc = d->f.read_memory(d->ctxt, buf, (int)len, path, NULL,
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        if (!d->doc) {
            xmlErrorPtr er = d->f.last_error(d->ctxt);
            char msg[256];
            snprintf(msg, sizeof msg, "%s", er && er->message ? er->message : "malformed XML");
            size_t n = strlen(msg);
            while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
                msg[--n] = 0;
            rc = err_at(e, path, er ? er->line : 0, "malformed XML: %s", msg);
        }
    }
    free(buf);
    if (rc) {
        xmldoc_free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void xmldoc_free(xmldoc *d)
{
    if (!d)
        return;
    if (d->doc)
        d->f.free_doc(d->doc);
    if (d->ctxt)
        d->f.free_ctxt(d->ctxt);
    if (d->lib)
        dlclose(d->lib);
    free(d);
}

xmlNode *xmldoc_root(const xmldoc *d) { return d->f.root(d->doc); }

long xmldoc_line(const xmldoc *d, const xmlNode *n) { return d->f.line(n); }

int xmldoc_attr(const xmldoc *d, const xmlNode *n, const char *name, char *buf,
                     size_t size)
{
    xmlChar *v = d->f.get_prop(n, (const xmlChar *)name);
    if (!v)
        return 0;
    snprintf(buf, size, "%s", (const char *)v);
    (*d->f.free_fn)(v);
    return 1;
}
