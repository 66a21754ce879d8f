"""Sparse kernels: COO/CSR reshape and layout conversions."""
