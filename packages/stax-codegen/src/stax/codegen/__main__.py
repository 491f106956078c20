"""``python -m stax.codegen``: replay a kernels document on arrays from the command line.

    python -m stax.codegen run KERNELS.json INPUTS.npz OUTPUTS.npz

KERNELS is a ``stax.kernels/1`` document (``STAX_DUMP_DIR``'s ``f.vN.kernels.json``); INPUTS an
``.npz`` holding one array per input of the document, by its name (``np.savez(path, x=x, w=w)``)
or in input order (``np.savez(path, x, w)``), each laid out as the document plans it here (its
values are what counts); OUTPUTS receives the flat output leaves as ``out0``, ``out1``... A CPU
document runs its LLVM kernels on the arrays; a CUDA document (``stax.kernels/1.5``) runs its
Triton kernels on torch tensors on the GPU (``torch`` and ``triton`` installed: ``pip install
stax-codegen[cuda]``), or, with ``TRITON_INTERPRET=1``, on CPU tensors in Triton's interpreter.
Floating-point events are not reported (the kernels run as under ``np.errstate(all="ignore")``).

The Triton source of a CUDA document is admitted only in the generator's form, before any of it
runs (``triton/verify.py``). Arrays are read without unpickling. A mistake (a missing or
unreadable file, not a kernels document, an input missing or of another shape or dtype, a CUDA
document without torch, Triton or a GPU, refused source, inputs a check declines) prints one
line and exits with status 2; a traceback means a bug in Stax.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from typing import Any

import numpy as np

from stax.ir import SchemaError, StaxError, read_json

from .artifact import KernelArtifact, load_artifact
from .executable import Executable


class _UsageError(Exception):
    """A mistake in what the user gave: reported in one line, exit status 2."""


def _load(path: str) -> KernelArtifact:
    try:
        doc = read_json(path)
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _UsageError(f"{path} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("stax.kernels/"):
        raise _UsageError(f"{path} is not a stax.kernels document")
    try:
        return load_artifact(doc)
    except SchemaError as exc:
        raise _UsageError(f"{path}: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        detail = f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise _UsageError(f"{path} is not a valid stax.kernels document ({detail})") from None


def _inputs(path: str, artifact: KernelArtifact) -> list[tuple[np.ndarray, tuple[int, ...]]]:
    """Each input's values with the strides (elements) the plan wants it laid out with."""
    planned = [b for b in artifact.buffers if b.role == "input"]
    try:
        with np.load(path, allow_pickle=False) as npz:
            stored = {name: npz[name] for name in npz.files}
    except OSError as exc:
        raise _UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise _UsageError(f"{path} is not an .npz of plain arrays: {exc}") from None
    names = [b.name for b in planned]
    if not all(n in stored for n in names):
        positional = [f"arr_{i}" for i in range(len(names))]
        if sorted(stored) != sorted(positional):
            missing = [n for n in names if n not in stored]
            raise _UsageError(f"{path} lacks the input {missing[0]!r} (the document's inputs, "
                              f"by name or in order: {', '.join(names)}; found: "
                              f"{', '.join(sorted(stored)) or 'nothing'})")
        stored = dict(zip(names, (stored[p] for p in positional)))
    arrays = []
    for b in planned:
        a = stored[b.name]
        if np.dtype(b.dtype) == object:
            raise _UsageError(f"the input {b.name!r} is a Python object (a Generator, say), which "
                              "an .npz cannot hold: replay this document from Python")
        if a.shape != tuple(b.shape) or a.dtype != np.dtype(b.dtype):
            raise _UsageError(f"the input {b.name!r} is {a.dtype}{list(a.shape)}; the document "
                              f"plans {b.dtype}{list(b.shape)}")
        arrays.append((a, tuple(b.strides)))
    return arrays


def _layout(a: np.ndarray, strides: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    """``a``'s values in a view with ``strides`` (elements): (the view, its base, the offset of
    its first element in the base)."""
    size = 1 + sum((n - 1) * abs(s) for n, s in zip(a.shape, strides)) if 0 not in a.shape else 1
    offset = sum((n - 1) * -s for n, s in zip(a.shape, strides) if s < 0) if 0 not in a.shape else 0
    base = np.empty(size, a.dtype)
    view = np.lib.stride_tricks.as_strided(base[offset:], a.shape, [s * a.itemsize for s in strides])
    view[...] = a
    return view, base, offset


def _run_cuda(artifact: KernelArtifact, inputs: list[tuple[np.ndarray, tuple[int, ...]]]) -> list[Any]:
    try:
        import torch
        import triton
    except ImportError as exc:
        raise _UsageError(f"{artifact.name} is a CUDA document: its kernels run on torch tensors "
                          f"through Triton ({exc}; pip install stax-codegen[cuda] and torch)") from None
    from .triton.executable import TritonExecutable

    interpreting = bool(triton.knobs.runtime.interpret)
    if not interpreting and not torch.cuda.is_available():
        raise _UsageError(f"{artifact.name} is a CUDA document and torch sees no CUDA GPU: run "
                          "with TRITON_INTERPRET=1 to use Triton's interpreter on the CPU")
    device = "cpu" if interpreting else "cuda"
    names = [b.name for b in artifact.buffers if b.role == "input"]
    tensors = []
    for name, (a, strides) in zip(names, inputs):
        if any(s < 0 for s in strides):
            raise _UsageError(f"the input {name!r} is planned with negative strides {strides} (a "
                              "CuPy array's), which torch tensors cannot have: replay this "
                              "document from Python on CuPy arrays")
        _, base, offset = _layout(a, strides)
        tensors.append(torch.from_numpy(base).to(device).as_strided(a.shape, strides, offset))
    outputs = TritonExecutable(artifact)(*tensors)
    return [o.cpu().numpy() if isinstance(o, torch.Tensor) else o for o in outputs]


def _replay(args: argparse.Namespace) -> int:
    artifact = _load(args.kernels)
    inputs = _inputs(args.inputs, artifact)
    try:
        with np.errstate(all="ignore"):
            if artifact.triton_source is None and artifact.target.get("device", "cpu") == "cpu":
                outputs = Executable(artifact)(*[_layout(a, s)[0] for a, s in inputs])
            else:
                outputs = _run_cuda(artifact, inputs)
    except (StaxError, ValueError) as exc:  # refused source, a plan that does not hold, a check
        raise _UsageError(f"{args.kernels}: {type(exc).__name__}: {exc}") from None
    try:
        np.savez(args.outputs, **{f"out{i}": np.asarray(o) for i, o in enumerate(outputs)})
    except OSError as exc:
        raise _UsageError(f"cannot write {args.outputs}: {exc.strerror or exc}") from None
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stax.codegen")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a kernels document on the arrays of an .npz")
    run.add_argument("kernels")
    run.add_argument("inputs")
    run.add_argument("outputs")
    args = parser.parse_args(argv)
    try:
        return _replay(args)
    except _UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
