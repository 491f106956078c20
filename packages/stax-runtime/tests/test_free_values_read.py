"""The free values a compiled function reads at each call (``freevars.FreeVariables.read``, a
generated function): a global rebound, a closure cell set again, a module's attribute and an
object's array attribute replaced are each seen at the next call, by the key entry too."""

from __future__ import annotations

import types

import numpy as np

import stax.runtime as st

W = np.linspace(0.0, 1.0, 4)
CONFIG = types.ModuleType("config")
CONFIG.scale = np.full(4, 2.0)


def reads_globals(y, a):
    return y * W * a + CONFIG.scale


def test_rebound_free_values_are_read_at_each_call():
    global W
    f = st.compile(reads_globals)
    y = np.ones(4)
    globals()["CONFIG"] = CONFIG
    try:
        for step in range(6):
            if step == 3:
                W = np.linspace(-1.0, 1.0, 4)  # rebound
            if step == 4:
                CONFIG.scale = np.full(4, -3.0)
            a = 0.5 + step
            np.testing.assert_array_equal(f(y, a), reads_globals(y, a))
    finally:
        W = np.linspace(0.0, 1.0, 4)
        CONFIG.scale = np.full(4, 2.0)

    def make():
        v = np.arange(4.0)

        def closes(y):
            return y + v

        def set_v(value):
            nonlocal v
            v = value
        return closes, set_v

    closes, set_v = make()
    g = st.compile(closes)
    for step in range(4):
        if step == 2:
            set_v(np.full(4, 7.0))
        np.testing.assert_array_equal(g(y), closes(y))

    class Model:
        def __init__(self):
            self.w = np.arange(4.0)

        def apply(self, y):
            return y * self.w

    m = Model()
    h = st.compile(m.apply)
    for step in range(4):
        if step == 2:
            m.w = np.full(4, -1.0)
        np.testing.assert_array_equal(h(y), m.apply(y))
