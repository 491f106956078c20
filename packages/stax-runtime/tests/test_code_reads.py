"""Values a function reads by a name held in a string, through an import inside it, as its own
attribute, as a class method's class, or through a module reached by a value: each is in the key
(``stax.runtime.code_reads``), so changing it recompiles instead of returning the first trace's
result. Every case here returned a stale result before (found by a probe helper)."""

import functools
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import stax.runtime as stax

X = np.arange(3.0)


@pytest.fixture
def config():
    """A user module ``probe_config`` (``scale = 2.0``) with a submodule ``probe_config.sub``."""
    module = types.ModuleType("probe_config")
    module.scale = 2.0
    sub = types.ModuleType("probe_config.sub")
    sub.scale = 2.0
    module.sub = sub
    sys.modules["probe_config"], sys.modules["probe_config.sub"] = module, sub
    yield module
    del sys.modules["probe_config"], sys.modules["probe_config.sub"]


def _stays_current(fn, compiled, change, *args):
    """Called, changed, called again: compiled equals eager each time (the compiling call and
    the cached version's, before and after the change)."""
    for _ in range(2):
        np.testing.assert_array_equal(compiled(*args), fn(*args))
    change()
    want = fn(*args)
    for _ in range(2):
        np.testing.assert_array_equal(compiled(*args), want)
    assert not np.array_equal(want, X * 2.0)  # the change reached the eager result


def test_a_class_methods_class_attribute():
    class Model:
        factor = 2.0

        @classmethod
        def scaled(cls, x):
            return x * cls.factor
    _stays_current(Model.scaled, stax.compile(Model.scaled),
                   lambda: setattr(Model, "factor", 9.0), X)


def test_a_functions_own_attribute():
    def f(x):
        return x * f.k
    f.k = 2.0
    _stays_current(f, stax.compile(f), lambda: setattr(f, "k", 9.0), X)


def test_a_global_read_through_globals():
    namespace = {"np": np, "K": 2.0}
    exec("def f(x):\n    return x * globals()['K']", namespace)
    f = namespace["f"]
    _stays_current(f, stax.compile(f), lambda: namespace.update(K=9.0), X)


@pytest.mark.parametrize("read", ["getattr(probe_config, 'scale')",
                                  "vars(probe_config)['scale']",
                                  "operator.attrgetter('scale')(probe_config)",
                                  "probe_config.sub.scale"])
def test_a_module_attribute_read_by_a_string_or_a_chain(config, read):
    import operator
    namespace = {"np": np, "operator": operator, "probe_config": config}
    exec(f"def f(x):\n    return x * {read}", namespace)
    f = namespace["f"]
    holder = config.sub if "sub" in read else config
    _stays_current(f, stax.compile(f), lambda: setattr(holder, "scale", 9.0), X)


@pytest.mark.parametrize("body", ["from probe_config import scale\n    return x * scale",
                                  "import probe_config\n    return x * probe_config.scale",
                                  "import probe_config.sub\n    return x * probe_config.sub.scale"])
def test_an_import_inside_the_function(config, body):
    namespace = {"np": np}
    exec(f"def f(x):\n    {body}", namespace)
    f = namespace["f"]
    holder = config.sub if "sub" in body else config
    _stays_current(f, stax.compile(f), lambda: setattr(holder, "scale", 9.0), X)


def test_functions_reached_through_values_read_module_and_class_attributes(config):
    class Cfg:
        factor = 2.0

    namespace = {"np": np, "probe_config": config, "Cfg": Cfg}
    exec("def act(x):\n    return x * probe_config.scale\n"
         "def act_cls(x):\n    return x * Cfg.factor\n", namespace)
    act, act_cls = namespace["act"], namespace["act_cls"]

    class Layer:
        def __call__(self, x):
            return act_cls(x)

    def apply(x, fn):
        return fn(x)
    reset = lambda: (setattr(config, "scale", 2.0), setattr(Cfg, "factor", 2.0))  # noqa: E731
    for fn, change in [(act, lambda: setattr(config, "scale", 9.0)),
                       (functools.partial(act), lambda: setattr(config, "scale", 9.0)),
                       (Layer(), lambda: setattr(Cfg, "factor", 9.0)),
                       (act_cls, lambda: setattr(Cfg, "factor", 9.0))]:
        reset()
        _stays_current(apply, stax.compile(apply), change, X, fn)


def test_a_module_held_by_an_object_a_list_or_passed(config):
    class Holder:
        pass
    held = Holder()
    held.mod = config
    namespace = {"np": np, "held": held, "mods": [config]}
    exec("def through_object(x):\n    return x * held.mod.scale\n"
         "def through_list(x):\n    return x * mods[0].scale\n"
         "def passed(x, m):\n    return x * m.scale\n", namespace)
    for name, args in [("through_object", (X,)), ("through_list", (X,)), ("passed", (X, config))]:
        config.scale = 2.0
        fn = namespace[name]
        _stays_current(fn, stax.compile(fn), lambda: setattr(config, "scale", 9.0), *args)


_CHILD = """
    import os, sys
    import numpy as np
    import stax.runtime as stax
    sys.path.insert(0, os.environ["CONFIG_DIR"])
    import probe_disk_config
    probe_disk_config.scale = K = float(os.environ["S"])

    def by_globals(x):
        return x * globals()["K"]

    def by_attribute(x):
        return x * by_attribute.k
    by_attribute.k = K

    def by_getattr(x):
        return x * getattr(probe_disk_config, "scale")

    def by_import(x):
        from probe_disk_config import scale
        return x * scale

    x = np.arange(3.0)
    for fn in (by_globals, by_attribute, by_getattr, by_import):
        compiled = stax.compile(fn)
        for _ in range(2):  # the compiling call, then the cached version's
            got = compiled(x)
            assert np.array_equal(got, fn(x)), (fn.__name__, got)
"""


def test_the_disk_cache_keys_what_the_code_reads_by_strings_imports_and_attributes(tmp_path):
    """A second process with other values must not reuse the first one's captures."""
    (tmp_path / "probe_disk_config.py").write_text("scale = 0.0\n")
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(_CHILD))
    for value in ("2", "3"):
        env = {**os.environ, "STAX_CACHE_DIR": str(tmp_path / "cache"), "S": value,
               "CONFIG_DIR": str(tmp_path)}
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             env=env, timeout=300)
        assert run.returncode == 0, run.stderr


def test_a_compiled_function_called_inside_another_is_keyed_by_what_it_compiles():
    """A compiled function read by another (called inside it, or by itself when it recurses)
    is keyed by the function it compiles and that function's reads (``__stax_key__``), not by
    its caches, whose every call changed the key ("holds more than 256 values": eager)."""
    namespace = {"np": np, "stax": stax, "K": 2.0}
    exec("@stax.compile\ndef inner(x):\n    return x * K\n"
         "@stax.compile\ndef outer(x):\n    return inner(x) + 1\n"
         "@stax.compile\ndef power(x, n):\n    return x if n == 0 else power(x * x, n - 1)\n",
         namespace)
    inner, outer, power = namespace["inner"], namespace["outer"], namespace["power"]
    a = np.arange(4.0)
    inner(a)
    np.testing.assert_array_equal(outer(a), a * 2.0 + 1)
    np.testing.assert_array_equal(outer(a[:3]), a[:3] * 2.0 + 1)
    namespace["K"] = 3.0  # read by inner: outer's versions no longer apply
    np.testing.assert_array_equal(outer(a), a * 3.0 + 1)
    for n in (1, 2, 3):
        np.testing.assert_array_equal(power(a, n), a ** (2 ** n))
    assert outer.cache_info().fallbacks == 0 and power.cache_info().fallbacks == 0
    assert power.cache_info().versions == 3
