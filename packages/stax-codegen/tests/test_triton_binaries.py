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
    import json, os, sys, logging
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
    report["vector_loads"] = "ld.global.v4" in first.asm["ptx"]

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
    assert report["vector_loads"]  # pointers assumed 16-byte aligned: vector loads
    assert report["warm"] == [1, 0] and report["same_cubin"]
    assert report["metadata"][:3] == ["kernel_0", 8, 90] and report["metadata"][3]
    assert report["keys_differ"] == 4
    # each bad entry a miss, removed (a later store rebuilds it), reported
    assert report["outcomes"] == {name: [True, False] for name in
                                  ("flipped", "truncated", "copied_over_another",
                                   "another_kernels_payload")}
    assert report["warned"] >= 2  # once per entry path
    assert report["group_writable_used"] is False
