"""The host output pool and the thread count, from the user's side.

Large outputs come from a pool of reused blocks (:mod:`kernels.funcs.pool`);
these functions show what it holds, free what no tensor uses, and set its cap
and the kernels' thread count at run time (the environment variables
``PHISPARSE_POOL_BYTES`` and ``PHISPARSE_NUM_THREADS`` set the defaults).
"""
from kernels.funcs import pool, threads

__all__ = ["release_memory", "memory_stats", "set_pool_bytes", "set_num_threads",
           "get_num_threads"]


def release_memory() -> int:
    """Free every pooled output block no tensor uses; return the bytes freed.

    Like ``torch.cuda.empty_cache()`` and ``paddle.device.cuda.empty_cache()``
    for host memory: live tensors keep their memory.

    Examples
    --------
    >>> import dense
    >>> dense.release_memory() >= 0
    True
    """
    return pool.release_idle()


def memory_stats() -> dict[str, int]:
    """``{'pool_in_use_bytes', 'pool_idle_bytes', 'pool_limit_bytes'}`` of the output pool.

    Examples
    --------
    >>> import dense
    >>> sorted(dense.memory_stats())
    ['pool_idle_bytes', 'pool_in_use_bytes', 'pool_limit_bytes']
    """
    used, idle = pool.pooled_bytes()
    return {"pool_in_use_bytes": used, "pool_idle_bytes": idle,
            "pool_limit_bytes": pool.pool_limit()}


set_pool_bytes = pool.set_pool_bytes
set_num_threads = threads.set_num_threads


def get_num_threads() -> int:
    """The thread count kernels use now (``torch.get_num_threads``'s counterpart):
    ``PHISPARSE_NUM_THREADS``, the usable CPUs, or what :func:`set_num_threads` set.

    Examples
    --------
    >>> import dense
    >>> old = dense.set_num_threads(3)
    >>> dense.get_num_threads()
    3
    >>> _ = dense.set_num_threads(old)
    """
    return threads.num_threads()
