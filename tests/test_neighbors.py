"""Exact blocked nearest-neighbour search (calibtut.selective.neighbors)."""

import numpy as np
import pytest
import torch
from sklearn.neighbors import NearestNeighbors

from calibtut.selective import nearest_neighbors


@pytest.mark.parametrize(("block_size", "k"), [(7, 1), (7, 5), (64, 12), (2048, 25)])
def test_matches_scikit_learn_brute_force(block_size, k):
    rng = np.random.default_rng(block_size + k)
    ref, queries = rng.normal(size=(300, 16)), rng.normal(size=(90, 16))
    d, i = nearest_neighbors(torch.tensor(queries), torch.tensor(ref), k, block_size=block_size)
    sk_d, sk_i = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(ref).kneighbors(queries)
    assert np.allclose(d.numpy(), sk_d, rtol=0, atol=1e-10)
    assert np.array_equal(i.numpy(), sk_i)  # continuous data: distinct distances, indices must agree


@pytest.mark.parametrize("block_size", [7, 64, 512])
def test_exclude_self_matches_scikit_learn_without_the_query_point(block_size):
    # blocks of 7 and 64 put the diagonal inside, across and at the edge of blocks
    ref = np.random.default_rng(block_size).normal(size=(200, 8))
    d, i = nearest_neighbors(torch.tensor(ref), torch.tensor(ref), 6, block_size=block_size,
                             exclude_self=True)
    sk_d, sk_i = NearestNeighbors(n_neighbors=6, algorithm="brute").fit(ref).kneighbors()
    assert np.allclose(d.numpy(), sk_d, rtol=0, atol=1e-10)
    assert np.array_equal(i.numpy(), sk_i)


def test_float32_on_the_gpu_agrees_with_float64_on_the_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    rng = np.random.default_rng(1)
    ref, queries = rng.normal(size=(5000, 64)), rng.normal(size=(500, 64))
    d64, i64 = nearest_neighbors(torch.tensor(queries), torch.tensor(ref), 10, block_size=512)
    d32, i32 = nearest_neighbors(torch.tensor(queries, dtype=torch.float32, device="cuda"),
                                 torch.tensor(ref, dtype=torch.float32, device="cuda"), 10, block_size=512)
    assert np.allclose(d32.cpu().numpy(), d64.numpy(), atol=1e-4)
    assert np.mean(i32.cpu().numpy() == i64.numpy()) > 0.999


def test_ties_are_ordered_by_index_and_self_is_excluded():
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
