"""run_parallel: every piece once, errors re-raised, and never waiting on a worker
that the machine has not started (the calling thread takes its share)."""
import threading

import numpy as np
import pytest

from kernels.funcs import threads


def test_every_piece_runs_exactly_once():
    seen, lock = [], threading.Lock()

    def fn(piece):
        with lock:
            seen.append(piece)
    threads.run_parallel(fn, list(range(37)))
    assert sorted(seen) == list(range(37))


def test_a_worker_that_never_starts_does_not_hold_the_call(monkeypatch):
    class Stalled:                     # a pool whose threads the machine never runs
        def submit(self, fn, *args):
            return None
    monkeypatch.setattr(threads, "_pool", lambda workers: Stalled())
    monkeypatch.setattr(threads, "_num_threads", 4)
    done = []
    threads.run_parallel(done.append, list(range(8)))
    assert done == list(range(8))      # all of them, on the calling thread


def test_the_first_error_is_raised_after_every_started_piece_ends(monkeypatch):
    monkeypatch.setattr(threads, "_num_threads", 2)
    ran = []

    def fn(piece):
        ran.append(piece)
        if piece == 3:
            raise ValueError("piece 3")
    with pytest.raises(ValueError, match="piece 3"):
        threads.run_parallel(fn, list(range(6)))
    assert sorted(ran) == list(range(6))


def test_split_index_cuts_threaded_work_into_several_pieces_per_thread(monkeypatch):
    monkeypatch.setattr(threads, "_num_threads", 2)
    pieces = threads.split_index((1024, 1024), 64 << 20)
    assert len(pieces) == 2 * threads.PIECES_PER_THREAD
    covered = np.zeros(1024, int)
    for p in pieces:
        covered[p[0]] += 1
    assert (covered == 1).all()
    assert threads.split_index((1024,), 4 << 20) == [()]        # too small to thread


def test_one_thread_runs_every_piece_in_order_on_the_caller(monkeypatch):
    monkeypatch.setattr(threads, "_num_threads", 1)
    ran = []
    threads.run_parallel(lambda p: ran.append((p, threading.current_thread())), list(range(5)))
    assert ran == [(p, threading.current_thread()) for p in range(5)]


def test_balanced_cuts_give_blocks_of_equal_work(monkeypatch):
    monkeypatch.setattr(threads, "_num_threads", 2)
    cum = np.concatenate([[0], np.cumsum([1] * 60 + [100] * 4)])     # the work is at the end
    cuts = threads.balanced_cuts(cum, 64 << 20)      # 8 shares of 460: targets 57.5, 115, ...
    assert cuts == [0, 58, 61, 62, 63, 64]             # rows of 100 cannot be cut
    assert threads.balanced_cuts(cum, 4 << 20) == [0, 64]          # too small to thread
