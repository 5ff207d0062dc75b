"""Chapter 8's verdict table (calibtut.experiments.venn_admit.claims) and its figure, on hand-made rows."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from calibtut.experiments.venn_admit import (
    CONFORMAL_BASELINES,
    claims_vs_paper,
    plot_claim_accuracy,
)
from calibtut.papers import paper_table


def _single(dataset, method, cls, n, accuracy, n_test=1000, seed=0):
    return {"table": "singletons", "dataset": dataset, "seed": seed, "method": method, "class": cls, "n": n,
            "accuracy": accuracy, "share": n / n_test, "n_test": n_test}


def _model(dataset, split, method, accuracy):
    return {"table": "model", "dataset": dataset, "seed": 0, "split": split, "method": method,
            "accuracy": accuracy, "n": np.nan, "class": np.nan, "share": np.nan, "n_test": np.nan}


def _rows(network=0.85):
    """One split of Sentiment and SentimentOOD whose verdicts are computed by hand in the tests below."""
    rows = [_model("sentiment", "calibration", "memory layer", network), _model("sentiment", "calibration", "KNN", 0.84),
            _model("sentiment", "test", "memory layer", 0.85), _model("sentiment", "test", "KNN", 0.86),
            _model("sentiment_ood", "test", "memory layer", 0.70), _model("sentiment_ood", "test", "KNN", 0.65)]
    for method in CONFORMAL_BASELINES:
        # the weakest class is 0; its best baseline (APS) is 0.75 on 100 points: (0.75 - 0.9) / 0.03 = -5 sd
        rows += [_single("sentiment_ood", method, "0", 100, 0.75 if method == "APS" else 0.7),
                 _single("sentiment_ood", method, "1", 100, 0.95)]
    # Venn-ADMIT: Sentiment's classes at 0.95 and 0.85 on 100 points (-1.67 sd: holds); SentimentOOD's 0.8 on 400
    # (-6.67 sd: does not hold)
    rows += [_single("sentiment", "Venn-ADMIT", "0", 100, 0.95), _single("sentiment", "Venn-ADMIT", "1", 100, 0.85),
             _single("sentiment_ood", "Venn-ADMIT", "0", 400, 0.8)]
    # admissions of class "all": in order on Sentiment; on SentimentOOD Venn-ADMIT admits more than Venn-ADMIT-w
    admitted = {"sentiment": {"ADMIT": 300, "Venn-ADMIT-w": 200, "Venn-ADMIT": 150, "Venn-ADMIT_qK": 150,
                              "Venn-ADMIT_qK-w": 180},
                "sentiment_ood": {"ADMIT": 600, "Venn-ADMIT-w": 400, "Venn-ADMIT": 500, "Venn-ADMIT_qK": 300,
                                  "Venn-ADMIT_qK-w": 400}}
    rows += [_single(d, m, "all", n, 0.9) for d, counts in admitted.items() for m, n in counts.items()]
    rows.append(_single("sentiment", "RAPS_size", "all", 300, 0.9))
    return pd.DataFrame(rows)


def _by_claim(table):
    return table.assign(key=table["claim"].str.split(":").str[0]).set_index(["key", "task"])


def test_claims_vs_paper_hand_computed_verdicts():
    table = _by_claim(claims_vs_paper(_rows()))
    assert table.loc[("C10", "all"), "ours (ci)"] == pytest.approx(0.05)
    assert table.loc[("C10", "all"), "paper"] == pytest.approx(0.03)  # Table 2's F0.5 on GrammarOOD
    assert table.loc[("C10", "all"), "verdict"] == "does not hold"
    assert table.loc[("C4", "SentimentOOD"), "ours (ci)"] == pytest.approx(0.75)
    assert table.loc[("C4", "SentimentOOD"), "verdict"] == "holds"
    assert table.loc[("C6", "Sentiment"), ["ours (ci)", "verdict"]].tolist() == [pytest.approx(0.85), "holds"]
    assert table.loc[("C6", "SentimentOOD"), ["ours (ci)", "verdict"]].tolist() == [pytest.approx(0.8),
                                                                                   "does not hold"]
    # 7 of the 8 (block, pair) comparisons in order
    assert table.loc[("C7/C8", "all"), ["ours (ci)", "verdict"]].tolist() == [pytest.approx(7 / 8), "does not hold"]
    assert table.loc[("C12", "all"), ["ours (ci)", "verdict"]].tolist() == [pytest.approx(0.6), "does not hold"]
    assert table.loc[("C15", "Sentiment"), ["ours (ci)", "verdict"]].tolist() == [
        pytest.approx(0.3), "not testable: network < 1 - α"]
    # tasks the rows lack are "not run", with NaN in our columns
    assert table.loc[("C6", "Protein"), "verdict"] == "not run"
    assert table.loc[("C6", "Protein"), ["ours (ci)", "ours (full)"]].isna().all()
    # qk_kept moves the C12 threshold; a network above 1 - alpha makes C15 testable
    assert _by_claim(claims_vs_paper(_rows(), qk_kept=0.5)).loc[("C12", "all"), "verdict"] == "holds"
    assert _by_claim(claims_vs_paper(_rows(network=0.95))).loc[("C15", "Sentiment"), "verdict"] == "does not hold"


def test_claims_vs_paper_paper_column_reads_its_tables():
    table = _by_claim(claims_vs_paper(_rows()))
    t5 = paper_table("venn_admit", "table5").set_index(["dataset", "method", "class", "metric"])["value"]
    # C6 on Sentiment: the lower of Venn-ADMIT's two class accuracies in Table 5
    assert table.loc[("C6", "Sentiment"), "paper"] == min(t5.loc["Sentiment", "Venn-ADMIT", c, "accuracy"]
                                                          for c in "01")
    # C4 on GrammarOOD: the error class, its best conformal baseline (0.34)
    assert table.loc[("C4", "GrammarOOD"), "paper"] == max(t5.loc["GrammarOOD", m, "1", "accuracy"]
                                                           for m in CONFORMAL_BASELINES)
    # the paper's own tables keep the order of the propositions, and lose a quarter on GrammarOOD's qK-w
    assert table.loc[("C7/C8", "all"), "paper"] == 1
    assert table.loc[("C12", "all"), "paper"] == pytest.approx(0.75)


def test_claims_vs_paper_prefers_the_full_run_and_says_when_nothing_is_admitted():
    protein = pd.DataFrame([_single("protein", "Venn-ADMIT", c, 0, np.nan) for c in ("0", "1", "2")]
                           + [_single("sentiment", "Venn-ADMIT", c, 100, 0.5) for c in "01"])
    table = _by_claim(claims_vs_paper(_rows(), protein))
    assert table.loc[("C6", "Protein"), "verdict"] == "vacuous: nothing admitted"
    assert np.isnan(table.loc[("C6", "Protein"), "ours (full)"])
    # the full run decides Sentiment's C6 although the ci run holds
    assert table.loc[("C6", "Sentiment"), ["ours (ci)", "ours (full)", "verdict"]].tolist() == [
        pytest.approx(0.85), pytest.approx(0.5), "does not hold"]
    # rows run at another level are left out
    other = protein.assign(alpha=0.2)
    assert _by_claim(claims_vs_paper(_rows(), other)).loc[("C6", "Protein"), "verdict"] == "not run"


def test_claims_vs_paper_refuses_bad_input():
    with pytest.raises(TypeError, match="ci"):
        claims_vs_paper(None)
    with pytest.raises(ValueError, match="full"):
        claims_vs_paper(_rows(), _rows().drop(columns="n_test"))
    with pytest.raises(ValueError, match="qk_kept"):
        claims_vs_paper(_rows(), qk_kept=0.0)
    with pytest.raises(ValueError, match="alpha"):
        claims_vs_paper(_rows(), alpha=1.5)


def test_plot_claim_accuracy_draws_one_panel_per_task_and_marks_empty_cells():
    cells = pd.DataFrame({"dataset": ["A", "A", "B"], "method": "APS", "class": ["0", "1", "0"], "metric": "accuracy",
                          "paper": [0.95, 0.8, 0.9], "ours (full)": [0.9, np.nan, 0.7]})
    fig = plot_claim_accuracy(cells, ["APS"], {"A": {"0": "x", "1": "y"}, "B": {"0": "x"}})
    assert [ax.get_title() for ax in fig.axes] == ["A", "B"]
    assert [t.get_text() for t in fig.axes[0].texts] == ["none"] and not fig.axes[1].texts
    assert fig.get_size_inches()[0] <= 7.0
    plt.close(fig)
    with pytest.raises(TypeError, match="methods"):
        plot_claim_accuracy(cells, "APS", {"A": {"0": "x"}})
    with pytest.raises(ValueError, match="cells"):
        plot_claim_accuracy(cells.drop(columns="paper"), ["APS"], {"A": {"0": "x"}})
