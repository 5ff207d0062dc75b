"""Tests of calibtut.experiments.regression_study.chapters: where the QR and Trunc penalties alone lead a forecast."""

import numpy as np
import pandas as pd
import pytest

from calibtut.experiments.regression_study import (
    plot_qr_scale_curve,
    qr_scale_curve,
    qr_scale_optimum,
    trunc_adam_level,
    trunc_stationary_level,
    trunc_stationary_table,
)


def test_the_authors_spacing_makes_the_optimum_over_confident():
    scales = np.geomspace(0.6, 1.2, 41)
    curve = qr_scale_curve(512, spacings=(64, "sqrt"), scales=scales, seeds=2, sort="hard")
    optimum = qr_scale_optimum(curve)
    assert list(optimum.index) == [64, 23]
    assert optimum.loc[64, "scale"] < 0.82 and optimum.loc[64, "seeds_below"] == 1.0
    assert optimum.loc[64, "scale"] < optimum.loc[23, "scale"] < 0.95
    assert optimum.loc[64, "pce"] > 0.03


def test_the_pull_depends_on_k_over_n_and_vanishes_for_small_spacings():
    scales = np.geomspace(0.6, 1.2, 41)
    same_ratio = qr_scale_optimum(qr_scale_curve(128, spacings=(16,), scales=scales, seeds=3, sort="hard"))
    assert same_ratio.loc[16, "scale"] < 0.85  # k / n = 1/8 again
    small = qr_scale_optimum(qr_scale_curve(4096, spacings=(8,), scales=scales, seeds=2, sort="hard"))
    assert small.loc[8, "scale"] > 0.95


def test_neural_sort_gives_the_hard_sort_curve():
    scales = np.geomspace(0.7, 1.1, 9)
    neural = qr_scale_curve(512, spacings=(64,), scales=scales, seeds=1)
    hard = qr_scale_curve(512, spacings=(64,), scales=scales, seeds=1, sort="hard")
    np.testing.assert_allclose(neural["penalty"], hard["penalty"], atol=0.02)
    assert neural["penalty"].idxmin() == hard["penalty"].idxmin()


def test_curve_is_deterministic_and_plots():
    a = qr_scale_curve(64, spacings=(8,), scales=[0.9, 1.0], seeds=2, sort="hard")
    pd.testing.assert_frame_equal(a, qr_scale_curve(64, spacings=(8,), scales=[0.9, 1.0], seeds=2, sort="hard"))
    ax = plot_qr_scale_curve(a)
    assert len(ax.get_legend().get_texts()) == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"spacings": 64}, TypeError, "sequence of spacing rules"),
        ({"spacings": "sqrt"}, TypeError, "sequence of spacing rules"),
        ({"spacings": ()}, ValueError, "at least one"),
        ({"spacings": (600,)}, ValueError, "smaller than"),
        ({"scales": [1.0]}, ValueError, "at least 2"),
        ({"scales": [1.0, 0.9]}, ValueError, "strictly increasing"),
        ({"scales": [0.0, 1.0]}, ValueError, "positive"),
        ({"scales": [0.5, np.nan]}, ValueError, "finite"),
        ({"seeds": 0}, ValueError, "seeds"),
        ({"n": 2}, ValueError, "n"),
        ({"sort": "bubble"}, ValueError, "sort must be"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        qr_scale_curve(**{"n": 512, "spacings": (64,), "scales": [0.9, 1.0], "seeds": 1, **kwargs})


def test_bad_curve_and_scale_are_refused():
    with pytest.raises(TypeError, match="qr_scale_curve"):
        qr_scale_optimum(pd.DataFrame({"k": [1]}))
    with pytest.raises(TypeError, match="qr_scale_curve"):
        plot_qr_scale_curve("curve")


def test_trunc_stationary_level_hand_cases_and_symmetry():
    # one point per batch: f is 0 (push up by 1) or 1 (push down by 1), so p = 1/2 at any level
    for level in (0.05, 0.3, 0.9):
        assert trunc_stationary_level(level, 1) == pytest.approx(0.5, abs=1e-9)
    assert trunc_stationary_level(0.5, 512) == pytest.approx(0.5, abs=1e-9)
    for level in (0.05, 0.2):
        assert trunc_stationary_level(level, 300) == pytest.approx(1 - trunc_stationary_level(1 - level, 300))


def test_trunc_settles_inside_and_tends_to_the_level_with_the_batch():
    coverage = [trunc_stationary_level(0.95, b) for b in (64, 512, 4096, 32768)]
    assert all(c < 0.95 for c in coverage) and coverage == sorted(coverage)
    assert coverage[-1] == pytest.approx(0.95, abs=0.003)
    table = trunc_stationary_table(levels=(0.05, 0.5, 0.95), batches=(512,))
    assert table.loc["0.95 - 0.05", 512] == pytest.approx(0.868, abs=1e-3)


@pytest.mark.parametrize(("level", "batch"), [(0.95, 512), (0.1, 128)])
def test_adam_on_trunc_alone_reaches_the_stationary_coverage(level, batch):
    reached = trunc_adam_level(level, batch=batch, steps=4000, burn_in=1000)
    assert reached == pytest.approx(trunc_stationary_level(level, batch), abs=0.004)
    assert abs(reached - level) > 0.01  # and not the level itself


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: trunc_stationary_level(1.0, 10), ValueError, "level"),
        (lambda: trunc_stationary_level(0.5, 0), ValueError, "batch"),
        (lambda: trunc_stationary_table(levels=()), ValueError, "at least one"),
        (lambda: trunc_stationary_table(batches=(0,)), ValueError, "batches"),
        (lambda: trunc_adam_level(0.5, steps=10, burn_in=10), ValueError, "burn_in"),
        (lambda: trunc_adam_level(0.5, lr=0.0), ValueError, "lr"),
    ],
)
def test_bad_trunc_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
