/* NCCL_TOPO_DUMP_FILE import: PLACEHOLDER until the importer lands. */
#include "models/topo.h"

int topo_import_xml(const char *path, topo **out, err *e)
{
    *out = NULL;
    return err_set(e, ERR_SYSTEM, "%s: XML import not implemented yet", path);
}
