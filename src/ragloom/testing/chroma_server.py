"""A real Chroma server for tests: ``chroma run`` from the chromadb package, on a loopback port.

::

    with ChromaServer(tmp_path) as server:
        config = Config.from_dict({"store": {"backend": "chroma",
                                             "chroma": {"host": server.host, "port": server.port}}})
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from ..errors import ServiceUnavailableError


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """Starts ``chroma run --path DIR --host 127.0.0.1 --port PORT`` with telemetry off; always stops it."""

    def __init__(self, data_dir: Path, startup_seconds: float = 60.0) -> None:
        self.data_dir = data_dir
        self.host = "127.0.0.1"
        self.port = free_port()
        self.startup_seconds = startup_seconds
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir / "chroma-server.log"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ChromaServer:
        executable = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
        if executable is None:
            raise ServiceUnavailableError("the `chroma` command is missing; install it with: pip install 'ragloom[chroma]'")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [executable, "run", "--path", str(self.data_dir / "data"), "--host", self.host, "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            )
        self._wait_until_up()
        return self

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + self.startup_seconds
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        log = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
        raise ServiceUnavailableError(f"the Chroma server did not come up on {self.url}; its log ends:\n{log}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
