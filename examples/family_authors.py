"""VIME, SubTab and the denoising autoencoder with more of their authors' choices: VIME's sigmoid
reconstruction and its inputs scaled to [0, 1], SubTab's LeakyReLU projection and the
autoencoder's deep stack.

The built-in ``vime`` reconstructs the collection's preprocessed row with linear outputs (z-scored
numbers, one-hot categories), the built-in ``subtab`` puts a ReLU between its projection's two
layers, as every stacked MLP of the collection, and the built-in ``dae``'s classifier reads the
encoder's last layer, as every method's.  The authors do otherwise:

- VIME's feature estimator is ``Dense(dim, activation='sigmoid')``, trained on data scaled to
  [0, 1]: ``objectives.VIME(reconstruction="sigmoid")`` puts a sigmoid on the outputs and scales the
  clean row it reconstructs to [0, 1], column by column over each member's training rows; with
  ``inputs="min_max"`` too, the encoder reads the rows so scaled as well (the authors scale the
  data before VIME sees it): ``vime_authors`` is VIME with both;
- SubTab's ``AEWrapper`` puts ``F.leaky_relu`` between the projection's two layers:
  ``objectives.SubTab(projection="leaky_relu")``;
- Jahrer's denoising autoencoder (Porto Seguro, 2017) hands the classifier every hidden layer's
  activations side by side, the "deep stack": ``objectives.DenoisingAutoencoder(embedding=
  "deep_stack")``, the 4 layers of 256 read as one embedding of 1,024 wherever it is read (the
  classifier, the pseudo-label refresh, the plots, ``transform``).

This file registers them as methods, with SCARF's draw and with the anchor's pseudo-class (the
paper's)::

    python -m tcclib examples/family_authors.yaml --outputs outputs   # on the paper's 30, beside vime and subtab
    tcclib.load_plugins("examples/family_authors.py")                  # Python, a notebook cell

Each switch enters its members' content keys; the built-ins' keys stay as they are.  Its verdict
on the 30 is ``outputs/family_authors/verdict.md`` (docs/methods.md, "VIME's outputs and SubTab's
projection as their authors have them", and "The autoencoder's deep stack").
"""

from tcclib.method import objectives, registry

for objective, where, label in (
    (objectives.VIME(reconstruction="sigmoid", name="vime_sigmoid"), "bernoulli_30", "VIME, sigmoid outputs"),
    (
        objectives.VIME(reconstruction="sigmoid", inputs="min_max", name="vime_authors"),
        "bernoulli_30",
        "VIME, inputs in [0, 1] and sigmoid outputs",
    ),
    (objectives.SubTab(projection="leaky_relu", name="subtab_leaky"), "bernoulli_30", "SubTab, LeakyReLU projection"),
    (objectives.DenoisingAutoencoder(embedding="deep_stack", name="dae_deep"), "bernoulli_15", "DAE, deep stack"),
):
    registry.register_objective(objective)
    registry.register_method(objective.name, "column", where, objective=objective.name, label=label)
    registry.register_method(
        f"{objective.name}_class", "pseudo", where, objective=objective.name, label=f"{label}, class-conditioned"
    )
