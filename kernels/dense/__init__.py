"""Dense kernels: one module per op family (forward, backward, registration)."""
