"""The memory-bandwidth floor: copy rates measured in the same run, and the model.

A large ``copyto`` into a reused buffer gives the streaming rate; the same copy
into a freshly allocated buffer adds the first-touch cost of new pages.  Rates
count the bytes read plus the bytes written, so an op that must read ``r``
and write ``w`` bytes cannot beat ``(r + w) / reused_rate`` with a warm output,
nor that plus ``w`` times the first-touch cost per byte with a fresh one.

The copies are timed with the backend's timer, as the workloads are (CUDA
events on a real GPU).  A GPU copies 2 GiB rather than 256 MiB: an H200's L2
cache holds 60 MB, and the floor must stream from device memory.
"""
import statistics

FULL_BYTES = 256 * 2**20
GPU_BYTES = 2 * 2**30
QUICK_BYTES = 16 * 2**20


def copy_bytes(backend, quick):
    """The bytes :func:`copy_times` copies on ``backend`` (a name) at the run's size."""
    if quick:
        return QUICK_BYTES
    return GPU_BYTES if backend == "gpu" else FULL_BYTES


def _timed(backend, fn):
    """Seconds ``fn()`` takes on ``backend``'s timer; its result is freed after."""
    start, stop = backend.timer()
    start()
    out = fn()
    seconds = stop()
    del out
    return seconds


def _fresh_copy(xp, src):
    out = xp.empty_like(src)
    xp.copyto(out, src)
    return out


def copy_times(backend, nbytes, repeats):
    """Seconds per copy of ``nbytes`` into a reused and into a fresh buffer, alternated."""
    xp = backend.xp
    src = xp.ones(nbytes // 8)
    dst = xp.empty_like(src)
    xp.copyto(dst, src)
    reused, fresh = [], []
    for _ in range(repeats + 1):
        reused.append(_timed(backend, lambda: xp.copyto(dst, src)))
        fresh.append(_timed(backend, lambda: _fresh_copy(xp, src)))
    return {"bytes": nbytes, "reused_s": reused[1:], "fresh_s": fresh[1:],
            "clock": backend.clock}


def model(samples):
    """Rates from pooled :func:`copy_times` samples of one buffer size.

    Returns
    -------
    dict
        ``reused_gbps`` and ``fresh_gbps`` (read+write GB/s of the median copy),
        ``first_touch_s_per_byte`` and the sample counts.
    """
    nbytes = samples[0]["bytes"]
    reused = statistics.median(t for s in samples for t in s["reused_s"])
    fresh = statistics.median(t for s in samples for t in s["fresh_s"])
    return {"copy_bytes": nbytes, "samples": sum(len(s["reused_s"]) for s in samples),
            "reused_gbps": 2 * nbytes / reused / 1e9, "fresh_gbps": 2 * nbytes / fresh / 1e9,
            "first_touch_s_per_byte": max(0.0, fresh - reused) / nbytes,
            "clock": samples[0].get("clock", "perf_counter")}


def floor_seconds(read, write, rates):
    """(reused, fresh) floor in seconds for an op moving ``read`` + ``write`` bytes."""
    reused = (read + write) / (rates["reused_gbps"] * 1e9)
    return reused, reused + write * rates["first_touch_s_per_byte"]
