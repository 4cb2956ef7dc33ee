#!/usr/bin/env python3
"""Capture real tensor-parallel decode and verify steps under torch.profiler.

A stack of transformer-like layers with the reference model's hidden size
(random bf16 weights; one process per GPU, started by torchrun), each layer
doing what a tensor-parallel serving stack does: a column-parallel projection,
a row-parallel output projection and an allreduce (attention), then a
column-parallel up projection, an activation, a row-parallel down projection
and an allreduce (MLP). Steps of T tokens (1 = plain decode, 3 and 4 = EAGLE
verify) are timed with CUDA events and profiled; each rank writes one Kineto
trace per T and a csv of the measured step times.

    torchrun --nproc_per_node=N validate/capture/capture_tp.py --out DIR

--delay-rank R --delay-us U makes rank R sleep U microseconds on the host
before each profiled step's forward pass (after its start event is recorded
on the device stream only when the sleep is over), so the peers' first
allreduce of the step waits about U us for it: a known skew against which the
importer's split of an allreduce into wait and transfer is checked. The csv
records the delay in its header.

NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as the project requires.
"""
import argparse
import csv
import gzip
import os
import shutil
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def layer_weights(hidden, ffn, tp, dev):
    g = torch.Generator(device=dev).manual_seed(1234)
    def w(r, c):
        return (torch.randn(r, c, generator=g, device=dev, dtype=torch.bfloat16) * 0.02)
    return {
        "qkv": w(hidden, 3 * hidden // tp),
        "o": w(hidden // tp, hidden),
        "up": w(hidden, ffn // tp),
        "down": w(ffn // tp, hidden),
    }


def forward(x, layers, group):
    for L in layers:
        h = x @ L["qkv"]
        a = h[:, : h.shape[1] // 3]
        y = a @ L["o"]
        dist.all_reduce(y, group=group)
        x = x + y
        u = torch.nn.functional.gelu(x @ L["up"])
        y = u @ L["down"]
        dist.all_reduce(y, group=group)
        x = x + y
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=7168)
    ap.add_argument("--ffn", type=int, default=18432)
    ap.add_argument("--tokens", default="1,3,4")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--delay-rank", type=int, default=-1,
                    help="rank that sleeps on the host before each profiled step (-1: none)")
    ap.add_argument("--delay-us", type=float, default=0.0,
                    help="host sleep of --delay-rank before each profiled step, microseconds")
    a = ap.parse_args()
    if a.delay_us < 0:
        ap.error("--delay-us must be >= 0")

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    group = dist.group.WORLD
    layers = [layer_weights(a.hidden, a.ffn, world, dev) for _ in range(a.layers)]
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for T in [int(t) for t in a.tokens.split(",")]:
        x0 = torch.randn(T, a.hidden, device=dev, dtype=torch.bfloat16)
        for _ in range(a.warmup):
            forward(x0, layers, group)
        torch.cuda.synchronize()
        dist.barrier()
        times = []
        path = os.path.join(a.out, f"tp{world}-T{T}-rank{rank}.json")
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
            for s in range(a.steps):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                if rank == a.delay_rank and a.delay_us > 0:
                    # Let the device drain first, so the sleep delays this rank's
                    # kernels (not only its host thread) by about delay_us.
                    torch.cuda.synchronize()
                    t_end = time.perf_counter() + a.delay_us * 1e-6
                    while time.perf_counter() < t_end:
                        pass
                with torch.profiler.record_function(f"step[DECODE bs={T}]"):
                    start.record()
                    forward(x0, layers, group)
                    end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1000.0)
        prof.export_chrome_trace(path)
        with open(path, "rb") as fi, gzip.open(path + ".gz", "wb") as fo:
            shutil.copyfileobj(fi, fo)
        os.remove(path)
        for s, us in enumerate(times):
            rows.append((world, rank, T, s, f"{us:.2f}"))
    with open(os.path.join(a.out, f"steps-tp{world}-rank{rank}.csv"), "w", newline="") as f:
        f.write(f"# captured {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} "
                f"torch {torch.__version__} nccl {'.'.join(map(str, torch.cuda.nccl.version()))} "
                f"gpu {torch.cuda.get_device_name(dev)}\n")
        if a.delay_rank >= 0 and a.delay_us > 0:
            f.write(f"# delay: rank {a.delay_rank} sleeps {a.delay_us:g} us on the host "
                    f"before each profiled step\n")
        w = csv.writer(f)
        w.writerow(["world", "rank", "tokens", "step", "time_us"])
        w.writerows(rows)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
