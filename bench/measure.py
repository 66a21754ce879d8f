"""Timing and memory inside one worker process.

Each timed call is read with the backend's timer (``perf_counter`` between two
``sync`` calls, or CUDA events on a real GPU: :mod:`bench.backends`) and runs
after an untimed ``reset`` (a backward case clears the previous gradient there), and
its output is freed after the clock stops.  Memory is the peak RSS rise over
a baseline read once the inputs are built and the warm-up call is done; the
kernel's peak-RSS counter is reset to the baseline first
(``/proc/self/clear_refs``).  Minor page faults per call are kept as evidence
of first touches.
"""
import resource


class Case:
    """A prepared benchmark call.

    Parameters
    ----------
    run : callable
        Runs the op once and returns its output.
    reset : callable, optional
        Untimed, before each call (e.g. drop the last gradient).
    """

    def __init__(self, run, reset=None):
        self.run = run
        self.reset = reset or (lambda: None)


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"bench: /proc/self/status has no {field}")


def rss_bytes():
    """The current resident set size."""
    return _status_kib("VmRSS") * 1024


def peak_rss_bytes():
    """The peak resident set size since start or the last :func:`reset_peak`."""
    return _status_kib("VmHWM") * 1024


def reset_peak():
    """Reset the peak RSS to the current RSS; False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def minor_faults():
    """Minor page faults of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_case(case, backend, repeats, warmup=1):
    """Time ``case`` ``repeats`` times after ``warmup`` untimed calls.

    Returns
    -------
    times : list of float
        Seconds per timed call.
    faults : list of int
        Minor page faults per timed call.
    """
    times, faults = [], []
    for i in range(warmup + repeats):
        case.reset()
        start, stop = backend.timer()
        start()
        f0 = minor_faults()
        out = case.run()
        seconds = stop()
        f1 = minor_faults()
        del out
        if i >= warmup:
            times.append(seconds)
            faults.append(f1 - f0)
    case.reset()
    return times, faults


def measure(case, backend, repeats, warmup=1):
    """Times, page faults and peak extra memory of ``case`` in this process.

    The memory baseline is read after the warm-up calls, so that one-time work
    (a peer's lazy conversion of its inputs, a JIT compiler) does not count.
    """
    syncs = backend.syncs
    time_case(case, backend, 0, warmup)
    baseline = rss_bytes()
    was_reset = reset_peak()
    times, faults = time_case(case, backend, repeats, 0)
    return {"times_s": times, "faults": faults, "baseline_rss_bytes": baseline,
            "peak_extra_bytes": max(0, peak_rss_bytes() - baseline),
            "peak_reset": was_reset, "syncs": backend.syncs - syncs, "clock": backend.clock}
