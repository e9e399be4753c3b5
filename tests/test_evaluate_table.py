"""``evaluate``'s printed table stays aligned for any number of systems (issue 40, item 5)."""
import json

import pytest

from pregen_jax.cli import main
from pregen_jax.evaluation.outputs import aligned_columns
from tests.conftest import ROOT
from tests.test_caption_fit import _toy


def test_aligned_columns_are_as_wide_as_their_widest_cell():
    lines = aligned_columns([{"metric": "CIDEr", "score": "1.2345"}, {"metric": "", "score": "10.2345", "d": "+0.1"}],
                    ["metric", "score", "d"], left={"metric"})
    assert lines == ["metric    score     d", "CIDEr    1.2345", "        10.2345  +0.1"]


@pytest.mark.parametrize("systems", [1, 2, 4])
def test_the_printed_table_is_aligned_under_its_header(tmp_path, capsys, systems):
    refs, captions = _toy(30)
    coco = {"images": [{"id": i} for i in range(30)],
            "annotations": [{"image_id": i, "id": 10 * i + r, "caption": c} for i, rs in enumerate(refs)
                            for r, c in enumerate(rs)]}
    (tmp_path / "refs.json").write_text(json.dumps(coco))
    paths = []
    for k in range(systems):  # names of different lengths: a, bb_model, ...
        paths.append(tmp_path / f"{'a' * (k + 1)}{'_model' * k}.json")
        paths[-1].write_text(json.dumps([{"image_id": i, "caption": " ".join(c.split()[k:])}
                                         for i, c in enumerate(captions)]))
    assert main(["evaluate", "--references", str(tmp_path / "refs.json"), "--captions", *map(str, paths),
                 "--metrics", "Bleu_4,CIDEr", "--tokenizer", "alnum-lower", "--resamples", "1000", "--trials", "999"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[1], lines[2:2 + 2 * systems]
    assert header.split()[:2] == (["metric", "system"] if systems > 1 else ["metric", "score"])
    score_end = header.index("score") + len("score")
    for row in rows:  # every score ends under its header; every full row is as long as the header
        assert row[score_end - 6:score_end].replace(".", "").isdigit() and row[score_end:score_end + 1] == " "
        if "[" in row[score_end:] and systems > 1 and row.count("[") == 2:
            assert len(row) == len(header)
    if systems > 1:
        footer = lines[2 + 2 * systems]
        assert footer.startswith("95% BCa bootstrap intervals; d: difference to a ")
        assert (f"family of comparisons: every comparison printed (each system after the first against the first, on "
                f"every metric with intervals) ({2 * (systems - 1)} comparisons)") in footer
    from pregen_jax.commands.base import GLOSSARY
    assert lines[-1] == f"words: {GLOSSARY}" and GLOSSARY.read_text() == (ROOT / "docs" / "glossary.md").read_text()
