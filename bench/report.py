#!/usr/bin/env python3
"""Report for make bench: reads the loadgen's JSON lines, takes the median of
the rounds for each figure, prints one table with the ratios and the targets,
and writes the same figures to bench/results/latest.json."""

import argparse
import json
import os
import re
import statistics
import sys
import time

TARGETS = [
    ("floor", "direct stdio (floor)"),
    ("mcpvisor_tcp", "mcpvisor, TCP"),
    ("mcpvisor_modern", "mcpvisor, TCP, 2026-07-28"),
    ("mcpvisor_unix", "mcpvisor, Unix socket"),
    ("mcpvisor_relay", "mcpvisor relay (stdio)"),
    ("supergateway", "supergateway"),
    ("mcp_proxy", "mcp-proxy"),
    ("floor_per_session", "stdio, a server per session"),
    ("http_direct", "echo over HTTP, direct"),
    ("mcpvisor_http", "echo over HTTP, via mcpvisor"),
]
PEERS = ["supergateway", "mcp_proxy"]
SHORT = {"floor": "floor", "mcpvisor_tcp": "mcpvisor",
         "mcpvisor_modern": "2026-07-28", "mcpvisor_unix":
         "mcpvisor unix", "mcpvisor_relay": "relay",
         "supergateway": "supergateway",
         "mcp_proxy": "mcp-proxy", "http_direct": "http direct",
         "mcpvisor_http": "via mcpvisor"}
# The stdio rows' mcpvisor runs under one host ("mcpvisor"); every other
# target is its own host (the relay too: its RSS and start are its own).
# The 2026-07-28 row runs on that host too, but its start (a 2025
# initialize) and RSS are the 2025 row's: it shows only its own calls.
MCPVISOR_STDIO = ("mcpvisor_tcp", "mcpvisor_unix")
# What a 2026-07-28 tools/call may cost over a 2025 one through mcpvisor
# (issue 20): p50 latency pinned, and calls/s inverted (2025 / modern).
MODERN_COST = 1.10
MODERN_COST_METRICS = [("p50_pinned_ms", "p50 pinned", False),
                       ("p99_pinned_ms", "p99 pinned", False),
                       ("calls_per_s_8", "calls/s@8", True),
                       ("calls_per_s_32", "calls/s@32", True)]

# The issue 21 targets (one HTTP hop toward the limit of an HTTP exchange).
PINNED_OVER_FLOOR_MS = 0.03   # pinned p50, mcpvisor TCP, over the floor's
PEER_FACTOR_32 = 15           # calls/s at 32 sessions over the best peer
RELAY_OVER_UNIX_MS = 0.05     # pinned p50 the relay adds to the socket
HTTP_VIA_SHARE_8 = 0.70       # url server via mcpvisor / direct, @8
LIMIT_SHARE = 0.75            # mcpvisor / nginx under the same wrk load
INSTR_PER_CALL = 20000        # instructions per tools/call (callgrind)

# metric: (label, lower is better)
METRICS = {
    "p50_pinned_ms": ("p50 ms, pinned", True),
    "p99_pinned_ms": ("p99 ms, pinned", True),
    "p50_ms": ("p50 ms", True),
    "p99_ms": ("p99 ms", True),
    "calls_per_s_1": ("calls/s, 1 session", False),
    "calls_per_s_8": ("calls/s, 8 sessions", False),
    "calls_per_s_32": ("calls/s, 32 sessions", False),
    "peak_rss_kb": ("peak RSS of the gateway, KB", True),
    "peak_tree_rss_kb": ("peak RSS with all it spawned, KB", True),
    "first_call_ms": ("start to first tools/call, ms", True),
    "first_call_cold_ms": ("start to first tools/call, starting the "
                           "runtime, ms", True),
    "first_list_ms": ("first tools/list, ms", True),
}


def load(path):
    recs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                recs.append(json.loads(line))
            except ValueError:
                recs.append({"mode": "crash", "ok": False, "errors": 1,
                             "first_error": "unreadable line: " + line[:200]})
    return recs


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread_pct(xs):
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    m = statistics.median(xs)
    return 100.0 * (max(xs) - min(xs)) / m if m else None


def per_round(recs, target):
    """Figures of one target, as {metric: {round: value}}."""
    out = {m: {} for m in METRICS}
    errors, first_error, unavailable, extra = 0, None, None, {}
    host_target = "mcpvisor" if target in MCPVISOR_STDIO else target
    for r in recs:
        t = r.get("target")
        if t not in (target, host_target):
            continue
        if t == host_target and t != target and r.get("mode") not in (
                "host", "host-exit"):
            continue
        rnd = r.get("round", "0")
        kind = r.get("kind", "")
        mode = r.get("mode")
        if kind == "unavailable":
            unavailable = r.get("first_error", "unavailable")
            continue
        if r.get("errors"):
            errors += r["errors"]
            first_error = first_error or r.get("first_error")
        if mode == "crash":
            continue
        if kind == "latency_pinned":
            out["p50_pinned_ms"][rnd] = r.get("p50_ms")
            out["p99_pinned_ms"][rnd] = r.get("p99_ms")
        elif kind == "latency":
            out["p50_ms"][rnd] = r.get("p50_ms")
            out["p99_ms"][rnd] = r.get("p99_ms")
        elif kind.startswith("throughput_"):
            out["calls_per_s_" + kind.split("_")[1]][rnd] = r.get(
                "calls_per_s")
        elif kind == "first_call":
            out["first_call_ms"][rnd] = r.get("first_call_ms")
            out["first_list_ms"][rnd] = r.get("first_list_ms")
        elif kind == "first_call_cold":
            out["first_call_cold_ms"][rnd] = r.get("first_call_ms")
        elif mode == "host":
            if not r.get("ok"):
                unavailable = "did not start: " + str(r.get("first_error"))
            out["first_call_ms"][rnd] = r.get("ready_ms")
            out["first_list_ms"][rnd] = r.get("first_list_ms")
        elif mode == "host-exit":
            out["peak_rss_kb"][rnd] = r.get("peak_rss_kb")
            out["peak_tree_rss_kb"][rnd] = r.get("peak_tree_rss_kb")
            for k in ("stop_ms", "killed", "leftover", "peak_nprocs",
                      "exit_status", "exit_signal"):
                if k in r:
                    extra.setdefault(k, []).append(r[k])
        # The floor has no gateway: its figure is the stdio server's peak.
        # The relay is a stdio server to the loadgen: the same.
        if (target.startswith("floor") or target == "mcpvisor_relay") \
                and "server_hwm_kb" in r:
            for k in ("peak_rss_kb", "peak_tree_rss_kb"):
                prev = out[k].get(rnd) or 0
                out[k][rnd] = max(prev, r["server_hwm_kb"])
    return out, errors, first_error, unavailable, extra


def summarize(recs):
    res = {}
    for key, label in TARGETS:
        rounds, errors, first_error, unavailable, extra = per_round(
            recs, key)
        fig = {m: median(list(v.values())) for m, v in rounds.items()}
        have = any(v is not None for v in fig.values())
        if not have and unavailable is None:
            continue
        res[key] = {
            "label": label,
            "available": unavailable is None and have,
            "unavailable": unavailable,
            "figures": fig,
            "rounds": {m: v for m, v in rounds.items() if v},
            "spread_pct": {m: spread_pct(list(v.values()))
                           for m, v in rounds.items() if len(v) > 1},
            "errors": errors,
            "first_error": first_error,
            "gateway": extra,
        }
    return res


def mcpvisor_extras(recs):
    ex = {}
    for r in recs:
        if r.get("target") != "mcpvisor_extras":
            continue
        kind, mode = r.get("kind"), r.get("mode")
        if r.get("errors"):
            ex.setdefault("errors", []).append(
                "%s: %s" % (kind, r.get("first_error")))
        if mode == "host":
            ex["answers_first_request_ms"] = r.get("ready_ms")
            ex["idle_rss_kb"] = r.get("rss_kb")
            ex["idle_tree_rss_kb"] = r.get("tree_rss_kb")
        elif mode == "host-exit":
            ex["stop_ms"] = r.get("stop_ms")
            ex["leftover_processes"] = r.get("leftover")
        elif kind == "list_cold":
            ex["first_list_ms_cold"] = r.get("list_ms")
            ex["first_init_ms_cold"] = r.get("init_ms")
        elif kind == "list_warm":
            ex["first_list_ms_warm"] = r.get("list_ms")
        elif kind and kind.startswith("sessions_"):
            n = kind.split("_")[1]
            ex["rss_%s_sessions_kb" % n] = r.get("rss_kb")
            ex["opened_%s" % n] = r.get("opened")
    idle, big = ex.get("idle_rss_kb"), ex.get("rss_1000_sessions_kb")
    if idle and big:
        ex["per_session_kb"] = (big - idle) / 1000.0
    small = ex.get("rss_100_sessions_kb")
    if small and big:
        ex["per_session_kb_100_to_1000"] = (big - small) / 900.0
    return ex


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def ratios(res):
    out = {}
    fig = {k: v["figures"] for k, v in res.items() if v["available"]}
    pairs = [("mcpvisor_tcp", "floor"), ("mcpvisor_modern", "mcpvisor_tcp"),
             ("mcpvisor_unix", "floor"),
             ("mcpvisor_relay", "mcpvisor_unix")]
    pairs += [(p, "mcpvisor_tcp") for p in PEERS]
    pairs += [("mcpvisor_http", "http_direct")]
    for a, b in pairs:
        if a in fig and b in fig:
            out["%s/%s" % (a, b)] = {
                m: ratio(fig[a].get(m), fig[b].get(m)) for m in METRICS}
    return out


def modern_cost(res):
    """What a 2026-07-28 call costs over a 2025 one, per figure: the median
    over the rounds of each round's ratio (the two ran back to back in a
    round, so a round's ratio sees one machine), as cost: latency modern /
    2025, calls/s 2025 / modern."""
    mo, tc = res.get("mcpvisor_modern"), res.get("mcpvisor_tcp")
    if not mo or not tc or not mo["available"] or not tc["available"]:
        return {}
    out = {}
    for m, _, inverse in MODERN_COST_METRICS:
        a, b = mo["rounds"].get(m, {}), tc["rounds"].get(m, {})
        per = [ratio(b[r], a[r]) if inverse else ratio(a[r], b[r])
               for r in a if r in b]
        out[m] = median(per)
    return out


def load_figures(path):
    """The relay recovery figures the end-to-end scenarios wrote: one JSON
    line each, {name, ms, target, reference}."""
    if not path or not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def limit(recs):
    """The limit rows: nginx's fixed answer and mcpvisor (to the echo
    server over stdio) under the same wrk load, per round; the ratio is
    the median over the rounds of each round's mcpvisor / nginx (the two
    ran back to back). Answers that were not a 2xx with a result, socket
    errors or a row that did not run fail the figure."""
    out = {}
    for t in ("nginx", "mcpvisor_limit"):
        rounds, rss, peak, errors, why = {}, {}, {}, 0, None
        p50, p99, cpu = {}, {}, {}
        for r in recs:
            if r.get("target") != t:
                continue
            rnd, mode = r.get("round", "0"), r.get("mode")
            if mode == "wrk":
                rounds[rnd] = r.get("requests_per_s")
                p50[rnd], p99[rnd] = r.get("p50_ms"), r.get("p99_ms")
                if r.get("cpu_s") is not None and r.get("requests"):
                    cpu[rnd] = r["cpu_s"] * 1e6 / r["requests"]
                bad = (r.get("bad_answers") or 0) + (
                    r.get("socket_errors") or 0)
                if bad:
                    errors += bad
                    why = why or "%d bad answers, %d socket errors; "\
                        "first: %s" % (r.get("bad_answers") or 0,
                                       r.get("socket_errors") or 0,
                                       r.get("first_bad"))
            elif mode == "wrk-rss":
                rss[rnd] = r.get("rss_kb")
            elif mode == "host-exit":
                peak[rnd] = r.get("peak_rss_kb")
            elif mode == "crash" or r.get("kind") == "unavailable":
                errors += 1
                why = why or r.get("first_error")
        out[t] = {"requests_per_s": median(list(rounds.values())),
                  "rounds": rounds,
                  "spread_pct": spread_pct(list(rounds.values())),
                  "p50_ms": median(list(p50.values())),
                  "p99_ms": median(list(p99.values())),
                  "cpu_us_per_request": median(list(cpu.values())),
                  "rss_after_kb": median(list(rss.values())),
                  "peak_rss_kb": median(list(peak.values())),
                  "errors": errors, "first_error": why}
    a, b = out["mcpvisor_limit"]["rounds"], out["nginx"]["rounds"]
    out["ratio"] = median([ratio(a[r], b[r]) for r in a if r in b])
    out["ratio_rounds"] = {r: ratio(a[r], b[r]) for r in a if r in b}
    if not out["nginx"]["rounds"] and not out["mcpvisor_limit"]["rounds"] \
            and not out["nginx"]["errors"]:
        return {}
    return out


def bounds(recs):
    """What a hop cannot beat on this machine, measured in the same run.
    The pinned target: a hop to a stdio server is one HTTP exchange plus
    one stdio exchange, and bench/exchange gives the first alone (nginx's
    fixed answer, pinned). The url server target: a runtime that forwards
    through libcurl does at least bench/curl-alone's work a call on top of
    its own; with the direct pair's CPU a call (loadgen + server, 8
    sessions), a runtime that did no work besides libcurl's could reach at
    most direct / (direct + libcurl)."""
    ex, curl, lg, srv, mv, mvsrv, calls_mv = {}, {}, {}, {}, {}, {}, {}
    errors, why = 0, None
    for r in recs:
        t, rnd, mode = r.get("target"), r.get("round", "0"), r.get("mode")
        if t not in ("nginx_exchange", "curl_alone", "http_direct",
                     "mcpvisor_http"):
            continue
        if t in ("nginx_exchange", "curl_alone") and not r.get("ok"):
            errors += 1
            why = why or "%s: %s" % (t, r.get("first_error"))
            continue
        if t == "nginx_exchange":
            ex[rnd] = r.get("p50_ms")
        elif t == "curl_alone":
            curl[rnd] = r.get("cpu_us_per_call")
        elif mode == "cpu":
            if t == "http_direct":
                srv[rnd] = r.get("server_cpu_s")
            elif "server_cpu_s" in r:
                mvsrv[rnd] = r["server_cpu_s"]
            else:
                mv[rnd] = r.get("gateway_cpu_s")
        elif r.get("kind") == "throughput_8" and r.get("calls_all"):
            if t == "http_direct":
                lg[rnd] = (r.get("self_cpu_s"), r["calls_all"])
            else:
                calls_mv[rnd] = r["calls_all"]
    direct, ceil, via = {}, {}, {}
    for rnd, (cpu, n) in lg.items():
        if cpu is None or srv.get(rnd) is None:
            continue
        direct[rnd] = (cpu + srv[rnd]) * 1e6 / n
        if curl.get(rnd):
            ceil[rnd] = direct[rnd] / (direct[rnd] + curl[rnd])
    for rnd, n in calls_mv.items():
        if mv.get(rnd) is not None:
            via[rnd] = mv[rnd] * 1e6 / n
    if not (ex or curl or errors):
        return {}
    return {"exchange_p50_pinned_ms": median(list(ex.values())),
            "curl_cpu_us_per_call": median(list(curl.values())),
            "direct_cpu_us_per_call": median(list(direct.values())),
            "mcpvisor_cpu_us_per_call": median(list(via.values())),
            "ceiling_via_over_direct": median(list(ceil.values())),
            "ceiling_rounds": ceil, "errors": errors, "first_error": why}


def load_cost(path):
    """bench/cost.sh's figures (instructions, allocations, system calls
    per tools/call), or {} when it did not run."""
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError:
        return {}


def checks(res, ex, figures=(), cost=None, lim=None, calls=None):
    f = {k: v["figures"] for k, v in res.items() if v["available"]}
    mv, fl = f.get("mcpvisor_tcp", {}), f.get("floor", {})
    peers = [f[p] for p in PEERS if p in f]

    def best(metric, lower):
        vals = [p.get(metric) for p in peers if p.get(metric) is not None]
        if not vals:
            return None
        return min(vals) if lower else max(vals)

    out = []

    def add(name, value, limit, ok):
        out.append({"name": name, "value": value, "limit": limit,
                    "pass": None if value is None or limit is None
                    else bool(ok(value, limit))})

    p50, fp50 = mv.get("p50_pinned_ms"), fl.get("p50_pinned_ms")
    add("p50 tools/call, mcpvisor TCP, pinned <= floor + %.2f ms" %
        PINNED_OVER_FLOOR_MS, p50,
        None if fp50 is None else fp50 + PINNED_OVER_FLOOR_MS,
        lambda v, l: v <= l)
    bp = best("p50_pinned_ms", True)
    add("p50 tools/call, mcpvisor TCP, pinned: best peer / mcpvisor >= 10",
        ratio(bp, p50), 10, lambda v, l: v >= l)
    t32, ft32 = mv.get("calls_per_s_32"), fl.get("calls_per_s_32")
    add("calls/s at 32 sessions, mcpvisor TCP >= 50% of the floor", t32,
        None if ft32 is None else ft32 * 0.5, lambda v, l: v >= l)
    bt = best("calls_per_s_32", False)
    add("calls/s at 32 sessions: mcpvisor TCP / best peer >= %d" %
        PEER_FACTOR_32, ratio(t32, bt), PEER_FACTOR_32, lambda v, l: v >= l)
    for m, label, inverse in MODERN_COST_METRICS:
        if m == "p99_pinned_ms":
            continue  # shown, not held: one slow call in 2,000 moves it
        add("2026-07-28 tools/call cost over 2025, mcpvisor TCP: %s%s "
            "<= %.2f" % (label, " (2025 / 2026-07-28)" if inverse else "",
                         MODERN_COST), (cost or {}).get(m), MODERN_COST,
            lambda v, l: v <= l)
    hv, hd = f.get("mcpvisor_http", {}), f.get("http_direct", {})
    hp50, dp50 = hv.get("p50_pinned_ms"), hd.get("p50_pinned_ms")
    add("p50 echo over HTTP, pinned: mcpvisor adds <= 0.1 ms (ms added)",
        None if hp50 is None or dp50 is None else hp50 - dp50, 0.1,
        lambda v, l: v <= l)
    add("calls/s at 8 sessions, echo over HTTP: via mcpvisor / direct "
        ">= %.2f" % HTTP_VIA_SHARE_8, ratio(hv.get("calls_per_s_8"),
                                            hd.get("calls_per_s_8")),
        HTTP_VIA_SHARE_8, lambda v, l: v >= l)
    add("mcpvisor idle RSS <= 4 MB (KB)", ex.get("idle_rss_kb"), 4096,
        lambda v, l: v <= l)
    add("mcpvisor RSS per open session <= 16 KB", ex.get("per_session_kb"),
        16, lambda v, l: v <= l)
    add("mcpvisor serve answers its first request within 50 ms",
        ex.get("answers_first_request_ms"), 50, lambda v, l: v <= l)
    rl, ux = f.get("mcpvisor_relay", {}), f.get("mcpvisor_unix", {})
    rp50, up50 = rl.get("p50_pinned_ms"), ux.get("p50_pinned_ms")
    add("p50 tools/call, relay, pinned <= mcpvisor Unix socket + %.2f ms"
        % RELAY_OVER_UNIX_MS, rp50,
        None if up50 is None else up50 + RELAY_OVER_UNIX_MS,
        lambda v, l: v <= l)
    add("relay RSS (VmHWM over a latency run) < 3 MB (KB)",
        rl.get("peak_rss_kb"), 3072, lambda v, l: v < l)
    add("relay answers its first tools/call (runtime running) within "
        "50 ms", rl.get("first_call_ms"), 50, lambda v, l: v <= l)
    add("relay answers its first tools/call (no runtime: it starts one) "
        "within 1 s (SPEC)", rl.get("first_call_cold_ms"), 1000,
        lambda v, l: v <= l)
    if lim:
        ok = not lim["mcpvisor_limit"]["errors"] and \
            not lim["nginx"]["errors"]
        add("one HTTP hop under wrk (1 thread, 32 connections): mcpvisor "
            "/ nginx's fixed answer >= %.2f%s" % (
                LIMIT_SHARE, "" if ok else " (ERRORS: the row fails)"),
            lim.get("ratio") if ok else (lim.get("ratio") or 0.0),
            LIMIT_SHARE, lambda v, l: ok and v >= l)
    c25 = (calls or {}).get("v2025", {})
    add("instructions per tools/call in the runtime (callgrind) <= {:,}"
        .format(INSTR_PER_CALL), c25.get("instructions_per_call"),
        INSTR_PER_CALL, lambda v, l: v <= l)
    for fg in figures:
        add("relay recovery: %s within %d ms (SPEC)" % (
            fg.get("name"), fg.get("target")), fg.get("ms"),
            fg.get("target"), lambda v, l: v <= l)
    return out


def own_cpu_s(times_line):
    """Children's user + system seconds from the shell's `times`."""
    parts = re.findall(r"(\d+)m([\d.]+)s", times_line or "")
    return sum(int(m) * 60 + float(s) for m, s in parts) if parts else None


def noise(before, after, res, own_s):
    out = {"loadavg_before": before.get("loadavg"),
           "loadavg_after": after.get("loadavg")}
    try:
        a = [int(x) for x in before["stat_cpu"].split()[1:]]
        b = [int(x) for x in after["stat_cpu"].split()[1:]]
        d = [y - x for x, y in zip(a, b)]
        total = sum(d[:8])
        out["steal_pct"] = 100.0 * d[7] / total if total else 0.0
        out["cpu_busy_pct"] = (100.0 * (total - d[3] - d[4]) / total
                               if total else 0.0)
        if own_s is not None and total:
            hz = os.sysconf("SC_CLK_TCK")
            busy_s = (total - d[3] - d[4]) / hz
            out["own_cpu_s"] = own_s
            out["others_cpu_s"] = max(0.0, busy_s - own_s)
            out["others_cpu_pct"] = 100.0 * out["others_cpu_s"] / (
                total / hz)
    except (KeyError, IndexError, ValueError):
        pass
    worst = None
    for key, v in res.items():
        for m, s in v["spread_pct"].items():
            if s is not None and (worst is None or s > worst[0]):
                worst = (s, key, m)
    if worst:
        out["worst_round_spread_pct"] = worst[0]
        out["worst_round_spread_of"] = "%s %s" % (worst[1], worst[2])
    keys = ["p50_pinned_ms", "calls_per_s_32"]
    sp = [v["spread_pct"].get(m) for v in res.values() for m in keys
          if v["spread_pct"].get(m) is not None]
    if sp:
        out["median_round_spread_pct"] = statistics.median(sp)
    fl = res.get("floor", {}).get("figures", {})
    if fl.get("p50_pinned_ms") and fl.get("p99_pinned_ms"):
        out["floor_pinned_p99_over_p50"] = (fl["p99_pinned_ms"] /
                                            fl["p50_pinned_ms"])
    return out


def fmt_num(v, kind):
    if v is None:
        return "-"
    if kind == "ms":
        return "%.3f" % v if v < 10 else "%.1f" % v if v < 100 else \
            "%.0f" % v
    if kind == "rate":
        return "{:,.0f}".format(v)
    if kind == "mb":
        return "%.1f" % (v / 1024.0)
    if kind == "x":
        if v >= 100:
            return "%.0fx" % v
        return "%.2fx" % v if v < 10 else "%.1fx" % v
    return str(v)


# The system calls the cost line names first (when counted at all).
COST_SYSCALLS = ["read", "write", "writev", "readv", "recvfrom", "sendto",
                 "recvmsg", "sendmsg", "epoll_wait", "epoll_pwait",
                 "epoll_ctl", "accept4", "close"]

COLS = [
    ("p50_pinned_ms", "p50", "ms"),
    ("p99_pinned_ms", "p99", "ms"),
    ("p50_ms", "p50", "ms"),
    ("p99_ms", "p99", "ms"),
    ("calls_per_s_1", "@1", "rate"),
    ("calls_per_s_8", "@8", "rate"),
    ("calls_per_s_32", "@32", "rate"),
    ("peak_rss_kb", "gw", "mb"),
    ("peak_tree_rss_kb", "all", "mb"),
    ("first_call_ms", "call", "ms"),
]
WIDTH = [7, 7, 7, 7, 8, 10, 10, 7, 7, 8]
NAMEW = 28


def row(name, cells):
    return name.ljust(NAMEW) + "".join(
        c.rjust(w) for c, w in zip(cells, WIDTH))


def header():
    groups = [("latency pinned", 2), ("latency", 2), ("calls/s, sessions", 3),
              ("peak RSS MB", 2), ("start", 1)]
    top, i = "", 0
    for g, n in groups:
        w = sum(WIDTH[i:i + n])
        top += g.rjust(w)
        i += n
    return [" " * NAMEW + top, row("", [c[1] for c in COLS]),
            "-" * (NAMEW + sum(WIDTH))]


def print_report(doc):
    res, rat = doc["results"], doc["ratios"]
    lines = ["", "make bench: %d round(s), medians; latency of %d sequential "
             "tools/call; calls/s over %s s windows" % (
                 doc["config"]["rounds"], doc["config"]["calls"],
                 doc["config"]["window_s"])]
    lines += header()
    for key, label in TARGETS:
        v = res.get(key)
        if v is None:
            continue
        if not v["available"]:
            lines.append(row(label, ["-"] * len(COLS)) +
                         "  unavailable: " + str(v["unavailable"])[:60])
            continue
        cells = [fmt_num(v["figures"].get(m), k) for m, _, k in COLS]
        flag = "  ERRORS: %d" % v["errors"] if v["errors"] else ""
        lines.append(row(label, cells) + flag)
    lines.append("")
    lines.append("ratios (a / b: below 1 means a is lower)")
    for key, r in rat.items():
        a, b = key.split("/")
        name = "%s / %s" % (SHORT.get(a, a), SHORT.get(b, b))
        lines.append(row(name[:NAMEW - 1],
                         [fmt_num(r.get(m), "x") for m, _, _ in COLS]))
    ex = doc["mcpvisor"]
    if ex:
        lines.append("")
        lines.append(
            "mcpvisor: answers its first request %s ms after start; RSS "
            "idle %s MB, 100 sessions %s MB, 1,000 sessions %s MB "
            "(%s KB per session); first tools/list %s ms cold, %s ms warm" % (
                fmt_num(ex.get("answers_first_request_ms"), "ms"),
                fmt_num(ex.get("idle_rss_kb"), "mb"),
                fmt_num(ex.get("rss_100_sessions_kb"), "mb"),
                fmt_num(ex.get("rss_1000_sessions_kb"), "mb"),
                "-" if ex.get("per_session_kb") is None
                else "%.1f" % ex["per_session_kb"],
                fmt_num(ex.get("first_list_ms_cold"), "ms"),
                fmt_num(ex.get("first_list_ms_warm"), "ms")))
        for e in ex.get("errors", []):
            lines.append("  error: " + e)
    cost = doc.get("modern_cost")
    if cost:
        lines.append(
            "2026-07-28 / 2025 through mcpvisor TCP, cost (median of the "
            "rounds' ratios; calls/s as 2025 / 2026-07-28; target <= "
            "%.2f): %s" % (MODERN_COST, ", ".join(
                "%s %s" % (label, fmt_num(cost.get(m), "x"))
                for m, label, _ in MODERN_COST_METRICS)))
    rl = res.get("mcpvisor_relay")
    if rl and rl["available"]:
        lines.append(
            "relay: first tools/call %s ms after its spawn with the runtime "
            "running (target 50 ms), %s ms when it starts the runtime "
            "(SPEC: within 1 s)" % (
                fmt_num(rl["figures"].get("first_call_ms"), "ms"),
                fmt_num(rl["figures"].get("first_call_cold_ms"), "ms")))
    lim = doc.get("limit")
    if lim:
        ng, mv = lim["nginx"], lim["mcpvisor_limit"]
        lines.append("")
        lines.append(
            "the limit: one HTTP exchange under wrk (1 thread, 32 "
            "keep-alive connections, %s s windows, a fixed tools/call "
            "POST; the rounds run the two back to back; CPU: the server's, "
            "with all it spawned, per request)" %
            doc["config"].get("wrk_window_s"))
        for label, v in (("nginx, fixed answer", ng),
                         ("mcpvisor to echo (stdio)", mv)):
            lines.append(
                "  %-26s %10s req/s  CPU %s us/req  p50 %s ms  p99 %s ms  "
                "RSS %s MB%s%s" % (
                    label, fmt_num(v["requests_per_s"], "rate"),
                    "-" if v.get("cpu_us_per_request") is None
                    else "%.1f" % v["cpu_us_per_request"],
                    fmt_num(v["p50_ms"], "ms"), fmt_num(v["p99_ms"], "ms"),
                    fmt_num(v["rss_after_kb"] or v["peak_rss_kb"], "mb"),
                    " (after the run)" if v["rss_after_kb"] else
                    " (peak)",
                    "  ERRORS: %s" % v["first_error"] if v["errors"]
                    else ""))
        lines.append(
            "  mcpvisor / nginx: %s (median of the rounds' ratios %s; "
            "target >= %.2f)" % (
                fmt_num(lim.get("ratio"), "x"), ", ".join(
                    fmt_num(lim["ratio_rounds"][r], "x")
                    for r in sorted(lim["ratio_rounds"])), LIMIT_SHARE))
    bd = doc.get("bounds")
    if bd:
        fl = res.get("floor", {}).get("figures", {}).get("p50_pinned_ms")
        xp = bd.get("exchange_p50_pinned_ms")
        lines.append("")
        lines.append("what a hop cannot beat here (measured in this run)")
        lines.append(
            "  one HTTP exchange alone (bench/exchange to nginx's fixed "
            "answer, pinned): p50 %s ms%s; a hop to a stdio server is that "
            "plus the floor's stdio exchange: floor + %s ms for a runtime "
            "that did no more than nginx does, against the target of "
            "floor + %.2f ms" % (
                fmt_num(xp, "ms"), "" if xp is None or fl is None
                else " = floor + %.3f ms" % (xp - fl),
                fmt_num(xp, "ms"), PINNED_OVER_FLOOR_MS))
        lines.append(
            "  libcurl alone (bench/curl-alone, 8 sessions, direct): %s us "
            "CPU a call; the direct pair (loadgen + server) %s us; "
            "mcpvisor to a url server %s us" % tuple(
                "-" if bd.get(k) is None else "%.1f" % bd[k] for k in (
                    "curl_cpu_us_per_call", "direct_cpu_us_per_call",
                    "mcpvisor_cpu_us_per_call")))
        lines.append(
            "  so via a runtime that did nothing but libcurl's work / direct"
            " <= %s (rounds %s; target >= %.2f)%s" % (
                "-" if bd.get("ceiling_via_over_direct") is None
                else "%.2f" % bd["ceiling_via_over_direct"], ", ".join(
                    "%.2f" % bd["ceiling_rounds"][r]
                    for r in sorted(bd["ceiling_rounds"])),
                HTTP_VIA_SHARE_8, "  ERRORS: %s" % bd["first_error"]
                if bd.get("errors") else ""))
    cost = doc.get("cost")
    if cost:
        lines.append("")
        lines.append("cost of one tools/call in mcpvisor (bench/cost.sh: %s)"
                     % cost.get("method"))
        for key, label in (("v2025", "2025-11-25 session"),
                           ("modern", "2026-07-28 call")):
            c = cost.get(key)
            if not c:
                continue
            al = c.get("allocs", {})
            lines.append(
                "  %-20s %s instructions, %.1f allocations (malloc %.1f, "
                "calloc %.1f, realloc %.1f)" % (
                    label, "-" if c.get("instructions_per_call") is None
                    else "{:,.0f}".format(c["instructions_per_call"]),
                    c.get("allocs_per_call") or 0, al.get("malloc") or 0,
                    al.get("calloc") or 0, al.get("realloc") or 0))
        sc = cost.get("syscalls_per_10k_calls")
        if sc:
            own, srv = sc.get("mcpvisor", {}), sc.get("server", {})
            names = [k for k in COST_SYSCALLS if abs(own.get(k, 0)) >= 5]
            names += sorted((k for k in own if k not in names and
                             abs(own[k]) >= 5), key=lambda k: -own[k])
            lines.append("  system calls per 10,000 calls (strace -f): "
                         "mcpvisor %s, the echo server %s" % (
                             fmt_num(sum(own.values()), "rate"),
                             fmt_num(sum(srv.values()), "rate")))
            lines.append("    mcpvisor: " + ", ".join(
                "%s %s" % (k, fmt_num(own.get(k, 0), "rate"))
                for k in names))
        s32 = cost.get("syscalls_per_10k_calls_32_sessions")
        if s32 and s32.get("mcpvisor"):
            o32 = s32["mcpvisor"]
            lines.append("    with 32 sessions at once: mcpvisor %s (%s), "
                         "the echo server %s" % (
                             fmt_num(sum(o32.values()), "rate"), ", ".join(
                                 "%s %s" % (k, fmt_num(o32[k], "rate"))
                                 for k in COST_SYSCALLS
                                 if abs(o32.get(k, 0)) >= 5),
                             fmt_num(sum(s32.get("server", {}).values()),
                                     "rate")))
    if doc.get("relay_recovery"):
        lines.append("")
        lines.append("relay recovery (the SPEC's table; the scenarios of "
                     "tests/e2e/relay-recovery.test.mjs on this build)")
        for fg in doc["relay_recovery"]:
            lines.append("  %s: %s ms (target %s ms; another host's relay: "
                         "%s ms)" % (fg.get("name"),
                                     fmt_num(fg.get("ms"), "ms"),
                                     fg.get("target"), fg.get("reference")))
    lines.append("")
    lines.append("targets")
    for c in doc["checks"]:
        st = {True: "pass", False: "MISS", None: "n/a "}[c["pass"]]
        val = "-" if c["value"] is None else "%.4g" % c["value"]
        lim = "-" if c["limit"] is None else "%.4g" % c["limit"]
        lines.append("  %s  %s (got %s, limit %s)" % (st, c["name"], val,
                                                      lim))
    errs = [(v["label"], v["errors"], v["first_error"])
            for v in res.values() if v["errors"]]
    for label, n, first in errs:
        lines.append("errors: %s: %d, first: %s" % (label, n, first))
    n = doc["noise"]
    lines.append("")
    lines.append(
        "noise: other programs used %s%% of the CPUs during the run; "
        "loadavg %s before, %s after; CPU steal %s%%; rounds differ "
        "by %s%% (median, p50 pinned and calls/s@32), worst %s%% (%s); "
        "floor pinned p99/p50 %s" % (
            "-" if n.get("others_cpu_pct") is None
            else "%.0f" % n["others_cpu_pct"],
            n.get("loadavg_before"), n.get("loadavg_after"),
            "-" if n.get("steal_pct") is None else "%.1f" % n["steal_pct"],
            "-" if n.get("median_round_spread_pct") is None
            else "%.0f" % n["median_round_spread_pct"],
            "-" if n.get("worst_round_spread_pct") is None
            else "%.0f" % n["worst_round_spread_pct"],
            n.get("worst_round_spread_of", "-"),
            "-" if n.get("floor_pinned_p99_over_p50") is None
            else "%.1f" % n["floor_pinned_p99_over_p50"]))
    lines.append(
        "how: pinned = loadgen, gateway and all it spawned on one CPU "
        "(taskset); "
        "peak RSS: gateway = max(VmHWM, VmRSS sampled every 100 ms), all = "
        "sampled sum of VmRSS over the gateway and its descendants; floor: "
        "the stdio server's VmHWM; 'start' = spawn to first answered "
        "tools/call")
    lines.append("wrote %s (%d s)" % (doc["out"], doc["config"]["elapsed_s"]))
    print("\n".join(lines))


def rounded(v):
    """Six significant digits are plenty, and keep the file readable."""
    if isinstance(v, float):
        return float("%.6g" % v)
    if isinstance(v, dict):
        return {k: rounded(x) for k, x in v.items()}
    if isinstance(v, list):
        return [rounded(x) for x in v]
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--calls", type=int, default=0)
    ap.add_argument("--window", type=float, default=0)
    ap.add_argument("--package")
    ap.add_argument("--own-cpu", default="")
    ap.add_argument("--figures")
    ap.add_argument("--cost")
    ap.add_argument("--wrk-seconds", type=float, default=0)
    a = ap.parse_args()
    recs = load(a.raw)
    with open(a.before) as f:
        before = json.load(f)
    with open(a.after) as f:
        after = json.load(f)
    versions = {"node": before.get("node")}
    if a.package:
        with open(a.package) as f:
            versions.update(json.load(f).get("dependencies", {}))
    rounds = {r.get("round") for r in recs
              if r.get("target") == "floor" and r.get("round")}
    res = summarize(recs)
    for key in ("supergateway", "mcp_proxy"):
        name = key.replace("_", "-")
        if key in res and name in versions:
            res[key]["label"] += " " + versions[name]
    ex = mcpvisor_extras(recs)
    doc = {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": {"rounds": len(rounds), "calls": a.calls,
                   "window_s": a.window, "wrk_window_s": a.wrk_seconds,
                   "elapsed_s": a.seconds},
        "machine": {"ncpu": before.get("ncpu"), "model": before.get("model"),
                    "kernel": before.get("kernel")},
        "versions": versions,
        "results": res,
        "mcpvisor": ex,
        "ratios": ratios(res),
        "noise": noise(before, after, res, own_cpu_s(a.own_cpu)),
        "out": a.out,
        "metrics": {m: l for m, (l, _) in METRICS.items()},
    }
    doc["relay_recovery"] = load_figures(a.figures)
    doc["modern_cost"] = modern_cost(res)
    doc["limit"] = limit(recs)
    doc["bounds"] = bounds(recs)
    doc["cost"] = load_cost(a.cost)
    doc["targets"] = {
        "pinned_p50_over_floor_ms": PINNED_OVER_FLOOR_MS,
        "calls_per_s_32_over_best_peer": PEER_FACTOR_32,
        "relay_over_unix_ms": RELAY_OVER_UNIX_MS,
        "http_via_over_direct_8": HTTP_VIA_SHARE_8,
        "limit_mcpvisor_over_nginx": LIMIT_SHARE,
        "instructions_per_call": INSTR_PER_CALL,
        "idle_rss_kb": 4096, "per_session_kb": 16}
    doc["checks"] = checks(res, ex, doc["relay_recovery"],
                           doc["modern_cost"], doc["limit"], doc["cost"])
    with open(a.out, "w") as f:
        json.dump(rounded(doc), f, indent=1, sort_keys=True)
        f.write("\n")
    print_report(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
