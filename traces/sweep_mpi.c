/* MPI for sweeps (Open MPI). Records travel as MPI_BYTE: every rank runs the
 * same binary, so the layout is the same. Errors come back as codes
 * (MPI_ERRORS_RETURN on MPI_COMM_WORLD) and become ERR_SYSTEM. Without
 * HAVE_MPI every call is the one-rank answer. Launch detection reads the
 * variables Open MPI's mpirun (OMPI_COMM_WORLD_*), PMIx (PMIX_RANK, as under
 * srun --mpi=pmix) and PMI-1/2 (PMI_RANK, PMI_SIZE) launchers set. */
#include "traces/sweep_mpi.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_MPI
#include <dlfcn.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

/* Open MPI is loaded only under a launcher (dlopen of COLLSIM_MPI_LIB, its
 * symbols global for its own plugins), so that every other collsim process
 * starts without its seven libraries (about 2 ms of each cold start). The
 * calls and predefined handles used here, looked up by name; the handles are
 * Open MPI's globals (mpi.h: MPI_COMM_WORLD is &ompi_mpi_comm_world). */
typedef struct mpi_api {
    void *lib;
    int (*init)(int *, char ***);
    int (*finalize)(void);
    int (*set_errhandler)(MPI_Comm, MPI_Errhandler);
    int (*comm_rank)(MPI_Comm, int *);
    int (*comm_size)(MPI_Comm, int *);
    int (*bcast)(void *, int, MPI_Datatype, int, MPI_Comm);
    int (*send)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
    int (*recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
    int (*iprobe)(int, int, MPI_Comm, int *, MPI_Status *);
    int (*get_count)(const MPI_Status *, MPI_Datatype, int *);
    int (*error_string)(int, char *, int *);
    MPI_Comm world;
    MPI_Datatype byte, lng;
    MPI_Errhandler errors_return;
} mpi_api;
#endif

struct sweep_mpi {
    int joined;   /* MPI_Init called */
    int rank, size;
#ifdef HAVE_MPI
    mpi_api api;
#endif
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

static int mpi_fail(const sweep_mpi *m, err *e, const char *what, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (m->api.error_string(code, msg, &n) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "error %d", code);
    return err_set(e, ERR_SYSTEM, "MPI: %s: %s", what, msg);
}

#ifndef COLLSIM_MPI_LIB
#define COLLSIM_MPI_LIB "libmpi.so.40"
#endif

/* Load Open MPI and look up what mpi_api holds. */
static int mpi_load(mpi_api *a, err *e)
{
    if (!(a->lib = dlopen(COLLSIM_MPI_LIB, RTLD_NOW | RTLD_GLOBAL)))
        return err_set(e, ERR_SYSTEM, "MPI: cannot load %s: %s", COLLSIM_MPI_LIB, dlerror());
    static const struct {
        const char *name;
        size_t off;
    } syms[] = {
        {"MPI_Init", offsetof(mpi_api, init)},
        {"MPI_Finalize", offsetof(mpi_api, finalize)},
        {"MPI_Comm_set_errhandler", offsetof(mpi_api, set_errhandler)},
        {"MPI_Comm_rank", offsetof(mpi_api, comm_rank)},
        {"MPI_Comm_size", offsetof(mpi_api, comm_size)},
        {"MPI_Bcast", offsetof(mpi_api, bcast)},
        {"MPI_Send", offsetof(mpi_api, send)},
        {"MPI_Recv", offsetof(mpi_api, recv)},
        {"MPI_Iprobe", offsetof(mpi_api, iprobe)},
        {"MPI_Get_count", offsetof(mpi_api, get_count)},
        {"MPI_Error_string", offsetof(mpi_api, error_string)},
        {"ompi_mpi_comm_world", offsetof(mpi_api, world)},
        {"ompi_mpi_byte", offsetof(mpi_api, byte)},
        {"ompi_mpi_long", offsetof(mpi_api, lng)},
        {"ompi_mpi_errors_return", offsetof(mpi_api, errors_return)},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        void *p = dlsym(a->lib, syms[i].name);
        if (!p) {
            dlclose(a->lib);
            a->lib = NULL;
            return err_set(e, ERR_SYSTEM, "MPI: %s has no %s", COLLSIM_MPI_LIB, syms[i].name);
        }
        /* A function or an object: both are pointers of one size here. */
        memcpy((char *)a + syms[i].off, &p, sizeof p);
    }
    return 0;
}

#ifndef COLLSIM_MPI_HELPER
#define COLLSIM_MPI_HELPER "collsim-mpi"
#endif

int sweep_mpi_static(void)
{
    /* No program interpreter (the dynamic loader) was mapped: AT_BASE is
     * its load address, 0 for a static executable. */
    return getauxval(AT_BASE) == 0;
}

/* A static collsim cannot load Open MPI: dlopen in a static program brings
 * a second libc that Open MPI's threads and plugins do not survive (it
 * crashes in MPI_Init). Under a launcher it therefore becomes
 * COLLSIM_MPI_HELPER, found beside it (the same program linked dynamically,
 * made and installed with it), with the same arguments, read back from
 * /proc/self/cmdline; execv keeps the process, its environment and so its
 * place in the MPI job. */
int sweep_mpi_handoff(err *e)
{
    if (!launched() || !sweep_mpi_static())
        return 0;
    char self[4096], path[4200];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k < 0)
        return err_set(e, ERR_SYSTEM, "sweep: /proc/self/exe: %s", strerror(errno));
    self[k] = '\0';
    char *slash = strrchr(self, '/');
    snprintf(path, sizeof path, "%.*s%s", slash ? (int)(slash - self) + 1 : 0, self,
             COLLSIM_MPI_HELPER);
    if (access(path, X_OK) != 0)
        return err_set(e, ERR_SYSTEM,
                       "sweep: this collsim is linked statically, so under an MPI launcher it "
                       "runs %s, which is missing or not executable (%s; make builds it beside "
                       "collsim, make install installs it there)", path, strerror(errno));
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f)
        return err_set(e, ERR_SYSTEM, "sweep: /proc/self/cmdline: %s", strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        char *grown = n == cap ? realloc(buf, cap *= 2) : buf;
        if (!grown)
            free(buf);
        buf = grown;
    }
    fclose(f);
    size_t argc = 0;
    for (size_t i = 0; buf && i < n; i++)
        argc += buf[i] == '\0';
    char **argv = buf ? calloc(argc + 1, sizeof *argv) : NULL;
    if (!argv || argc == 0) {
        free(buf);
        free(argv);
        return err_set(e, ERR_SYSTEM, "sweep: cannot read this process's arguments");
    }
    for (size_t i = 0, a = 0; a < argc; a++, i += strlen(buf + i) + 1)
        argv[a] = buf + i;
    argv[0] = path;
    fflush(NULL);
    execv(path, argv);
    int errsv = errno;
    free(argv);
    free(buf);
    return err_set(e, ERR_SYSTEM, "sweep: cannot run %s: %s", path, strerror(errsv));
}

int sweep_mpi_init(sweep_mpi **out, err *e)
{
    sweep_mpi *m = calloc(1, sizeof *m);
    if (!m)
        return err_set(e, ERR_SYSTEM, "out of memory");
    m->size = 1;
    if (launched()) {
        mpi_api *a = &m->api;
        if (mpi_load(a, e)) {
            free(m);
            return e->code;
        }
        int rc = a->init(NULL, NULL);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int n = 0;
            if (a->error_string(rc, msg, &n) != MPI_SUCCESS)
                snprintf(msg, sizeof msg, "error %d", rc);
            free(m);
            return err_set(e, ERR_SYSTEM, "MPI: MPI_Init: %s", msg);
        }
        m->joined = 1;
        a->set_errhandler(a->world, a->errors_return);
        a->comm_rank(a->world, &m->rank);
        a->comm_size(a->world, &m->size);
    }
    *out = m;
    return 0;
}

void sweep_mpi_finish(sweep_mpi *m)
{
    if (m && m->joined)
        m->api.finalize();
    /* libmpi stays loaded: Open MPI is not made to be unloaded. */
    free(m);
}

int sweep_mpi_bcast(sweep_mpi *m, long *v, int n, err *e)
{
    if (m->size == 1)
        return 0;
    int rc = m->api.bcast(v, n, m->api.lng, 0, m->api.world);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(m, e, "MPI_Bcast", rc);
}

int sweep_mpi_send(sweep_mpi *m, const void *rec, size_t n, err *e)
{
    ASSERTF(m->rank != 0 && n <= (size_t)1 << 30, "rank %d n %zu", m->rank, n);
    int rc = m->api.send(rec, (int)n, m->api.byte, 0, TAG_REC, m->api.world);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(m, e, "MPI_Send", rc);
}

int sweep_mpi_recv(sweep_mpi *m, void *rec, size_t n, int wait, err *e)
{
    ASSERTF(m->rank == 0 && m->size > 1, "rank %d size %d", m->rank, m->size);
    int rc, flag = 1, count = 0;
    MPI_Status st;
    const mpi_api *a = &m->api;
    if (!wait) {
        rc = a->iprobe(MPI_ANY_SOURCE, TAG_REC, a->world, &flag, &st);
        if (rc != MPI_SUCCESS)
            return mpi_fail(m, e, "MPI_Iprobe", rc);
        if (!flag)
            return 0;
    }
    rc = a->recv(rec, (int)n, a->byte, wait ? MPI_ANY_SOURCE : st.MPI_SOURCE, TAG_REC, a->world,
                 &st);
    if (rc != MPI_SUCCESS)
        return mpi_fail(m, e, "MPI_Recv", rc);
    a->get_count(&st, a->byte, &count);
    if (count != (int)n)
        return err_set(e, ERR_SYSTEM, "MPI: record of %d bytes from rank %d, expected %zu",
                       count, st.MPI_SOURCE, n);
    return 1;
}

#else /* !HAVE_MPI */

int sweep_mpi_built(void) { return 0; }
int sweep_mpi_static(void) { return 0; }
int sweep_mpi_handoff(err *e)
{
    (void)e;
    return 0;
}

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
