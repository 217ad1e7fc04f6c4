"""A cluster address that is wrong in any way ends the sweep within a bounded time, in one line.

Real servers on 127.0.0.1 only: a socket that accepts and never replies, a tiny HTTP server, one
that greets with another protocol's banner, a closed port, a real Dask scheduler with no worker.
Every test is bounded by an alarm (and by the sweep's own --connect-timeout / --worker-wait)."""

import http.server
import signal
import socket
import socketserver
import threading
import time

import pytest

from tcclib.running import cli, scale, sweep
from tcclib.running import params as param_files

LIMIT = 60  # seconds any one test may take, whatever happens


@pytest.fixture(autouse=True)
def _bounded():
    def stop(*_):
        raise TimeoutError(f"the test ran past {LIMIT} s: something hangs")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def params(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("name: c\ndatasets: [breast_cancer]\nper_dataset_notebooks: [01_data_prep]\naggregate_notebooks: []\n")
    return p


@pytest.fixture
def silent():
    """A port that accepts connections and never says anything."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_port():
    """A tiny web server (as the scheduler's dashboard port would be)."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"tcp://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


class _Banner(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
        time.sleep(0.5)


@pytest.fixture
def ssh_like():
    """A service that greets with its own protocol's banner."""
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Banner)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"tcp://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"tcp://127.0.0.1:{port}"


@pytest.fixture
def no_workers():
    """A real Dask scheduler (tcp) with no worker."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=0,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs=scale.QUIET_SCHEDULER,
        host="127.0.0.1",
        silence_logs=50,
    )
    yield cluster.scheduler_address
    cluster.close()


def _run(capsys, argv):
    """``python -m tcclib ...``: exit status, stderr, stdout, seconds."""
    t = time.monotonic()
    rc = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.err, out.out, time.monotonic() - t


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # one line, no traceback
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    "address,words",
    [
        ("", "an empty text (an unset shell variable?)"),
        ("  ", "an empty text"),
        ("garbage://host:1", "unknown address scheme 'garbage'"),
        ("tcp://host", "needs a host and a port number"),
        ("tcp://host:99999", "needs a host and a port number"),
        ("tcp://:8786", "needs a host and a port number"),
        ("host:8786", "no scheme: tcp://host:8786?"),
        ("local:x", "scheduler must be local, local:N"),
    ],
)
def test_a_malformed_address_is_a_one_line_error_at_check_and_at_run(tmp_path, capsys, params, address, words):
    rc, err, _, _ = _run(capsys, [params, "--check", "--scheduler", address])
    assert rc == 2 and words in _one_error_line(err)
    rc, err, _, _ = _run(capsys, [params, "--outputs", tmp_path / "out", "--scheduler", address])
    assert rc == 2 and words in _one_error_line(err)
    assert not (tmp_path / "out").exists()  # before any work


@pytest.mark.parametrize("value", ["''", "garbage://host:1", "tcp://host"])
def test_a_malformed_address_in_a_parameter_file(tmp_path, capsys, value):
    p = tmp_path / "c.yaml"
    p.write_text(f"name: c\ndatasets: [breast_cancer]\nscheduler: {value}\n")
    with pytest.raises(param_files.ParamsError, match="scheduler"):
        param_files.load(p)
    rc, err, _, _ = _run(capsys, [p, "--check"])
    assert rc == 2 and "scheduler" in _one_error_line(err)


def test_the_empty_option_never_means_run_here(tmp_path, params):
    with pytest.raises(sweep.SweepError, match="empty text"):
        sweep.sweep(param_files.load(params), tmp_path / "out", progress=False, scheduler="")


@pytest.mark.parametrize(
    "server,words",
    [
        ("silent", "accepts connections but nothing answered within 2 s"),
        ("http_port", "answers HTTP, not Dask's protocol"),
        ("ssh_like", "something other than Dask's protocol (b'SSH-2.0-OpenSSH"),
        ("closed_port", "nothing listens on port"),
    ],
)
def test_an_address_that_is_not_a_scheduler_fails_fast_and_says_what_answered(
    tmp_path, capsys, params, request, server, words
):
    address = request.getfixturevalue(server)
    for extra in (["--check"], ["--outputs", tmp_path / "out"]):
        rc, err, _, _ = _run(capsys, [params, *extra, "--scheduler", address, "--connect-timeout", "2"])
        line = _one_error_line(err)
        assert rc == 2 and words in line and address in line, line  # (the bounded probe's own words)
    assert not (tmp_path / "out" / "c" / "breast_cancer").exists()  # nothing ran


def test_the_connection_bound_covers_the_handshake(silent):
    """Dask's own Client waits on a silent port beyond its timeout: the probe, bounded by the
    connect timeout, answers first (its words; the seconds it takes: bench/stop_times.py)."""
    with pytest.raises(scale.ScaleError, match="nothing answered within 1.5 s"):
        scale.remote_client(silent, 1.5)


def test_a_scheduler_without_workers_is_an_error_after_a_bounded_wait_with_progress(
    tmp_path, capsys, params, no_workers
):
    rc, err, out, secs = _run(
        capsys, [params, "--outputs", tmp_path / "out", "--scheduler", no_workers, "--worker-wait", "3"]
    )
    line = _one_error_line(err)
    assert rc == 2 and "has no worker after 3 s" in line and f"dask worker {no_workers}" in line
    assert "--worker-wait" in line
    assert f"cluster {no_workers}: waiting for a worker" in out  # progress while waiting
    assert secs >= 3  # it waited the whole --worker-wait (how much longer: bench/stop_times.py)
    assert not (tmp_path / "out" / "c" / "breast_cancer").exists()


def test_check_passes_a_real_scheduler(capsys, params, no_workers):
    rc, err, out, _ = _run(capsys, [params, "--check", "--scheduler", no_workers])
    assert rc == 0 and "OK" in out, err


@pytest.mark.parametrize("option", ["--connect-timeout", "--worker-wait"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_bounds_must_be_positive(capsys, params, option, value):
    rc, err, _, _ = _run(capsys, [params, "--check", "--scheduler", "local", option, value])
    assert rc == 2 and "must be a positive number of seconds" in _one_error_line(err)
