/* Timeline names of a collective's tasks (docs/formats.md "Timelines"):
 * each task's lane is its role on its rank, toward a peer where it has one
 * (rank 3 · ch 0-7 · send→4), and its note numbers it within the
 * collective (a ring's loop and step, a tree's or chain's chunk, an NVLS
 * loop); sim/sched.c's timeline writer asks the namers below for the text.
 * A key is role << 24 | (peer + 2): peer -2 none, -1 every peer. Names are
 * written into the caller's buffer; nothing here allocates. */
#include <stdio.h>
#include <string.h>

#include "models/coll/coll_impl.h"
#include "sim/json.h"

enum { ROLE_SHIFT = 24, PEER_MASK = (1 << ROLE_SHIFT) - 1 };

/* What each role's lane is called: "rank R · " (or "ranks 0-N · " for a
 * task that stands for every rank), the parallel units (channels, blocks)
 * if the role has them, then the text for a peer (%d), for every peer
 * (CL_ALL) or for none (CL_NONE). Sort: the lane's place on its rank. */
static const struct {
    coll_lane_role role;
    const char *peer_fmt, *all_fmt, *none_fmt;
    int units, ranks, sort;
} roles[] = {
    {CL_STREAM, "stream", "stream", "stream", 0, 0, 1},
    {CL_KERNEL, "kernel", "kernel", "kernel", 0, 0, 2},
    {CL_BARRIER, "barrier", "barrier join (every rank)", "barrier", 0, 0, 3},
    {CL_FLAG, "flag\xe2\x86\x92%d", "flags\xe2\x86\x92" "every peer", "flag", 0, 0, 4},
    {CL_PUSH, "push\xe2\x86\x92%d", "push\xe2\x86\x92" "every peer", "push", 1, 0, 5},
    {CL_PULL, "pull\xe2\x86\x90%d", "pull\xe2\x86\x90" "every peer", "pull", 1, 0, 6},
    {CL_SEND, "send\xe2\x86\x92%d", "send\xe2\x86\x92" "every peer", "send", 1, 0, 7},
    {CL_RECV, "recv\xe2\x86\x90%d", "recv\xe2\x86\x90" "every peer", "recv", 1, 0, 8},
    {CL_NVLS_UP, "up\xe2\x86\x92NVSwitch (multimem.ld_reduce)",
     "up\xe2\x86\x92NVSwitch (multimem.ld_reduce)", "up\xe2\x86\x92NVSwitch (multimem.ld_reduce)",
     1, 1, 9},
    {CL_NVLS_DOWN, "down\xe2\x86\x90NVSwitch (multimem.st)", "down\xe2\x86\x90NVSwitch (multimem.st)",
     "down\xe2\x86\x90NVSwitch (multimem.st)", 1, 1, 10},
};

/* How a label's slices are named: the text, after the algorithm and
 * protocol or not; the note then gives a ring's loop and step (b->tl_steps
 * per loop), else NVLS's loop or a tree's or chain's chunk. Other labels (a
 * custom kernel's phases) are named by the algorithm and the label. */
static const struct {
    const char *label, *text;
    int algo_proto;  /* prefix the algorithm and protocol */
} labels[] = {
    {"kernel", "kernel start", 1},
    {"ring", "", 1},
    {"allgather", "", 1},
    {"reducescatter", "", 1},
    {"bcast", "", 1},
    {"tree-up", "up", 1},
    {"tree-down", "down", 1},
    {"alltoall", "send/recv", 1},
    {"nvls-up", "up", 1},
    {"nvls-down", "down", 1},
    {"deliver", "deliver", 0},
    {"first-line", "first line", 0},
    {"final-recv", "final recv", 0},
};

int coll_lane(coll_build *b, int task, coll_lane_role role, int peer, uint32_t note)
{
    if (task >= 0)
        sched_task_lane(fabric_sched(b->f), task,
                        (uint32_t)role << ROLE_SHIFT | (uint32_t)((peer + 2) & PEER_MASK), note);
    return task;
}

uint32_t coll_lane_step(const coll_build *b, long loop, int step)
{
    double x = (double)loop * b->tl_steps + step + 1;
    return b->tl_steps > 0 && x < 4294967295.0 ? (uint32_t)x : 0;
}

static int role_at(uint32_t key)
{
    uint32_t role = key >> ROLE_SHIFT;
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if ((uint32_t)roles[i].role == role)
            return (int)i;
    return -1;
}

/* The parallel units a lane's task carries: the builder's text, or NCCL's
 * channels ("ch 0", "ch 0-7"). */
static void units_text(const coll_build *b, char *buf, size_t n)
{
    if (b->tl_units[0])
        snprintf(buf, n, "%s", b->tl_units);
    else if (b->channels > 1)
        snprintf(buf, n, "ch 0-%d", b->channels - 1);
    else
        snprintf(buf, n, "ch 0");
}

static int lane_name(void *ctx, int track, uint32_t key, char *buf, size_t n)
{
    const coll_build *b = ctx;
    int i = role_at(key);
    if (i < 0) {  /* a task no builder gave a lane: say so rather than guess */
        snprintf(buf, n, "rank %d \xc2\xb7 unnamed", track);
        return 0;
    }
    int peer = (int)(key & PEER_MASK) - 2;
    char who[32], units[32] = "", what[96];
    if (roles[i].ranks)
        snprintf(who, sizeof who, "ranks 0-%d", b->n - 1);
    else
        snprintf(who, sizeof who, "rank %d", track);
    if (roles[i].units)
        units_text(b, units, sizeof units);
    snprintf(what, sizeof what,
             peer >= 0 ? roles[i].peer_fmt : peer == CL_ALL ? roles[i].all_fmt : roles[i].none_fmt,
             peer);
    snprintf(buf, n, "%s \xc2\xb7 %s%s%s", who, units, units[0] ? " \xc2\xb7 " : "", what);
    /* Sorted by role, then peer (every peer first). */
    return roles[i].sort * (PEER_MASK / 64) + (peer + 2);
}

static void slice_name(void *ctx, int track, const char *label, uint32_t note, char *buf,
                       size_t n)
{
    (void)track;
    const coll_build *b = ctx;
    const char *text = label ? label : "";
    int ap = 0;
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        if (label && !strcmp(label, labels[i].label)) {
            text = labels[i].text;
            ap = labels[i].algo_proto;
        }
    char head[96];
    int custom = coll_algo_is_custom(b->algo);
    if (ap && custom)
        snprintf(head, sizeof head, "%s%s%s", coll_algo_name(b->algo), text[0] ? " " : "", text);
    else if (ap)
        snprintf(head, sizeof head, "%s %s%s%s", coll_algo_name(b->algo),
                 coll_proto_name(b->proto), text[0] ? " " : "", text);
    else if (custom)  /* a custom kernel's phase: its algorithm, then the phase */
        snprintf(head, sizeof head, "%s \xc2\xb7 %s", coll_algo_name(b->algo), text);
    else
        snprintf(head, sizeof head, "%s", text);
    if (!note) {
        snprintf(buf, n, "%s", head);
        return;
    }
    if (b->tl_steps > 0) {
        long loop = (long)((note - 1) / (uint32_t)b->tl_steps);
        int step = (int)((note - 1) % (uint32_t)b->tl_steps);
        const char *phase = "";
        if (b->r->kind == COLL_ALLREDUCE)
            phase = step < b->n - 1 ? " (reduce-scatter)" : " (all-gather)";
        snprintf(buf, n, "%s \xc2\xb7 loop %ld \xc2\xb7 step %d/%d%s", head, loop + 1, step + 1,
                 b->tl_steps, phase);
        return;
    }
    snprintf(buf, n, "%s \xc2\xb7 %s %u", head, b->algo == ALGO_NVLS ? "loop" : "chunk", note);
}

static void span_name(void *ctx, int track, char *buf, size_t n)
{
    (void)track;
    const coll_build *b = ctx;
    char sz[32], units[32];
    tl_size_text(b->r->bytes, sz, sizeof sz);
    units_text(b, units, sizeof units);
    if (coll_algo_is_custom(b->algo))
        snprintf(buf, n, "%s %s %s \xc2\xb7 %s", coll_kind_name(b->r->kind),
                 coll_algo_name(b->algo), sz, units);
    else
        snprintf(buf, n, "%s %s %s %s \xc2\xb7 %s", coll_kind_name(b->r->kind),
                 coll_algo_name(b->algo), coll_proto_name(b->proto), sz, units);
}

void coll_lane_names(coll_build *b, sched_tl_names *out)
{
    *out = (sched_tl_names){lane_name, slice_name, span_name,
                            (uint32_t)CL_STREAM << ROLE_SHIFT, b};
}
