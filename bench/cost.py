#!/usr/bin/env python3
"""Figures of bench/cost.sh: what one tools/call costs mcpvisor, from two
runs of the same kind that differ only in the number of calls (so that
start, initialize, warm-up and stop cancel out): instructions (callgrind's
Ir of the whole process) and allocations (callgrind's call counts of
malloc, calloc and realloc from outside the allocator) per call, and system
calls per 10,000 calls (strace -f -ff, one file per process or thread:
mcpvisor with its threads, and the server it spawned, apart). Prints the
figures and writes them as JSON."""

import argparse
import json
import os
import re
import sys

# What counts as an allocation: a call into one of these from code that
# is not itself one of them (glibc's realloc(NULL, n) calls malloc inside).
ALLOC = {"malloc": "malloc", "__libc_malloc": "malloc",
         "calloc": "calloc", "__libc_calloc": "calloc",
         "realloc": "realloc", "__libc_realloc": "realloc",
         "reallocarray": "realloc", "posix_memalign": "malloc",
         "aligned_alloc": "malloc", "memalign": "malloc"}
# The system calls the issue names first, shown even when they are zero.
MATTER = ["read", "write", "writev", "readv", "recvfrom", "sendto",
          "recvmsg", "sendmsg", "epoll_wait", "epoll_pwait", "epoll_ctl",
          "accept4", "close"]


def callgrind(path):
    """Total Ir, the calls into the allocator and each function's own Ir
    (self cost) of one callgrind file."""
    names, total = {}, None
    fn = cfn = None
    allocs = {"malloc": 0, "calloc": 0, "realloc": 0}
    own = {}
    after_calls = False

    def name_of(spec):
        m = re.match(r"\((\d+)\)(?: (.*))?$", spec)
        if not m:
            return re.sub(r"'\d+$", "", spec)
        if m.group(2) is not None:
            names[m.group(1)] = re.sub(r"'\d+$", "", m.group(2))
        return names.get(m.group(1), "")

    with open(path, errors="replace") as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                # A cost line: the callee's inclusive cost right after
                # calls=, else the current function's own.
                if not after_calls:
                    parts = line.split()
                    if len(parts) > 1:
                        own[fn] = own.get(fn, 0) + int(parts[1])
                after_calls = False
                continue
            after_calls = False
            if line.startswith("fn="):
                fn = name_of(line[3:].rstrip("\n"))
            elif line.startswith("cfn="):
                cfn = name_of(line[4:].rstrip("\n"))
            elif line.startswith("calls="):
                after_calls = True
                kind = ALLOC.get(cfn)
                if kind and fn not in ALLOC:
                    allocs[kind] += int(line[6:].split()[0])
            elif line.startswith(("summary:", "totals:")):
                total = int(line.split(":")[1].split()[0])
    return total, allocs, own


def strace_dir(d, mcpvisor_path):
    """Counts of system calls by name: mcpvisor's own (the process and
    its threads: the files with no execve or whose last one is mcpvisor)
    and the spawned servers' (files that end up in another program)."""
    own, server = {}, {}
    for name in os.listdir(d):
        counts, execd = {}, None
        with open(os.path.join(d, name), errors="replace") as f:
            for line in f:
                if line.startswith(("<...", "+++", "---")):
                    continue
                m = re.match(r"([a-z_0-9]+)\(", line)
                if not m:
                    continue
                sc = m.group(1)
                if sc == "execve":
                    # The last one: mcpvisor spawns through itself
                    # (`mcpvisor __exec`), which then runs the server.
                    q = re.match(r'execve\("([^"]*)"', line)
                    execd = q.group(1) if q else ""
                counts[sc] = counts.get(sc, 0) + 1
        mine = execd is None or os.path.basename(execd) == \
            os.path.basename(mcpvisor_path)
        into = own if mine else server
        for k, v in counts.items():
            into[k] = into.get(k, 0) + v
    return own, server


def per(a, b, calls, scale):
    return None if a is None or b is None else (b - a) * scale / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, required=True,
                    help="the difference in calls between the two runs")
    ap.add_argument("--base", type=int, required=True)
    ap.add_argument("--callgrind", nargs=2, metavar=("FEW", "MANY"))
    ap.add_argument("--callgrind-tools100", nargs=2,
                    metavar=("FEW", "MANY"))
    ap.add_argument("--callgrind-modern", nargs=2, metavar=("FEW", "MANY"))
    ap.add_argument("--callgrind-relay", nargs=2, metavar=("FEW", "MANY"))
    ap.add_argument("--callgrind-http", nargs=2, metavar=("FEW", "MANY"))
    ap.add_argument("--strace", nargs=2, metavar=("FEW", "MANY"))
    ap.add_argument("--strace-32", nargs=4,
                    metavar=("SHORT", "LONG", "CALLS_SHORT", "CALLS_LONG"))
    ap.add_argument("--mcpvisor", default="mcpvisor")
    ap.add_argument("--target-ir", type=float, default=20000)
    ap.add_argument("--top", type=int, default=12,
                    help="functions to list by their own instructions")
    ap.add_argument("--out")
    a = ap.parse_args()
    n = a.calls
    doc = {"calls": [a.base, a.base + n], "method":
           "difference of two runs (%d and %d sequential tools/call, one "
           "session) over %d" % (a.base, a.base + n, n),
           "target_instructions_per_call": a.target_ir}
    lines = []
    for key, pair, label in (("v2025", a.callgrind, "2025-11-25 session"),
                             ("tools100", a.callgrind_tools100,
                              "2025-11-25 call to a server with 100 "
                              "tools"),
                             ("modern", a.callgrind_modern,
                              "2026-07-28 (no session, _meta)"),
                             ("relay", a.callgrind_relay,
                              "through mcpvisor relay (the relay alone)"),
                             ("http", a.callgrind_http,
                              "to a url server (demo-server --http)")):
        if not pair:
            continue
        (t0, al0, f0), (t1, al1, f1) = (callgrind(pair[0]),
                                         callgrind(pair[1]))
        ir = per(t0, t1, n, 1)
        mallocs = {k: per(al0[k], al1[k], n, 1) for k in al0}
        total = sum(v for v in mallocs.values() if v is not None)
        fns = {k: per(f0.get(k, 0), f1.get(k, 0), n, 1)
               for k in set(f0) | set(f1)}
        top = sorted(((v, k) for k, v in fns.items() if v >= 1),
                     reverse=True)[:a.top]
        doc[key] = {"instructions_per_call": ir,
                    "allocs_per_call": total, "allocs": mallocs,
                    "instructions_total": [t0, t1],
                    "top_functions": [[k, v] for v, k in top]}
        lines.append(
            "tools/call, %s: %s instructions, %.2f allocations "
            "(malloc %.2f, calloc %.2f, realloc %.2f) per call%s" % (
                label, "-" if ir is None else "{:,.0f}".format(ir), total,
                mallocs["malloc"], mallocs["calloc"], mallocs["realloc"],
                "" if key not in ("v2025", "tools100") or ir is None else
                " (target <= {:,.0f})".format(a.target_ir)))
        if top:
            lines.append("  its own instructions per call, by function "
                         "(the %d largest):" % len(top))
            lines += ["    %8.0f  %s" % (v, k) for v, k in top]
    scale = 10000.0

    def table(d0, d1, calls):
        (o0, s0), (o1, s1) = (strace_dir(d0, a.mcpvisor),
                              strace_dir(d1, a.mcpvisor))

        def diff(x0, x1):
            return {k: per(x0.get(k, 0), x1.get(k, 0), calls, scale)
                    for k in set(x0) | set(x1)}
        return diff(o0, o1), diff(s0, s1)
    cols = []
    if a.strace:
        own, srv = table(a.strace[0], a.strace[1], n)
        doc["syscalls_per_10k_calls"] = {"mcpvisor": own, "server": srv}
        doc["syscalls_per_call"] = sum(own.values()) / scale
        doc["server_syscalls_per_call"] = sum(srv.values()) / scale
        cols += [("mcpvisor", own), ("server", srv)]
    if a.strace_32:
        c0, c1 = int(a.strace_32[2]), int(a.strace_32[3])
        own, srv = table(a.strace_32[0], a.strace_32[1], c1 - c0) \
            if c1 > c0 else ({}, {})
        doc["syscalls_per_10k_calls_32_sessions"] = {
            "mcpvisor": own, "server": srv, "calls": [c0, c1]}
        cols += [("mcpv @32", own), ("server @32", srv)]
    if cols:
        every = set()
        for _, c in cols:
            every |= set(c)
        shown = [k for k in MATTER if k in every]
        shown += sorted((k for k in every if k not in shown and
                         max(abs(c.get(k, 0)) for _, c in cols) >= 5),
                        key=lambda k: -abs(cols[0][1].get(k, 0)))
        lines.append("system calls per 10,000 tools/call (strace -f; "
                     "mcpvisor with its threads, and the echo server; one "
                     "session in sequence%s):" % (
                         ", and 32 sessions at once" if a.strace_32 else ""))
        lines.append("  %-16s" % "" + "".join("%11s" % h for h, _ in cols))
        for k in shown + ["all"]:
            lines.append("  %-16s" % k + "".join(
                "%11.0f" % (sum(c.values()) if k == "all" else c.get(k, 0))
                for _, c in cols))
    print("\n".join(lines))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
