"""The benchmark harness (``python -m bench``): structure, ratios, skips, the device path.

No test asserts a timing.  One module-scoped ``--quick`` run (tiny sizes) with
phisparse, numpy and scipy, a torch peer pointed at a missing interpreter and
the counting stand-in for a GPU feeds the end-to-end checks; the rest are unit
tests of the pieces, and a check that the peers benchmark the same maths.
"""
import json
import math
import os
import statistics
import subprocess
import sys

import numpy as np
import pytest

from bench import ROOT, US, floor, measure, report, runner, summary, workloads
from bench.__main__ import parse
from bench.backends import Backend
from bench.peers import PEERS
from bench.worker import _isolate

pytest.importorskip("matplotlib")

REPEATS = 5


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "PHISPARSE_BENCH_TORCH": str(out / "no-such-python"),
           "PHISPARSE_BENCH_FAKE_GPU": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--peers", "phisparse,numpy,scipy,torch",
         "--backends", "cpu,gpu", "--alloc", "default,fresh,reused", "--repeats", str(REPEATS),
         "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, json.loads((out / "latest.json").read_text()), proc


def _ok(doc):
    return [r for r in doc["results"] if r["status"] == "ok"]


# ------------------------------------------------------------------ end to end
def test_json_structure(quick_run):
    _, doc, _ = quick_run
    assert {"schema", "machine", "config", "floors", "peers", "workloads", "results",
            "versus"} <= set(doc)
    assert set(doc["workloads"]) == {w.name for w in workloads.WORKLOADS}
    for name, w in doc["workloads"].items():
        read, write = workloads.BY_NAME[name].traffic(quick=True)
        assert (w["read_bytes"], w["write_bytes"]) == (read, write)
        assert set(w["floor"]) == {"cpu", "gpu"}
    assert set(doc["floors"]) == {"cpu", "gpu"}
    assert all(r["reused_gbps"] > 0 and r["fresh_gbps"] > 0 for r in doc["floors"].values())


def test_every_measured_result_has_times_and_memory(quick_run):
    _, doc, _ = quick_run
    ok = _ok(doc)
    assert {r["peer"] for r in ok} == {US, "numpy", "scipy"}
    for r in ok:
        assert len(r["times_s"]) == r["repeats"] == REPEATS
        assert r["median_s"] == statistics.median(r["times_s"])
        assert r["min_s"] == min(r["times_s"])
        assert isinstance(r["peak_extra_bytes"], int) and r["peak_extra_bytes"] >= 0
        assert r["baseline_rss_bytes"] > 0
        assert r["observed_mode"] in ({"fresh", "reused"} if r["backend"] == "cpu"
                                      else {"device"})
    assert {(r["backend"], r["alloc"]) for r in ok} == {
        (be, alloc) for be in ("cpu", "gpu") for alloc in ("default", "fresh", "reused")}


def test_ratios_come_from_the_medians(quick_run):
    _, doc, _ = quick_run
    groups = {}
    for r in _ok(doc):
        groups.setdefault((r["workload"], r["backend"], r["alloc"]), []).append(r)
    for (name, be, alloc), rows in groups.items():
        best = min(r["median_s"] for r in rows)
        fl = doc["workloads"][name]["floor"][be]
        for r in rows:
            assert math.isclose(r["ratio_to_fastest"], r["median_s"] / best)
            assert math.isclose(r["ratio_to_floor_fresh"], r["median_s"] / fl["fresh_s"])
            assert math.isclose(r["ratio_to_floor_reused"], r["median_s"] / fl["reused_s"])
            want = {"default": "reused"}.get(alloc, alloc)     # defaults reuse memory
            assert r["ratio_to_floor"] == r[f"ratio_to_floor_{want}"]
        assert min(r["ratio_to_fastest"] for r in rows) == 1.0
    for v in doc["versus"]:
        rows = groups.get((v["workload"], v["backend"], v["alloc"]), [])
        ours = [r for r in rows if r["peer"] == US]
        other = [r["median_s"] for r in rows if r["peer"] != US]
        if ours and other:
            assert math.isclose(v["ours_over_best_peer"],
                                min(r["median_s"] for r in ours) / min(other))
            best = min(ours, key=lambda r: r["median_s"])
            assert v["ours_over_floor"] == best["ratio_to_floor"]
        else:
            assert v["ours_over_best_peer"] is None


def test_floor_follows_its_model(quick_run):
    _, doc, _ = quick_run
    rates = doc["floors"]["cpu"]
    for w in doc["workloads"].values():
        reused, fresh = floor.floor_seconds(w["read_bytes"], w["write_bytes"], rates)
        assert math.isclose(w["floor"]["cpu"]["reused_s"], reused)
        assert math.isclose(w["floor"]["cpu"]["fresh_s"], fresh)
        assert fresh >= reused


def test_missing_peer_is_skipped_with_its_reason(quick_run):
    _, doc, proc = quick_run
    torch = doc["peers"]["torch"]
    assert torch["status"] == "skipped"
    assert "not found" in torch["reason"] and "PHISPARSE_BENCH_TORCH" in torch["reason"]
    assert "peer torch: skipped" in proc.stderr
    assert not [r for r in doc["results"] if r["peer"] == "torch"]


def test_structural_gaps_are_reported_with_reasons(quick_run):
    _, doc, _ = quick_run
    skipped = [r for r in doc["results"] if r["status"] == "skipped"]
    scipy_dense = [r for r in skipped if r["peer"] == "scipy" and "dense4" in r["workload"]]
    assert len(scipy_dense) == 4  # the dense-dim COO workloads, on cpu only
    assert all("dense dims" in r["reason"] for r in scipy_dense)


def test_gpu_path_synchronises_every_timed_call(quick_run):
    _, doc, _ = quick_run
    gpu = [r for r in _ok(doc) if r["backend"] == "gpu"]
    assert {r["peer"] for r in gpu} == {US, "numpy"}  # scipy is cpu-only
    for r in gpu:
        assert r["syncs"] == 2 * (REPEATS + 1)  # before and after each call, warm-up included
        assert r["observed_mode"] == "device"


def test_outputs_are_written(quick_run):
    out, _, proc = quick_run
    assert (out / "latest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "latest.md").read_text()
    for head in ("## Summary [cpu, every library at its defaults]",
                 "## Summary [cpu, fresh outputs]", "## Summary [gpu, reused outputs]",
                 "## All figures [cpu, fresh outputs]", "## Not measured"):
        assert head in md
    fresh = md.split("## Summary [cpu, fresh outputs]")[1].split("##")[0]
    assert "| reused memory anyway |" in fresh
    assert md == proc.stdout
    assert len(list(out.glob("bench-*.json"))) == 1


# ------------------------------------------------------------------ pieces
class _Recorder:
    def __init__(self):
        self.events = []

    def backend(self):
        return Backend("gpu", np, lambda: self.events.append("sync"))


def test_time_case_brackets_each_call_with_sync():
    rec = _Recorder()
    case = measure.Case(lambda: rec.events.append("run") or np.zeros(3),
                        reset=lambda: rec.events.append("reset"))
    times, faults = measure.time_case(case, rec.backend(), repeats=3, warmup=1)
    assert len(times) == len(faults) == 3
    assert rec.events == ["reset", "sync", "run", "sync"] * 4 + ["reset"]


def test_measure_reports_memory_fields():
    be = Backend("cpu", np, lambda: None)
    m = measure.measure(measure.Case(lambda: np.ones(2**20)), be, repeats=2)
    assert m["baseline_rss_bytes"] > 0 and m["peak_extra_bytes"] >= 0
    assert m["syncs"] == 2 * 3


def test_floor_model_counts_read_plus_write():
    samples = [{"bytes": 100, "reused_s": [2.0, 2.0], "fresh_s": [3.0, 3.0]}]
    rates = floor.model(samples)
    assert rates["reused_gbps"] == pytest.approx(2 * 100 / 2.0 / 1e9)
    assert rates["first_touch_s_per_byte"] == pytest.approx(1.0 / 100)
    reused, fresh = floor.floor_seconds(50, 50, rates)
    assert reused == pytest.approx(1.0) and fresh == pytest.approx(1.5)


def test_unique_flat_is_distinct_sorted_and_in_range():
    rng = np.random.default_rng(0)
    for size, nnz in [(10, 10), (1000, 7), (16, 9), (10**9, 1000)]:
        flat = workloads.unique_flat(size, nnz, rng)
        assert len(flat) == nnz and flat.min() >= 0 and flat.max() < size
        assert np.all(np.diff(flat) > 0)
    with pytest.raises(ValueError):
        workloads.unique_flat(5, 6, rng)


@pytest.mark.parametrize("w", workloads.WORKLOADS, ids=lambda w: w.name)
def test_quick_inputs_are_valid(w):
    inp = w.inputs(quick=True)
    if w.op == "coo_reshape":
        sd = len(w.quick["shape"])
        assert inp["indices"].shape == (sd, w.quick["nnz"])
        assert np.all(inp["indices"] < np.array(w.quick["shape"])[:, None])
        assert math.prod(inp["shape"]) == math.prod(inp["new_shape"])
    elif w.op == "csr_reshape":
        rows = w.quick["shape"][-2]
        crows = inp["crows"].reshape(-1, rows + 1)
        assert np.all(np.diff(crows, axis=1) >= 0) and crows[:, -1].sum() == len(inp["cols"])
    if w.op.endswith("_grad"):
        assert inp["out_grad"].shape == workloads.OUT_SHAPE[w.op[:-5]](w.quick)


def test_isolate_drops_the_checkout_for_other_peers(monkeypatch):
    monkeypatch.setattr(sys, "path", [str(ROOT), "/elsewhere"])
    _isolate(PEERS[US])
    assert sys.path == [str(ROOT), "/elsewhere"]
    _isolate(PEERS["pydata-sparse"])
    assert sys.path == ["/elsewhere"]


def test_interpreter_comes_from_env_or_peers_dir(monkeypatch, tmp_path):
    spec = PEERS["pydata-sparse"]
    monkeypatch.delenv(spec.env_var, raising=False)
    monkeypatch.setenv("PHISPARSE_BENCH_PEERS_DIR", str(tmp_path))
    assert spec.interpreter() == str(tmp_path / "venv-pydata" / "bin" / "python")
    monkeypatch.setenv(spec.env_var, "/opt/py")
    assert spec.env_var == "PHISPARSE_BENCH_PYDATA_SPARSE" and spec.interpreter() == "/opt/py"
    assert PEERS["numpy"].interpreter() == sys.executable


def test_schedule_interleaves_rounds():
    jobs = [runner.Job("w1", "cpu", "fresh", p, "i") for p in "abc"]
    jobs.append(runner.Job("w2", "cpu", "fresh", "a", "i"))
    batches = runner.schedule(jobs, rounds=2, isolate=True)
    assert [b[0].peer for b in batches] == list("abc") + list("cba") + ["a", "a"]
    grouped = runner.schedule(jobs, rounds=2, isolate=False)
    assert [[j.workload for j in b] for b in grouped] == [["w1", "w2"], ["w1"], ["w1"],
                                                          ["w1"], ["w1"], ["w1", "w2"]]


def test_schedule_runs_grouped_jobs_of_a_peer_together_in_many_rounds():
    assert workloads.BY_NAME["tiny/exp"].grouped and workloads.BY_NAME["dense/sum/all"].grouped
    assert not workloads.BY_NAME["expand"].grouped
    tiny = [runner.Job(w, "cpu", "default", p, "i") for p in "ab" for w in ("tiny/exp",
                                                                            "dense/sum/all")]
    jobs = [runner.Job("expand", "cpu", "default", p, "i") for p in "ab"] + tiny
    batches = runner.schedule(jobs, rounds=2, isolate=True, group_rounds=3)
    assert [[(j.workload, j.peer) for j in b] for b in batches[:4]] == [
        [("expand", "a")], [("expand", "b")], [("expand", "b")], [("expand", "a")]]
    per_call = batches[4:]
    assert [b[0].peer for b in per_call] == ["a", "b", "b", "a", "a", "b"]
    assert all([j.workload for j in b] == ["tiny/exp", "dense/sum/all"] for b in per_call)
    assert all(len({j.peer for j in b}) == 1 for b in per_call)


def test_alloc_modes_set_the_same_environment_for_every_peer(monkeypatch):
    monkeypatch.setenv("PHISPARSE_POOL_BYTES", "123")
    fresh, reused = runner.worker_env("fresh"), runner.worker_env("reused")
    assert fresh["PHISPARSE_POOL_BYTES"] == "0" and "PHISPARSE_POOL_BYTES" not in reused
    assert fresh["MALLOC_MMAP_THRESHOLD_"] == "131072" and "MALLOC_MMAP_MAX_" not in fresh
    assert reused["MALLOC_MMAP_MAX_"] == "0"


def test_observed_mode_follows_the_peak_memory():
    assert summary.observed_mode("cpu", 1000, 1500) == "fresh"
    assert summary.observed_mode("cpu", 10, 1500) == "reused"
    assert summary.observed_mode("gpu", 0, 1500) == "device"


def test_selection_and_options():
    assert [w.name for w in runner.select_workloads("^gather")] == ["gather", "gather_grad"]
    with pytest.raises(SystemExit):
        parse(["--peers", "phisparse,nonesuch"])
    with pytest.raises(SystemExit):
        runner.execute(runner.Options(only="no-such-workload"), None, print)


def test_missing_phisparse_op_is_a_reason(monkeypatch):
    phis = pytest.importorskip("bench.peers.phisparse_peer")
    monkeypatch.setitem(phis._MODULES, "dense", object())
    reason = phis.unsupported("gather_grad", {})
    assert reason == "phisparse has no dense.gather yet"


# ------------------------------------------------------------------ same maths
def _outputs(peer, w):
    """(impl, dense output) of every impl ``peer`` has for ``w`` at quick size."""
    module = pytest.importorskip(f"bench.peers.{PEERS[peer].module}")
    unsupported = getattr(module, "unsupported", lambda op, p: None)
    if w.op not in module.IMPLS or unsupported(w.op, w.quick):
        return []
    cpu = Backend("cpu", np, lambda: None)
    return [(impl, _dense(factory(w.inputs(quick=True), cpu).run()))
            for impl, factory in module.IMPLS[w.op].items()]


def _dense(out):
    if hasattr(out, "to_dense"):
        out = out.to_dense()
    if hasattr(out, "todense"):
        out = out.todense()
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


@pytest.mark.parametrize("name", ["coo_reshape/3d-2d/nnz1e6", "coo_reshape/2d-3d/nnz1e6/dense4",
                                  "csr_reshape/2d/nnz1e7", "csr_reshape/3d/nnz5e6", "expand",
                                  "expand_grad", "repeat", "repeat_grad", "gather",
                                  "gather_grad", "batch_gather", "batch_gather_grad",
                                  "add/broadcast", "matmul/1024"]
                         + [w.name for w in workloads.WORKLOADS if w.name.startswith("dense/")])
def test_peers_compute_the_same_result(name):
    w = workloads.BY_NAME[name]
    if w.op in ("coo_reshape", "csr_reshape"):
        expected = _sparse_reference(w, w.inputs(quick=True))
    else:
        expected = _reference(w, w.inputs(quick=True))
    outputs = [o for peer in (US, "numpy", "scipy") for o in _outputs(peer, w)]
    assert outputs or w.op.startswith(("gather", "batch_gather"))
    for impl, out in outputs:
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5, err_msg=impl)


def _reference(w, inp):
    """The dense op or its gradient from numpy loops and closed forms."""
    x, p = inp["x"], w.quick
    if w.op in ELEMENTWISE or w.op in REDUCTIONS:
        return _dense_reference(w.op, inp, p)
    if w.op == "matmul":
        return np.einsum("ik,kj->ij", x.astype(np.float64), inp["y"].astype(np.float64))
    if w.op == "expand":
        return np.broadcast_to(x, p["new_shape"])
    if w.op == "expand_grad":
        return inp["out_grad"].sum(axis=1, keepdims=True)
    if w.op == "repeat":
        return np.tile(x, p["repeats"])
    if w.op == "repeat_grad":
        g, (a, b, c) = inp["out_grad"], x.shape
        return sum(g[i * a:(i + 1) * a, j * b:(j + 1) * b, k * c:(k + 1) * c]
                   for i in range(2) for j in range(3) for k in range(4))
    if w.op == "gather":
        return np.stack([x[:, i] for i in inp["index"]], axis=1)
    if w.op == "batch_gather":
        return np.stack([x[b][inp["index"][b]] for b in range(x.shape[0])])
    out = np.zeros_like(x)
    for b in range(x.shape[0]):
        for k, i in enumerate(inp["index"] if w.op == "gather_grad" else inp["index"][b]):
            out[b, i] += inp["out_grad"][b, k]
    return out


def _sparse_reference(w, inp):
    """The reshaped dense array, built with numpy alone."""
    full = np.zeros(inp["shape"], np.float32)
    if w.op == "coo_reshape":
        full[tuple(inp["indices"])] = inp["values"]
    else:
        rows, cols = inp["shape"][-2:]
        crows = inp["crows"].reshape(-1, rows + 1)
        flat = full.reshape(-1, rows, cols)
        pos = 0
        for b, cr in enumerate(crows):
            for r in range(rows):
                n = cr[r + 1] - cr[r]
                flat[b, r, inp["cols"][pos:pos + n]] = inp["values"][pos:pos + n]
                pos += n
    return full.reshape(inp["new_shape"])


@pytest.mark.parametrize("name", ["spmm/nnz1e6", "spmm/batched", "spgemm/nnz1e6",
                                  "sddmm/nnz1e6", "spmv/nnz1e7"])
def test_peers_compute_the_same_sparse_products(name):
    w = workloads.BY_NAME[name]
    inp = w.inputs(quick=True)
    shape = inp["shape"]
    parts = (inp["crows"].reshape(-1, shape[-2] + 1), inp["cols"], inp["values"])

    def dense_of(crows, cols, values):
        """The dense matrix (or batch) of CSR parts, with numpy alone."""
        out = np.zeros(shape, np.float64)
        start = 0
        for b, c in enumerate(crows):
            for r in range(shape[-2]):
                for e in range(start + c[r], start + c[r + 1]):
                    out[(b, r, cols[e]) if len(shape) == 3 else (r, cols[e])] += values[e]
            start += c[-1]
        return out
    a = dense_of(*parts)
    if w.op == "spgemm":
        expected = a @ dense_of(inp["b_crows"].reshape(-1, shape[-2] + 1), inp["b_cols"],
                                inp["b_values"])
    elif w.op == "sddmm":
        expected = np.where(a != 0, inp["x"] @ inp["y"], 0.0)
    elif w.op == "spmv":
        expected = a @ inp["y"]
    else:
        expected = a @ inp["y"]
    outputs = [o for peer in (US, "scipy") for o in _outputs(peer, w)]
    assert outputs
    for impl, out in outputs:
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=impl)


def test_threads_pin_affinity_and_every_thread_knob():
    """--threads n: the worker runs on n cores, and every library's knob says n."""
    env = runner.worker_env("default", threads=1)
    assert all(env[k] == "1" for k in runner.THREAD_VARS)
    assert "PHISPARSE_POOL_BYTES" not in runner.ALLOC_ENV["default"]
    code = ("from bench.worker import pin_threads; import os; pin_threads(); "
            "print(len(os.sched_getaffinity(0)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"


def test_the_report_names_the_thread_and_load_flags(quick_run):
    _, doc, _ = quick_run
    doc = {**doc, "config": {**doc["config"], "threads": 1, "busy": 2}}
    assert "`python -m bench --quick --threads 1 --busy 2`" in report.markdown(doc)


def test_busy_spinners_end_with_the_run(monkeypatch):
    """--busy N: N spinning processes run during the benchmark and are gone after it."""
    seen, procs = [], []
    real_popen = subprocess.Popen

    def popen(*a, **k):
        p = real_popen(*a, **k)
        procs.append(p)
        return p
    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    monkeypatch.setattr(runner, "_execute",
                        lambda opts, progress, say: seen.append([p.poll() for p in procs]))
    runner.execute(runner.Options(busy=2), None, None)
    assert seen == [[None, None]]                       # both spinning during the run
    assert all(p.poll() is not None for p in procs)     # and ended after it


#: Issue 19's elementwise ops in float64 from the definitions (x, y in [0.5, 1.5)).
ELEMENTWISE = {
    "neg": lambda x: 0 - x, "abs": lambda x: np.where(x < 0, -x, x),
    "exp": lambda x: np.e ** x, "log": lambda x: np.log2(x) / np.log2(np.e),
    "sqrt": lambda x: x ** 0.5, "square": lambda x: x * x,
    "sin": lambda x: np.imag(np.exp(1j * x)), "cos": lambda x: np.real(np.exp(1j * x)),
    "tanh": lambda x: (np.e ** (2 * x) - 1) / (np.e ** (2 * x) + 1),
    "sigmoid": lambda x: 1 / (1 + np.e ** -x), "relu": lambda x: np.where(x > 0, x, 0),
    "clip": lambda x: np.where(x < 0.75, 0.75, np.where(x > 1.25, 1.25, x)),
    "add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y, "divide": lambda x, y: x / y,
    "pow": lambda x, y: np.e ** (y * np.log2(x) / np.log2(np.e)),
    "maximum": lambda x, y: np.where(x >= y, x, y), "minimum": lambda x, y: np.where(x <= y, x, y),
    "where": lambda c, x, y: np.where(c, x, y),
}
#: Reductions of a float64 2-D x over ``axis`` (None: all) from sorted slices and loops.
REDUCTIONS = {
    "sum": lambda x, axis: _slices(x, axis, lambda v: sum(sorted(v))),
    "mean": lambda x, axis: _slices(x, axis, lambda v: sum(sorted(v)) / len(v)),
    "max": lambda x, axis: _slices(x, axis, lambda v: sorted(v)[-1]),
    "min": lambda x, axis: _slices(x, axis, lambda v: sorted(v)[0]),
    "prod": lambda x, axis: _slices(x, axis, math.prod),
    "argmax": lambda x, axis: _slices(x, axis, lambda v: max(range(len(v)), key=v.__getitem__)),
    "argmin": lambda x, axis: _slices(x, axis, lambda v: min(range(len(v)), key=v.__getitem__)),
}


def _slices(x, axis, f):
    """``f`` of every 1-D slice of 2-D x along ``axis`` (None: of the flat x)."""
    if axis is None:
        return np.array(f(x.ravel().tolist()))
    rows = x if axis == 1 else x.T
    return np.array([f(r) for r in rows.tolist()])


def _arith_reference(op, inp):
    """numpy on the dense forms of the two operands (``x`` the first)."""
    x, y = (_dense_of(inp[k + "_indices"], inp[k + "_values"], inp["shape"]) for k in "xy")
    return {"sparse_add": lambda: x + y, "sparse_multiply": lambda: x * y,
            "sparse_sum": lambda: np.sum(x), "sparse_abs": lambda: np.abs(x)}[op]()


def _dense_of(indices, values, shape):
    out = np.zeros(shape, np.float64)
    np.add.at(out, tuple(indices), values)
    return out


@pytest.mark.parametrize("name", [w.name for w in workloads.WORKLOADS
                                  if w.op in workloads.SPARSE_ARITH])
def test_sparse_arith_workloads_agree_with_numpy(name):
    """Every peer in this interpreter (phisparse, scipy) at quick size, against numpy on
    the dense operands."""
    w = workloads.BY_NAME[name]
    inp = w.inputs(quick=True)
    outputs = [o for peer in (US, "scipy") for o in _outputs(peer, w)]
    assert outputs
    for impl, out in outputs:
        np.testing.assert_allclose(np.squeeze(out), _arith_reference(w.op, inp), rtol=1e-6,
                                   err_msg=impl)


def _dense_reference(op, inp, p):
    if op in REDUCTIONS:
        return REDUCTIONS[op](inp["x"].astype(np.float64), p["axis"])
    names = ("cond", "x", "y") if op == "where" else ("x", "y") if "y" in inp else ("x",)
    return ELEMENTWISE[op](*(inp[k].astype(np.float64) if k != "cond" else inp[k]
                             for k in names))


TINY = [w.name for w in workloads.WORKLOADS if w.name.startswith("tiny/")]


@pytest.mark.parametrize("name", TINY)
def test_tiny_workloads_agree_with_numpy(name):
    w = workloads.BY_NAME[name]
    inp, p = w.inputs(quick=True), w.quick
    assert w.calls_per_sample(quick=False) == workloads.TINY_CALLS > 1
    if w.op == "coo_reshape":
        assert p["nnz"] == 10
        expected = _sparse_reference(w, inp)
    elif w.op in workloads.SPARSE_ARITH:
        assert p["nnz"] == 10
        expected = _arith_reference(w.op, inp)
    elif w.op in ELEMENTWISE or w.op in REDUCTIONS:
        assert inp["x"].size == 10
        expected = _dense_reference(w.op, inp, p)
    else:
        assert inp["x"].size == 10
        expected = {"reshape": lambda x: x.reshape(p["new_shape"]),
                    "expand": lambda x: np.broadcast_to(x, p["new_shape"]),
                    "repeat": lambda x: np.tile(x, p["repeats"]),
                    "gather": lambda x: np.take(x, inp["index"], axis=p["axis"]),
                    "matmul": lambda x: np.einsum("ik,kj->ij", x, inp.get("y")),
                    "scale": lambda x: x + x,
                    }[w.op](inp["x"])
    outputs = [o for peer in (US, "numpy", "scipy") for o in _outputs(peer, w)]
    assert outputs
    for impl, out in outputs:
        np.testing.assert_allclose(out, expected, rtol=1e-6, err_msg=impl)


def test_batched_case_runs_the_op_that_many_times():
    from bench.worker import batched
    calls = []
    case = batched(measure.Case(lambda: calls.append(1) or len(calls)), 5)
    assert case.run() == 5 and len(calls) == 5
    one = measure.Case(lambda: 1)
    assert batched(one, 1) is one
