/* Shared command option glue (cmd_ctx.h). */
#include "cmd/cmd_ctx.h"

#include <stdio.h>
#include <string.h>

#include "validate/calib.h"

void cmd_ctx_init(cmd_ctx *c)
{
    memset(c, 0, sizeof *c);
    c->topo = CMD_DEFAULT_TOPO;
    c->out = "-";
    c->fmt = REPORT_TABLE;
    c->env.p2p_level = -1;
    c->env.algo = ALGO_AUTO;
    c->env.proto = PROTO_AUTO;
}

#define CC ((cmd_ctx *)ctx)
int cmd_set_topo(void *ctx, const char *a, err *e)
{
    (void)e;
    CC->topo = a;
    CC->topo_given = 1;
    return 0;
}
int cmd_set_calib(void *ctx, const char *a, err *e) { (void)e; CC->calib = a; return 0; }
int cmd_set_output(void *ctx, const char *a, err *e)
{
    (void)e;
    CC->out = a;
    CC->out_given = 1;
    return 0;
}
int cmd_set_timeline(void *ctx, const char *a, err *e) { (void)e; CC->timeline = a; return 0; }
int cmd_set_format(void *ctx, const char *a, err *e) { return cli_parse_format(a, &CC->fmt, e); }

int cmd_set_env(void *ctx, const char *a, err *e)
{
    TRY(coll_env_set(&CC->env, a, e));
    CC->env_given = 1;
    size_t k = strlen(CC->envs);
    snprintf(CC->envs + k, sizeof CC->envs - k, "%s%s", k ? " " : "", a);
    return 0;
}
#undef CC

int cmd_parse_engine(const char *a, int *tlp, err *e)
{
    if (strcmp(a, "flow") && strcmp(a, "tlp"))
        return err_set(e, ERR_USAGE, "--engine: '%s' (flow or tlp)", a);
    *tlp = !strcmp(a, "tlp");
    return 0;
}

int cmd_load_topo(const cmd_ctx *c, topo **out, err *e)
{
    return c->calib ? calib_load_topo(c->topo, c->calib, out, e) : topo_load(c->topo, out, e);
}

void cmd_meta(const cmd_ctx *c, report *r)
{
    report_meta(r, "calibration", "%s", c->calib ? c->calib : "none (preset parameters)");
    report_meta(r, "env", "%s", c->envs[0] ? c->envs : "none (NCCL defaults)");
}

int cmd_report_to_stderr(const cmd_ctx *c)
{
    return c->timeline && !strcmp(c->timeline, "-") && !strcmp(c->out, "-");
}
