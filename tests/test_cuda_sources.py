"""Static rules for kernels/gpu/*.cu, checked on the macro-expanded text."""
import re

import pytest

from cuda_emu.build import parse_kernels, preprocess
from kernels.gpu import PREAMBLE, SOURCE_DIR, cu_files, read_source

GRID_STRIDE = re.compile(
    r"for \(i64 (\w+) = blockIdx\.x \* \(i64\)blockDim\.x \+ threadIdx\.x; \1 < [^;]+; "
    r"\1 \+= \(i64\)blockDim\.x \* gridDim\.x\)")


def kernel_bodies(text):
    """``{name: body}`` of every extern "C" __global__ kernel, by brace matching."""
    bodies = {}
    for match in re.finditer(r'extern "C" __global__ void (\w+)\s*\([^)]*\)\s*\{', text):
        depth, end = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        bodies[match.group(1)] = text[match.end():end - 1]
    return bodies


def test_the_preamble_holds_no_kernel_and_no_include():
    preamble = (SOURCE_DIR / PREAMBLE).read_text()
    assert "__global__" not in preamble and not re.search(r"^\s*#\s*include", preamble, re.M)


@pytest.mark.parametrize("file", cu_files())
def test_each_file_leaves_the_shared_typedefs_to_the_preamble(file):
    assert not re.search(r"typedef .* (i64|i32|u8|u16|u32|u64);|define GRID_STRIDE_LOOP",
                         (SOURCE_DIR / file).read_text())


@pytest.mark.parametrize("file", cu_files())
def test_no_include_and_only_extern_c_kernels(file):
    source = read_source(file)
    assert not re.search(r"^\s*#\s*include", source, re.MULTILINE)
    text = preprocess(SOURCE_DIR / file)
    assert text.count("__global__") == len(parse_kernels(text)) > 0


@pytest.mark.parametrize("file", cu_files())
def test_every_kernel_loops_grid_stride_in_64_bit(file):
    bodies = kernel_bodies(" ".join(preprocess(SOURCE_DIR / file).split()))
    assert bodies
    for name, body in bodies.items():
        assert GRID_STRIDE.search(body), f"{name} has no 64-bit grid-stride loop"
