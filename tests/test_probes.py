"""Hostile probes of the whole public API, each in a memory-capped subprocess.

tests/hostile_probes.py defines the probes and the worker.  The workers run
batches of probes and report each one as it ends; when a worker crashes or
a probe runs past :data:`PROBE_TIMEOUT`, the probe it was running is
recorded as a crash or a hang and a fresh worker takes the rest.  The test
fails listing every probe that crashed, hung, gave a wrong answer, let an
output alias a caller's array, or raised an error of the wrong type or
without the op's name.
"""
import json
import os
import selectors
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hostile_probes  # noqa: E402

#: Address-space cap of a worker: large enough for numpy, scipy and BLAS, small
#: enough that a runaway allocation fails at once.
CAP = 3 << 30
PROBE_TIMEOUT = 20
#: A worker's start (imports) may take long on a loaded machine; probes' clocks start after it.
START_TIMEOUT = 180
WORKERS = 2


def _start(indices, **extra_env):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE]),
               **extra_env)
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "hostile_probes.py"), str(CAP)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    proc.stdin.write("".join(f"{k}\n" for k in indices))
    proc.stdin.close()
    return proc


def _run_all(indices, timeout=PROBE_TIMEOUT, **extra_env):
    """{probe index: failure text ('' = behaved)}, respawning workers after a crash or hang."""
    results, pending = {}, [list(indices[w::WORKERS]) for w in range(WORKERS)]
    while any(pending):
        sel = selectors.DefaultSelector()
        procs, starting = {}, set()
        for w, todo in enumerate(pending):
            if todo:
                proc = _start(todo, **extra_env)
                procs[proc.stdout] = (w, proc)
                starting.add(w)
                sel.register(proc.stdout, selectors.EVENT_READ)
        while procs:
            events = sel.select(timeout=START_TIMEOUT if starting else timeout)
            if not events:                      # every live worker is stuck: each one hangs
                for w, proc in procs.values():
                    results[pending[w].pop(0)] = f"hang: no result in {timeout} s"
                    proc.kill()
                break
            for key, _ in events:
                w, proc = procs[key.fileobj]
                line = key.fileobj.readline()
                if line:
                    got = json.loads(line)
                    if got.get("ready"):
                        starting.discard(w)
                        continue
                    results[got["k"]] = got["failure"]
                    pending[w].remove(got["k"])
                    continue
                proc.wait()
                starting.discard(w)
                sel.unregister(key.fileobj)
                del procs[key.fileobj]
                if pending[w]:
                    results[pending[w].pop(0)] = f"crash: worker exit status {proc.returncode}"
        for _, proc in procs.values():
            proc.wait()
    return results


@pytest.mark.skipif(sys.platform == "win32", reason="resource.setrlimit is POSIX-only")
def test_hostile_probes_find_no_crash_hang_wrong_answer_alias_or_unnamed_error():
    probes = hostile_probes.PROBES
    assert len(probes) >= 150
    results = _run_all(list(range(len(probes))))
    assert len(results) == len(probes)
    failures = [f"{probes[k].name}: {text}" for k, text in sorted(results.items()) if text]
    assert not failures, f"{len(failures)} of {len(probes)} probes failed:\n" + "\n".join(failures)


def test_the_harness_reports_crashes_hangs_wrong_answers_and_unnamed_errors():
    got = _run_all(list(range(5)), timeout=10, HOSTILE_PROBES_SELF_TEST="1")
    assert got[0].startswith("crash: worker exit status -11")
    assert got[1].startswith("hang")
    assert got[2] == ""
    assert got[3].startswith("wrong answer or aliasing")
    assert got[4].startswith("expected TypeError/ValueError/IndexError, got AttributeError")
