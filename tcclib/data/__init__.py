"""Layer 1, data: dataset sources (the paper's OpenML-CC18 list, any OpenML id, your own
files and frames), ARFF/CSV reading and its checks, column types (dates: :mod:`tcclib.data.columns`),
per-seed preprocessing, tensor encoding.

Layering rule: modules here import only :mod:`tcclib.util` and each other.
"""
