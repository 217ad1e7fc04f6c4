"""Layer 3, artifacts: content keys (what a stored result was computed from), the dataset
folder's file layout with its crash-safe writes, the importance cache and checkpoints.

Layering rule: modules here import only :mod:`tcclib.util`, :mod:`tcclib.data`,
:mod:`tcclib.method` and each other.
"""
