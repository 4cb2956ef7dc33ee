#!/usr/bin/env python3
"""The eager files' excess over their host floor, by NCCL channel count.

usage: scripts/eager-excess.py [COLLSIM] [DIR]   (defaults: build/collsim,
validate/data/h200-2x)

For each NCCL file measured eager and in a CUDA graph (FILE.csv and
FILE-graph.csv, hwcheck coll) it takes the host floor of the eager file (the
median of its rows on one channel up to 8 KiB), the channels NCCL 2.28 uses
at each size (collsim coll --nccl 2.28 with the file's algorithm, protocol
and settings: the emulation matches nccl-tuning.txt at every size it has),
and, over the rows on 2 or more channels up to 1 MiB whose graph row is more
than 1 us below the floor (host-bound: the device is done before the host),
the least-squares slope of (eager - floor) against (channels - 1) through 0.
It prints the slope per channel of one collective (both ranks), its share
of the floor, and each row's residual, then three readings of the ring LL
file side by side: a cost per call (the eager row as the graph row plus the
1-channel rows' median difference), a cost per channel (the larger of floor
+ slope x (C - 1) and the graph row) and the model's (the preset). Nothing
here is fitted into the model: the eager files are held out (docs/model.md
"Per call, per channel or per step").
"""
import statistics
import subprocess
import sys

COLLSIM = sys.argv[1] if len(sys.argv) > 1 else "build/collsim"
DIR = (sys.argv[2] if len(sys.argv) > 2 else "validate/data/h200-2x").rstrip("/") + "/"

FILES = [
    ("ar-nccl-ring-LL", "allreduce", ["--algo", "ring", "--proto", "LL"]),
    ("ar-nccl", "allreduce", []),
    ("ar-nccl-cudamalloc", "allreduce", []),
    ("ar-nccl-tree", "allreduce", ["--algo", "tree"]),
    ("allgather-nccl", "allgather", []),
    ("reducescatter-nccl", "reducescatter", []),
]
# (ar-nccl-ring-LL128 is left out: its 1-channel rows sit at two host levels,
# 13.1-14.2 and 18.5-20.9 us, and from 4 KiB its rows are device-bound.)


def rows(name):
    r = {}
    with open(DIR + name) as f:
        for line in f:
            if line.startswith("#") or line.startswith("size"):
                continue
            x = line.strip().split(",")
            r[int(x[0])] = float(x[6])
    return r


def channels(kind, extra):
    out = subprocess.run([COLLSIM, "coll", kind, "--topo", "h200-2x", "--nccl", "2.28", "-b",
                          "8", "-e", "2M", "-f", "2"] + extra,
                         capture_output=True, text=True, check=True).stdout
    c = {}
    for line in out.splitlines():
        f = line.split()
        if f and not line.startswith("#") and f[0].isdigit():
            c[int(f[0])] = int(f[-1])
    return c


def main():
    print("%-20s %6s %5s %4s %9s %7s %5s  rows (size:channels:residual us)" %
          ("file", "floor", "sd", "n", "us/chan", "share", "rms"))
    slope_ll = None
    for name, kind, extra in FILES:
        e, g, ch = rows(name + ".csv"), rows(name + "-graph.csv"), channels(kind, extra)
        one = [e[s] for s in e if ch.get(s) == 1 and s <= 8192]
        floor, sd = statistics.median(one), statistics.pstdev(one)
        use = [(s, ch[s], e[s]) for s in sorted(e)
               if s in ch and ch[s] > 1 and s <= 1 << 20 and g[s] + 1.0 < floor]
        den = sum((c - 1) ** 2 for _, c, _ in use)
        b = sum((t - floor) * (c - 1) for _, c, t in use) / den if den else float("nan")
        res = [(s, c, t - floor - b * (c - 1)) for s, c, t in use]
        rms = (sum(x * x for _, _, x in res) / len(res)) ** 0.5 if res else float("nan")
        print("%-20s %6.2f %5.2f %4d %9.3f %7.4f %5.2f  %s" %
              (name, floor, sd, len(one), b, b / floor, rms,
               " ".join("%d:%d:%+.2f" % r for r in res)))
        if name == "ar-nccl-ring-LL":
            slope_ll, floor_ll, e_ll, g_ll, ch_ll = b, floor, e, g, ch
    k = statistics.median(e_ll[s] - g_ll[s] for s in e_ll if ch_ll.get(s) == 1 and s <= 8192)
    pred = subprocess.run([COLLSIM, "validate", DIR + "ar-nccl-ring-LL.csv", "--topo", "h200-2x",
                           "--points", "--format", "csv"],
                          capture_output=True, text=True, check=True).stdout
    model = {}
    for line in pred.splitlines():
        f = line.split(",")
        if len(f) == 6 and f[1].startswith("line"):
            model[int(f[2].split()[-2])] = float(f[4])
    print("\nring LL eager, three readings (us): per call = graph + %.2f; per channel = "
          "max(%.2f + %.3f (C - 1), graph)" % (k, floor_ll, slope_ll))
    print("%9s %3s %7s %7s %9s %11s %7s" % ("size", "C", "eager", "graph", "per-call",
                                            "per-channel", "model"))
    for s in sorted(e_ll):
        if s < 8192 or s not in ch_ll:
            continue
        c = ch_ll[s]
        print("%9d %3d %7.2f %7.2f %9.2f %11.2f %7s" %
              (s, c, e_ll[s], g_ll[s], g_ll[s] + k, max(floor_ll + slope_ll * (c - 1), g_ll[s]),
               "%.2f" % model[s] if s in model else "-"))


if __name__ == "__main__":
    main()
