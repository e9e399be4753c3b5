"""The lock of the versions tested (``constraints.txt``) against the versions installed, for ``doctor``.

The lock lives in the repository, beside ``pyproject.toml``, not in the wheel: it is what the
README's commands and CI install (``pip install -c constraints.txt -e ...``), while the package
itself keeps ranges, as a library should. So the check finds it only where the package runs from
a source checkout (an editable install); installed from a wheel, there is no lock to compare with.
"""
from __future__ import annotations

import re
from pathlib import Path

LOCK_NAME = "constraints.txt"


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them: ``Flax_Extra`` and ``flax-extra`` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()


def checkout_lock(package_dir: Path | None = None) -> Path | None:
    """``constraints.txt`` of the source checkout the package runs from, or None (a wheel install)."""
    root = (package_dir or Path(__file__).resolve().parents[1]).parent
    lock = root / LOCK_NAME
    return lock if lock.is_file() and (root / "pyproject.toml").is_file() else None


def read_lock(text: str) -> dict[str, str]:
    """{normalized name: version} from the ``name==version`` lines of a constraints file (comments,
    blank lines and environment markers after ``;`` ignored)."""
    locked = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            locked[normalized(name.split("[", 1)[0].strip())] = version.strip()
    return locked


def lock_differences(locked: dict[str, str], installed: dict[str, str]) -> tuple[list[str], list[str]]:
    """(``name installed (locked v)`` for each locked package installed at another version,
    the locked packages not installed at all); both sorted by name. Names normalized."""
    differ = [f"{name} {installed[name]} (locked {version})" for name, version in sorted(locked.items())
              if name in installed and installed[name] != version]
    return differ, [name for name in sorted(locked) if name not in installed]


def installed_versions() -> dict[str, str]:
    """{normalized name: version} of every distribution this Python sees."""
    from importlib import metadata
    return {normalized(dist.metadata["Name"]): dist.version for dist in metadata.distributions()
            if dist.metadata["Name"]}


def lock_line(lock: Path | None = None) -> str:
    """One line for ``doctor``: whether the installed versions are the locked ones."""
    lock = lock or checkout_lock()
    if lock is None:
        return (f"lock: not available (no {LOCK_NAME} beside the package: installed from a wheel; "
                "the lock lives in the repository)")
    locked = read_lock(lock.read_text(encoding="utf-8"))
    differ, missing = lock_differences(locked, installed_versions())
    line = f"lock: {lock} ({len(locked)} packages): "
    line += f"{len(differ)} differ: {', '.join(differ)}" if differ else "installed versions match"
    if missing:
        line += f"; {len(missing)} not installed (extras not installed: fine)"
    return line
