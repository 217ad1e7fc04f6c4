"""Does a member train the same bits alone as beside other members?  (A check, not a benchmark.)

    python tools/stack_bits.py pc4 --methods vime --beside vime_class --epochs 3
    python tools/stack_bits.py pc4 --methods dae --beside dae_class
    python tools/stack_bits.py balance-scale --methods random --beside class oracle

It sets up the pretraining of ``--methods`` alone and of ``--methods`` with ``--beside`` (the same
dataset, seeds and settings: the published ones at ``--epochs``), runs both epoch by epoch and
prints, for each member of ``--methods``, whether its encoder's weights are still the same bits in
both runs, and the first epoch after which they are not.  The draws, the initial weights and the
batches of a member never depend on its stack-mates (``tcclib/method/draws.py``); its arithmetic
can, on the CPU: an elementwise kernel over the stacked ``[K, ...]`` tensor runs its last few
elements (the part past the last full vector) through scalar code, whose ``exp`` may differ from
the vector code's in the last bit, and which member holds those elements depends on ``K``
(docs/performance.md, "A member alone and in a stack").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from tcclib.data.sources import DatasetError, DataUnavailableError, load_dataset  # noqa: E402
from tcclib.method import training  # noqa: E402
from tcclib.method.config import Config  # noqa: E402
from tcclib.method.inputs import prepare_config  # noqa: E402
from tcclib.running import params as param_files  # noqa: E402
from tcclib.util.errors import ConfigError  # noqa: E402


def pretraining_of(dataset, methods: tuple[str, ...], epochs: int):
    """The pretraining stack(s) of ``methods`` on ``dataset`` at the published settings."""
    cfg = Config(methods=methods, epochs=epochs, progress=False)
    return training.set_up(prepare_config(dataset, cfg), cfg, None, dataset.name).pretraining


def encoders(pt) -> dict[tuple, list[torch.Tensor]]:
    """Each pretrained member's encoder weights, by ``(seed, method)``."""
    out = {}
    for part in pt.stacks:
        weights = list(part.enc.parameters())
        for j, member in enumerate(part.named):
            out[member] = [w[j] for w in weights]
    return out


def first_parting(dataset, methods: tuple[str, ...], beside: tuple[str, ...], epochs: int) -> dict[tuple, int | None]:
    """For each member of ``methods``: the first epoch after which its encoder alone and beside
    ``beside`` are not the same bits (None: the same after every epoch)."""
    alone, together = pretraining_of(dataset, methods, epochs), pretraining_of(dataset, methods + beside, epochs)
    parted: dict[tuple, int | None] = dict.fromkeys(encoders(alone))
    for epoch in range(1, epochs + 1):
        alone.run_epoch()
        together.run_epoch()
        mine, theirs = encoders(alone), encoders(together)
        for member, weights in mine.items():
            if parted[member] is None and not all(torch.equal(a, b) for a, b in zip(weights, theirs[member])):
                parted[member] = epoch
    return parted


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", help="a paper dataset's name (or breast_cancer)")
    ap.add_argument("--methods", nargs="+", required=True, help="the members' methods, trained alone")
    ap.add_argument("--beside", nargs="+", required=True, help="the methods trained beside them in the second run")
    ap.add_argument("--epochs", type=int, default=3, help="pretraining epochs compared (default 3)")
    ap.add_argument(
        "--data-dir",
        default=None,
        help="folder of <did>.arff (default: $TCC_DATA_DIR, else ../shared/datasets/openml-cc18 beside the checkout)",
    )
    args = ap.parse_args(argv)
    if args.epochs < 1:
        ap.error(f"--epochs must be at least 1, got {args.epochs}")
    overlap = set(args.methods) & set(args.beside)
    if overlap:
        ap.error(f"--beside repeats --methods: {', '.join(sorted(overlap))}")
    try:  # (the methods before the data: each error one line, before any work)
        Config(methods=tuple(args.methods) + tuple(args.beside))
        folder, _ = param_files.data_folder(args.data_dir, where="stack_bits")  # (as the sweep finds it)
        dataset = load_dataset(args.dataset, data_dir=folder)
    except (ConfigError, param_files.ParamsError, DatasetError, DataUnavailableError) as e:
        ap.error(str(e).splitlines()[0])
    print(
        f"# {args.dataset}: {', '.join(args.methods)} alone against beside {', '.join(args.beside)}; "
        f"{args.epochs} epochs, torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )
    parted = first_parting(dataset, tuple(args.methods), tuple(args.beside), args.epochs)
    for (seed, method), epoch in parted.items():
        print(f"{method:<14} seed {seed:<8} " + ("same bits" if epoch is None else f"apart after epoch {epoch}"))
    apart = sum(epoch is not None for epoch in parted.values())
    print(f"{apart} of {len(parted)} members apart after {args.epochs} epochs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
