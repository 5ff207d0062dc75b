"""Tests of the calibration regularizers of paper 002 and of the study loss."""

import itertools

import numpy as np
import pytest
import torch
from scipy import optimize, stats

from calibtut.metrics import pce, quantile_calibration_error
from calibtut.metrics.torch import nll_mixture, pit_mixture
from calibtut.models import MixtureMLP, SQRNet
from calibtut.regularizers import (
    QuantileRegularizedLoss,
    StudyLoss,
    pce_kde_pit,
    pce_kde_quantile,
    pce_sort,
    qr_spacing_002,
    soft_sort_l2,
    trunc_penalty,
)


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def test_pce_kde_pit_tends_to_the_grid_pce():
    pit = torch.rand(500, generator=_gen(0), dtype=torch.float64)
    want = pce(pit.numpy(), levels=100)  # levels (j - 1/2) / 100
    assert float(pce_kde_pit(pit, tau=1e7)) == pytest.approx(want, abs=1e-9)
    assert float(pce_kde_pit(pit)) == pytest.approx(want, abs=0.01)


def test_pce_kde_quantile_tends_to_the_quantile_calibration_error():
    rng = np.random.default_rng(1)
    y = rng.normal(size=400)
    levels = np.sort(rng.uniform(0.01, 0.99, size=16))
    q = np.tile(stats.norm.ppf(levels, scale=0.7), (400, 1))
    want = quantile_calibration_error(y, q, levels)
    got = pce_kde_quantile(*(torch.as_tensor(a) for a in (q, y, levels)), tau=1e7)
    assert float(got) == pytest.approx(want, abs=1e-9)


def test_pce_sort_hard_is_the_sorted_pce():
    pit = torch.rand(300, generator=_gen(2), dtype=torch.float64)
    assert float(pce_sort(pit)) == pytest.approx(pce(pit.numpy()), rel=1e-12)
    assert float(pce_sort(pit, p=2)) == pytest.approx(pce(pit.numpy(), p=2), rel=1e-12)


def test_soft_sort_two_values_closed_form():
    # a < b: exact when b - a <= 1 / eps; otherwise midpoint -+ 1 / (2 eps)
    x = torch.tensor([0.9, 0.1], dtype=torch.float64)
    assert soft_sort_l2(x, strength=1.0).tolist() == pytest.approx([0.1, 0.9])
    assert soft_sort_l2(x, strength=10.0).tolist() == pytest.approx([0.45, 0.55])


def test_soft_sort_is_the_permutahedron_projection():
    # Independent oracle (Blondel et al. 2020): the ascending soft sort of x is minus the
    # Euclidean projection of w = (n, ..., 1) / eps onto the permutahedron of -x, the convex
    # hull of the n! permutations of -x; solved here as a QP over the hull's weights.
    rng = np.random.default_rng(3)
    x = rng.normal(size=4)
    for eps in (0.3, 3.0):
        w = np.arange(4, 0, -1) / eps
        vertices = np.array(list(itertools.permutations(-x)))
        res = optimize.minimize(
            lambda lam: np.sum((lam @ vertices - w) ** 2),
            np.full(len(vertices), 1 / len(vertices)),
            bounds=[(0, 1)] * len(vertices),
            constraints={"type": "eq", "fun": lambda lam: lam.sum() - 1},
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 1000},
        )
        got = soft_sort_l2(torch.as_tensor(x), strength=eps).numpy()
        np.testing.assert_allclose(got, -(res.x @ vertices), atol=1e-5)
        assert got.sum() == pytest.approx(x.sum())
    # the hard sort as soon as 1 / eps exceeds every gap: the authors' PITs at eps = 0.1
    pit = torch.rand(512, generator=_gen(4), dtype=torch.float64)
    assert torch.allclose(soft_sort_l2(pit, 0.1), torch.sort(pit).values, rtol=0, atol=1e-11)
    assert not torch.allclose(soft_sort_l2(pit, 1000.0), torch.sort(pit).values)


def test_soft_sort_gradient_matches_finite_differences():
    x = torch.tensor([0.3, -0.2, 1.5, 0.1, 0.05], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: soft_sort_l2(v, 2.0), (x,))


def _numpy_trunc(q, y, levels):
    total = np.zeros_like(q)
    for j, a in enumerate(levels):
        freq = np.mean(y <= q[:, j])
        if freq <= a:
            total[:, j] += np.maximum(y - q[:, j], 0)
        if freq >= a:
            total[:, j] += np.maximum(q[:, j] - y, 0)
    return total.mean()


def test_trunc_matches_a_loop_and_pushes_towards_coverage():
    rng = np.random.default_rng(5)
    y = rng.normal(size=200)
    levels = np.array([0.1, 0.5, 0.9])
    q = np.tile([-0.2, 0.0, 0.2], (200, 1))  # too narrow: low quantile too high, high too low
    qt = torch.tensor(q, requires_grad=True)
    value = trunc_penalty(qt, *(torch.as_tensor(a) for a in (y, levels)))
    assert float(value.detach()) == pytest.approx(_numpy_trunc(q, y, levels), rel=1e-12)
    value.backward()
    grad = qt.grad.sum(0)
    assert grad[0] > 0 and grad[2] < 0  # descent lowers q_0.1 and raises q_0.9


@pytest.mark.parametrize("penalty", ["pce-kde", "pce-sort", "trunc"])
def test_penalty_alone_recovers_the_true_scale(penalty):
    # y ~ N(0, 1), model N(0, s^2): minimising the regularizer alone over s lands near s = 1
    y = torch.randn(2000, generator=_gen(6), dtype=torch.float64)
    levels = torch.linspace(0.05, 0.95, 19, dtype=torch.float64)
    log_s = torch.tensor(np.log(0.3), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([log_s], lr=0.05)
    for _ in range(200):
        s = log_s.exp()
        if penalty == "trunc":
            q = (s * torch.distributions.Normal(0.0, 1.0).icdf(levels)).expand(len(y), -1)
            value = trunc_penalty(q, y, levels)
        else:
            pit = torch.distributions.Normal(0.0, s).cdf(y)
            value = pce_kde_pit(pit) if penalty == "pce-kde" else pce_sort(pit)
        opt.zero_grad()
        value.backward()
        opt.step()
    assert float(log_s.detach().exp()) == pytest.approx(1.0, abs=0.1)


def test_qr_on_mixtures_is_the_existing_qr_loss_with_a_mixture_cdf():
    out = MixtureMLP(2, seed=0).double().eval()(torch.randn(100, 2, generator=_gen(7), dtype=torch.float64))
    y = torch.randn(100, generator=_gen(8), dtype=torch.float64)
    ours = StudyLoss("mixture", "nll", "qr", lam=0.5)(out, y)
    reference = QuantileRegularizedLoss(
        0.5, spacing=qr_spacing_002, nll=lambda o, t: nll_mixture(t, *o), cdf=lambda o, t: pit_mixture(t, *o)
    )(out, y)
    assert float(ours) == pytest.approx(float(reference), rel=1e-12)
    assert qr_spacing_002(128) == 64 and qr_spacing_002(127) == 11


@pytest.mark.parametrize("regularizer", ["pce-kde", "pce-sort", "qr"])
def test_mixture_loss_adds_lambda_times_the_penalty(regularizer):
    out = MixtureMLP(2, seed=1).double().eval()(torch.randn(64, 2, generator=_gen(9), dtype=torch.float64))
    y = torch.randn(64, generator=_gen(10), dtype=torch.float64)
    base = StudyLoss("mixture", "crps")(out, y)
    one = StudyLoss("mixture", "crps", regularizer, lam=1.0)(out, y)
    five = StudyLoss("mixture", "crps", regularizer, lam=5.0)(out, y)
    assert float(StudyLoss("mixture", "crps", regularizer, lam=0.0)(out, y)) == float(base)
    assert float(five - base) == pytest.approx(5 * float(one - base), rel=1e-9)


def test_sqr_loss_draws_seeded_random_levels():
    qf = SQRNet(2, hidden=(8,), seed=0).eval()(torch.zeros(4, 2))
    y = torch.zeros(4)
    loss = StudyLoss("sqr", "crps", "trunc", lam=1.0)
    torch.manual_seed(0)
    a = loss(qf, y)
    torch.manual_seed(0)
    assert torch.equal(a, loss(qf, y))
    assert not torch.equal(a, loss(qf, y))


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("gaussian",), {}, "model must be one of"),
        (("mixture", "pinball"), {}, "score must be one of"),
        (("sqr", "nll"), {}, "no density"),
        (("mixture", "nll", "entropy"), {}, "regularizer must be one of"),
        (("mixture", "nll", "trunc"), {}, "applies to"),
        (("sqr", "crps", "pce-sort"), {}, "applies to"),
        (("mixture", "nll", "qr"), {"lam": -0.1}, "lam must be"),
        (("sqr",), {"levels": [0.5, 0.2]}, "strictly increasing"),
    ],
)
def test_study_loss_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        StudyLoss(*args, **kwargs)


def test_penalty_argument_errors():
    with pytest.raises(ValueError, match="tau"):
        pce_kde_pit(torch.rand(5), tau=0.0)
    with pytest.raises(ValueError, match="p must be"):
        pce_sort(torch.rand(5), p=0.5)
    with pytest.raises(ValueError, match="sort must be"):
        pce_sort(torch.rand(5), sort="neural")
    with pytest.raises(ValueError, match="shape"):
        trunc_penalty(torch.zeros(3, 2), torch.zeros(3), torch.tensor([0.5]))
    with pytest.raises(ValueError, match="strength"):
        soft_sort_l2(torch.rand(3), strength=-1.0)
    with pytest.raises(ValueError, match="strength must be > 0, got 0.0"):
        pce_sort(torch.rand(5), strength=0.0)  # checked even for the hard sort, which ignores it
    with pytest.raises(ValueError, match=r"levels must lie in \(0, 1\)"):
        pce_kde_quantile(torch.zeros(3, 2), torch.zeros(3), torch.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match=r"levels must lie in \(0, 1\)"):
        trunc_penalty(torch.zeros(3, 2), torch.zeros(3), torch.tensor([0.0, 0.5]))
    # Unsorted and tied levels stay valid (training draws random levels).
    q, y = torch.zeros(3, 2), torch.zeros(3)
    assert float(trunc_penalty(q, y, torch.tensor([0.7, 0.7]))) == 0.0
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        qr_spacing_002(0)
