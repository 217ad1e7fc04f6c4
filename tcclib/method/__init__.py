"""Layer 2, the method: the registry (the one place that knows a method), validated settings,
corruption rules, XGBoost feature correlations, the stacked model, NT-Xent, the training core,
the baselines and the scikit-learn estimator.

Layering rule: modules here import only :mod:`tcclib.util`, :mod:`tcclib.data` and each other.
"""
