"""Run notebooks in the interpreter of the running command, whatever kernelspecs exist.

papermill (and Jupyter in general) starts the kernel a notebook names, looked up among the
kernelspecs installed for the user or the system: a ``python3`` spec written by another
checkout or virtualenv would run our notebooks with another environment's packages.  The sweep
and the tests instead start ``sys.executable -m ipykernel_launcher`` directly, through a
:class:`KernelManager` whose spec manager answers for :data:`KERNEL_NAME` itself, and over IPC
(Unix sockets, readable by this user only), which also spares the console ipykernel's warning
about unencrypted TCP for every notebook.  No kernelspec is written anywhere.  The kernels get
``PYDEVD_DISABLE_FILE_VALIDATION=1`` (:data:`KERNEL_ENV`): without it, on Python 3.11 and later,
an ipykernel that loads debugpy as it starts (6.12, the lowest that tcclib takes, does) prints
debugpy's four "frozen modules" lines at every kernel start.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile

KERNEL_NAME = "tcc-current-env"
KERNEL_ENV = {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}
"""Set in every kernel started here: debugpy's check for frozen modules (a debugger's concern; the
sweep's kernels run no debugger) stays quiet."""


def _spec_manager_class():
    from jupyter_client.kernelspec import KernelSpecManager  # deferred: loads only when a kernel starts

    class CurrentEnvSpecs(KernelSpecManager):
        """Kernelspecs as usual, plus :data:`KERNEL_NAME`: this very interpreter."""

        def get_kernel_spec(self, kernel_name):
            if kernel_name == KERNEL_NAME:
                return self.kernel_spec_class(
                    argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    display_name=f"Python {platform.python_version()} ({sys.executable})",
                    language="python",
                    resource_dir="",
                    env=KERNEL_ENV,
                    metadata={"debugger": False},
                )
            return super().get_kernel_spec(kernel_name)

    return CurrentEnvSpecs


def kernel_manager():
    """A fresh, unstarted KernelManager for this interpreter (IPC transport) that keeps track of
    the clients made from it: ``stop_clients()`` stops their channels (papermill leaves the client
    of a kernel it was handed connected, with a heartbeat thread that would outlive the notebook)."""
    from jupyter_client.manager import KernelManager  # deferred: loads only when a kernel starts

    class TrackedKernelManager(KernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.made_clients = []

        def client(self, **kwargs):
            made = super().client(**kwargs)
            self.made_clients.append(made)
            return made

        def stop_clients(self) -> None:
            while self.made_clients:
                self.made_clients.pop().stop_channels()

    folder = tempfile.mkdtemp(prefix="tcc-kernel-")
    os.chmod(folder, 0o700)
    return TrackedKernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=_spec_manager_class()(),
        transport="ipc",
        ip=os.path.join(folder, "k"),
    )


def interpreter() -> dict:
    """The interpreter the notebooks ran in, for ``_DONE.json``: its file name, not its folder (a
    committed ``_DONE.json`` holds no path of the rendering machine), its version and torch's."""
    import torch  # deferred: torch takes seconds to import

    return {
        "python": os.path.basename(sys.executable),
        "python_version": platform.python_version(),
        "torch": torch.__version__,
    }
