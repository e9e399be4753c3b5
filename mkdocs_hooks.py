"""mkdocs hooks of the documentation site (mkdocs.yml: ``hooks``).

Docstrings write nested indexing as shapes do, ``log_probs[i][r]``, which Markdown reads as a
reference-style link to ``r``; mkdocs-autorefs then warns that no page defines ``r``, and a
strict build fails. A one-letter index is never a cross-reference, so only that warning is
dropped: every other unresolved reference still fails the build.
"""
import logging
import re

_INDEX = re.compile(r"Could not find cross-reference target '[a-z]'$")


class _IndexNotLink(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _INDEX.search(record.getMessage())


def on_startup(command, dirty) -> None:
    # the plugin's loggers (one per module) are created on import: filter the named one of each
    for name in ("plugin", "references", "backlinks"):
        logging.getLogger(f"mkdocs.plugins.mkdocs_autorefs._internal.{name}").addFilter(_IndexNotLink())
