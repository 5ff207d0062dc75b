"""calibtut.shift: discriminator weights, calibrated discriminators, Theorem 1 terms, DANN."""

import numpy as np
import pytest
import torch
from scipy import integrate, special
from sklearn.calibration import calibration_curve

from calibtut.recalibration import TemperatureScaling
from calibtut.shift import (
    DANNHead,
    GaussianShift,
    GradientReversal,
    LogisticDiscriminator,
    MLPDiscriminator,
    SGDTemperatureScaling,
    bound_violation_search,
    discriminator_reliability,
    discriminator_weights,
    effective_sample_size,
    fit_dann,
    gaussian_bound_terms,
    grl_coefficient,
    step5_counterexample,
    theorem1_terms,
    weight_summary,
)
from calibtut.shift.discriminators import _BalancedBatches

# ---------------------------------------------------------------- weights


def test_weights_hand_cases():
    assert discriminator_weights([0.5], kind="ratio").tolist() == [1.0]
    assert discriminator_weights([0.5], kind="bound").tolist() == [1.5]
    assert discriminator_weights([0.25], kind="ratio", prior_ratio=2.0).tolist() == [6.0]
    # clamp g >= 1/(1+U): ratio weight at most U, bound weight at most U + 1/2
    assert discriminator_weights([1e-12], upper=10.0).tolist() == pytest.approx([10.0])
    assert discriminator_weights([1e-12], kind="bound", upper=10.0).tolist() == pytest.approx([10.5])
    assert discriminator_weights([1.0], kind="ratio").tolist() == [0.0]
    assert discriminator_weights([1e-12], upper=None)[0] == pytest.approx(1e12 - 1)


def test_ratio_weights_of_the_true_discriminator_are_the_density_ratio():
    shift = GaussianShift(1.0, 0.7)
    x = np.linspace(-3, 4, 50)
    assert np.allclose(discriminator_weights(shift.discriminator(x), upper=None), shift.density_ratio(x))
    assert np.allclose(discriminator_weights(shift.discriminator(x), kind="bound", upper=None),
                       shift.density_ratio(x) + 0.5)


def test_effective_sample_size_hand_and_law():
    assert effective_sample_size([2.0, 2.0, 2.0]) == pytest.approx(3.0)
    assert effective_sample_size([1.0, 1.0, 0.0, 0.0]) == pytest.approx(2.0)
    # ESS / n -> 1 / E_p[w^2], computed here by quadrature
    shift = GaussianShift(0.5, 0.8)
    second_moment = integrate.quad(lambda x: shift.density_ratio(np.array([x]))[0] ** 2 * shift.source_pdf(x),
                                   -20, 20)[0]
    x = np.random.default_rng(0).normal(size=200_000)
    assert effective_sample_size(shift.density_ratio(x)) / x.size == pytest.approx(1 / second_moment, rel=0.03)


@pytest.mark.parametrize("g", [[0.0, 0.5], [-0.1], [1.2], [np.nan], [np.inf]])
def test_bad_discriminator_output(g):
    with pytest.raises(ValueError, match="g"):
        discriminator_weights(g)


def test_bad_weight_arguments():
    with pytest.raises(ValueError, match="kind"):
        discriminator_weights([0.5], kind="odds")
    with pytest.raises(ValueError, match="prior_ratio"):
        discriminator_weights([0.5], kind="bound", prior_ratio=2.0)
    with pytest.raises(ValueError, match="upper"):
        discriminator_weights([0.5], upper=0.5)
    for bad in ([-1.0, 1.0], [np.nan, 1.0], [0.0, 0.0]):
        with pytest.raises(ValueError, match="weights"):
            effective_sample_size(bad)


def test_weight_summary_hand_case():
    s = weight_summary([1.0, 1.0, 1.0, 1.0, 6.0], top_fraction=0.4, top_k=2, quantiles=(0.0, 0.5, 1.0))
    # ESS = 10^2 / 40; the heaviest 40 % (2 points) and the 2 heaviest hold 7 of 10
    assert s["ess"] == pytest.approx(2.5) and s["ess_frac"] == pytest.approx(0.5)
    assert s["top_fraction_share"] == pytest.approx(0.7) and s["top_k_share"] == pytest.approx(0.7)
    # weights over their mean 2: 0.5 four times, 3 once
    assert (s["q0"], s["q0.5"], s["q1"], s["max_over_mean"]) == pytest.approx((0.5, 0.5, 3.0, 3.0))
    assert weight_summary(np.ones(300))["top_fraction_share"] == pytest.approx(3 / 300)  # at least one point


def test_weight_summary_matches_numpy_on_random_weights():
    w = np.random.default_rng(1).lognormal(0.0, 2.0, size=997)
    s = weight_summary(w, top_k=5, quantiles=(0.9,))
    order = np.sort(w)
    assert s["ess"] == pytest.approx(w.sum() ** 2 / np.sum(w**2))
    assert s["top_k_share"] == pytest.approx(order[-5:].sum() / w.sum())
    assert s["top_fraction_share"] == pytest.approx(order[-10:].sum() / w.sum())  # ceil(9.97) = 10 points
    assert s["q0.9"] == pytest.approx(np.percentile(w / w.mean(), 90))


def test_weight_summary_of_exponential_weights_follows_the_law():
    # Exp(1) weights: ESS / n -> E[w]^2 / E[w^2] = 1/2; the top share p of the points holds p (1 - log p)
    w = np.random.default_rng(2).exponential(size=200_000)
    s = weight_summary(w, top_fraction=0.01)
    assert s["ess_frac"] == pytest.approx(0.5, rel=0.02)
    assert s["top_fraction_share"] == pytest.approx(0.01 * (1 - np.log(0.01)), rel=0.03)


def test_discriminator_reliability_hand_case_and_balance():
    rel = discriminator_reliability([0.9, 0.9], [0.1, 0.9], n_bins=2)
    assert rel.mean_g.tolist() == pytest.approx([0.1, 0.9])
    assert rel.source_share.tolist() == pytest.approx([0.0, 2 / 3])
    assert rel.ece == pytest.approx(0.25 * 0.1 + 0.75 * (0.9 - 2 / 3))
    assert rel.brier == pytest.approx(0.5 * 0.01 + 0.25 * 0.01 + 0.25 * 0.81)
    # repeating every target point leaves the balanced curve unchanged
    again = discriminator_reliability([0.9, 0.9], [0.1, 0.1, 0.9, 0.9], n_bins=2)
    assert again.ece == pytest.approx(rel.ece) and again.brier == pytest.approx(rel.brier)


def test_discriminator_reliability_matches_scikit_learn_for_equal_domains():
    rng = np.random.default_rng(3)
    g_s, g_t = rng.beta(3, 2, size=500), rng.beta(2, 3, size=500)
    rel = discriminator_reliability(g_s, g_t, n_bins=10)
    share, mean = calibration_curve(np.r_[np.ones(500), np.zeros(500)], np.r_[g_s, g_t], n_bins=10)
    assert np.allclose(rel.source_share, share) and np.allclose(rel.mean_g, mean)


def test_the_true_discriminator_is_calibrated_and_a_sharpened_one_is_not():
    shift = GaussianShift(1.0, 1.0)
    Xs, _, Xt, _ = shift.sample(20_000, 5_000, seed=4)
    g_s, g_t = shift.discriminator(Xs[:, 0]), shift.discriminator(Xt[:, 0])
    true = discriminator_reliability(g_s, g_t)
    sharp = discriminator_reliability(special.expit(3 * special.logit(g_s)), special.expit(3 * special.logit(g_t)))
    assert true.ece < 0.02 and sharp.ece > 0.1
    # the Brier identity: E_r[(g - s)^2] = E_r[g (1 - g)] for the true g
    expected = 0.5 * np.mean(g_s * (1 - g_s)) + 0.5 * np.mean(g_t * (1 - g_t))
    assert true.brier == pytest.approx(expected, rel=0.03)


def test_diagnostics_reject_bad_input():
    for kwargs, name in (({"top_fraction": 0.0}, "top_fraction"), ({"top_k": 0}, "top_k"),
                         ({"quantiles": (1.5,)}, "quantiles")):
        with pytest.raises(ValueError, match=name):
            weight_summary([1.0, 2.0], **kwargs)
    with pytest.raises(ValueError, match="weights"):
        weight_summary([0.0, 0.0])
    with pytest.raises(ValueError, match="g_target"):
        discriminator_reliability([0.5], [1.5])
    with pytest.raises(ValueError, match="n_bins"):
        discriminator_reliability([0.5], [0.5], n_bins=0)


# ---------------------------------------------------------------- theory


def test_gaussian_shift_upper_bound():
    shift = GaussianShift(1.0, 0.7)
    x = np.linspace(-10, 10, 200_001)
    assert shift.upper == pytest.approx(shift.density_ratio(x).max(), rel=1e-8)
    assert shift.upper == pytest.approx(3.808, abs=1e-3)
    assert GaussianShift(1.0, 1.2).upper == np.inf and GaussianShift(0.0, 1.0).upper == 1.0


def test_gaussian_bound_terms_match_the_notes_table():
    # values of the exact design in ../shared/notes/papers/004 (Section 3.6), to the digits printed there
    shift = GaussianShift(1.0, 0.7)
    table = {(0, 0.5): (0.0051, 0.2889, 0.4391, 0.4391), (0, 2): (0.0658, 0.3496, 0.5324, 0.5324),
             (0.05, 1): (0.0116, 0.2954, 0.4441, 0.4652), (0.3, 1): (0.0116, 0.2954, 0.4092, 1.2371),
             (1, 1): (0.0116, 0.2954, 0.3423, 11.37)}
    for (delta, temp), expected in table.items():
        t = gaussian_bound_terms(shift, temperature=temp, perturbation=delta, n_grid=40_001)
        got = (t.calibration_error, t.target_loss, t.weighted_term, t.rhs)
        assert np.allclose(got, expected, atol=6e-5, rtol=5e-4)
        assert t.iw_loss + t.residual == pytest.approx(t.target_loss, abs=1e-12)  # Eq. (4)
        assert t.weight_error <= 2 * t.lam * t.discriminator_excess + 1e-12  # Eq. (7)
        assert t.theorem_holds


def test_gaussian_bound_terms_against_quadrature():
    shift = GaussianShift(0.5, 0.8)
    t = gaussian_bound_terms(shift, temperature=1.5, perturbation=0.0)
    eta = lambda x: special.expit(2 * x - 0.5)  # noqa: E731
    f = lambda x: special.expit((1.2 * x - 0.2) / 1.5)  # noqa: E731
    loss = lambda x: 2 * ((f(x) - eta(x)) ** 2 + eta(x) * (1 - eta(x)))  # noqa: E731
    g = lambda x: 1 / (1 + shift.density_ratio(np.array([x]))[0])  # noqa: E731
    target = integrate.quad(lambda x: loss(x) * shift.target_pdf(x), -12, 12)[0]
    weighted = integrate.quad(lambda x: loss(x) * (1 / g(x) - 0.5) * shift.source_pdf(x), -12, 12)[0]
    assert float(t.target_loss) == pytest.approx(target, rel=1e-6)
    assert float(t.weighted_term) == pytest.approx(weighted, rel=1e-6)
    # with the true g the bound reads E_q[a] + E_p[a] / 2
    source = integrate.quad(lambda x: loss(x) * shift.source_pdf(x), -12, 12)[0]
    assert float(t.rhs) == pytest.approx(target + source / 2, rel=1e-6)


def test_temperature_argmins_order_as_the_notes_say():
    shift = GaussianShift(1.0, 0.7)
    temps = np.linspace(0.5, 0.8, 301)
    terms = [gaussian_bound_terms(shift, temperature=T, n_grid=20_001) for T in temps]
    target = temps[np.argmin([t.target_loss for t in terms])]
    bound = temps[np.argmin([t.weighted_term for t in terms])]
    iw = temps[np.argmin([t.iw_loss for t in terms])]
    source = temps[np.argmin([t.weighted_term - t.iw_loss for t in terms])]  # (1/2) E_p[a]
    assert source < bound < target
    assert iw == pytest.approx(target, abs=2e-3)
    assert (source, bound, target) == pytest.approx((0.595, 0.637, 0.658), abs=2e-3)


def test_unbounded_ratio():
    # a target wider than the source: w = q/p is unbounded, lambda infinite; with the true g the
    # bound stays finite (E_q[a] + E_p[a]/2), any error in g makes it infinite (vacuous)
    shift = GaussianShift(0.5, 1.3)
    exact = gaussian_bound_terms(shift, n_grid=20_001, half_width=12.0)
    assert exact.upper == np.inf and np.isfinite(exact.rhs) and exact.theorem_holds
    assert float(exact.target_loss) == pytest.approx(float(exact.iw_loss), rel=1e-6)
    assert gaussian_bound_terms(shift, perturbation=0.1, n_grid=20_001).rhs == np.inf
    x = np.random.default_rng(0).normal(size=100_000)
    assert effective_sample_size(shift.density_ratio(x)) / x.size < 0.5  # heavy weights: much of the sample is lost


def test_step5_counterexample():
    t = step5_counterexample()
    assert float(t.residual) == pytest.approx(1.0) and float(t.step5_rhs) == pytest.approx(0.75)
    assert not t.step5_holds
    assert float(t.residual) <= float(t.step5_corrected_rhs) + 1e-12
    assert float(t.calibration_error) == pytest.approx(1.8) and float(t.rhs) == pytest.approx(2.994, abs=1e-3)
    assert t.theorem_holds


def test_random_search_breaks_step5_not_the_theorem():
    step5_gap, theorem_gap = bound_violation_search(5000, seed=1)
    assert step5_gap > 0.1
    assert theorem_gap <= 1e-12


def test_corrected_step_and_eq7_hold_on_random_instances():
    rng = np.random.default_rng(2)
    p, q = rng.dirichlet(np.ones(4), size=3000), rng.dirichlet(np.ones(4), size=3000)
    upper = (q / p).max(axis=1, keepdims=True)
    g_hat = np.clip(p / (p + q) + rng.uniform(-0.4, 0.4, size=p.shape), 1 / (1 + upper), 1)
    t = theorem1_terms(p, q, g_hat, 2.0 * rng.integers(0, 2, size=p.shape))
    assert np.all(t.residual <= t.step5_corrected_rhs + 1e-12)
    assert np.all(t.weight_error <= 2 * t.lam * t.discriminator_excess + 1e-12)
    assert np.allclose(t.iw_loss + t.residual, t.target_loss)


def test_theory_input_checks():
    with pytest.raises(ValueError, match="loss"):
        theorem1_terms([0.5, 0.5], [0.5, 0.5], [0.5, 0.5], [3.0, 0.0])
    with pytest.raises(ValueError, match="supp"):
        theorem1_terms([1.0, 0.0], [0.5, 0.5], [0.5, 0.5], [1.0, 0.0])
    with pytest.raises(ValueError, match="g_hat"):
        theorem1_terms([0.5, 0.5], [0.5, 0.5], [0.0, 0.5], [1.0, 0.0])
    with pytest.raises(ValueError, match="scale"):
        GaussianShift(0.0, -1.0)


# ---------------------------------------------------------------- discriminators


def test_logistic_discriminator_recovers_the_true_ratio():
    # logit g = -log w is quadratic in x: logistic regression on (x, x^2) is well specified
    shift = GaussianShift(1.0, 0.7)
    rng = np.random.default_rng(3)
    xs, xt = rng.normal(size=10_000), rng.normal(1.0, 0.7, size=10_000)
    feats = lambda x: np.column_stack([x, x**2])  # noqa: E731
    d = LogisticDiscriminator(C=100.0, seed=0).fit(feats(xs), feats(xt))
    grid = np.linspace(-0.5, 2.0, 26)  # where both domains have mass
    w_hat = d.weights(feats(grid), upper=None)
    assert np.allclose(np.log(w_hat), shift.log_density_ratio(grid), atol=0.15)
    assert 0.7 < d.temperature_ < 1.4  # a well-specified model needs little recalibration


def test_temperature_calibrates_an_overconfident_discriminator():
    # a tiny penalty on separable-looking inputs scaled up: the temperature brings the logit back
    rng = np.random.default_rng(4)
    xs, xt = rng.normal(size=(3000, 1)), rng.normal(0.5, 1.0, size=(3000, 1))
    d = LogisticDiscriminator(seed=0).fit(xs, xt)
    true_logit = -(0.5 * np.linspace(-2, 2, 9) - 0.125)
    d.pipeline_[-1].coef_ *= 5
    d.pipeline_[-1].intercept_ *= 5
    raw = d.pipeline_.decision_function(np.linspace(-2, 2, 9)[:, None])
    assert np.abs(raw - true_logit).max() > 1.0
    Xv_s, Xv_t = rng.normal(size=(3000, 1)), rng.normal(0.5, 1.0, size=(3000, 1))
    from calibtut.shift.discriminators import _stack

    X, s, w = _stack(Xv_s, Xv_t)
    z = d.pipeline_.decision_function(X)
    d.temperature_ = TemperatureScaling(loss="brier").fit(np.column_stack([0 * z, z]), s, cal_weight=w).temperature_
    assert d.temperature_ == pytest.approx(5.0, rel=0.25)
    assert np.abs(d.decision_function(np.linspace(-2, 2, 9)[:, None]) - true_logit).max() < 0.3


def test_mlp_discriminator_is_seeded_and_sensible():
    rng = np.random.default_rng(5)
    Xs, Xt = rng.normal(size=(300, 2)), rng.normal(1.5, 1.0, size=(300, 2))
    a = MLPDiscriminator(hidden=16, epochs=10, lr=1e-2, seed=0).fit(Xs, Xt)
    b = MLPDiscriminator(hidden=16, epochs=10, lr=1e-2, seed=0).fit(Xs, Xt)
    grid = np.array([[-1.0, -1.0], [0.75, 0.75], [2.5, 2.5]])
    assert np.array_equal(a.predict_source_proba(grid), b.predict_source_proba(grid))
    g = a.predict_source_proba(grid)
    assert g[0] > 0.75 and g[2] < 0.25 and 0.25 < g[1] < 0.75


def test_mlp_discriminator_runs_the_paper_codes_schedule():
    # SGD with momentum, StepLR and batches of equal source and target halves, the shorter domain cycled
    rng = np.random.default_rng(6)
    Xs, Xt = rng.normal(size=(300, 2)), rng.normal(1.5, 1.0, size=(120, 2))
    d = MLPDiscriminator(hidden=8, epochs=5, lr=0.05, optimizer="sgd", momentum=0.9, lr_step=2, patience=None,
                         balanced_batches=True, seed=0).fit(Xs, Xt)
    assert d.history_.lr == pytest.approx([0.05, 0.05, 0.025, 0.025, 0.0125])
    assert len(d.history_.train_loss) == 5
    g = d.predict_source_proba([[-1.0, -1.0], [2.5, 2.5]])
    assert g[0] > g[1]
    batches = _BalancedBatches(210, 84, 50)(torch.Generator().manual_seed(0))
    assert len(batches) == 5  # ceil(210 / 50)
    for idx in batches:
        assert (idx < 210).sum() == 50 and (idx >= 210).sum() == 50
    # over one epoch the shorter domain is cycled: all of its 84 points were drawn
    assert set(torch.cat(batches)[torch.cat(batches) >= 210].tolist()) == set(range(210, 294))


def test_discriminator_seed_is_a_setting_as_in_scikit_learn():
    # an int seed gives the same split at every fit; a Generator goes on with its stream
    rng = np.random.default_rng(9)
    Xs, Xt = rng.normal(size=(200, 2)), rng.normal(1.0, 1.0, size=(200, 2))
    d = LogisticDiscriminator(seed=3)
    first = d.fit(Xs, Xt).temperature_
    assert d.fit(Xs, Xt).temperature_ == first
    g = LogisticDiscriminator(seed=np.random.default_rng(3))
    assert g.fit(Xs, Xt).temperature_ == first
    assert g.fit(Xs, Xt).temperature_ != first


def test_discriminator_input_checks():
    with pytest.raises(ValueError, match="X_target has 3 features"):
        LogisticDiscriminator().fit(np.zeros((10, 2)), np.zeros((10, 3)))
    d = LogisticDiscriminator(seed=0).fit(np.random.default_rng(0).normal(size=(20, 2)),
                                          np.random.default_rng(1).normal(size=(20, 2)))
    with pytest.raises(ValueError, match="features"):
        d.predict_source_proba(np.zeros((3, 5)))
    with pytest.raises(RuntimeError, match="not fitted: call fit first"):
        LogisticDiscriminator().predict_source_proba(np.zeros((3, 2)))
    with pytest.raises(RuntimeError, match="not fitted"):
        MLPDiscriminator().weights(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="leaves no training"):
        LogisticDiscriminator(val_fraction=0.01).fit(np.zeros((10, 2)), np.zeros((10, 2)))


# ---------------------------------------------------------------- importance-weighted temperature scaling


def _logits_and_labels(rng, n=3000, k=4, temperature=2.0):
    logits = 3 * rng.normal(size=(n, k))
    p = special.softmax(logits / temperature, axis=1)
    labels = (rng.random((n, 1)) > p.cumsum(1)).sum(1)
    return logits, labels


def test_weighted_nll_temperature_matches_scikit_learn():
    calibration = pytest.importorskip("sklearn.calibration")
    if not hasattr(calibration, "_TemperatureScaling"):
        pytest.skip("this scikit-learn has no _TemperatureScaling")
    rng = np.random.default_rng(6)
    logits, labels = _logits_and_labels(rng)
    w = rng.gamma(2.0, size=len(labels))
    ours = TemperatureScaling(loss="nll").fit(logits, labels, cal_weight=w).temperature_
    ref = calibration._TemperatureScaling().fit(logits, labels, sample_weight=w)
    assert ours == pytest.approx(1 / ref.beta_, rel=1e-6)


def test_importance_weighted_temperature_targets_the_target_optimum():
    # weights q/p on source data give (in expectation) the target objective
    rng = np.random.default_rng(7)
    shift = GaussianShift(1.0, 0.7)
    xs, xt = rng.normal(size=20_000), rng.normal(1.0, 0.7, size=20_000)

    def logits_labels(x):
        eta = special.expit(2 * x - 0.5)
        return np.column_stack([0 * x, 1.2 * x - 0.2]), (rng.random(x.size) < eta).astype(int)

    zs, ys = logits_labels(xs)
    zt, yt = logits_labels(xt)
    target = TemperatureScaling(loss="brier").fit(zt, yt).temperature_
    iw = TemperatureScaling(loss="brier").fit(zs, ys, cal_weight=shift.density_ratio(xs)).temperature_
    plain = TemperatureScaling(loss="brier").fit(zs, ys).temperature_
    bound = TemperatureScaling(loss="brier").fit(zs, ys, cal_weight=shift.density_ratio(xs) + 0.5).temperature_
    assert abs(iw - target) < abs(plain - target)
    assert min(plain, target) < bound < max(plain, target)


@pytest.mark.parametrize("loss", ["brier", "nll"])
def test_sgd_temperature_matches_brent(loss):
    rng = np.random.default_rng(8)
    logits, labels = _logits_and_labels(rng, n=1000)
    w = rng.exponential(size=1000) + 0.5
    ts = SGDTemperatureScaling(loss=loss, epochs=60, lr=0.5, seed=0).fit(logits, labels, cal_weight=w)
    assert ts.temperature_ == pytest.approx(ts.exact_temperature_, rel=1e-3)
    again = SGDTemperatureScaling(loss=loss, epochs=60, lr=0.5, seed=0).fit(logits, labels, cal_weight=w)
    assert again.temperature_ == ts.temperature_


def test_sgd_temperature_rejects_bad_input():
    logits, labels = _logits_and_labels(np.random.default_rng(0), n=50)
    with pytest.raises(ValueError, match="cal_weight"):
        SGDTemperatureScaling().fit(logits, labels, cal_weight=-np.ones(50))
    with pytest.raises(ValueError, match="lr"):
        SGDTemperatureScaling(lr=-1.0).fit(logits, labels)


# ---------------------------------------------------------------- DANN


def test_gradient_reversal_gradients():
    x = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    v = torch.randn(5, 3, dtype=torch.float64)
    # forward: the identity, as finite differences see it
    step, e = 1e-6, torch.zeros_like(x)
    e[2, 1] = 1.0
    with torch.no_grad():
        fd = (GradientReversal.apply(x + step * e, 0.7) - GradientReversal.apply(x - step * e, 0.7)) / (2 * step)
    assert torch.allclose(fd, e)
    # backward: -c times the incoming gradient
    (grad,) = torch.autograd.grad(GradientReversal.apply(x, 0.7), x, v)
    assert torch.allclose(grad, -0.7 * v)


def test_dann_gradients_through_the_reversal():
    model = DANNHead(4, 3, hidden=6, hidden_d=5, dropout=0.0, seed=0).double()
    z = torch.randn(8, 4, dtype=torch.float64, requires_grad=True)
    s = torch.tensor([1.0, 0.0] * 4, dtype=torch.float64)

    def plain(inputs):  # discriminator loss without the reversal layer
        return torch.mean((torch.sigmoid(model.disc(model.psi(inputs)).squeeze(-1)) - s) ** 2)

    assert torch.autograd.gradcheck(plain, (z,))  # autograd agrees with finite differences
    coeff = 0.3
    reversed_loss = torch.mean((torch.sigmoid(model.discriminate(z, coeff)) - s) ** 2)
    assert torch.isclose(reversed_loss, plain(z))  # same value: the layer only acts on gradients
    psi_params, disc_params = list(model.psi.parameters()), list(model.disc.parameters())
    g_plain = torch.autograd.grad(plain(z), [z, *psi_params, *disc_params])
    g_rev = torch.autograd.grad(reversed_loss, [z, *psi_params, *disc_params])
    n_flip = 1 + len(psi_params)  # everything before the layer is reversed and scaled, D is not
    for a, b in zip(g_plain[:n_flip], g_rev[:n_flip]):
        assert torch.allclose(b, -coeff * a)
    for a, b in zip(g_plain[n_flip:], g_rev[n_flip:]):
        assert torch.allclose(a, b)


def test_grl_schedule_values():
    assert grl_coefficient(0) == 0.0
    assert grl_coefficient(1000) == pytest.approx(0.462, abs=1e-3)
    assert grl_coefficient(2000) == pytest.approx(0.762, abs=1e-3)
    assert grl_coefficient(5000) == pytest.approx(0.987, abs=1e-3)
    assert grl_coefficient(10_000) == pytest.approx(2 / (1 + np.exp(-10)) - 1)
    with pytest.raises(ValueError, match="step"):
        grl_coefficient(-1)
    assert grl_coefficient(1000, gamma=5.0) == pytest.approx(2 / (1 + np.exp(-0.5)) - 1)
    with pytest.raises(ValueError, match="gamma must be > 0, got 0.0"):
        grl_coefficient(10, gamma=0.0)


def test_arguments_are_rejected_where_they_are_given():
    # constructors store their settings unchanged; fit checks them
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="C must be > 0, got 0.0"):
        LogisticDiscriminator(C=0.0).fit(X, X)
    with pytest.raises(ValueError, match="dropout must be < 1, got 1.0"):
        MLPDiscriminator(dropout=1.0).fit(X, X)
    with pytest.raises(TypeError, match="hidden must be an integer, got 8.5"):
        MLPDiscriminator(hidden=8.5).fit(X, X)
    with pytest.raises(ValueError, match="val_fraction"):
        LogisticDiscriminator(val_fraction=1.5).fit(X, X)
    with pytest.raises(ValueError, match="seed"):
        MLPDiscriminator(seed=-1).fit(X, X)
    with pytest.raises(ValueError, match="optimizer"):
        MLPDiscriminator(optimizer="lbfgs").fit(X, X)
    with pytest.raises(ValueError, match="momentum=0.9 needs optimizer='sgd'"):
        MLPDiscriminator(momentum=0.9).fit(X, X)
    with pytest.raises(ValueError, match="lr_step must be >= 1, got 0"):
        MLPDiscriminator(lr_step=0).fit(X, X)
    with pytest.raises(ValueError, match="lr_gamma"):
        MLPDiscriminator(lr_gamma=0.0).fit(X, X)
    with pytest.raises(TypeError, match="balanced_batches must be a bool"):
        MLPDiscriminator(balanced_batches="yes").fit(X, X)
    # the design of gaussian_bound_terms: an amplitude delta >= 0 and increasing laws
    shift = GaussianShift(1.0, 0.7)
    with pytest.raises(ValueError, match="perturbation must be >= 0, got -0.1"):
        gaussian_bound_terms(shift, perturbation=-0.1)
    with pytest.raises(ValueError, match=r"true_coef\[0\] \(the slope\) must be > 0, got -2.0"):
        gaussian_bound_terms(shift, true_coef=(-2.0, 0.5))
    with pytest.raises(ValueError, match="forecast_coef must be a pair"):
        gaussian_bound_terms(shift, forecast_coef=(1.0, 0.0, 2.0))
    with pytest.raises(ValueError, match="grl_gamma must be > 0, got -1.0"):
        fit_dann(DANNHead(2, 2, seed=0), np.zeros((4, 2)), [0, 1, 0, 1], np.zeros((4, 2)), grl_gamma=-1.0)


def test_reversal_makes_features_ascend_the_discriminator_loss():
    # one SGD step on psi alone: through the reversal (c = 1) the discriminator loss goes up, without
    # it down; with c = 0 psi gets no gradient from the discriminator at all
    torch.manual_seed(0)
    z = torch.randn(64, 4)
    s = torch.cat([torch.ones(32), torch.zeros(32)])
    z[:32] += 1.0
    changes = {}
    for mode in ("plain", 0.0, 1.0):
        model = DANNHead(4, 2, hidden=8, hidden_d=8, dropout=0.0, seed=0)
        opt = torch.optim.SGD(model.psi.parameters(), lr=0.1)

        def loss():
            logit = model.disc(model.psi(z)).squeeze(-1) if mode == "plain" else model.discriminate(z, mode)
            return torch.mean((torch.sigmoid(logit) - s) ** 2)

        with torch.no_grad():
            before = float(loss())
        opt.zero_grad()
        loss().backward()
        opt.step()
        with torch.no_grad():
            changes[mode] = float(loss()) - before
    assert changes["plain"] < 0 < changes[1.0]
    assert changes[0.0] == 0.0


def test_fit_dann_learns_the_source_task_and_stays_seeded():
    g = torch.Generator().manual_seed(0)
    Zs = torch.randn(400, 5, generator=g)
    ys = (Zs[:, 0] + Zs[:, 1] > 0).long()
    Zt = torch.randn(300, 5, generator=g)
    model = DANNHead(5, 2, hidden=16, hidden_d=16, dropout=0.0, seed=0)
    hist = fit_dann(model, Zs, ys, Zt, epochs=30, batch_size=100, lr=0.1, stop_disc_loss=None, seed=0,
                    progress=False)
    acc = float((model(Zs).argmax(1) == ys).float().mean())
    assert acc > 0.9
    # same inputs in both domains: the discriminator cannot beat chance (loss 0.5 = 2 x 0.25)
    assert hist.disc_loss[-1] > 0.4
    assert hist.steps == 30 * 4
    again = DANNHead(5, 2, hidden=16, hidden_d=16, dropout=0.0, seed=0)
    fit_dann(again, Zs, ys, Zt, epochs=30, batch_size=100, lr=0.1, stop_disc_loss=None, seed=0, progress=False)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))


def test_fit_dann_stopping_rule_keeps_the_previous_epoch():
    g = torch.Generator().manual_seed(1)
    Zs = torch.randn(200, 3, generator=g)
    Zt = torch.randn(200, 3, generator=g) + 4.0  # trivially separable: the discriminator wins soon
    ys = (Zs[:, 0] > 0).long()
    model = DANNHead(3, 2, hidden=8, hidden_d=8, dropout=0.0, seed=0)
    hist = fit_dann(model, Zs, ys, Zt, epochs=200, batch_size=50, lr=0.05, stop_disc_loss=0.2, seed=0,
                    progress=False)
    assert hist.stopped and hist.disc_loss[-1] < 0.2
    assert hist.kept_epoch == len(hist.disc_loss) - 2 or hist.kept_epoch == 0
    if hist.kept_epoch > 0:
        assert hist.disc_loss[hist.kept_epoch] >= 0.2


def test_fit_dann_input_checks():
    model = DANNHead(3, 2, hidden=4, hidden_d=4, seed=0)
    with pytest.raises(ValueError, match="Z_target has 4 features"):
        fit_dann(model, torch.zeros(5, 3), torch.zeros(5), torch.zeros(5, 4), progress=False)
    with pytest.raises(ValueError, match="y_source must be integers in 0..1, got 2.0"):
        fit_dann(model, torch.zeros(5, 3), torch.full((5,), 2.0), torch.zeros(5, 3), progress=False)
    with pytest.raises(ValueError, match=r"y_source must have one entry per point \(5\)"):
        fit_dann(model, torch.zeros(5, 3), torch.zeros(4), torch.zeros(5, 3), progress=False)
    with pytest.raises(TypeError, match="DANNHead"):
        fit_dann(torch.nn.Linear(3, 2), torch.zeros(5, 3), torch.zeros(5), torch.zeros(5, 3))
