"""Device follows the data (issue 12 item 1): which device a call runs on, and how arrays cross
between the host and that device around the compiled code.

A call's array leaves decide: NumPy arrays run on the CPU (nothing here is touched, and torch,
CuPy and Triton are never imported: a leaf is recognised by ``type(x).__module__``); torch CUDA
tensors or CuPy arrays run on their GPU through the CUDA target. ``device="cuda"`` forces the GPU
(NumPy arrays are then an error saying how to move them). Under ``TRITON_INTERPRET=1`` torch CPU
tensors stand for CUDA ones and take the CUDA path: that is how it is tested without a GPU.
One call never mixes kinds or devices: that is an error naming the two arguments.

The design of a miss, and why:

- **Capture on host copies.** The tracer computes on NumPy arrays (mixed mode: it runs the
  function while it records it). On a miss the device inputs are copied to the host once (one
  synchronization), each with the element strides of the device array, so the plan is made for the
  layout the kernels will read; the function is captured on those copies and compiled for the
  device. A miss costs a copy to the host, a hit nothing: misses are rare, and a second tracer
  (over CuPy) would double the capture layer for them.
- **The capture's eager result is the host's.** When the compile falls back, the capture's result
  stands for this call, as on the CPU: its arrays go back to the device (``from_numpy``), arguments
  the function updated in place are copied back into the caller's device arrays, and an argument
  returned as such is the caller's own array.
- **Later eager calls run through CuPy.** A version that falls back runs the function with the
  inputs viewed as CuPy arrays (DLPack, zero-copy; CuPy implements NumPy's API through
  ``__array_function__``/``__array_ufunc__``) and the results viewed back as the inputs' kind. Under
  the interpreter NumPy stands in for CuPy (views of the CPU tensors). A call a compiled version
  declines because a bounds check failed runs on host copies instead: CuPy does not raise NumPy's
  ``IndexError``, NumPy does. An array whose elements share memory (``expand``) is read-only
  there, as ``np.broadcast_to``'s is, so writing into it raises NumPy's error: the NumPy views
  under the interpreter are marked read-only; CuPy has no such flag, so such calls run on host
  copies.
- **Data gates replay on the device** (``gates.py``): the replay subgraph runs through CuPy on the
  inputs (on the inputs' current stream), and its few values are read back (one
  synchronization per gate value, usually one);
  a replay CuPy cannot run is replayed on host copies.
- **Layouts the kernels cannot read** run eagerly through CuPy with one log line: negative strides
  (CuPy only). Tensors that require grad are an error (Stax does not differentiate).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stax.codegen.triton import arrays
from stax.codegen.triton.arrays import ArrayLibrary
from stax.ir import StaxError, tree_flatten, tree_unflatten

#: the modules whose arrays are device arrays (checked on ``type(x).__module__``, so recognising a
#: leaf imports nothing)
DEVICE_MODULES = ("torch", "cupy")


_BY_TYPE: dict[type, ArrayLibrary] = {}  # device array types seen, and their library


def library_of(x: Any) -> ArrayLibrary | None:
    """The array library of a torch tensor or CuPy array (``stax.codegen.triton.arrays``), or None
    for anything else, without importing either library for other objects."""
    t = type(x)
    found = _BY_TYPE.get(t)
    if found is not None:  # a dispatch's common case: one dict lookup
        return found
    if t.__module__.split(".", 1)[0] not in DEVICE_MODULES:
        return None
    found = arrays.library_of(x)
    if found is not None:
        _BY_TYPE[t] = found
    return found


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (``TRITON_INTERPRET=1``): torch CPU tensors
    then stand for CUDA ones. Read from the environment, as Triton's knob reads it, so that
    deciding imports nothing."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def numpy_dtype(x: Any, library: ArrayLibrary) -> np.dtype:
    """The NumPy dtype of a device array; ``StaxError`` for one NumPy has no dtype for."""
    if library.name == "cupy":
        return np.dtype(x.dtype)
    name = str(x.dtype).removeprefix("torch.")
    try:
        return np.dtype(name)
    except TypeError:
        raise StaxError(f"a torch tensor of dtype {name} has no NumPy dtype; Stax compiles NumPy "
                        "programs: convert it, e.g. x.float()") from None


def device_key(x: Any, library: ArrayLibrary) -> str:
    """The device part of sigma: ``torch:cuda:0``, ``cupy:cuda:1``, ``torch:cpu``."""
    if library.name == "cupy":
        return f"cupy:cuda:{x.device.id}"
    d = x.device
    return f"torch:{d.type}" if d.index is None else f"torch:{d.type}:{d.index}"


def element_strides(x: Any, library: ArrayLibrary) -> tuple[int, ...]:
    return library.layout(x)[1]


def layout(x: Any) -> tuple[str, tuple[int, ...], np.dtype, tuple[int, ...]] | None:
    """(device key, shape, dtype, strides in bytes) of a device array, None for other values."""
    library = library_of(x)
    if library is None:
        return None
    dtype = numpy_dtype(x, library)
    strides = tuple(s * dtype.itemsize for s in element_strides(x, library))
    return device_key(x, library), tuple(x.shape), dtype, strides


def layout_key(x: Any) -> Any:
    """Dispatch level 2's fingerprint of a device array (None for other values): its device,
    shape, strides, dtype and whether it requires grad (such a tensor never reaches a version)."""
    library = library_of(x)
    if library is None:
        return None
    if library.name == "cupy":
        return ("cupy", x.device.id, x.shape, x.strides, x.dtype)
    return ("torch", x.device, x.shape, x.stride(), x.dtype, x.requires_grad)


def _describe(i: int, leaf: Any) -> str:
    return f"argument leaf {i} ({type(leaf).__module__}.{type(leaf).__qualname__})"


def place(leaves: list[Any], device: str | None, name: str) -> Placement | None:
    """Where a call with these argument leaves runs: None for the CPU, else its ``Placement``.
    ``StaxError`` for calls no device can run: NumPy arrays given to a ``device="cuda"``
    function, kinds or devices mixed, tensors that require grad, CPU tensors outside the
    interpreter."""
    host: list[int] = []
    found: list[tuple[int, Any, Any, str]] = []
    for i, leaf in enumerate(leaves):
        if type(leaf) is np.ndarray:
            host.append(i)
            continue
        library = library_of(leaf)
        if library is not None:
            found.append((i, leaf, library, device_key(leaf, library)))
    if not found:
        if device == "cuda":
            what = f"argument leaf {host[0]} is a NumPy array" if host else "no argument is an array"
            raise StaxError(f"{name} was compiled with device='cuda' but {what}: move the inputs "
                            "to the GPU with cupy.asarray(x) or torch.as_tensor(x, device='cuda')")
        return None
    i, like, library, key = found[0]
    if device == "cpu":
        raise StaxError(f"{name} was compiled with device='cpu' but {_describe(i, like)} is on "
                        f"{key}: pass NumPy arrays (x.cpu().numpy(), cupy.asnumpy(x)) or compile "
                        "without device= to follow the data")
    if host:
        raise StaxError(f"{name}: argument leaf {host[0]} is a NumPy array and {_describe(i, like)} "
                        f"is on {key}: one call runs on one device; move the NumPy array with "
                        "cupy.asarray(x) or torch.as_tensor(x, device='cuda')")
    for j, other, _, other_key in found[1:]:
        if other_key != key:
            raise StaxError(f"{name}: {_describe(i, like)} is on {key} and {_describe(j, other)} on "
                            f"{other_key}: one call runs on one device and one kind of array; "
                            "convert them with torch.as_tensor / cupy.asarray (DLPack, zero-copy)")
    for j, leaf, lib, _ in found:
        if lib.name == "torch" and leaf.requires_grad:
            raise StaxError(f"{name}: {_describe(j, leaf)} requires grad; Stax compiles NumPy "
                            "programs and does not differentiate: pass x.detach()")
        numpy_dtype(leaf, lib)
    if key.endswith(":cpu") and not interpreting():
        raise StaxError(f"{name}: {_describe(i, like)} is a torch CPU tensor; Stax runs NumPy "
                        "arrays on the CPU (x.numpy() is a zero-copy view) and CUDA tensors on "
                        "the GPU (CPU tensors stand for CUDA ones only under TRITON_INTERPRET=1)")
    eager = next((f"{_describe(j, leaf)} has negative strides, which the CUDA kernels do not "
                  "take" for j, leaf, lib, _ in found
                  if any(s < 0 for s in element_strides(leaf, lib))), None)
    return Placement(library, key, like, eager)


@dataclass
class Placement:
    """One device call: the inputs' library, their device key, one of them (the model for
    conversions and allocations) and, when the kernels cannot take the inputs, why the call runs
    eagerly instead."""

    library: ArrayLibrary
    key: str
    like: Any
    eager_reason: str | None = None
    # id(host copy) -> the caller's device array, for the call being captured
    originals: dict[int, Any] = field(default_factory=dict)

    def host_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                  ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """(args, kwargs) with every device array replaced by a host copy of the same layout
        (one synchronization for the whole call)."""
        leaves, tree = tree_flatten((args, kwargs))
        out = []
        for leaf in leaves:
            if library_of(leaf) is not None:
                copy = host_copy(leaf, self.library)
                self.originals[id(copy)] = leaf
                out.append(copy)
            else:
                out.append(leaf)
        host_args, host_kwargs = tree_unflatten(tree, out)
        return tuple(host_args), dict(host_kwargs)

    def restore(self, result: Any, updated: list[np.ndarray]) -> Any:
        """The capture's host result as the device call's: ``updated`` (host copies the function
        changed in place) copied back into the caller's arrays, results moved to the device."""
        for copy in updated:
            self.write_back(copy)
        leaves, tree = tree_flatten(result)
        return tree_unflatten(tree, [self._to_device(leaf) for leaf in leaves])

    def write_back(self, copy: np.ndarray) -> None:
        """A host copy's values into the caller's device array it was made from."""
        write(self.originals[id(copy)], copy, self.library)

    def _to_device(self, leaf: Any) -> Any:
        if isinstance(leaf, np.ndarray) and id(leaf) in self.originals:
            return self.originals[id(leaf)]
        return to_device(leaf, self.library, self.like)


def refuse_held_tensor(exc: BaseException | None, placement: Placement | None, name: str,
                       holder: str) -> None:
    """``StaxError`` for a device call that cannot be keyed because ``holder`` holds a torch
    tensor (``signature.HeldDeviceArray``): the eager run views only the arguments through CuPy,
    so the function would mix CuPy (or NumPy) arrays with that tensor and fail in its own code.
    CuPy arrays held so are fine eagerly."""
    from .signature import HeldDeviceArray

    while exc is not None and not isinstance(exc, HeldDeviceArray):
        exc = exc.__context__  # the guards re-raise it with the value's path
    if placement is not None and isinstance(exc, HeldDeviceArray) and exc.library == "torch":
        raise StaxError(f"{name}: {holder} holds a torch tensor: neither a compiled version nor "
                        "the eager run through CuPy can read it; pass the tensor as an argument "
                        "(tuples, lists and dicts of tensors are fine)") from None


def to_device(leaf: Any, library: ArrayLibrary, like: Any) -> Any:
    """A host result leaf on ``like``'s device (a NumPy scalar as a 0-d array, as the kernels
    return it); anything else unchanged."""
    if isinstance(leaf, np.generic):
        leaf = np.asarray(leaf)
    if type(leaf) is np.ndarray:
        return library.from_numpy(leaf, like)
    return leaf


def host_copy(x: Any, library: ArrayLibrary) -> np.ndarray:
    """A NumPy copy of a device array with its element strides (zero strides stay zero and
    read-only, as ``np.broadcast_to``'s), so that a capture on it plans for the device layout."""
    values = np.asarray(library.to_numpy(x))
    strides = element_strides(x, library)
    shape = tuple(x.shape)
    itemsize = values.dtype.itemsize
    if values.size == 0 or any(s < 0 for s in strides):
        return np.array(values)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    flat = np.empty(span, values.dtype)
    out = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * itemsize for s in strides))
    out[...] = values
    if self_overlapping(x, library):
        out.flags.writeable = False
    return out


def self_overlapping(x: Any, library: ArrayLibrary) -> bool:
    """Whether elements of ``x`` share memory (a zero stride over more than one element, as
    ``expand`` or ``broadcast_to`` make): NumPy refuses to write into such an array."""
    return any(s == 0 and n > 1 for n, s in zip(x.shape, element_strides(x, library)))


def write(target: Any, values: Any, library: ArrayLibrary) -> None:
    """Copy ``values`` (a NumPy or device array) into the device array ``target``, in place."""
    xp = library.numpy_module(target)
    view = library.as_cupy(target)
    with library.step_stream(target):
        source = library.as_cupy(values) if library_of(values) is not None else xp.asarray(values)
        xp.copyto(view, source)


def may_share_memory(a: Any, b: Any, library: ArrayLibrary) -> bool:
    xp = library.numpy_module(a)
    return bool(xp.may_share_memory(library.as_cupy(a), library.as_cupy(b)))


def device_leaf(leaves: list[Any]) -> tuple[Any, Any] | None:
    """(library, array) of the first device array among ``leaves``, None when there is none."""
    for leaf in leaves:
        library = library_of(leaf)
        if library is not None:
            return library, leaf
    return None


def run_through_cupy(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> Any:
    """``fn`` run eagerly with the device arrays viewed as CuPy arrays (NumPy views under the
    interpreter); its array results viewed back as the inputs' kind, on their device."""
    leaves, tree = tree_flatten((args, kwargs))
    found = device_leaf(leaves)
    if found is None:
        return fn(*args, **kwargs)
    library, like = found
    xp = library.numpy_module(like)
    overlapping = [leaf for leaf in leaves if library_of(leaf) is not None
                   and self_overlapping(leaf, library)]
    if overlapping and xp is not np:  # CuPy cannot make them read-only: NumPy's error needs NumPy
        return run_on_host(fn, args, kwargs)
    views: dict[int, Any] = {}
    out = []
    for leaf in leaves:
        if library_of(leaf) is not None:
            view = library.as_cupy(leaf)
            if any(leaf is o for o in overlapping):
                view.flags.writeable = False  # as np.broadcast_to's: writing raises NumPy's error
            views[id(view)] = leaf
            out.append(view)
        else:
            out.append(leaf)
    a, k = tree_unflatten(tree, out)
    with library.step_stream(like):  # CuPy's work on the torch tensors' current stream
        result = fn(*a, **k)
    leaves, tree = tree_flatten(result)
    back = []
    for leaf in leaves:
        if id(leaf) in views:  # the argument itself (updated in place): the caller's array
            back.append(views[id(leaf)])
        elif isinstance(leaf, xp.ndarray) and xp is not np:
            back.append(library.from_cupy(leaf, like))
        else:
            back.append(to_device(leaf, library, like) if xp is np else leaf)
    return tree_unflatten(tree, back)


def run_on_host(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn`` run eagerly on host copies of the device arrays (NumPy's exact semantics, errors
    included); arrays it changed in place are copied back, results moved to the device."""
    leaves = tree_flatten((args, kwargs))[0]
    found = device_leaf(leaves)
    if found is None:
        return fn(*args, **kwargs)
    placement = Placement(found[0], device_key(found[1], found[0]), found[1])
    a, k = placement.host_call(args, kwargs)
    before = {i: c.copy() for i, c in enumerate(tree_flatten((a, k))[0]) if id(c) in
              placement.originals}
    copies = tree_flatten((a, k))[0]

    def updated() -> list[np.ndarray]:
        return [copies[i] for i, old in before.items()
                if copies[i].flags.writeable and copies[i].tobytes() != old.tobytes()]
    try:
        result = fn(*a, **k)
    except Exception:  # NumPy's error (an index out of bounds): updates made before it stay
        for copy in updated():
            placement.write_back(copy)
        raise
    return placement.restore(result, updated())


def host_values(values: list[Any], like: Any, library: ArrayLibrary) -> list[Any]:
    """Values computed on the device read back to the host (NumPy arrays and scalars)."""
    xp = library.numpy_module(like)
    if xp is np:
        return list(values)
    return [xp.asnumpy(v) if isinstance(v, xp.ndarray) else v for v in values]

