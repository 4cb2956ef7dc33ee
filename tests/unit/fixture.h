/* The set-ups the model unit tests share (include after <cmocka.h>): an NCCL
 * communicator on a preset, and one collective predicted in a fresh context.
 * A failure of the set-up itself fails the test with the library's message. */
#ifndef TESTS_UNIT_FIXTURE_H
#define TESTS_UNIT_FIXTURE_H

#include "models/coll/coll.h"
#include "models/nccl/nccl_tune.h"

/* nranks GPUs of preset under env (NULL-terminated NCCL_X=Y words) for NCCL
 * version ver ("2.28"); *tp and *nt are the caller's (topo_free,
 * nccl_tune_free). Returns nccl_tune_new's result (tests of refusals). */
static inline int fixture_comm(const char *preset, int nranks, const char *ver,
                               const char *const *env, topo **tp, nccl_tune **nt, err *e)
{
    assert_int_equal(topo_load(preset, tp, e), 0);
    coll_req r;
    coll_req_init(&r, *tp);
    r.env.version = nccl_tune_version_parse(ver);
    for (; env && *env; env++)
        assert_int_equal(coll_env_set(&r.env, *env, e), 0);
    *nt = NULL;
    return nccl_tune_new(*tp, nranks, &r.env, nt, e);
}

/* r predicted on t in a new context with the mechanisms off switched off
 * (FAB_NO_* bits, 0 for none). */
static inline coll_result fixture_predict(const topo *t, const coll_req *r, int off)
{
    err e = {0};
    coll_ctx *c = coll_ctx_new(t);
    coll_ctx_without(c, off);
    coll_result res;
    if (coll_predict(c, r, &res, &e))
        fail_msg("coll_predict: %s", e.msg);
    coll_ctx_free(c);
    return res;
}

#endif
