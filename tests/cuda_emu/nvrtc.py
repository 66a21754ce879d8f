"""Compile ``.cu`` sources to cubin with NVRTC, as ``cupy.RawModule`` would.

The options are not written down here: :func:`cupy_options` runs the
installed cupy's own compile path (``cupy._core.core.compile_with_cache``,
which ``RawModule`` calls) with two of its internals replaced, one to name
the target ``sm_XX`` instead of asking a GPU, one to capture the options at
the moment cupy hands them to NVRTC. The compile itself goes through
``cuda.bindings.nvrtc`` (the CUDA 12 NVRTC wheel; CUDA 13's rejects sm_70)
to cubin, which needs no driver, unlike PTX through ``cuda.core``.
"""
import uuid
from unittest import mock

from kernels.gpu import NVRTC_OPTIONS


class CompileError(RuntimeError):
    """NVRTC rejected a source; the message holds its log."""


class _Captured(Exception):
    """Raised from inside cupy's compile path to carry the options out."""


def nvrtc_missing():
    """Why the NVRTC check cannot run here, or None when it can."""
    try:
        import cupy.cuda.compiler  # noqa: F401
    except ImportError as exc:
        return f"cupy is not installed: {exc}"
    try:
        from cuda.bindings import nvrtc
        err, *_ = nvrtc.nvrtcVersion()
    except Exception as exc:  # import error, or libnvrtc not loadable
        return f"cuda-bindings NVRTC is unavailable: {exc}"
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return f"nvrtcVersion failed: {err}"
    return None


def cupy_options(arch, options=NVRTC_OPTIONS):
    """The NVRTC options of ``cupy.RawModule(code, options=options)`` on sm_``arch``.

    Parameters
    ----------
    arch : int
        Compute capability, e.g. 80.
    options : tuple of str
        What the launcher passes to ``RawModule``.

    Returns
    -------
    tuple of str
        E.g. cupy's include dirs, ``--std=c++14``, ``-ftz=true``,
        ``-arch=sm_80``, ``--device-as-default-execution-space``.

    Raises
    ------
    RuntimeError
        When cupy's internals changed so that nothing was captured.
    """
    from cupy._core import core
    from cupy.cuda import compiler

    class Capture(compiler._NVRTCProgram):
        def __init__(self, src, *args, **kwargs):
            super().__init__(src, *args, **kwargs)
            self.src = src

        def compile(self, options=(), log_stream=None):
            if self.src:  # cupy's own probe compiles an empty source
                raise _Captured(options)
            return super().compile(options, log_stream)

    # A unique source, so cupy's on-disk kernel cache never answers instead.
    probe = f'// option probe {uuid.uuid4()}\nextern "C" __global__ void probe() {{}}\n'
    with mock.patch.object(compiler, "_NVRTCProgram", Capture), \
         mock.patch.object(compiler, "_get_arch_for_options_for_nvrtc",
                           lambda arch=None: (f"-arch=sm_{arch}", "cubin")):
        try:
            core.compile_with_cache(probe, options=tuple(options), arch=str(arch),
                                    prepend_cupy_headers=False)
        except _Captured as captured:
            return tuple(captured.args[0])
    raise RuntimeError("cupy's compile path changed: no NVRTC options captured")


def compile_cubin(source, filename, options):
    """Compile ``source`` with NVRTC.

    Returns
    -------
    cubin : bytes
        An ELF image.
    log : str
        NVRTC's log (warnings).

    Raises
    ------
    CompileError
        With the options and the full log, when NVRTC fails.
    """
    from cuda.bindings import nvrtc

    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], [])
    if err != ok:
        raise CompileError(f"{filename}: nvrtcCreateProgram failed: {err}")
    try:
        encoded = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        log = log.rstrip(b"\0 ").decode()
        if err != ok:
            raise CompileError(f"{filename}: NVRTC failed ({err}) with options "
                               f"{list(options)}:\n{log}")
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return cubin, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
