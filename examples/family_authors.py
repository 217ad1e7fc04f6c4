"""VIME and SubTab with two more of their authors' choices: VIME's sigmoid reconstruction and
SubTab's LeakyReLU projection.

The built-in ``vime`` reconstructs the collection's preprocessed row with linear outputs (z-scored
numbers, one-hot categories), and the built-in ``subtab`` puts a ReLU between its projection's two
layers, as every stacked MLP of the collection.  The authors' code does otherwise:

- VIME's feature estimator is ``Dense(dim, activation='sigmoid')``, trained on data scaled to
  [0, 1]: ``objectives.VIME(reconstruction="sigmoid")`` puts a sigmoid on the outputs and scales the
  clean row it reconstructs to [0, 1], column by column over each member's training rows;
- SubTab's ``AEWrapper`` puts ``F.leaky_relu`` between the projection's two layers:
  ``objectives.SubTab(projection="leaky_relu")``.

This file registers them as methods, with SCARF's draw and with the anchor's pseudo-class (the
paper's)::

    python -m tcclib examples/family_authors.yaml --outputs outputs   # on the paper's 30, beside vime and subtab
    tcclib.load_plugins("examples/family_authors.py")                  # Python, a notebook cell

Each switch enters its members' content keys; the built-ins' keys stay as they are.  Its verdict
on the 30 is ``outputs/family_authors/verdict.md`` (docs/methods.md, "VIME's outputs and SubTab's
projection as their authors have them").
"""

from tcclib.method import objectives, registry

for objective, label in (
    (objectives.VIME(reconstruction="sigmoid", name="vime_sigmoid"), "VIME, sigmoid outputs"),
    (objectives.SubTab(projection="leaky_relu", name="subtab_leaky"), "SubTab, LeakyReLU projection"),
):
    registry.register_objective(objective)
    registry.register_method(objective.name, "column", "bernoulli_30", objective=objective.name, label=label)
    registry.register_method(
        f"{objective.name}_class",
        "pseudo",
        "bernoulli_30",
        objective=objective.name,
        label=f"{label}, class-conditioned",
    )
