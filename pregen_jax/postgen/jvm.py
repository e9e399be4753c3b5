"""The one place post-gen metrics start and stop Java: a line-oriented JVM kept warm for a run.

A ``JavaProcess`` is started once (by a metric's constructor), fed in batches (``ask``: many
request lines, one reply line each, written in chunks small enough that neither pipe fills
while the other waits) and ended by ``close()``, which the metric set's owner calls when the run
ends (``MetricSet`` is a context manager). Nothing else in pregen-jax starts a JVM that outlives
one call.
"""
from __future__ import annotations

import subprocess
import threading

CHUNK_BYTES = 32 * 1024  # below the usual 64 KiB pipe buffer: the JVM never blocks on stdout mid-chunk


class JavaProcess:
    """A Java program that reads request lines on stdin and answers each with lines on stdout."""

    def __init__(self, command: list[str], cwd: str):
        self.command = command
        self._process = None
        self._lock = threading.Lock()
        self._process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL)

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def ask(self, lines: list[str], replies_per_line: int = 1, extra_replies: int = 0) -> list[str]:
        """Send ``lines``; return ``replies_per_line`` reply lines for each, then ``extra_replies`` more."""
        with self._lock:
            if not self.alive:
                raise RuntimeError(f"{self.command[0]}: the Java process has ended ({' '.join(self.command[:4])} ...)")
            stdin, stdout = self._process.stdin, self._process.stdout
            replies: list[str] = []
            chunk: list[bytes] = []
            size = 0
            for k, line in enumerate(lines):
                data = (line + "\n").encode()
                chunk.append(data)
                size += len(data)
                if size >= CHUNK_BYTES or k == len(lines) - 1:
                    stdin.write(b"".join(chunk))
                    stdin.flush()
                    replies.extend(self._read(stdout, len(chunk) * replies_per_line))
                    chunk, size = [], 0
            replies.extend(self._read(stdout, extra_replies))
            return replies

    def _read(self, stdout, count: int) -> list[str]:
        replies = []
        for _ in range(count):
            line = stdout.readline()
            if not line:
                raise RuntimeError(f"{' '.join(self.command[:4])} ...: Java ended before answering")
            replies.append(line.decode().strip())
        return replies

    def close(self) -> None:
        """End the JVM (idempotent)."""
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            try:
                process.stdin.close()
            except OSError:
                pass
            process.kill()
            process.wait()

    def __del__(self):
        if hasattr(self, "_lock"):
            self.close()
