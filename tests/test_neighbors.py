"""Exact nearest-neighbour search (calibtut.selective.neighbors), on both candidate searches."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn.neighbors import NearestNeighbors

from calibtut.selective import nearest_neighbors, neighbors, pairwise_distances


@pytest.fixture(params=["faiss", "torch"])
def search(request, monkeypatch):
    """Run the test with faiss's candidate search (when installed) and with torch's."""
    if request.param == "faiss":
        pytest.importorskip("faiss")
    else:
        monkeypatch.setattr(neighbors, "_load_faiss", lambda: None)
    return request.param


def exact_order(queries, ref, k, *, exclude_self=False):
    """The oracle: float64 distances from differences, ranked by (distance, index) with numpy."""
    q, r = np.asarray(queries, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    sq = ((q[:, None, :] - r[None, :, :]) ** 2).sum(axis=2)
    if exclude_self:
        np.fill_diagonal(sq, np.inf)
    index = np.broadcast_to(np.arange(len(r)), sq.shape)
    order = np.lexsort((index, sq), axis=1)[:, :k]
    return np.sqrt(np.take_along_axis(sq, order, axis=1)), order


def scikit_learn(queries, ref, k):
    model = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(np.asarray(ref, dtype=np.float64))
    return model.kneighbors(np.asarray(queries, dtype=np.float64))


@pytest.mark.parametrize(("block_size", "k"), [(7, 1), (7, 5), (64, 12), (2048, 25)])
def test_matches_scikit_learn_brute_force(search, block_size, k):
    rng = np.random.default_rng(block_size + k)
    ref, queries = rng.normal(size=(300, 16)), rng.normal(size=(90, 16))
    d, i = nearest_neighbors(torch.tensor(queries), torch.tensor(ref), k, block_size=block_size)
    sk_d, sk_i = scikit_learn(queries, ref, k)
    assert np.allclose(d.numpy(), sk_d, rtol=0, atol=1e-10)
    assert np.array_equal(i.numpy(), sk_i)  # continuous data: distinct distances, indices must agree


@pytest.mark.parametrize(("offset", "spread"), [(100.0, 1.0), (0.0, 1e4)])
def test_shifted_and_scaled_float32_data_match_scikit_learn_in_float64(search, offset, spread):
    # issue 28's case: 100 + N(0, I) in float32, where a float32 |a|^2 + |b|^2 - 2ab loses the
    # neighbours (the earlier search got 98 of these 1000 rows wrong)
    rng = np.random.default_rng(28)
    ref = (offset + spread * rng.normal(size=(1000, 8))).astype(np.float32)
    queries = (offset + spread * rng.normal(size=(1000, 8))).astype(np.float32)
    d, i = nearest_neighbors(torch.from_numpy(queries), torch.from_numpy(ref), 25, block_size=256)
    sk_d, sk_i = scikit_learn(queries, ref, 25)
    assert np.array_equal(i.numpy(), sk_i)
    assert d.dtype == torch.float32
    assert np.allclose(d.numpy(), sk_d, rtol=1e-6, atol=0)


@pytest.mark.parametrize(("offset", "spread"), [(-3e3, 1e-3), (1e6, 1.0)])
def test_float64_data_far_from_the_origin(search, offset, spread):
    # offsets that defeat even float64 |a|^2 + |b|^2 - 2ab, which scikit-learn's brute force uses
    rng = np.random.default_rng(28)
    ref, queries = offset + spread * rng.normal(size=(2, 1000, 8))
    d, i = nearest_neighbors(torch.from_numpy(queries), torch.from_numpy(ref), 25, block_size=256)
    exact_d, exact_i = exact_order(queries, ref, 25)
    assert np.array_equal(i.numpy(), exact_i)
    assert np.allclose(d.numpy(), exact_d, rtol=1e-12, atol=0)
    expanded = (queries**2).sum(1)[:, None] + (ref**2).sum(1) - 2 * queries @ ref.T
    assert not np.array_equal(np.argsort(expanded, axis=1, kind="stable")[:, :25], exact_i)  # a hard case


@pytest.mark.parametrize("block_size", [7, 64, 512])
def test_exclude_self_matches_scikit_learn_without_the_query_point(search, block_size):
    # blocks of 7 and 64 put the diagonal inside, across and at the edge of blocks
    ref = np.random.default_rng(block_size).normal(size=(200, 8))
    d, i = nearest_neighbors(torch.tensor(ref), torch.tensor(ref), 6, block_size=block_size,
                             exclude_self=True)
    sk_d, sk_i = NearestNeighbors(n_neighbors=6, algorithm="brute").fit(ref).kneighbors()
    assert np.allclose(d.numpy(), sk_d, rtol=0, atol=1e-10)
    assert np.array_equal(i.numpy(), sk_i)


def test_duplicated_rows_tie_by_index(search):
    # every reference row three times, shuffled, 100 away from the origin: each tie group of
    # three must come out whole and in index order, the k-th distance's group cut by index
    rng = np.random.default_rng(3)
    base = (100 + rng.normal(size=(150, 6))).astype(np.float32)
    ref = base[rng.permutation(np.repeat(np.arange(150), 3))]
    queries = np.vstack([base[:40], (100 + rng.normal(size=(40, 6))).astype(np.float32)])
    d, i = nearest_neighbors(torch.from_numpy(queries), torch.from_numpy(ref), 25, block_size=61)
    exact_d, exact_i = exact_order(queries, ref, 25)
    assert np.array_equal(i.numpy(), exact_i)
    assert np.allclose(d.numpy(), exact_d, rtol=1e-6, atol=0)
    assert np.allclose(d.numpy(), scikit_learn(queries, ref, 25)[0], rtol=1e-6, atol=1e-6)


def test_integer_grid_with_exclude_self(search):
    # a 4 x 4 x 4 grid, twice: distances are square roots of integers, shells of many ties
    grid = np.stack(np.meshgrid(*[np.arange(4.0)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    ref = np.vstack([grid, grid]).astype(np.float32)
    d, i = nearest_neighbors(torch.from_numpy(ref), torch.from_numpy(ref), 25, block_size=50,
                             exclude_self=True)
    exact_d, exact_i = exact_order(ref, ref, 25, exclude_self=True)
    assert np.array_equal(i.numpy(), exact_i)
    assert np.array_equal(d.numpy(), exact_d.astype(np.float32))


def test_all_points_equal_needs_every_candidate(search):
    # one tie group of n: no margin short of K = n proves anything, the doubling must reach n
    ref = torch.full((300, 4), 7.0)
    d, i = nearest_neighbors(ref[:5], ref, 10, block_size=32)
    assert torch.equal(i, torch.arange(10).expand(5, 10)) and torch.equal(d, torch.zeros(5, 10))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_random_small_integer_data_matches_the_oracle(data):
    # few distinct values: ties everywhere; random sizes, k and block sizes; both searches
    n, m, dim = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 20)), data.draw(st.integers(1, 5))
    values = st.lists(st.integers(-3, 3), min_size=dim, max_size=dim)
    ref = np.array(data.draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float32)
    queries = np.array(data.draw(st.lists(values, min_size=m, max_size=m)), dtype=np.float32)
    k, block_size = data.draw(st.integers(1, n)), data.draw(st.integers(1, 50))
    exact_d, exact_i = exact_order(queries, ref, k)
    with pytest.MonkeyPatch.context() as patch:
        for use_faiss in (True, False):
            if not use_faiss:
                patch.setattr(neighbors, "_load_faiss", lambda: None)
            d, i = nearest_neighbors(torch.from_numpy(queries), torch.from_numpy(ref), k,
                                     block_size=block_size)
            assert np.array_equal(i.numpy(), exact_i)
            assert np.array_equal(d.numpy(), exact_d.astype(np.float32))


@pytest.mark.parametrize(("offset", "dim"), [(0.0, 3), (100.0, 64), (1e3, 512)])
def test_the_rounding_bound_holds_for_every_pair(offset, dim):
    # the inequality the proof rests on: |s_j + |a|^2 - scale^2 D_j| <= c (|a| + |b_j|)^2,
    # for the torch search's float32 values s_j on centred, scaled data (the norms: upper bounds)
    rng = np.random.default_rng(dim)
    ref = torch.from_numpy((offset + rng.normal(size=(400, dim))).astype(np.float32))
    queries = torch.from_numpy((offset + rng.normal(size=(50, dim))).astype(np.float32))
    centre = ref.mean(dim=0)
    scale = neighbors._scale(centre, *((x.amin(dim=0), x.amax(dim=0)) for x in (queries, ref)))
    a, a_norm = neighbors._centred(queries, centre, scale)
    b_norm = neighbors._centred(ref, centre, scale)[1]
    search, largest_norm = neighbors._torch_search(ref, centre, scale, 64)
    s, j = search(a, 400)
    assert largest_norm == float(b_norm.max())
    exact = ((queries.double()[:, None, :] - ref.double()[j]) ** 2).sum(dim=2) * scale**2
    error = (s.double() + (a.double() ** 2).sum(dim=1, keepdim=True) - exact).abs()
    limit = neighbors._error_coefficient(dim, 2.0**-24) * (a_norm[:, None] + b_norm[j]) ** 2
    assert (error <= limit).all()
    assert error.max() > limit.max() * 1e-4  # the bound is not vacuous here: errors within 1e4 of it


def test_reduced_precision_matrix_products_stay_exact(monkeypatch):
    # with torch's bfloat16 matmul setting the bound widens to u = 2**-8 and the result holds
    monkeypatch.setattr(neighbors, "_load_faiss", lambda: None)
    before = torch.get_float32_matmul_precision()
    rng = np.random.default_rng(5)
    ref, queries = (100 + rng.normal(size=(500, 16))).astype(np.float32), rng.normal(size=(60, 16))
    try:
        torch.set_float32_matmul_precision("medium")
        i = nearest_neighbors(torch.from_numpy(queries + 100).float(), torch.from_numpy(ref), 9)[1]
    finally:
        torch.set_float32_matmul_precision(before)
    assert np.array_equal(i.numpy(), exact_order((queries + 100).astype(np.float32), ref, 9)[1])


def test_distances_carry_gradients_to_the_queries(search):
    ref = torch.tensor([[0.0, 0.0], [3.0, 4.0]], dtype=torch.float64)
    queries = torch.tensor([[0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    d, i = nearest_neighbors(queries, ref, 2)
    d.sum().backward()
    # d(|q - r|)/dq = (q - r)/|q - r|: (0, 1) for the origin, (-3, -3)/sqrt(18) for (3, 4)
    assert i.tolist() == [[0, 1]]
    assert torch.allclose(queries.grad, torch.tensor([[-3 / 18**0.5, 1 - 3 / 18**0.5]], dtype=torch.float64))


def test_half_precision_input(search):
    rng = np.random.default_rng(7)
    ref, queries = rng.normal(size=(200, 5)).astype(np.float16), rng.normal(size=(30, 5)).astype(np.float16)
    d, i = nearest_neighbors(torch.from_numpy(queries), torch.from_numpy(ref), 4, block_size=33)
    assert d.dtype == torch.float16
    assert np.array_equal(i.numpy(), exact_order(queries, ref, 4)[1])


def test_float32_on_the_gpu_agrees_with_float64_on_the_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    rng = np.random.default_rng(1)
    ref, queries = 100 + rng.normal(size=(5000, 64)), 100 + rng.normal(size=(500, 64))
    ref32, queries32 = ref.astype(np.float32), queries.astype(np.float32)
    d64, i64 = nearest_neighbors(torch.tensor(queries32, dtype=torch.float64),
                                 torch.tensor(ref32, dtype=torch.float64), 10, block_size=512)
    d32, i32 = nearest_neighbors(torch.tensor(queries32, device="cuda"), torch.tensor(ref32, device="cuda"),
                                 10, block_size=512)
    assert torch.equal(i32.cpu(), i64)  # the same float32 points: the same exact neighbours
    assert np.allclose(d32.cpu().numpy(), d64.numpy(), rtol=1e-6, atol=0)


def test_ties_are_ordered_by_index_and_self_is_excluded(search):
    # points on a line at 0, 1, 2, 3: from 1.5 the distances to 1 and 2 tie, then 0 and 3 tie
    ref = torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64)
    d, i = nearest_neighbors(torch.tensor([[1.5]], dtype=torch.float64), ref, 4, block_size=1)
    assert i.tolist() == [[1, 2, 0, 3]] and d.tolist() == [[0.5, 0.5, 1.5, 1.5]]
    d, i = nearest_neighbors(ref, ref, 2, block_size=3, exclude_self=True)
    assert i.tolist() == [[1, 2], [0, 2], [1, 3], [2, 1]]
    assert d.tolist() == [[1.0, 2.0], [1.0, 1.0], [1.0, 1.0], [1.0, 2.0]]


def test_clear_errors():
    ref = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="k must be <= 4, got 5"):
        nearest_neighbors(ref, ref, 5)
    with pytest.raises(ValueError, match="k must be <= 3, got 4"):
        nearest_neighbors(ref, ref, 4, exclude_self=True)
    with pytest.raises(ValueError, match="dimension"):
        nearest_neighbors(torch.zeros(2, 3), ref, 1)
    with pytest.raises(ValueError, match="share dtype"):
        nearest_neighbors(torch.zeros(2, 2, dtype=torch.float64), ref, 1)
    with pytest.raises(ValueError, match="queries contains NaN"):
        nearest_neighbors(torch.full((2, 2), float("nan")), ref, 1)
    with pytest.raises(TypeError, match="reference must be a torch.Tensor"):
        nearest_neighbors(ref, np.zeros((4, 2)), 1)


def test_pairwise_distances_match_scipy_and_a_hand_case():
    rng = np.random.default_rng(5)
    for n, m, d in ((1, 1, 1), (30, 40, 3), (7, 200, 16)):
        a, b = rng.normal(size=(n, d)), rng.normal(size=(m, d))
        got = pairwise_distances(a, b)
        assert got.dtype == torch.float64 and tuple(got.shape) == (n, m)
        np.testing.assert_allclose(got.numpy(), cdist(a, b), rtol=1e-10, atol=1e-12)
    # a 3-4-5 triangle; float32 input is measured in float64
    got = pairwise_distances(np.array([[0, 0], [3, 4]], np.float32), [[0.0, 0.0], [3.0, 0.0]])
    assert got.tolist() == [[0.0, 3.0], [5.0, 4.0]]


def test_pairwise_distances_are_symmetric_and_obey_the_triangle_inequality():
    for seed in range(10):
        x = np.random.default_rng(seed).normal(size=(25, 4))
        dist = pairwise_distances(x, x).numpy()
        np.testing.assert_allclose(dist, dist.T, atol=1e-12)
        via = dist[:, :, None] + dist[None, :, :]  # d(i, j) + d(j, k)
        assert (dist[:, None, :] <= via + 1e-9).all()


def test_pairwise_distances_check_their_arguments():
    with pytest.raises(ValueError, match="same number of columns"):
        pairwise_distances(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="a"):
        pairwise_distances([[np.nan, 0.0]], [[0.0, 0.0]])
    with pytest.raises(ValueError, match="b"):
        pairwise_distances([[0.0, 0.0]], [0.0, 0.0])
