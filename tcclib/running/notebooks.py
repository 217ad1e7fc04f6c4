"""The notebooks as the sweep runs them: their jupytext sources, parameters and execution.

:func:`execute` runs one notebook with papermill in this very interpreter
(:mod:`tcclib.util.kernel`), streaming the kernel's output to the console.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import shutil
import sys
from pathlib import Path

from tcclib.method.config import Config
from tcclib.running import params as param_files
from tcclib.running.nbparams import RENDER_ENV, SWEEP_PARAMS
from tcclib.util import iri_grammar, paths, progress
from tcclib.util.kernel import KERNEL_NAME, kernel_manager
from tcclib.util.progress import PROGRESS_ENV

ROOT = Path(__file__).resolve().parents[2]


def share_tcclib_with_kernels() -> None:
    """Let the kernels papermill starts import this very tcclib, even from a source checkout that
    is not installed (or whose editable install points at another copy): the checkout's root
    goes first on ``PYTHONPATH``, which the kernels inherit. An installed package is left alone,
    but its project root (the working directory: :func:`tcclib.util.paths.project_root`) is given
    to the kernels as ``$TCC_ROOT``: a kernel works in its notebook's folder, and the relative paths
    it is passed would otherwise land under that folder."""
    if not paths.in_checkout():
        os.environ.setdefault(paths.ROOT_ENV, str(paths.project_root()))
        return
    rest = [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x and x != str(ROOT)]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *rest])


def machine() -> str:
    """The CPU and torch build a dataset ran on (floats round differently between CPUs, so a
    result's provenance names them), e.g. ``AMD EPYC, 2 cores, torch 2.13.0+cpu (AVX2)``."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import torch  # deferred: torch takes seconds to import, and --check never needs it

    dev = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return f"{cpu}, {os.cpu_count()} cores{dev}, torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()})"


def notebook_dir() -> Path:
    """``$TCC_NOTEBOOKS``, else ``notebooks/`` of the checkout or of the installed package."""
    return Path(os.environ.get("TCC_NOTEBOOKS", paths.source_root() / "notebooks"))


def source_path(name: str) -> Path:
    """The source of notebook ``name``: ``notebooks/<name>*.py`` (jupytext percent format)."""
    hits = sorted(notebook_dir().glob(f"{name}*.py"))
    if not hits:
        raise FileNotFoundError(f"notebook source {name}*.py not found in {notebook_dir()}")
    return hits[0]


def source_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_source(name: str):
    """The notebook ``name`` read from its jupytext source, with ``metadata.tcc`` naming the
    source and its sha256 (every rendered notebook records which source rendered it)."""
    iri_grammar.defer()  # (jsonschema's IRI grammar: 2 s of every such process, never used here)
    import jupytext  # deferred: it loads nbformat and jsonschema, which only executing a notebook needs

    src = source_path(name)
    nb = jupytext.read(src)
    nb.metadata["tcc"] = {"source": f"notebooks/{src.name}", "source_sha256": source_hash(src)}
    nb.metadata.pop("jupytext", None)
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    for i, cell in enumerate(nb.cells):  # stable ids: re-renders differ only where outputs do
        cell["id"] = f"{src.stem[:2]}-{i:02d}"
    return nb


def declared_parameters(nb) -> set[str]:
    """The names a notebook's ``parameters`` cell assigns (``epochs: int = 100`` and the like)."""
    return set(declared_defaults(nb))


_NOT_A_LITERAL = object()


def declared_defaults(nb) -> dict:
    """Each name a notebook's ``parameters`` cell assigns, with its value where that is a literal
    (``epochs: int = 100`` gives ``{"epochs": 100}``; anything else: a marker no value equals)."""
    found = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    targets, value = [node.target], node.value
                elif isinstance(node, ast.Assign):
                    targets, value = [t for t in node.targets if isinstance(t, ast.Name)], node.value
                else:
                    continue
                try:
                    literal = ast.literal_eval(value) if value is not None else _NOT_A_LITERAL
                except ValueError:
                    literal = _NOT_A_LITERAL
                found.update({t.id: literal for t in targets})
    return found


ALWAYS_PASSED = ("dataset", "set_name", "set_dir")
"""Parameters passed to a notebook that declares them even at its default: they name what the
render shows, in its injected cell."""


def _same_value(a, b) -> bool:
    """A parameter's value and a default, lists and tuples alike (``seeds`` comes as either)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def needed_parameters(nb, parameters: dict) -> dict:
    """What the sweep injects into notebook ``nb``: ``parameters`` less those at the notebook's
    own default, so that papermill's injected cell of a render lists only what differs (the
    dataset, the set, the folders, the settings off the notebook's defaults: a dozen lines where
    every setting made 48).  A declared parameter equal to its default in the notebook's
    ``parameters`` cell is left out (the notebook runs with the same value), except the names
    of :data:`ALWAYS_PASSED`.  A setting the notebook does not declare (newer than its parameter
    cell) is passed only off its :class:`Config` default (papermill would warn of an unknown
    name; the notebook's check, :func:`tcclib.running.nbparams.per_dataset`, takes it).  The
    sweep's own parameters (:data:`tcclib.running.nbparams.SWEEP_PARAMS`) go only to a notebook
    that declares them."""
    declared, default = declared_defaults(nb), Config().to_dict()
    needed = {}
    for k, v in parameters.items():
        if k in declared:
            keep = k in ALWAYS_PASSED or not _same_value(v, declared[k])
        else:
            keep = (k not in default and k not in SWEEP_PARAMS) or not _same_value(v, default.get(k, v))
        if keep:
            needed[k] = v
    return needed


# Run in a kernel before each notebook after its first: the kernel is as a fresh one would be for
# the notebook (empty namespace, execution counts from 1, no open figures, warnings shown again,
# the notebook's folder as working directory, RENDER_ENV as kernel_environment sets it), while the
# modules it imported stay loaded.
_RESET = """\
import os as _os, sys as _sys, warnings as _warnings
if "matplotlib.pyplot" in _sys.modules:
    _sys.modules["matplotlib.pyplot"].close("all")
_filters = _warnings.filters[:]
_warnings.simplefilter("default")  # any change of the filters forgets which warnings were shown
_warnings.filters[:] = _filters
_os.chdir({cwd!r})
_os.environ.pop({env!r}, None)
_os.environ.update({render!r})
get_ipython().reset(new_session=True)  # last: it clears the names above too
__import__("gc").collect()
"""


def renders_into_outputs(out: Path) -> bool:
    """Whether the rendered notebook ``out`` is one of the committed renders (under ``outputs/``):
    only then may its code write there (:func:`tcclib.running.nbparams.run_folder`)."""
    return Path(out).resolve().is_relative_to(paths.reference_root().resolve())


def kernel_environment(render: bool) -> dict:
    """A kernel's environment: this process's, with :data:`~tcclib.running.nbparams.RENDER_ENV` set
    for a notebook rendered into ``outputs/`` and only for one."""
    env = {k: v for k, v in os.environ.items() if k != RENDER_ENV}
    return {**env, RENDER_ENV: "1"} if render else env


class KernelSession:
    """One kernel for several notebooks, started on the first and reset before each next one.

    A kernel's start and a notebook's imports (torch, matplotlib, tcclib) take about 3 s, more than
    most of the sweep's per-dataset notebooks take for their own work once the results are stored.
    A session pays that once: before every notebook after its first, the kernel's namespace is
    cleared and its execution count, figures, warnings and working directory reset (``_RESET``), so
    the notebook runs as in a fresh kernel (its render is the same; ``tests/test_kernel_session.py``).
    A kernel that died is replaced by a fresh one; ``fresh=True`` starts one for every notebook
    (the sweep's ``--fresh-kernels``).  Use it as a context manager, or :meth:`close`."""

    def __init__(self, fresh: bool = False):
        self.fresh = fresh
        self.km = None

    def kernel_for(self, cwd: Path, render: bool = False):
        """The session's kernel manager, its kernel running in ``cwd`` as if fresh; ``render``: the
        notebook is rendered into ``outputs/`` (:func:`kernel_environment`)."""
        if not self.fresh and self.km is not None and self.km.is_alive():
            try:
                self._run(_RESET.format(cwd=str(cwd), env=RENDER_ENV, render={RENDER_ENV: "1"} if render else {}))
                return self.km
            except (RuntimeError, TimeoutError):
                pass  # a kernel that cannot be reset is replaced below
        self.close()
        self.km = kernel_manager()
        self.km.start_kernel(cwd=str(cwd), env=kernel_environment(render))
        return self.km

    def _run(self, code: str, timeout: float = 60) -> None:
        client = self.km.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=timeout)
            reply = client.execute_interactive(code, silent=True, timeout=timeout, output_hook=lambda msg: None)
        finally:
            self.km.stop_clients()
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"resetting the kernel failed: {reply['content'].get('evalue', '')}")

    def close(self) -> None:
        """Shut the kernel down and remove its connection folder."""
        if self.km is None:
            return
        try:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
        finally:
            shutil.rmtree(Path(self.km.ip).parent, ignore_errors=True)
            self.km = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def execute(nb: str, out: Path, parameters: dict, cwd: Path, kernel: KernelSession | None = None) -> None:
    """Execute notebook ``nb`` with ``parameters`` into ``out``, in this very interpreter
    (:mod:`tcclib.util.kernel`), streaming the kernel's output (progress bars) to the console.

    ``kernel``: the :class:`KernelSession` to run it in (the kernel stays up for the session's
    next notebook); without one, a kernel of its own, shut down afterwards."""
    iri_grammar.defer()
    import papermill as pm  # deferred: papermill (nbformat, jsonschema) loads only to execute

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.running.ipynb")
    share_tcclib_with_kernels()  # every path that runs a notebook (--aggregates too) needs it
    # kernels inherit it: text bars streamed below, frames to a terminal, else whole lines
    os.environ[PROGRESS_ENV] = "text" if sys.stderr.isatty() else "lines"
    session = kernel if kernel is not None else KernelSession()
    try:
        source = load_source(nb)
        km = session.kernel_for(cwd, renders_into_outputs(out))  # in cwd: papermill need not change this process's
        pm.execute_notebook(
            source,
            str(tmp),
            parameters=needed_parameters(source, parameters),
            progress_bar=False,
            kernel_name=KERNEL_NAME,
            km=km,
            stderr_file=sys.stderr,
            start_timeout=120,
        )
    finally:
        if session.km is not None:
            session.km.stop_clients()  # papermill's client: its heartbeat thread would outlive the notebook
        if kernel is None:
            session.close()
        if tmp.exists():
            _relative_output_path(tmp)
            _ended_bars_only(tmp)
            os.replace(tmp, out)  # keep the rendered notebook, failed or not


def _relative_output_path(rendered: Path) -> None:
    """Rewrite the ``output_path`` papermill recorded in ``rendered`` (its own absolute path) to the
    path relative to the project root, so that no render holds the rendering machine's folders;
    a text replacement of that one JSON string, every other byte as papermill wrote it."""
    text = rendered.read_text(encoding="utf-8")
    recorded = f'"output_path": {json.dumps(str(rendered), ensure_ascii=False)}'
    if recorded in text:
        relative = json.dumps(paths.relative_to_root(rendered), ensure_ascii=False)
        rendered.write_text(text.replace(recorded, f'"output_path": {relative}', 1), encoding="utf-8")


def _ended_bars_only(rendered: Path) -> None:
    """Leave the progress bars' last states only in ``rendered`` (:func:`tcclib.util.progress.ended_bars_only`):
    a kernel's bars write a line every half minute, which the console wants and a reader of the render
    does not."""
    import nbformat  # deferred: loaded by papermill already, which executed the notebook

    nb = nbformat.read(rendered, as_version=4)
    if progress.ended_bars_only(nb):
        nbformat.write(nb, rendered)


def notebook_parameters(ps: param_files.ParamSet, dataset: str, out_root: Path, reuse: bool = True) -> dict:
    """The papermill parameters of a dataset's notebooks: flat, one per setting.

    Paths are relative to the project root where they lie under it, so that a rendered notebook
    re-executes in another checkout (or a copy with ``$TCC_ROOT``); the data folder comes from the
    environment (``$TCC_DATA_DIR``), never from a path baked into the notebook."""
    cfg = ps.config_for(dataset).to_dict()
    return dict(
        dataset=ps.spec(dataset),
        set_name=ps.name,
        output_dir=paths.relative_to_root(out_root / ps.name / dataset),
        data_dir="",
        cache_dir=paths.relative_to_root(out_root / ".cache"),
        reuse=bool(reuse),
        write_marker=False,  # the sweep writes _DONE.json itself, after all of the dataset's notebooks
        **cfg,
    )
