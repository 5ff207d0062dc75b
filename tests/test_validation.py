"""The argument checks of calibtut._validation: hand cases for each, boundary values included."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_categories,
    check_choices,
    check_class_probs,
    check_distances,
    check_distribution,
    check_fitted,
    check_frame,
    check_int,
    check_labels,
    check_levels,
    check_positive,
    check_probabilities,
    check_quantile_function,
    check_real,
    check_rng,
    check_same_length,
    check_weights,
)

# ------------------------------------------------------------------ as_float_array


def test_as_float_array_converts_numbers_and_booleans():
    assert as_float_array([1, 2], "x").dtype == np.float64
    np.testing.assert_array_equal(as_float_array([True, False], "x"), [1.0, 0.0])
    assert as_float_array(3, "x").ndim == 0


@pytest.mark.parametrize(
    "value",
    [np.array([1.0 + 0j, 2.0]), [1.0, 2j], 1 + 2j, np.array(["0.5", "0.2"]), ["0.5", 0.2], np.array([b"1"]),
     np.array([0.5, "a"], dtype=object), "0.5", None],
)
def test_as_float_array_refuses_complex_strings_and_none_with_a_type_error(value):
    with pytest.raises(TypeError, match="my_arg"):
        as_float_array(value, "my_arg")


def test_as_float_array_shape_and_values():
    with pytest.raises(ValueError, match=r"my_arg must have 1 dimension\(s\), got shape \(1, 2\)"):
        as_float_array([[1.0, 2.0]], "my_arg", ndim=1)
    assert as_float_array([[1.0]], "my_arg", ndim=(1, 2)).shape == (1, 1)
    with pytest.raises(ValueError, match="at least 2 dimension"):
        as_float_array([1.0], "my_arg", min_ndim=2)
    with pytest.raises(ValueError, match="my_arg must not be empty"):
        as_float_array([], "my_arg")
    assert as_float_array([], "my_arg", allow_empty=True).size == 0
    with pytest.raises(ValueError, match="my_arg contains NaN or infinite values"):
        as_float_array([1.0, math.inf], "my_arg")
    with pytest.raises(ValueError, match="my_arg must be finite, got nan"):
        as_float_array(math.nan, "my_arg")
    assert np.isinf(as_float_array([math.inf], "my_arg", finite=False)[0])
    with pytest.raises(TypeError, match="my_arg must be array-like of numbers"):
        as_float_array([[1.0], [1.0, 2.0]], "my_arg")  # ragged


# ------------------------------------------------------------------ probabilities


def test_check_probabilities_accepts_the_bounds_and_refuses_beyond():
    np.testing.assert_array_equal(check_probabilities([0.0, 1.0], "p"), [0.0, 1.0])
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\], got -1e-12"):
        check_probabilities([0.5, -1e-12], "p")
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\], got 1.5"):
        check_probabilities([1.5], "p")


def test_check_probabilities_sum_to_one_within_atol():
    check_probabilities([[0.5, 0.5 + 5e-7]], "p", simplex_axis=1)
    with pytest.raises(ValueError, match="p must sum to 1 along axis 1"):
        check_probabilities([[0.5, 0.5 + 2e-6]], "p", simplex_axis=1)


def test_check_class_probs():
    np.testing.assert_array_equal(check_class_probs([[1.0, 0.0], [0.0, 1.0]], "probs"), [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match=r"probs must sum to 1 along axis 1 \(largest deviation 0.1\)"):
        check_class_probs([[0.5, 0.4]], "probs")
    with pytest.raises(ValueError, match="probs must have at least 2 columns"):
        check_class_probs([[1.0]], "probs")
    check_class_probs([[1.0]], "probs", min_classes=1)
    with pytest.raises(ValueError, match="probs must have 2 dimension"):
        check_class_probs([0.5, 0.5], "probs")
    with pytest.raises(ValueError, match="probs must have 3 rows, got 1"):
        check_class_probs([[0.5, 0.5]], "probs", n=3)
    with pytest.raises(TypeError, match="probs must hold real numbers"):
        check_class_probs(np.array([[0.5, 0.5]]) + 0j, "probs")


# ------------------------------------------------------------------ labels and categories


def test_check_labels_boundaries():
    labels = check_labels([0, 2, 1.0], "labels", n_classes=3)
    assert labels.dtype == np.int64 and labels.tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match=r"labels must be integers in 0..2, got 3.0"):
        check_labels([0, 3], "labels", n_classes=3)
    with pytest.raises(ValueError, match=r"labels must be non-negative integers, got -1.0"):
        check_labels([0, -1], "labels")
    with pytest.raises(ValueError, match=r"labels must be non-negative integers, got 0.5"):
        check_labels([0, 0.5], "labels")
    assert check_labels([10**6], "labels").tolist() == [10**6]  # no class count: any non-negative integer


@pytest.mark.parametrize("value", [[True, False], np.array(["0", "1"]), np.array([0, 1]) + 0j])
def test_check_labels_refuses_booleans_strings_and_complex(value):
    with pytest.raises(TypeError, match="cal_y"):
        check_labels(value, "cal_y")


def test_check_labels_shape_and_length():
    with pytest.raises(ValueError, match="labels must have 1 dimension"):
        check_labels([[0, 1]], "labels")
    with pytest.raises(ValueError, match=r"labels must have one entry per point \(3\), got 2"):
        check_labels([0, 1], "labels", n=3)


def test_check_categories():
    assert check_categories([0, 1, 1], "categories", n=3).tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match=r"categories must have one entry per point \(2\), got 3"):
        check_categories([0, 1, 1], "categories", n=2)
    with pytest.raises(ValueError, match="categories must be non-negative integers"):
        check_categories([0, -2], "categories")


# ------------------------------------------------------------------ weights and distances


def test_check_weights():
    np.testing.assert_array_equal(check_weights([0.0, 2.5], "cal_weight"), [0.0, 2.5])
    with pytest.raises(ValueError, match="cal_weight must be non-negative, got -1e-09"):
        check_weights([1.0, -1e-9], "cal_weight")
    with pytest.raises(ValueError, match="cal_weight must not be all zero"):
        check_weights([0.0, 0.0], "cal_weight")
    with pytest.raises(ValueError, match="cal_weight contains NaN or infinite"):
        check_weights([1.0, math.inf], "cal_weight")
    with pytest.raises(ValueError, match=r"cal_weight must have one entry per point \(3\)"):
        check_weights([1.0, 1.0], "cal_weight", n=3)
    with pytest.raises(ValueError, match="cal_weight must have 1 dimension"):
        check_weights([[1.0]], "cal_weight")


def test_check_distances():
    np.testing.assert_array_equal(check_distances([0.0, 1.5], "d"), [0.0, 1.5])
    with pytest.raises(ValueError, match="d must be non-negative, got -0.5"):
        check_distances([0.0, -0.5], "d")
    assert check_distances([[0.0, 1.0]], "d", ndim=2).shape == (1, 2)
    with pytest.raises(ValueError, match="d must have 1 dimension"):
        check_distances([[0.0]], "d", ndim=1)


# ------------------------------------------------------------------ levels, positive values


def test_check_levels_open_and_closed():
    np.testing.assert_array_equal(check_levels([0.1, 0.9]), [0.1, 0.9])
    for bad in ([0.0, 0.5], [0.5, 1.0]):
        with pytest.raises(ValueError, match=r"levels must lie strictly inside \(0, 1\)"):
            check_levels(bad)
        check_levels(bad, open_interval=False)
    with pytest.raises(ValueError, match=r"grid must lie in \[0, 1\], got \[0.5, 1.5\]"):
        check_levels([0.5, 1.5], "grid", open_interval=False)
    with pytest.raises(ValueError, match=r"levels must be strictly increasing, got \[0.5, 0.5\]"):
        check_levels([0.5, 0.5])


def test_check_frame_names_the_argument_and_the_missing_columns():
    df = pd.DataFrame({"ece": [1.0, 2.0], "method": ["a", "b"]})
    assert check_frame(df, "runs", ["ece"]) is df
    with pytest.raises(TypeError, match="runs must be a pandas DataFrame, got dict"):
        check_frame({"ece": [1.0]}, "runs", ["ece"])
    with pytest.raises(ValueError, match=r"runs lacks column\(s\) \['seed'\]; it has \['ece', 'method'\]"):
        check_frame(df, "runs", ["ece", "seed"])
    empty = df.iloc[:0]
    assert check_frame(empty, "runs", ["ece"]) is empty
    with pytest.raises(ValueError, match="runs must have at least one row"):
        check_frame(empty, "runs", ["ece"], allow_empty=False)


def test_check_positive():
    np.testing.assert_array_equal(check_positive([1e-300, 2.0], "std"), [1e-300, 2.0])
    with pytest.raises(ValueError, match="std must be strictly positive, got 0.0"):
        check_positive([1.0, 0.0], "std")
    assert check_positive(0.0, "width", strict=False) == 0.0
    with pytest.raises(ValueError, match="width must be non-negative, got -2.0"):
        check_positive(-2.0, "width", strict=False)


# ------------------------------------------------------------------ scalars


def test_check_alpha_boundaries_and_types():
    assert check_alpha(0.1) == 0.1
    assert check_alpha(np.float32(0.25)) == 0.25
    assert check_alpha(np.array(0.5)) == 0.5  # a 0-d array is a number
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match=rf"alpha must lie in \(0, 1\), got {bad}"):
            check_alpha(bad)
    for bad in (True, "0.1", 0.1j, np.array([0.1]), np.array(0.1 + 0j)):
        with pytest.raises(TypeError, match="level must be a real number"):
            check_alpha(bad, "level")


def test_check_int_boundaries_and_types():
    assert check_int(1, "n_bins", minimum=1, maximum=1) == 1
    assert check_int(np.int64(3), "n_bins") == 3
    assert check_int(np.array(4), "n_bins") == 4  # a 0-d integer array
    with pytest.raises(ValueError, match="n_bins must be >= 1, got 0"):
        check_int(0, "n_bins", minimum=1)
    with pytest.raises(ValueError, match="n_bins must be <= 5, got 6"):
        check_int(6, "n_bins", maximum=5)
    for bad in (2.0, True, "3", np.array(2.0), np.array([2])):
        with pytest.raises(TypeError, match="n_bins must be an integer"):
            check_int(bad, "n_bins")


def test_check_real_bounds_and_infinity():
    assert check_real(0.0, "eps", low=0) == 0.0
    assert check_real(1.0, "eps", high=1) == 1.0
    assert check_real(np.array(0.5), "eps") == 0.5
    with pytest.raises(ValueError, match="tau must be > 0, got 0.0"):
        check_real(0.0, "tau", low=0, low_open=True)
    with pytest.raises(ValueError, match="tau must be < 1, got 1.0"):
        check_real(1.0, "tau", high=1, high_open=True)
    with pytest.raises(ValueError, match="tau must be a finite real number, got inf"):
        check_real(math.inf, "tau")
    assert check_real(math.inf, "tau", allow_inf=True) == math.inf
    with pytest.raises(ValueError, match="tau must be >= 0, got -inf"):
        check_real(-math.inf, "tau", low=0, allow_inf=True)
    with pytest.raises(ValueError, match="tau must be a real number, got nan"):
        check_real(math.nan, "tau", allow_inf=True)
    for bad in (True, "1", 1j, np.array(1 + 0j), np.array(True), [1.0]):
        with pytest.raises(TypeError, match="tau must be a real number"):
            check_real(bad, "tau")


def test_check_rng():
    generator = np.random.default_rng(0)
    assert check_rng(generator) is generator
    assert check_rng(np.array(3)).integers(100) == np.random.default_rng(3).integers(100)
    assert isinstance(check_rng(None), np.random.Generator)
    with pytest.raises(ValueError, match="seed must be a non-negative integer, got -1"):
        check_rng(-1)
    for bad in (1.5, True, "0", np.random.RandomState(0)):
        with pytest.raises(TypeError, match="seed must be None, an int or a numpy Generator"):
            check_rng(bad)


# ------------------------------------------------------------------ the rest


def test_check_same_length_names_every_argument():
    assert check_same_length(y=np.zeros(3), mean=np.ones(3)) == 3
    with pytest.raises(ValueError, match="y has 3, mean has 2"):
        check_same_length(y=np.zeros(3), mean=np.ones(2))


def test_check_distribution():
    check_distribution(stats.norm(0.0, 1.0), "forecasts")
    with pytest.raises(TypeError, match="forecasts must be a frozen scipy distribution, got list"):
        check_distribution([0.0], "forecasts")
    with pytest.raises(ValueError, match=r"forecasts has a NaN or infinite parameter \(df\)"):
        check_distribution(stats.t(math.nan), "forecasts")


def test_check_fitted_names_the_class_and_says_to_fit():
    class Recalibrator:
        pass

    model = Recalibrator()
    with pytest.raises(RuntimeError, match=r"^this Recalibrator is not fitted: call fit first$"):
        check_fitted(model, "pit_")
    model.pit_ = None  # any value counts: the attribute is set by fit
    assert check_fitted(model, "pit_") is model
    with pytest.raises(RuntimeError, match="this Recalibrator is not fitted"):
        check_fitted(model, "n_cal_")


def test_check_quantile_function():
    levels = np.array([0.0, 0.5, np.inf])  # 0 and inf are base levels of the DCP map
    np.testing.assert_array_equal(check_quantile_function(lambda u: np.tile(u, (2, 1)), levels),
                                  [[0.0, 0.5, np.inf]] * 2)
    with pytest.raises(ValueError, match=r"quantile_function must return an array of shape \(n, 3\), got \(3,\)"):
        check_quantile_function(lambda u: u, levels)
    with pytest.raises(ValueError, match=r"qf must return an array of shape \(n, 3\), got \(1, 2\)"):
        check_quantile_function(lambda u: np.zeros((1, 2)), levels, "qf")
    with pytest.raises(TypeError, match="quantile_function must be callable"):
        check_quantile_function(None, levels)
    with pytest.raises(TypeError, match="quantile_function must hold real numbers"):
        check_quantile_function(lambda u: u[None, :] + 1j, levels)


@pytest.mark.parametrize(
    ("check", "bad"),
    [
        (lambda x, name: as_float_array(x, name), [math.nan]),
        (lambda x, name: check_probabilities(x, name), [2.0]),
        (lambda x, name: check_class_probs(x, name), [[0.2, 0.2]]),
        (lambda x, name: check_labels(x, name, n_classes=2), [2]),
        (lambda x, name: check_weights(x, name), [-1.0]),
        (lambda x, name: check_distances(x, name), [-1.0]),
        (lambda x, name: check_categories(x, name), [0.5]),
        (lambda x, name: check_levels(x, name), [0.5, 0.2]),
        (lambda x, name: check_positive(x, name), [0.0]),
        (lambda x, name: check_alpha(x, name), 2.0),
        (lambda x, name: check_int(x, name), 0.5),
        (lambda x, name: check_real(x, name), math.inf),
    ],
)
def test_every_message_names_the_argument(check, bad):
    with pytest.raises((ValueError, TypeError), match="the_argument"):
        check(bad, "the_argument")


# ------------------------------------------------------------------ check_choices


def test_check_choices_returns_the_selection_in_its_order():
    choices = ("pinball", "ece", "sharpness")
    assert check_choices(["sharpness", "ece"], "metrics", choices) == ("sharpness", "ece")
    assert check_choices("ece", "metrics", choices) == ("ece",)  # one string is one choice
    assert check_choices(iter(["ece"]), "metrics", choices) == ("ece",)
    assert check_choices(["a"], "keys", {"a": 1, "b": 2}) == ("a",)  # a mapping's keys


@pytest.mark.parametrize("values", [[], (), ["ece", "nll"], "nll", ["ec"]])
def test_check_choices_refuses_an_empty_or_unknown_selection(values):
    with pytest.raises(ValueError, match=r"metrics must be a non-empty selection of \('pinball', 'ece'\)"):
        check_choices(values, "metrics", ("pinball", "ece"))
