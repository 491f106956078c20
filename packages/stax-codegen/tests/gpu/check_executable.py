"""GPU checks of the CUDA executable (issue 12 items 3, 5, 6), for a machine with an NVIDIA GPU,
torch, Triton and CuPy: ``python check_executable.py OUTDIR``. Without a GPU (or with
``TRITON_INTERPRET=1``) it runs what it can on torch CPU tensors, as a smoke test of itself.

1. torch CUDA tensors and CuPy arrays in, the same kind out, on the inputs' device; values
   against NumPy (spec example 1.1, a row softmax sum, np.sort and a matrix product as NumPy
   steps, which must run through CuPy: ``host_steps`` empty).
2. Streams: the kernels and the NumPy steps run on the library's current stream (work queued
   before the call on a side stream, which a launch on another stream would overtake).
3. Per-call host time of a one-kernel executable at (64, 128): ``run`` and the checked call
   through the compiled launcher, the same executable through ``kernel[grid](...)``, and the
   bare launches.
4. The binary cache: the first call in a fresh process, cold (empty caches) and warm (the cache
   directory filled by the cold one, Triton's own cache empty).
Prints a table last; writes ``OUTDIR/executable.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

RESULTS: list[tuple[str, str, str]] = []
DATA: dict[str, object] = {}


def record(name: str, ok: bool | None, detail: str = "") -> None:
    RESULTS.append((name, "ok" if ok else "SKIP" if ok is None else "FAIL", detail))
    print(f"[{RESULTS[-1][1]}] {name}: {detail}", flush=True)


def section(name):
    def wrap(fn):
        def run(*args):
            try:
                fn(*args)
            except Exception as exc:
                traceback.print_exc()
                record(name, False, f"{type(exc).__name__}: {str(exc)[:200]}")
        return run
    return wrap


def artifact_of(fn, *arrays):
    from stax.codegen import generate_triton, triton_target
    from stax.ir import lower_capture
    from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
    from stax.loop import lower_opgraph
    from stax.trace import trace

    capture = trace(fn, arrays)
    run_pipeline(capture.graph, DEFAULT_PIPELINE)
    opgraph = lower_capture(capture)
    target = triton_target()
    decompose_to_basis(opgraph.graph, basis=target.basis)
    return generate_triton(lower_opgraph(opgraph, materialize=target.materialize,
                                         options=target.loop_options), target)


def example_1_1(x, w):
    return (np.maximum(x + w, 0) * 2).sum(-1)


def exp_sum(x):
    return np.sum(np.exp(x - x.max(axis=1, keepdims=True)), axis=1)


def sort_matmul(x, w):
    return np.sort(x, axis=1) @ w + 1


CASES = {"example_1_1": (example_1_1, [(64, 128), (64, 128)]),
         "exp_sum": (exp_sum, [(64, 128)]),
         "sort_matmul": (sort_matmul, [(256, 64), (64, 32)])}


def inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s, dtype=np.float32) for s in shapes]


@section("values")
def check_values(torch, cupy, device, cache_dir):
    from stax.codegen import TritonExecutable

    for name, (fn, shapes) in CASES.items():
        arrays = inputs(shapes)
        artifact = artifact_of(fn, *arrays)
        ex = TritonExecutable(artifact, cache_dir=cache_dir)
        want = fn(*arrays)
        kinds = [("torch", [torch.from_numpy(a).to(device) for a in arrays])]
        if cupy is not None:
            kinds.append(("cupy", [cupy.asarray(a) for a in arrays]))
        for kind, args in kinds:
            (got,) = ex(*args)
            lib_ok = isinstance(got, torch.Tensor) if kind == "torch" else isinstance(got, cupy.ndarray)
            where = str(got.device) if kind == "torch" else f"cuda:{got.device.id}"
            host = got.cpu().numpy() if kind == "torch" else cupy.asnumpy(got)
            close = np.allclose(host, want, rtol=2e-5, atol=1e-4)
            err = float(np.max(np.abs(host - want) / (np.abs(want) + 1e-3)))
            record(f"{name} [{kind}]", lib_ok and close and where.startswith(device.split(":")[0])
                   and not ex.host_steps,
                   f"out {type(got).__name__} on {where}, max rel err {err:.1e}, "
                   f"externs {[e.target for e in artifact.externs]} host_steps {ex.host_steps}, "
                   f"launch {ex.launch_path} {[k.fallback for k in ex.kernels if k.fallback]}")


@section("alignment")
def check_alignment(torch, cupy, device, cache_dir):
    """An input 4 bytes off 16-byte alignment (a slice): the kernel assumed aligned would make
    vector loads from it; the launcher binds a binary compiled without that assumption."""
    from stax.codegen import TritonExecutable

    def scaled_exp(y):
        return np.exp(y) * 2

    base = inputs([(4097,)], 4)[0]
    ex = TritonExecutable(artifact_of(scaled_exp, base[1:].copy()), cache_dir=cache_dir)
    tbase = torch.from_numpy(base).to(device)
    (aligned,) = ex(tbase[:4096].clone())
    (shifted,) = ex(tbase[1:])
    torch.cuda.synchronize()
    bound = sorted(ex.kernels[0].compiled._bound)
    ok = np.allclose(shifted.cpu().numpy(), scaled_exp(base[1:]), rtol=1e-6) and \
        np.allclose(aligned.cpu().numpy(), scaled_exp(base[:4096]), rtol=1e-6) and len(bound) == 2
    record("misaligned input", ok, f"bindings (device, aligned params) {bound}")


@section("streams")
def check_streams(torch, cupy, device, cache_dir):
    """Work queued on a side stream before the call (a long wait, then zeroing the input): a
    launch on that stream sees zeros; one on another stream would read the input first."""
    from stax.codegen import TritonExecutable

    for name in ("exp_sum", "sort_matmul"):
        fn, shapes = CASES[name]
        arrays = inputs(shapes, 1)
        ex = TritonExecutable(artifact_of(fn, *arrays), cache_dir=cache_dir)
        want = fn(*[np.zeros_like(a) for a in arrays])
        side = torch.cuda.Stream()
        args = [torch.from_numpy(a).to(device) for a in arrays]
        ex(*args)  # compiled before the timing
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU time on this stream
            for a in args:
                a.zero_()
            (got,) = ex(*args)
        side.synchronize()
        ok = np.allclose(got.cpu().numpy(), want, atol=1e-5)
        record(f"stream torch {name}", ok, "kernels and NumPy steps ordered after the side "
               "stream's work" if ok else "read the input before the side stream zeroed it")
        if cupy is None:
            continue
        cargs = [cupy.asarray(a) for a in arrays]
        ex(*cargs)
        cupy.cuda.runtime.deviceSynchronize()
        stream = cupy.cuda.Stream(non_blocking=True)
        big = cupy.ones((4096, 4096), np.float32) / 4096
        with stream:
            for _ in range(30):
                big = big @ big  # tens of ms on this stream
            for a in cargs:
                a[...] = 0
            (got,) = ex(*cargs)
        stream.synchronize()
        ok = np.allclose(cupy.asnumpy(got), want, atol=1e-5)
        record(f"stream cupy {name}", ok, "on CuPy's current stream" if ok else
               "read the input before the stream zeroed it")


def per_call(fn, n):
    for _ in range(50):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


@section("overhead")
def check_overhead(torch, cupy, device, cache_dir):
    from stax.codegen import TritonExecutable

    fn, shapes = CASES["exp_sum"]
    arrays = inputs(shapes, 2)
    ex = TritonExecutable(artifact_of(fn, *arrays), cache_dir=cache_dir)
    DATA["overhead_kernels"] = [len(ex.kernels), len(ex.externs)]
    x = torch.from_numpy(arrays[0]).to(device)
    ex(x)
    torch.cuda.synchronize()
    n = 3000
    times = {}
    times["run (compiled launcher)"] = per_call(lambda: ex.run(x), n)
    times["checked call (compiled)"] = per_call(lambda: ex(x), n)
    torch.cuda.synchronize()
    step = ex.kernels[0]
    env_out = [torch.empty(64, device=device), torch.empty(64, device=device)]
    args = [x, *env_out][:len(step.args)]
    ptrs = [a.data_ptr() for a in args]
    index = x.device.index or 0
    stream = torch.cuda.current_stream().cuda_stream
    times["bare compiled launch"] = per_call(lambda: step.compiled.launch(ptrs, stream, index), n)
    times["bare kernel[grid](...)"] = per_call(lambda: step.python(*args), n)
    step.verified, step.fallback = False, "forced for the comparison"
    times["run via kernel[grid](...)"] = per_call(lambda: ex.run(x), n)
    step.verified, step.fallback = True, None
    if cupy is not None:
        cx = cupy.asarray(arrays[0])
        ex(cx)
        times["run, CuPy input"] = per_call(lambda: ex.run(cx), n)
    torch.cuda.synchronize()
    DATA["per_call_us"] = times
    for k, v in times.items():
        record(f"per call: {k}", True, f"{v:.1f} us")
    record(f"per call below 15 us (run, compiled; {len(ex.kernels)} kernel(s))",
           times["run (compiled launcher)"] < 15,
           f"{times['run (compiled launcher)']:.1f} us vs {times['run via kernel[grid](...)']:.1f} "
           "us through kernel[grid]")


CHILD = """
import os, sys, time, json
t0 = time.perf_counter()
import numpy as np, torch
sys.path.insert(0, os.path.dirname(sys.argv[1]))
from check_executable import artifact_of, exp_sum, inputs
from stax.codegen import TritonExecutable
x = inputs([(64, 128)], 3)[0]
artifact = artifact_of(exp_sum, x)
tx = torch.from_numpy(x).cuda()
torch.cuda.synchronize()
t1 = time.perf_counter()
ex = TritonExecutable(artifact, cache_dir=sys.argv[2] if sys.argv[2] != "-" else None)
(got,) = ex(tx)
torch.cuda.synchronize()
t2 = time.perf_counter()
cache = ex.cache
print("CHILD" + json.dumps({"first_call_s": t2 - t1, "imports_capture_s": t1 - t0,
      "hits": cache.hits if cache else None, "misses": cache.misses if cache else None,
      "launch": ex.launch_path, "ok": bool(np.allclose(got.cpu().numpy(), exp_sum(x), rtol=2e-5))}))
"""


@section("binary cache")
def check_warm_start(torch, cupy, device, cache_dir):
    work = Path(tempfile.mkdtemp(prefix="stax-warm-"))
    ours = work / "stax-cache"
    script = Path(__file__).resolve()

    def child(label, triton_cache, stax_cache):
        env = dict(os.environ, TRITON_CACHE_DIR=str(work / triton_cache))
        env.pop("TRITON_INTERPRET", None)
        done = subprocess.run([sys.executable, "-c", CHILD, str(script), stax_cache], env=env,
                              capture_output=True, text=True, timeout=120)
        line = [x for x in done.stdout.splitlines() if x.startswith("CHILD")]
        if done.returncode or not line:
            raise RuntimeError(f"{label}: {done.stderr[-1500:]}")
        result = json.loads(line[0][5:])
        DATA[f"process {label}"] = result
        return result
    cold = child("cold", "triton-a", str(ours))
    # Triton's cache without its kernels (its driver and launchers stay built, as in any
    # process after the first): the kernel can come from the binary cache alone
    import shutil
    shutil.copytree(work / "triton-a", work / "triton-b")
    for cubin in list((work / "triton-b").rglob("*.cubin")):
        shutil.rmtree(cubin.parent, ignore_errors=True)
    warm = child("warm", "triton-b", str(ours))
    triton_warm = child("triton cache only", "triton-a", "-")
    record("cold process: first call", cold["ok"] and cold["misses"] >= 1,
           f"{cold['first_call_s'] * 1e3:.0f} ms (compile; {cold['misses']} misses)")
    record("warm process: first call from the binary cache", warm["ok"] and warm["hits"] >= 1
           and warm["misses"] == 0, f"{warm['first_call_s'] * 1e3:.1f} ms ({warm['hits']} hits; "
           "Triton's cache without kernels)")
    record("warm process, Triton's own cache only", triton_warm["ok"],
           f"{triton_warm['first_call_s'] * 1e3:.1f} ms")
    entries = sorted(p.name for p in (ours / "triton").rglob("*.cubin"))
    record("binary cache entries", bool(entries), f"{len(entries)} under {ours / 'triton'}")


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    gpu = torch.cuda.is_available() and not os.environ.get("TRITON_INTERPRET")
    try:
        import cupy
        cupy_version = cupy.__version__
    except ImportError:
        cupy, cupy_version = None, None
    if not gpu:
        cupy = None
    device = "cuda:0" if gpu else "cpu"
    DATA["versions"] = {"torch": torch.__version__, "triton": triton.__version__,
                        "cupy": cupy_version, "numpy": np.__version__,
                        "gpu": torch.cuda.get_device_name(0) if gpu else None}
    print(DATA["versions"], flush=True)
    cache_dir = tempfile.mkdtemp(prefix="stax-cache-")
    check_values(torch, cupy, device, cache_dir)
    if gpu:
        check_alignment(torch, cupy, device, cache_dir)
        check_streams(torch, cupy, device, cache_dir)
        check_overhead(torch, cupy, device, cache_dir)
        check_warm_start(torch, cupy, device, cache_dir)
    else:
        record("GPU sections", None, "no GPU: values only, under the interpreter")
    (out / "executable.json").write_text(json.dumps({"results": RESULTS, "data": DATA}, indent=1))
    print("\n| check | result | detail |\n| --- | --- | --- |")
    for name, status, detail in RESULTS:
        print(f"| {name} | {status} | {detail} |")
    return 0 if all(s != "FAIL" for _, s, _ in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
