"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a page missing
from the navigation or an API page whose module moved fails it), into a temporary folder."""
import os
import subprocess
import sys

from tests.conftest import ROOT


def test_docs_site_builds_strict(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "commands" / "index.html").is_file()


def test_the_site_builds_to_the_default_folder_which_git_ignores():
    """``mkdocs build`` writes site/ (mkdocs' default: no hidden folder), and git ignores it."""
    site_dirs = [line.split(":", 1)[1].split("#")[0].strip() for line in (ROOT / "mkdocs.yml").read_text().splitlines()
                 if line.startswith("site_dir:")]
    assert site_dirs in ([], ["site"]), site_dirs
    assert "site/" in (ROOT / ".gitignore").read_text().splitlines()


def test_the_glossary_explains_the_words_outputs_use():
    """docs/glossary.md, which every command's output names in its last line, has a heading for each
    word users meet in the outputs (issue 40 item 5)."""
    from pregen_jax.commands.base import GLOSSARY
    headings = "\n".join(line for line in (ROOT / GLOSSARY).read_text().splitlines() if line.startswith("#"))
    for word in ("post-gen", "pre-gen", "tier names", "tier space", "strata", "decoding unknown", "calibration models",
                 "prior_rank", "assist", "MCB set", "misplaced share", "p_adj", "fingerprint", "units"):
        assert word in headings, word


def test_the_api_pages_plain_text_copy_is_current():
    """docs/reference/api/*.md read without the site: each holds its names' signatures and docstrings
    as text (scripts/api_pages.py writes them); a changed docstring or signature needs the script rerun."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("api_pages", ROOT / "scripts" / "api_pages.py")
    api_pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(api_pages)
    assert api_pages.main(["--check"]) == 0, "run: python3 scripts/api_pages.py"
    text = (ROOT / "docs" / "reference" / "api" / "evaluation.md").read_text()
    assert "function evaluate(references, captions, *, names=None, split: 'str' = 'test'" in text
