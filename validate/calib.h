/* Calibration profile (`collsim-calib 1`, docs/formats.md): fitted values
 * of the model's free parameters, `key value [+- sd]` lines with the unit
 * in the key. Keys are the machine-wide parameters of topo_params and
 * per-link-class bandwidths and latencies (`link.pcie.gpu-switch.bw_GBps`).
 * A calib owns its strings; entries keep their file order. */
#ifndef VALIDATE_CALIB_H
#define VALIDATE_CALIB_H

#include <stdio.h>

#include "models/topo/topo.h"
#include "sim/err.h"

typedef struct calib calib;

typedef struct calib_entry {
    const char *key;
    double value;     /* in the key's unit */
    double sd;        /* standard error from the fit; NaN if not fitted */
    long line;        /* line in the file it came from, 0 if set in code */
    const char *note; /* the line's trailing `# comment` ("fitted", "from START"), "" if none */
} calib_entry;

calib *calib_new(void);                 /* NULL on OOM */
void calib_free(calib *c);              /* NULL ok */
/* Parse a profile; name is used in messages. ERR_INPUT "name:line: what" on
 * a bad header, unknown key, bad number, duplicate key or value out of range. */
int calib_parse(FILE *f, const char *name, calib **out, err *e);
int calib_load(const char *path, calib **out, err *e);
/* Write the profile (header, comments lines, entries); ERR_SYSTEM on I/O. */
int calib_write(const calib *c, FILE *f, err *e);
/* calib_write as an ofile_write_fn (arg: the profile), for sim/ofile.h ofile_write. */
int calib_writer(FILE *f, void *c, err *e);
/* Add or replace key (checked as in parsing; ERR_USAGE if unknown). */
int calib_set(calib *c, const char *key, double value, double sd, err *e);
/* Set the note written after key's value (`# note`); ERR_USAGE if key is
 * not in c. */
int calib_set_note(calib *c, const char *key, const char *note, err *e);
/* A `# text` line written after the header (the fit's provenance). */
int calib_comment(calib *c, const char *text, err *e);
/* Value of key, or -1 if absent. */
int calib_get(const calib *c, const char *key, double *value);
int calib_count(const calib *c);
const calib_entry *calib_at(const calib *c, int i);
const char *calib_source(const calib *c); /* file name, "" if built in code */

/* A calibrated copy of t (finished): c's parameters override t's, and each
 * link.CLASS key sets bandwidth or latency of every link of that class.
 * ERR_INPUT "file:line: ..." if c names a class t does not have. */
int calib_apply(const calib *c, const topo *t, topo **out, err *e);
/* Load topology name_or_path and, if calib_path is not NULL, apply that
 * profile: what every command's --topo and --calib do. */
int calib_load_topo(const char *name_or_path, const char *calib_path, topo **out, err *e);
/* Override the topo_params fields that c names (unit conversion included). */
void calib_apply_params(const calib *c, topo_params *p);
/* Link class of a link between node kinds ka and kb: "pcie.gpu-switch",
 * "socket.cpu-cpu", ... (kinds in enum order). buf >= 48 bytes; returns buf. */
const char *calib_link_class(topo_link_kind lk, topo_kind ka, topo_kind kb, char *buf);
/* Is key a known key? (machine parameter or well-formed link.CLASS.bw_GBps /
 * link.CLASS.lat_ns) */
int calib_key_valid(const char *key);

/* One machine-wide parameter: its key, description and where it lives. */
typedef struct calib_param_desc {
    const char *key;
    const char *what;
    double lo, hi;     /* accepted range, in the key's unit */
} calib_param_desc;
/* The table of machine-wide keys, ending with {NULL}. */
const calib_param_desc *calib_params_table(void);

#endif
