"""ipykernel settings that tcclib installs into its environment (``{sys.prefix}/etc/ipython``, a
folder every IPython kernel of the environment reads; pyproject.toml's data-files).

A kernel that a plain ``papermill`` run starts listens on TCP with no CurveZMQ keys, because
papermill's engine builds its kernel manager from an empty configuration (Lab's kernels get keys
from jupyter-config/jupyter_server_config.json; the sweep's use Unix sockets).  ipykernel then warns
"Kernel is running over TCP without encryption" before the first cell.  Where the kernel listens
on the loopback address only, the messages never leave this machine and every one is signed with
the connection file's key (readable by its owner only), so that warning is left out there; a
kernel listening on any other address keeps it.  Standard library only: this file runs at every
kernel start, also where tcclib is not importable.
"""

import logging

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class _UnencryptedLoopbackQuiet(logging.Filter):
    """Drops ipykernel's unencrypted-TCP warning when the kernel listens on loopback only."""

    def filter(self, record):
        if "without encryption" not in str(record.msg):
            return True
        from ipykernel.kernelapp import IPKernelApp

        return not (IPKernelApp.initialized() and IPKernelApp.instance().ip in LOOPBACK)


logging.getLogger("IPKernelApp").addFilter(_UnencryptedLoopbackQuiet())
