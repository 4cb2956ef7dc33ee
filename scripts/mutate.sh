#!/bin/bash
# make mutate: break the model one mechanism at a time, in a scratch copy of
# the tree, and report which checks catch each break. Every mutation must be
# caught; the script exits 1 if one is not, and 2 if a mutation's line no
# longer matches its source file exactly once or the mutated tree does not
# build (so the list cannot rot).
#
# usage: scripts/mutate.sh [--doc] [NAME...]
#   --doc   also write the table into docs/validation/mutate.md and the
#           "Mutations" section of docs/validation.md
#   NAME    run only these mutations (default: all)
#
# The checks are what `make check` runs without its ASan/UBSan pass and
# without hwcheck's GPU-side unit tests (no mutation touches hwcheck/ or
# kernels/): every collsim unit test (build/test/**/*_test), every CLI test
# (tests/run_cli.sh tests/cli/*.test, hwcheck cases skipped) and the
# validation guards (scripts/validate.sh --check). The scratch copy is built
# once; each mutation rebuilds incrementally (the mutated object, collsim and
# the unit tests), then its file is restored.
set -u
cd "$(dirname "$0")/.." || exit 4
ROOT=$PWD
DOC=0
[ "${1:-}" = --doc ] && { DOC=1; shift; }
ONLY=" $* "

# NAME | what it breaks | FILE | LINE (exact text, must occur once) | REPLACEMENT
MUTATIONS=$(cat <<'EOF'
share|a flow's max-min share counts one flow too many on every shared link|sim/flownet.c|    return l->rem_Bps / max2(l->wfree, FLOWNET_EPS);|    return l->rem_Bps / max2(l->wfree + 1, FLOWNET_EPS);
read-collapse|the constant collapse rule (topologies without a turnaround) fires with one destination root port (trigger: two)|models/fabric/fabric.c|        else if (cst[c] > 0 && src[c].n >= 2 && root[c].n >= 2)|        else if (cst[c] > 0 && src[c].n >= 2 && root[c].n >= 1)
gpu-tags|a GPU's own read tags (a node's tags=) ignored: every GPU takes the topology's read_tags|models/topo/topo.c|    return own > 0 ? own : t->params.read_tags;|    return t->params.read_tags;
turn-mix|the collapse derived from the turnaround counts every TLP as turning once two GPUs share an uplink (the roots' mix ignored)|models/fabric/fabric.c|            P += (1 - same) / (k * (k - 1));|            P += 1.0 / (k * (k - 1));
shm-rate|an SHM ring's last receive moves its bytes twice over the host path (half the rate)|models/coll/coll.c|    return fabric_xfer_block(b->f, &leg, 1, &blk, bytes, nccl_proto(b->proto)->wire * weight,|    return fabric_xfer_block(b->f, &leg, 1, &blk, bytes, 2 * nccl_proto(b->proto)->wire * weight,
shm-order|an SHM ring step's block no longer loads what it received from host memory (the read leg dropped)|models/coll/coll.c|    if (in_shm)|    if (0 && in_shm)
block-ceiling|a block's stores outside its GPU weigh on its ceiling as those inside (the far ceiling, 42.1 GB/s, ignored)|models/fabric/fabric.c|            cw += per * p->cta_ceil_Bps / p->cta_ceil_far_Bps;|            cw += per;
host-trip|an SHM receiver's step pays its read's round trip on top of its rate (max(L, t) becomes L + t)|models/fabric/fabric.c|            extra_lat_ps -= (sim_ps)(t < lat ? t : lat);|            extra_lat_ps -= 0;
fifo-l2|the last receive loads its FIFO from HBM (the L2's round trip ignored)|models/coll/nccl.c|    double l2 = topo_params_get(b->t)->l2_load_speedup;|    double l2 = 1;
proto-threshold|NCCL's ring LL bandwidth at a quarter of the bus rate, not half (LL gives way to Simple at smaller sizes)|models/nccl/nccl_tune.c|                    bus = fminf(ll_max_bw[arch], bus * .5f);|                    bus = fminf(ll_max_bw[arch], bus * .25f);
channels|NCCL's channel count not doubled after the ring search (connect.cc)|models/nccl/nccl_tune.c|        nc = nc * 2 < NCCL_TUNE_MAX_CHANNELS ? nc * 2 : NCCL_TUNE_MAX_CHANNELS;|        nc = nc < NCCL_TUNE_MAX_CHANNELS ? nc : NCCL_TUNE_MAX_CHANNELS;
nvl-view|NCCL's emulation rates an NVLink at the link's real rate, not its lanes x NCCL's per-lane figure (a bridge's lane count no longer sets the channels)|models/nccl/nccl_tune.c|        float bw = (float)(l->nvlinks > 0 ? l->nvlinks : 1) * nvlink_bw(s->sm);|        float bw = (float)(l->bw_Bps / 1e9);
hostmem-nps|topo import smi gives every NUMA node a whole socket's host memory under NPS (the socket's rate not divided over its nodes)|models/topo/topo_smi.c|                       .bw_Bps = mem_Bps / nps, .lat_ps = mem_lat};|                       .bw_Bps = mem_Bps, .lat_ps = mem_lat};
coll-unroll|NCCL's Simple keeps 8 loads in flight per thread on every GPU (ncclCollUnroll's 6 on SM 12.x and 4 below SM 80 ignored)|models/coll/nccl.c|    return sm >= 80 ? (sm / 10 == 12 ? 6 : 8) : 4;|    return 8;
thread-issue|a host thread driving g GPUs (nccl-tests -g) pays one NCCL call per iteration, not one per GPU|models/topo/topo.c|    return (gpus < nranks ? gpus : nranks) * one;|    return one;
expert-union|the experts of n tokens counted as n x top-k, no overlap|traces/whatif.c|    return pool * (1 - pow(1 - topk / pool, n));|    return topk * n < pool ? topk * n : pool;
ring-steps|a ring allreduce takes 2n - 1 steps instead of 2(n - 1)|models/coll/coll_ring.c|    g->steps = k == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;|    g->steps = k == COLL_ALLREDUCE ? 2 * n - 1 : n - 1;
launch|an eager kernel launch costs the issuing CPU half the launch time|traces/replay.c|    c.first_launch = jittered(r, k, r->launch_ps);|    c.first_launch = jittered(r, k, r->launch_ps / 2);
kernel-turn|an eager kernel queued behind the previous one starts the moment it ends (the GPU's turnaround per kernel, a graph node's cost, dropped)|traces/replay.c|    if (r->rk[k].lane[s].t + r->node_ps > r->rk[k].lane[LANE_CPU].t)|    if (0)
kernel-start|NCCL's ring kernel start (per protocol) halved|models/coll/coll_ring.c|        if (coll_lane(b, start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_RING),|        if (coll_lane(b, start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_RING) / 2,
hop-latency|every link's latency counts twice on a route|models/topo/route.c|            int64_t nd = tr->dist_ps[u] + l->lat_ps;|            int64_t nd = tr->dist_ps[u] + 2 * l->lat_ps;
tie-rule|the engine's rounding tie rule: a quotient within FLOWNET_EPS of an integer no longer rounds to it (always up)|sim/flownet.c|    if (fabs(x - r) <= FLOWNET_EPS * x)|    if (fabs(x - r) < 0 * x)
oneshot-barrier|the custom kernels start without their start barrier|models/coll/coll_oneshot.c|    return fenced_barrier(b, start, ready);|    return 0;
coll-kernel-wait|a collective kernel timed without its wait for the slowest rank (a profile's kernel duration)|traces/replay.c|        sim_ps dur = r->rk[k].lane[s].t - t0;|        sim_ps dur = d;
serial-loads|a custom kernel's loads from its own memory cost nothing (only the peers' loads are waited for)|models/fabric/fabric.c|        t += local / p->cta_store_Bps;|        t += 0;
ce-order|PyTorch-issued copies of one GPU no longer wait for its copy engine (they interleave)|models/fabric/flows.c|        if (ce < 0 && (orders & FLOWS_ORDER_CE) && c->src[j] == c->src[i])|        if (ce < 0 && (orders & FLOWS_ORDER_CE) && c->src[j] == c->src[i] && 0)
dst-order|PyTorch-issued copies into one GPU no longer wait for each other on its stream|models/fabric/flows.c|        if (dst < 0 && dst_wait && c->dst[j] == c->dst[i])|        if (dst < 0 && dst_wait && c->dst[j] == c->dst[i] && 0)
flow-after|a flow waiting for another starts at once in the transaction-level engine|models/tlp/tlp.c|        f->waiting = f->npred;|        f->waiting = 0;
even-draw|a device's next transfer at the transaction level is always the first with bytes left, not drawn among them|models/tlp/tlp.c|            k = (int)((n->rng >> 33) % (uint64_t)m);|            k = 0;
hdr-credits|a receiver's header credits never bind at the transaction level (only its data credits)|models/tlp/tlp.c|    return pt->hdr[cls] >= 1 && pt->data[cls] >= d;|    return pt->data[cls] >= d;
ce-tags|a GPU's copy engine holds all of its GPU's read tags (ce_read_tags ignored)|models/topo/topo.c|    return ce > 0 && ce < tags ? ce : tags;|    return tags;
amd-bw|NCCL rates an AMD socket link at 40 GB/s, not AMD_BW's 16 (its search then finds rings across the sockets)|models/nccl/nccl_tune.c|    case CPU_AMD: return 16.0f;            /* AMD_BW */|    case CPU_AMD: return 40.0f;            /* AMD_BW */
shm-poll|an SHM Simple receive no longer polls its tail in its block's program order (the poll overlaps the previous slice again)|models/coll/coll.c|    return fabric_lat_ps(b->f, FAB_READ, fabric_hostmem_of(b->f, dst), dst);|    return 0 * fabric_lat_ps(b->f, FAB_READ, fabric_hostmem_of(b->f, dst), dst);
shm-poll-ahead|an SHM Simple receive polls its tail in program order even where its sender receives over P2P and runs ahead (the cached tail ignored)|models/coll/coll.c|    int lockstep = cb_ring_shm_sm(b, (from + b->n - 1) % b->n, from);|    int lockstep = 1;
trip-issue|a block's trip of loads from host memory takes one round trip whatever its depth (the SM's issue of the loads and bytes, trip_load_ns and trip_GBps, ignored)|models/fabric/fabric.c|    return ref + grow > 0.1 * ref ? scale * ref / (ref + grow) : scale * 10;|    return scale;
run-env|collsim validate --env ignored: a file run under a setting it does not record (nccl-tests NCCL_P2P_DISABLE=1) is predicted under the defaults|validate/meas.c|    snprintf(buf, sizeof buf, "%s", m->run_env ? m->run_env : "");|    snprintf(buf, sizeof buf, "%s", "");
nccl-host-base|NCCL's host-cost rows fitted as measured, not less the same run's launch-host|validate/points.c|                          relative ? l->time_us - comms * base->time_us : l->time_us,|                          l->time_us,
p2p-ops|a send/receive group's calls cost the host nothing (an all-to-all's issue is one group's)|models/topo/topo.c|    return p->launch_ps + p->nccl_group_ps + calls * p->nccl_p2p_op_ps;|    return p->launch_ps + p->nccl_group_ps;
hwcheck-thread|an hwcheck file's ranks taken as one per thread (hwcheck drives every GPU from one thread)|validate/meas.c|    if (hwcheck && meas_ranks(m) > 0)|    if (0 && hwcheck && meas_ranks(m) > 0)
comm-groups|a group over two communicators of one thread predicted as one communicator's group (hwcheck launch's nccl-2comm row)|validate/points.c|            sim_ps v = by_kind[x->flow] * (x->flow == PTS_NCCL_GROUP ? x->comms : 1);|            sim_ps v = by_kind[x->flow];
host-probe|a file's host probe ignored (the topology's launch and group path instead of the process's own)|models/topo/topo.c|    return g * (probe_ps + (calls - 2) * p->nccl_p2p_op_ps);|    return topo_nccl_thread_issue_ps(p, graph, nranks, p2p_ops, gpus);
probe-parse|hwcheck coll's host_probe header line never read|validate/meas.c|    return (int64_t)llround(p2p * 1e6);|    return 0;
row-probe|a row's own host probe (hwcheck coll's probe_us, taken before each size) ignored for the file's|validate/meas.c|    int64_t probe = k && k->probe_us > 0 ? (int64_t)llround(k->probe_us * 1e6)|    int64_t probe = 0 ? (int64_t)llround(k->probe_us * 1e6)
chan-issue|an eager NCCL collective's channels beyond the first cost the host nothing (nccl_chan_us ignored)|models/topo/topo.c|    return (int64_t)g * (channels - 1) * p->nccl_chan_ps;|    return 0;
inverted-plan|a row is named inverted against a larger size on another plan (the channels not compared)|cmd/cmd_validate.c|            inv = b->size > a->size && b->group == a->group && b->chan == a->chan &&|            inv = b->size > a->size && b->group == a->group &&
round-median|a size's median round taken as the mean of all its calls (hwcheck coll --rounds: one stall no longer told from a slow size)|sim/rounds.c|    s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;|    s.med = s.mean;
graph-beside|a measurement file's relative NCCL_GRAPH_FILE is read from the working directory, not beside the file|validate/meas.c|    if (env.graph_file[0] && env.graph_file[0] != '/' && slash) {|    if (env.graph_file[0] && env.graph_file[0] != '/' && slash && 0) {
barrier-fence|a custom kernel's barrier signal pays no system-scope fence|models/coll/coll_oneshot.c|    if (after_delay(b, ready, p->fence_sys_ps + wait, "fence"))|    if (after_delay(b, ready, wait, "fence"))
block-wait|a custom kernel's barrier costs B blocks what it costs one (its slowest block's wait not modelled)|models/coll/coll_oneshot.c|    sim_ps wait = coll_block_wait_ps(p->block_wait_ps, kernel_blocks(b));|    sim_ps wait = coll_block_wait_ps(p->block_wait_ps, 1);
first-round|a custom kernel's exchange pays its first round of packs at the per-block rate besides the route's latency (the round counted twice)|models/coll/coll_oneshot.c|    cta_Bps = first_round_cap(b, op, cta_Bps, bytes);|    (void)first_round_cap;
fence-ack|a push kernel's barrier fence waits one write latency after its writes whatever fence_ack_us says (the measured wait ignored)|models/coll/coll_oneshot.c|    return p->fence_ack_ps > 0 ? p->fence_ack_ps : write_lat_ps;|    return (void)p, write_lat_ps;
own-round|a custom pull kernel's first round pays the peer's load only (its own pack's load of that round, in no fitted latency, not charged)|models/coll/coll_oneshot.c|    return bw > 0 ? (sim_ps)llround(512.0 * 16.0 / bw * 1e12) : 0;|    return bw > 0 ? 0 : 0;
staged-pool|a staged peer copy (copy-staged) runs as one pipelined transfer at the links' rate: the driver's chunks, their hand-over and the pool the two directions share ignored|models/fabric/flows.c|        double cap = fabric_disabled(f) & FAB_NO_STAGED_POOL ? 0|        double cap = 1 ? 0
load-trip|a block's loads from host memory on a topology that measures no block rate go as fast as the links allow (the 8 KiB per round trip of the reference block ignored)|models/fabric/fabric.c|        f->ldh_trip[k] = rtt > 0 ? FABRIC_CTA_REF_INFLIGHT_B / ((double)rtt * 1e-12)|        f->ldh_trip[k] = rtt > 0 ? read_unbounded_Bps
load-trip-bind|a block's loads from host memory hide their round trip even where the link binds (a step's max(rounds x L, L + bytes / link) becomes bytes / rate + L - min(L, rounds x L), as before)|models/fabric/fabric.c|            t = t > tl ? t - tl : 0;|            t = t > 0 ? t : 0;
whole-rounds|a custom kernel's partial last round of packs costs its share of a round (its slowest thread's whole last iteration ignored)|models/coll/coll_oneshot.c|    return ceil(bytes / r) * r;|    return (void)r, bytes;
round-skew|a custom pull kernel's rounds past the first overlap its first round's serialization on the link (each thread's wait for its last load ignored)|models/coll/coll_oneshot.c|    return r > 0 ? (sim_ps)llround(round_bytes(b) / r * 1e12) : 0;|    return r > 0 ? 0 : 0;
l2-sources|a custom kernel whose buffers fit its GPU's L2 loads its own sources at their HBM rate (the L2 ignored)|models/coll/coll_oneshot.c|    return bufs * (double)b->r->bytes <= p->l2_bytes ? p->l2_load_speedup : 1;|    return bufs * (double)b->r->bytes < 0 ? p->l2_load_speedup : 1;
stream-push|p2pBandwidthLatencyTest's back-to-back copy-engine pushes each pay the route's flight latency (timed as one copy alone)|models/fabric/flows.c|            time_ps[i] -= fabric_lat_ps(f, FAB_CE_WRITE, s, d);|            time_ps[i] -= 0;
host-spread|the per-cycle host figure spread over the segments with its syncs' cost left in|traces/whatif_scn.c|    double seg = (cycle_us - syncs * s->sync_us) / (3 + syncs);|    double seg = cycle_us / (3 + syncs);
loop-floor|hwcheck's timed transfer loops cost no host issue (the transfer alone)|validate/points.c|        pred_us[i] = (double)(end > issue ? end : issue) * 1e-6;|        pred_us[i] = (double)end * 1e-6;
replay-nccl-call|an eager NCCL collective in a replay costs its CPU a kernel launch only (NCCL's host work per call dropped)|traces/replay.c|    r->call_ps = call > 0 ? call : 0;|    r->call_ps = 0;
replay-coll-host|a replay's eager NCCL call pays the framework's per-kernel work, not its collective layer (PyTorch c10d)|traces/replay.c|    c.first_host = jittered(r, k, nccl ? r->coll_host_ps : r->op_host_ps);|    c.first_host = jittered(r, k, r->op_host_ps);
replay-nccl-node|an NCCL collective inside a replayed CUDA graph costs a kernel's graph node, not NCCL's|traces/replay.c|        r->call_node_ps = p->nccl_graph_call_ps;|        r->call_node_ps = r->node_ps;
hyp-rising|a what-if hypothesis whose amount raises tok/s (accept_len) solved as if it lowered it|traces/whatif_hyp.c|        y->rising = d->rising;|        y->rising = 0;
graph-max-bs|a what-if batch above --cuda-graph-max-bs still replays its phases as CUDA graphs|traces/whatif.c|    if (s->cuda_graph_max_bs > 0 && s->batch > s->cuda_graph_max_bs)|    if (0 && s->cuda_graph_max_bs > 0 && s->batch > s->cuda_graph_max_bs)
route-many|a one-shot's sources are not said to reach many targets (each searches twice for one target before building its tree, and keeps its first 16 routes per pair)|models/topo/route.c|    t->nparts[src] = PARTS_MANY;|    t->nparts[src] = t->nparts[src];
alike-memo|the rotation check takes every pair of route links as alike once any pair was compared (their figures no longer compared)|models/fabric/fabric.c|        if (alike[x] == y) /* found alike already */|        if (alike[x] >= -1)
chunk-reuse|a streamed run's recycled task chunks are freed, not kept for reuse|sim/sched.c|        s->spare = s->chunk[c];|        free(s->chunk[c]);
edge-order|a join's event is not moved behind a later release arriving at the same time (the join starts ahead of events its last flag's delay would have followed)|sim/sched.c|    } else if (t >= evq_time_ps(s->q, ev) ? evq_move(s->q, ev, t) : evq_skip(s->q)) {|    } else if (t > evq_time_ps(s->q, ev) ? evq_move(s->q, ev, t) : evq_skip(s->q)) {
edge-tie|of the edges arriving at a join at one time, the first released sets its critical path, not the first made (as the delays' ids would rank them)|sim/sched.c|        ku->crit = l->key;|        ku->crit = 0;
lat-row|a one-shot source's row of latencies from its tree is 1 ps longer than its routes' latencies|models/topo/route.c|            lat = tr->dist_ps[v] == INT64_MAX ? -1 : tr->dist_ps[v];|            lat = tr->dist_ps[v] == INT64_MAX ? -1 : tr->dist_ps[v] + 1;
tree-from-ring|a tree search's tries that match an earlier ring try are searched again (not answered from it)|models/nccl/nccl_tune.c|    int ring_for_tree = !s->has_nvs && s->rtype_le && is_tree(g->pattern);|    int ring_for_tree = 0 && !s->has_nvs && s->rtype_le && is_tree(g->pattern);
heap-key|the route search's packed heap key has its off-the-NVLink-fabric bit at the bottom of the word, ORed into the latency, not at its top: nodes are settled in latency order first|models/topo/route.c|(uint64_t)off << 63|(uint64_t)off << 0
link-reserve|a fabric's engine links are not reserved at once (grown by doubling as they are added)|models/fabric/fabric.c|    if (sched_reserve_links(f->s, 2 * ntl + nsock + per_gpu * topo_ngpus(t)))|    if (0)
early-hops|the rotation check fills the spread hops of its first look again in its pass (not taken from the first look)|models/fabric/fabric.c|            if (e < nearly) { /* filled by the spread hops above */|            if (0) {
link-names|a topology link's two engine links both named "a>b" when their names are made (the reverse direction's "b>a" lost)|models/fabric/fabric.c|    join_name(buf, n, link % 2 ? b : a, ">", link % 2 ? a : b);|    join_name(buf, n, a, ">", b);
one-rank|a one-rank (tp 1) what-if cycle calls its allreduces as if the group had ranks to reduce with|traces/whatif.c|    if (s->tp <= 1)|    if (0)
replay-launch|collsim validate replays a replay file's traces as they mark, whatever its '# launch:' line says hwcheck did (eager, every phase a graph)|cmd/cmd_validate.c|        o.graph = graph;|        o.graph = -1;
kernel-turn-key|an eager queued kernel's turnaround taken from the graph node, not the topology's kernel_turn (the H200's 1.288 us measured in micro/spin ignored)|traces/replay.c|    r->turn_ps = tp && tp->kernel_turn_ps > 0 && !r->o.captured_overhead && r->o.graph_node_us < 0|    r->turn_ps = 0 && tp && tp->kernel_turn_ps > 0 && !r->o.captured_overhead && r->o.graph_node_us < 0
loop-timeline|an hwcheck transfer loop's iteration predicted as the larger of the transfer and its issues (the loop's events, issue order and last operation's run ignored)|validate/points.c|    return ((stop > last_end ? stop : last_end) - start) / n;|    return t > per_iter ? t : per_iter;
nvlink-push|a peer copy between NVLink-joined GPUs read by the destination's engine (a round trip), not pushed by the source's|models/fabric/flows.c|        topo_gpu_nvlinks(fabric_topo(f), c->src[i], c->dst[i]) > 0)|        0)
host-setup|a copy to or from host memory pays a peer copy's setup (copy_host_setup ignored)|models/topo/topo.c|    return host && p->copy_host_setup_ps > 0 ? p->copy_host_setup_ps : p->copy_setup_ps;|    return p->copy_setup_ps;
nvlink-req|an SM load's request crosses NVLink the other way at a millionth of its wire bytes (nvlink_req_bytes ignored)|models/fabric/fabric.c|            n = add_link(f, n, id ^ 1, wt * req / (pay + req));|            n = add_link(f, n, id ^ 1, wt * req / (pay + req) / 1e6);
window-turnover|the transaction level's window takes its rates from the first steady-looking span, before the network has turned over (a start's backlog taken for the steady state)|models/tlp/tlp.c|            turned_prev = turned;|            turned_prev = 1;
rc-cpl-buffer|root ports and CPUs take every completion they forward at once (infinite completion credits by default again)|models/topo/topo.c|    p->tlp_rc_cpl_hdr = 256, p->tlp_rc_cpl_data_bytes = 32768;|    p->tlp_rc_cpl_hdr = 0, p->tlp_rc_cpl_data_bytes = 0;
turn-others|the flow mode's uplink requesters alternate strictly at the turnaround whatever else they send (a read's requests ignored)|models/fabric/fabric.c|    return (1 + 1 / (1 + FABRIC_TURN_MIX_B * lambda)) / 2;|    return 1;
dllp-reverse|the transaction level's DLLPs go out on the TLP's own direction, not the link's other one|models/tlp/tlp.c|    port *r = &n->ports[pe ^ 1];|    port *r = &n->ports[pe];
dllp-behind|the transaction level's DLLPs queued behind a TLP on a busy wire are dropped|models/tlp/tlp.c|        if (pt->dllp_ps > 0) { /* the DLLPs queued behind the TLP go out next */|        if (pt->dllp_ps > 0 && 0) { /* the DLLPs queued behind the TLP go out next */
dllp-flow|the flow mode's DLLPs load a stream's own direction, not the hop's other one|models/fabric/fabric.c|                n = add_link(f, n, id ^ 1, wt * dllp / (pay < mps ? pay : mps));|                n = add_link(f, n, id, wt * dllp / (pay < mps ? pay : mps));
EOF
)

t0=$(date +%s)
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/collsim-mutate.XXXXXX") || exit 4
trap 'rm -rf "$SCRATCH"' EXIT
# The working tree as it is (tracked and untracked files, not what git ignores;
# symbolic links as links, so a tracked link to a directory keeps pointing at it).
git ls-files -z -c -o --exclude-standard | xargs -0 cp -P --parents -t "$SCRATCH" 2>/dev/null
[ -f "$SCRATCH/Makefile" ] || { echo "mutate: could not copy the tree to $SCRATCH" >&2; exit 4; }
cd "$SCRATCH" || exit 4
# The unit tests as the Makefile lists them (check-unit's, without hwcheck's).
TESTS=$(make -s --no-print-directory print-unit-tests) || exit 4
[ -n "$TESTS" ] || { echo "mutate: the Makefile lists no unit tests" >&2; exit 4; }
# Tools the CLI tests use (pngstat for the plot tests), as check-cli builds them.
TOOLS=$(grep -q '^$(BUILD)/tools/pngstat:' Makefile && echo build/tools/pngstat)
build() { make -j2 build/collsim $TOOLS $TESTS > build.log 2>&1; }

# The checks; each prints what failed, one item a line, into $1.
run_unit() { : > "$1"; for t in $TESTS; do ./"$t" > "$t.log" 2>&1 || echo "${t#build/test/}" >> "$1"; done; }
# A runner that exits non-zero without naming a failure (it crashed, or
# refused its input) is a failure too, so that make check's verdict is kept.
failed_as() { [ "$2" != 0 ] && [ ! -s "$1" ] && echo "$3 exit $2" > "$1"; }
run_cli() { COLLSIM=build/collsim HWCHECK= PNGSTAT=build/tools/pngstat tests/run_cli.sh tests/cli/*.test > "$1.log" 2>&1
            local rc=$?; sed -n 's/^FAIL \([^:]*:[0-9]*\):.*/\1/p' "$1.log" > "$1"; failed_as "$1" $rc tests/run_cli.sh; }
run_validate() { scripts/validate.sh build/collsim --check > "$1.log" 2>&1
                 local rc=$?; sed -n 's/^validate: FAIL //p' "$1.log" > "$1"; failed_as "$1" $rc scripts/validate.sh; }
checks() { run_unit "$1.unit"; run_cli "$1.cli"; run_validate "$1.val"; }

echo "mutate: building the scratch copy ($SCRATCH)"
build || { tail -20 build.log; echo "mutate: the unmutated tree does not build" >&2; exit 4; }
checks base
for c in unit cli val; do
    if [ -s "base.$c" ]; then
        echo "mutate: the unmutated tree fails its checks ($c):" >&2; head -5 "base.$c" >&2; exit 4
    fi
done
t1=$(date +%s)
echo "mutate: baseline built and checked in $((t1 - t0)) s"

# what a check caught, as a cell: "-" or "N: first, second, ..."
cell() { local n; n=$(grep -c . "$1"); [ "$n" = 0 ] && { echo "-"; return; }
         echo "$n: $(head -3 "$1" | sed 's/|/\\|/g' | paste -sd ';' | sed 's/;/; /g')$( [ "$n" -gt 3 ] && echo '; ...')"; }

rows=""
missed=0 ran=0
while IFS='|' read -r name what file old new; do
    [ -z "$name" ] && continue
    [ "$ONLY" != "  " ] && [[ "$ONLY" != *" $name "* ]] && continue
    ran=$((ran + 1))
    [ -f "$file" ] || { echo "mutate: $name: $file does not exist" >&2; exit 2; }
    n=$(grep -cF -- "$old" "$file")
    if [ "$n" != 1 ]; then
        echo "mutate: $name: the line to mutate occurs $n times in $file (needs exactly 1):" >&2
        echo "    $old" >&2
        exit 2
    fi
    cp "$file" "$file.orig"
    content=$(cat "$file"; echo x); content=${content%x}
    printf '%s' "${content/"$old"/"$new"}" > "$file"
    cmp -s "$file" "$file.orig" && { echo "mutate: $name: the replacement changed nothing" >&2; exit 2; }
    ts=$(date +%s)
    if build; then
        checks "m.$name"
        u=$(cell "m.$name.unit"); c=$(cell "m.$name.cli"); v=$(cell "m.$name.val")
    else
        # A mutation that does not compile tests no check: the list has rotted.
        tail -20 build.log >&2
        echo "mutate: $name: the mutated tree does not build" >&2
        exit 2
    fi
    caught=yes
    [ ! -s "m.$name.unit" ] && [ ! -s "m.$name.cli" ] && [ ! -s "m.$name.val" ] && { caught=NO; missed=$((missed + 1)); }
    mv "$file.orig" "$file"
    touch "$file"
    te=$(date +%s)
    printf 'mutate: %-16s caught: %-3s unit %s | cli %s | validate %s (%d s)\n' "$name" "$caught" \
        "$(grep -c . "m.$name.unit")" "$(grep -c . "m.$name.cli")" "$(grep -c . "m.$name.val")" $((te - ts))
    rows="$rows| \`$name\` | $what (\`$file\`) | $u | $c | $v | $caught |
"
done <<< "$MUTATIONS"
t2=$(date +%s)

table="Generated by \`make mutate\` (\`scripts/mutate.sh --doc\`): $ran single-point mutations of the model,
each applied alone to a scratch copy of the tree, rebuilt incrementally and run through the
checks \`make check\` runs without its ASan/UBSan pass and without hwcheck's GPU unit tests:
every collsim unit test, every CLI test (\`tests/cli/*.test\`) and the validation guards
(\`scripts/validate.sh --check\`). A cell is how many tests / CLI cases / guards failed, then the
first of them. The run took $((t2 - t0)) s ($((t1 - t0)) s to copy, build and check the unmutated
tree) on $(nproc) cores.

| mutation | what it breaks (file) | unit tests | CLI tests | validation guards | caught |
|---|---|---|---|---|---|
$rows"
echo
echo "$table"
echo "mutate: $ran mutation(s), $missed not caught, $((t2 - t0)) s"
if [ $DOC = 1 ]; then
    cd "$ROOT" || exit 4
    mkdir -p docs/validation
    printf '%s' "$table" > docs/validation/mutate.md
    # Replace the Mutations section of docs/validation.md (validate.sh writes it from the same file).
    if grep -q '^## Mutations' docs/validation.md; then
        awk -v f=docs/validation/mutate.md 'BEGIN{skip=0}
            /^## Mutations/ { print; print ""; while ((getline l < f) > 0) print l; print ""; skip=1; next }
            skip && /^## / { skip=0 }
            !skip' docs/validation.md > docs/validation.md.tmp && mv docs/validation.md.tmp docs/validation.md
    fi
fi
[ "$missed" = 0 ] || exit 1
exit 0
