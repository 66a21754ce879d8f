"""The subprocess side: ``python -m bench.worker MODE REQUEST.json RESULT.json``.

Modes:

- ``probe``: import a peer and report its version, backends and, per
  backend, which workloads it runs (or why not);
- ``floor``: time the copies of :mod:`bench.floor` on one backend;
- ``run``: time a list of jobs of one peer on one backend, appending one JSON
  line per job to RESULT as soon as it is done.

The runner starts this module in the peer's own interpreter with this
checkout as the working directory.  Before importing the peer the checkout is
removed from ``sys.path`` unless the peer benchmarks the checkout itself, so
another ``sparse`` package (pydata's) is never shadowed by ours.
"""
import argparse
import gc
import importlib
import json
import os
import sys

from . import ROOT, floor
from .backends import get_backend
from .measure import Case, measure
from .peers import PEERS
from .workloads import BY_NAME


def _isolate(spec):
    if spec.from_checkout:
        return
    root = os.path.realpath(ROOT)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != root]


def load_peer(name):
    """Import the module of peer ``name`` in this interpreter."""
    spec = PEERS[name]
    _isolate(spec)
    return importlib.import_module(f"{__package__}.peers.{spec.module}")


def probe(req):
    """Version, backends and per-backend, per-workload impls (or reasons) of one peer.

    Of the requested backends the peer runs on, those its ``backend_missing``
    names a reason for (torch without a CUDA device) are skipped with it.
    """
    module = load_peer(req["peer"])
    unsupported = getattr(module, "unsupported", lambda op, p, backend: None)
    missing = getattr(module, "backend_missing", lambda backend: None)
    wanted = [be for be in module.BACKENDS if be in req["backends"]]
    skipped = {be: why for be in wanted if (why := missing(be))}
    workloads = {be: _probe_workloads(module, unsupported, req, be)
                 for be in wanted if be not in skipped}
    return {"version": module.version(), "python": sys.executable,
            "backends": list(workloads), "skipped_backends": skipped,
            "workloads": workloads}


def _probe_workloads(module, unsupported, req, backend):
    out = {}
    for name in req["workloads"]:
        w = BY_NAME[name]
        reason = unsupported(w.op, w.params(req["quick"], backend), backend)
        if reason:
            out[name] = {"reason": reason}
        elif w.op in module.IMPLS:
            out[name] = {"impls": list(module.IMPLS[w.op])}
    return out


def run_job(module, job, req, backend):
    """Build one workload's inputs, prepare the peer's case and measure it.

    An exception of a type in the peer's ``SKIP_ERRORS`` (no kernel for this
    backend) makes a skipped result with its message; any other, an error.
    """
    w = BY_NAME[job["workload"]]
    head = {"workload": w.name, "peer": req["peer"], "impl": job["impl"],
            "backend": backend.name}
    try:
        inputs = w.inputs(req["quick"], backend.name)
        case = module.IMPLS[w.op][job["impl"]](inputs, backend)
        del inputs
        gc.collect()
        calls = w.calls_per_sample(req["quick"])
        result = measure(batched(case, calls), backend, req["repeats"], req["warmup"])
        result["times_s"] = [t / calls for t in result["times_s"]]
        return {**head, "status": "ok", "calls_per_sample": calls, **result}
    except Exception as exc:  # noqa: BLE001 (a peer's failure is a result, not a crash)
        status = "skipped" if isinstance(exc, getattr(module, "SKIP_ERRORS", ())) else "error"
        return {**head, "status": status, "reason": f"{type(exc).__name__}: {exc}"[:500]}


def batched(case, calls):
    """``case`` running its op ``calls`` times per timed sample (the last output returned)."""
    if calls == 1:
        return case
    run = case.run

    def many():
        for _ in range(calls - 1):
            run()
        return run()
    return Case(many, case.reset)


def run(req, out_path):
    """Run every job of ``req``, appending each result to ``out_path``."""
    module = load_peer(req["peer"])
    backend = get_backend(req["backend"])
    for job in req["jobs"]:
        result = run_job(module, job, req, backend)
        with open(out_path, "a") as f:
            f.write(json.dumps(result) + "\n")
        gc.collect()


def pin_threads():
    """With ``PHISPARSE_BENCH_THREADS=n`` (``--threads n``), run on the first n
    cores this process may use, so no library can use more."""
    n = os.environ.get("PHISPARSE_BENCH_THREADS")
    if n and hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cores[:max(1, int(n))])


def main(argv):
    pin_threads()
    ap = argparse.ArgumentParser(prog="python -m bench.worker", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("probe", "floor", "run"))
    ap.add_argument("request_path", help="the request, as JSON")
    ap.add_argument("out_path", help="where the result goes")
    args = ap.parse_args(argv)
    mode, request_path, out_path = args.mode, args.request_path, args.out_path
    with open(request_path) as f:
        req = json.load(f)
    if mode == "run":
        run(req, out_path)
        return
    if mode == "probe":
        result = probe(req)
    else:
        result = floor.copy_times(get_backend(req["backend"]), req["bytes"], req["repeats"])
    with open(out_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1:])
