"""This repository's Jupyter server settings that JSON cannot hold (``make lab`` adds this folder
through ``JUPYTER_CONFIG_PATH``; jupyter_server_config.json holds the rest).

One entry per notebook in Lab's file browser: a ``notebooks/NN.py`` source opens as a notebook
(jupytext), and the paired ``NN.ipynb`` that Lab writes beside it on save is left out of the
listing, so no second tab can hold the same notebook (two tabs of one notebook ended in Lab's
"File Changed ... Overwrite" dialog).  The file stays on disk and reachable by its path; an
``.ipynb`` with no ``.py`` beside it (the committed renders under ``outputs/``) is listed as usual.
jupytext's server extension builds its contents manager on top of this class.
"""

from pathlib import PurePosixPath

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager


def is_paired_copy(name: str, names: set[str]) -> bool:
    """Whether ``name`` is the ``.ipynb`` that jupytext pairs with a ``.py`` listed beside it."""
    path = PurePosixPath(name)
    return path.suffix == ".ipynb" and f"{path.stem}.py" in names


class OneEntryPerNotebook(AsyncLargeFileManager):
    """Jupyter's file manager, listing a folder without the paired ``.ipynb`` of its ``.py`` files."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model["type"] == "directory" and model.get("content"):
            names = {entry["name"] for entry in model["content"]}
            model["content"] = [entry for entry in model["content"] if not is_paired_copy(entry["name"], names)]
        return model


c = get_config()  # noqa: F821 - Jupyter defines it while it reads this file
c.ServerApp.contents_manager_class = OneEntryPerNotebook
