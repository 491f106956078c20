"""The disk cache of Triton binaries (``triton/binaries.py``) without a GPU: a kernel of spec
example 1.1's shape compiled ahead of time for an H100/H200 (``GPUTarget("cuda", 90, 32)``),
stored under the cache directory, loaded back by a fresh cache object without compiling (the
same cubin, Triton's ``CompiledKernel``), and never loaded when the entry is corrupted,
truncated, copied over another kernel's entry, or holds another kernel's binary under a valid
digest; another target, alignment or option is another key; a directory others may write is not
used. Under the interpreter a cache directory is ignored (``test_triton_arrays.py``).

Run in a subprocess: the kernels must be real Triton functions, not the interpreter's (another
test module of the session sets ``TRITON_INTERPRET=1``)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("triton")

SCRIPT = textwrap.dedent("""
    import json, os, re, sys, logging
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from pathlib import Path
    from conftest import OpBuilder
    os.environ.pop("TRITON_INTERPRET", None)  # conftest sets it for the in-process tests
    os.environ["TRITON_CACHE_DIR"] = os.path.join(sys.argv[2], "triton-own")
    from stax.codegen import generate_triton, triton_target
    from stax.codegen.triton import binaries
    from stax.codegen.triton.binaries import BinaryCache, KernelSpec, compiled_kernel
    from stax.codegen.triton.executable import LAUNCH_OPTIONS, load_source
    from stax.ir.passes import decompose_to_basis
    from stax.loop import lower_opgraph
    from triton.backends.compiler import GPUTarget

    warnings = []
    logging.getLogger("stax.cache").addHandler(type("H", (logging.Handler,), {
        "emit": lambda self, record: warnings.append(record.getMessage())})())

    def artifact(builder, *outputs):
        target = triton_target()
        program = builder.program(*outputs)
        decompose_to_basis(program.graph, basis=target.basis)
        loop = lower_opgraph(program, materialize=target.materialize, options=target.loop_options)
        return generate_triton(loop, target)

    def spec_of(a, aligned=None, **options):
        module = load_source(a.triton_source)
        k = a.kernels[0]
        fn = getattr(module, k.name)
        dtypes = {b.name: b.dtype for b in a.buffers}
        aligned = tuple(range(len(k.args))) if aligned is None else aligned
        spec = KernelSpec.of(a.triton_source, fn, [dtypes[n] for n in k.args], k.launch.constants,
                             aligned, {**LAUNCH_OPTIONS, "num_warps": k.launch.num_warps, **options})
        return spec, fn

    x = np.ones((64, 128), np.float32)
    b = OpBuilder(x=x)
    xs = b.inputs["x"]
    softmax_sum = artifact(b, b("sum", b("exp", b("sub", xs, b("max", xs, axis=(1,), keepdims=True))),
                                axis=(1,), keepdims=False, dtype="float32"))
    b = OpBuilder(x=x)
    doubled = artifact(b, b("mul", b.inputs["x"], 2.0))
    h100 = GPUTarget("cuda", 90, 32)
    root = Path(sys.argv[2]) / "cache"
    report = {}

    spec, fn = spec_of(softmax_sum)
    cache = BinaryCache(root)
    first = compiled_kernel(spec, fn, h100, cache)
    path = cache.disk.path(cache.key(spec, h100))
    report["stored"] = path.is_file() and path.parent.parent.name == "triton"
    report["misses_then"] = [cache.misses, cache.hits]
    head = next(l for l in first.asm["ttir"].splitlines() if "tt.func" in l)
    report["vector_loads"] = [head.count("tt.divisibility = 16"), bool(re.search(r"ld\\.global\\S*\\.v4\\.", first.asm["ptx"]))]

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled instead of loading")
    compile_ = KernelSpec.compile
    KernelSpec.compile = no_compiler  # a warm load must not compile
    warm = BinaryCache(root)
    loaded = compiled_kernel(spec, fn, h100, warm)
    KernelSpec.compile = compile_
    report["warm"] = [warm.hits, warm.misses]
    report["same_cubin"] = bytes(loaded.asm["cubin"]) == bytes(first.asm["cubin"])
    report["metadata"] = [loaded.name, loaded.metadata.num_warps, loaded.metadata.target.arch,
                          loaded.packed_metadata == first.packed_metadata]
    report["keys_differ"] = len({cache.key(spec, h100), cache.key(spec, GPUTarget("cuda", 80, 32)),
                                 cache.key(spec_of(softmax_sum, aligned=(1,))[0], h100),
                                 cache.key(spec_of(softmax_sum, num_warps=2)[0], h100)})

    good = path.read_bytes()
    outcomes = {}
    def attempt(name, data, at=path, make=spec):
        at.write_bytes(data)
        fresh = BinaryCache(root)
        outcomes[name] = [fresh.load(make, fn, h100) is None, at.exists()]
    flipped = bytearray(good); flipped[-100] ^= 1
    attempt("flipped", bytes(flipped))
    attempt("truncated", good[:len(good) // 2])
    other, other_fn = spec_of(doubled)
    other_cache = BinaryCache(root)
    compiled_kernel(other, other_fn, h100, other_cache)
    other_path = other_cache.disk.path(other_cache.key(other, h100))
    attempt("copied_over_another", good, at=other_path, make=other)
    # another kernel's payload under this key, with a valid digest: its header names that kernel
    path.unlink(missing_ok=True)
    bad = BinaryCache(root)
    bad.disk.store(bad.key(spec, h100), binaries.pack(compiled_kernel(other, other_fn, h100, None),
                                                      bad.key(other, h100)))
    outcomes["another_kernels_payload"] = [bad.load(spec, fn, h100) is None, path.exists()]
    report["outcomes"] = outcomes
    report["warned"] = sum("is not used" in w for w in warnings)

    os.chmod(root, 0o777)
    report["group_writable_used"] = BinaryCache(root).disk.usable()
    print("REPORT" + json.dumps(report))
""")


@pytest.mark.slow
def test_binaries_stored_loaded_and_verified(tmp_path):
    tests = Path(__file__).parent
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tests), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("REPORT"))
    report = json.loads(line[len("REPORT"):])
    assert report["stored"] and report["misses_then"] == [1, 0]
    # the three pointers assumed 16-byte aligned: vector loads
    assert report["vector_loads"] == [3, True]
    assert report["warm"] == [1, 0] and report["same_cubin"]
    assert report["metadata"][:3] == ["kernel_0", 8, 90] and report["metadata"][3]
    assert report["keys_differ"] == 4
    # each bad entry a miss, removed (a later store rebuilds it), reported
    assert report["outcomes"] == {name: [True, False] for name in
                                  ("flipped", "truncated", "copied_over_another",
                                   "another_kernels_payload")}
    assert report["warned"] >= 2  # once per entry path
    assert report["group_writable_used"] is False


GPU_PATH = textwrap.dedent("""
    import contextlib, json, os, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from conftest import OpBuilder
    os.environ.pop("TRITON_INTERPRET", None)  # conftest sets it for the in-process tests
    import torch
    from stax.codegen import TritonExecutable, generate_triton, triton_target
    from stax.codegen.triton import arrays, executable, launcher
    from stax.ir.passes import decompose_to_basis
    from stax.loop import lower_opgraph

    class PosingGPU(arrays.TorchArrays):
        # torch CPU tensors posing as CUDA device 0, NumPy as its CuPy
        def device_index(self, a): return 0
        def device_of(self, a): return "cuda:0"
        def current_device(self): return 0
        def current_stream(self, index): return 1234
        def numpy_module(self, like): return np
        def step_stream(self, like): return contextlib.nullcontext()
    gpu = PosingGPU()
    executable.library_of = lambda a: gpu if isinstance(a, torch.Tensor) else None

    launches = []
    class Compiled:
        function, packed_metadata = 77, ("meta",)
        def __init__(self, spec):
            self.spec = spec
        def run(self, *args):
            if fail:
                raise TypeError("a launcher of another shape")
            launches.append([self.spec.name, self.spec.aligned, *args])
    bound = []
    def compiled_kernel(spec, fn, target, cache):
        bound.append(spec.name)
        return Compiled(spec)
    launcher.compiled_kernel = compiled_kernel
    import triton.runtime
    triton.runtime.driver.set_active(type("D", (), {"get_current_target": lambda self: None})())

    b = OpBuilder(x=np.ones((4, 6), np.int64))
    doubled = b("mul", b.inputs["x"], 2)
    out = b("add", b("cumsum", doubled, axis=1, dtype="int64"), b("gcd", b.inputs["x"], 6))
    target = triton_target()
    program = b.program(out)
    decompose_to_basis(program.graph, basis=target.basis)
    artifact = generate_triton(lower_opgraph(program, materialize=target.materialize,
                                             options=target.loop_options), target)
    report = {"steps": artifact.steps, "kernels": [k.name for k in artifact.kernels]}
    fail = False
    ex = TritonExecutable(artifact)
    x = torch.arange(24, dtype=torch.int64).reshape(4, 6)
    (got,) = ex(x)
    (again,) = ex.run(x)
    report["bound"] = list(bound)
    report["launch_path"] = ex.launch_path
    report["launches"] = [[l[0], list(l[1]), *l[2:7], l[7] == ("meta",), l[8] is None,
                           l[9] is None, l[10] is None] for l in launches]
    first_ptrs = [l[11:] for l in launches[:len(artifact.kernels)]]
    report["input_passed"] = x.data_ptr() in first_ptrs[0]
    report["output_passed"] = got.data_ptr() in first_ptrs[-1]
    report["out"] = [type(got).__name__, list(got.shape), str(got.dtype)]
    report["fresh_outputs"] = got.data_ptr() != again.data_ptr() or got is not again
    # a launcher that refuses its arguments: Triton's Python path from then on
    fail, launches[:] = True, []
    ex2 = TritonExecutable(artifact)
    pythons = []
    for k in ex2.kernels:
        k.python = lambda *a, name=k.name: pythons.append([name] + [type(t).__name__ for t in a])
    ex2(x)
    ex2(x)
    report["fallback"] = [ex2.launch_path, [k.fallback for k in ex2.kernels], pythons]
    print("REPORT" + json.dumps(report))
""")


@pytest.mark.slow
def test_gpu_path_launches_bound_pointers(tmp_path):
    """The executable's GPU path, with torch CPU tensors posing as a CUDA device and a
    recording stand-in for each compiled kernel: every kernel launched through its launcher
    (grid, the device's current stream, function, metadata, no hooks, then the buffers' raw
    pointers: the input's and the output's among them), a NumPy step between the kernels;
    each kernel bound once; a launcher that refuses its arguments sends that kernel through
    Triton's Python path from then on (``launch_path`` says so)."""
    tests = Path(__file__).parent
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", GPU_PATH, str(tests)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("REPORT"))
    report = json.loads(line[len("REPORT"):])
    kernels = report["kernels"]
    assert len(kernels) >= 2 and any(s not in kernels for s in report["steps"])  # a NumPy step
    assert report["bound"] == kernels  # once each, though called twice
    assert report["launch_path"] == "compiled"
    assert len(report["launches"]) == 2 * len(kernels)
    for launch in report["launches"]:
        name, aligned, gx, gy, gz, stream, function = launch[:7]
        assert name in kernels and aligned == list(range(len(aligned)))  # every buffer aligned
        assert gx >= 1 and (gy, gz) == (1, 1) and stream == 1234 and function == 77
        assert launch[7:] == [True] * 4  # metadata packed; no launch metadata, no hooks
    assert report["input_passed"] and report["output_passed"]
    assert report["out"] == ["Tensor", [4, 6], "torch.int64"] and report["fresh_outputs"]
    path, reasons, pythons = report["fallback"]
    assert path == "python" and all("another shape" in r for r in reasons)
    assert len(pythons) == 2 * len(kernels) and all(set(p[1:]) == {"Tensor"} for p in pythons)
