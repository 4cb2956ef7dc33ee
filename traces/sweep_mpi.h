/* The MPI side of `collsim sweep`: join the job when launched by mpirun (or
 * srun), broadcast from rank 0, send fixed-size records to rank 0. Built
 * without MPI (make MPI=0) it is a one-rank stand-in that refuses to run
 * as one of several ranks. MPI_Init is called only when the environment
 * says a launcher started us, so plain runs never pay for it. */
#ifndef TRACES_SWEEP_MPI_H
#define TRACES_SWEEP_MPI_H

#include <stddef.h>

#include "sim/err.h"

typedef struct sweep_mpi sweep_mpi;

/* 1 if built with MPI. */
int sweep_mpi_built(void);
/* 1 if built with MPI and this process is a static executable, which
 * cannot load Open MPI itself (sweep_mpi_handoff). */
int sweep_mpi_static(void);
/* Under an MPI launcher, a static collsim replaces itself (execv) with its
 * dynamically linked twin beside it, collsim-mpi, given the same
 * arguments: it returns only on failure (ERR_SYSTEM, naming the file). 0
 * at once when not launched, not static, or built without MPI. Call before
 * any other work: nothing done before it survives. */
int sweep_mpi_handoff(err *e);
/* The rank the launcher gave us, read from the environment (before init);
 * 0 when not launched by one. */
int sweep_mpi_env_rank(void);
/* Join the job if launched by one, else a one-rank stand-in. ERR_USAGE when
 * launched as one of several ranks by a build without MPI; ERR_SYSTEM. */
int sweep_mpi_init(sweep_mpi **out, err *e);
/* Leave the job (MPI_Finalize when joined) and free m. NULL ok. */
void sweep_mpi_finish(sweep_mpi *m);
int sweep_mpi_rank(const sweep_mpi *m);
int sweep_mpi_size(const sweep_mpi *m);
/* Broadcast v[0..n) from rank 0 to all ranks. ERR_SYSTEM. */
int sweep_mpi_bcast(sweep_mpi *m, long *v, int n, err *e);
/* Send a record of n bytes to rank 0 (not from rank 0). ERR_SYSTEM. */
int sweep_mpi_send(sweep_mpi *m, const void *rec, size_t n, err *e);
/* Rank 0: take one record of n bytes sent by another rank: 1 = got one,
 * 0 = none waiting (only if !wait), else ERR_SYSTEM. */
int sweep_mpi_recv(sweep_mpi *m, void *rec, size_t n, int wait, err *e);

#endif
