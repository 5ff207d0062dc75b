"""Seeded index splits of calibtut.data.splits: K-fold folds and paper 001's calibration parts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import KFold

from calibtut.data.splits import calibration_parts, kfold_indices


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 60), k=st.integers(2, 10), data=st.data())
def test_kfold_matches_sklearn_without_shuffle(n, k, data):
    k = min(k, n)
    fold = data.draw(st.integers(0, k - 1))
    train, test = kfold_indices(n, k, fold)
    ref_train, ref_test = list(KFold(n_splits=k).split(np.zeros(n)))[fold]
    assert test.tolist() == ref_test.tolist() and train.tolist() == ref_train.tolist()


def test_kfold_shuffled_folds_partition_and_are_seeded():
    tests = [kfold_indices(23, 5, k, seed=3)[1] for k in range(5)]
    assert sorted(np.concatenate(tests).tolist()) == list(range(23))
    assert [len(t) for t in tests] == [5, 5, 5, 4, 4]
    assert np.array_equal(kfold_indices(23, 5, 2, seed=3)[1], tests[2])
    assert not np.array_equal(kfold_indices(23, 5, 2, seed=4)[1], tests[2])


def test_kfold_errors():
    with pytest.raises(ValueError, match="fold must be"):
        kfold_indices(10, 5, 5)
    with pytest.raises(ValueError, match="n_folds"):
        kfold_indices(3, 5, 0)
    with pytest.raises(TypeError, match="seed"):
        kfold_indices(10, 5, 0, seed=1.5)


def test_calibration_parts_keep_each_sequence_in_one_part():
    rng = np.random.default_rng(0)
    labels = [np.zeros(n, int) for n in rng.integers(1, 40, size=200)]
    groups = np.repeat(np.arange(len(labels)), [len(y) for y in labels])  # each token's sequence
    parts = calibration_parts(groups.size, 3, groups)
    rows = np.concatenate(list(parts.values()))
    assert np.array_equal(np.sort(rows), np.arange(groups.size))  # every row once
    owners = [set(groups[idx]) for idx in parts.values()]
    assert not (owners[0] & owners[1] or owners[0] & owners[2] or owners[1] & owners[2])
    assert [len(o) for o in owners] == [20, 90, 90]  # the shares hold for sequences
    # rows within a part come in a random order (the localizer takes the first ones)
    assert not np.array_equal(parts["knn"], np.sort(parts["knn"]))
    # deterministic given the seed, and another seed draws other sequences
    again = calibration_parts(groups.size, 3, groups)
    assert all(np.array_equal(parts[k], again[k]) for k in parts)
    assert set(groups[calibration_parts(groups.size, 4, groups)["knn"]]) != owners[0]


def test_calibration_parts_without_groups_split_rows_as_before():
    parts = calibration_parts(101, 5)
    order = np.random.default_rng([5, 1]).permutation(101)
    assert [len(v) for v in parts.values()] == [10, 45, 46]
    assert np.array_equal(np.concatenate(list(parts.values())), order)
