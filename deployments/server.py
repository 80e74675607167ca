"""A local Prefect server on the loopback interface, started and stopped by simweb.

``simweb orchestrate up`` and the integration tests use :class:`LocalPrefectServer`: it runs
``prefect server start --host 127.0.0.1 --port N`` as a child process with analytics off,
waits until ``/api/health`` answers, and stops the process (and only it) on exit.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 4200
# A cold start (database migrations on a fresh PREFECT_HOME) took ~30 s on two shared cores.
STARTUP_TIMEOUT_SECONDS = 180.0

QUIET_ENV = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
}


#: The settings that tell the Prefect UI where its API is (the second is the older name).
UI_API_URL_SETTINGS = ("PREFECT_SERVER_UI_API_URL", "PREFECT_UI_API_URL")


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def api_url(port: int, host: str = LOOPBACK) -> str:
    return f"http://{host}:{port}/api"


def is_healthy(api: str, timeout: float = 2.0) -> bool:
    """True when a Prefect API answers its health check at ``api`` (".../api")."""
    try:
        with urllib.request.urlopen(f"{api.rstrip('/')}/health", timeout=timeout) as response:
            return response.status == 200 and response.read().strip() == b"true"
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ServerFailed(RuntimeError):
    """The Prefect server process exited or did not become healthy in time."""


class LocalPrefectServer:
    """``prefect server start`` bound to 127.0.0.1, as a context manager.

    ``prefect_home`` isolates the server's database (tests pass a temporary folder); by
    default the caller's ``PREFECT_HOME`` applies. The server's output goes to ``log_path``.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        prefect_home: str | os.PathLike | None = None,
        log_path: str | os.PathLike | None = None,
        startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
    ) -> None:
        self.port = port if port is not None else free_port()
        self.prefect_home = Path(prefect_home) if prefect_home is not None else None
        home = self.prefect_home or Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect"))
        self.log_path = Path(log_path) if log_path is not None else home / f"simweb-server-{self.port}.log"
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen | None = None

    @property
    def api_url(self) -> str:
        return api_url(self.port)

    @property
    def ui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def environment(self) -> dict[str, str]:
        """The environment a client of this server needs (API URL, analytics off, home)."""
        env = dict(QUIET_ENV, PREFECT_API_URL=self.api_url)
        if self.prefect_home is not None:
            env["PREFECT_HOME"] = str(self.prefect_home)
        return env

    def start(self) -> "LocalPrefectServer":
        if port_in_use(self.port):
            raise ServerFailed(
                f"port {self.port} on {LOOPBACK} is already in use; expected a free port for the Prefect "
                f"server — stop whatever listens there or choose another one with --port"
            )
        env = dict(os.environ)
        env.update(QUIET_ENV)
        env.pop("PREFECT_API_URL", None)  # the server must not talk to another server
        # `prefect server start --port N` serves the UI an api_url made of PREFECT_SERVER_API_HOST
        # and _PORT (default 4200), not of --port, and a profile's PREFECT_API_URL wins over both:
        # the UI would then ask another port's API ("Can't connect to Server API"). Name ours,
        # unless the user set the UI's API address (a server behind a proxy).
        env["PREFECT_SERVER_API_HOST"], env["PREFECT_SERVER_API_PORT"] = LOOPBACK, str(self.port)
        if not any(env.get(name) for name in UI_API_URL_SETTINGS):
            env["PREFECT_UI_API_URL"] = self.api_url
        if self.prefect_home is not None:
            self.prefect_home.mkdir(parents=True, exist_ok=True)
            env["PREFECT_HOME"] = str(self.prefect_home)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "prefect", "server", "start", "--host", LOOPBACK, "--port", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                # Its own session: Ctrl-C in the terminal reaches only us, so the deployments
                # are paused while the server still answers, and then we stop the server.
                start_new_session=True,
                # And it never outlives us, even if we are killed (Linux).
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise ServerFailed(
                    f"the Prefect server exited with code {self.process.returncode} while starting; "
                    f"its output:\n{self.log_tail()}"
                )
            if is_healthy(self.api_url):
                return
            time.sleep(0.5)
        raise ServerFailed(
            f"the Prefect server did not answer {self.api_url}/health within {self.startup_timeout:.0f} s; "
            f"its output:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no output)"

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server process: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        process, self.process = self.process, None
        if process is not None:
            stop_process(process, timeout)

    def __enter__(self) -> "LocalPrefectServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to send SIGTERM when the parent process exits."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the caller's finally still stops the server
        pass


def stop_process(process: subprocess.Popen, timeout: float = 20.0) -> None:
    """Terminate a child process we started, killing it if it does not exit in ``timeout``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)


def stop_process_group(process: subprocess.Popen, signum: int = signal.SIGINT, timeout: float = 30.0) -> None:
    """Stop a child started with ``start_new_session=True`` and everything it spawned:
    ``signum`` to the group, then SIGKILL to the group after ``timeout`` seconds."""
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left of the group (workers, flow runs)
    except ProcessLookupError:
        pass
    process.wait(timeout)
