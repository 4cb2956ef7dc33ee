#!/usr/bin/env python3
"""Convert published measurements of other real boxes (blog posts and issue
threads that print nccl-tests, p2pBandwidthLatencyTest and bandwidthTest
output) into collsim's measurement format (docs/formats.md, "Measurements"),
as held-out validation data (validate/data/public/README.md, "Other boxes").

usage: scripts/convert-public-boxes.py OUT_DIR BOX=FILE...
  BOX names a source below (BOXES); FILE is that source's text as its
  repository stores it at the commit named in the box's `# source:` line
  (`git -C CLONE show COMMIT:PATH > FILE`). Only the numbers of the tools'
  output are kept, each file naming its source; no prose of the source is
  copied.

Every bandwidth and time is kept as printed. What the source does not state
(the NCCL version, transfer sizes of a tool's defaults) is a `# note:` line.
Tables are parsed from the text and counted, so a changed source fails
loudly instead of being misread."""
import importlib.util
import os
import re
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("convert_public",
                                               os.path.join(_here, "convert-public.py"))
cp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cp)
fail, Out = cp.fail, cp.Out

# p2pBandwidthLatencyTest (cuda-samples, outputBandwidthMatrix): numElems =
# 10,000,000 ints per copy, repeat = 5 copies timed together.
P2PBLT_BYTES = 10000000 * 4
# nccl-tests busbw factors (doc/PERFORMANCE.md).
BUS = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
       "reducescatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
       "broadcast": lambda n: 1.0}
DTYPE = {"float": "fp32", "half": "fp16", "bfloat16": "bf16"}


def block_after(text, path, marker, end="```"):
    """The text after the first line containing marker, up to end."""
    i = text.find(marker)
    if i < 0:
        fail(path, f"'{marker}' not found")
    rest = text[i:]
    rest = rest[rest.find("\n") + 1:]
    j = rest.find(end)
    return rest if j < 0 else rest[:j]


def nccl_rows(block, path, coll, nranks, expect):
    """nccl-tests rows: size count type redop root time algbw busbw #wrong ...;
    the out-of-place columns. Checks nranks against the `#  Rank` lines
    (None: the source left them out) and the row count against expect."""
    ranks = len(re.findall(r"^#\s+Rank\s+\d+", block, re.M))
    if nranks is not None and ranks != nranks:
        fail(path, f"{coll}: {ranks} '# Rank' lines, expected {nranks}")
    if not re.search(r"^#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw", block, re.M):
        fail(path, f"{coll}: nccl-tests column header not found")
    rows = []
    for line in block.splitlines():
        c = line.split()
        if not c or not c[0].isdigit():
            continue
        if len(c) < 9:
            fail(path, f"{coll}: short row '{line.strip()}'")
        size, count, typ, t, algbw, busbw, wrong = (int(c[0]), int(c[1]), c[2], float(c[5]),
                                                     float(c[6]), float(c[7]), c[8])
        if size == 0:
            continue   # nccl-tests' zero-byte rows: nothing to compare
        if typ not in DTYPE:
            fail(path, f"{coll}: unknown type '{typ}'")
        # the printed algbw is size / time (GB = 1e9 B), to its 2 decimals
        if abs(size / (t * 1e3) - algbw) > 0.006 + 0.01 * algbw:
            fail(path, f"{coll}: row {size}: algbw {algbw} is not size / time")
        rows.append((size, count, DTYPE[typ], t, algbw, busbw, 0 if wrong in ("0", "N/A") else wrong))
    if len(rows) != expect:
        fail(path, f"{coll}: {len(rows)} rows, expected {expect}")
    return rows


def write_coll(path, meta, notes, rows, coll, nranks):
    f_bus = BUS[coll](nranks)
    with open(path + ".tmp", "w") as f:
        f.write("# format: collsim-meas 1\n# kind: coll\n")
        for k, v in meta:
            f.write(f"# {k}: {v}\n")
        f.write(f"# collective: {coll}\n# ranks: {nranks}\n")
        for n in notes:
            f.write(f"# note: {n}\n")
        f.write("size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                "impl,graph,wrong\n")
        for size, count, dt, t, algbw, busbw, wrong in rows:
            if abs(algbw * f_bus - busbw) > 0.005 * f_bus + 0.006 + 0.01 * busbw:  # 2 printed decimals
                fail(path, f"row {size}: busbw {busbw} is not algbw x {f_bus:g}")
            f.write(f"{size},{count},{dt},auto,auto,0,{t:g},{algbw:g},{busbw:g},nccl,0,{wrong}\n")
    os.replace(path + ".tmp", path)


def smi_lines(block):
    return [l.rstrip() for l in block.splitlines() if re.match(r"\s*GPU\d|\s+GPU0", l)]


def p2pblt_matrix(text, path, title, n):
    """A p2pBandwidthLatencyTest matrix: 'D\\D 0 1 ...' then n rows 'i v v ...'."""
    block = block_after(text, path, title)
    rows = []
    for line in block.splitlines()[1:]:
        c = line.split()
        if len(c) != n + 1 or not c[0].isdigit():
            break
        rows.append([float(x) for x in c[1:]])
    if len(rows) != n:
        fail(path, f"'{title}': {len(rows)} rows, expected {n}")
    return rows


# ---------------------------------------------------------------------------
# 2x RTX 2080 Ti on one PCIe switch, P2P not supported (AutoDL container).

AUTODL_SRC = ("https://github.com/Anthony-Hoo/Anthony-Hoo.github.io "
              "posts/AutoDL_Multi-GPU_Interconnection_Test.md "
              "(commit 37e805e8e56f839f6557756d76503d45af6ab47e)")


def autodl_2080ti(path, out_dir):
    text = open(path).read()
    for fact in ("Driver Version: 550.90.07", "CUDA Version: 12.4",
                 "NVIDIA GeForce RTX 2080 Ti", "PCIe GEN 3@16x",
                 "Device=0 CANNOT Access Peer Device=1"):
        if fact not in text:
            fail(path, f"'{fact}' not found")
    smi = smi_lines(block_after(text, path, "nvidia-smi topo -m", end="Legend"))
    if len(smi) != 3:
        fail(path, f"nvidia-smi topo -m: {len(smi)} lines, expected 3")
    topo_file = "rtx2080ti-2x-autodl.topo"
    meta = [("machine", "AutoDL cloud container (Beijing A): 2x GeForce RTX 2080 Ti 11 GB on one "
             "PCIe Gen3 x16 switch (PIX), NUMA node 1 of a 2-socket host; NVML P2P status NS"),
            ("gpus", "NVIDIA GeForce RTX 2080 Ti,NVIDIA GeForce RTX 2080 Ti"),
            ("driver", "550.90.07"), ("cuda", "12.4")]
    tail = [("date", "2025-06-05"), ("source", AUTODL_SRC)] + [("topo", l) for l in smi]

    # nccl-tests: the five -g 2 tables (reduce_perf has no collsim counterpart).
    common = [
        "NCCL version: not in the post (no NCCL_DEBUG output); the "
        "prediction takes collsim's default NCCL. Environment: none stated, NCCL's defaults "
        "(NVML says NS: NCCL puts both ring hops on SHM through host memory)",
        "nccl-tests as printed (nThread 1 nGpus 2, warm-up 5, 20 iterations, graph 0, "
        "float): the out-of-place time column; rows of 0 bytes left out",
        f"topology: {topo_file} (nvidia-smi topo -m and -p2p of the same post through "
        "`collsim topo import smi`, PCIe Gen3 x16 from its nvtop line)"]
    for coll, marker, name in (("allreduce", "./build/all_reduce_perf -b 8 -e 1024M", "allreduce"),
                               ("allgather", "./build/all_gather_perf -b 8 -e 1024M", "allgather"),
                               ("broadcast", "./build/broadcast_perf -b 8 -e 1024M", "broadcast"),
                               ("alltoall", "./build/alltoall_perf -b 8 -e 1024M", "alltoall")):
        block = block_after(text, path, marker, end="# Avg bus bandwidth")
        cmd = text[text.find(marker):].splitlines()[0].strip()
        rows = nccl_rows(block, path, coll, 2, {"allreduce": 28, "broadcast": 28}.get(coll, 26))
        write_coll(os.path.join(out_dir, f"rtx2080ti-2x-nccl-{name}.csv"),
                   meta + [("nccl", "not stated"),
                           ("command", f"{cmd} (nccl-tests as the post prints it; "
                            "scripts/convert-public-boxes.py)")] + tail,
                   common, rows, coll, 2)

    # p2pBandwidthLatencyTest with P2P unavailable: the driver stages each
    # peer copy through host memory (op copy-staged).
    uni = p2pblt_matrix(text, path, "Unidirectional P2P=Disabled Bandwidth Matrix", 2)
    bid = p2pblt_matrix(text, path, "Bidirectional P2P=Disabled Bandwidth Matrix", 2)
    p2p = Out("p2p", meta + [("nccl", "not used"),
                             ("command", "./p2pBandwidthLatencyTest (cuda-samples; "
                              "scripts/convert-public-boxes.py)")] + tail, [
        "p2pBandwidthLatencyTest on a pair that 'CANNOT Access Peer': cudaMemcpyPeerAsync is "
        "staged by the driver through pinned host memory (op copy-staged); pair rows from the "
        "'Unidirectional P2P=Disabled' matrix, bidir rows from the 'Bidirectional "
        "P2P=Disabled' matrix (entry [i][j]: copies i->j and j->i at once, total only). The "
        "P2P=Enabled matrices are the same staged copies (no peer access) and are left out",
        "bytes: the sample's 10,000,000 ints (40,000,000 B) per copy; it times 5 copies back "
        "to back and divides their bytes by the time",
        "not converted: the latency matrices (4-byte staged copies timed back to back, not "
        "a flag's one-way latency) and the diagonal (copies inside one GPU)"])
    for i in range(2):
        for j in range(2):
            if i != j:
                p2p.xfer_case("pair", [(i, j)], P2PBLT_BYTES, flow_gbps=uni[i][j],
                              op="copy-staged")
    for i in range(2):
        for j in range(2):
            if i != j:
                p2p.xfer_case("bidir", [(i, j), (j, i)], P2PBLT_BYTES, total_gbps=bid[i][j],
                              op="copy-staged")
    p2p.write(os.path.join(out_dir, "rtx2080ti-2x-p2p.csv"))

    # bandwidthTest: pinned host copies of device 0 (quick mode, 32,000,000 B).
    bt = block_after(text, path, "./bandwidthTest")
    got = {}
    for label, key in (("Host to Device Bandwidth", "h2d"), ("Device to Host Bandwidth", "d2h")):
        m = re.search(re.escape(label) + r".*?\n\s*32000000\s+([\d.]+)", bt, re.S)
        if not m:
            fail(path, f"bandwidthTest '{label}' row not found")
        got[key] = float(m.group(1))
    host = Out("host", meta + [("nccl", "not used"),
                               ("command", "./bandwidthTest -g 2 (cuda-samples, quick mode; "
                                "scripts/convert-public-boxes.py)")] + tail, [
        "bandwidthTest quick mode: cudaMemcpyAsync of 32,000,000 B between pinned host memory "
        "and device 0 (the only device it printed), copy engine: op copy; host memory of NUMA "
        "node 1 (the GPUs' affinity in nvidia-smi topo -m) written host1",
        "not converted: the device-to-device row (a copy inside one GPU)"])
    host.xfer_case("h2d", [("host1", 0)], 32000000, flow_gbps=got["h2d"], op="copy")
    host.xfer_case("d2h", [(0, "host1")], 32000000, flow_gbps=got["d2h"], op="copy")
    host.write(os.path.join(out_dir, "rtx2080ti-2x-host.csv"))


# ---------------------------------------------------------------------------
# 8x RTX 4090 on 2x EPYC 7542 (NPS4), no PCIe switch; stock driver (no P2P)
# and tinygrad's patched driver (P2P over BAR1).

CHLC_SRC = ("https://blog.chlc.cc/p/rtx4090-gpudirect-p2p-unlocked (2025-02-07; read as the "
            "post's Markdown source in the public-code index)")


def chlc_4090(path, out_dir):
    text = open(path).read()
    for fact in ("2 x AMD EPYC 7542", "8 x NVIDIA GeForce RTX 4090", "## Test the original performance",
                 "## Test the unlocked performance"):
        if fact not in text:
            fail(path, f"'{fact}' not found")
    smi = smi_lines(block_after(text, path, "GPU NUMA ID", end="Legend"))
    hdr = [l for l in text.splitlines() if "GPU NUMA ID" in l][:1]
    smi = [l for l in hdr + smi if not l.startswith("NIC")]
    if len(smi) != 9:
        fail(path, f"nvidia-smi topo -m: {len(smi)} lines, expected 9")
    before = text[text.find("## Test the original performance"):text.find("## Test the unlocked performance")]
    after = text[text.find("## Test the unlocked performance"):]
    meta = [("machine", "2x AMD EPYC 7542 (NPS4: 8 NUMA nodes), 16x 32GB DDR4-3200, 8x GeForce RTX "
             "4090, each GPU on its own root port of its own NUMA node (SYS between every pair, no "
             "PCIe switch)"),
            ("gpus", ",".join(["NVIDIA GeForce RTX 4090"] * 8))]
    tail = [("date", "2025-02-07"), ("source", CHLC_SRC)] + [("topo", l) for l in smi]
    runs = (("nop2p", before, "the stock NVIDIA driver (version not stated; BAR1 256 MiB, P2P "
             "connectivity matrix all 0: NVML P2P status not OK)", "not stated"),
            ("p2p", after, "tinygrad's patched open kernel modules, branch 550.90.07-p2p (BAR1 32 "
             "GiB, P2P connectivity matrix all 1)", "550.90.07 (tinygrad open-gpu-kernel-modules "
             "550.90.07-p2p)"))
    for name, block, drv_note, drv in runs:
        rows = nccl_rows(block_after(block, path, "# nThread 1 nGpus 8", end="# Avg bus bandwidth"),
                         path, "allreduce", 8, 25)
        write_coll(os.path.join(out_dir, f"rtx4090-8x-{name}-nccl-allreduce.csv"),
                   meta + [("driver", drv), ("cuda", "not stated"), ("nccl", "not stated"),
                           ("command", "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8 (nccl-tests "
                            "as the post prints it; scripts/convert-public-boxes.py)")] + tail,
                   [f"driver: {drv_note}",
                    "NCCL version and environment: not in the post (no NCCL_DEBUG output); NCCL's "
                    "defaults, collsim's default NCCL emulated",
                    "nccl-tests as printed (nThread 1 nGpus 8, warm-up 5, 20 iterations, graph 0, "
                    "float): the out-of-place time column",
                    f"topology: rtx4090-8x-nps4{'-nop2p' if name == 'nop2p' else ''}.topo"],
                   rows, "allreduce", 8)
    # p2pBandwidthLatencyTest: staged copies before, P2P writes after.
    for name, block, uni_t, bid_t, op in (
            ("nop2p", before, "Unidirectional P2P=Disabled Bandwidth Matrix",
             "Bidirectional P2P=Disabled Bandwidth Matrix", "copy-staged"),
            ("p2p", after, "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix",
             "Bidirectional P2P=Enabled Bandwidth Matrix", "copy-write")):
        uni = p2pblt_matrix(block, path, uni_t, 8)
        bid = p2pblt_matrix(block, path, bid_t, 8)
        drv = "not stated (the stock driver)" if name == "nop2p" else "550.90.07 (tinygrad 550.90.07-p2p)"
        out = Out("p2p", meta + [("driver", drv), ("cuda", "not stated"), ("nccl", "not used"),
                                 ("command", "./p2pBandwidthLatencyTest (cuda-samples; "
                                  "scripts/convert-public-boxes.py)")] + tail, [
            (f"pair rows: '{uni_t}', one case per ordered pair; bidir rows: '{bid_t}' (entry "
             "[i][j]: copies i->j and j->i at once, total only)"),
            ("op copy-staged: the stock driver has no peer access ('P2P Connectivity Matrix' all "
             "0), so cudaMemcpyPeerAsync is staged through pinned host memory" if name == "nop2p"
             else "op copy-write: the sample's P2P writes are copy-engine copies pushed by the "
             "source (peer access through the patched driver's BAR1 mapping)"),
            "bytes: the sample's 10,000,000 ints (40,000,000 B) per copy; it times 5 copies back "
            "to back and divides their bytes by the time",
            "not converted: the latency matrices, the diagonal (copies inside one GPU)" +
            ("" if name == "nop2p" else ", and the run's P2P=Disabled matrices (staged copies "
             "again, as before the patch)")])
        for i in range(8):
            for j in range(8):
                if i != j:
                    out.xfer_case("pair", [(i, j)], P2PBLT_BYTES, flow_gbps=uni[i][j], op=op)
        for i in range(8):
            for j in range(8):
                if i != j:
                    out.xfer_case("bidir", [(i, j), (j, i)], P2PBLT_BYTES, total_gbps=bid[i][j], op=op)
        out.write(os.path.join(out_dir, f"rtx4090-8x-{name}-p2p.csv"))


# ---------------------------------------------------------------------------
# 8x H100 SXM (HGX, NVSwitch), from nccl-tests issue threads as the public-code
# index mirrors them ("# [Issue #N] title", "source: URL" and the thread).

H100_META = [("gpus", ",".join(["NVIDIA H100 80GB HBM3"] * 8)), ("preset", "h100-8x-nvswitch")]
H100_PRESET_NOTE = ("topology: preset h100-8x-nvswitch (8 GPUs on NVSwitch, NVLink 4 with 18 lanes, "
                    "2 sockets, the H100 SXM's HBM3 at 3.35 TB/s; otherwise h200-8x-nvswitch: the "
                    "same GH100 GPU, NVLink 4 x18 and NVSwitch)")


def issue_src(text, path, n):
    m = re.search(r"^source: (https://github.com/NVIDIA/nccl-tests/issues/%d)$" % n, text, re.M)
    u = re.search(r"^state: .*updated: (\S+)$", text, re.M)
    if not m or not u:
        fail(path, f"not the thread of nccl-tests issue {n}")
    return f"{m.group(1)} (the thread as mirrored in the public-code index, updated {u.group(1)})"


def nccl_tests_290(path, out_dir):
    text = open(path).read()
    src = issue_src(text, path, 290)
    rows = nccl_rows(block_after(text, path, "Single node:", end="# Avg bus bandwidth"),
                     path, "allreduce", 8, 6)
    write_coll(os.path.join(out_dir, "h100-8x-node005-nccl-allreduce.csv"),
               [("machine", "8x H100 80GB HBM3 SXM (HGX, NVSwitch), host 'node005' of an "
                 "InfiniBand cluster; chassis and CPUs not stated")] + H100_META +
               [("driver", "not stated"), ("cuda", "not stated"), ("nccl", "not stated"),
                ("date", "2025-03-03"),
                ("command", "all_reduce_perf -b 128M -e 4G -f 2 -g 8 (the header's sizes; nccl-tests "
                 "as the thread prints it; scripts/convert-public-boxes.py) --env NCCL_NVLS_ENABLE=1"),
                ("source", src)],
               ["single-node table of the thread's first post (nThread 1 nGpus 8, warm-up 5, only "
                "2 iterations, float): the out-of-place time column",
                "NCCL version and environment: not printed; the maintainer's reply says this run uses "
                "NVLink SHARP (NVLS), NCCL's default on NVSwitch, so the prediction runs with "
                "NCCL_NVLS_ENABLE=1 (collsim's default is 0) and collsim's default NCCL",
                H100_PRESET_NOTE],
               rows, "allreduce", 8)


def nccl_tests_309(path, out_dir):
    text = open(path).read()
    src = issue_src(text, path, 309)
    for fact in ("Dell HGX XE9680 with 8xH100", "Driver Version: 570.133.20", "cuda 12.8",
                 "NCCL version 2.26.2+cuda12.8", "-b 8 -e 16g -f 2 -g 1"):
        if fact not in text:
            fail(path, f"'{fact}' not found")
    on = re.search(r"single host, get up to ([\d.]+) GB/s out-of-place Bus-BW", text)
    off = re.search(r"disable NVLS, i got ([\d.]+) GB/s", text)
    if not on or not off:
        fail(path, "the single-host busbw figures not found")
    size = 16 << 30
    f_bus = BUS["allreduce"](8)
    for name, busbw, env, what in (("nvls", float(on.group(1)), "NCCL_NVLS_ENABLE=1",
                                    "NCCL's default (NVLS on)"),
                                   ("nonvls", float(off.group(1)), "NCCL_NVLS_ENABLE=0",
                                    "NVLS disabled (NCCL_NVLS_ENABLE=0)")):
        algbw = busbw / f_bus
        t = size / (algbw * 1e3)
        write_coll(os.path.join(out_dir, f"h100-8x-xe9680-nccl-16g-{name}.csv"),
                   [("machine", "Dell PowerEdge XE9680: 8x H100 80GB HBM3 SXM (HGX, NVSwitch), "
                     "8x ConnectX-7")] + H100_META +
                   [("driver", "570.133.20"), ("cuda", "12.8"), ("nccl", "2.26.2"),
                    ("date", "2025-05-21" if name == "nvls" else "2025-05-23"),
                    ("command", f"all_reduce_perf_mpi -b 8 -e 16g -f 2 -g 1 on one host, 8 ranks "
                     f"(scripts/convert-public-boxes.py: the thread's figure) --env {env}"),
                    ("source", src)],
                   [f"one row: the thread's single-host peak out-of-place busbw with {what}, "
                    f"{busbw:g} GB/s; the single-host table is not printed",
                    "date: the NVLS-on figure is in the thread's first post, undated in the mirror "
                    "(its first reply, 2025-05-21, is taken); the NVLS-off figure is in a reply dated "
                    "2025-05-23",
                    "size: not stated; taken as 16 GiB, the largest size of the thread's command "
                    "(-e 16g), where an NVLS or ring allreduce's busbw peaks; time_us = size / "
                    "(busbw / (2 x 7 / 8)), float",
                    "the thread also reports NCCL's choice on one host (NCCL_DEBUG_SUBSYS=TUNING): "
                    "Ring/LL from 8 B to 1 MB, NVLS/Simple from 2 MB to 16 GB (not a table: "
                    "docs/validation.md's note compares it)",
                    H100_PRESET_NOTE],
                   [(size, size // 4, "fp32", t, algbw, busbw, 0)], "allreduce", 8)


# ---------------------------------------------------------------------------
# 2x H100 PCIe joined by NVLink bridges (NVIDIA/nccl issue #1161), from the
# thread's first post as the issue-thread corpus stores it.


def nccl_1161(path, out_dir):
    text = open(path).read()
    for fact in ("NVIDIA/nccl · issue #1161", "NVLINK connected H100 PCIe GPUs",
                 "chinthysl · description · 2024-01-27",
                 "all_reduce_perf -b 1G -e 8G -f 2 -g 2", "via P2P/direct pointer", "[23] 1/-1/-1->0->-1"):
        if fact not in text:
            fail(path, f"'{fact}' not found")
    rows = nccl_rows(block_after(text, path, "H100 PCIe\n", end="```\n\n"), path, "allreduce", None, 3)
    write_coll(os.path.join(out_dir, "h100pcie-2x-nvlink-nccl-allreduce.csv"),
               [("machine", "2x H100 PCIe joined by NVLink bridges (bus 01:00 and 21:00); host, "
                 "CPU and bridge count not stated"),
                ("gpus", "NVIDIA H100 PCIe,NVIDIA H100 PCIe"),
                ("driver", "not stated"), ("cuda", "not stated"), ("nccl", "not stated"),
                ("date", "2024-01-27"),
                ("command", "./nccl-tests/build/all_reduce_perf -b 1G -e 8G -f 2 -g 2 (as the post "
                 "prints it; scripts/convert-public-boxes.py)"),
                ("source", "https://github.com/NVIDIA/nccl/issues/1161 (first post, 2024-01-27; "
                 "the same post as NVIDIA/nccl-tests issue #194), as the issue-thread corpus "
                 "stores it")],
               ["rows: the out-of-place columns of the post's H100 PCIe table, 1, 2 and 4 GiB "
                "(the stored excerpt ends inside the 8 GiB row, which is left out); float",
                "the post's NCCL log: P2P/direct pointer between the two GPUs, 24 channels (Trees [0] "
                "to [23]); NCCL version and environment not shown (NCCL's defaults; collsim's "
                "default NCCL emulated); the P2P line's format (bus id in hex) is that of NCCL "
                "2.14-2.18.1",
                "topology: h100pcie-2x-nvlink.topo, written by hand (the post prints no nvidia-smi "
                "topo -m): NV18 between the GPUs (24 channels under NCCL 2.16-2.18.1; NV12 under "
                "2.14-2.15 gives the same), each on its own Gen5 root port"],
               rows, "allreduce", 2)


# ---------------------------------------------------------------------------
# 8x RTX 5090 (+ an RTX PRO 6000) on 2x EPYC 9575F with a P2P-enabled driver
# fork: the sample outputs of its README.

AIKITORIA_SRC = ("https://github.com/aikitoria/open-gpu-kernel-modules README.md (commit "
                 "08dc34555bf8cdacdd89237da42419e6ce5efdc4)")


def aikitoria_5090(path, out_dir):
    text = open(path).read()
    for fact in ("1x RTX PRO 6000 Blackwell + 8x RTX 5090", "dual-socket AMD EPYC 9575F",
                 "CUDA_VISIBLE_DEVICES=1,2,3,4,5,6,7,8 NCCL_P2P_LEVEL=SYS ./build/all_reduce_perf "
                 "-b 8 -e 128M -f 2 -g 8", "nccl-headers=22907 nccl-library=22907"):
        if fact not in text:
            fail(path, f"'{fact}' not found")
    head = text.split("# NVIDIA driver ", 2)[1].split(" with P2P", 1)[0]
    meta = [("machine", "2x AMD EPYC 9575F (Turin), 8x GeForce RTX 5090 (and an RTX PRO 6000 "
             "Blackwell Workstation, device 0 of the p2p sample, hidden from the NCCL run), each GPU "
             "on its own root port (topology not printed: rtx5090-8x-2s.topo)"),
            ("gpus", ",".join(["NVIDIA GeForce RTX 5090"] * 8)),
            ("driver", f"the README's P2P fork (README title: driver {head}; the nccl-tests run's "
             "driver is not printed)"), ("cuda", "not stated")]
    tail = [("date", "not stated"), ("source", AIKITORIA_SRC)]
    rows = nccl_rows(block_after(text, path, "# Collective test starting: all_reduce_perf",
                                 end="\n```"), path, "allreduce", 8, 25)
    write_coll(os.path.join(out_dir, "rtx5090-8x-nccl-allreduce.csv"),
               meta + [("nccl", "2.29.7"),
                       ("command", "CUDA_VISIBLE_DEVICES=1,2,3,4,5,6,7,8 NCCL_P2P_LEVEL=SYS "
                        "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8 (as the README prints it; "
                        "scripts/convert-public-boxes.py) --env NCCL_P2P_LEVEL=SYS")] + tail,
               ["NCCL version: nccl-tests' header line 'nccl-library=22907' (NCCL 2.29.7); "
                "NCCL_P2P_LEVEL=SYS as the command sets it, otherwise NCCL's defaults",
                "nccl-tests 2.18.2 as printed (nThread 1 nGpus 8, warm-up 1, 20 iterations, graph "
                "0, float): the out-of-place time column",
                "GPUs: CUDA devices 1-8 of the host (the 8 RTX 5090s) are the run's 0-7"],
               rows, "allreduce", 8)
    uni = p2pblt_matrix(text, path, "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix", 9)
    bid = p2pblt_matrix(text, path, "Bidirectional P2P=Enabled Bandwidth Matrix", 9)
    suni = p2pblt_matrix(text, path, "Unidirectional P2P=Disabled Bandwidth Matrix", 9)
    sbid = p2pblt_matrix(text, path, "Bidirectional P2P=Disabled Bandwidth Matrix", 9)
    for name, u, b, op, what in (("p2p", uni, bid, "copy-write", "'Unidirectional P2P=Enabled "
                                  "Bandwidth (P2P Writes) Matrix' and 'Bidirectional P2P=Enabled'"),
                                 ("staged", suni, sbid, "copy-staged", "'Unidirectional P2P=Disabled' "
                                  "and 'Bidirectional P2P=Disabled' (the sample disables peer "
                                  "access, so the driver stages each copy through host memory)")):
        out = Out("p2p", meta + [("nccl", "not used"),
                                 ("command", "./p2pBandwidthLatencyTest (cuda-samples; "
                                  "scripts/convert-public-boxes.py)")] + tail, [
            f"rows: {what}; pair rows one case per ordered pair, bidir rows entry [i][j] (copies "
            "i->j and j->i at once, total only)",
            "GPUs: the sample's devices 1-8 (the RTX 5090s) written as 0-7; device 0 (the RTX PRO "
            "6000) left out",
            "bytes: the sample's 10,000,000 ints (40,000,000 B) per copy; it times 5 copies back "
            "to back and divides their bytes by the time",
            ("latency rows: the 'P2P=Enabled Latency (P2P Writes) Matrix' (GPU part): the sample "
             "queues 100 cudaMemcpyPeerAsync of one int4 back to back in one stream and divides "
             "the GPU time by 100, the time per copy of a stream of copy-engine pushes: op "
             "copy-write with pattern latency (docs/formats.md), 4 B, as "
             "rtxpro6000-1s-flat-latency.csv takes it" if name == "p2p" else
             "not converted: the latency matrices")])
        for i in range(8):
            for j in range(8):
                if i != j:
                    out.xfer_case("pair", [(i, j)], P2PBLT_BYTES, flow_gbps=u[i + 1][j + 1], op=op)
        for i in range(8):
            for j in range(8):
                if i != j:
                    out.xfer_case("bidir", [(i, j), (j, i)], P2PBLT_BYTES, total_gbps=b[i + 1][j + 1],
                                  op=op)
        if name == "p2p":
            # The P2P=Enabled latency matrix (GPU part): back-to-back copies, time per copy, as
            # the project's other p2pBandwidthLatencyTest latency files take it.
            lat = p2pblt_matrix(text, path, "P2P=Enabled Latency (P2P Writes) Matrix", 9)
            for i in range(8):
                for j in range(8):
                    if i != j:
                        out.xfer_case("latency", [(i, j)], 4, time_us=lat[i + 1][j + 1],
                                      latency_op="copy-write")
        out.write(os.path.join(out_dir, f"rtx5090-8x-{name}.csv"))


BOXES = {"autodl-2080ti": autodl_2080ti, "chlc-4090": chlc_4090,
         "nccl-tests-290": nccl_tests_290, "nccl-tests-309": nccl_tests_309,
         "nccl-1161": nccl_1161, "aikitoria-5090": aikitoria_5090}


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__.split("\n\n")[1])
    out_dir = argv[1]
    for a in argv[2:]:
        box, path = a.split("=", 1)
        if box not in BOXES:
            sys.exit(f"unknown box '{box}' (known: {', '.join(sorted(BOXES))})")
        BOXES[box](path, out_dir)


if __name__ == "__main__":
    main(sys.argv)
