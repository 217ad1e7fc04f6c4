"""SubTab evaluated as its authors evaluate it: the mean of the subsets' embeddings.

The built-in ``subtab`` and ``subtab_class`` train SubTab's objective at its published defaults,
and then the collection's frozen encoder reads the whole row, as every other method's does: the
last ``M mod 4`` features too, which no subset holds, so no view ever showed them to the encoder.
The authors' model encodes each subset of a test row and averages the embeddings
(``aggregation: mean``).  ``objectives.SubTab(evaluation="subsets")`` is that switch; this file
registers it as two methods, with SCARF's draw and with the anchor's pseudo-class (the paper's)::

    python -m tcclib examples/subtab_authors.yaml --outputs outputs   # both on the paper's 30, beside subtab
    tcclib.load_plugins("examples/subtab_authors.py")                  # Python, a notebook cell

``subtab_mean`` and ``subtab_mean_class`` then train as ``subtab`` and ``subtab_class`` do (the
same objective, rules and settings), and their embedding, wherever it is read (the pseudo-label
refresh of ``subtab_mean_class``, the classifier, the plots, ``TCCClassifier.transform``), is the
mean of the four subsets' embeddings.  ``evaluation`` enters their content keys.  The screen's
verdict (``outputs/subtab_authors/verdict.md``, docs/methods.md): level with the collection's
evaluation over the 30, 3 to 15 points of accuracy behind it on ``car``, ``tic-tac-toe`` and
``banknote-authentication``.
"""

from tcclib.method import objectives, registry

registry.register_objective(objectives.SubTab(evaluation="subsets", name="subtab_mean"))
registry.register_method(
    "subtab_mean", "column", "bernoulli_30", objective="subtab_mean", label="SubTab, subsets' mean"
)
registry.register_method(
    "subtab_mean_class",
    "pseudo",
    "bernoulli_30",
    objective="subtab_mean",
    label="SubTab, subsets' mean, class-conditioned",
)
