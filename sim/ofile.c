/* Atomic output: mkstemp in the target's directory, rename on success. */
#define _POSIX_C_SOURCE 200809L
#include "sim/ofile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ofile_open(ofile *o, const char *path, err *e)
{
    memset(o, 0, sizeof *o);
    if (!strcmp(path, "-")) {
        o->f = stdout;
        return 0;
    }
    if (strlen(path) >= sizeof o->path)
        return err_set(e, ERR_USAGE, "%s: path too long", path);
    snprintf(o->path, sizeof o->path, "%s", path);
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
    int fd = mkstemp(o->tmp);
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
        return err_set(e, ERR_SYSTEM, "%s: %s", path, strerror(errno));
    }
    return 0;
}

int ofile_commit(ofile *o, err *e)
{
    if (!o->tmp[0]) {
        int bad = fflush(o->f) != 0 || ferror(o->f);
        if (o->f != stdout && fclose(o->f) != 0)
            bad = 1;
        o->f = NULL;
        if (bad)
            return err_set(e, ERR_SYSTEM, "writing %s failed", o->path[0] ? o->path : "stdout");
        return 0;
    }
    int bad = ferror(o->f) != 0;
    if (fclose(o->f) != 0)
        bad = 1;
    o->f = NULL;
    if (bad || rename(o->tmp, o->path) != 0) {
        int saved = errno;
        unlink(o->tmp);
        return err_set(e, ERR_SYSTEM, "%s: write failed: %s", o->path, strerror(saved));
    }
    return 0;
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
}
