#!/usr/bin/env python3
"""Convert the published point-to-point measurements of two 8x RTX PRO 6000
machines (the text files of the shared calibration data, each naming its
source) into collsim's measurement format (docs/formats.md, "Measurements").

usage: scripts/convert-public.py SRC_DIR OUT_DIR [WIKI_DIR]
  SRC_DIR holds rtxpro6000-8x-broadcom-2socket.txt and
  rtxpro6000-8x-cpayne-1socket.txt; OUT_DIR receives the .csv files.
  WIKI_DIR, when given, is a checkout of the wiki github.com/sjug/rtx6kpro
  at commit 738985bb6e99b73413c18ece14798432efce148a (WIKI_COMMIT below);
  the tables of its pages (hardware/..., optimization/...) are converted
  too. Nothing of the wiki is kept in this repository but these numbers.

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
                  time_us=None, op="copy-write", latency_op="write"):
        """One case: flows [(src, dst)]; published per-flow bandwidth, total
        bandwidth or (latency) one-way time. Bandwidth rows come from copy
        engines (cudaMemcpyPeer, torch copy_): op copy-write, or copy-read for
        the read rows; latency rows are a flag store: op write, or, for
        p2pBandwidthLatencyTest's matrix (back-to-back copies in a stream, time
        per copy), latency_op copy-write."""
        c = self.case
        self.case += 1
        if time_us is not None:
            op = latency_op
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



# --- The community wiki's own pages ------------------------------------------
#
# Read from a checkout of WIKI_REPO at WIKI_COMMIT (the pages are not
# committed here, only the numbers converted from them). Every table is
# found by its heading and its row labels; a page that changed fails loudly.
# The pages do not date their measurements: each file's `date` is the day
# its table first appears in the wiki's history (git log -S).

WIKI_REPO = "https://github.com/sjug/rtx6kpro"
WIKI_COMMIT = "738985bb6e99b73413c18ece14798432efce148a"
MIB64 = 64 << 20     # p2pmark 3c39f36's TRANSFER_SIZE (64 MB = 64 MiB)
P2PMARK_NEW = 160000000   # p2pmark after 78d9dfd: TRANSFER_SIZE 160,000,000 B
GRAPH_XML = "rtxpro6000-2s-nccl-graph.xml"   # the graph file written from the page's header


def wiki_src(page):
    return f"{WIKI_REPO} {page} (commit {WIKI_COMMIT})"


def md_section(text, path, heading):
    """The lines after the heading line that contains `heading`, up to the
    next heading of the same or a higher level (code blocks skipped)."""
    lines = text.splitlines()
    start = level = None
    fence = False
    for i, l in enumerate(lines):
        if l.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        m = re.match(r"(#+)\s", l)
        if start is None:
            if m and heading in l:
                start, level = i + 1, len(m.group(1))
        elif m and len(m.group(1)) <= level:
            return "\n".join(lines[start:i])
    if start is None:
        fail(path, f"heading '{heading}' not found")
    return "\n".join(lines[start:])


def md_tables(block):
    """Markdown tables of a block: lists of rows of cells, the header row
    first, the |---| line dropped; ** and ` removed from cells."""
    tables, cur = [], []
    for l in block.splitlines():
        if l.strip().startswith("|"):
            cells = [c.strip().replace("**", "").replace("`", "").strip()
                     for c in l.strip().strip("|").split("|")]
            if all(re.fullmatch(r":?-+:?", c) for c in cells):
                continue
            cur.append(cells)
        elif cur:
            tables.append(cur)
            cur = []
    if cur:
        tables.append(cur)
    return tables


def md_table(block, path, first_header):
    """The table whose first header cell is first_header."""
    for t in md_tables(block):
        if t and t[0] and t[0][0] == first_header:
            return t
    fail(path, f"table with header '{first_header}' not found")


def md_row(table, path, label):
    """The row whose first cell starts with label."""
    for r in table[1:]:
        if r[0].startswith(label):
            return r
    fail(path, f"row '{label}' not found")


def num(cell, path):
    m = re.search(r"[-+]?\d[\d,]*(?:\.\d+)?", cell)
    if not m:
        fail(path, f"no number in '{cell}'")
    return float(m.group(0).replace(",", ""))


def size_of(cell, path):
    """'4 KB', '1 MB', '256 B', '1024 KB', '32M' -> bytes (powers of 2, as the
    tools that printed them count)."""
    m = re.fullmatch(r"([\d.]+)\s*(B|K|KB|M|MB|G|GB)", cell.strip())
    if not m:
        fail(path, f"not a size: '{cell}'")
    mult = {"B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
            "G": 1 << 30, "GB": 1 << 30}[m.group(2)]
    return int(float(m.group(1)) * mult)


def write_coll(path, meta, notes, collective, ranks, rows):
    """A coll file: rows (size, dtype, algo, proto, time_us, impl, graph);
    busbw as nccl-tests computes it for the collective."""
    factor = {"allreduce": 2.0 * (ranks - 1) / ranks}[collective]
    with open(path + ".tmp", "w") as f:
        f.write("# format: collsim-meas 1\n# kind: coll\n")
        for k, v in meta:
            f.write(f"# {k}: {v}\n")
        f.write(f"# collective: {collective}\n# ranks: {ranks}\n")
        for n in notes:
            f.write(f"# note: {n}\n")
        f.write("size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,"
                "impl,graph,wrong\n")
        esize = {"fp16": 2, "bf16": 2, "fp32": 4}
        for size, dtype, algo, proto, t, impl, graph in rows:
            alg = size / (t * 1e3)
            f.write(f"{size},{size // esize[dtype]},{dtype},{algo},{proto},0,{t:.6g},"
                    f"{alg:.4f},{alg * factor:.4f},{impl},{graph},0\n")
    os.replace(path + ".tmp", path)


def read_page(wiki, page):
    path = os.path.join(wiki, page)
    try:
        return open(path, encoding="utf-8").read(), path
    except OSError as ex:
        sys.exit(f"{path}: {ex.strerror} (WIKI_DIR must be a checkout of {WIKI_REPO} "
                 f"at {WIKI_COMMIT})")


def smi_lines(block):
    """nvidia-smi topo -m rows of a code block (header and GPU rows)."""
    out = [l.rstrip() for l in block.splitlines()
           if re.match(r"\s+GPU0\s", l) or re.match(r"GPU\d\s", l)]
    return out


def cpayne_groups(wiki, out_dir):
    """hardware/wrx90-cpayne-8gpu-root-topology-comparison.md: NCCL ring
    tables and host DMA of group A (GPUs 0-7, preset rtxpro6000-8x-pcie5-1s)
    and group B (GPUs 8-15 written as 0-7, topology file
    rtxpro6000-1s-groupB.topo: both switches under root complex e0)."""
    page = "hardware/wrx90-cpayne-8gpu-root-topology-comparison.md"
    text, path = read_page(wiki, page)
    big = md_table(md_section(text, path, "6. NCCL Ring All-Reduce"), path, "Size")
    small = md_table(md_section(text, path, "7. NCCL Ring All-Reduce"), path, "Size")
    single = md_table(md_section(text, path, "8. Host RAM"), path, "GPU")
    conc = md_table(md_section(text, path, "8. Host RAM"), path, "Direction")
    for group, col, name, gpus, where in (
            ("A", 1, "rtxpro6000-1s", (0, 4), ("preset", "rtxpro6000-8x-pcie5-1s")),
            ("B", 2, "rtxpro6000-1s-groupB", (8, 12), None)):
        if small[0][col] != f"Group {group} time" or big[0][col] != f"Group {group} algbw":
            fail(path, f"group {group}'s NCCL columns not where expected")
        first = 0 if group == "A" else 8
        meta = [("machine", "ASRock WRX90 WS EVO, TR PRO 7955WX, 4 c-payne Gen5 switches (16 GPUs); "
                 + ("group A = GPUs 0-7 on 2 switches under roots 00 and 40" if group == "A" else
                    "group B = GPUs 8-15 (written as 0-7) on 2 switches under one root complex e0")),
                ("gpus", ",".join(["NVIDIA RTX PRO 6000 Blackwell"] * 8)),
                ("driver", "595.58.03"), ("cuda", "not stated"), ("nccl", "2.27.5"),
                ("date", "2026-04-26"),
                ("command", "scripts/convert-public.py (the wiki's table; ran as torch.distributed "
                 "all_reduce with NCCL_P2P_LEVEL=SYS) --env NCCL_P2P_LEVEL=SYS"),
                ("source", wiki_src(page))]
        if where:
            meta.append(where)
        common = [
            "the page's 'NCCL allreduce (ring)': PyTorch torch.distributed with NCCL 2.27.5+cuda12.9, "
            "'ring algorithm forced (NCCL_P2P_LEVEL=SYS)': only NCCL_P2P_LEVEL=SYS is named, so algo "
            "is NCCL's own choice (auto) under that setting; eager dist.all_reduce calls (graph 0)",
            f"dtype: not stated; float32 assumed (torch's default); group {group}'s column"
            + ("" if group == "A" else "; GPUs 8-15 of the rig written as 0-7 (topology "
               "validate/data/public/rtxpro6000-1s-groupB.topo)")]
        rows = []
        for r in big[1:]:
            size = size_of(r[0], path)
            rows.append((size, "fp32", "auto", "auto", size / (num(r[col], path) * 1e3), "nccl", 0))
        write_coll(os.path.join(out_dir, f"{name}-nccl-ring-large.csv"), meta, common + [
            f"rows: the table of section 6 (1 MB - 1 GB), 'Group {group} algbw' column; time_us = "
            "bytes / algbw (sizes as powers of 2: 1 MB = 2^20 B, which the 1024 KB row of section 7 "
            "confirms)"], "allreduce", 8, rows)
        rows = [(size_of(r[0], path), "fp32", "auto", "auto", num(r[col], path), "nccl", 0)
                for r in small[1:]]
        write_coll(os.path.join(out_dir, f"{name}-nccl-ring-small.csv"), meta, common + [
            f"rows: the table of section 7 (4 KB - 4 MB), 'Group {group} time' column, a separate "
            "run from section 6 (their 1 MB rows differ)"], "allreduce", 8, rows)

        # Host DMA: single GPU (two of the group's) and all 8 at once.
        cmd = ("scripts/convert-public.py (the wiki's table; cudaMemcpyAsync of 1 GB to/from a "
               "per-GPU pinned host buffer, 5 iterations)")
        hm = [(k, "not used" if k == "nccl" else cmd if k == "command" else v) for k, v in meta]
        host = Out("host", hm, [
            "the page's section 8 'Host RAM <-> GPU DMA aggregate bandwidth': each GPU copies 1 GB "
            "(taken as 1 GiB) to or from its own pinned host buffer with cudaMemcpyAsync (copy "
            "engine: op copy); h2d rows src host0 -> GPU, d2h rows GPU -> host0 (one NUMA node)",
            f"rows: single-GPU baselines of GPUs {gpus[0]} and {gpus[1]} (group {group}'s"
            + (")" if group == "A" else ", written as 0 and 4)")
            + f", and the concurrent 8-GPU 'Group {group} aggregate' rows as totals of 8 flows",
            "source text: group A's 8 GPUs reach the host through two CPU quadrants (roots 00 and "
            "40), group B's through one (e0)"])
        gib = 1 << 30
        for g in gpus:
            r = md_row(single, path, f"GPU {g}")
            if r[0] != f"GPU {g}":
                fail(path, f"row 'GPU {g}' not found")
            host.xfer_case("h2d", [("host0", g - first)], gib, flow_gbps=num(r[1], path), op="copy")
            host.xfer_case("d2h", [(g - first, "host0")], gib, flow_gbps=num(r[2], path), op="copy")
        hc = 1 if group == "A" else 3
        if conc[0][hc] != f"Group {group} aggregate":
            fail(path, f"group {group}'s host aggregate column not where expected")
        for d, pattern in (("H2D", "h2d"), ("D2H", "d2h")):
            r = md_row(conc, path, d)
            flows = ([("host0", g) for g in range(8)] if d == "H2D"
                     else [(g, "host0") for g in range(8)])
            host.xfer_case(pattern, flows, gib, total_gbps=num(r[hc], path), op="copy")
        host.write(os.path.join(out_dir, f"{name}-host.csv"))


def partial_matrix(block, path, n):
    """Rows 'i v v ...' of n cells (a latency matrix may list a few rows)."""
    rows = {}
    for line in block.splitlines():
        m = re.match(r"\s*(\d+)\s+(.*)$", line)
        if not m:
            continue
        cells = m.group(2).split()
        if len(cells) != n or not all(re.fullmatch(r"[\d.]+|-|—", c) for c in cells):
            continue
        rows[int(m.group(1))] = [None if c in ("-", "—") else float(c) for c in cells]
    if not rows:
        fail(path, "no matrix rows")
    return rows


def flat(wiki, out_dir):
    """hardware/wrx90-cpayne-2switch-flat.md: the same WRX90 rig as two flat
    switches of 4 GPUs on root ports 20:01.1 and 40:01.1 of one socket, the
    layout of preset rtxpro6000-8x-pcie5-1s."""
    page = "hardware/wrx90-cpayne-2switch-flat.md"
    text, path = read_page(wiki, page)
    smi = smi_lines(md_section(text, path, "nvidia-smi Topology"))
    if len(smi) != 9:
        fail(path, f"nvidia-smi matrix: {len(smi)} lines, expected 9")
    meta = [("machine", "ASRock WRX90 WS EVO, TR PRO 7955WX, 2 c-payne (Microchip Switchtec) Gen5 "
             "switches of 4 GPUs, flat: uplinks on root ports 20:01.1 and 40:01.1"),
            ("gpus", ",".join(["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8)),
            ("driver", "595.45.04"), ("cuda", "13.2"), ("nccl", "not stated"),
            ("date", "2026-04-07"),
            ("command", "scripts/convert-public.py (the wiki's tables; p2pBandwidthLatencyTest, "
             "p2pmark 3c39f36, a copy benchmark)"),
            ("source", wiki_src(page))]
    meta += [("topo", l) for l in smi]
    meta.append(("preset", "rtxpro6000-8x-pcie5-1s"))
    layout = ("layout as preset rtxpro6000-8x-pcie5-1s (two 4-GPU switches on two root ports of "
              "one socket); the preset's numbers come from group A of the same rig in another "
              "configuration (other kernel and driver, roots 00 and 40)")

    # p2p (fit): the two named unidirectional pairs of 'Uplink Degradation
    # Proof' (baseline line) and the tier averages as pairs of that tier.
    p2p = Out("p2p", meta, [
        layout,
        "pair rows: the 'Baseline' line of 'Uplink Degradation Proof' (GPU0->1 PIX, GPU0->4 NODE) "
        "and 'Bandwidth by Tier' (averages, written as GPU2->3 for PIX and GPU1->5 for NODE); the "
        "page publishes no full unidirectional matrix",
        "op: p2pBandwidthLatencyTest's P2P writes (copy engine pushing): op copy-write; bytes: not "
        "published, 256 MiB per flow assumed, time_us = bytes / bw"])
    base = md_section(text, path, "Uplink Degradation Proof")
    m = re.search(r"Baseline:\s*PIX GPU0→1 = ([\d.]+) GB/s\s+NODE GPU0→4 = ([\d.]+) GB/s", base)
    if not m:
        fail(path, "uplink degradation baseline line not found")
    p2p.xfer_case("pair", [(0, 1)], MIB256, flow_gbps=float(m.group(1)))
    p2p.xfer_case("pair", [(0, 4)], MIB256, flow_gbps=float(m.group(2)))
    tier = md_table(md_section(text, path, "Bandwidth by Tier"), path, "Tier")
    p2p.xfer_case("pair", [(2, 3)], MIB256, flow_gbps=num(md_row(tier, path, "PIX")[1], path))
    p2p.xfer_case("pair", [(1, 5)], MIB256, flow_gbps=num(md_row(tier, path, "NODE")[1], path))
    p2p.write(os.path.join(out_dir, "rtxpro6000-1s-flat-p2p.csv"))

    bid = Out("p2p", meta, [
        layout,
        "bidir rows: the 'Bidirectional P2P=Enabled Matrix' (p2pBandwidthLatencyTest); entry [i][j] "
        "is one case of the two flows i->j and j->i, total only; op copy-write; 256 MiB per flow "
        "assumed"])
    bm = matrix(md_section(text, path, "Bidirectional P2P=Enabled Matrix"), path, 8)
    for i in range(8):
        for j in range(8):
            if i != j:
                bid.xfer_case("bidir", [(i, j), (j, i)], MIB256, total_gbps=bm[i][j])
    bid.write(os.path.join(out_dir, "rtxpro6000-1s-flat-bidir.csv"))

    # latency: p2pBandwidthLatencyTest's matrix, same-switch pairs (fit) and
    # cross-switch pairs (held out) in two files.
    lm = partial_matrix(md_section(text, path, "P2P=Enabled Write Latency"), path, 8)
    for name, cross in (("rtxpro6000-1s-flat-latency.csv", False),
                        ("rtxpro6000-1s-flat-latency-cross.csv", True)):
        lat = Out("p2p", meta, [
            layout,
            "latency rows: the 'P2P=Enabled Write Latency' matrix of p2pBandwidthLatencyTest (rows "
            "0, 1 and 4 as published, diagonal left out), " +
            ("the pairs on different switches (through the CPU's root ports)" if cross else
             "the pairs on one switch") + "; the CUDA sample queues 100 cudaMemcpyPeerAsync of one "
            "int4 back to back in one stream behind a spin kernel and divides the GPU time by 100 "
            "(outputLatencyMatrix): the time per copy of a stream of copy-engine pushes, op "
            "copy-write with pattern latency (docs/formats.md); bytes: 4 (the current sample copies one int4, 16 B; either moves "
            "less than the table's 0.01 us at these rates)",
            "not converted: p2pmark's 128-byte remote-read latencies (a read round trip, 0.72 us "
            "PIX, 1.40-1.45 us NODE) and its 7.48 us under-load figure: no measurement kind for "
            "them"])
        for i in sorted(lm):
            for j in range(8):
                if i != j and ((i < 4) != (j < 4)) == cross:
                    lat.xfer_case("latency", [(i, j)], 4, time_us=lm[i][j],
                                  latency_op="copy-write")
        lat.write(os.path.join(out_dir, name))

    # flows (held out): the multi-flow table and the no-collapse test.
    fl = Out("flows", meta, [
        layout,
        "rows: 'Multi-Flow Scaling Analysis' (totals) and the Write column of 'No Posted-Write "
        "Collapse'; the page does not name the GPUs of the scaling rows: '2 PIX' = 0->1 + 2->3, "
        "'1 NODE' = 0->4, '2 NODE (same src switch)' = 0->4 + 1->5, '4 NODE 1:1' = i->i+4, "
        "'12 same-switch all-to-all' = every ordered pair of GPUs 0-3, '16 cross-switch' = every GPU "
        "0-3 to every GPU 4-7, '56 all-to-all' = every ordered pair",
        "op: copy-write (the sibling pages' copy benchmark: torch copy_ on the source's stream); "
        "bytes: 256 MiB per flow assumed",
        "not converted: the Read column of 'No Posted-Write Collapse': with the wiki's script, "
        "PyTorch runs a cross-device copy on the data source's current stream, so those 'reads' "
        "are posted writes by the source's copy engine (ATen Copy.cu, copy_device_to_device)"])
    sc = md_table(md_section(text, path, "Multi-Flow Scaling Analysis"), path, "Flows")
    a4 = [(i, j) for i in range(4) for j in range(4) if i != j]
    cross = [(i, j) for i in range(4) for j in range(4, 8)]
    every = [(i, j) for i in range(8) for j in range(8) if i != j]
    cases = [("1", "PIX", "pair", [(0, 1)]), ("2", "PIX", "pair", [(0, 1), (2, 3)]),
             ("1", "NODE", "pair", [(0, 4)]),
             ("2", "NODE (same src", "same-uplink", [(0, 4), (1, 5)]),
             ("4", "NODE 1:1", "pair", [(i, i + 4) for i in range(4)]),
             ("12", "Same-switch all-to-all", "all-to-all", a4),
             ("16", "Cross-switch", "all-to-all", cross),
             ("56", "All-to-all", "all-to-all", every)]
    for nflows, label, pattern, flows in cases:
        hit = [r for r in sc[1:] if r[0] == nflows and r[1].startswith(label)]
        if len(hit) != 1:
            fail(path, f"multi-flow row '{nflows} {label}' not found once")
        fl.xfer_case(pattern, flows, MIB256, total_gbps=num(hit[0][2], path))
    nc = md_table(md_section(text, path, "No Posted-Write Collapse"), path, "Test")
    fl.xfer_case("same-uplink", [(0, 4), (1, 6)], MIB256,
                 total_gbps=num(md_row(nc, path, "GPU0→GPU4 + GPU1→GPU6")[1], path))
    fl.xfer_case("same-uplink", [(0, 4), (1, 5)], MIB256,
                 total_gbps=num(md_row(nc, path, "GPU0→GPU4 + GPU1→GPU5")[1], path))
    fl.write(os.path.join(out_dir, "rtxpro6000-1s-flat-flows.csv"))

    flat_p2pmark(text, path, meta, layout, out_dir)

    # SGLang's startup crossover benchmark, TP=4 on GPUs 0-3 (one switch).
    cr = md_table(md_section(text, path, "PCIe Oneshot AllReduce Crossover"), path, "Size")
    rows = []
    for r in cr[1:]:
        size = size_of(r[0], path)
        rows.append((size, "bf16", "oneshot", "-", num(r[1], path), "oneshot", 1))
        rows.append((size, "bf16", "auto", "auto", num(r[2], path), "nccl", 1))
    cmd = ("scripts/convert-public.py (the wiki's table: SGLang's PCIe oneshot allreduce "
           "auto-crossover at server startup, TP=4, bf16)")
    cm = [(k, cmd if k == "command" else v) for k, v in meta if k != "topo"]
    write_coll(os.path.join(out_dir, "rtxpro6000-1s-flat-allreduce-4gpu.csv"), cm, [
        layout,
        "rows: 'PCIe Oneshot AllReduce Crossover' (TP=4, bf16, GPUs 0-3 on one switch as the page "
        "says); custom = luke's SGLang pcie_allreduce kernel (a one-shot pull: 16-byte loads from "
        "every peer after a start barrier, no end barrier: collsim algo oneshot); NCCL = "
        "dist.all_reduce with the environment the page does not state (NCCL's default taken)",
        "graph 1 for both: SGLang's find_crossover_size times one allreduce captured in a CUDA "
        "graph, replayed back to back (the upstreamed code's _bench_graph_latency; the page's own "
        "build is assumed to do the same); the figure is the maximum over ranks of the median of 3 "
        "runs",
        "sizes as powers of 2 (1 KB = 1024 B; 120 KB = 122880 B)"], "allreduce", 4, rows)


def p2pmark_rows(out, ngpu, fanin_avg, dense_total, probe=None):
    """p2pmark 3c39f36's scores as flows rows. Its transfers are
    cudaMemcpyPeerAsync on the reader's stream (copy engine pulling: op
    copy-read), 64 MiB each. The PCIe link score's GB/s is the mean over
    readers of one GPU reading all its peers at once (written as GPU 0's
    fan-in: readers taken as alike); the interconnect score's numerator is
    all GPUs reading all peers at once; the probe rows are every GPU i
    reading GPU i+k at once. Its totals are sums of per-GPU rates (each GPU
    timed alone), equal to total bytes over the slowest flow's time only
    when the GPUs finish together."""
    out.xfer_case("fan-in", [(j, 0) for j in range(1, ngpu)], MIB64, total_gbps=fanin_avg,
                  op="copy-read")
    out.xfer_case("all-to-all", [(j, i) for i in range(ngpu) for j in range(ngpu) if i != j],
                  MIB64, total_gbps=dense_total, op="copy-read")
    for k, avg in sorted((probe or {}).items()):
        if k in ALIKE:
            out.xfer_case("ring", [((i + k) % ngpu, i) for i in range(ngpu)], MIB64,
                          total_gbps=round(avg * ngpu, 4), op="copy-read")


# The staggered probes (+k: every GPU i with GPU i+k at once) on two switches
# of 4 GPUs: at +1, +4 and +7 every flow has the same share of its path (+1,
# +7: the two cross-switch flows go opposite ways; +4: four per uplink and
# direction), so p2pmark's sum of per-GPU rates equals bytes over the slowest
# flow's time. At +2, +3, +5, +6 two or three flows share an uplink beside
# flows inside a switch: the sum of rates then exceeds what collsim compares,
# and the page gives no per-GPU rates, so those rows are not converted.
ALIKE = (1, 4, 7)


P2PMARK_NOTE = ("p2pmark 3c39f36 (the version the page names): cudaMemcpyPeerAsync of 64 MiB on "
                "the reader's stream, a copy engine pulling (op copy-read). 'fan-in' = the PCIe link "
                "score's GB/s, the mean over readers of one GPU reading all peers at once, written as "
                "GPU 0's; 'all-to-all' = the interconnect score's measured GB/s, every GPU reading "
                "every peer at once; 'ring' +k rows = every GPU i reading GPU i+k at once, total = 8 x "
                "the published average, for k = 1, 4, 7 only. p2pmark sums per-GPU rates (each GPU "
                "timed on its own), which equals bytes over the slowest flow's time only when all "
                "GPUs finish together: at +2, +3, +5, +6 flows sharing an uplink run beside flows "
                "inside a switch, so those rows are not converted")


def flat_p2pmark(text, path, meta, layout, out_dir):
    sc = md_table(md_section(text, path, "### Scores"), path, "Config")
    probe = {}
    for l in md_section(text, path, "8 GPU Topology Probe").splitlines():
        m = re.match(r"\+(\d):\s*([\d.]+) GB/s avg", l.strip())
        if m:
            probe[int(m.group(1))] = float(m.group(2))
    if sorted(probe) != list(range(1, 8)):
        fail(path, "staggered probe rows +1..+7 not found")
    for n in (4, 8):
        r = md_row(sc, path, f"{n} GPU")
        m1 = re.search(r"\(([\d.]+) GB/s\)", r[1])
        m2 = re.search(r"\(([\d.]+)\s*/\s*([\d.]+) GB/s\)", r[2])
        if not m1 or not m2:
            fail(path, f"p2pmark scores of '{n} GPU' not parsed")
        out = Out("flows", meta, [layout, P2PMARK_NOTE,
                  f"{n} GPUs: GPUs 0-{n - 1}" + (" (one switch)" if n == 4 else "")])
        p2pmark_rows(out, n, float(m1.group(1)), float(m2.group(1)),
                     probe if n == 8 else None)
        out.write(os.path.join(out_dir, f"rtxpro6000-1s-flat-p2pmark-{n}gpu.csv"))


ESC_MACHINE = ("ASUS ESC8000A-E13P: 2x EPYC 9575F, 2x Broadcom PEX890xx (2 virtual switches "
               "each), 8x RTX PRO 6000 Blackwell Server")


def esc_meta(page, command, date, nccl="not stated"):
    return [("machine", ESC_MACHINE),
            ("gpus", ",".join(["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8)),
            ("driver", "not stated"), ("cuda", "not stated"), ("nccl", nccl),
            ("date", date), ("command", command),
            ("source", wiki_src(page)), ("preset", "rtxpro6000-8x-pcie5-2s")]


def esc(wiki, out_dir):
    """The reference box (preset rtxpro6000-8x-pcie5-2s): SGLang's crossover
    table of optimization/pcie-oneshot-allreduce.md, the 4-GPU busbw line of
    hardware/asus-esc8000a-e13p-broadcom-switches.md, p2pmark scores of
    hardware/pcie-bandwidth.md, and the nccl-tests tables of
    optimization/nccl-tuning.md (box inferred)."""
    page = "optimization/pcie-oneshot-allreduce.md"
    text, path = read_page(wiki, page)
    if "ASUS ESC8000A-E13P with 4" not in md_section(text, path, "Benchmark Results"):
        fail(path, "'Benchmark Results' no longer names the ESC8000A")
    t = md_table(md_section(text, path, "Raw AllReduce Latency"), path, "Size")
    rows = []
    for r in t[1:]:
        size = size_of(r[0], path)
        rows.append((size, "bf16", "oneshot", "-", num(r[1], path), "oneshot", 1))
        rows.append((size, "bf16", "auto", "auto", num(r[2], path), "nccl", 1))
    write_coll(os.path.join(out_dir, "rtxpro6000-2s-allreduce-4gpu-sglang.csv"),
               esc_meta(page, "scripts/convert-public.py (the wiki's table: SGLang's PCIe oneshot "
                        "allreduce auto-crossover at server startup, TP=4, bf16)", "2026-03-20"), [
        "rows: 'Raw AllReduce Latency (PCIe oneshot vs NCCL)', 4 GPUs of one socket (TP=4; GPUs "
        "0-3 assumed, the 'same NUMA' GPUs of the page); the six sizes the ESC8000A page repeats "
        "carry the same figures",
        "custom = luke's SGLang pcie_allreduce kernel (one-shot pull: 16-byte loads from every peer "
        "after a start barrier, no end barrier: collsim algo oneshot); NCCL = dist.all_reduce with "
        "the environment the page does not state for this benchmark (NCCL's default taken; the "
        "page's end-to-end runs were made with and without NCCL_P2P_LEVEL=SYS)",
        "graph 1 for both: SGLang's find_crossover_size times one allreduce captured in a CUDA "
        "graph, replayed back to back (the upstreamed code's _bench_graph_latency); the figure is "
        "the maximum over ranks of the median of 3 runs",
        "sizes as powers of 2 (1 KB = 1024 B)"], "allreduce", 4, rows)

    page = "hardware/asus-esc8000a-e13p-broadcom-switches.md"
    text, path = read_page(wiki, page)
    blk = md_section(text, path, "NCCL Configuration")
    m = re.search(r"AllReduce BusBw \(32M, 4 GPU\): default = ([\d.]+) GB/s → "
                  r"NCCL_P2P_LEVEL=SYS = ([\d.]+) GB/s", blk.replace("**", ""))
    if not m:
        fail(path, "'AllReduce BusBw (32M, 4 GPU)' line not found")
    size = 32 << 20
    for val, env, tag, what in (
            (float(m.group(1)), "", "default",
             "NCCL's default environment: the page says NCCL then uses SHM for the NODE pairs "
             "(GPUs of one socket on different virtual switches)"),
            (float(m.group(2)), " --env NCCL_P2P_LEVEL=SYS", "p2psys",
             "NCCL_P2P_LEVEL=SYS (P2P between every pair); the page lists NCCL_NET_GDR_LEVEL=SYS "
             "and NCCL_MIN_NCHANNELS=8 beside it but names only P2P_LEVEL for this figure")):
        t_us = size / (val / 1.5 * 1e3)
        write_coll(os.path.join(out_dir, f"rtxpro6000-2s-nccl-4gpu-32m-{tag}.csv"),
                   esc_meta(page, "scripts/convert-public.py (the wiki's line 'AllReduce BusBw (32M, "
                            "4 GPU)'; nccl-tests all_reduce_perf assumed)" + env, "2026-03-20"), [
            f"one row: the busbw of a 32 MiB allreduce on 4 GPUs (0-3 assumed) with {what}",
            "tool and dtype not stated: nccl-tests all_reduce_perf (float, eager) assumed; time_us "
            "= size / (busbw / (2 x 3 / 4))"],
            "allreduce", 4, [(size, "fp32", "auto", "auto", t_us, "nccl", 0)])

    page = "hardware/pcie-bandwidth.md"
    text, path = read_page(wiki, page)
    for n, head in ((8, "p2pmark Scores (8 GPUs)"), (4, "p2pmark Scores (4 GPUs)")):
        t = md_table(md_section(text, path, head), path, "System")
        r = md_row(t, path, "[voipmonitor (ASUS ESC8000A-E13P")
        m = re.search(r"\(([\d.]+)\s*/\s*([\d.]+) GB/s\)", r[2])
        if not m:
            fail(path, f"p2pmark interconnect score of {n} GPUs not parsed")
        meta = esc_meta(page, "scripts/convert-public.py (the wiki's p2pmark table; p2pmark "
                        "3c39f36, ACS off)", "2026-03-20", "not used")
        out = Out("flows", meta, [
            P2PMARK_NOTE, f"{n} GPUs: GPUs 0-{n - 1}" + (" (CUDA_VISIBLE_DEVICES=0,1,2,3, one socket)"
                                                         if n == 4 else ""),
            "fan-in GB/s = the 'ideal' figure / GPUs (p2pmark's link score is that mean: 53.7 for 8 "
            "GPUs as published)"])
        p2pmark_rows(out, n, round(float(m.group(2)) / n, 4), float(m.group(1)))
        out.write(os.path.join(out_dir, f"rtxpro6000-2s-p2pmark-{n}gpu.csv"))

    page = "optimization/nccl-tuning.md"
    text, path = read_page(wiki, page)
    blk = md_section(text, path, "AllReduce Benchmark Results")
    if "AMD EPYC 9575F (Turin), dual-socket. NCCL 2.28.3, nccl-tests" not in blk:
        fail(path, "the tuner benchmark's machine line changed")
    for n, head in ((4, "4 GPU (same NUMA socket)"), (8, "8 GPU (cross-socket")):
        code = md_section(blk, path, head)
        rows = []
        for l in code.splitlines():
            mm = re.match(r"(\d+[KM])\s+([\d.]+)\s+[\d.]+\s", l)
            if mm:
                size = size_of(mm.group(1), path)
                bus = float(mm.group(2))
                rows.append((size, "fp32", "auto", "auto",
                             size / (bus / (2.0 * (n - 1) / n) * 1e3), "nccl", 0))
        if len(rows) != 7:
            fail(path, f"{n}-GPU tuner table: {len(rows)} rows, expected 7")
        write_coll(os.path.join(out_dir, f"rtxpro6000-2s-nccl-tests-{n}gpu.csv"),
                   esc_meta(page, "scripts/convert-public.py (the wiki's nccl-tests table, "
                            "'Baseline' column: NCCL 2.28.3 without the tuner plugin) "
                            "--env NCCL_P2P_LEVEL=SYS" +
                            ("" if n == 4 else " --env NCCL_GRAPH_FILE=" + GRAPH_XML),
                            "2026-03-31", "2.28.3"), [
            "machine inferred: the page says '8x RTX PRO 6000 Blackwell, AMD EPYC 9575F (Turin), "
            "dual-socket' without naming the box; its LLM figures on the same page (GLM-5 TP=8 "
            "52.8 / 56.6 tok/s, Qwen3.5 TP=4 70.6 / 76.1) are those optimization/"
            "pcie-oneshot-allreduce.md measured on the ASUS ESC8000A-E13P, so this box is taken",
            f"{n} GPUs (GPUs 0-{n - 1}: " + ("one socket" if n == 4 else "4+4 across the sockets") +
            "); 'Baseline' busbw column, nccl-tests (float, eager, out-of-place assumed); time_us = "
            f"size / (busbw / (2 x {n - 1} / {n})); sizes as powers of 2",
            "environment not stated (the plugin runs add NCCL_PROTO=LL,LL128,Simple); taken as "
            "the page's own configuration for this box, NCCL_P2P_LEVEL=SYS" +
            (" (every configuration the page gives sets it; the 8-rank graph file lists devices "
             "0-7, so a 4-rank run cannot have used it)" if n == 4 else
             " with its graph file (NCCL_GRAPH_FILE, " + GRAPH_XML + ", written from the header the "
             "page publishes): the 64K row, 23.1 us, is the page's own 'With XML' figure (25.59 us) "
             "and half its 'Without XML' one (48.69 us, rtxpro6000-2s-nccl-xml-8gpu-without.csv); "
             "without the file NCCL 2.28.3 falls back to 1 channel at 0.1 GB/s (search.cc: the "
             "SM100 speed ladder ends at 18 GB/s, AMD_BW is 16), Simple at these sizes")],
            "allreduce", n, rows)

    # The graph-file fix on the same page (8 GPUs, dual Turin): the header of
    # the published graph file and the latency table with and without it.
    blk = md_section(text, path, "NCCL Graph XML Fix for AMD Turin")
    m = re.search(r'<graph id="0" pattern="4" nchannels="(\d+)" speedintra="([\d.]+)" '
                  r'speedinter="([\d.]+)"\s+typeintra="(\w+)" typeinter="(\w+)" '
                  r'samechannels="(\d)">', blk)
    if not m:
        fail(path, "the graph file's <graph> header not found")
    nch, intra, inter, tintra, tinter, same = m.groups()
    if md_row(md_table(md_section(blk, path, "With XML Fix"), path, "Parameter"), path,
              "Channels")[1] != "4":
        fail(path, "'With XML Fix' no longer gives 4 channels")
    chan = "    <channel>" + "".join(f' <gpu dev="{g}"/>' for g in range(8)) + " </channel>\n"
    with open(os.path.join(out_dir, GRAPH_XML + ".tmp"), "w") as f:
        f.write(f"<!-- Written by scripts/convert-public.py from the graph header that "
                f"{page} publishes (commit {WIKI_COMMIT[:7]}); the file itself is not published. "
                f"Assumed: the channels in PCI order, and a tree graph (id 1) with the ring's "
                f"figures: the page's 'With XML Fix' table gives 4 channels, which NCCL reaches "
                f"only when the tree has 2 as well (init.cc: min(ring, tree), doubled). -->\n")
        f.write('<graphs version="1">\n')
        for gid, pat in ((0, 4), (1, 1)):
            f.write(f'  <graph id="{gid}" pattern="{pat}" crossnic="0" nchannels="{nch}" '
                    f'speedintra="{intra}" speedinter="{inter}" latencyinter="0" '
                    f'typeintra="{tintra}" typeinter="{tinter}" samechannels="{same}">\n')
            f.write(chan * int(nch))
            f.write("  </graph>\n")
        f.write("</graphs>\n")
    os.replace(os.path.join(out_dir, GRAPH_XML + ".tmp"), os.path.join(out_dir, GRAPH_XML))
    t = md_table(md_section(blk, path, "Performance Impact"), path, "Message Size")
    if t[0][1:3] != ["Without XML", "With XML"]:
        fail(path, f"graph XML table columns changed: {t[0]}")
    for col, tag, env, what in (
            (1, "without", "", "without the graph file: NCCL's own search, which on this box "
             "finds nothing (search.cc: the SM100 speed ladder ends at 18 GB/s, AMD_BW is 16) and "
             "falls back to 1 channel at 0.1 GB/s, type SYS (the page: 'Bandwidth estimate 0.1 "
             "GB/s', 'SYS/SYS', 2 channels, Simple)"),
            (2, "with", " --env NCCL_GRAPH_FILE=" + GRAPH_XML, "with the graph file (" + GRAPH_XML +
             ", written from the header the page publishes; the page: 24 GB/s, PHB/PIX, 4 "
             "channels, LL)")):
        rows = [(size_of(r[0], path), "fp32", "auto", "auto", num(r[col], path), "nccl", 0)
                for r in t[1:]]
        write_coll(os.path.join(out_dir, f"rtxpro6000-2s-nccl-xml-8gpu-{tag}.csv"),
                   esc_meta(page, "scripts/convert-public.py (the wiki's table 'Performance Impact "
                            "(AllReduce on Inference-Sized Tensors)') --env NCCL_P2P_LEVEL=SYS" + env,
                            "2026-03-09", "2.28.3"), [
            f"8 GPUs of the dual-Turin box (GPUs 0-7, 4+4 across the sockets), {what}",
            "the page's section is about NCCL v2.28.3 on AMD Turin; tool, dtype and the rest of the "
            "environment are not stated: NCCL_P2P_LEVEL=SYS (every configuration the page gives "
            "for this box sets it) and nccl-tests float eager assumed; sizes as powers of 2"],
            "allreduce", 8, rows)


def collapse16(wiki, out_dir):
    """hardware/collapse-report.md, the 16-GPU WRX90 rig: GPUs 0-7 are SW1
    (root 00) and SW2 (root 20), the layout of rtxpro6000-8x-pcie5-1s."""
    page = "hardware/collapse-report.md"
    text, path = read_page(wiki, page)
    meta = [("machine", "ASRock WRX90 WS EVO, TR PRO 7955WX, 4 c-payne (Microchip PM50100) Gen5 "
             "switches of 4 GPUs on roots 00, 20, 40, e0 (16 GPUs); GPUs 0-7 = SW1 + SW2"),
            ("gpus", ",".join(["NVIDIA RTX PRO 6000 Blackwell Workstation Edition"] * 8)),
            ("driver", "595.58.03"), ("cuda", "13.2"), ("nccl", "not used"),
            ("date", "2026-04-25"),
            ("command", "scripts/convert-public.py (the wiki's outputs: its torch copy_ script and "
             "p2pmark's staggered-writes probe)"),
            ("source", wiki_src(page)), ("preset", "rtxpro6000-8x-pcie5-1s")]
    out = Out("flows", meta, [
        "GPUs 0-7 of the 16-GPU rig: SW1 (GPUs 0-3, root 00) and SW2 (GPUs 4-7, root 20), SW3 and "
        "SW4 idle: the layout of preset rtxpro6000-8x-pcie5-1s (whose numbers come from group A of "
        "the same rig in the 8-GPU comparison, roots 00 and 40)",
        "torch rows: BASELINE (0,4) and CONTROL (0,4)+(1,5) of 'Observed output' (256 MB = 256 MiB "
        "per copy, 15 iterations); WRITE column as copy-write; READ column as what the script does: "
        "PyTorch runs a cross-device copy on the data source's current stream (ATen Copy.cu), so "
        "the 'reads' are the reverse writes 4->0 (+ 5->1) by the source's copy engine, one flow per "
        "source here; the rows with SW3/SW4 are outside the 8 GPUs",
        "p2pmark rows: 'staggered writes by peer distance' +1, +4, +7 and the all-to-all stress "
        "total (~159 GB/s); this p2pmark (after 78d9dfd) pushes with cudaMemcpyPeerAsync on the "
        "source's stream (op copy-write), 160,000,000 B per copy; its totals are sums of per-GPU "
        "rates, equal to bytes over the slowest flow's time where every flow has the same share: "
        "+2, +3, +5, +6 mix flows that share an uplink with flows inside a switch and are not "
        "converted"])
    obs = md_section(text, path, "Observed output on the test system")
    for label, flows in (("BASELINE", [(0, 4)]), ("CONTROL", [(0, 4), (1, 5)])):
        m = re.search(label + r"[^\n]*?\s([\d.]+) GB/s\s+([\d.]+) GB/s", obs)
        if not m:
            fail(path, f"row '{label}' not found")
        pattern = "pair" if len(flows) == 1 else "same-uplink"
        out.xfer_case(pattern, flows, MIB256, total_gbps=float(m.group(1)), op="copy-write")
        out.xfer_case("pair", [(d, s_) for s_, d in flows], MIB256,
                      total_gbps=float(m.group(2)), op="copy-write")
    pm = md_section(text, path, "Reproduction — Method 2")
    seen = 0
    for l in pm.splitlines():
        m = re.match(r"\+(\d)\s+((?:\d->\d\s+){8})\s*([\d.]+) avg\s+([\d.]+) total", l)
        if m:
            flows = [tuple(int(x) for x in p.split("->")) for p in m.group(2).split()]
            if int(m.group(1)) in ALIKE:
                out.xfer_case("ring", flows, P2PMARK_NEW, total_gbps=float(m.group(4)),
                              op="copy-write")
            seen += 1
    if seen != 7:
        fail(path, f"staggered probe: {seen} rows, expected 7")
    m = re.search(r"all-to-all stress test\*\* in the same run reports \*\*~([\d.]+) GB/s per "
                  r"GPU / ([\d.]+) GB/s total", pm)
    if not m:
        fail(path, "all-to-all stress total not found")
    out.xfer_case("all-to-all", [(i, j) for i in range(8) for j in range(8) if i != j],
                  P2PMARK_NEW, total_gbps=float(m.group(2)), op="copy-write")
    out.write(os.path.join(out_dir, "rtxpro6000-1s-16gpu-flows.csv"))


def twovs(wiki, out_dir):
    """hardware/wrx90-cpayne-8gpu-2vs-per-chip.md, variant 1: two Microchip
    chips of two virtual switches each, every VS on its own quadrant's root
    port of one socket (topology file rtxpro6000-1s-2vs.topo); GPU pairs of
    the page's script scripts/collapse_2gpu_full.py."""
    page = "hardware/wrx90-cpayne-8gpu-2vs-per-chip.md"
    text, path = read_page(wiki, page)
    v1 = md_section(text, path, "Variant 1 — Original 4-quadrant")
    sws = {"SW1": (0, 1), "SW2": (2, 3), "SW3": (4, 5), "SW4": (6, 7)}
    m = md_table(v1, path, "OS-visible switch")
    for r in m[1:]:
        sw = r[0].split()[0]
        g = tuple(int(x) for x in re.findall(r"\d+", r[4]))   # "GPU 0, 1"
        if sws.get(sw) != g:
            fail(path, f"switch {sw} holds GPUs {g}, the script assumes {sws.get(sw)}")
    meta = [("machine", "ASRock WRX90 WS EVO, TR PRO 7955WX, 2 c-payne (Microchip PM50100) chips of 2 "
             "virtual switches, each VS on its own quadrant's root port (variant 1)"),
            ("gpus", ",".join(["NVIDIA RTX PRO 6000 Blackwell Server Edition"] * 8)),
            ("driver", "595.58.03"), ("cuda", "13.2"), ("nccl", "not used"), ("date", "2026-04-28"),
            ("command", "scripts/convert-public.py (the wiki's tables; its PyTorch harness "
             "scripts/collapse_2gpu_full.py: dst.copy_(src) on a stream of the source, 256 MB, 100 "
             "iterations)"),
            ("source", wiki_src(page) + "; GPU pairs from scripts/collapse_2gpu_full.py of the same "
             "commit")]
    common = [
        "variant 1 of the page: SW1 (GPUs 0, 1) and SW3 (4, 5) are chip A, SW2 (2, 3) and SW4 (6, 7) "
        "chip B, on roots 00, 40 and 20, e0; topology validate/data/public/rtxpro6000-1s-2vs.topo",
        "op: copy-write (copy_ on the source's stream: the source's copy engine pushing); 256 MB per "
        "copy taken as 256 MiB; aggregate rows are total bytes over the wall time of all copies"]
    p2p = Out("p2p", meta, common + ["pair rows: 'V1 — single-pair P2P bandwidth (write)'"])
    t = md_table(md_section(v1, path, "V1 — single-pair"), path, "From → To")
    for r in t[1:]:
        mm = re.match(r"GPU (\d) → GPU (\d)", r[0])
        if not mm:
            fail(path, f"pair row '{r[0]}' not parsed")
        p2p.xfer_case("pair", [(int(mm.group(1)), int(mm.group(2)))], MIB256,
                      flow_gbps=num(r[2], path))
    p2p.write(os.path.join(out_dir, "rtxpro6000-1s-2vs-p2p.csv"))

    fl = Out("flows", meta, common + [
        "rows: 'V1 — 2-pair concurrent' (src VS GPUs a, b to dst VS GPUs c, d: a->c + b->d), 'V1 — 1 "
        "src VS → 2 different dst VSs' (a->first GPU of each dst VS), 'V1 — aggregate / stress' "
        "(bidir 0<->1; '4 source switches -> 1 dst switch' = 2->0, 4->1, 6->0, 3->1 as the script "
        "runs it; all 56 ordered pairs)"])
    t = md_table(md_section(v1, path, "V1 — 2-pair concurrent"), path, "")
    dst = [c.split()[0].replace("→", "") for c in t[0][1:]]
    for r in t[1:]:
        src = r[0].replace("→", "").strip()
        for c, d in zip(r[1:], dst):
            if src == d:
                continue
            (a, b), (x, y) = sws[src], sws[d]
            fl.xfer_case("same-uplink", [(a, x), (b, y)], MIB256, total_gbps=num(c, path))
    t = md_table(md_section(v1, path, "V1 — 1 src VS"), path, "Source → 2 destinations")
    for r in t[1:]:
        mm = re.match(r"(SW\d) → (SW\d) \+ (SW\d)", r[0])
        if not mm:
            fail(path, f"row '{r[0]}' not parsed")
        a, b = sws[mm.group(1)]
        fl.xfer_case("same-uplink", [(a, sws[mm.group(2)][0]), (b, sws[mm.group(3)][0])], MIB256,
                     total_gbps=num(r[1], path))
    t = md_table(md_section(v1, path, "V1 — aggregate / stress"), path, "Test")
    fl.xfer_case("bidir", [(0, 1), (1, 0)], MIB256,
                 total_gbps=num(md_row(t, path, "Bidirectional intra-VS")[1], path))
    fl.xfer_case("fan-in", [(2, 0), (4, 1), (6, 0), (3, 1)], MIB256,
                 total_gbps=num(md_row(t, path, "4 source switches")[1], path))
    fl.xfer_case("all-to-all", [(i, j) for i in range(8) for j in range(8) if i != j], MIB256,
                 total_gbps=num(md_row(t, path, "All-to-all 8 GPU")[1], path))
    fl.write(os.path.join(out_dir, "rtxpro6000-1s-2vs-flows.csv"))


def wiki_all(wiki, out_dir):
    cpayne_groups(wiki, out_dir)
    flat(wiki, out_dir)
    esc(wiki, out_dir)
    collapse16(wiki, out_dir)
    twovs(wiki, out_dir)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    src, out = sys.argv[1], sys.argv[2]
    broadcom(os.path.join(src, "rtxpro6000-8x-broadcom-2socket.txt"), out)
    cpayne(os.path.join(src, "rtxpro6000-8x-cpayne-1socket.txt"), out)
    if len(sys.argv) == 4:
        wiki_all(sys.argv[3], out)


if __name__ == "__main__":
    main()
