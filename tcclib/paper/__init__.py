"""Layer 5, the paper: the published numbers (``published/``), tables, statistics, figures and
the reproduction report.

Layering rule: modules here may import every layer below; nothing in ``tcclib`` imports them
(the notebooks and tools do).
"""
