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
Save), and the server answers 403, naming the file and the fix, to a save, upload, new file, copy,
delete or rename there (into or out of ``outputs/`` too), whichever client asks.  Those refusals
sit on top of jupytext's contents manager (which would wrap them in a 500): this file builds that
class itself, so jupytext's server extension takes it as it is.

Only a jupytext text notebook (a ``.py`` that starts with jupytext's header, as ``notebooks/*.py``
do) is a notebook: any other ``.py`` (``examples/nearby_rule.py``) is served as a file, and asked
for as a notebook (Lab's double-click, which opens every ``.py`` with the Jupytext Notebook viewer)
it answers 400 with "Open With > Editor" instead of a notebook with a kernel dialog whose save
would rewrite the file as a notebook.

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


def is_committed_render(path: str) -> bool:
    """Whether ``path`` (relative to the server's root) is ``outputs/`` or a file or folder under it."""
    parts = PurePosixPath(path.strip("/")).parts
    return bool(parts) and parts[0] == RENDERS


class OneEntryPerNotebook(AsyncLargeFileManager):
    """Jupyter's file manager, listing a folder without the paired ``.ipynb`` of its ``.py`` files,
    and serving everything under ``outputs/`` read-only."""

    async def get(self, path, content=True, type=None, format=None, require_hash=False):
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        if model["type"] == "directory" and model.get("content"):
            names = {entry["name"] for entry in model["content"]}
            model["content"] = [entry for entry in model["content"] if not is_paired_copy(entry["name"], names)]
            for entry in model["content"]:
                entry["writable"] = entry["writable"] and not is_committed_render(entry["path"])
        model["writable"] = model["writable"] and not is_committed_render(path)
        return model


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
        if is_committed_render(path):
            raise web.HTTPError(403, f"cannot save {path.strip('/')}: {KEEP_RENDERS}")
        return await super().save(model, path)

    async def delete_file(self, path):
        if is_committed_render(path):
            raise web.HTTPError(403, f"cannot delete {path.strip('/')}: {KEEP_RENDERS}")
        return await super().delete_file(path)

    async def rename_file(self, old_path, new_path):
        if is_committed_render(old_path) or is_committed_render(new_path):
            raise web.HTTPError(403, f"cannot move {old_path.strip('/')} to {new_path.strip('/')}: {KEEP_RENDERS}")
        return await super().rename_file(old_path, new_path)


c = get_config()  # noqa: F821 - Jupyter defines it while it reads this file
c.ServerApp.contents_manager_class = RepositoryContents
