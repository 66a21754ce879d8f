"""Orchestration: probe the peers, plan and schedule the jobs, run each in a subprocess.

Scheduling.  With ``isolate`` (the default) every (workload, peer) job runs in
a fresh process of the peer's interpreter, and the repeats are split over
``rounds``: for each workload, round 1 runs the peers in one order and round 2
in the reverse order, so that load drifting on the machine hits every peer
alike.  ``--quick`` runs each peer's jobs in one process per round instead,
since importing TensorFlow, torch and Paddle costs seconds per process, and
runs as many processes at once as there are cores: its timings only prove
that the harness works.

Allocation.  Every worker of a mode gets the same settings.  ``default`` (the
headline) changes nothing: every library runs at its defaults (our output
pool on, TensorFlow's and torch's allocators as they are, glibc's malloc as
it is).  ``fresh`` pins glibc's mmap threshold at 128 KiB, so each large
output is new memory that pays first-touch page faults, as a user's first
call does, and turns phisparse's output pool off.  ``reused`` turns glibc's
mmap off and keeps freed memory, and leaves phisparse's pool on, so outputs
land in warm pages.  An allocator of a peer's own may reuse memory in any
mode, so each figure also records the mode its peak memory shows.

Threads and load.  ``threads`` pins every worker, ours and the peers', to
that many cores (CPU affinity) and sets every library's thread knob to it
(OpenMP, MKL, OpenBLAS, TensorFlow's intra- and inter-op pools, phisparse's
``PHISPARSE_NUM_THREADS``): with 1 it measures the algorithm, not the core
count.  ``busy`` runs that many spinning processes beside the benchmark, to
measure under load.
"""
import concurrent.futures
import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from . import ROOT, floor
from .backends import gpu_status
from .peers import PEERS, RECIPE
from .workloads import BY_NAME, WORKLOADS

ALLOC_ENV = {
    "default": {},
    "fresh": {"MALLOC_MMAP_THRESHOLD_": "131072", "PHISPARSE_POOL_BYTES": "0"},
    "reused": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**40)},
}
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "GLOG_minloglevel": "2"}
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "PHISPARSE_NUM_THREADS",
               "PHISPARSE_BENCH_THREADS")


@dataclasses.dataclass
class Options:
    """What one run does (see ``python -m bench --help``)."""

    quick: bool = False
    only: str = None
    peers: tuple = tuple(PEERS)
    backends: tuple = None
    repeats: int = 6
    rounds: int = 2
    allocs: tuple = ("default", "fresh")
    isolate: bool = True
    parallel: int = 1
    timeout: float = 900.0
    threads: int = None
    busy: int = 0
    group_rounds: int = 8


@dataclasses.dataclass(frozen=True)
class Job:
    """One (workload, backend, allocation mode, peer, impl) to measure."""

    workload: str
    backend: str
    alloc: str
    peer: str
    impl: str


# ------------------------------------------------------------------ subprocesses
def worker_env(alloc, threads=None):
    """The environment of a worker: the caller's plus the mode's, the thread pins
    (``bench.worker`` also sets its CPU affinity from them) and quieter logs."""
    drop = {k for env in ALLOC_ENV.values() for k in env} | set(THREAD_VARS)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    pins = {} if threads is None else dict.fromkeys(THREAD_VARS, str(threads))
    return {**env, **QUIET_ENV, **ALLOC_ENV[alloc], **pins}


def launch(python, mode, request, env, timeout):
    """Run ``bench.worker`` once; return (result text, error reason or None)."""
    with tempfile.TemporaryDirectory(prefix="phisparse-bench-") as tmp:
        req_path, out_path = os.path.join(tmp, "request.json"), os.path.join(tmp, "out")
        with open(req_path, "w") as f:
            json.dump(request, f)
        try:
            proc = subprocess.run([python, "-m", "bench.worker", mode, req_path, out_path],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, timeout=timeout,
                                  check=False)
            err = None if proc.returncode == 0 else _tail(proc.stderr, proc.returncode)
        except subprocess.TimeoutExpired:
            err = f"timed out after {timeout:.0f} s"
        if not os.path.exists(out_path):
            return "", err
        with open(out_path) as f:
            return f.read(), err


def _tail(stderr, code):
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "no output"
    return f"exit code {code}: {last[:400]}"


# ------------------------------------------------------------------ peers
def probe_peer(name, opts, names, backends):
    """A dict describing peer ``name``: status 'ok' with its workloads, or 'skipped'."""
    spec = PEERS[name]
    python = spec.interpreter()
    if not os.path.exists(python):
        return {"status": "skipped", "python": python,
                "reason": f"interpreter {python} not found (set {spec.env_var}, "
                          f"or install it as {RECIPE} shows)"}
    text, err = launch(python, "probe", {"peer": name, "workloads": names,
                                         "backends": backends, "quick": opts.quick},
                       worker_env("fresh", opts.threads), 300)
    if err:
        return {"status": "skipped", "python": python, "reason": f"cannot load: {err}"}
    return {"status": "ok", **json.loads(text), "python": python}


def probe_peers(opts, names, backends):
    """Probe every peer of ``opts`` on ``backends``, as many at once as there are cores
    (imports only)."""
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        found = pool.map(lambda p: probe_peer(p, opts, names, backends), opts.peers)
        return dict(zip(opts.peers, found))


def resolve_backends(requested):
    """(backends to run, {backend: reason} for those that cannot run)."""
    ok, why = gpu_status()
    if requested is None:
        return (["cpu", "gpu"] if ok else ["cpu"]), ({} if ok else {"gpu": why})
    run = [b for b in requested if b == "cpu" or ok]
    return run, {b: why for b in requested if b not in run}


def plan(workloads, backends, peers, allocs):
    """(jobs, skipped notes) for every workload, backend, loaded peer and mode."""
    jobs, notes = [], []
    for w in workloads:
        for be in backends:
            for name, info in peers.items():
                if info["status"] != "ok" or be not in info["backends"]:
                    continue
                entry = info["workloads"][be].get(w.name)
                if entry is None:
                    continue
                if "reason" in entry:
                    notes.append({"workload": w.name, "backend": be, "peer": name,
                                  "status": "skipped", "reason": entry["reason"]})
                    continue
                jobs.extend(Job(w.name, be, alloc, name, impl)
                            for alloc in allocs for impl in entry["impls"])
    return jobs, notes


def _groups(jobs, key):
    out = {}
    for job in jobs:
        out.setdefault(key(job), []).append(job)
    return list(out.values())


def schedule(jobs, rounds, isolate, group_rounds=1):
    """Batches of jobs (one process each) in run order; odd rounds reverse the order.

    With ``isolate``, each job runs alone, its workload's rounds back to back,
    except the jobs of ``grouped`` workloads (the per-call ``tiny/*`` rows and the
    short ``dense/*`` ones): those of one peer share a process, and
    ``group_rounds`` rounds of one process per peer follow the other batches.
    Timings on a shared VM are bimodal from process to process (a process lands
    in a fast or a slow spell of the machine and stays there), so many short
    processes per peer, alternating with the other peers', give every library
    the same share of both.
    """
    if not isolate:
        groups = _groups(jobs, lambda j: (j.peer, j.backend, j.alloc))
        return _rounds(groups, rounds)
    grouped = [j for j in jobs if j.workload in BY_NAME and BY_NAME[j.workload].grouped]
    groups = _groups([j for j in jobs if j not in grouped], lambda j: (j.workload, j.backend))
    batches = [[job] for group in groups for r in range(rounds)
               for job in (group if r % 2 == 0 else group[::-1])]
    return batches + _rounds(_groups(grouped, lambda j: (j.peer, j.backend, j.alloc)),
                             group_rounds)


def _rounds(groups, rounds):
    """``groups`` as batches, ``rounds`` times over, every odd round in reverse order."""
    return [group for r in range(rounds) for group in (groups if r % 2 == 0 else groups[::-1])]


def select_workloads(pattern):
    """Workloads whose name matches the regular expression ``pattern`` (all if None)."""
    if pattern is None:
        return list(WORKLOADS)
    rx = re.compile(pattern)
    return [w for w in WORKLOADS if rx.search(w.name)]


# ------------------------------------------------------------------ running
def run_batch(batch, opts, peers):
    """Run one batch in one process; one raw result per job (errors included)."""
    first = batch[0]
    request = {"peer": first.peer, "backend": first.backend, "quick": opts.quick,
               "repeats": math.ceil(opts.repeats / opts.rounds), "warmup": 1,
               "jobs": [{"workload": j.workload, "impl": j.impl} for j in batch]}
    text, err = launch(peers[first.peer]["python"], "run", request,
                       worker_env(first.alloc, opts.threads), opts.timeout)
    done = {(r["workload"], r["impl"]): r for r in map(json.loads, text.splitlines())}
    return [{**(done.get((j.workload, j.impl)) or
                {**dataclasses.asdict(j), "status": "error",
                 "reason": err or "the worker wrote no result"}), "alloc": j.alloc}
            for j in batch]


def measure_floor(backend, opts):
    """Copy timings for the floor (always in the fresh mode), or an error reason."""
    request = {"backend": backend, "repeats": 3 if opts.quick else 5,
               "bytes": floor.copy_bytes(backend, opts.quick)}
    text, err = launch(sys.executable, "floor", request, worker_env("fresh", opts.threads),
                       300)
    return (json.loads(text), None) if not err else (None, err)


def _label(batch):
    j = batch[0]
    where = f"{j.peer} [{j.backend}, {j.alloc}]"
    return f"{j.workload} · {where}" if len(batch) == 1 else where


def execute(opts, progress, say):
    """Run everything ``opts`` asks for (beside ``opts.busy`` spinning processes);
    return the raw pieces for the summary."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(opts.busy)]
    try:
        return _execute(opts, progress, say)
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def _execute(opts, progress, say):
    workloads = select_workloads(opts.only)
    if not workloads:
        raise SystemExit(f"bench: --only {opts.only!r} matches no workload; names are: "
                         + ", ".join(w.name for w in WORKLOADS))
    backends, no_backend = resolve_backends(opts.backends)
    for be, why in no_backend.items():
        say(f"backend {be}: skipped — {why}")
    progress.step(f"loading {len(opts.peers)} peers")
    peers = probe_peers(opts, [w.name for w in workloads], backends)
    for name, info in peers.items():
        if info["status"] != "ok":
            say(f"peer {name}: skipped — {info['reason']}")
        for be, why in info.get("skipped_backends", {}).items():
            say(f"peer {name} [{be}]: skipped — {why}")
    jobs, notes = plan(workloads, backends, peers, opts.allocs)
    for n in notes:
        say(f"{n['workload']} [{n['backend']}] {n['peer']}: skipped — {n['reason']}")
    batches = schedule(jobs, opts.rounds, opts.isolate, opts.group_rounds)
    floor_runs = 1 if opts.quick else 2
    progress.extend(len(batches) + len(backends) * floor_runs)
    floors = {be: [] for be in backends}
    _floors(backends, opts, floors, progress, say)

    def one(batch):
        progress.step(_label(batch))
        return run_batch(batch, opts, peers)
    with concurrent.futures.ThreadPoolExecutor(opts.parallel) as pool:
        raw = [r for results in pool.map(one, batches) for r in results]
    if floor_runs > 1:
        _floors(backends, opts, floors, progress, say)
    return {"workloads": workloads, "backends": backends, "no_backend": no_backend,
            "peers": peers, "notes": notes, "raw": raw, "floors": floors}


def _floors(backends, opts, floors, progress, say):
    for be in backends:
        progress.step(f"memory floor [{be}]")
        sample, err = measure_floor(be, opts)
        if err:
            say(f"memory floor [{be}]: failed — {err}")
        else:
            floors[be].append(sample)
