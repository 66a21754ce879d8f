"""From raw worker results to the run's JSON document: pooled rounds, medians, ratios.

Ratios compare rows of one (workload, backend, allocation mode): to the
fastest median there, and to the memory floor of that mode (the fresh-output
floor for ``fresh`` rows, the warm-buffer floor for ``reused`` rows); both
floor ratios are kept.  A gpu row is compared with the gpu floor (a device
copy timed by the same clock) at the gpu size of its workload.  A row's
observed mode is ``fresh`` when its peak memory rose by at least half the
bytes the op writes (its output was new memory), else ``reused``.
"""
import dataclasses
import math
import statistics
import time

from . import US, floor
from .backends import fake_gpu
from .peers import PEERS
from .runner import ALLOC_ENV

KEY = ("workload", "backend", "alloc", "peer", "impl")


def _pool(raw):
    """Pool the rounds of each (workload, backend, alloc, peer, impl)."""
    pooled = {}
    for r in raw:
        key = tuple(r[k] for k in KEY)
        p = pooled.setdefault(key, {**dict(zip(KEY, key)), "status": "ok", "times_s": [],
                                    "faults": [], "peak_extra_bytes": 0,
                                    "baseline_rss_bytes": 0, "syncs": 0, "peak_reset": True})
        if r["status"] != "ok":
            p.update(status=r["status"], reason=r["reason"])
            continue
        p["times_s"] += r["times_s"]
        p["faults"] += r["faults"]
        p["syncs"] += r["syncs"]
        p["clock"] = r["clock"]
        p["peak_reset"] &= r["peak_reset"]
        for k in ("peak_extra_bytes", "baseline_rss_bytes"):
            p[k] = max(p[k], r[k])
    return list(pooled.values())


#: The floor each mode's rows are compared with: libraries at their defaults
#: reuse memory (our pool, TensorFlow's allocator), so ``default`` rows meet
#: the warm-buffer floor.
FLOOR_OF = {"default": "reused", "fresh": "fresh", "reused": "reused"}


def observed_mode(backend, peak_extra, write):
    """'fresh' if the output was new memory, 'reused' if not, 'device' off the host."""
    if backend != "cpu":
        return "device"
    return "fresh" if peak_extra >= 0.5 * write else "reused"


def _row(p, w, quick):
    if p["status"] != "ok":
        return {k: v for k, v in p.items() if k not in ("times_s", "faults", "syncs")}
    return {**p, "median_s": statistics.median(p["times_s"]), "min_s": min(p["times_s"]),
            "repeats": len(p["times_s"]), "faults_per_call": statistics.median(p["faults"]),
            "observed_mode": observed_mode(p["backend"], p["peak_extra_bytes"],
                                           w.traffic(quick, p["backend"])[1])}


def _ratios(rows, info):
    """Set each ok row's ratios to the fastest row of its group and to the floors."""
    best = {}
    for r in rows:
        key = (r["workload"], r["backend"], r["alloc"])
        best[key] = min(best.get(key, math.inf), r["median_s"])
    for r in rows:
        r["ratio_to_fastest"] = r["median_s"] / best[(r["workload"], r["backend"], r["alloc"])]
        fl = info[r["workload"]]["floor"].get(r["backend"])
        if fl:
            r["ratio_to_floor_fresh"] = r["median_s"] / fl["fresh_s"]
            r["ratio_to_floor_reused"] = r["median_s"] / fl["reused_s"]
            r["ratio_to_floor"] = r[f"ratio_to_floor_{FLOOR_OF[r['alloc']]}"]


def _workload_info(workloads, backends, rates, quick):
    """Per workload: its description and traffic at the cpu size, the floor on each
    backend at that backend's size, and under ``gpu`` the size the gpu rows ran at
    where it differs from the cpu one."""
    info = {}
    for w in workloads:
        read, write = w.traffic(quick)
        fl = {be: dict(zip(("reused_s", "fresh_s"),
                           floor.floor_seconds(*w.traffic(quick, be), r)))
              for be, r in rates.items()}
        info[w.name] = {"op": w.op, "description": w.describe(quick),
                        "read_bytes": read, "write_bytes": write, "floor": fl}
        if "gpu" in backends and w.params(quick, "gpu") is not w.params(quick):
            g_read, g_write = w.traffic(quick, "gpu")
            info[w.name]["gpu"] = {"description": w.describe(quick, "gpu"),
                                   "read_bytes": g_read, "write_bytes": g_write}
    return info


def _versus(rows, workloads, backends, allocs):
    """Per workload, backend and mode: our best median against the best other peer's."""
    out = []
    for w in workloads:
        for be in backends:
            for alloc in allocs:
                group = [r for r in rows if (r["workload"], r["backend"], r["alloc"])
                         == (w.name, be, alloc)]
                ours = min((r for r in group if r["peer"] == US),
                           key=lambda r: r["median_s"], default=None)
                other = min((r for r in group if r["peer"] != US),
                            key=lambda r: r["median_s"], default=None)
                out.append({
                    "workload": w.name, "backend": be, "alloc": alloc,
                    "ours": ours and {k: ours[k] for k in ("impl", "median_s")},
                    "best_peer": other and {k: other[k] for k in ("peer", "impl", "median_s")},
                    "ours_over_best_peer": (ours["median_s"] / other["median_s"]
                                            if ours and other else None),
                    "ours_over_floor": ours and ours.get("ratio_to_floor")})
    return out


def _clocks(rows, rates):
    """The clock each backend's timings were read with ('cuda events', 'perf_counter')."""
    clocks = {r["backend"]: r["clock"] for r in rows}
    return {**clocks, **{be: r["clock"] for be, r in rates.items()}}


def document(parts, opts, machine):
    """The JSON document of the run."""
    rates = {be: floor.model(s) for be, s in parts["floors"].items() if s}
    info = _workload_info(parts["workloads"], parts["backends"], rates, opts.quick)
    by_name = {w.name: w for w in parts["workloads"]}
    rows = [_row(p, by_name[p["workload"]], opts.quick) for p in _pool(parts["raw"])]
    ok = [r for r in rows if r["status"] == "ok"]
    _ratios(ok, info)
    order = {name: i for i, name in enumerate([*by_name, *PEERS])}
    rows.sort(key=lambda r: (order[r["workload"]], r["backend"], r["alloc"],
                             order[r["peer"]], r["impl"]))
    return {
        "schema": 1, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine,
        "config": {**dataclasses.asdict(opts), "peers": list(opts.peers),
                   "allocs": list(opts.allocs), "backends": parts["backends"],
                   "fake_gpu": fake_gpu(),
                   "repeats_per_process": math.ceil(opts.repeats / opts.rounds),
                   "alloc_env": {a: ALLOC_ENV[a] for a in opts.allocs}},
        "skipped_backends": parts["no_backend"],
        "clocks": _clocks(ok, rates),
        "floors": rates, "peers": parts["peers"], "workloads": info,
        "results": rows + parts["notes"],
        "versus": _versus(ok, parts["workloads"], parts["backends"], opts.allocs),
    }
