"""Run 5's diagnostic on the H200 (issue 12; gpu-notes.md "Run 5"): one call, everything batched.

(a) The ceiling at the column sum's and layer norm's size: what the best kernels that read
    256 MiB once (torch.sum, plain Triton read kernels, column sums) and copies of 256 MiB
    moved reach, against 1 GiB and the 2 GiB copy, under three ways of timing: do_bench's
    (256 MB of zeros written before each run: L2 full of dirty lines), a read flush (256 MB
    read: L2 clean) and none (inputs rotated, nothing between runs).
(b) torch.compile's layer-norm kernel (source, chosen config, registers) and Stax's, each timed.
(c) Layer-norm variants of Stax's generated kernel (launch configs, stores, eviction hints,
    the division) and column-sum launch policies.

    python benchmarks/results/gpu-run5-probe.py OUTDIR
"""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
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


def say(*parts: object) -> None:
    text = " ".join(str(p) for p in parts)
    LOG.append(text)
    print(text, flush=True)


def main() -> None:
    import torch
    import triton
    import triton.language as tl

    flush_zero = torch.empty(64 * M, dtype=torch.int32, device="cuda")   # do_bench's 256 MB
    flush_read = torch.randn(64 * M, device="cuda")
    scratch = torch.empty((), device="cuda")

    def flush(mode: str) -> None:
        if mode == "zero":
            flush_zero.zero_()
        elif mode == "read":
            torch.sum(flush_read, 0, out=scratch)

    def timed(fn, mode: str, reps: int = 60) -> float:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(reps)]
        torch.cuda._sleep(4_000_000)  # the host queues ahead: no gaps inside the timed region
        for start, end in events:
            flush(mode)
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in events) * 1e-3

    modes = ("zero", "read", "none")
    copy_ref: dict[str, float] = {}

    def measure(group: str, name: str, fn, nbytes: int, extra: dict | None = None) -> None:
        row = {"group": group, "name": name, "bytes": nbytes, **(extra or {})}
        try:
            for mode in modes:
                t = timed(fn, mode)
                row[f"{mode}_s"] = t
                row[f"{mode}_frac"] = nbytes / t / copy_ref["zero"] if copy_ref else None
                row[f"{mode}_frac_same_mode"] = nbytes / t / copy_ref[mode] if copy_ref else None
            row["do_bench_s"] = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3
        except Exception as exc:
            row["failed"] = f"{type(exc).__name__}: {exc}"[:300]
        ROWS.append(row)
        if "failed" in row:
            say(f"{group:<10} {name:<44} FAILED {row['failed']}")
            return
        say(f"{group:<10} {name:<44} " + " ".join(
            f"{m}={row[f'{m}_s'] * 1e6:7.1f}us/{row[f'{m}_frac'] or 0:.3f}" for m in modes)
            + f" do_bench={row['do_bench_s'] * 1e6:7.1f}us" + "".join(
            f" {k}={v}" for k, v in (extra or {}).items()))

    def rotating(make, sets):
        state = {"i": 0}

        def fn():
            state["i"] = (state["i"] + 1) % len(sets)
            return make(*sets[state["i"]])
        return fn

    say("versions", json.dumps(gpu.versions(torch, None)))
    # -- copies -------------------------------------------------------------------------------
    big = [torch.randn(512 * M, device="cuda") for _ in range(2)]
    dst = torch.empty_like(big[0])
    for mode in modes:
        copy_ref[mode] = 4 * 1024 * M / timed(rotating(lambda s: dst.copy_(s), [(b,) for b in big]), mode)
    say("copy 2 GiB (4 GiB moved) TB/s by mode:", {m: round(v / 1e12, 3) for m, v in copy_ref.items()})
    for moved_mib in (256, 1024):
        n = moved_mib // 2 * M // 4
        srcs = [(torch.randn(n, device="cuda"),) for _ in range(2)]
        d = torch.empty(n, device="cuda")
        measure("copy", f"copy {moved_mib} MiB moved", rotating(lambda s: d.copy_(s), srcs),
                moved_mib * M)
    big = dst = None
    torch.cuda.empty_cache()

    # -- read ceilings -------------------------------------------------------------------------
    @triton.jit
    def read_stride(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
            acc += tl.load(x_ptr + start + tl.arange(0, BLOCK))
        tl.store(out_ptr + pid, tl.sum(acc, 0))

    @triton.jit
    def read_chunk(x_ptr, out_ptr, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * CHUNK
        acc = tl.zeros([BLOCK], tl.float32)
        for off in range(0, CHUNK, BLOCK):
            acc += tl.load(x_ptr + base + off + tl.arange(0, BLOCK))
        tl.store(out_ptr + tl.program_id(0), tl.sum(acc, 0))

    partial = torch.empty(1 << 16, device="cuda")
    for rows in (16384, 65536):
        n = rows * 4096
        sets = [(torch.randn(rows, 4096, device="cuda"),) for _ in range(2)]
        nbytes = n * 4
        tag = f"{nbytes // M} MiB"
        measure("read", f"torch.sum all {tag}", rotating(lambda x: x.sum(), sets), nbytes)
        measure("read", f"torch x.sum(0) {tag}", rotating(lambda x: x.sum(0), sets), nbytes)
        for progs, block, warps, stages in ((528, 4096, 8, 3), (264, 8192, 8, 3), (1056, 2048, 4, 3),
                                            (528, 4096, 8, 1), (1056, 4096, 8, 2)):
            measure("read", f"stride {tag} p={progs} B={block} w={warps} s={stages}",
                    rotating(lambda x, p=progs, b=block, w=warps, s=stages: read_stride[(p,)](
                        x, partial, n, BLOCK=b, num_warps=w, num_stages=s), sets), nbytes)
        for chunk, block, warps in ((65536, 4096, 8), (16384, 4096, 4), (4096, 4096, 8),
                                    (262144, 8192, 8)):
            measure("read", f"chunk {tag} C={chunk} B={block} w={warps}",
                    rotating(lambda x, c=chunk, b=block, w=warps: read_chunk[(n // c,)](
                        x, partial, CHUNK=c, BLOCK=b, num_warps=w), sets), nbytes)
        column_sums(sets, rows, measure, rotating)
        del sets
        torch.cuda.empty_cache()

    layer_norm(torch, measure, rotating)


def column_sums(sets, rows, measure, rotating) -> None:
    from stax.codegen.triton.launch import LaunchPolicy
    case = next(c for c in gpu.CASES if c.name == "column_sum")
    arrays = [np.zeros((rows, 4096), np.float32)]
    fn = gpu.numpy_fn(case)
    program = gpu.stax_loop_program(fn, arrays)
    policies = [("default", None)]
    if rows == 16384:
        policies += [(f"xblock={xb} split_rows={sr} programs={sp} step={st}",
                      LaunchPolicy(columns_xblock=xb, split_rows=sr, split_programs=sp, columns_step=st))
                     for xb, sr, sp, st in ((4096, 32, 528, 8192), (4096, 64, 264, 8192),
                                            (4096, 32, 528, 16384), (2048, 32, 1056, 8192),
                                            (1024, 32, 2112, 8192), (4096, 16, 1056, 8192))]
    want = sets[0][0].double().sum(0)
    for label, policy in policies:
        try:
            call = gpu.stax_codegen(fn, arrays, program=program, policy=policy)
            err = float(((call(sets[0][0]).double() - want).norm() / want.norm()).item())
            plan = "; ".join(f"{k.launch.grid} {dict(k.launch.constants)} w={k.launch.num_warps}"
                             for k in call.artifact.kernels)
            measure("colsum", f"stax {rows}x4096 {label}", rotating(lambda x, c=call: c(x), sets),
                    rows * 4096 * 4, {"error": f"{err:.1e}", "plan": plan})
        except Exception:
            say(f"colsum {label} FAILED", traceback.format_exc()[-600:])


# -- layer norm ---------------------------------------------------------------------------------

def inductor_kernels(torch, compiled, tensors) -> tuple[list[str], list[str]]:
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.utils import run_and_get_code
    _, codes = run_and_get_code(compiled, *tensors)
    found = []
    for module in list(getattr(PyCodeCache, "modules", [])) + \
            list(getattr(PyCodeCache, "modules_no_attr", {}).values()):
        for attr, value in vars(module).items():
            launchers = getattr(value, "launchers", None)
            if launchers:
                for launcher in launchers:
                    found.append(f"{attr}: config {getattr(launcher, 'config', '?')} n_regs "
                                 f"{getattr(launcher, 'n_regs', '?')} n_spills "
                                 f"{getattr(launcher, 'n_spills', '?')}")
    return codes, found


def variant_sources(source: str) -> dict[str, str]:
    """Stax's layer-norm kernel text, edited: each variant's name -> its source."""
    out = {"as generated": source}
    nostore = re.sub(r"\n\s+tl\.store\(buf[01]_ptr[^\n]*", "", source)
    out["no buf0/buf1 stores"] = nostore
    sqrt = re.search(r"(\w+) = tl\.sqrt_rn\(", source).group(1)
    div = re.search(rf"( +)(\w+) = tl\.math\.div_rn\((\w+), {sqrt}\)\n", source)
    pad, q, a = div.group(1), div.group(2), div.group(3)
    out["approximate / (diagnostic)"] = source.replace(div.group(0), f"{pad}{q} = {a} / {sqrt}\n")
    hoisted = (f"{pad}{q}_y = tl.math.div_rn(tl.full([XBLOCK, 1], 1.0, tl.float32), {sqrt})\n"
               f"{pad}{q}_q = {a} * {q}_y\n"
               f"{pad}{q}_r = tl.fma({q}_q, 0.0 - {sqrt}, {a})\n"
               f"{pad}{q} = tl.fma({q}_r, {q}_y, {q}_q)\n")
    out["row reciprocal + 1 fma correction"] = source.replace(div.group(0), hoisted)
    twice = hoisted + (f"{pad}{q}_r2 = tl.fma({q}, 0.0 - {sqrt}, {a})\n"
                       f"{pad}{q} = tl.fma({q}_r2, {q}_y, {q})\n")
    out["row reciprocal + 2 fma corrections"] = source.replace(div.group(0), twice)
    out["row reciprocal + 1 corr, no stores"] = re.sub(
        r"\n\s+tl\.store\(buf[01]_ptr[^\n]*", "", out["row reciprocal + 1 fma correction"])
    last = re.sub(r"(tl\.load\((?:w|b)_ptr[^\n]*other=0)\)", r'\1, eviction_policy="evict_last")', source)
    out["w,b evict_last"] = last
    out["w,b evict_last, x evict_first"] = re.sub(
        r"(tl\.load\(x_ptr[^\n]*other=0)\)", r'\1, eviction_policy="evict_first")', last)
    return out


def load_module(source: str, tag: str):
    path = Path(tempfile.mkdtemp()) / f"ln_{abs(hash(tag))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def layer_norm(torch, measure, rotating) -> None:
    case = next(c for c in gpu.CASES if c.name == "layer_norm")
    arrays = gpu.inputs(case)
    sets = [tuple(torch.from_numpy(a).cuda() for a in arrays)]
    sets.append((torch.randn_like(sets[0][0]), sets[0][1], sets[0][2]))
    nbytes = sum(a.nbytes for a in arrays) + arrays[0].nbytes
    tv = gpu.torch_versions(torch)["layer_norm"]
    compiled = torch.compile(tv, dynamic=False)
    try:
        codes, found = inductor_kernels(torch, compiled, sets[0])
        (OUT / "inductor_layer_norm.py").write_text("\n\n# ----\n".join(codes))
        say("inductor kernels:\n  " + "\n  ".join(found))
    except Exception:
        say("inductor dump FAILED", traceback.format_exc()[-800:])
        found = []
    measure("ln", "torch.compile default", rotating(lambda x, w, b: compiled(x, w, b), sets), nbytes)
    fn = gpu.numpy_fn(case)
    program = gpu.stax_loop_program(fn, arrays)
    from stax.codegen import generate_triton, triton_target
    artifact = generate_triton(program, triton_target())
    (OUT / "stax_kernels.txt").write_text(str(artifact))
    stax_call = gpu.stax_codegen(fn, arrays, program=program)
    measure("ln", "stax (TritonExecutable)", rotating(lambda *t: stax_call(*t), sets), nbytes)
    kernel = artifact.kernels[0]
    reference = stax_call(*sets[0]).clone()
    configs = [(1, 4), (1, 8), (1, 2), (2, 4), (2, 8), (4, 8)]
    for m in re.finditer(r"XBLOCK['\"]?: (\d+).*?num_warps['\"]?: (\d+)", " ".join(found)):
        if (int(m.group(1)), int(m.group(2))) not in configs:
            configs.append((int(m.group(1)), int(m.group(2))))
    outs = {}
    for label, source in variant_sources(artifact.triton_source).items():
        try:
            module = load_module(source, label)
        except Exception:
            say(f"ln variant {label} FAILED to load", traceback.format_exc()[-500:])
            continue
        fnk = getattr(module, kernel.name)
        for xblock, warps in configs if label == "as generated" else [(1, 4)]:
            def launch(x, w, b, xblock=xblock, warps=warps, fnk=fnk):
                bufs = {"x": x, "w": w, "b": b, "buf0": buf0, "buf1": buf1, "buf2": out}
                return fnk[(32768 // xblock,)](*[bufs[a] for a in kernel.args], XBLOCK=xblock,
                                              R0_BLOCK=1024, num_warps=warps,
                                              enable_fp_fusion=False, enable_reflect_ftz=False)
            try:
                buf0 = torch.empty(32768, device="cuda")
                buf1 = torch.empty(32768, device="cuda")
                out = torch.full((32768, 1024), float("nan"), device="cuda")
                compiled_kernel = launch(*sets[0])
                got = out.clone()
                same = int((got.view(torch.int32) == reference.view(torch.int32)).sum().item())
                regs = getattr(compiled_kernel, "n_regs", "?")
                outs[label] = got
                measure("ln", f"{label} XBLOCK={xblock} w={warps}", rotating(launch, sets), nbytes,
                        {"regs": regs, "bits_equal": f"{same}/{got.numel()}"})
            except Exception:
                say(f"ln variant {label} {xblock}/{warps} FAILED", traceback.format_exc()[-800:])


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter()
    try:
        main()
    except Exception:
        say("PROBE FAILED", traceback.format_exc())
    say(f"probe took {time.perf_counter() - clock:.0f} s")
    (OUT / "probe.json").write_text(json.dumps(ROWS, indent=1) + "\n")
    (OUT / "probe.log").write_text("\n".join(LOG) + "\n")
