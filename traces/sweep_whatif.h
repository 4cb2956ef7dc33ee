/* The runs of `collsim sweep`: a scenario point is a what-if run
 * (traces/whatif.h) with the point's knobs set in order; a trace point is a
 * replay (traces/replay.h) on the knobs' topology and settings. Each worker
 * process keeps its own caches (what-if context, topology and collective
 * predictions), filled on first use after the fork. */
#ifndef TRACES_SWEEP_WHATIF_H
#define TRACES_SWEEP_WHATIF_H

#include "traces/sweep.h"

/* Default topology of trace runs without a topo knob. */
#define SWEEP_WHATIF_TOPO "rtxpro6000-8x-pcie5-2s"

typedef struct sweep_whatif sweep_whatif;

sweep_whatif *sweep_whatif_new(void);           /* NULL on OOM */
void sweep_whatif_free(sweep_whatif *w);        /* NULL ok */
/* The runner (metrics tok_per_s, cycle_us, ... ) over w (borrowed). */
void sweep_whatif_runner(sweep_whatif *w, sweep_runner *out);
/* Knobs of trace runs, i = 0.. (NULL past the end), and their descriptions. */
const char *sweep_whatif_trace_key(int i);
const char *sweep_whatif_trace_key_desc(int i);

#endif
