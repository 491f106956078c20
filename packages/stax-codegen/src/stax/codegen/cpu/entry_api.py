"""What the machine-code entry (``entry.py``) needs of CPython and NumPy: where an array
object's fields are, and the addresses of the C functions it calls, checked once."""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import numpy as np

from .entry_events import errstate_layout
from .jit import array_data_offset

# the NumPy C-API table (numpy/__multiarray_api.h): stable slots since NumPy 1.x
API_ARRAY_TYPE, API_RETURN, API_NEW_FROM_DESCR = 2, 76, 94


@dataclass(frozen=True)
class Layout:
    """Where the fields of ``PyArrayObject`` are, found by looking at a probe array."""

    data: int
    nd: int
    dimensions: int
    strides: int
    descr: int
    flags: int


@functools.cache
def array_layout() -> Layout | None:
    probe = np.empty((3, 5, 7), np.float32)[:, ::2]
    base = id(probe)

    def word(offset: int) -> int:
        return ctypes.c_ssize_t.from_address(base + offset).value

    data = array_data_offset()
    layout = Layout(data, data + 8, data + 16, data + 24, data + 40, data + 48)
    try:
        nd_ok = ctypes.c_int.from_address(base + layout.nd).value == probe.ndim
        dims = [ctypes.c_ssize_t.from_address(word(layout.dimensions) + 8 * i).value for i in range(3)]
        steps = [ctypes.c_ssize_t.from_address(word(layout.strides) + 8 * i).value for i in range(3)]
        descr_ok = word(layout.descr) == id(probe.dtype)
        flags_ok = ctypes.c_int.from_address(base + layout.flags).value == probe.flags.num
    except (ValueError, OSError):
        return None
    ok = nd_ok and tuple(dims) == probe.shape and tuple(steps) == probe.strides and descr_ok \
        and flags_ok
    return layout if ok else None


@functools.cache
def api_addresses() -> dict[str, int] | None:
    """Addresses of the CPython and NumPy functions the entry calls; None if anything about the
    running NumPy differs from what the entry assumes (then no version gets an entry)."""
    try:
        capsule = np._core._multiarray_umath._ARRAY_API
    except AttributeError:  # NumPy 1.x
        capsule = np.core._multiarray_umath._ARRAY_API
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    table = get(capsule, None)
    slot = lambda i: ctypes.c_void_p.from_address(table + 8 * i).value  # noqa: E731
    if slot(API_ARRAY_TYPE) != id(np.ndarray) or array_layout() is None:
        return None
    api = {"array_type": id(np.ndarray), "new": slot(API_NEW_FROM_DESCR), "return": slot(API_RETURN)}
    for name in ("PyObject_Vectorcall", "Py_DecRef", "Py_IncRef", "PyTuple_New",
                 "PyTuple_SetItem", "PyContextVar_Get"):
        api[name] = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    for name in ("PyLong_FromLong", "PyEval_SaveThread", "PyEval_RestoreThread",
                 "PyNumber_Float", "PyNumber_Long", "PyObject_IsTrue", "PyBool_FromLong",
                 "PyList_New", "PyList_SetItem", "PyDict_New", "PyDict_SetItem",
                 "PyLong_AsLongLongAndOverflow"):
        api[name] = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    api["errstate"] = errstate_layout()
    # check the NumPy slots do what their names say, once, through ctypes
    new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.c_int,
                            ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_int, ctypes.c_void_p)(api["new"])
    descr = np.dtype(np.float64)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(descr))  # the call steals a reference
    made = new(id(np.ndarray), descr, 2, (ctypes.c_ssize_t * 2)(2, 3), None, None, 0, None)
    if type(made) is not np.ndarray or made.shape != (2, 3) or made.dtype != descr:
        return None
    return api


class MethodDef(ctypes.Structure):
    """CPython's ``PyMethodDef``: the entry's builtin function is made from one."""

    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


def entry_available() -> bool:
    return api_addresses() is not None

