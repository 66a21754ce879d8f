"""The GPU side of the benchmark harness, without a GPU.

The gpu sizes of the workloads, the CUDA-event clock (driven by a stand-in
for ``cupy.cuda`` that hands out scripted elapsed times), the gpu floor, the
per-backend probe and skip paths, and torch's gpu backend (a stand-in
``torch`` module: the test interpreter has no torch and this machine no CUDA).
"""
import importlib
import math
import sys
import types

import numpy as np
import pytest

from bench import floor, measure, report, summary, worker, workloads
from bench.backends import FAKE_GPU_ENV, Backend, get_backend
from bench.measure import Case

GPU_SIZED = [w for w in workloads.WORKLOADS if w.gpu]


# ------------------------------------------------------------------ gpu sizes
def test_gpu_sizes_replace_full_on_gpu_only():
    assert {w.op for w in GPU_SIZED} >= {"coo_reshape", "csr_reshape", "expand", "expand_grad",
                                         "repeat", "gather", "batch_gather_grad"}
    for w in GPU_SIZED:
        assert w.params(False, "gpu") is w.gpu
        assert w.params(False, "cpu") is w.params(False) is w.full
        assert w.params(True, "gpu") is w.quick
        assert w.traffic(False, "gpu") != w.traffic(False)
        assert w.describe(False, "gpu") != w.describe(False)


def test_tiny_workloads_have_no_gpu_size():
    assert not [w for w in workloads.WORKLOADS if w.name.startswith("tiny/") and w.gpu]


def test_workloads_without_a_gpu_size_are_the_same_on_both_backends():
    w = workloads.BY_NAME["spmm/nnz1e6"]
    assert w.params(False, "gpu") is w.full
    assert w.traffic(False, "gpu") == w.traffic(False)


def test_gpu_sizes_are_large():
    """Dense outputs (or gradients read) of 1-4 GiB, sparse ones at nnz 1e8."""
    for w in GPU_SIZED:
        p, (read, write) = w.gpu, w.traffic(False, "gpu")
        if "nnz" in p:
            assert p["nnz"] == 10**8
        else:
            assert 2**30 <= max(read, write) <= 4 * 2**30


def _unique_flat_reference(size, nnz, rng):
    """The strata with Python's exact integers."""
    edges = np.array([k * size // nnz for k in range(nnz + 1)], dtype=np.int64)
    return edges[:-1] + (rng.random(nnz) * np.diff(edges)).astype(np.int64)


@pytest.mark.parametrize("size,nnz", [(1000, 300), (4096 * 4096, 1000), (10**9, 999),
                                      (10**15, 10**4), (65536**2, 7919)])
def test_unique_flat_matches_exact_strata(size, nnz):
    got = workloads.unique_flat(size, nnz, np.random.default_rng(3))
    want = _unique_flat_reference(size, nnz, np.random.default_rng(3))
    np.testing.assert_array_equal(got, want)
    assert np.all(np.diff(got) > 0) and got[0] >= 0 and got[-1] < size


def test_unique_flat_refuses_what_int64_cannot_hold():
    with pytest.raises(ValueError, match="distinct positions"):
        workloads.unique_flat(2**62, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="distinct positions"):
        workloads.unique_flat(10, 11, np.random.default_rng(0))


@pytest.mark.parametrize("shape", [(7,), (13, 17), (5, 6, 7), (3, 1, 4, 2)])
def test_unravel_is_numpys(shape):
    flat = np.random.default_rng(1).integers(0, math.prod(shape), 50)
    got = workloads.unravel(flat, shape)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.stack(np.unravel_index(flat, shape)))


def test_coo_gpu_inputs_follow_the_gpu_size():
    full = workloads.BY_NAME["coo_reshape/3d-2d/nnz1e6"].full
    small = workloads.Workload("t", "coo_reshape", full, {},
                               gpu={"shape": (10**4,) * 3, "new_shape": (10**8, 10**4),
                                    "nnz": 1000, "dense": ()})
    inp = small.inputs(False, "gpu")
    flat = np.ravel_multi_index(tuple(inp["indices"]), inp["shape"])
    assert inp["indices"].shape == (3, 1000) and np.all(np.diff(flat) > 0)
    assert inp["new_shape"] == (10**8, 10**4)


# ------------------------------------------------------------------ the clock
class _Event:
    def __init__(self, log):
        self.log, self.done = log, False

    def record(self):
        self.log.append(("record", self))

    def synchronize(self):
        self.log.append(("synchronize", self))
        self.done = True


class _CudaStandIn:
    """``cupy.cuda`` as the event timer uses it: elapsed times come from a script."""

    def __init__(self, elapsed_ms):
        self.log, self.elapsed = [], list(elapsed_ms)

    def Event(self):  # noqa: N802 (cupy's name)
        return _Event(self.log)

    def get_elapsed_time(self, start, end):
        assert end.done, "read before the end event completed"
        self.log.append(("elapsed", start, end))
        return self.elapsed.pop(0)


def _event_backend(elapsed_ms):
    cuda = _CudaStandIn(elapsed_ms)
    return Backend("gpu", np, lambda: cuda.log.append(("barrier",)), events=cuda), cuda


def test_event_timer_records_around_the_call_and_reads_seconds():
    be, cuda = _event_backend([2.5])
    start, stop = be.timer()
    start()
    cuda.log.append(("call",))
    assert stop() == pytest.approx(2.5e-3)
    kinds = [e[0] for e in cuda.log]
    assert kinds == ["barrier", "record", "call", "record", "synchronize", "elapsed"]
    begin, end = cuda.log[1][1], cuda.log[3][1]
    assert begin is not end and cuda.log[5][1:] == (begin, end)
    assert be.syncs == 2 and be.clock == "cuda events"


def test_time_case_reads_the_event_clock():
    be, _ = _event_backend([9.0, 1.0, 2.0, 3.0])
    times, faults = measure.time_case(Case(lambda: np.zeros(3)), be, repeats=3, warmup=1)
    assert times == pytest.approx([1e-3, 2e-3, 3e-3]) and len(faults) == 3


def test_measure_names_its_clock():
    be, _ = _event_backend([1.0] * 3)
    assert measure.measure(Case(lambda: np.zeros(3)), be, repeats=2)["clock"] == "cuda events"


def test_cpu_and_fake_gpu_keep_perf_counter(monkeypatch):
    monkeypatch.setenv(FAKE_GPU_ENV, "1")
    for name in ("cpu", "gpu"):
        be = get_backend(name)
        assert be.clock == "perf_counter"
        start, stop = be.timer()
        start()
        assert 0 <= stop() < 1 and be.syncs == 2


# ------------------------------------------------------------------ the floor
def test_gpu_floor_copies_two_gib():
    assert floor.copy_bytes("gpu", quick=False) == 2 * 2**30
    assert floor.copy_bytes("cpu", quick=False) == floor.FULL_BYTES == 256 * 2**20
    assert floor.copy_bytes("gpu", quick=True) == floor.copy_bytes("cpu", quick=True)


def test_floor_copies_use_the_backend_clock():
    be, _ = _event_backend([99.0, 99.0, 1.0, 4.0, 1.0, 4.0])
    sample = floor.copy_times(be, 2**20, repeats=2)
    assert sample["reused_s"] == pytest.approx([1e-3, 1e-3])
    assert sample["fresh_s"] == pytest.approx([4e-3, 4e-3])
    rates = floor.model([sample])
    assert rates["clock"] == "cuda events"
    assert rates["reused_gbps"] == pytest.approx(2 * 2**20 / 1e-3 / 1e9)


def _workload_info(backends):
    rates = {be: {"reused_gbps": 10.0 * (1 + (be == "gpu")), "first_touch_s_per_byte": 0.0}
             for be in backends}
    return summary._workload_info([workloads.BY_NAME["expand"]], backends, rates, False)


def test_gpu_floor_and_description_use_the_gpu_size():
    info = _workload_info(["cpu", "gpu"])["expand"]
    w = workloads.BY_NAME["expand"]
    read, write = w.traffic(False, "gpu")
    assert info["gpu"] == {"description": w.describe(False, "gpu"), "read_bytes": read,
                           "write_bytes": write}
    assert info["floor"]["gpu"]["reused_s"] == pytest.approx((read + write) / 20e9)
    assert info["floor"]["cpu"]["reused_s"] == pytest.approx(sum(w.traffic(False)) / 10e9)
    cpu_only = _workload_info(["cpu"])["expand"]
    assert cpu_only == {k: v if k != "floor" else {"cpu": v["cpu"]}
                        for k, v in info.items() if k != "gpu"}


def test_gpu_rows_compare_with_the_gpu_floor():
    info = _workload_info(["cpu", "gpu"])
    gpu_floor = info["expand"]["floor"]["gpu"]["reused_s"]
    rows = [{"workload": "expand", "backend": be, "alloc": "default", "median_s": 2 * gpu_floor}
            for be in ("cpu", "gpu")]
    summary._ratios(rows, info)
    assert rows[1]["ratio_to_floor"] == pytest.approx(2.0)
    assert rows[0]["ratio_to_floor"] != pytest.approx(2.0)
    doc = {"results": [{**r, "status": "ok", "peer": "numpy", "impl": "x", "min_s": 0.0,
                        "ratio_to_fastest": 1.0, "peak_extra_bytes": 0,
                        "observed_mode": "device"} for r in rows[1:]]}
    table = "\n".join(report._details(doc, "gpu", "default"))
    assert "% of copy bandwidth" in table and "| 2.00 | 50% |" in table
    assert "% of copy bandwidth" not in "\n".join(report._details(doc, "cpu", "default"))


# ------------------------------------------------------------------ probes and skips
def test_probe_answers_per_backend(monkeypatch):
    monkeypatch.setenv(FAKE_GPU_ENV, "1")
    names = ["expand", "coo_reshape/3d-2d/nnz1e7"]
    got = worker.probe({"peer": "numpy", "workloads": names, "backends": ["gpu"],
                        "quick": True})
    assert got["backends"] == ["gpu"] and got["skipped_backends"] == {}
    assert set(got["workloads"]) == {"gpu"} and "expand" in got["workloads"]["gpu"]
    assert "coo_reshape/3d-2d/nnz1e7" not in got["workloads"]["gpu"]  # numpy has no COO


def test_a_missing_kernel_is_a_skip_not_an_error(monkeypatch):
    kernels = pytest.importorskip("kernels")

    def factory(inp, be):
        raise kernels.KernelNotFoundError("expand: no kernel 'expand' for backend=gpu")
    peer = types.SimpleNamespace(IMPLS={"expand": {"x": factory}},
                                 SKIP_ERRORS=(kernels.KernelNotFoundError,))
    req = {"peer": "phisparse", "quick": True, "repeats": 1, "warmup": 0}
    got = worker.run_job(peer, {"workload": "expand", "impl": "x"}, req,
                         Backend("gpu", np, lambda: None))
    assert got["status"] == "skipped" and "no kernel 'expand'" in got["reason"]
    peer.SKIP_ERRORS = ()
    assert worker.run_job(peer, {"workload": "expand", "impl": "x"}, req,
                          Backend("gpu", np, lambda: None))["status"] == "error"


def test_phisparse_hands_the_gpu_cupy_arrays_only(monkeypatch):
    """Every array a phisparse factory passes on goes through ``be.asarray``."""
    phis = pytest.importorskip("bench.peers.phisparse_peer")
    seen = []

    class Tracking(Backend):
        def asarray(self, a):
            seen.append(id(a))
            return np.array(a)
    be = Tracking("gpu", np, lambda: None)
    for w in workloads.WORKLOADS:
        if w.op not in phis.IMPLS or w.name.startswith("tiny/"):
            continue
        inp = w.inputs(True, "gpu")
        arrays = {id(v) for v in _arrays(inp)}
        for factory in phis.IMPLS[w.op].values():
            seen.clear()
            factory(inp, be)
            assert arrays <= set(seen), w.name


def _arrays(inp):
    for v in inp.values():
        if isinstance(v, np.ndarray):
            yield v
        elif isinstance(v, list):
            for m in v:
                yield from _arrays(m)


# ------------------------------------------------------------------ torch on CUDA
class _TorchTensor:
    def __init__(self, a, device="cpu"):
        self.a, self.device = a, device

    def to(self, device):
        return _TorchTensor(self.a, device)


@pytest.fixture
def torch_peer(monkeypatch):
    """bench.peers.torch_peer over a stand-in ``torch`` whose CUDA is switchable."""
    fake = types.ModuleType("torch")
    fake.__version__ = "0.0+standin"
    fake.cuda = types.SimpleNamespace(is_available=lambda: False)
    fake.from_numpy = _TorchTensor
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.delitem(sys.modules, "bench.peers.torch_peer", raising=False)
    import bench.peers.torch_peer as peer
    yield peer, fake
    sys.modules.pop("bench.peers.torch_peer", None)


def test_torch_gpu_is_skipped_without_cuda(torch_peer, monkeypatch):
    peer, fake = torch_peer
    monkeypatch.setenv(FAKE_GPU_ENV, "1")
    assert "gpu" in peer.BACKENDS and peer.backend_missing("cpu") is None
    assert peer.backend_missing("gpu").startswith("torch: no CUDA device")
    monkeypatch.delenv(FAKE_GPU_ENV)
    assert peer.backend_missing("gpu") == "torch: no CUDA device"
    fake.cuda.is_available = lambda: True
    monkeypatch.setitem(sys.modules, "cupy", None)  # no cupy: no gpu clock
    assert "needs cupy" in peer.backend_missing("gpu")


def test_torch_probe_reports_the_gpu_skip(torch_peer, monkeypatch):
    monkeypatch.setenv(FAKE_GPU_ENV, "1")
    monkeypatch.setattr(worker, "load_peer", lambda name: torch_peer[0])
    got = worker.probe({"peer": "torch", "workloads": ["expand"], "backends": ["cpu", "gpu"],
                        "quick": True})
    assert got["backends"] == ["cpu"] and list(got["workloads"]) == ["cpu"]
    assert got["skipped_backends"]["gpu"].startswith("torch: no CUDA device")


def test_torch_tensors_go_to_cuda_on_gpu(torch_peer):
    peer, _ = torch_peer
    a = np.arange(3.0)
    assert peer._t(a, Backend("gpu", np, lambda: None)).device == "cuda"
    on_cpu = peer._t(a, Backend("cpu", np, lambda: None))
    assert on_cpu.device == "cpu" and on_cpu.a is a


def test_report_lists_a_peer_backend_skip():
    doc = {"skipped_backends": {}, "results": [],
           "peers": {"torch": {"status": "ok", "skipped_backends":
                               {"gpu": "torch: no CUDA device"}}}}
    assert "- peer torch [gpu]: torch: no CUDA device" in report._not_measured(doc)


def test_gpu_workload_table_shows_the_gpu_size_and_floor():
    info = _workload_info(["cpu", "gpu"])
    gpu = "\n".join(report._workloads({"workloads": info}, "gpu"))
    cpu = "\n".join(report._workloads({"workloads": info}, "cpu"))
    w = workloads.BY_NAME["expand"]
    assert gpu.startswith("## Workloads [gpu]") and w.describe(False, "gpu") in gpu
    assert report.ms(info["expand"]["floor"]["gpu"]["reused_s"]) in gpu
    assert cpu.startswith("## Workloads\n") and w.describe(False) in cpu
    assert w.describe(False, "gpu") not in cpu


def test_a_machine_without_matplotlib_still_gets_json_and_markdown(monkeypatch, tmp_path,
                                                                    capsys):
    from bench import __main__ as main

    def no_matplotlib(doc, path):
        raise ImportError("No module named 'matplotlib'")
    monkeypatch.setattr(main.chart, "plot", no_matplotlib)
    monkeypatch.setattr(main.report, "markdown", lambda doc: "# table\n")
    text, files = main.write({"results": []}, tmp_path)
    assert text == "# table\n" and files == ["latest.json", "latest.md"]
    assert (tmp_path / "latest.md").read_text() == text and not (tmp_path / "latest.png").exists()
    assert "no chart" in capsys.readouterr().err


# ------------------------------------------------------------------ launch variants
@pytest.mark.parametrize("module, says", [("gpu_launch", "words per thread"),
                                          ("gpu_spmm", "power law")])
def test_gpu_scripts_help_needs_no_gpu(capsys, module, says):
    script = importlib.import_module(f"bench.{module}")
    with pytest.raises(SystemExit) as exc:
        script.main(["--help"])
    assert exc.value.code == 0
    assert says in capsys.readouterr().out


@pytest.mark.gpu
def test_gpu_launch_restores_the_defaults_and_covers_every_variant(capsys):
    """A quick run on the real GPU: every variant's output equals cupy's, and the module
    constants are the defaults again afterwards."""
    from conftest import require_gpu_or_skip
    require_gpu_or_skip()
    from bench import gpu_launch
    from kernels.gpu import backend as launch_backend
    from kernels.gpu import launch
    before = (launch.WORDS_PER_THREAD, launch_backend.BLOCK, launch_backend.MAX_GRID,
              dict(launch.TUNED))
    gpu_launch.main(["--quick"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "equal" in line]
    assert len(rows) == len(gpu_launch.OPS) * math.prod(map(len, gpu_launch.VARIANTS.values()))
    assert "WRONG" not in out
    assert (launch.WORDS_PER_THREAD, launch_backend.BLOCK, launch_backend.MAX_GRID,
            launch.TUNED) == before


@pytest.mark.gpu
def test_gpu_launch_others_covers_every_kernel_workload(capsys):
    """``--others`` on the real GPU: every workload under every block and grid cap gives
    the default launch's output, and the constants are the defaults again afterwards."""
    from conftest import require_gpu_or_skip
    require_gpu_or_skip()
    from bench import gpu_launch
    from kernels.gpu import backend as launch_backend
    from kernels.gpu import launch
    before = (launch_backend.BLOCK, launch_backend.MAX_GRID, dict(launch.TUNED))
    gpu_launch.main(["--quick", "--others"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "equal" in line]
    assert len(rows) == len(gpu_launch.OTHERS) * 6
    assert "WRONG" not in out
    assert (launch_backend.BLOCK, launch_backend.MAX_GRID, launch.TUNED) == before


@pytest.mark.gpu
def test_gpu_spmm_quick_agrees_with_cupyx(capsys):
    """A quick run on the real GPU: one row per kind and width, each within float32
    rounding of cuSPARSE's product."""
    from conftest import require_gpu_or_skip
    require_gpu_or_skip()
    from bench import gpu_spmm
    gpu_spmm.main(["--quick"])
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| uniform") or line.startswith("| power law")]
    assert len(rows) == 6
    assert all(float(r[-1].rstrip(" |")) < 1e-4 for r in rows)


def test_gpu_launch_restores_the_launch_constants_when_a_variant_fails(monkeypatch):
    """A variant that raises (an out-of-memory at a large grid) leaves the module constants
    as they were, for whatever runs next in the process; on the fake GPU with a numpy
    stand-in for cupy."""
    from bench import gpu_launch
    from kernels.gpu import backend as launch_backend
    from kernels.gpu import launch
    fake = types.SimpleNamespace(
        ones=np.ones, empty_like=np.empty_like, copyto=np.copyto, array_equal=np.array_equal,
        from_dlpack=np.asarray, asarray=np.asarray, broadcast_to=np.broadcast_to,
        tile=np.tile, take=np.take, take_along_axis=np.take_along_axis,
        get_default_memory_pool=lambda: types.SimpleNamespace(free_all_blocks=lambda: None))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setenv(FAKE_GPU_ENV, "1")
    calls = []

    def timed(f, reps=10):
        calls.append(f)
        if len(calls) == 3:
            raise MemoryError("out of memory at this grid")
        return 1.0
    monkeypatch.setattr(gpu_launch, "event_ms", timed)
    before = (launch.WORDS_PER_THREAD, launch_backend.BLOCK, launch_backend.MAX_GRID,
              dict(launch.TUNED))
    with pytest.raises(MemoryError):
        gpu_launch.main(["--quick"])
    assert len(calls) == 3
    assert (launch.WORDS_PER_THREAD, launch_backend.BLOCK, launch_backend.MAX_GRID,
            launch.TUNED) == before
