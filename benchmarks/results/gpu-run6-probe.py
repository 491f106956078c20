"""Run 6's diagnostic on the H200 (issue 12; gpu-notes.md "Run 6"): one call, everything batched.

For float64 sin(x)*exp(y) (64M), tanh-GELU (256M float32) and example 1.1 ((16384, 4096) float32):
torch.compile's generated Triton kernels (default and max-autotune-no-cudagraphs: sources, the
launch each chose, registers) and Stax's, each timed; then Stax's kernel edited as Inductor
writes its kernels (every load first, before any arithmetic: Inductor's loads / compute / stores
buffers; Triton's own ``tl.sin``/``tl.exp`` spelling; evict_first on streamed loads) under a
sweep of launches (elements a thread, warps). Every variant's output is compared bit for bit
with Stax's as generated; float64 sin*exp also in ulps against a long-double reference.
Each variant is timed in two rounds (do_bench as gpu.py, and after a read flush).

    python benchmarks/results/gpu-run6-probe.py OUTDIR
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpu  # benchmarks/gpu.py

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
M = 1 << 20
ROWS: list[dict] = []
LOG: list[str] = []
SOURCES: dict[str, list[str]] = {}


def say(*parts: object) -> None:
    text = " ".join(str(p) for p in parts)
    LOG.append(text)
    print(text, flush=True)


def load_module(source: str, tag: str):
    path = Path(tempfile.mkdtemp()) / f"k_{abs(hash(tag))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loads_first(source: str) -> str:
    """Every ``tl.load`` line moved up to just after the index lines (``x0 = ...`` or the
    persistent block's ``r0 = ...``), in order: Inductor's layout."""
    lines = source.split("\n")
    loads = [ln for ln in lines if "= tl.load(" in ln]
    rest = [ln for ln in lines if ln not in loads]
    at = max(i for i, ln in enumerate(rest) if ln.strip().startswith(("x0 =", "r0 =")))
    return "\n".join(rest[:at + 1] + loads + rest[at + 1:])


def evict_first(source: str) -> str:
    return source.replace(", other=0)", ', other=0, eviction_policy="evict_first")')


def inductor_spelling(source: str) -> str:
    return source.replace("libdevice.sin(", "tl.sin(").replace("libdevice.exp(", "tl.exp(")


def inductor_dump(torch, compiled, tensors):
    """(output code, [{kernel, kwargs, num_warps, num_stages, n_regs, n_spills}])."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.utils import run_and_get_code

    def modules():
        return list(getattr(PyCodeCache, "modules", [])) + \
            list(getattr(PyCodeCache, "modules_no_attr", {}).values())
    before = {id(m) for m in modules()}
    _, codes = run_and_get_code(compiled, *tensors)
    found = []
    for module in modules():
        if id(module) in before:
            continue
        for attr, value in vars(module).items():
            for launcher in getattr(value, "launchers", None) or ():
                config = getattr(launcher, "config", None)
                found.append({"kernel": attr, "kwargs": dict(getattr(config, "kwargs", {}) or {}),
                              "num_warps": getattr(config, "num_warps", None),
                              "num_stages": getattr(config, "num_stages", None),
                              "n_regs": getattr(launcher, "n_regs", None),
                              "n_spills": getattr(launcher, "n_spills", None)})
    return codes, found


def main() -> None:
    import torch
    import triton

    from stax.codegen import generate_triton, triton_target
    from stax.codegen.triton.executable import LAUNCH_OPTIONS

    say("versions", json.dumps(gpu.versions(torch, None)))
    _, copy_bps, clean_bps = gpu.copy_bandwidth(torch)
    say(f"copy {copy_bps / 1e12:.3f} TB/s (clean {clean_bps / 1e12:.3f})")
    torch.cuda.empty_cache()

    def time_it(group: str, name: str, fn, nbytes: int, extra: dict | None = None) -> dict:
        row = {"group": group, "name": name, "bytes": nbytes, **(extra or {})}
        try:
            row["t"] = [gpu.bench(fn, 100)]
            row["clean"] = [gpu.bench_clean(fn, 60)]
        except Exception as exc:
            row["failed"] = f"{type(exc).__name__}: {exc}"[:300]
        ROWS.append(row)
        return row

    def second_round(rows: list[dict], fns: dict[int, object]) -> None:
        for row in reversed(rows):  # the other order: drift shows as a difference
            if "failed" not in row:
                row["t"].append(gpu.bench(fns[id(row)], 100))
                row["clean"].append(gpu.bench_clean(fns[id(row)], 60))

    def report(rows: list[dict]) -> None:
        for r in rows:
            if "failed" in r:
                say(f"{r['group']:<8} {r['name']:<46} FAILED {r['failed']}")
                continue
            f = [r["bytes"] / t / copy_bps for t in r["t"]]
            c = [r["bytes"] / t / clean_bps for t in r["clean"]]
            r["frac"], r["frac_clean"] = f, c
            extra = " ".join(f"{k}={r[k]}" for k in ("regs", "spills", "bits") if k in r)
            say(f"{r['group']:<8} {r['name']:<46} {r['t'][0] * 1e6:7.1f}/{r['t'][-1] * 1e6:7.1f} us "
                f"frac {f[0]:.3f}/{f[-1]:.3f} clean {c[0]:.3f}/{c[-1]:.3f} {extra}")

    for case_name in ("sin_exp_f64", "gelu", "example_1_1"):
        try:
            run_case(torch, triton, case_name, time_it, second_round, report, generate_triton,
                     triton_target, LAUNCH_OPTIONS)
        except Exception:
            say(f"{case_name} FAILED", traceback.format_exc()[-1500:])
        torch.cuda.empty_cache()


def make_tensors(torch, case):
    g = torch.Generator(device="cuda").manual_seed(6)
    dtype = torch.float64 if case.dtype == "float64" else torch.float32
    out = []
    for shape in case.shapes:
        t = torch.randn(shape, generator=g, device="cuda", dtype=dtype)
        out.append(t * 4 if case.fn == "sin_exp" else t)
    return out


def run_case(torch, triton, case_name, time_it, second_round, report, generate_triton,
             triton_target, LAUNCH_OPTIONS) -> None:
    case = next(c for c in gpu.CASES if c.name == case_name)
    tensors = make_tensors(torch, case)
    arrays = [np.zeros(s, case.dtype) for s in case.shapes]  # shapes for tracing
    nbytes = sum(a.nbytes for a in arrays)
    fn = gpu.numpy_fn(case)
    program = gpu.stax_loop_program(fn, arrays)
    artifact = generate_triton(program, triton_target())
    kernel = artifact.kernels[0]
    out_bytes = {"sin_exp_f64": 64 * M * 8, "gelu": 256 * M * 4, "example_1_1": 16384 * 4}[case_name]
    nbytes += out_bytes
    SOURCES.setdefault("stax", []).append(f"# {case_name}: {kernel.launch}\n{artifact.triton_source}")
    rows, fns = [], {}

    def add(group, name, f, extra=None):
        row = time_it(group, name, f, nbytes, extra)
        rows.append(row)
        fns[id(row)] = f

    stax_call = gpu.stax_codegen(fn, arrays, program=program)
    reference = stax_call(*tensors).clone()
    add(case_name, "stax (TritonExecutable)", lambda: stax_call(*tensors))
    tv = gpu.torch_versions(torch)[case.fn]
    inductor_configs = []
    for mode in ("default", "max-autotune-no-cudagraphs"):
        compiled = torch.compile(tv, dynamic=False, **({} if mode == "default" else {"mode": mode}))
        try:
            codes, found = inductor_dump(torch, compiled, tensors)
            SOURCES.setdefault(f"inductor_{case_name}", []).append(
                f"# ==== mode {mode}: launchers {json.dumps(found)}\n" + "\n\n# ----\n".join(codes))
            say(f"inductor {case_name} {mode}: {json.dumps(found)}")
            inductor_configs += found
        except Exception:
            say(f"inductor dump {case_name} {mode} FAILED", traceback.format_exc()[-800:])
        got = compiled(*tensors)
        extra = {"bits": bits_equal(torch, got, reference)}
        if case_name == "sin_exp_f64":
            extra["ulp"] = ulps(tensors, got)
            say(f"inductor {mode} ulps vs long double (first 4M): {extra['ulp']}")
        add(case_name, f"torch.compile {mode}", lambda c=compiled: c(*tensors), extra)
    if case_name == "sin_exp_f64":
        say(f"stax ulps vs long double (first 4M): {ulps(tensors, reference)}")

    source = artifact.triton_source
    two_d = "R0_BLOCK" in kernel.launch.constants
    if case_name == "sin_exp_f64":
        configs = [(256, 4), (512, 4), (1024, 4), (512, 8), (1024, 8), (256, 2), (128, 1)]
        forms = {"as generated": (source, configs), "loads first": (loads_first(source), configs),
                 "loads first, evict_first": (evict_first(loads_first(source)), [(256, 4), (512, 4)]),
                 "tl.sin/tl.exp, loads first": (inductor_spelling(loads_first(source)), [(256, 4)])}
    elif case_name == "gelu":
        configs = [(512, 4), (1024, 4), (1024, 8), (2048, 8), (2048, 4), (256, 2), (512, 2)]
        forms = {"as generated": (source, configs), "evict_first": (evict_first(source), [(512, 4)])}
    else:
        configs = [(1, 8), (1, 4), (1, 16), (2, 8), (2, 16), (4, 16)]
        forms = {"as generated": (source, configs), "evict_first": (evict_first(source), [(1, 8)])}
    for found in inductor_configs:  # Inductor's own launch, where Stax's kernel can take it
        kw = found["kwargs"]
        xb, warps = kw.get("XBLOCK"), found["num_warps"]
        r0 = kw.get("R0_BLOCK", kw.get("RBLOCK"))
        if xb and warps and (not two_d or r0 in (None, kernel.launch.constants["R0_BLOCK"])) \
                and (xb, warps) not in forms["as generated"][1]:
            forms["as generated"][1].append((xb, warps))
            if "loads first" in forms:
                forms["loads first"][1].append((xb, warps))
    xnumel = {"sin_exp_f64": 64 * M, "gelu": 256 * M, "example_1_1": 16384}[case_name]
    for label, (text, launches) in forms.items():
        if label != "as generated":
            SOURCES["stax"].append(f"# {case_name} variant {label}\n{text}")
        try:
            module = load_module(text, f"{case_name}{label}")
        except Exception:
            say(f"{case_name} {label} FAILED to load", traceback.format_exc()[-600:])
            continue
        kfn = getattr(module, kernel.name)
        for xb, warps in launches:
            out = torch.full_like(reference, float("nan"))
            env = {b: t for b, t in zip([a for a in kernel.args if a != "buf0"], tensors)}
            env["buf0"] = out
            consts = {"XBLOCK": xb, **({"R0_BLOCK": kernel.launch.constants["R0_BLOCK"]} if two_d else {})}

            def launch(kfn=kfn, xb=xb, warps=warps, env=env, consts=consts):
                return kfn[(math.ceil(xnumel / xb),)](*[env[a] for a in kernel.args], **consts,
                                                      num_warps=warps, **LAUNCH_OPTIONS)
            try:
                compiled_kernel = launch()
                torch.cuda.synchronize()
                extra = {"bits": bits_equal(torch, out.view(reference.shape), reference),
                         "regs": getattr(compiled_kernel, "n_regs", "?"),
                         "spills": getattr(compiled_kernel, "n_spills", "?")}
                add(case_name, f"{label} {xb}/{warps}w", launch, extra)
            except Exception:
                say(f"{case_name} {label} {xb}/{warps} FAILED", traceback.format_exc()[-800:])
    second_round(rows, fns)
    report(rows)


def bits_equal(torch, got, want) -> str:
    got, want = got.reshape(-1), want.reshape(-1)
    view = torch.int64 if want.dtype == torch.float64 else torch.int32
    same = int((got.contiguous().view(view) == want.contiguous().view(view)).sum().item())
    return f"{same}/{want.numel()}"


def ulps(tensors, got) -> dict:
    n = 4 * M
    x = tensors[0][:n].cpu().numpy().astype(np.longdouble)
    y = tensors[1][:n].cpu().numpy().astype(np.longdouble)
    ref = np.sin(x) * np.exp(y)
    g = got.reshape(-1)[:n].cpu().numpy()
    err = np.abs(g.astype(np.longdouble) - ref) / np.spacing(np.abs(ref.astype(np.float64)))
    return {"max": float(err.max()), "mean": float(err.mean()), "over_1": int((err > 1).sum())}


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter()
    try:
        main()
    except Exception:
        say("PROBE FAILED", traceback.format_exc())
    say(f"probe took {time.perf_counter() - clock:.0f} s")
    for name, parts in SOURCES.items():
        (OUT / f"{name}.py").write_text("\n\n# ========\n".join(parts))
    (OUT / "probe.json").write_text(json.dumps(ROWS, indent=1) + "\n")
    (OUT / "probe.log").write_text("\n".join(LOG) + "\n")
