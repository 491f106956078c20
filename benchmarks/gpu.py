"""Issue 12's GPU benchmark: Stax against CuPy eager, torch eager and torch.compile (default and
``max-autotune-no-cudagraphs``) on one NVIDIA GPU, in one process and one run.

Every implementation of every case is checked against NumPy on the host (NumPy's dtype; relative
error ``|out - ref| / |ref|`` against a float64 reference within the case's bound) before it is
timed. Times are ``triton.testing.do_bench`` medians (CUDA events, the L2 flushed before each
timed run); bandwidth is the case's minimal bytes (each input read once, each output written
once) over the time, reported as a fraction of a device-to-device copy measured in the same run.
Each is timed a second way too, the L2 flushed by a read instead (``bench_clean``: do_bench's
flush leaves dirty lines that a read-only kernel pays to write back), and the run records what
the best kernels moving the column sum's and layer norm's bytes reach (``ceilings``).
Also: cold and warm compile times of example 1.1 (fresh processes, empty caches then the caches
the first filled) and the per-call host time on example 1.1 at (64, 128).

    python benchmarks/gpu.py                      # everything, writes benchmarks/results/gpu-h200.json
    python benchmarks/gpu.py --cases softmax,gelu --impls stax,torch.compile
    python benchmarks/gpu.py --sweep              # Stax's kernels under several launch configs too

Stax runs as ``stax.compile(f, device="cuda")`` on torch CUDA tensors when the runtime
dispatches to CUDA; otherwise (printed once) through the code-generation layer directly: the
function traced, planned for ``triton_target()`` and run by ``TritonExecutable``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

GELU_C = 0.7978845608028654
RESULTS = Path(__file__).parent / "results" / "gpu-h200.json"


# -- the cases, written once for NumPy and CuPy (``xp``) and once for torch ----------------------

def example_1_1(xp: Any, x: Any, w: Any) -> Any:
    return (xp.maximum(x + w, 0) * 2).sum(-1)


def softmax(xp: Any, x: Any) -> Any:
    e = xp.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layer_norm(xp: Any, x: Any, w: Any, b: Any) -> Any:
    m = x.mean(-1, keepdims=True)
    d = x - m
    v = (d * d).mean(-1, keepdims=True)
    return d / xp.sqrt(v + 1e-5) * w + b


def gelu(xp: Any, x: Any) -> Any:
    return 0.5 * x * (1 + xp.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def column_sum(xp: Any, x: Any) -> Any:
    return x.sum(0)


def cumsum(xp: Any, x: Any) -> Any:
    return xp.cumsum(x)


def sin_exp(xp: Any, x: Any, y: Any) -> Any:
    return xp.sin(x) * xp.exp(y)


def torch_versions(torch: Any) -> dict[str, Callable[..., Any]]:
    return {
        "example_1_1": lambda x, w: (torch.clamp_min(x + w, 0) * 2).sum(-1),
        "softmax": lambda x: (lambda e: e / e.sum(-1, keepdim=True))(
            torch.exp(x - x.amax(-1, keepdim=True))),
        "layer_norm": lambda x, w, b: (lambda d: d / torch.sqrt((d * d).mean(-1, keepdim=True)
                                                               + 1e-5) * w + b)(
            x - x.mean(-1, keepdim=True)),
        "gelu": lambda x: 0.5 * x * (1 + torch.tanh(GELU_C * (x + 0.044715 * x * x * x))),
        "column_sum": lambda x: x.sum(0),
        "cumsum": lambda x: torch.cumsum(x, 0),
        "sin_exp": lambda x, y: torch.sin(x) * torch.exp(y),
    }


@dataclass(frozen=True)
class Case:
    name: str          # the record's name
    fn: str            # the function above
    shapes: tuple[tuple[int, ...], ...]
    dtype: str
    tolerance: float   # relative error against the float64 reference


M = 1 << 20
CASES = [
    Case("example_1_1_small", "example_1_1", ((64, 128), (64, 128)), "float32", 1e-5),
    Case("example_1_1", "example_1_1", ((16384, 4096), (16384, 4096)), "float32", 1e-5),
    Case("softmax", "softmax", ((16384, 4096),), "float32", 1e-5),
    Case("layer_norm", "layer_norm", ((32768, 1024), (1024,), (1024,)), "float32", 1e-5),
    Case("gelu", "gelu", ((256 * M,),), "float32", 1e-5),
    Case("column_sum", "column_sum", ((16384, 4096),), "float32", 1e-5),
    Case("sin_exp_f64", "sin_exp", ((64 * M,), (64 * M,)), "float64", 1e-13),
    # last: the only kernel whose programs wait on each other (scans.py)
    Case("cumsum", "cumsum", ((64 * M,),), "float32", 1e-4),
]
IMPLS = ["stax", "cupy", "torch", "torch.compile", "torch.compile-max-autotune"]


def inputs(case: Case, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for shape in case.shapes:
        a = rng.standard_normal(shape, dtype=np.float32 if case.dtype == "float32" else np.float64)
        if case.fn == "sin_exp":
            a = a * 4  # arguments over several periods; exp of |y| <= ~20
        out.append(a.astype(case.dtype))
    return out


def numpy_fn(case: Case) -> Callable[..., Any]:
    f = globals()[case.fn]
    names = ["x", "w", "b"] if case.fn in ("example_1_1", "layer_norm") else ["x", "y"]
    args = ", ".join(names[:len(case.shapes)])
    code = f"def {case.fn}({args}):\n    return _f(np, {args})\n"  # a named function to trace
    scope = {"_f": f, "np": np}
    exec(code, scope)
    return scope[case.fn]


def reference(case: Case, arrays: list[np.ndarray]) -> tuple[np.ndarray, np.dtype, float]:
    """The float64 result, NumPy's dtype of the case and NumPy's own error against it."""
    f = globals()[case.fn]
    want = np.asarray(f(np, *arrays))
    exact = np.asarray(f(np, *[a.astype(np.float64) for a in arrays]))
    return exact, want.dtype, relative_error(want, exact)


def minimal_bytes(case: Case, arrays: list[np.ndarray], ref: np.ndarray) -> int:
    return sum(a.nbytes for a in arrays) + ref.size * np.dtype(case.dtype).itemsize


def relative_error(got: np.ndarray, ref: np.ndarray) -> float:
    got = got.astype(np.float64)
    if not np.all(np.isfinite(got)):
        return math.inf
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


# -- Stax -------------------------------------------------------------------------------------------

_NOTES: list[str] = []


def stax_loop_program(fn: Callable[..., Any], arrays: list[np.ndarray]) -> Any:
    """``fn`` traced on ``arrays`` and lowered for the CUDA target: its loop program."""
    from stax.codegen import triton_target
    from stax.ir import lower_capture, verify_graph
    from stax.ir.passes import DEFAULT_PIPELINE, decompose_to_basis, run_pipeline
    from stax.loop import lower_opgraph
    from stax.trace import trace

    target = triton_target()
    with np.errstate(all="ignore"):
        capture = trace(fn, tuple(arrays), {}, name=fn.__name__)
    run_pipeline(capture.graph, DEFAULT_PIPELINE)
    opgraph = lower_capture(capture)
    decompose_to_basis(opgraph.graph, basis=target.basis)
    verify_graph(opgraph.graph)
    return lower_opgraph(opgraph, materialize=target.materialize, options=target.loop_options)


def stax_codegen(fn: Callable[..., Any], arrays: list[np.ndarray], configs: Any = None,
                 program: Any = None, tensors: list[Any] | None = None, policy: Any = None) -> Any:
    """``fn`` traced on ``arrays``, planned for the CUDA target, run by ``TritonExecutable``: the
    code-generation layer directly (what ``stax.compile(f, device="cuda")`` runs). With
    ``tensors``, each kernel's launch is autotuned on them first."""
    from stax.codegen import TritonExecutable, generate_triton, triton_target

    program = program if program is not None else stax_loop_program(fn, arrays)
    if tensors is not None:
        from stax.codegen.triton.autotune import tune
        artifact = tune(program, tensors, cache_dir=os.environ.get("STAX_CACHE_DIR"))
    else:
        artifact = generate_triton(program, triton_target(), configs=configs, policy=policy)
    run = TritonExecutable(artifact).run

    def call(*tensors: Any) -> Any:
        out = run(*tensors)
        return out[0] if len(out) == 1 else out
    call.artifact = artifact  # type: ignore[attr-defined]
    return call


def stax_function(fn: Callable[..., Any], arrays: list[np.ndarray], tensors: list[Any]) -> Any:
    """The runtime's CUDA path when it exists, else the code-generation layer (noted once)."""
    import stax.runtime as stax
    try:
        compiled = stax.compile(fn, device="cuda")
        compiled(*tensors)
        return compiled
    except Exception as exc:  # the runtime does not dispatch to CUDA (yet)
        note = f"stax.compile(device='cuda') unavailable ({type(exc).__name__}: {str(exc)[:90]}); " \
               "using the codegen layer (TritonExecutable)"
        if note not in _NOTES:
            _NOTES.append(note)
            print("note:", note, flush=True)
        return stax_codegen(fn, arrays)


# -- the run ----------------------------------------------------------------------------------------

def bench(fn: Callable[[], Any], rep: int = 200) -> float:
    """Median seconds of ``fn`` (CUDA events, L2 flushed before each run; ``rep`` milliseconds
    of runs)."""
    import triton.testing
    return triton.testing.do_bench(fn, warmup=25, rep=rep, return_mode="median") * 1e-3


_CLEAN: list[Any] = []


def bench_clean(fn: Callable[[], Any], reps: int = 100) -> float:
    """Median seconds of ``fn`` after a read-only pass over 256 MB before each run: the L2 holds
    none of the inputs, as after do_bench's flush, but clean lines only. do_bench flushes by
    writing 256 MB of zeros, whose dirty lines a kernel that only reads must write back: about 9
    us of a 256 MiB read (gpu-notes.md run 5), none where a kernel writes as much as it reads."""
    import torch
    if not _CLEAN:
        _CLEAN.extend([torch.randn(64 * M, device="cuda"), torch.empty((), device="cuda")])
    flush, into = _CLEAN
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    torch.cuda._sleep(4_000_000)  # the host queues ahead of the device: no gaps in a timing
    for start, end in events:
        torch.sum(flush, 0, out=into)
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events) * 1e-3


def copy_bandwidth(torch: Any) -> tuple[float, float, float]:
    """A device-to-device copy of 2 GiB: (seconds, bytes per second counting read and write,
    bytes per second timed by ``bench_clean``)."""
    src = torch.randn(512 * M, device="cuda")
    dst = torch.empty_like(src)
    seconds = bench(lambda: dst.copy_(src))
    moved = 2 * src.numel() * 4
    return seconds, moved / seconds, moved / bench_clean(lambda: dst.copy_(src))


def ceilings(torch: Any, copy_bps: float, clean_bps: float) -> list[dict[str, Any]]:
    """The best kernels moving the column sum's and layer norm's bytes, timed as the cases are
    and by ``bench_clean``: a plain Triton read of 256 MiB (a 4096-element block a program, the
    fastest of run 5's read kernels) and torch.sum of it; a 128 MiB -> 128 MiB copy."""
    import triton
    import triton.language as tl

    @triton.jit
    def read_blocks(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offset = tl.program_id(0).to(tl.int64) * BLOCK
        tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + offset + tl.arange(0, BLOCK)), 0))

    x = torch.randn(64 * M, device="cuda")
    partial = torch.empty(x.numel() // 4096, device="cuda")
    half = torch.randn(32 * M, device="cuda")
    dst = torch.empty_like(half)
    found = []
    for name, fn, nbytes in (
            ("Triton read of 256 MiB", lambda: read_blocks[(partial.numel(),)](
                x, partial, BLOCK=4096, num_warps=8), x.numel() * 4),
            ("torch.sum of 256 MiB", lambda: x.sum(), x.numel() * 4),
            ("copy 128 MiB -> 128 MiB", lambda: dst.copy_(half), 2 * half.numel() * 4)):
        seconds, clean = bench(fn), bench_clean(fn)
        found.append({"name": name, "bytes": nbytes, "time_s": seconds, "time_clean_s": clean,
                      "fraction_of_copy": nbytes / seconds / copy_bps,
                      "fraction_of_copy_clean": nbytes / clean / clean_bps})
        print(f"  ceiling {name:<26} {seconds * 1e6:7.1f} us {found[-1]['fraction_of_copy']:6.3f} of "
              f"copy; L2 clean {clean * 1e6:7.1f} us {found[-1]['fraction_of_copy_clean']:6.3f}",
              flush=True)
    return found


def implementations(case: Case, arrays: list[np.ndarray], tensors: list[Any], torch: Any,
                    cp: Any, wanted: list[str]) -> dict[str, Callable[[], Any]]:
    made: dict[str, Callable[[], Any]] = {}
    tv = torch_versions(torch)[case.fn]
    for impl in wanted:
        try:
            if impl == "stax":
                f = stax_function(numpy_fn(case), arrays, tensors)
            elif impl == "stax-autotune":
                f = stax_codegen(numpy_fn(case), arrays, tensors=tensors)
            elif impl == "cupy":
                if cp is None:
                    continue
                views = [cp.from_dlpack(t) for t in tensors]
                g = globals()[case.fn]
                made[impl] = (lambda g=g, views=views: g(cp, *views))
                continue
            elif impl == "torch":
                f = tv
            elif impl == "torch.compile":
                f = torch.compile(tv, dynamic=False)
            elif impl == "torch.compile-max-autotune":
                f = torch.compile(tv, dynamic=False, mode="max-autotune-no-cudagraphs")
            else:
                raise ValueError(impl)
            made[impl] = (lambda f=f: f(*tensors))
        except Exception as exc:
            print(f"  {case.name}: {impl} failed to build: {type(exc).__name__}: {exc}"[:400],
                  flush=True)
    return made


def to_host(out: Any) -> np.ndarray:
    if hasattr(out, "get"):
        return out.get()
    return out.detach().cpu().numpy()


def run_case(case: Case, wanted: list[str], torch: Any, cp: Any, copy_bps: tuple[float, float],
             records: list[dict[str, Any]], sweep: bool) -> None:
    arrays = inputs(case)
    ref, dtype, numpy_error = reference(case, arrays)
    bound = max(case.tolerance, 4 * numpy_error)
    nbytes = minimal_bytes(case, arrays, ref)
    tensors = [torch.from_numpy(a).cuda() for a in arrays]
    impls = implementations(case, arrays, tensors, torch, cp, wanted)
    if sweep:
        impls.update(stax_variants(case, arrays, tensors))
    for impl, call in impls.items():
        record: dict[str, Any] = {"case": case.name, "impl": impl, "bytes": nbytes,
                                  "shapes": [list(s) for s in case.shapes], "dtype": case.dtype}
        try:
            clock = time.perf_counter()
            out = call()
            torch.cuda.synchronize()
            record["first_call_s"] = time.perf_counter() - clock
            got = to_host(out)
            record["error"] = relative_error(got, ref)
            record["dtype_ok"] = got.dtype == dtype and got.shape == ref.shape
            record["correct"] = bool(record["dtype_ok"] and record["error"] <= bound)
            record["numpy_error"] = numpy_error
            del out
            seconds = bench(call, 60 if "[" in impl else 200)
            clean = bench_clean(call)
            record.update(time_s=seconds, bandwidth_Bps=nbytes / seconds,
                          fraction_of_copy=nbytes / seconds / copy_bps[0], time_clean_s=clean,
                          fraction_of_copy_clean=nbytes / clean / copy_bps[1])
        except Exception as exc:
            record["failed"] = f"{type(exc).__name__}: {exc}"[:500]
        records.append(record)
        print(describe(record), flush=True)


def stax_variants(case: Case, arrays: list[np.ndarray], tensors: list[Any]
                  ) -> dict[str, Callable[[], Any]]:
    """Stax under the launch configurations the autotuner would try (``--sweep``)."""
    from stax.codegen.triton.autotune import variants
    from stax.codegen.triton.launch import LaunchPolicy
    program = stax_loop_program(numpy_fn(case), arrays)
    made = {}
    tried = [(label, configs, None) for label, configs in variants(program)]
    tried.append(("eviction hints", None, LaunchPolicy(eviction_hints=True)))
    extra = {"column_sum": [("8 slices of 64 columns", LaunchPolicy(columns_xblock=64, split_rows=256)),
                            ("32 slices of 256 columns", LaunchPolicy(columns_xblock=256)),
                            ("128 slices with hints", LaunchPolicy(eviction_hints=True))],
             "layer_norm": [("4 rows a program", LaunchPolicy(row_alone=8192))]}
    tried += [(label, None, policy) for label, policy in extra.get(case.name, [])]
    for label, configs, policy in tried:
        try:
            f = stax_codegen(numpy_fn(case), arrays, configs, program, policy=policy)
            made[f"stax[{label}]"] = (lambda f=f: f(*tensors))
        except Exception as exc:
            print(f"  {case.name}: stax[{label}] failed: {type(exc).__name__}: {exc}"[:300])
    return made


def describe(r: dict[str, Any]) -> str:
    if "failed" in r:
        return f"  {r['case']:<18} {r['impl']:<28} FAILED {r['failed'][:200]}"
    ok = "ok" if r["correct"] else f"WRONG (error {r['error']:.2e}, dtype ok {r['dtype_ok']})"
    return (f"  {r['case']:<18} {r['impl']:<28} {r['time_s'] * 1e3:9.4f} ms "
            f"{r['bandwidth_Bps'] / 1e12:6.3f} TB/s {r['fraction_of_copy']:6.3f} of copy "
            f"(L2 clean {r['fraction_of_copy_clean']:5.3f})  {ok}")


def host_overhead(torch: Any, cp: Any, wanted: list[str], calls: int = 2000) -> dict[str, float]:
    """Wall time per call of example 1.1 at (64, 128), calls back to back, one synchronize."""
    case = CASES[0]
    arrays = inputs(case)
    tensors = [torch.from_numpy(a).cuda() for a in arrays]
    impls = implementations(case, arrays, tensors, torch, cp,
                            [i for i in wanted if i != "torch.compile-max-autotune"])
    if cp is not None:
        try:
            def example_1_1_fused(x: Any, w: Any) -> Any:  # a named function: CuPy's kernel name
                return cp.sum(cp.maximum(x + w, 0) * 2, axis=-1)
            fused = cp.fuse(kernel_name="example_1_1_fused")(example_1_1_fused)
            views = [cp.from_dlpack(t) for t in tensors]
            impls["cupy.fuse"] = lambda: fused(*views)
        except Exception as exc:
            print("  cupy.fuse failed:", exc)
    out = {}
    for impl, call in impls.items():
        try:
            for _ in range(50):
                call()
            torch.cuda.synchronize()
            clock = time.perf_counter()
            for _ in range(calls):
                call()
            torch.cuda.synchronize()
            out[impl] = (time.perf_counter() - clock) / calls
            print(f"  per call {impl:<28} {out[impl] * 1e6:8.1f} us", flush=True)
        except Exception as exc:
            print(f"  per call {impl}: failed {type(exc).__name__}: {exc}"[:300])
    return out


PROBE = """
import time, os, sys
clock = time.perf_counter()
import numpy as np, torch
sys.path.insert(0, {bench!r})
import gpu
import stax.runtime, triton  # imports are not compile time (as for the CPU's numbers)
imported = time.perf_counter() - clock
case = gpu.CASES[0]
arrays = gpu.inputs(case)
tensors = [torch.from_numpy(a).cuda() for a in arrays]
torch.cuda.synchronize()
clock = time.perf_counter()
f = gpu.stax_function(gpu.numpy_fn(case), arrays, tensors)
f(*tensors)
torch.cuda.synchronize()
first = time.perf_counter() - clock
print("PROBE", imported, first)
"""


def compile_times() -> dict[str, float]:
    """Example 1.1 (64, 128) compiled and run once in a fresh process with empty Stax and Triton
    caches (cold), then in a second process with the caches the first filled (warm)."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STAX_CACHE_DIR=str(Path(tmp) / "stax"),
                   TRITON_CACHE_DIR=str(Path(tmp) / "triton"))
        for label in ("cold", "warm"):
            done = subprocess.run([sys.executable, "-c", PROBE.format(bench=str(Path(__file__).parent))],
                                  env=env, capture_output=True, text=True, timeout=300)
            line = [ln for ln in done.stdout.splitlines() if ln.startswith("PROBE")]
            if not line:
                print(f"  {label} compile probe failed:", done.stderr[-800:])
                continue
            imported, first = map(float, line[0].split()[1:])
            out[f"{label}_import_s"] = imported
            out[f"{label}_first_call_s"] = first
            print(f"  {label}: imports {imported:.2f} s, first call (compile + run) {first * 1e3:.0f} ms",
                  flush=True)
    return out


def versions(torch: Any, cp: Any) -> dict[str, Any]:
    import triton
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__, "cupy": getattr(cp, "__version__", None),
            "numpy": np.__version__, "python": platform.python_version(),
            "cuda": torch.version.cuda}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(c.name for c in CASES))
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--sweep", default="", help="cases whose Stax kernels are also timed "
                        "under every candidate launch, after everything else")
    parser.add_argument("--deadline", type=float, default=1e9,
                        help="seconds after which no further sweep starts")
    parser.add_argument("--no-compile-times", action="store_true")
    parser.add_argument("--autotune", default="", help="cases also run with options "
                        "{'autotune': True} (stax-autotune)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    started = time.perf_counter()
    import torch
    try:
        import cupy as cp
    except ImportError:
        cp = None
    wanted = args.impls.split(",")
    info = versions(torch, cp)
    print("GPU benchmark:", json.dumps(info), flush=True)
    copy_s, copy_bps, clean_bps = copy_bandwidth(torch)
    print(f"  device copy: {copy_bps / 1e12:.3f} TB/s ({copy_s * 1e3:.3f} ms for 4 GiB moved); "
          f"L2 clean {clean_bps / 1e12:.3f} TB/s")
    records: list[dict[str, Any]] = []
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           **info, "copy": {"time_s": copy_s, "bandwidth_Bps": copy_bps,
                            "bandwidth_clean_Bps": clean_bps},
           "notes": _NOTES, "records": records}
    doc["ceilings"] = ceilings(torch, copy_bps, clean_bps)

    def write() -> None:
        doc["stax_path"] = "codegen layer (TritonExecutable)" if _NOTES else \
            "stax.runtime.compile(f, device='cuda') on torch CUDA tensors"
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    def cases(late: bool) -> None:
        for case in CASES:
            if case.name in args.cases.split(",") and (case.name == "cumsum") == late:
                autotune = ["stax-autotune"] if case.name in args.autotune.split(",") else []
                run_case(case, wanted + autotune, torch, cp, (copy_bps, clean_bps), records, False)
                torch.cuda.empty_cache()
                write()
    cases(late=False)
    doc["host_overhead_s"] = host_overhead(torch, cp, wanted) if "example_1_1_small" in args.cases else {}
    write()
    doc["compile"] = {} if args.no_compile_times or "stax" not in wanted else compile_times()
    write()
    cases(late=True)  # the scan across programs last: the one kernel whose programs wait
    for case in CASES:
        if case.name in args.sweep.split(",") and time.perf_counter() - started < args.deadline:
            run_case(case, [], torch, cp, (copy_bps, clean_bps), records, True)
            torch.cuda.empty_cache()
            write()
    summary(records)


def summary(records: list[dict[str, Any]]) -> None:
    """The tables printed last: fraction of the copy per case and implementation, timed as
    do_bench does and with the L2 clean (``bench_clean``)."""
    table(records, "fraction_of_copy", "time_s", "fraction of copy bandwidth (x: wrong or failed)")
    table(records, "fraction_of_copy_clean", "time_clean_s", "the same, L2 clean (bench_clean)")
    cases = list(dict.fromkeys(r["case"] for r in records))
    for c in cases:
        swept = [r for r in records if r["case"] == c and "[" in r["impl"] and "time_s" in r]
        if swept:
            best = min(swept, key=lambda r: r["time_s"])
            print(f"sweep {c}: best {best['impl']} {best['fraction_of_copy']:.3f} of copy "
                  f"({len(swept)} variants, correct: {all(r['correct'] for r in swept)})")


def table(records: list[dict[str, Any]], fraction: str, time_key: str, title: str) -> None:
    cases = list(dict.fromkeys(r["case"] for r in records))
    impls = list(dict.fromkeys(r["impl"] for r in records if "[" not in r["impl"]))
    print(f"\n{title}")
    print(f"{'case':<18}" + "".join(f"{i[:14]:>15}" for i in impls))
    for c in cases:
        row = f"{c:<18}"
        for i in impls:
            r = next((r for r in records if r["case"] == c and r["impl"] == i), None)
            if r is None:
                row += f"{'-':>15}"
            elif "failed" in r or not r["correct"] or fraction not in r:
                row += f"{'x':>15}"
            else:
                row += f"{r[fraction]:>15.3f}"
        times = {r["impl"]: r[time_key] for r in records
                 if r["case"] == c and r.get("correct") and time_key in r}
        compiled = [times[i] for i in ("torch.compile", "torch.compile-max-autotune") if i in times]
        if "stax" in times and compiled:
            row += f"   stax {min(compiled) / times['stax']:.3f}x the better torch.compile"
        print(row)


if __name__ == "__main__":
    main()
