"""Typed usage of the public API: mypy checks this file (tests/test_typing.py)."""
import numpy as np

import dense
import sparse


def scale_rows(x: dense.Tensor, n: int) -> dense.Tensor:
    y: dense.Tensor = dense.expand(dense.reshape(x, [1, -1]), n, -1)
    return dense.sum(y, axis=0, keepdim=True)


x = dense.to_tensor(np.arange(6.0), stop_gradient=False)
z = scale_rows(x, 3)
z.backward()
grad: dense.Tensor | None = x.grad
values: np.ndarray = z.numpy()
shape: list[int] = z.shape
first: float = float(dense.gather(x, np.array([0])))
rows: list[dense.Tensor] = list(dense.reshape(x, 2, 3))
as_int: dense.Tensor = x.astype("int32")
back: dense.Tensor = dense.from_dlpack(np.from_dlpack(x))

s = sparse.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0], [2, 3])
csr: sparse.SparseCsrTensor = sparse.to_sparse_csr(s)
r = sparse.reshape(csr, [3, 2])
d: dense.Tensor = r.to_dense()
coo: sparse.SparseCooTensor = sparse.coalesce(s.reshape(3, 2))
n: int = coo.nnz()
