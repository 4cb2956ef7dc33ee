/* One error type for the whole project.
 * A function that can fail returns an int status (0 = ok, else an exit code
 * below) and fills an err with a message; TRY() passes a failure up. Library
 * code never prints or exits: main() prints err.msg and returns err.code. */
#ifndef SIM_ERR_H
#define SIM_ERR_H

#include <stdio.h>

/* Exit codes, shared by collsim and hwcheck (docs/cli.md). */
enum err_code {
    ERR_OK = 0,     /* success */
    ERR_CHECK = 1,  /* a check failed: wrong data, tolerance exceeded */
    ERR_USAGE = 2,  /* bad command line */
    ERR_INPUT = 3,  /* bad input file: message is "file:line: what" */
    ERR_SYSTEM = 4  /* system, CUDA or NCCL error */
};

typedef struct err {
    int code;
    char msg[1024];
} err;

#define TRY(expr)                                                              \
    do {                                                                       \
        int try_rc_ = (expr);                                                  \
        if (try_rc_ != 0)                                                      \
            return try_rc_;                                                    \
    } while (0)

/* Set e (may be NULL) to code and a printf-style message; returns code. */
int err_set(err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* ERR_INPUT with the message prefixed "file:line: " (line 0: "file: "). */
int err_at(err *e, const char *file, long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prefix an existing message with "ctx: " (keeps the code); returns e->code. */
int err_wrap(err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Assertion for bugs (not bad input): prints the values and aborts. */
#define ASSERTF(cond, ...)                                                     \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: assertion '%s' failed: ", __FILE__,        \
                    __LINE__, #cond);                                          \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

#endif
