"""Layer 0, utilities: where files go, progress bars, the thread budget, notebook kernels.

Layering rule: modules here import nothing from ``tcclib``.
"""
