"""The PNG chart: per workload, one bar per peer, as the median over the memory floor.

One panel per backend and allocation mode; the ``fresh`` panel is the headline.
"""
from . import US
from .peers import PEERS

COLORS = {US: "#d62728", "numpy": "#1f77b4", "scipy": "#2ca02c", "pydata-sparse": "#9467bd",
          "torch": "#ff7f0e", "paddle": "#17becf", "tensorflow": "#8c564b"}


def _best_per_peer(rows):
    """The fastest impl of each peer: {(workload, peer): row}."""
    best = {}
    for r in rows:
        key = (r["workload"], r["peer"])
        if key not in best or r["median_s"] < best[key]["median_s"]:
            best[key] = r
    return best


def _value(row):
    return row.get("ratio_to_floor", row["median_s"] * 1e3)


def _rows(doc, be, alloc):
    return [r for r in doc["results"]
            if r["status"] == "ok" and (r["backend"], r["alloc"]) == (be, alloc)]


def _draw(ax, doc, be, alloc):
    rows = _rows(doc, be, alloc)
    best = _best_per_peer(rows)
    peers = [p for p in PEERS if p in {q for _, q in best}]
    ticks, labels, y = [], [], 0.0
    for name in doc["workloads"]:
        present = [p for p in peers if (name, p) in best]
        if not present:
            continue
        for i, p in enumerate(present):
            ax.barh(y + i, _value(best[(name, p)]), color=COLORS.get(p, "grey"),
                    label=p, height=0.85)
        ticks.append(y + (len(present) - 1) / 2)
        labels.append(name)
        y += len(present) + 1
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    has_floor = all("ratio_to_floor" in r for r in rows)
    if has_floor:
        ax.axvline(1.0, color="black", linewidth=1, linestyle="--")
    ax.set_xlabel(f"median / memory floor ({alloc} outputs); 1 = the floor" if has_floor
                  else "median (ms)")
    ax.set_title(f"[{be}, {alloc} outputs] {doc['machine']['cpu']}, "
                 f"{doc['machine']['cores']} cores"
                 f"{' — quick sizes' if doc['config']['quick'] else ''}", fontsize=9)
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="lower right")


def plot(doc, path):
    """Write the chart of ``doc`` (the run's JSON document) to ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(be, a) for be in doc["config"]["backends"] for a in doc["config"]["allocs"]]
    heights = [max(4.0, 0.16 * _bar_count(doc, *p)) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        _draw(ax, doc, *panel)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bar_count(doc, be, alloc):
    return len(_best_per_peer(_rows(doc, be, alloc))) + len(doc["workloads"])
