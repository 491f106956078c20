"""Affine index expressions: sum(coeff * var) + const over named loop variables.

ARCHITECTURE.md §4: building sympy expressions costs about a millisecond each, so loop-IR indices
use this small algebra instead (microseconds). Views (transpose, slices, broadcasting with stride 0)
are affine maps, so every index the skeleton lowers is affine; floor/mod terms for reshapes of
non-contiguous views extend this class, not sympy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stax.ir.sizes import Size, size_from_json, size_to_json


@dataclass(frozen=True)
class Affine:
    """``terms`` are ``(variable, coefficient)`` pairs sorted by name, with no zero coefficients."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def var(name: str) -> Affine:
        return Affine(((name, 1),))

    @staticmethod
    def of(value: int | Affine) -> Affine:
        if isinstance(value, Affine):
            return value
        return Affine((), value if isinstance(value, Size) else int(value))

    @staticmethod
    def _make(coeffs: Mapping[str, int], const: int) -> Affine:
        # a size coefficient is never zero (a ``Size`` always has a symbol): kept, not asked
        return Affine(tuple(sorted((v, c) for v, c in coeffs.items()
                                   if not isinstance(c, int) or c)), const)

    def __add__(self, other: int | Affine) -> Affine:
        other = Affine.of(other)
        coeffs = dict(self.terms)
        for v, c in other.terms:
            coeffs[v] = coeffs.get(v, 0) + c
        return Affine._make(coeffs, self.const + other.const)

    __radd__ = __add__

    def __mul__(self, k: int) -> Affine:
        return Affine._make({v: c * k for v, c in self.terms}, self.const * k)

    __rmul__ = __mul__

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.terms)

    def coefficient(self, var: str) -> int:
        return dict(self.terms).get(var, 0)

    def substitute(self, mapping: Mapping[str, int | Affine]) -> Affine:
        result = Affine((), self.const)
        for v, c in self.terms:
            result = result + (Affine.of(mapping[v]) if v in mapping else Affine.var(v)) * c
        return result

    def bounds(self, ranges: Mapping[str, int]) -> tuple[int, int]:
        """Smallest and largest value over ``0 <= var < ranges[var]`` (ranges must be non-empty)."""
        low = high = self.const
        for v, c in self.terms:
            extent = c * (ranges[v] - 1)  # of the coefficient's sign: an extent is at least 1
            if c >= 0:
                high = high + extent
            else:
                low = low + extent
        return low, high

    def __str__(self) -> str:
        parts = [(c, v) for v, c in self.terms]
        if isinstance(self.const, Size) or self.const or not parts:
            parts.append((self.const, ""))
        text = ""
        for i, (c, v) in enumerate(parts):
            if isinstance(c, Size):  # printed as it is, deciding nothing: (s1)*x0
                body = f"({c})*{v}" if v else f"({c})"
                text += body if i == 0 else f" + {body}"
                continue
            sign = "-" if c < 0 else "+"
            body = v if abs(c) == 1 and v else (f"{abs(c)}*{v}" if v else str(abs(c)))
            text += (("-" if sign == "-" else "") + body) if i == 0 else f" {sign} {body}"
        return text

    def to_json(self) -> Any:
        return [[v, size_to_json(c)] for v, c in self.terms] + [size_to_json(self.const)]

    @staticmethod
    def from_json(doc: Any) -> Affine:
        *terms, const = doc
        return Affine._make({v: size_from_json(c) for v, c in terms}, size_from_json(const))


def linear_index(variables: Iterable[Affine | int], strides: Iterable[int]) -> Affine:
    """``sum(var_d * stride_d)``: the offset of element (vars) in a strided layout."""
    total = Affine()
    for v, s in zip(variables, strides):
        total = total + Affine.of(v) * s
    return total
