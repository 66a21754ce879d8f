"""What a person reads: the progress bar (stderr), the machine line and the markdown tables."""
import math
import os
import platform
import sys
import threading
import time

from . import US


class Progress:
    """A one-line progress bar on ``stream``; one line per step where it is no terminal."""

    def __init__(self, total=0, stream=None, width=24):
        self.total, self.done, self.width = total, 0, width
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.tty = self.stream.isatty()
        self._lock = threading.Lock()

    def extend(self, n):
        """Add ``n`` steps to the total."""
        self.total += n

    def step(self, label):
        """Say that the next step, ``label``, starts now (callable from several threads)."""
        with self._lock:
            self._draw(self.done, label)
            self.done += 1

    def say(self, message):
        """Print a message line without breaking the bar."""
        self.stream.write(("\r\033[K" if self.tty else "") + message + "\n")
        self.stream.flush()

    def finish(self):
        """Draw the full bar and end its line."""
        self._draw(self.done, "done")
        if self.tty:
            self.stream.write("\n")
        self.stream.flush()

    def _draw(self, done, label):
        total = max(self.total, done, 1)
        fill = round(self.width * done / total)
        secs = int(time.monotonic() - self.start)
        line = (f"[{'#' * fill}{'-' * (self.width - fill)}] {done}/{total} "
                f"{secs // 60}m{secs % 60:02d}s  {label}")
        self.stream.write(("\r\033[K" + line) if self.tty else line + "\n")
        self.stream.flush()


def machine():
    """The machine and the load on it, for the report."""
    cpu = "unknown cpu"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f
                        if ln.startswith("model name")), cpu)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_bytes": mem,
            "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(), "load_average": os.getloadavg()}


# ------------------------------------------------------------------ formatting
def ms(seconds):
    """Milliseconds with about three significant digits."""
    v = seconds * 1e3
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 0.1 \
        else f"{v:.4f}"


def ratio(x):
    return "—" if x is None else f"{x:.2f}"


def _table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows]


def _run_line(doc):
    m, cfg = doc["machine"], doc["config"]
    quick = cfg["quick"]
    flags = (" --quick" if quick else "") + \
        (f" --threads {cfg['threads']}" if cfg.get("threads") else "") + \
        (f" --busy {cfg['busy']}" if cfg.get("busy") else "")
    lines = [(f"Taken {doc['created']} with `python -m bench{flags}`"
              f"{' (tiny sizes: the harness works, the numbers mean nothing)' if quick else ''}.")]
    if cfg["fake_gpu"] and "gpu" in cfg["backends"]:
        lines.append("The `gpu` backend here is the counting numpy stand-in "
                     "(PHISPARSE_BENCH_FAKE_GPU=1), not a GPU.")
    lines.append(f"Machine: {m['cpu']}, {m['cores']} cores, "
                 f"{m['memory_bytes'] / 2**30:.1f} GiB RAM, {m['system']}, Python "
                 f"{m['python']}; load average {m['load_average'][0]:.1f} at the start, "
                 f"{m.get('load_average_end', [0])[0]:.1f} at the end.")
    return lines


def _floor_lines(doc):
    lines = [(f"Memory floor [{be}]: a copy of {r['copy_bytes'] / 2**20:.0f} MiB moves "
              f"{r['reused_gbps']:.1f} GB/s into a reused buffer and {r['fresh_gbps']:.1f} GB/s "
              f"into a fresh one (bytes read + written, median of {r['samples']}).")
             for be, r in doc["floors"].items()]
    clocks = doc.get("clocks", {})
    if clocks:
        lines.append("Clock: " + "; ".join(f"[{be}] {CLOCKS.get(c, c)}"
                                            for be, c in clocks.items()) + ".")
    return lines


CLOCKS = {"perf_counter": "the host's perf_counter between two barriers",
          "cuda events": "CUDA events recorded on the current stream before and after "
                         "each call (device time)"}


def _method(cfg):
    envs = "; ".join(f"`{a}`: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                   or "no variables set")
                     for a, env in cfg["alloc_env"].items())
    rounds = cfg.get("group_rounds", 1)
    where = " (here: one process per peer and round)" if not cfg["isolate"] else (
        f"; the short `tiny/*` and `dense/*` rows share one process per peer and round, "
        f"over {rounds} rounds ({cfg['repeats_per_process'] * rounds} calls)")
    return (f"Each figure is the median (and min) of {cfg['repeats']} timed calls after a "
            f"warm-up ({cfg['repeats_per_process']} per round, {cfg['rounds']} round(s)), "
            f"every (workload, peer) in its own process{where}. Every peer runs under the "
            f"same allocation settings, per mode ({envs}); `default` leaves every library at "
            "its defaults (the headline), `fresh` outputs are new memory that pays "
            "first-touch page faults wherever a library can be made to take it, `reused` "
            "outputs land in warm memory. The `seen` column says which one each row's peak memory shows: an "
            "allocator of a peer's own can reuse memory in either mode. `× floor` is the "
            "median over the memory floor of the row's mode (the warm-buffer floor for "
            "`default`); the JSON has both floors. "
            "Memory is the peak RSS rise of the process over its RSS once the inputs were "
            "built and the warm-up call done.")


def _header(doc):
    return (["# phisparse benchmarks", ""] + _run_line(doc) + [""] + _floor_lines(doc)
            + ["", _method(doc["config"]), ""])


def _summary(doc, be, alloc):
    rows = []
    for v in doc["versus"]:
        if (v["backend"], v["alloc"]) != (be, alloc):
            continue
        ours, best = v["ours"], v["best_peer"]
        row = [v["workload"], ms(ours["median_s"]) if ours else "—",
               f"{best['peer']} ({best['impl']}) {ms(best['median_s'])}" if best else "—",
               ratio(v["ours_over_best_peer"]), ratio(v["ours_over_floor"])]
        rows.append(row + ([_reusers(doc, v["workload"], be)] if alloc == "fresh" else []))
    head = ["workload", US, "fastest peer", "ours / peer", "ours × floor"]
    head += ["reused memory anyway"] if alloc == "fresh" else []
    title = (f"## Summary [{be}, {MODE_TITLE.get(alloc, alloc + ' outputs')}]: {US} against "
             "the fastest peer (ms; ratio < 1: we are faster)")
    return [title, ""] + _table(head, rows)


MODE_TITLE = {"default": "every library at its defaults", "fresh": "fresh outputs"}

#: Tables of every peer side by side: (workload name prefix, title, unit, seconds to the
#: unit, the peer each row is compared with).  The issues set their goals this way: per
#: call against Paddle's eager call, large dense ops against numpy.
BY_PEER = (("tiny/", "Per call on 10 elements", "µs", 1e6, "paddle"),
           ("dense/", "Dense ops on 16 MiB of float32", "ms", 1e3, "numpy"))


def _by_peer(doc, be, alloc, prefix, title, unit, scale, ref):
    """One row per workload starting with ``prefix``: each peer's best median, and ours
    over ``ref``'s; empty when no such row ran."""
    medians = {}
    for r in doc["results"]:
        if (r["backend"], r.get("alloc"), r["status"]) == (be, alloc, "ok") \
                and r["workload"].startswith(prefix):
            row = medians.setdefault(r["workload"], {})
            row[r["peer"]] = min(row.get(r["peer"], math.inf), r["median_s"])
    if not medians:
        return []
    peers = [p for p in doc["peers"] if any(p in row for row in medians.values())]
    rows = []
    for name, row in medians.items():
        ours, other = row.get(US), row.get(ref)
        rows.append([name] + [f"{row[p] * scale:.3g}" if p in row else "—" for p in peers]
                    + [ratio(ours / other if ours and other else None)])
    head = ["workload"] + [f"{p} {unit}" for p in peers] + [f"{US} / {ref}"]
    return [f"## {title} [{be}, {MODE_TITLE.get(alloc, alloc + ' outputs')}]: medians, "
            f"{unit}", ""] + _table(head, rows)


def _reusers(doc, workload, be):
    """The peers whose peak memory shows reused memory in a fresh-mode row."""
    names = sorted({r["peer"] for r in doc["results"]
                    if (r["workload"], r["backend"], r.get("alloc"), r["status"],
                        r.get("observed_mode")) == (workload, be, "fresh", "ok", "reused")})
    return ", ".join(names) or "—"


def _details(doc, be, alloc):
    """Every ok row of (be, alloc); device rows also show the share of copy bandwidth."""
    device = be != "cpu"
    rows = []
    for r in doc["results"]:
        if (r["backend"], r.get("alloc"), r["status"]) != (be, alloc, "ok"):
            continue
        row = [r["workload"], f"{r['peer']} ({r['impl']})", ms(r["median_s"]),
               ms(r["min_s"]), ratio(r["ratio_to_fastest"]), ratio(r.get("ratio_to_floor"))]
        row += [_bandwidth(r.get("ratio_to_floor"))] if device else []
        rows.append(row + [f"{r['peak_extra_bytes'] / 2**20:.0f}", r["observed_mode"]])
    head = ["workload", "peer (impl)", "median ms", "min ms", "× fastest", "× floor"]
    head += ["% of copy bandwidth"] if device else []
    head += ["peak extra MiB", "seen"]
    return [f"## All figures [{be}, {alloc} outputs]", ""] + _table(head, rows)


def _bandwidth(floor_ratio):
    """The floor ratio as the share of copy bandwidth the row achieved."""
    return "—" if not floor_ratio else f"{100 / floor_ratio:.0f}%"


def _workloads(doc, be):
    """The workloads with their sizes and floors on backend ``be`` (gpu sizes on 'gpu')."""
    rows = []
    for name, w in doc["workloads"].items():
        size, fl = w.get(be, w), w["floor"].get(be)
        rows.append([name, size["description"],
                     f"{size['read_bytes'] / 1e6:.1f} + {size['write_bytes'] / 1e6:.1f}",
                     ms(fl["fresh_s"]) if fl else "—", ms(fl["reused_s"]) if fl else "—"])
    return [f"## Workloads [{be}]" if be != "cpu" else "## Workloads", ""] + _table(
        ["workload", "what", "MB read + written", "floor ms", "floor reused ms"], rows)


def _not_measured(doc):
    lines = [f"- backend {be}: {why}" for be, why in doc["skipped_backends"].items()]
    lines += [f"- peer {n}: {p['reason']}" for n, p in doc["peers"].items()
              if p["status"] != "ok"]
    lines += [f"- peer {n} [{be}]: {why}" for n, p in doc["peers"].items()
              for be, why in p.get("skipped_backends", {}).items()]
    grouped = {}
    for r in doc["results"]:
        if r["status"] != "ok":
            key = (r["peer"], r["backend"], r["status"], r["reason"])
            grouped.setdefault(key, []).append(r["workload"])
    lines += [f"- {peer} [{be}], {status}: {reason}: {', '.join(names)}"
              for (peer, be, status, reason), names in grouped.items()]
    return ["## Not measured", ""] + (lines or ["- nothing"])


def _peers(doc):
    rows = [[n, p.get("version", "—"), p["status"], f"`{p['python']}`"]
            for n, p in doc["peers"].items()]
    return ["## Peers", ""] + _table(["peer", "version", "status", "python"], rows)


def markdown(doc):
    """The whole report as markdown."""
    parts = [_header(doc)]
    groups = [(be, a) for be in doc["config"]["backends"] for a in doc["config"]["allocs"]]
    for g in groups:
        parts += [_summary(doc, *g), [""]]
        for spec in BY_PEER:
            table = _by_peer(doc, *g, *spec)
            parts += [table, [""]] if table else []
    for g in groups:
        parts += [_details(doc, *g), [""]]
    for be in doc["config"]["backends"]:
        parts += [_workloads(doc, be), [""]]
    parts += [_not_measured(doc), [""], _peers(doc)]
    return "\n".join(line for part in parts for line in part) + "\n"
