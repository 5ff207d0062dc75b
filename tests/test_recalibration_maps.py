"""Classifier recalibration maps: Platt scaling, histogram binning, vector and matrix scaling.

Each map is tested three ways: against a peer on random inputs (scikit-learn's
sigmoid calibration, netcal's histogram binning, an independent torch L-BFGS
fit), against tiny hand-computed cases, and against a statistical property
over many seeds (with the band it uses said where it is checked).
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import special

from calibtut.metrics import assign_bins
from calibtut.recalibration import (
    HistogramBinning,
    MatrixScaling,
    PlattScaling,
    VectorScaling,
    histogram_binned_probs,
    matrix_scaled_probs,
    platt_scaled_probs,
    vector_scaled_probs,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_peers import _PassthroughClassifier  # noqa: E402  (a 'prefit' classifier returning its input)


def _draw_classes(rng, probs):
    return (rng.random((len(probs), 1)) > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, probs.shape[1] - 1)


# --- Platt scaling ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_platt_binary_matches_sklearn_sigmoid_calibration(seed):
    """scikit-learn's ``_sigmoid_calibration`` (the internals of ``CalibratedClassifierCV(method="sigmoid")``)
    fits ``1 / (1 + exp(A s + B))`` with Platt's targets by L-BFGS-B stopped at a gradient of 1e-6 on the
    summed loss; ours is a Newton fit to 1e-12. Tolerance 1e-6 on the probabilities: the peer's stopping
    error (1.7e-8 the largest seen over 20 seeds)."""
    from sklearn.calibration import _sigmoid_calibration

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 1500))
    s = rng.normal(size=n) * rng.uniform(0.5, 5)
    y = (rng.random(n) < special.expit(rng.uniform(-3, 3) * s + rng.normal())).astype(int)
    w = rng.uniform(0.1, 2, size=n) if seed % 2 else None
    a, b = _sigmoid_calibration(s, y, sample_weight=w)
    model = PlattScaling().fit(s, y, cal_weight=w)
    np.testing.assert_allclose(model.predict_proba(s)[:, 1], special.expit(-(a * s + b)), atol=1e-6, rtol=0)
    np.testing.assert_allclose([model.coef_[0], model.intercept_[0]], [-a, -b], atol=1e-5 * (1 + abs(a)))


def test_platt_one_vs_rest_matches_calibrated_classifier_cv():
    """Multiclass: scikit-learn fits one sigmoid per column of ``predict_proba`` against ``y == k`` and
    divides by the row sum; so does ours on the same columns (3e-9 seen; tolerance 1e-6 as above)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(4, 0.7), size=500)
    y = _draw_classes(rng, probs**1.5 / np.sum(probs**1.5, axis=1, keepdims=True))
    peer = CalibratedClassifierCV(FrozenEstimator(_PassthroughClassifier(4).fit()), method="sigmoid").fit(probs, y)
    test = rng.dirichlet(np.full(4, 0.7), size=200)
    np.testing.assert_allclose(PlattScaling().fit(probs, y).predict_proba(test), peer.predict_proba(test),
                               atol=1e-6, rtol=0)


def test_platt_hand_case_reproduces_frequencies():
    """Two score values, hard targets: the saturated logistic model gives each score its frequency,
    1/4 at s = 0 and 3/4 at s = 1, so a = logit(3/4) - logit(1/4) = 2 ln 3 and b = -ln 3."""
    s = [0, 0, 0, 0, 1, 1, 1, 1]
    y = [1, 0, 0, 0, 1, 1, 1, 0]
    model = PlattScaling(targets="hard").fit(s, y)
    np.testing.assert_allclose([model.coef_[0], model.intercept_[0]], [2 * np.log(3), -np.log(3)], atol=1e-9)
    np.testing.assert_allclose(model.predict_proba([0.0, 1.0])[:, 1], [0.25, 0.75], atol=1e-9)
    # Platt's targets: positives (N+ + 1)/(N+ + 2) = 5/6, negatives 1/(N- + 2) = 1/6 (N+ = N- = 4): each
    # score gets its mean target, (5/6 + 3/6)/4 = 1/3 at s = 0 and (3 * 5/6 + 1/6)/4 = 2/3 at s = 1
    np.testing.assert_allclose(platt_scaled_probs(s, y, [0.0, 1.0])[:, 1], [1 / 3, 2 / 3], atol=1e-9)


def test_platt_statistical_parameter_recovery_over_seeds():
    """Data drawn from p = sigmoid(2 s - 1) (200 seeds, n = 2000, hard targets): the mean fitted slope and
    intercept lie within 4 standard errors of (2, -1); the MLE's O(1/n) bias (about 0.002 here) is a
    fraction of one standard error (about 0.004)."""
    fits = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        s = rng.normal(size=2000)
        y = (rng.random(2000) < special.expit(2 * s - 1)).astype(int)
        model = PlattScaling(targets="hard").fit(s, y)
        fits.append([model.coef_[0], model.intercept_[0]])
    fits = np.array(fits)
    se = fits.std(axis=0, ddof=1) / np.sqrt(len(fits))
    assert np.all(np.abs(fits.mean(axis=0) - [2.0, -1.0]) < 4 * se), (fits.mean(axis=0), se)


def test_platt_checks_its_arguments():
    with pytest.raises(ValueError, match="targets"):
        PlattScaling(targets="soft").fit([0.0, 1.0], [0, 1])
    with pytest.raises(ValueError, match="max_iter"):
        PlattScaling(max_iter=0).fit([0.0, 1.0], [0, 1])
    with pytest.raises(RuntimeError, match="not fitted"):
        PlattScaling().predict_proba([0.0])
    model = PlattScaling().fit([0.0, 1.0, 2.0, 3.0], [0, 0, 1, 1])
    with pytest.raises(ValueError, match="test_logits"):
        model.predict_proba([[0.0, 1.0]])
    with pytest.raises(ValueError, match="cal_y"):
        PlattScaling().fit([0.0, 1.0], [0, 2])


# --- histogram binning ------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 4])
def test_histogram_binning_matches_netcal(n_classes):
    """netcal 1.4's ``HistogramBinning`` (equal-width bins): a binary map of the class-1 probability, or
    one map per class renormalised. Continuous inputs put no value on an edge, where netcal's fit
    (closed on the left) and transform (closed on the right) disagree; the outputs are then equal."""
    from netcal.binning import HistogramBinning as NetcalBinning

    rng = np.random.default_rng(n_classes)
    probs = rng.dirichlet(np.ones(n_classes), size=1000)
    y = _draw_classes(rng, probs)
    test = rng.dirichlet(np.ones(n_classes), size=300)
    ours = HistogramBinning(n_bins=10).fit(probs, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if n_classes == 2:
            peer = NetcalBinning(bins=10).fit(probs[:, 1], y).transform(test[:, 1])
            mine = ours.values_[1][assign_bins(test[:, 1], ours.edges_[1])]
        else:
            peer = NetcalBinning(bins=10).fit(probs, y).transform(test)
            mine = ours.predict_proba(test)
    np.testing.assert_allclose(mine, peer, atol=1e-12, rtol=0)


def test_histogram_binning_equal_mass_bins_match_netcal_fit():
    """Equal-mass bins: netcal fits them (its transform does not implement them) with numpy quantile
    edges and closed-left bins, our ``closed="left"``; edges and bin values agree to 1e-12."""
    from netcal.binning import HistogramBinning as NetcalBinning

    rng = np.random.default_rng(7)
    p = rng.beta(2, 5, size=997)
    y = (rng.random(997) < p**0.8).astype(int)
    peer = NetcalBinning(bins=8, equal_intervals=False).fit(p, y)
    ours = HistogramBinning(n_bins=8, strategy="quantile", closed="left").fit(np.column_stack([1 - p, p]), y)
    np.testing.assert_allclose(ours.edges_[1], peer._bin_bounds[0], atol=1e-12)
    np.testing.assert_allclose(ours.values_[1], peer._bin_map, atol=1e-12)


def test_histogram_binning_hand_cases():
    probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]]
    model = HistogramBinning(n_bins=2).fit(probs, [0, 1, 1, 1])
    np.testing.assert_allclose(model.values_, [[0.0, 0.5], [0.5, 1.0]])
    # top-label: confidences .9 .8 .7 .8 all in (.5, 1], 3 of 4 argmaxes right -> .75 for the top class
    out = histogram_binned_probs(probs, [0, 0, 1, 0], [[0.7, 0.3], [0.1, 0.9]], n_bins=2, mode="top-label")
    np.testing.assert_allclose(out, [[0.75, 0.25], [0.25, 0.75]])
    # an empty bin maps to its midpoint; weights make a weighted frequency
    model = HistogramBinning(n_bins=4).fit([[0.1, 0.9], [0.2, 0.8]], [1, 0], cal_weight=[3.0, 1.0])
    np.testing.assert_allclose(model.values_[1], [0.125, 0.375, 0.625, 0.75])


def test_histogram_binning_statistical_bin_values_over_seeds():
    """A miscalibrated forecaster c = p^2 of the true probability p ~ U(0, 1): each equal-width bin
    [a, b] of c should map to E[p | c in bin] = (sqrt(a) + sqrt(b)) / 2 (p is uniform on [sqrt(a), sqrt(b)]).
    Over 300 seeds (n = 2000 each) every bin's mean value lies within 4 standard errors of it."""
    values = []
    for seed in range(300):
        rng = np.random.default_rng(seed)
        p = rng.uniform(size=2000)
        y = (rng.random(2000) < p).astype(int)
        c = p**2
        values.append(HistogramBinning(n_bins=5).fit(np.column_stack([1 - c, c]), y).values_[1])
    values = np.array(values)
    a, b = np.linspace(0, 1, 6)[:-1], np.linspace(0, 1, 6)[1:]
    truth = (np.sqrt(a) + np.sqrt(b)) / 2
    se = values.std(axis=0, ddof=1) / np.sqrt(len(values))
    assert np.all(np.abs(values.mean(axis=0) - truth) < 4 * se), (values.mean(axis=0), truth, se)


def test_histogram_binning_checks_its_arguments():
    with pytest.raises(ValueError, match="mode"):
        HistogramBinning(mode="top").fit([[0.5, 0.5]], [0])
    with pytest.raises(ValueError, match="n_bins"):
        HistogramBinning(n_bins=0).fit([[0.5, 0.5]], [0])
    with pytest.raises(RuntimeError, match="not fitted"):
        HistogramBinning().predict_proba([[0.5, 0.5]])
    with pytest.raises(ValueError, match="test_probs"):
        HistogramBinning().fit([[0.5, 0.5]], [0]).predict_proba([[0.2, 0.3, 0.5]])


# --- vector and matrix scaling ----------------------------------------------------------------


def _torch_affine_fit(z, y, full, l2=0.0):
    """An independent fit: torch's L-BFGS with a strong-Wolfe line search on the same objective."""
    logits, labels, k = torch.tensor(z), torch.tensor(y), z.shape[1]
    eye = torch.eye(k, dtype=torch.float64)
    weight = eye.clone().requires_grad_() if full else torch.ones(k, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(k, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], lr=1, max_iter=5000, tolerance_grad=1e-12, tolerance_change=1e-15,
                            history_size=50, line_search_fn="strong_wolfe")

    def scores():
        return logits @ weight.T + bias if full else logits * weight + bias

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(scores(), labels) + l2 * ((weight - eye) ** 2).sum() * full
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return torch.softmax(scores(), dim=1).numpy()


@pytest.mark.parametrize("seed", range(2))
def test_vector_and_matrix_scaling_match_an_independent_torch_fit(seed):
    """Both objectives are convex with unique fitted probabilities; scipy's L-BFGS-B and torch's L-BFGS
    (strong Wolfe) both stop at gradients near 1e-10, and the probabilities agree to 1e-6 (1.1e-7 the
    largest seen over four seeds)."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    z = 2 * rng.normal(size=(500, 4))
    y = _draw_classes(rng, special.softmax(z * rng.uniform(0.3, 2, 4) + rng.normal(size=4), axis=1))
    np.testing.assert_allclose(VectorScaling().fit(z, y).predict_proba(z), _torch_affine_fit(z, y, False),
                               atol=1e-6, rtol=0)
    for l2 in (0.0, 0.01):
        np.testing.assert_allclose(MatrixScaling(l2=l2).fit(z, y).predict_proba(z),
                                   _torch_affine_fit(z, y, True, l2), atol=1e-6, rtol=0)


@pytest.mark.parametrize("seed", range(2))
def test_matrix_scaling_converges_on_uncentred_log_probabilities(seed):
    """Log-probabilities of a confident 10-class model (column means near -12.5, as the MNIST
    network's of Foundations 4) on 6,000 points: before the fit was whitened, W and b were so
    coupled that L-BFGS-B stopped at its 1,000-iteration cap (gradients 1.4e-7 to 2.3e-7 there);
    whitened, it stops by its own tolerance in under 100 iterations. The first-order conditions
    of the mean NLL, sum_i (p_i - e_{y_i}) (z_i, 1) / n = 0, hold to 1e-7 (2.3e-8 the largest seen)."""
    rng = np.random.default_rng(seed)
    logits = 8 * rng.normal(size=(6000, 10))
    z = special.log_softmax(logits, axis=1)
    y = _draw_classes(rng, special.softmax(0.3 * logits + rng.normal(size=10), axis=1))
    model = MatrixScaling().fit(z, y)
    assert model.n_iter_ < model.max_iter
    residual = (model.predict_proba(z) - np.eye(10)[y]) / len(y)
    assert np.abs(residual.T @ z).max() < 1e-7
    assert np.abs(residual.sum(axis=0)).max() < 1e-7


def test_vector_and_matrix_scaling_hand_cases():
    z = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
    # labels independent of the logits: every probability 1/2
    np.testing.assert_allclose(vector_scaled_probs(z, [0, 1, 0, 1], z), 0.5, atol=1e-6)
    np.testing.assert_allclose(matrix_scaled_probs(z, [0, 1, 0, 1], z), 0.5, atol=1e-6)
    # the fitted bias makes the mean probability of each class its frequency (first-order condition)
    y = [0, 0, 0, 1]
    model = VectorScaling().fit(z, y)
    np.testing.assert_allclose(model.predict_proba(z).mean(axis=0), [0.75, 0.25], atol=1e-7)
    # a huge penalty keeps W at the identity: only the bias moves
    assert np.allclose(MatrixScaling(l2=1e8).fit(z, y).coef_, np.eye(2), atol=1e-4)


def test_vector_scaling_statistical_parameter_recovery_over_seeds():
    """Data drawn from softmax(w * z + b) with w = (0.5, 1, 1.5) (30 seeds, n = 1000): the mean fitted
    weights lie within 4 standard errors of w; the biases, identified up to a constant, are compared
    after centring."""
    w, b = np.array([0.5, 1.0, 1.5]), np.array([0.0, 0.5, -0.5])
    fits = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        z = 2 * rng.normal(size=(1000, 3))
        y = _draw_classes(rng, special.softmax(z * w + b, axis=1))
        model = VectorScaling().fit(z, y)
        fits.append(np.concatenate([model.coef_, model.intercept_ - model.intercept_.mean()]))
    fits = np.array(fits)
    se = fits.std(axis=0, ddof=1) / np.sqrt(len(fits))
    assert np.all(np.abs(fits.mean(axis=0) - np.concatenate([w, b - b.mean()])) < 4 * se)


def test_affine_scaling_checks_its_arguments():
    with pytest.raises(ValueError, match="l2"):
        MatrixScaling(l2=-1.0).fit([[0.0, 1.0], [1.0, 0.0]], [1, 0])
    with pytest.raises(ValueError, match="max_iter"):
        VectorScaling(max_iter=0).fit([[0.0, 1.0], [1.0, 0.0]], [1, 0])
    with pytest.raises(RuntimeError, match="not fitted"):
        MatrixScaling().predict_proba([[0.0, 1.0]])
    model = VectorScaling().fit([[0.0, 1.0], [1.0, 0.0]], [1, 0])
    with pytest.raises(ValueError, match="test_logits"):
        model.predict_proba([[0.0, 1.0, 2.0]])
