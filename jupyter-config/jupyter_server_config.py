"""This repository's Jupyter server settings that JSON cannot hold (``make lab`` adds this folder
through ``JUPYTER_CONFIG_PATH``; jupyter_server_config.json holds the rest).

One entry per notebook in Lab's file browser: a ``notebooks/NN.py`` source opens as a notebook
(jupytext), and the paired ``NN.ipynb`` that Lab writes beside it on save is left out of the
listing, so no second tab can hold the same notebook (two tabs of one notebook ended in Lab's
"File Changed ... Overwrite" dialog).  The file stays on disk and reachable by its path; an
``.ipynb`` with no ``.py`` beside it (the committed renders under ``outputs/``) is listed as usual.

The committed renders stay put: everything under ``outputs/`` (the server's root is the
repository) is served with ``writable: false``, so Lab opens a render read-only (a "read-only" mark
in the toolbar; Run All runs, Ctrl+S says to use Save As, and closing offers Save As instead of
Save), and the server answers 403, naming the file and the fix, to a save, upload, new file or
folder, copy into it, delete, rename (into or out of ``outputs/`` too) and checkpoint (create,
restore: File > Revert Notebook to Checkpoint, delete) there, whichever client asks.  A path is
judged by where it leads, not as typed: ``..`` and percent-encodings (the server decodes them) are
resolved against the served root, and so are symbolic links (``runs/x.ipynb`` or a folder under
``runs/`` linked into ``outputs/``); a path that leads to ``outputs/`` or to a folder holding it is
refused.  Copying a render out of ``outputs/`` (to ``runs/``) is allowed: that is how to edit one.
The refusals sit in the file manager under jupytext's contents manager, so the paired files
jupytext writes are judged too, and again on top of it, where a refusal would otherwise reach the
client wrapped in jupytext's 500: this file builds that class itself, so jupytext's server
extension takes it as it is.

Only a jupytext text notebook (a ``.py`` that starts with jupytext's header, as ``notebooks/*.py``
do) is a notebook: any other ``.py`` (``examples/nearby_rule.py``) is served as a file.  Lab opens
every ``.py`` with the Jupytext Notebook viewer on a double-click (``labconfig/``), so this folder's
Lab plugin (``labextensions/tcc-lab``, which the last line here adds to Lab's extensions) puts the
text editor first for the ``.py`` files the server lists as files: a double-click opens a rule file
in the editor.  Asked for as a notebook all the same, such a file answers 400 with "Open With >
Editor" instead of a notebook with a kernel dialog whose save would rewrite the file as a notebook.

``get`` names ``require_hash``: jupytext passes a content hash through only to a base class whose
``get`` has that parameter, and Lab (4.1 and later) decides "File Changed" by that hash where it
has one (by the modification time, 0.5 s apart, where not).  With the hash, rewriting a file with
the same bytes (``make notebooks`` on a notebook Lab has saved) changes nothing for Lab.
"""

import os
from pathlib import PurePosixPath

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class
from tornado import web

RENDERS = "outputs"  # the folder of the committed renders, at the server's root
KEEP_RENDERS = (
    "outputs/ holds the committed renders (read-only): "
    "copy the notebook to runs/ (File > Save Notebook As...) to edit it"
)
JUPYTEXT_HEADER = b"# ---\n# jupyter:"  # how jupytext begins a text notebook (notebooks/*.py)


def is_paired_copy(name: str, names: set[str]) -> bool:
    """Whether ``name`` is the ``.ipynb`` that jupytext pairs with a ``.py`` listed beside it."""
    path = PurePosixPath(name)
    return path.suffix == ".ipynb" and f"{path.stem}.py" in names


class RendersRefused(web.HTTPError):
    """A change that would reach the committed renders: 403, its message naming the file and the fix."""


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class OneEntryPerNotebook(AsyncLargeFileManager):
    """Jupyter's file manager, listing a folder without the paired ``.ipynb`` of its ``.py`` files,
    and refusing every change under ``outputs/``, wherever a path leads."""

    def renders_reached(self, path: str, holding: bool = False) -> str | None:
        """Where ``path`` (an API path, as the client sent it) meets the committed renders: None where
        it does not; else the place it leads to (``..`` and symbolic links resolved against the
        root), ``outputs`` or a path under it, or with ``holding`` (a delete, a move) also a folder
        that holds ``outputs/``."""
        root = os.path.abspath(self.root_dir)
        typed = os.path.abspath(self._get_os_path(path.strip("/")))  # '..' resolved (404 outside the root)
        renders = os.path.join(root, RENDERS)
        for where, folder in ((typed, renders), (os.path.realpath(typed), os.path.realpath(renders))):
            if _within(where, folder):
                inside = os.path.relpath(where, folder)
                return RENDERS if inside == "." else f"{RENDERS}/{inside}"
            if holding and _within(folder, where):
                return "a folder holding outputs/"
        return None

    def refuse_renders(self, verb: str, path: str, then: str = "", holding: bool = False) -> None:
        """:class:`RendersRefused` when ``path`` leads to the committed renders: ``cannot <verb>
        <path><then>``, the place it leads to where that is not the path as sent, and the fix."""
        reached = self.renders_reached(path, holding)
        if reached is not None:
            typed = path.strip("/")
            shown = typed if reached == typed else f"{typed} (that is {reached})"
            raise RendersRefused(403, f"cannot {verb} {shown}{then}: {KEEP_RENDERS}")

    async def get(self, path, content=True, type=None, format=None, require_hash=False):
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        if model["type"] == "directory" and model.get("content"):
            names = {entry["name"] for entry in model["content"]}
            model["content"] = [entry for entry in model["content"] if not is_paired_copy(entry["name"], names)]
            for entry in model["content"]:
                entry["writable"] = entry["writable"] and self.renders_reached(entry["path"]) is None
        model["writable"] = model["writable"] and self.renders_reached(path) is None
        return model

    async def save(self, model, path=""):
        self.refuse_renders("save", path)  # (also every file jupytext writes for a paired notebook)
        return await super().save(model, path)

    async def delete_file(self, path):
        self.refuse_renders("delete", path, holding=True)
        return await super().delete_file(path)

    async def rename_file(self, old_path, new_path):
        self.refuse_renders("move", old_path, f" to {new_path.strip('/')}", holding=True)
        self.refuse_renders(f"move {old_path.strip('/')} to", new_path)
        return await super().rename_file(old_path, new_path)

    async def copy(self, from_path, to_path=None):
        """A copy of a render out of ``outputs/`` is how to edit one; a copy into it is refused (a
        folder's copy does not go through :meth:`save`)."""
        into = to_path if to_path is not None else from_path.strip("/").rpartition("/")[0]
        self.refuse_renders(f"copy {from_path.strip('/')} into", into)
        return await super().copy(from_path, to_path)

    async def create_checkpoint(self, path):
        self.refuse_renders("checkpoint", path)
        return await super().create_checkpoint(path)

    async def restore_checkpoint(self, checkpoint_id, path):
        self.refuse_renders("restore a checkpoint onto", path)  # File > Revert Notebook to Checkpoint
        return await super().restore_checkpoint(checkpoint_id, path)

    async def delete_checkpoint(self, checkpoint_id, path):
        self.refuse_renders("delete a checkpoint of", path)
        return await super().delete_checkpoint(checkpoint_id, path)


class RepositoryContents(build_async_jupytext_contents_manager_class(OneEntryPerNotebook)):
    """jupytext's contents manager over :class:`OneEntryPerNotebook`: a ``.py`` is a notebook only
    with jupytext's header, and nothing under ``outputs/`` is written, deleted or moved."""

    def is_plain_python(self, path: str) -> bool:
        """Whether ``path`` is a ``.py`` file without jupytext's header (a script, not a notebook)."""
        os_path = self._get_os_path(path.strip("/"))
        if not path.endswith(".py") or not os.path.isfile(os_path):
            return False
        with open(os_path, "rb") as source:
            return not source.read(len(JUPYTEXT_HEADER)).startswith(JUPYTEXT_HEADER)

    async def get(self, path, content=True, type=None, format=None, require_hash=False):
        if type in (None, "notebook") and self.is_plain_python(path):
            if type == "notebook":
                where = path.strip("/")
                raise web.HTTPError(400, f"{where} is a Python file, not a notebook: right-click > Open With > Editor")
            type = "file"
        return await super().get(path, content=content, type=type, format=format, require_hash=require_hash)

    async def save(self, model, path=""):
        self.refuse_renders("save", path)
        try:
            return await super().save(model, path)
        except web.HTTPError as error:  # jupytext answers 500 for a paired file refused below
            if isinstance(error.__context__, RendersRefused):
                raise error.__context__ from None
            raise

    async def rename_file(self, old_path, new_path):
        self.refuse_renders("move", old_path, f" to {new_path.strip('/')}", holding=True)
        self.refuse_renders(f"move {old_path.strip('/')} to", new_path)
        return await super().rename_file(old_path, new_path)


c = get_config()  # noqa: F821 - Jupyter defines it while it reads this file
c.ServerApp.contents_manager_class = RepositoryContents
# this repository's Lab plugin (labextensions/tcc-lab: a double-clicked plain .py opens in the editor)
c.LabApp.extra_labextensions_path = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "labextensions")]
