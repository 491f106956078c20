"""A module whose compiled function names a class bound after ``@stax.compile`` ran
(``test_object_entries.py``)."""

import stax.runtime as stax


@stax.compile
def scaled(x):
    return x * Config.scale


class Config:
    scale = 2.0
