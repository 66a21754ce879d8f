"""Every kernels/gpu/*.cu compiles with NVRTC to cubin for sm_70, sm_80, sm_90.

The options are those the installed cupy's RawModule passes (captured from
cupy's compile path, see cuda_emu.nvrtc). Without cupy or the NVRTC wheel
the tests skip, and fail instead under ``REQUIRE_NVRTC=1`` (as in CI).
"""
import os
import re

import pytest

from cuda_emu.build import parse_kernels, preprocess
from cuda_emu.nvrtc import CompileError, compile_cubin, cupy_options, nvrtc_missing
from kernels.gpu import SOURCE_DIR, cu_files, read_source

ARCHS = [70, 80, 90]
# NVRTC 12.9 warns that sm_70 is deprecated; no other warning is allowed.
_KNOWN_WARNING = re.compile(r"Architectures prior to .* are deprecated")


@pytest.fixture(scope="module")
def nvrtc():
    """Skip (or, with REQUIRE_NVRTC=1, fail) when NVRTC cannot run here."""
    why = nvrtc_missing()
    if why:
        if os.environ.get("REQUIRE_NVRTC") == "1":
            pytest.fail(f"REQUIRE_NVRTC=1 but {why}")
        pytest.skip(why)


def _cupy_nvrtc_version():
    """(major, minor) of the NVRTC cupy loads; (0, 0) when it cannot tell."""
    try:
        from cupy_backends.cuda.libs import nvrtc
        return tuple(nvrtc.getVersion())
    except Exception:  # noqa: BLE001 (no loadable NVRTC: the compile itself reports it)
        return (0, 0)


@pytest.fixture(scope="module", params=ARCHS, ids=lambda a: f"sm_{a}")
def options(request, nvrtc):
    """cupy's RawModule options for one architecture."""
    version = _cupy_nvrtc_version()
    if request.param < 75 and version[0] >= 13:   # seen with cupy-cuda13x on an H200
        pytest.skip(f"cupy's NVRTC {version[0]}.{version[1]} has no sm_{request.param} "
                    "(CUDA 13 dropped Volta); [test]'s CUDA 12 NVRTC compiles it")
    return request.param, cupy_options(request.param)


def test_options_are_cupys(options):
    arch, opts = options
    assert f"-arch=sm_{arch}" in opts  # cubin, no driver needed
    assert "--device-as-default-execution-space" in opts
    assert "-ftz=true" in opts
    assert "--std=c++14" in opts
    assert any(o.startswith("-I") and o.endswith(os.path.join("_core", "include")) for o in opts)


@pytest.mark.parametrize("file", cu_files())
def test_compiles_to_cubin(options, file):
    arch, opts = options
    cubin, log = compile_cubin(read_source(file), file, opts)
    assert cubin[:4] == b"\x7fELF"
    warnings = [line for line in log.splitlines()
                if "warning" in line and not _KNOWN_WARNING.search(line)]
    assert not warnings, f"{file} on sm_{arch}:\n{log}"
    for kernel in parse_kernels(preprocess(SOURCE_DIR / file)):
        assert kernel.name.encode() + b"\0" in cubin, f"{kernel.name} missing from the cubin"


def test_nvrtc_rejects_an_include(options):
    """The check is real: NVRTC has no standard headers (nvcc would accept this)."""
    with pytest.raises(CompileError, match="cstdint"):
        compile_cubin("#include <cstdint>\n", "include.cu", options[1])
