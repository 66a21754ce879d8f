"""Verification of ``kernels/gpu`` without a GPU: NVRTC compile and CPU emulation.

``cuda_emu.h`` and :mod:`cuda_emu.build` run the unmodified ``.cu`` sources
on the CPU; :class:`cuda_emu.backend.EmuBackend` plugs them into the same
launchers the GPU uses; :mod:`cuda_emu.nvrtc` compiles them to cubin with
the options cupy uses. The ``tests/test_cuda_*.py`` files use these.
"""
