"""This repository's Jupyter server settings that JSON cannot hold (``make lab`` adds this folder
through ``JUPYTER_CONFIG_PATH``; jupyter_server_config.json holds the rest).

One entry per notebook in Lab's file browser: a ``notebooks/NN.py`` source opens as a notebook
(jupytext), and the paired ``NN.ipynb`` that Lab writes beside it on save is left out of the
listing, so no second tab can hold the same notebook (two tabs of one notebook ended in Lab's
"File Changed ... Overwrite" dialog).  The file stays on disk and reachable by its path; an
``.ipynb`` with no ``.py`` beside it (the committed renders under ``outputs/``) is listed as usual.
jupytext's server extension builds its contents manager on top of this class.

The committed renders stay put: a file under ``outputs/`` (the server's root is the repository)
is served with ``writable: false``, so Lab opens it read-only (a "read-only" mark in the toolbar;
Run All runs, Ctrl+S says to use Save As, and closing offers Save As instead of Save), and the
server refuses to save over it (403) whichever client asks.

``get`` names ``require_hash``: jupytext passes a content hash through only to a base class whose
``get`` has that parameter, and Lab (4.1 and later) decides "File Changed" by that hash where it
has one (by the modification time, 0.5 s apart, where not).  With the hash, rewriting a file with
the same bytes (``make notebooks`` on a notebook Lab has saved) changes nothing for Lab.
"""

from pathlib import PurePosixPath

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web

RENDERS = "outputs"  # the folder of the committed renders, at the server's root


def is_paired_copy(name: str, names: set[str]) -> bool:
    """Whether ``name`` is the ``.ipynb`` that jupytext pairs with a ``.py`` listed beside it."""
    path = PurePosixPath(name)
    return path.suffix == ".ipynb" and f"{path.stem}.py" in names


def is_committed_render(path: str) -> bool:
    """Whether ``path`` (relative to the server's root) is a file or folder under ``outputs/``."""
    parts = PurePosixPath(path.strip("/")).parts
    return len(parts) > 1 and parts[0] == RENDERS


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

    async def save(self, model, path=""):
        if is_committed_render(path):
            raise web.HTTPError(
                403,
                f"{path} is a committed render (read-only): File > Save Notebook As... saves a copy, e.g. under runs/",
            )
        return await super().save(model, path)


c = get_config()  # noqa: F821 - Jupyter defines it while it reads this file
c.ServerApp.contents_manager_class = OneEntryPerNotebook
