"""The corpus section of ``nox -s bench``'s summary (``benchmarks/conftest.py`` prints it): one line
per program with each implementation's speedup over eager NumPy and how it ran, then the totals
the README quotes: native fraction, correct count, geomean against NumPy, and geomean against
Numba on the programs Numba compiles (and JAX on those with a port)."""

from __future__ import annotations

from . import PROGRAMS, geomean

PREFIX = "corpus:"
PEERS = ("numba", "jax")


def case_name(program: str) -> str:
    return PREFIX + program


def _short(text: str) -> str:
    """A reason without the source location Stax appends, at most 100 characters."""
    text = text.split(" at /")[0]
    return text if len(text) <= 100 else text[:97] + "..."


def _time(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def corpus_lines(medians: dict[str, dict[str, float]], status: dict[str, dict[str, str]]) -> list[str]:
    """``medians[case][impl]`` in seconds and ``status[case][impl]`` (how it ran, or why it was
    not timed) of the cases named ``corpus:<program>``; no lines when none ran."""
    names = [n for n in PROGRAMS if case_name(n) in medians or case_name(n) in status]
    if not names:
        return []
    lines = []
    for name in names:
        times, how = medians.get(case_name(name), {}), status.get(case_name(name), {})
        base = times.get("numpy")
        cells = [f"numpy {_time(base)}" if base else "numpy -"]
        for impl in ("stax", *PEERS):
            if impl in times and base:
                cells.append(f"{impl} {base / times[impl]:.2f}x")
            elif impl in how:
                cells.append(f"{impl} - ({_short(how[impl])})")
        stax_how = _short(how.get("stax", ""))
        lines.append(f"{name} [{PROGRAMS[name].kind}; stax {stax_how or 'not run'}]: " + ", ".join(cells))
    return lines + [totals_line(names, medians, status)]


def totals_line(names: list[str], medians: dict[str, dict[str, float]],
                status: dict[str, dict[str, str]]) -> str:
    how = {n: status.get(case_name(n), {}).get("stax", "") for n in names}
    native = [n for n in names if how[n].startswith(("native", "steps"))]
    kernels_only = [n for n in names if how[n].startswith("native")]
    wrong = [n for n in names if how[n].startswith("WRONG")]
    ran = [n for n in names if how[n] and not how[n].startswith(("WRONG", "crash"))]
    speed = {n: medians[case_name(n)]["numpy"] / medians[case_name(n)]["stax"] for n in names
             if {"numpy", "stax"} <= set(medians.get(case_name(n), {}))}
    parts = [f"corpus, {len(names)} programs: stax native {len(native)}/{len(names)} "
             f"({len(kernels_only)} kernels only, {len(native) - len(kernels_only)} with NumPy steps), "
             f"correct {len(ran)}/{len(names)}" + (f" (WRONG: {', '.join(wrong)})" if wrong else ""),
             f"geomean vs NumPy {_ratio(list(speed.values()))} over {len(speed)} "
             f"({sum(s < 1 for s in speed.values())} slower than NumPy)"]
    for peer in PEERS:
        peer_how = {n: status.get(case_name(n), {}).get(peer, "") for n in names}
        ran_peer = [n for n in names if peer_how[n] in ("compiles", "port")]
        peer_wrong = [n for n in names if peer_how[n].startswith("WRONG")]
        both = [n for n in ran_peer if {peer, "stax"} <= set(medians.get(case_name(n), {}))]
        ratios = [medians[case_name(n)][peer] / medians[case_name(n)]["stax"] for n in both]
        label = "compiles" if peer == "numba" else "has a port for"
        parts.append(f"{peer} {label} {len(ran_peer) + len(peer_wrong)}/{len(names)}"
                     + (f" ({len(peer_wrong)} wrong: {', '.join(peer_wrong)})" if peer_wrong else "")
                     + (f", stax geomean vs {peer} on those {_ratio(ratios)}" if both else ""))
    return "; ".join(parts)


def _ratio(values: list[float]) -> str:
    return f"{geomean(values):.2f}x" if values else "-"
