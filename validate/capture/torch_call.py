#!/usr/bin/env python3
"""The host cost of one PyTorch `dist.all_reduce` call, isolated (issue 25).

One process, one GPU, a process group of one rank on the NCCL backend; a
1 KiB bf16 tensor (512 elements), as `hwcheck launch`'s `nccl-call` rows.
Writes a `collsim-meas 1` launch file (docs/formats.md) with the rows
    torch-allreduce            wall time per call, N calls back to back
    torch-allreduce-host       host time inside those N calls (before the wait)
    torch-allreduce-idle-host  host time inside one call with the stream
                               drained before it, mean of N/10
    torch-empty-host           host time of one tiny device op (`x.add_(1)`,
                               one kernel launch through PyTorch's dispatcher),
                               back to back: the framework's own floor
Times are time.perf_counter_ns around the calls, after a warm-up of W calls.

    python3 validate/capture/torch_call.py -o FILE [-n N] [-w W]
"""
import argparse
import datetime
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def per_call_us(fn, n):
    """Wall and host time per call of n back-to-back calls (us)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    t1 = time.perf_counter_ns()
    torch.cuda.synchronize()
    t2 = time.perf_counter_ns()
    return (t2 - t0) / n / 1e3, (t1 - t0) / n / 1e3


def idle_call_us(fn, n):
    """Host time inside one call with the stream drained before it (us)."""
    total = 0
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        fn()
        total += time.perf_counter_ns() - t0
    torch.cuda.synchronize()
    return total / n / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("-n", "--iters", type=int, default=2000)
    ap.add_argument("-w", "--warmup", type=int, default=200)
    a = ap.parse_args()
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    x = torch.ones(512, dtype=torch.bfloat16, device=dev)

    def ar():
        dist.all_reduce(x)

    def add():
        x.add_(1)

    for f in (ar, add):
        per_call_us(f, a.warmup)
    rows = []
    wall, host = per_call_us(ar, a.iters)
    rows += [("torch-allreduce", a.iters, wall), ("torch-allreduce-host", a.iters, host)]
    ni = max(10, a.iters // 10)
    rows.append(("torch-allreduce-idle-host", ni, idle_call_us(ar, ni)))
    _, host = per_call_us(add, a.iters)
    rows.append(("torch-empty-host", a.iters, host))

    p = torch.cuda.get_device_properties(dev)
    nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("# format: collsim-meas 1\n# kind: launch\n")
        f.write(f"# gpus: 0: {p.name} ({p.multi_processor_count} SMs)\n")
        f.write(f"# cuda: torch {torch.__version__}, CUDA {torch.version.cuda}\n")
        f.write(f"# nccl: {nccl} (torch's)\n# date: {now}\n")
        f.write(f"# command: validate/capture/torch_call.py -n {a.iters} -w {a.warmup}\n")
        f.write("# note: one rank, dist.all_reduce of 512 bf16 elements (1 KiB), "
                "process group on the NCCL backend\n")
        f.write("what,count,time_us\n")
        for what, count, us in rows:
            f.write(f"{what},{count},{us:.3f}\n")
    os.replace(tmp, a.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
