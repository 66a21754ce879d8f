"""Wrong usage that mypy must reject (tests/test_typing.py): the annotations are checked."""
import numpy as np

import dense
import sparse

x = dense.to_tensor(np.arange(6.0))
s: sparse.SparseCooTensor = dense.reshape(x, [2, 3])
dense.expand(x, "2, 3")
