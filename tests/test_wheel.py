"""The wheel is what users install: built from these sources, installed non-editable in a new virtual
environment (no network: the test environment's packages are visible to it, the wheel is installed
with ``--no-deps --no-index``), it runs ``doctor`` and ``evaluate`` from another folder, and no output
names a path that only a clone has."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from tests.conftest import ROOT

SOURCES = ("pyproject.toml", "README.md", "REUSE.toml", "LICENSES", "pregen_jax")  # what the wheel is built from
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a user's shell: no path to this checkout


def _built_wheel(tmp: Path) -> Path:
    """The wheel of a copy of the sources (the checkout's own build/ folder may hold files since removed;
    pregen_jax/glossary.md, a link to docs/glossary.md there, copied as the page)."""
    source = tmp / "source"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                    "-w", str(tmp / "dist"), str(source)], check=True, capture_output=True, text=True)
    (wheel,) = (tmp / "dist").glob("pregen_jax-*.whl")
    return wheel


def _venv_with(wheel: Path, tmp: Path) -> Path:
    """A new virtual environment that sees the test environment's packages (a path file) and holds the
    wheel, installed non-editable; its bin folder."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip())
    outer = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    # after the venv's own site-packages: the wheel's pregen_jax comes first, an editable install's is hidden
    (target / "test_environment.pth").write_text("".join(f"{path}\n" for path in outer))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True, text=True)
    return venv / "bin"


def test_the_wheel_installed_in_a_new_venv_runs_doctor_and_evaluate_elsewhere(tmp_path):
    wheel = _built_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "pregen_jax/glossary.md" in names and "pregen_jax/pipeline/demo/demo_quick.toml" in names
    assert not [n for n in names if n.startswith(("tests/", "docs/", "benchmarks/", "experiments/"))]
    bin_folder = _venv_with(wheel, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = lambda *argv: subprocess.run([str(bin_folder / "pregen-search"), *argv], cwd=elsewhere, check=True,
                                       capture_output=True, text=True, timeout=300, env=USER_ENV)
    where = subprocess.run([str(bin_folder / "python"), "-c", "import pregen_jax; print(pregen_jax.__file__)"],
                           cwd=elsewhere, check=True, capture_output=True, text=True, env=USER_ENV).stdout
    assert where.startswith(str(tmp_path / "venv")), where  # the wheel's copy, not the checkout's
    doctor = run("doctor")
    refs = {"images": [{"id": i} for i in range(6)],
            "annotations": [{"image_id": i, "id": 10 * i + j, "caption": f"A dog number {i} runs, {j} times."}
                            for i in range(6) for j in range(3)]}
    (elsewhere / "refs.json").write_text(json.dumps(refs))
    (elsewhere / "res.json").write_text(json.dumps([{"image_id": i, "caption": f"a dog {i} runs"} for i in range(6)]))
    evaluated = run("evaluate", "--references", "refs.json", "--captions", "res.json",
                    "--metrics", "Bleu_4,CIDEr,ROUGE_L", "--out", "out")
    assert "signature: CIDEr|" in evaluated.stdout and (elsewhere / "out" / "scores.json").is_file()
    words = Path(evaluated.stdout.splitlines()[-1].removeprefix("words: "))
    assert words.is_file() and words.is_relative_to(tmp_path / "venv")  # the glossary the wheel carries
    for output in (doctor.stdout, doctor.stderr, evaluated.stdout, evaluated.stderr):
        assert str(ROOT) not in output and "../shared" not in output and "docs/" not in output, output

