"""papermill as the docs show it, and ``make notebooks``: a misspelled or ill-typed parameter
ends with its one line (no kernel traceback in between), a plain run prints no warning about
unencrypted TCP (jupyter-config/ipython_kernel_config.py), and ``make notebooks`` prints no
"Notebook is not trusted"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupyter_client
import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
UNENCRYPTED = "Kernel is running over TCP without encryption"
KERNEL_CONFIG = ROOT / "jupyter-config" / "ipython_kernel_config.py"


def _with_kernel_config(tmp_path) -> dict:
    """The environment of a kernel that reads jupyter-config/ipython_kernel_config.py as IPython reads
    it from a profile (``$IPYTHONDIR``), whether or not this environment has it installed in
    ``{sys.prefix}/etc/ipython`` (make install and a wheel put it there; ``pip install -e .`` alone
    does not, and then only this warning of plain papermill's shows: docs/notebooks.md)."""
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    shutil.copy(KERNEL_CONFIG, profile / KERNEL_CONFIG.name)
    return {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")}


@pytest.mark.parametrize(
    "parameter, line",
    [
        (["epoch", "2"], "ParameterError: unknown notebook parameter(s): 'epoch' (did you mean 'epochs'?)."),
        (["epochs", "five"], "ParameterError: notebook parameters: epochs: expected an integer, got str 'five'"),
    ],
)
def test_plain_papermill_ends_with_the_one_line(tmp_path, parameter, line):
    nb = tmp_path / "01_data_prep.ipynb"
    jupytext.write(jupytext.read(ROOT / "notebooks" / "01_data_prep.py"), nb)
    cmd = [sys.executable, "-m", "papermill", str(nb), str(tmp_path / "out.ipynb"), "-p", *parameter]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    lines = [x for x in (out.stdout + out.stderr).splitlines() if x.strip()]
    assert out.returncode == 1 and lines[-1].startswith(line), lines[-3:]
    assert "nbparams.py" not in out.stderr  # the kernel's traceback is left out: the line says it all


def test_make_notebooks_is_quiet_about_outputs_this_machine_has_not_signed(tmp_path):
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "Makefile", tmp_path)
    shutil.copy(ROOT / "notebooks" / "01_data_prep.py", tmp_path / "notebooks")
    # a paired notebook with outputs, as Lab leaves it, but not signed by this machine's notary
    shutil.copy(ROOT / "outputs" / "demo" / "breast_cancer" / "01_data_prep.ipynb", tmp_path / "notebooks")
    out = subprocess.run(
        ["make", "-s", "notebooks", f"PY={sys.executable}"], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0 and (out.stdout + out.stderr).strip() == "", out.stdout + out.stderr
    assert jupytext.read(tmp_path / "notebooks" / "01_data_prep.ipynb").cells[-1].get("outputs") is not None


def test_plain_papermill_prints_no_unencrypted_tcp_warning(tmp_path):
    """The kernel of a plain papermill run listens on 127.0.0.1 with no CurveZMQ keys; ipykernel's
    warning about it was the first thing every documented papermill command printed."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "in.ipynb")
    cmd = [sys.executable, "-m", "papermill", "in.ipynb", "out.ipynb"]
    out = subprocess.run(
        cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300, env=_with_kernel_config(tmp_path)
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert nbformat.read(tmp_path / "out.ipynb", 4).cells[0].outputs[0]["text"] == "42\n"
    assert UNENCRYPTED not in out.stdout + out.stderr, out.stderr[-2000:]


def test_a_kernel_listening_beyond_loopback_still_warns(tmp_path):
    """The warning is left out on loopback only: a kernel bound to every address keeps it."""
    import ipykernel
    import ipykernel.kernelapp

    if UNENCRYPTED not in Path(ipykernel.kernelapp.__file__).read_text(encoding="utf-8"):
        pytest.skip(f"ipykernel {ipykernel.__version__} prints no such warning (it came later)")
    connection, _ = jupyter_client.write_connection_file(str(tmp_path / "kernel.json"), ip="0.0.0.0")
    kernel = subprocess.Popen(
        [sys.executable, "-m", "ipykernel_launcher", "-f", connection],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_with_kernel_config(tmp_path),
    )
    try:
        seen = ""
        for line in kernel.stderr:  # the warning comes before the kernel binds its sockets
            seen += line
            if UNENCRYPTED in line:
                break
    finally:
        kernel.kill()
        kernel.wait(timeout=30)
    assert UNENCRYPTED in seen, seen[-2000:]


def test_the_kernel_config_installs_and_leaves_a_foreign_file_alone(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    from install_kernel_config import SOURCE, install

    assert install(tmp_path).read_text() == SOURCE.read_text()
    foreign = tmp_path / "other"
    (foreign / "etc" / "ipython").mkdir(parents=True)
    (foreign / "etc" / "ipython" / SOURCE.name).write_text("c.IPKernelApp.log_level = 'DEBUG'\n")
    assert install(foreign) is None
    assert (foreign / "etc" / "ipython" / SOURCE.name).read_text() == "c.IPKernelApp.log_level = 'DEBUG'\n"


def _install_command(prefix) -> subprocess.CompletedProcess:
    tool = ROOT / "tools" / "install_kernel_config.py"
    return subprocess.run([sys.executable, str(tool), str(prefix)], capture_output=True, text=True, timeout=60)


def test_the_kernel_config_install_says_in_one_line_where_it_cannot_write(tmp_path):
    taken = tmp_path / "taken"
    (taken / "etc" / "ipython" / "ipython_kernel_config.py").mkdir(parents=True)  # a folder in the file's place
    done = _install_command(taken)
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert (
        line.startswith("error: cannot install ipython_kernel_config.py: ")
        and "is a folder; remove or rename it" in line
    )
    blocked = tmp_path / "blocked"
    (blocked / "etc").mkdir(parents=True)
    (blocked / "etc" / "ipython").write_text("")  # a file where the folder must go
    done = _install_command(blocked)
    (line,) = done.stderr.splitlines()
    assert done.returncode == 1 and line.startswith(f"error: cannot install ipython_kernel_config.py into {blocked}")
    assert "run this with an environment you can write to" in line


def test_the_kernel_config_install_on_an_unwritable_environment_is_one_line(tmp_path):
    """A folder without write permission (for root, who writes there anyway: /sys, which the
    kernel does not let anyone write)."""
    if os.geteuid() == 0:
        if not Path("/sys/kernel").is_dir():
            pytest.skip("root here, and no /sys to stand for an unwritable environment")
        done = _install_command("/sys/kernel")
        (line,) = done.stderr.splitlines()
        assert done.returncode == 1 and "Operation not permitted" in line and "Traceback" not in done.stderr
        return
    prefix = tmp_path / "env"
    (prefix / "etc").mkdir(parents=True)
    (prefix / "etc").chmod(0o500)
    try:
        done = _install_command(prefix)
    finally:
        (prefix / "etc").chmod(0o700)
    (line,) = done.stderr.splitlines()
    assert done.returncode == 1 and "Permission denied" in line and "Traceback" not in done.stderr
    assert _install_command(prefix).returncode == 0  # writable again: it installs


def test_the_sweeps_kernels_start_without_debugpys_frozen_modules_lines(capfd):
    """ipykernel 6.12 (the lowest tcclib takes) loads debugpy as a kernel starts, which on Python 3.11
    printed its four "frozen modules" lines on the sweep's console at every kernel start; the
    sweep's kernels get PYDEVD_DISABLE_FILE_VALIDATION (tcclib.util.kernel.KERNEL_ENV)."""
    from tcclib.util.kernel import kernel_manager

    km = kernel_manager()
    km.start_kernel()
    printed = []
    try:
        client = km.client()
        client.start_channels()
        client.wait_for_ready(timeout=120)
        code = "import os; print(os.environ.get('PYDEVD_DISABLE_FILE_VALIDATION'))"
        client.execute_interactive(code, output_hook=lambda m: printed.append(m["content"].get("text", "")), timeout=60)
        client.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
    assert "".join(printed).strip() == "1"
    assert "frozen modules" not in capfd.readouterr().err
