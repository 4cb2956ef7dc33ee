#!/usr/bin/env python3
"""The CPU cost of an eagerly launched kernel, read off a capture of capture_tp.py.

    validate/capture/op_cost.py DIR/tp1-T*-rank0.json.gz

For each profiled step after the first (the first pays warm-up): the CPU time
from the first to the last of the forward's top-level torch ops (matmul, add,
gelu, slice, allreduce) less the time inside the c10d allreduce calls (on one
rank they launch no kernel), divided by the GPU work items the step launched
(kernels and memsets: cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernelEx,
cudaMemsetAsync); and the mean time of those launch calls themselves. Their
difference is what the framework costs per kernel besides the launch call:
whatif's eager_op_us (docs/scenario.md, "The host side"). The forward is
GPU-bound in these captures, so the CPU never waits inside it and the span is
its own work. Measured with the profiler on, which adds its own per-op cost.
"""
import gzip
import json
import statistics
import sys

TOP = {"aten::matmul", "aten::add", "aten::gelu", "aten::slice", "c10d::allreduce_"}
LAUNCH = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx", "cudaMemsetAsync"}


def steps_of(path):
    with gzip.open(path) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e.get("cat") == "user_annotation"
                    and e["name"].startswith("step[")), key=lambda e: e["ts"])
    for s in steps[1:]:
        lo, hi = s["ts"], s["ts"] + s["dur"]
        inside = [e for e in ev if e["ts"] >= lo and e["ts"] + e["dur"] <= hi]
        top = [e for e in inside if e.get("cat") == "cpu_op" and e["name"] in TOP]
        calls = [e for e in inside if e["name"] in LAUNCH]
        if not top or not calls:
            continue
        span = max(e["ts"] + e["dur"] for e in top) - min(e["ts"] for e in top)
        ar = sum(e["dur"] for e in top if e["name"] == "c10d::allreduce_")
        yield (span - ar) / len(calls), statistics.mean(e["dur"] for e in calls), len(calls)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: op_cost.py TRACE.json.gz...")
    per_all, call_all = [], []
    print("trace,steps,items_per_step,cpu_per_item_us,launch_call_us,framework_us")
    for path in sys.argv[1:]:
        rows = list(steps_of(path))
        if not rows:
            sys.exit(f"{path}: no profiled steps")
        per = [r[0] for r in rows]
        call = [r[1] for r in rows]
        per_all += per
        call_all += call
        print(f"{path},{len(rows)},{rows[0][2]},{statistics.mean(per):.2f},"
              f"{statistics.mean(call):.2f},{statistics.mean(per) - statistics.mean(call):.2f}")
    p, c = statistics.mean(per_all), statistics.mean(call_all)
    print(f"all,{len(per_all)},,{p:.2f},{c:.2f},{p - c:.2f}")


if __name__ == "__main__":
    main()
