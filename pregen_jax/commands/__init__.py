"""The subcommands of ``pregen-search``, one module each.

Each module defines ``COMMAND``, a ``Command``: its name, one line of help, the arguments it
adds to its parser, and the function that runs it. That function checks every input once (a
bad one raises ``ValueError`` naming the file, line, key or option, before any work) and calls
the library; printing the answer is the command's job, not the library's. Modules import only
``argparse`` at load time (the library when they run), so that ``pregen-search --help``
answers at once.

To add a subcommand: a module here with a ``COMMAND``, and its name in ``cli.COMMANDS``.
"""
from .base import Command

__all__ = ["Command"]
