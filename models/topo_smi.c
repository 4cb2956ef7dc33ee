/* nvidia-smi topo -m import: PLACEHOLDER until the importer lands. */
#include "models/topo.h"

int topo_import_smi(FILE *f, const char *name, topo **out, err *e)
{
    (void)f;
    *out = NULL;
    return err_set(e, ERR_SYSTEM, "%s: nvidia-smi import not implemented yet", name);
}
