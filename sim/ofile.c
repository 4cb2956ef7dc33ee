/* Atomic output: mkstemp in the target's directory, rename on success.
 * Temporaries still open are removed if SIGTERM, SIGINT or SIGHUP arrives:
 * the one mutable global of the project, since a signal handler can reach
 * nothing else. Slots are claimed by the process that created them (a
 * forked worker inherits the handler but removes nothing of its parent's). */
#define _POSIX_C_SOURCE 200809L
#include "sim/ofile.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OFILE_LIVE_MAX = 16 };
static struct {
    volatile sig_atomic_t used;
    pid_t pid;
    char tmp[4200];
} live[OFILE_LIVE_MAX];
static volatile sig_atomic_t handlers_set;

static void on_fatal_signal(int sig)
{
    pid_t me = getpid();
    for (int i = 0; i < OFILE_LIVE_MAX; i++)
        if (live[i].used && live[i].pid == me)
            unlink(live[i].tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Block the three signals while a temporary is created and registered, so
 * none can land between the two; *old gets the mask to restore. */
static void block_fatal(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGHUP);
    sigprocmask(SIG_BLOCK, &s, old);
}

static void live_add(const char *tmp)
{
    if (!handlers_set) {
        static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
            struct sigaction sa, old;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_fatal_signal;
            sigemptyset(&sa.sa_mask);
            /* Leave an ignored signal ignored (nohup). */
            if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
                sigaction(sigs[i], &sa, NULL);
        }
        handlers_set = 1;
    }
    for (int i = 0; i < OFILE_LIVE_MAX; i++)
        if (!live[i].used) {
            snprintf(live[i].tmp, sizeof live[i].tmp, "%s", tmp);
            live[i].pid = getpid();
            live[i].used = 1;
            return;
        }
}

static void live_remove(const char *tmp)
{
    for (int i = 0; i < OFILE_LIVE_MAX; i++)
        if (live[i].used && live[i].pid == getpid() && !strcmp(live[i].tmp, tmp))
            live[i].used = 0;
}

/* The file a chain of symbolic links from path ends at (path itself if it
 * is no link), so the rename replaces that file and the link stays. */
static int resolve(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        struct stat st;
        if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode))
            return 0;
        char to[4096];
        ssize_t k = readlink(out, to, sizeof to - 1);
        if (k < 0)
            return -1;
        to[k] = '\0';
        const char *slash = strrchr(out, '/');
        int dir = to[0] == '/' || !slash ? 0 : (int)(slash - out) + 1;
        char next[4096];
        if (snprintf(next, sizeof next, "%.*s%s", dir, out, to) >= (int)sizeof next) {
            errno = ENAMETOOLONG;
            return -1;
        }
        snprintf(out, n, "%s", next);
    }
    errno = ELOOP;
    return -1;
}

int ofile_target(const char *path, char *out, size_t n, err *e)
{
    if (resolve(path, out, n) != 0)
        return err_set(e, ERR_SYSTEM, "%s: cannot follow the link: %s", path, strerror(errno));
    return 0;
}

int ofile_open(ofile *o, const char *path, err *e)
{
    memset(o, 0, sizeof *o);
    if (!strcmp(path, "-")) {
        o->f = stdout;
        return 0;
    }
    if (strlen(path) >= sizeof o->path)
        return err_set(e, ERR_USAGE, "%s: path too long", path);
    TRY(ofile_target(path, o->path, sizeof o->path, e));
    path = o->path;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* A device or pipe (/dev/null, /dev/stdout): write it in place; a
         * rename would replace the device node with a regular file. */
        o->f = fopen(path, "w");
        if (!o->f)
            return err_set(e, ERR_SYSTEM, "%s: cannot open: %s", path, strerror(errno));
        return 0;
    }
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", path);
    sigset_t old;
    block_fatal(&old);
    int fd = mkstemp(o->tmp);
    if (fd >= 0)
        live_add(o->tmp);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd >= 0) {
        /* mkstemp makes 0600; give the file the mode a plain create would
         * (0666 less the umask). umask can only be read by setting it. */
        mode_t mask = umask(022);
        umask(mask);
        (void)fchmod(fd, (mode_t)(0666 & ~mask));
    }
    if (fd < 0)
        return err_set(e, ERR_SYSTEM, "%s: cannot create: %s", path, strerror(errno));
    o->f = fdopen(fd, "w");
    if (!o->f) {
        close(fd);
        unlink(o->tmp);
        live_remove(o->tmp);
        return err_set(e, ERR_SYSTEM, "%s: %s", path, strerror(errno));
    }
    return 0;
}

/* Flush and close; a temporary that failed is removed. */
static int finish(ofile *o, err *e)
{
    if (!o->tmp[0]) {
        errno = 0;
        int bad = fflush(o->f) != 0 || ferror(o->f);
        if (o->f != stdout && fclose(o->f) != 0)
            bad = 1;
        o->f = NULL;
        if (bad)
            return err_set(e, ERR_SYSTEM, "writing %s failed%s%s", o->path[0] ? o->path : "stdout",
                           errno ? ": " : "", errno ? strerror(errno) : "");
        return 0;
    }
    errno = 0;
    int bad = ferror(o->f) != 0;
    if (fclose(o->f) != 0)
        bad = 1;
    o->f = NULL;
    if (!bad)
        return 0;
    int saved = errno ? errno : EIO;
    unlink(o->tmp);
    live_remove(o->tmp);
    o->tmp[0] = '\0';
    return err_set(e, ERR_SYSTEM, "%s: write failed: %s", o->path, strerror(saved));
}

/* Rename a finished temporary into place. */
static int publish(ofile *o, err *e)
{
    if (!o->tmp[0])
        return 0;
    int rc = 0;
    if (rename(o->tmp, o->path) != 0) {
        rc = err_set(e, ERR_SYSTEM, "%s: write failed: %s", o->path, strerror(errno));
        unlink(o->tmp);
    }
    live_remove(o->tmp);
    return rc;
}

int ofile_commit(ofile *o, err *e)
{
    ofile *one[1] = {o};
    return ofile_commit_all(one, 1, e);
}

int ofile_commit_all(ofile *const *o, int n, err *e)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        int r = finish(o[i], rc ? NULL : e);
        rc = rc ? rc : r;
    }
    for (int i = 0; i < n; i++) {
        if (rc) {
            if (o[i]->tmp[0]) {
                unlink(o[i]->tmp);
                live_remove(o[i]->tmp);
            }
        } else {
            int r = publish(o[i], rc ? NULL : e);
            rc = rc ? rc : r;
        }
    }
    return rc;
}

void ofile_abort(ofile *o)
{
    if (!o->tmp[0]) {
        if (o->f && o->f != stdout)
            fclose(o->f);
        o->f = NULL;
        return;
    }
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    unlink(o->tmp);
    live_remove(o->tmp);
}

int ofile_write(const char *path, ofile_write_fn *fn, void *arg, err *e)
{
    ofile o;
    TRY(ofile_open(&o, path, e));
    int rc = fn(o.f, arg, e);
    if (rc) {
        ofile_abort(&o);
        return rc;
    }
    return ofile_commit(&o, e);
}
