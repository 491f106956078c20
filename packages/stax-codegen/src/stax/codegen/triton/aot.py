"""Ahead-of-time compilation of a CUDA artifact's kernels for a GPU that need not be present
(``GPUTarget("cuda", 90, 32)``: an H100/H200), through Triton's own compiler: its Triton IR,
LLVM IR, PTX and, with the ptxas Triton's wheel carries, cubin. CI checks this way that every
kernel it generates compiles for the GPU, with the options the executable launches it with
(``executable.LAUNCH_OPTIONS``). Needs Triton, and ``TRITON_INTERPRET`` unset."""

from __future__ import annotations

from typing import Any

from ..artifact import KernelArtifact
from .executable import LAUNCH_OPTIONS, load_source

#: each loop dtype's pointer type in a Triton signature
POINTERS = {"bool": "*i1", "int8": "*i8", "int16": "*i16", "int32": "*i32", "int64": "*i64",
            "uint8": "*u8", "uint16": "*u16", "uint32": "*u32", "uint64": "*u64",
            "float32": "*fp32", "float64": "*fp64"}


def compile_ahead(artifact: KernelArtifact, arch: int = 90, warp_size: int = 32,
                  options: dict[str, Any] | None = None, aligned: bool = True
                  ) -> dict[str, dict[str, Any]]:
    """Each kernel's compiled forms (``asm``: ``ttir``, ``llir``, ``ptx``, ``cubin``...) for
    CUDA compute capability ``arch``; ``options`` replace launch options (a test may turn FMA
    contraction back on to see the difference). ``aligned``: every pointer 16-byte aligned, as
    Triton's launcher specializes a kernel for buffers that are (torch's and CuPy's allocations
    are), so the code is the one that runs: vector loads where the layout allows them."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if triton.knobs.runtime.interpret:
        raise RuntimeError("ahead-of-time compilation needs TRITON_INTERPRET unset (the "
                           "interpreter's kernels are Python functions, not Triton's)")
    if artifact.triton_source is None:
        raise ValueError(f"{artifact.name}: the artifact holds no Triton source")
    module = load_source(artifact.triton_source)
    dtypes = {b.name: b.dtype for b in artifact.buffers}
    target = GPUTarget("cuda", arch, warp_size)
    compiled = {}
    for kernel in artifact.kernels:
        fn = getattr(module, kernel.name)
        constants = kernel.launch.constants
        signature = {fn.arg_names[i]: POINTERS[dtypes[a]] for i, a in enumerate(kernel.args)}
        # a size-generic kernel's sizes (issue 15), as the launcher passes them
        signature.update({name: "i32" if kernel.index_bits == 32 else "i64"
                          for name in kernel.size_args})
        signature.update({name: "constexpr" for name in constants})
        chosen = {**LAUNCH_OPTIONS, "num_warps": kernel.launch.num_warps, **(options or {})}
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(kernel.args))} if aligned else None
        source = ASTSource(fn=fn, signature=signature, constexprs=constants, attrs=attrs)
        compiled[kernel.name] = dict(triton.compile(source, target=target, options=chosen).asm)
    return compiled
