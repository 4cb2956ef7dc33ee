#!/usr/bin/env python3
"""Convert the published point-to-point measurements of two 8x RTX PRO 6000
machines (the text files of the shared calibration data, each naming its
source) into collsim's measurement format (docs/formats.md, "Measurements").

usage: scripts/convert-public.py SRC_DIR OUT_DIR
  SRC_DIR holds rtxpro6000-8x-broadcom-2socket.txt and
  rtxpro6000-8x-cpayne-1socket.txt; OUT_DIR receives the .csv files.

Every bandwidth and latency is kept exactly as published. What the sources
do not state (transfer sizes, the GPUs of some concurrent cases) is written
as a documented assumption in each file's `note` metadata lines. Tables are
parsed from the text, so a changed source fails loudly instead of being
silently misread."""
import os
import re
import sys

MIB256 = 256 << 20   # bytes per flow where the source does not give a size


def fail(path, msg):
    sys.exit(f"{path}: {msg}")


def section(text, path, title):
    """Text after the line containing title up to the next '=====' line."""
    i = text.find(title)
    if i < 0:
        fail(path, f"section '{title}' not found")
    rest = text[i + len(title):]
    j = rest.find("\n=====")
    return rest if j < 0 else rest[:j]


def matrix(block, path, n, first=0, skip_cols=1):
    """Rows 'GPUi: v v ...' or 'i v v ...'; '-' or '—' on the diagonal."""
    rows = {}
    for line in block.splitlines():
        m = re.match(r"\s*(?:GPU\s*)?(\d+):?\s+(.*)$", line)
        if not m:
            continue
        cells = m.group(2).split()
        if len(cells) != n or not all(re.fullmatch(r"[\d.]+|-|—", c) for c in cells):
            continue
        i = int(m.group(1))
        if i < first or i >= first + n:
            continue
        vals = []
        for c in cells:
            vals.append(None if c in ("-", "—") else float(c))
        rows[i - first] = vals
    if len(rows) != n:
        fail(path, f"expected a {n}x{n} matrix, found {len(rows)} rows")
    return [rows[i] for i in range(n)]


class Out:
    def __init__(self, kind, meta, notes):
        self.kind, self.meta, self.notes, self.rows = kind, meta, notes, []
        self.case = 0

    def xfer_case(self, pattern, flows, bytes_each, total_gbps=None, flow_gbps=None,
                  time_us=None, op="copy-write"):
        """One case: flows [(src, dst)]; published per-flow bandwidth, total
        bandwidth or (latency) one-way time. Bandwidth rows come from copy
        engines (cudaMemcpyPeer, torch copy_): op copy-write, or copy-read for
        the read rows; latency rows are a flag store: op write."""
        c = self.case
        self.case += 1
        if time_us is not None:
            op = "write"
        for k, (s, d) in enumerate(flows):
            if time_us is not None:
                t = time_us
                bw = bytes_each / (t * 1e3)
                self.rows.append((c, pattern, op, k, s, d, bytes_each, f"{t:g}",
                                  f"{bw:.6f}"))
            elif flow_gbps is not None:
                t = bytes_each / (flow_gbps * 1e3)
                self.rows.append((c, pattern, op, k, s, d, bytes_each, f"{t:.3f}",
                                  f"{flow_gbps:g}"))
            else:
                self.rows.append((c, pattern, op, k, s, d, bytes_each, "nan", "nan"))
        if total_gbps is not None:
            tot = bytes_each * len(flows)
            t = tot / (total_gbps * 1e3)
            self.rows.append((c, pattern, op, -1, "*", "*", tot, f"{t:.3f}",
                              f"{total_gbps:g}"))

    def write(self, path):
        with open(path + ".tmp", "w") as f:
            f.write("# format: collsim-meas 1\n")
            f.write(f"# kind: {self.kind}\n")
            for k, v in self.meta:
                f.write(f"# {k}: {v}\n")
            for n in self.notes:
                f.write(f"# note: {n}\n")
            f.write("case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n")
            for r in self.rows:
                f.write(",".join(str(x) for x in r) + "\n")
        os.replace(path + ".tmp", path)


def topo_lines(block):
    return [l.rstrip() for l in block.splitlines()
            if re.match(r"\s*(GPU\d|\s+GPU0)", l) and "$" not in l]


def broadcom(path, out_dir):
    text = open(path).read()
    src = "https://github.com/local-inference-lab/rtx6kpro hardware/asus-esc8000a-e13p-broadcom-switches.md"
    meta = [("machine", "ASUS ESC8000A-E13P: 2x EPYC 9575F, 2x Broadcom PEX890xx (2 virtual "
             "switches each), 8x RTX PRO 6000 Blackwell Server"),
            ("gpus", ",".join(["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8)),
            ("driver", "not stated"), ("cuda", "not stated"), ("nccl", "not stated"),
            ("date", "2026-03-20"),
            ("command", "scripts/convert-public.py (from the community wiki's tables; tools "
             "p2pBandwidthLatencyTest, p2pmark and a custom copy benchmark)"),
            ("source", src)]
    smi = topo_lines(section(text, path, "nvidia-smi topo -m (verbatim)"))
    if len(smi) != 9:
        fail(path, f"nvidia-smi matrix: {len(smi)} lines, expected 9")
    meta += [("topo", l) for l in smi]
    meta.append(("preset", "rtxpro6000-8x-pcie5-2s"))

    # p2p: unidirectional writes, bidirectional pairs, latency ranges.
    p2p = Out("p2p", meta, [
        "pair rows: the 'Full 8x8 Unidirectional Bandwidth Matrix', one case per pair "
        "(the bidirectional matrix is in rtxpro6000-2s-bidir.csv); latency rows: the source "
        "gives ranges by path class "
        "(same NUMA 0.71-0.74 us, cross NUMA 1.27-1.36 us), written as both range ends for "
        "a PIX pair (0->1), a same-chip cross-VS pair (0->2) and a cross-socket pair (0->4)",
        "bytes: transfer sizes are not published; 256 MiB per flow is assumed (bandwidth-"
        "bound), time_us = bytes / bw",
        "op: p2pBandwidthLatencyTest's P2P writes are copy-engine copies pushed by the source: "
        "op copy-write; latency rows (a flag store): op write",
        "not converted: the ACS on/off table (ACS on is another configuration), the link "
        "map summary (derived from the matrices) and the CPU memcpy xGMI figures (host "
        "copies, not GPU transfers)"])
    uni = matrix(section(text, path, "Full 8×8 Unidirectional Bandwidth Matrix"), path, 8)
    for i in range(8):
        for j in range(8):
            if i != j:
                p2p.xfer_case("pair", [(i, j)], MIB256, flow_gbps=uni[i][j])
    bidir = Out("p2p", meta, [
        "bidir rows: the p2pBandwidthLatencyTest bidirectional matrix (P2P=Enabled, ACS "
        "disabled); entry [i][j] is one case of the two flows i->j and j->i, total only",
        "bytes: transfer sizes are not published; 256 MiB per flow is assumed (bandwidth-"
        "bound), time_us = bytes / bw",
        "op: p2pBandwidthLatencyTest's P2P writes are copy-engine copies pushed by the source: "
        "op copy-write"])
    bid = matrix(section(text, path, "Bidirectional P2P=Enabled Bandwidth Matrix"), path, 8)
    for i in range(8):
        for j in range(8):
            if i != j:
                bidir.xfer_case("bidir", [(i, j), (j, i)], MIB256, total_gbps=bid[i][j])
    bidir.write(os.path.join(out_dir, "rtxpro6000-2s-bidir.csv"))
    lat = section(text, path, "### P2P Latency (microseconds)")
    ranges = {}
    for name, key in (("Same NUMA", "same"), ("Cross NUMA", "cross")):
        m = re.search(re.escape(name) + r"[^|]*\|\s*([\d.]+)\s*[–-]\s*([\d.]+)", lat)
        if not m:
            fail(path, f"latency row '{name}' not found")
        ranges[key] = (float(m.group(1)), float(m.group(2)))
    for pair, key in (((0, 1), "same"), ((0, 2), "same"), ((0, 4), "cross")):
        for t in ranges[key]:
            p2p.xfer_case("latency", [pair], 4, time_us=t)
    p2p.write(os.path.join(out_dir, "rtxpro6000-2s-p2p.csv"))

    # flows: the concurrent-flow tables, one case per row, total bandwidth.
    fl = Out("flows", meta, [
        "op: the source attributes the collapse in these tables to posted writes ('posted-write "
        "arbitration collapse ... when 2 GPUs on one VS write') made by a copy benchmark "
        "(torch copy_ on the source's stream): op copy-write",
        "one case per table row of 'Same-Chip Scaling', 'Cross-Chip Scaling' and 'GPU DS "
        "Port Is the Bandwidth Limit'; only totals are written (per-flow columns are "
        "total / flows). Flows as the rows name them; 'both pairs bidir' = 0<->1 and "
        "2<->3; '4-GPU all-to-all' = GPUs 0-3 (one chip); '1:1 mapping all pairs' = i -> "
        "i+4 for i = 0..3; 'All A->B' = every GPU 0-3 to every GPU 4-7",
        "bytes: not published; 256 MiB per flow assumed (the source reports the collapse "
        "independent of size, 4 MB - 1 GB)",
        "not converted: '4 flows, all different GPU' (206.8 GB/s) and '4 flows, all from "
        "GPU0' (47.6 GB/s): the source does not say which GPUs"])
    same = section(text, path, "### Same-Chip Scaling")
    cross = section(text, path, "### Cross-Chip Scaling")
    ds = section(text, path, "### GPU DS Port Is the Bandwidth Limit")

    def total(block, label):
        for line in block.splitlines():
            cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and label in line:
                for c in cells[1:]:
                    m = re.match(r"([\d.]+)\s*GB/s", c)
                    if m:
                        return float(m.group(1))
        fail(path, f"row '{label}' not found")

    a2b = [(i, j) for i in range(4) for j in range(4, 8)]
    one2one = [(i, i + 4) for i in range(4)]
    cases = [
        (same, "| GPU0→GPU1 |", "pair", [(0, 1)]),
        (same, "GPU0→GPU1 + GPU2→GPU3", "pair", [(0, 1), (2, 3)]),
        (same, "Both pairs bidir", "bidir", [(0, 1), (1, 0), (2, 3), (3, 2)]),
        (same, "4-GPU all-to-all", "all-to-all",
         [(i, j) for i in range(4) for j in range(4) if i != j]),
        (cross, "| GPU0→GPU4 |", "pair", [(0, 4)]),
        (cross, "Different uplinks", "pair", [(0, 4), (2, 6)]),
        (cross, "Same uplink, diff targets", "same-uplink", [(0, 4), (1, 6)]),
        (cross, "1:1 mapping all pairs", "pair", one2one),
        (cross, "All pairs bidir", "bidir", one2one + [(j, i) for i, j in one2one]),
        (cross, "All A→B", "all-to-all", a2b),
        (ds, "2 flows from SAME GPU", "same-source", [(0, 4), (0, 2)]),
        (ds, "2 flows from DIFFERENT GPU", "pair", [(0, 4), (1, 2)]),
    ]
    for block, label, pattern, flows in cases:
        fl.xfer_case(pattern, flows, MIB256, total_gbps=total(block, label))
    fl.write(os.path.join(out_dir, "rtxpro6000-2s-flows.csv"))

    # Posted writes against non-posted reads under the same patterns: the
    # source's collapse table (not in the calibration text file; quoted in
    # shared/reference/facts.md 3.6), with its Python test (torch copy_ of
    # 256 MiB on the source's stream for writes, on the reader's for reads).
    rw = Out("flows", meta, [
        "source table: 'Posted Writes vs Non-Posted Reads - Collapse Test' and 'What Does NOT "
        "Trigger Collapse' of the same wiki page (facts.md 3.6 quotes it)",
        "op: copy-write rows are copies pushed by the source's copy engine (posted writes), "
        "copy-read rows copies pulled by the reader's (non-posted reads); flows are written "
        "src>dst in the direction the data moves, so a read row 4>0 is GPU0 reading GPU4",
        "'16 flows cross-chip' = every GPU 0-3 with every GPU 4-7; '56 flows all-to-all' = "
        "every ordered pair; '4 flows collapse: GPU0,1->GPU4,5,6,7' = 0->4, 0->5, 1->6, 1->7, the "
        "pairs of the same wiki's hardware/collapse-report.md ('(0,4)+(0,5)+(1,6)+(1,7)')",
        "bytes: 256 MiB per flow (the source's test)"])
    a2b = [(i, j) for i in range(4) for j in range(4, 8)]
    every = [(i, j) for i in range(8) for j in range(8) if i != j]
    rows = [
        ("pair", [(0, 4)], 36.8, 40.1),
        ("pair", [(0, 4), (2, 6)], 76.4, 44.8),
        ("same-uplink", [(0, 4), (1, 6)], 2.7, 51.1),
        ("same-uplink", [(0, 4), (0, 5), (1, 6), (1, 7)], 2.7, 51.3),
        ("all-to-all", a2b, 7.7, 9.0),
        ("all-to-all", every, 36.5, 53.9),
    ]
    for pattern, flows, w, r in rows:
        rw.xfer_case(pattern, flows, MIB256, total_gbps=w, op="copy-write")
        rd = [(d, s_) for s_, d in flows]  # the data moves from the read GPU to the reader
        rw.xfer_case(pattern, rd, MIB256, total_gbps=r, op="copy-read")
    for pattern, flows, w in (("same-source", [(0, 4), (0, 6)], 36.6),
                              ("same-uplink", [(0, 4), (1, 5)], 40.3),
                              ("pair", [(4, 0), (6, 1)], 51.2)):
        rw.xfer_case(pattern, flows, MIB256, total_gbps=w, op="copy-write")
    rw.write(os.path.join(out_dir, "rtxpro6000-2s-rw-flows.csv"))

    # Collective outcomes of the same box, for validation only (never fitted):
    # the page's "AllReduce: Custom vs NCCL" tables (p2pmark: its
    # pcie_allreduce_kernel, a one-shot pull with a start barrier, replayed in
    # a CUDA graph; NCCL eager, default environment as far as the page says).
    for ranks, rows in ((4, [(256, 6.2, 14.1), (32768, 10.1, 15.4), (524288, 51.3, 72.0),
                             (1048576, 95.8, 86.5), (33554432, 2884, 1628)]),
                        (8, [(256, 8.3, 27.1), (4096, 30.6, 57.2), (8192, 64.3, 57.6),
                             (65536, 503.9, 67.8), (33554432, 333806, 2715)])):
        path_out = os.path.join(out_dir, f"rtxpro6000-2s-allreduce-{ranks}gpu.csv")
        with open(path_out + ".tmp", "w") as f:
            f.write("# format: collsim-meas 1\n# kind: coll\n")
            for k, v in meta:
                if k != "topo":
                    f.write(f"# {k}: {v}\n")
            f.write(f"# collective: allreduce\n# ranks: {ranks}\n")
            f.write(f"# note: the source's table 'AllReduce: Custom vs NCCL ({ranks} GPU, fp16)'; "
                    "custom = p2pmark's pcie_allreduce_kernel (one-shot pull, start barrier only, "
                    "one allreduce per CUDA graph launch), NCCL = ncclAllReduce eager with the "
                    "environment the page does not state (taken as NCCL's default); "
                    f"GPUs 0-{ranks - 1}; collective outcomes: validation only\n")
            f.write("size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                    "impl,graph,wrong\n")
            for size, custom, nccl in rows:
                for algo, t, impl, graph in (("oneshot", custom, "oneshot", 1),
                                             ("auto", nccl, "nccl", 0)):
                    alg = size / (t * 1e3)
                    bus = alg * 2 * (ranks - 1) / ranks
                    f.write(f"{size},{size // 2},fp16,{algo},{'-' if algo == 'oneshot' else 'auto'},"
                            f"0,{t:g},{alg:.4f},{bus:.4f},{impl},{graph},0\n")
        os.replace(path_out + ".tmp", path_out)


def cpayne(path, out_dir):
    text = open(path).read()
    src = ("https://github.com/local-inference-lab/rtx6kpro "
           "hardware/wrx90-cpayne-8gpu-root-topology-comparison.md")
    for group, first, name in (("A", 0, "rtxpro6000-1s"), ("B", 8, "rtxpro6000-1s-groupB")):
        meta = [("machine", f"ASRock WRX90 WS EVO, TR PRO 7955WX, c-payne Gen5 switches, "
                 f"group {group} (GPUs {first}-{first + 7} of the rig, written as 0-7)"),
                ("gpus", ",".join(["NVIDIA RTX PRO 6000 Blackwell"] * 8)),
                ("driver", "595.58.03"), ("cuda", "not stated"), ("nccl", "not stated"),
                ("date", "2026-04-28"),
                ("command", "scripts/convert-public.py (from the community wiki's tables; "
                 "torch copy_ 256 MB for bandwidth, GPU-resident flag ping-pong for latency)"),
                ("source", src)]
        if group == "A":
            meta.append(("preset", "rtxpro6000-8x-pcie5-1s"))
            desc = ("two switches on separate root complexes (00, 40), "
                    "an inter-quadrant hop between them")
        else:
            desc = "two switches sharing root complex e0 (no preset of its own)"
        common = [f"group {group}: {desc}; GPU numbers are the group's, 0-7",
                  "op: the source calls the matrices 'P2P write bandwidth' (torch copy_, a "
                  "copy engine pushing: op copy-write) and the latency a 4-byte flag written "
                  "by one GPU and polled by the other: op write"]
        p2p = Out("p2p", meta, common + [
            "pair rows: the P2P write bandwidth matrix (256 MB per copy as stated, written "
            "as 256 MiB); latency rows: the one-way latency table, each run a case"])
        title = "**Group A (separate roots, GPU 0–7):**" if group == "A" else \
            "**Group B (shared root, GPU 8–15):**"
        blk = section(text, path, title)
        blk = blk.split("**Group")[0]
        uni = matrix(blk, path, 8, first=first)
        for i in range(8):
            for j in range(8):
                if i != j:
                    p2p.xfer_case("pair", [(i, j)], MIB256, flow_gbps=uni[i][j])
        lat = section(text, path, "2b. GPU-resident one-way HW latency")
        for line in lat.splitlines():
            m = re.match(r"\|\s*GPU\s*(\d+)\s*↔\s*GPU\s*(\d+)\s*(?:\([^)]*\))?\s*\|(.*)$", line)
            if not m:
                continue
            a, b = int(m.group(1)), int(m.group(2))
            if not (first <= a < first + 8 and first <= b < first + 8):
                continue
            cells = [c.strip().strip("*").replace("ns", "").strip()
                     for c in m.group(3).strip().strip("|").split("|")]
            runs = cells[:3] if len(cells) >= 4 else cells[:1]
            for r in runs:
                p2p.xfer_case("latency", [(a - first, b - first)], 4,
                              time_us=float(r) / 1000)
        p2p.write(os.path.join(out_dir, f"{name}-p2p.csv"))

        fl = Out("flows", meta, common + [
            "cases: '2 pairs SW_a -> SW_b' = 0->4, 1->5; '4 pairs' = i -> i+4 for i = 0..3; "
            "'Bidirectional, 2 pairs' = 0->4 and 5->1; 'All-to-all' = all 56 ordered pairs. "
            "The source does not name the GPUs within a switch; the model treats the GPUs "
            "of one switch alike",
            "bytes: 256 MiB per flow assumed (not stated for these tables)"])
        col = 1 if group == "A" else 2

        def row(block, label):
            for line in block.splitlines():
                if label in line:
                    cells = [c.strip() for c in line.strip().strip("|").split("|")]
                    m = re.match(r"([\d.]+)\s*GB/s", cells[col])
                    if m:
                        return float(m.group(1))
            fail(path, f"row '{label}' not found")

        conc = section(text, path, "### 3. Concurrent Multi-Pair Bandwidth")
        bid = section(text, path, "### 4. Bidirectional Cross-Switch")
        a2a = section(text, path, "### 5. All-to-All Stress")
        fl.xfer_case("pair", [(0, 4), (1, 5)], MIB256, total_gbps=row(conc, "2 pairs"))
        fl.xfer_case("pair", [(i, i + 4) for i in range(4)], MIB256,
                     total_gbps=row(conc, "4 pairs"))
        fl.xfer_case("bidir", [(0, 4), (5, 1)], MIB256, total_gbps=row(bid, "Bidirectional"))
        fl.xfer_case("all-to-all", [(i, j) for i in range(8) for j in range(8) if i != j],
                     MIB256, total_gbps=row(a2a, "Aggregate bandwidth"))
        fl.write(os.path.join(out_dir, f"{name}-flows.csv"))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    src, out = sys.argv[1], sys.argv[2]
    broadcom(os.path.join(src, "rtxpro6000-8x-broadcom-2socket.txt"), out)
    cpayne(os.path.join(src, "rtxpro6000-8x-cpayne-1socket.txt"), out)


if __name__ == "__main__":
    main()
