"""calibtut.run.claims: one verdict vocabulary and one shape for the paper-vs-ours claims tables."""

from __future__ import annotations

import matplotlib.colors as mcolors
import pandas as pd
import pytest

from calibtut.run import VERDICT_COLOURS, Verdict, verdict_table

# the vocabularies the four chapters used before they shared one (regression study 6, covariate shift 6 and 5's
# authors' network, quantile regularization 5, Venn-ADMIT 8)
_CHAPTER_VOCABULARIES = (
    ("holds", "direction holds, not significant", "does not hold", "not testable at this size", "not run",
     "not judged"),
    ("holds", "does not hold", "not testable at this size", "not run", "reproduced", "differs"),
    ("holds", "does not hold", "not run"),
    ("holds", "does not hold", "not run", "not testable: network < 1 - α", "not testable: nothing admitted",
     "vacuous: nothing admitted"),
)


def test_one_vocabulary_covers_every_chapter():
    assert set().union(*_CHAPTER_VOCABULARIES) == {str(v) for v in Verdict}
    # a verdict is the string it reads: tables compare, save and show it as such
    assert Verdict.HOLDS == "holds" and f"{Verdict.NOT_RUN}" == "not run"
    assert pd.Series(["holds"]).eq(Verdict.HOLDS).all()


def test_every_verdict_has_its_own_colour():
    assert set(VERDICT_COLOURS) == set(Verdict)
    assert len({mcolors.to_hex(c) for c in VERDICT_COLOURS.values()}) == len(Verdict)


def test_verdict_table_puts_the_verdicts_first_as_plain_strings():
    rows = [{"claim": "C1", "paper": 0.9, "verdict": Verdict.HOLDS},
            {"claim": "C2", "paper": 0.1, "verdict": "not run"}]
    table = verdict_table(rows)
    assert table.columns.tolist() == ["verdict", "claim", "paper"]
    assert table["verdict"].tolist() == ["holds", "not run"]
    assert all(type(v) is str for v in table["verdict"])
    frame = pd.DataFrame(rows, index=[5, 7]).assign(**{"ours (ci)": ["differs", "reproduced"]})
    two = verdict_table(frame, verdicts=("ours (ci)", "verdict"))
    assert two.columns.tolist() == ["ours (ci)", "verdict", "claim", "paper"] and two.index.tolist() == [0, 1]


def test_verdict_table_refuses_words_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"rows\['verdict'\] holds \['probably'\]"):
        verdict_table([{"claim": "C1", "verdict": "probably"}])
    with pytest.raises(ValueError, match="lacks column"):
        verdict_table([{"claim": "C1"}])
    with pytest.raises(TypeError, match="rows must be"):
        verdict_table("holds")
    with pytest.raises(TypeError, match="verdicts must be"):
        verdict_table([{"verdict": "holds"}], verdicts="verdict")
