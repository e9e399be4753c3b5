# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""The Stanford PTB tokenizer of pycocoevalcap's CoreNLP 3.4.1 jar, run once per call as COCOEvalCap runs it."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ... import processes
from ..jvm import java_command, java_env

MAIN = "edu.stanford.nlp.process.PTBTokenizer"
OPTIONS = ("-preserveLines", "-lowerCase")  # pycocoevalcap's: one output line per input line, tokens lower-cased


def corenlp_jar() -> Path:
    """The CoreNLP 3.4.1 jar that pycocoevalcap ships beside its tokenizer wrapper."""
    from pycocoevalcap.tokenizer import ptbtokenizer
    return Path(ptbtokenizer.__file__).parent / ptbtokenizer.STANFORD_CORENLP_3_4_1_JAR


def command(input_file: str) -> list[str]:
    """The java command line that tokenizes ``input_file`` (UTF-8, one caption a line), through the one
    launcher (postgen/jvm.py: which Java, charset and locale pinned)."""
    return java_command(["-cp", str(corenlp_jar()), MAIN, *OPTIONS, input_file])


def run_jar(lines: list[str]) -> list[str]:
    """The jar's output line for each of ``lines`` (str[n] -> str[n]; none may hold a line break).

    The input goes through a temporary file in tempfile's folder (nothing is written beside the
    installed jar); the jar writes one output line per input line, the last without a newline."""
    fd, name = tempfile.mkstemp(prefix="pregen-ptb-", suffix=".txt")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write("\n".join(lines).encode("utf-8"))
        done = subprocess.run(command(name), capture_output=True, stdin=subprocess.DEVNULL, env=java_env(),
                              preexec_fn=processes.die_with_parent)  # no JVM outlives the caller
    finally:
        os.remove(name)
    if done.returncode != 0:
        raise RuntimeError(f"PTB tokenizer (java): exit status {done.returncode}: "
                           f"{done.stderr.decode(errors='replace').strip()[-500:]}")
    out = done.stdout.decode("utf-8").split("\n")
    if len(out) != len(lines):
        raise RuntimeError(f"PTB tokenizer (java): {len(out)} output lines for {len(lines)} captions")
    return out
