"""A module holding an array, read as ``lifted_config.scale`` by a test's compiled function."""

import numpy as np

scale = np.ones(4)
