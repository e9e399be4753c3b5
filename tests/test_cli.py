"""The command line: every subcommand is there, and --help imports nothing heavy (it answers at once)."""
import os
import subprocess
import sys

HEAVY = ("jax", "pandas", "scipy", "pycocoevalcap", "gensim", "flax", "matplotlib", "pydantic")


def test_help_imports_nothing_heavy():
    code = ("import sys\nfrom pregen_jax import cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
    for command in ("demo", "run", "rank", "predict", "select", "export-references", "mutt", "unit-tests",
                    "judgments", "doctor"):
        assert command in done.stdout


def test_every_subcommand_has_help(capsys):
    from pregen_jax import cli
    parser = cli.build_parser()
    subcommands = parser._subparsers._group_actions[0].choices
    aliases = {"score": "predict"}  # the old name, kept for one version
    for name, sub in subcommands.items():
        assert sub.format_help().startswith(f"usage: pregen-search {aliases.get(name, name)}")


def test_evaluate_caps_numpys_blas_threads_before_numpy_starts(tmp_path):
    """evaluate sets OPENBLAS_NUM_THREADS (where unset) before numpy is first imported, which reads it."""
    code = ("import os, sys\nos.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
            "from pregen_jax import cli\nfrom pregen_jax.commands import evaluate\n"
            "seen = []\n"
            "evaluate._evaluated = lambda args: seen.append(('numpy' in sys.modules, os.environ['OPENBLAS_NUM_THREADS']))\n"
            "cli.main(['evaluate', '--references', 'r.json', '--captions', 'c.json'])\n"
            "print(seen)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[(False, '4')]", done.stdout + done.stderr


def test_the_command_ends_after_its_exit_functions_with_its_output_whole(tmp_path):
    """``pregen-search`` skips the interpreter's teardown (``cli._exit_without_teardown``): the exit
    functions still run, output larger than a pipe's buffer arrives whole (C's printf's too), the exit
    code is kept (None is 0, as for sys.exit), a closed stdout is no error, and a thread that is not a
    daemon is waited for."""
    code = ("import atexit\nfrom pregen_jax import cli\n"
            "atexit.register(lambda: open('ran', 'w').write('yes'))\n"
            "print('x' * 200_000)\n"
            "cli._exit_without_teardown(3)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 3 and done.stdout == "x" * 200_000 + "\n", done.stderr
    assert (tmp_path / "ran").read_text() == "yes"
    code = ("import ctypes\nfrom pregen_jax import cli\n"
            "ctypes.CDLL(None).printf(b'from C\\n')\n"
            "cli._exit_without_teardown(4)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONUNBUFFERED": ""})
    assert done.returncode == 4 and done.stdout == "from C\n", done.stderr
    done = subprocess.run([sys.executable, "-c", "from pregen_jax import cli\ncli._exit_without_teardown(None)"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and not done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-c", "import sys\nfrom pregen_jax import cli\nassert sys.stdout is None\n"
                           "cli._exit_without_teardown(0)"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, cwd=tmp_path, preexec_fn=lambda: os.close(1))
    assert done.returncode == 0 and not done.stderr, done.stderr
    code = ("import threading, time\nfrom pregen_jax import cli\n"
            "def late():\n    time.sleep(0.3)\n    open('late', 'w').write('done')\n"
            "threading.Thread(target=late).start()\n"
            "cli._exit_without_teardown(0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "late").read_text() == "done", done.stderr
