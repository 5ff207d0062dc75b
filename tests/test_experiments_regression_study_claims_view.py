"""Chapter 6's compact view of paper 002's claims: the short verdict table and the verdict figure."""

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from calibtut.experiments.regression_study import (
    CLAIM_SHORT,
    claims_overview,
    claims_table,
    plot_claim_verdicts,
)
from calibtut.papers import paper_table
from calibtut.run import VERDICT_COLOURS, Verdict


def _verdicts(verdicts):
    claims = [f"C{i + 1}" for i in range(len(verdicts))]
    return pd.DataFrame({"claim": claims, "statement": "s", "verdict": verdicts, "evidence": "e"})


def test_every_claim_has_a_short_form_and_every_verdict_a_colour():
    assert list(CLAIM_SHORT) == list(paper_table("regression_study", "claims")["claim"])
    assert all(len(text) <= 60 for text in CLAIM_SHORT.values())
    assert set(VERDICT_COLOURS) == set(Verdict)
    assert len({mcolors.to_hex(c) for c in VERDICT_COLOURS.values()}) == len(VERDICT_COLOURS)


def test_claims_overview_keeps_the_verdicts_and_drops_the_evidence():
    table = claims_table(_verdicts(["holds", "not run"]), _verdicts(["does not hold", "holds"]), label="full")
    overview = claims_overview(table)
    assert overview.columns.tolist() == ["ours (ci)", "ours (full)", "claim", "in short"]
    assert overview.values.tolist() == [["holds", "does not hold", "C1", CLAIM_SHORT["C1"]],
                                        ["not run", "holds", "C2", CLAIM_SHORT["C2"]]]
    with pytest.raises(ValueError, match="C99"):
        claims_overview(table.assign(claim=["C1", "C99"]))
    with pytest.raises(TypeError, match="table"):
        claims_overview(None)


def test_plot_claim_verdicts_colours_the_grid_and_places_directional_parts():
    table = claims_table(_verdicts(["holds", "not run", "not testable at this size"]),
                         _verdicts(["does not hold", "holds", "holds"]), label="full")
    parts = pd.DataFrame({"claim": ["C1", "C1", "C2", "C3"], "rule": ["direction", "little effect", "tend to",
                                                                      "significantly"],
                          "verdict": ["does not hold", "holds", "holds", "holds"],
                          "agree": [3, np.nan, 30, 0], "differ": [10, np.nan, 40, 0]})
    fig = plot_claim_verdicts(table, parts)
    grid, right = fig.axes[:2]
    # one bar per claim and run, coloured by its verdict, column by column
    colours = [mcolors.to_hex(bar.get_facecolor()) for bar in grid.patches]
    expected = [*table["ours (ci)"], *table["ours (full)"]]
    assert colours == [mcolors.to_hex(VERDICT_COLOURS[v]) for v in expected]
    # the direction part of C1 (3 of 10) and the tend-to part of C2 (30 of 40); not the effect-size part,
    # nor C3's part without a dataset that differs
    points = right.collections[0].get_offsets()
    assert np.allclose(points, [[0.3, 0], [0.75, 1]])
    plt.close(fig)
    assert len(plot_claim_verdicts(table).axes) == 1
    plt.close("all")
    with pytest.raises(ValueError, match="maybe"):
        plot_claim_verdicts(table.assign(**{"ours (ci)": "maybe"}))
    with pytest.raises(ValueError, match="parts"):
        plot_claim_verdicts(table, parts.drop(columns="agree"))
