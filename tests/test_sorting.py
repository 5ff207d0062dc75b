"""Tests of NeuralSort (relaxed permutation matrices)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from calibtut.regularizers import (
    abs_diff_row_sums,
    hard_sort_matrix,
    neural_sort_matrix,
    soft_sort,
)


def _reference_matrix(s, tau):
    """Grover et al. (2019), Eq. 5, written out entry by entry in numpy."""
    n = len(s)
    out = np.empty((n, n))
    for i in range(1, n + 1):
        logits = np.array([((n + 1 - 2 * i) * s[j] - sum(abs(s[j] - s[l]) for l in range(n))) / tau for j in range(n)])
        w = np.exp(logits - logits.max())
        out[i - 1] = w / w.sum()
    return out


def test_matches_entrywise_reference():
    s = np.array([0.3, -1.2, 2.0, 0.7, 0.1])
    for tau in (0.5, 2.0):
        got = neural_sort_matrix(torch.as_tensor(s), tau).numpy()
        np.testing.assert_allclose(got, _reference_matrix(s, tau), rtol=1e-12, atol=1e-15)


def test_row_sums_match_quadratic_definition_and_gradient():
    s = torch.randn(2, 3, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(4), requires_grad=True)
    fast = abs_diff_row_sums(s)
    slow = (s.unsqueeze(-1) - s.unsqueeze(-2)).abs().sum(-1)
    torch.testing.assert_close(fast, slow)
    w = torch.randn(2, 3, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    (g_fast,) = torch.autograd.grad((fast * w).sum(), s)
    (g_slow,) = torch.autograd.grad((slow * w).sum(), s)
    torch.testing.assert_close(g_fast, g_slow)


def test_rows_are_probability_vectors():
    s = torch.randn(3, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    p = neural_sort_matrix(s, 0.3)
    assert p.shape == (3, 7, 7)
    assert bool((p >= 0).all())
    torch.testing.assert_close(p.sum(-1), torch.ones(3, 7, dtype=torch.float64))


def test_converges_to_hard_sort_as_tau_shrinks():
    # Scores with gaps of exactly 1/n: the error vanishes once gap/tau is large.
    n = 20
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    s = perm.to(torch.float64) / n
    hard = hard_sort_matrix(s)
    errors = [float((neural_sort_matrix(s, tau) - hard).abs().max()) for tau in (1.0, 0.1, 0.01, 1e-3)]
    assert all(a >= b for a, b in zip(errors, errors[1:]))
    assert errors[0] > 0.1
    assert errors[-1] < 1e-12
    torch.testing.assert_close(soft_sort(s, 1e-3), torch.sort(s).values)
    torch.testing.assert_close(soft_sort(s, 1e-3, descending=True), torch.sort(s, descending=True).values)


def test_hard_sort_matrix_sorts():
    s = torch.tensor([0.4, -2.0, 3.0, 0.0])
    torch.testing.assert_close(hard_sort_matrix(s, descending=False) @ s, torch.sort(s).values)
    torch.testing.assert_close(hard_sort_matrix(s) @ s, torch.sort(s, descending=True).values)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("tau", [0.5, 1e-3])
def test_ascending_is_row_flip(tau, dtype):
    # the ascending rows are built with the negated coefficients: bit for bit the flipped rows
    s = torch.rand(3, 64, dtype=dtype, generator=torch.Generator().manual_seed(2))
    assert torch.equal(neural_sort_matrix(s, tau, descending=False), neural_sort_matrix(s, tau).flip(-2))


@pytest.mark.parametrize("tau", [1.0, 0.1])
def test_gradcheck_float64(tau):
    s = torch.tensor([0.3, 0.9, 0.1, 0.55, 0.7], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: neural_sort_matrix(t, tau), (s,))
    assert torch.autograd.gradcheck(lambda t: soft_sort(t, tau), (s,))


def test_stable_at_tau_1e3_float32_large_batch():
    pit = torch.rand(1024, generator=torch.Generator().manual_seed(3), requires_grad=True)
    p = neural_sort_matrix(pit, 1e-3)
    assert bool(torch.isfinite(p).all())
    torch.testing.assert_close(p.sum(-1), torch.ones(1024))
    out = soft_sort(pit, 1e-3)
    # float32 agrees with float64 far below the mean gap between PITs (1/1024).
    torch.testing.assert_close(out.double(), soft_sort(pit.detach().double(), 1e-3), atol=1e-4, rtol=0)
    # tau is of the order of the gaps: the relaxed sort is off by at most about one gap.
    assert float((out.detach() - torch.sort(pit.detach()).values).abs().max()) < 2 / 1024
    torch.log(out[32:] - out[:-32]).mean().backward()
    assert bool(torch.isfinite(pit.grad).all())


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=12),
    st.floats(0.01, 3.0),
)
def test_soft_sort_is_monotone_and_permutation_invariant(values, tau):
    s = torch.tensor(values, dtype=torch.float64)
    out = soft_sort(s, tau)
    assert bool((out.diff() >= -1e-9).all())
    assert float(out.min()) >= s.min() - 1e-9 and float(out.max()) <= s.max() + 1e-9
    perm = torch.randperm(len(values), generator=torch.Generator().manual_seed(len(values)))
    torch.testing.assert_close(soft_sort(s[perm], tau), out)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: neural_sort_matrix([0.1, 0.2]), TypeError, "scores must be a torch.Tensor"),
        (lambda: neural_sort_matrix(torch.tensor([1, 2])), TypeError, "floating"),
        (lambda: neural_sort_matrix(torch.tensor(1.0)), ValueError, "at least 1 dimension"),
        (lambda: neural_sort_matrix(torch.zeros(3), tau=0.0), ValueError, "tau must be > 0"),
        (lambda: neural_sort_matrix(torch.zeros(3), tau="1"), TypeError, "tau"),
        (lambda: soft_sort(torch.zeros(3), tau=-1.0), ValueError, "tau"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
