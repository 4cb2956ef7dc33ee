/* MPI for sweeps (Open MPI). Records travel as MPI_BYTE: every rank runs the
 * same binary, so the layout is the same. Errors come back as codes
 * (MPI_ERRORS_RETURN on MPI_COMM_WORLD) and become ERR_SYSTEM. Without
 * HAVE_MPI every call is the one-rank answer. Launch detection reads the
 * variables Open MPI's mpirun (OMPI_COMM_WORLD_*), PMIx (PMIX_RANK, as under
 * srun --mpi=pmix) and PMI-1/2 (PMI_RANK, PMI_SIZE) launchers set. */
#include "traces/sweep_mpi.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

struct sweep_mpi {
    int joined;   /* MPI_Init called */
    int rank, size;
};

enum { TAG_REC = 17 };

static long env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    return *end ? dflt : v;
}

static int launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

int sweep_mpi_env_rank(void)
{
    long r = env_long("OMPI_COMM_WORLD_RANK", -1);
    if (r < 0)
        r = env_long("PMIX_RANK", -1);
    if (r < 0)
        r = env_long("PMI_RANK", 0);
    return r > 0 && r < 1000000 ? (int)r : 0;
}

#ifdef HAVE_MPI
int sweep_mpi_built(void) { return 1; }

static int mpi_fail(err *e, const char *what, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(code, msg, &n) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "error %d", code);
    return err_set(e, ERR_SYSTEM, "MPI: %s: %s", what, msg);
}

int sweep_mpi_init(sweep_mpi **out, err *e)
{
    sweep_mpi *m = calloc(1, sizeof *m);
    if (!m)
        return err_set(e, ERR_SYSTEM, "out of memory");
    m->size = 1;
    if (launched()) {
        int rc = MPI_Init(NULL, NULL);
        if (rc != MPI_SUCCESS) {
            free(m);
            return mpi_fail(e, "MPI_Init", rc);
        }
        m->joined = 1;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    }
    *out = m;
    return 0;
}

void sweep_mpi_finish(sweep_mpi *m)
{
    if (m && m->joined)
        MPI_Finalize();
    free(m);
}

int sweep_mpi_bcast(sweep_mpi *m, long *v, int n, err *e)
{
    if (m->size == 1)
        return 0;
    int rc = MPI_Bcast(v, n, MPI_LONG, 0, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(e, "MPI_Bcast", rc);
}

int sweep_mpi_send(sweep_mpi *m, const void *rec, size_t n, err *e)
{
    ASSERTF(m->rank != 0 && n <= (size_t)1 << 30, "rank %d n %zu", m->rank, n);
    int rc = MPI_Send(rec, (int)n, MPI_BYTE, 0, TAG_REC, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(e, "MPI_Send", rc);
}

int sweep_mpi_recv(sweep_mpi *m, void *rec, size_t n, int wait, err *e)
{
    ASSERTF(m->rank == 0 && m->size > 1, "rank %d size %d", m->rank, m->size);
    int rc, flag = 1, count = 0;
    MPI_Status st;
    if (!wait) {
        rc = MPI_Iprobe(MPI_ANY_SOURCE, TAG_REC, MPI_COMM_WORLD, &flag, &st);
        if (rc != MPI_SUCCESS)
            return mpi_fail(e, "MPI_Iprobe", rc);
        if (!flag)
            return 0;
    }
    rc = MPI_Recv(rec, (int)n, MPI_BYTE, wait ? MPI_ANY_SOURCE : st.MPI_SOURCE, TAG_REC,
                  MPI_COMM_WORLD, &st);
    if (rc != MPI_SUCCESS)
        return mpi_fail(e, "MPI_Recv", rc);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (count != (int)n)
        return err_set(e, ERR_SYSTEM, "MPI: record of %d bytes from rank %d, expected %zu",
                       count, st.MPI_SOURCE, n);
    return 1;
}

#else /* !HAVE_MPI */

int sweep_mpi_built(void) { return 0; }

/* Ranks the launcher started, when the environment tells (0 if unknown). */
static long env_size(void)
{
    long n = env_long("OMPI_COMM_WORLD_SIZE", 0);
    return n ? n : env_long("PMI_SIZE", 0);
}

int sweep_mpi_init(sweep_mpi **out, err *e)
{
    if (launched() && (env_size() > 1 || sweep_mpi_env_rank() > 0))
        return err_set(e, ERR_USAGE,
                       "launched as one of several MPI ranks, but this collsim was built "
                       "without MPI (rebuild with make MPI=1)");
    sweep_mpi *m = calloc(1, sizeof *m);
    if (!m)
        return err_set(e, ERR_SYSTEM, "out of memory");
    m->size = 1;
    *out = m;
    return 0;
}

void sweep_mpi_finish(sweep_mpi *m) { free(m); }

int sweep_mpi_bcast(sweep_mpi *m, long *v, int n, err *e)
{
    (void)m, (void)v, (void)n, (void)e;
    return 0;
}

int sweep_mpi_send(sweep_mpi *m, const void *rec, size_t n, err *e)
{
    (void)m, (void)rec, (void)n;
    return err_set(e, ERR_SYSTEM, "MPI: not built with MPI");
}

int sweep_mpi_recv(sweep_mpi *m, void *rec, size_t n, int wait, err *e)
{
    (void)m, (void)rec, (void)n, (void)wait;
    return err_set(e, ERR_SYSTEM, "MPI: not built with MPI");
}
#endif

int sweep_mpi_rank(const sweep_mpi *m) { return m->rank; }
int sweep_mpi_size(const sweep_mpi *m) { return m->size; }
