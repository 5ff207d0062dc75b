"""The estimator contract, checked on every public estimator class (scikit-learn's ``check_estimator``).

The walk takes every class listed in the ``__all__`` of a public module of
``calibtut`` that has a ``fit`` method: each must derive from
``calibtut._estimator.Estimator`` and have a case in :data:`CASES` (its
minimal fit inputs and the prediction methods of its role), so that a new
public estimator fails here until it is given one. Each case is checked for:

* a keyword-only constructor (:data:`POSITIONAL` lists the exceptions) that
  stores every argument unchanged, even a value that ``fit`` refuses;
* ``get_params`` naming exactly the constructor's parameters, rebuilding an
  equal estimator, ``sklearn.base.clone`` and ``set_params``;
* every hyper-parameter, set to a value no rule accepts by ``set_params``,
  refused by the next ``fit`` with an error that names it;
* a prediction method called before ``fit`` raising a ``RuntimeError``;
* ``fit`` returning ``self``; outputs of the shape and type of the role;
  two fits from the same parameters (seeded) giving the same outputs;
* every numeric array of the fit inputs refused, with a NaN (floats) or a
  fractional entry (integers), by an error naming the argument;
* ``repr`` showing the class and the parameters that differ from the default;
* a docstring with a "See Also" section (related names, each with what it is) and a
  "References" section (a citation: a year and a quoted or italic title).

The second part walks the public torch functions (``calibtut.metrics.torch``,
``calibtut.regularizers``, the forward of the selective networks): each tensor
argument refused, with its name, when it holds a NaN, a value out of range or
has the wrong shape (:data:`TORCH_CASES`; :data:`TORCH_EXEMPT` says why a name
is not walked); and the networks' ``forward`` naming ``x`` when its width is
wrong.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression

import calibtut
from calibtut._estimator import Estimator
from calibtut.recalibration import gaussian_quantile_function
from calibtut.selective import KNNFeatures

M, K = 60, 3
_rng = np.random.default_rng(0)
_probs = _rng.dirichlet(np.ones(K), size=M)
_labels = np.arange(M) % K
_logits = np.log(_probs)
_y = _rng.normal(size=M)
_pit = _rng.uniform(size=M)
_levels = np.array([0.1, 0.5, 0.9])
_X = _rng.normal(size=(M, 2))


def _quantile_function():
    return gaussian_quantile_function(np.zeros(M), np.ones(M))


_d = _rng.uniform(size=M)


def _gaussian_kernel(a, b):
    return np.exp(-np.sum((a[:, None] - b[None]) ** 2, axis=2))


def _knn(labelled=True):
    return KNNFeatures(_probs, _labels if labelled else None, np.arange(M) % 2, _d)


#: Parameters a hyper-parameter may take positionally, with the reason.
POSITIONAL = {
    # the one wrapped model of jackknife+ / CV+ (scikit-learn's meta-estimators take it first too)
    "CrossConformalRegressor": ("estimator",),
}


@dataclasses.dataclass(frozen=True)
class Case:
    """How to build and fit one estimator class, and what its role's methods return."""

    params: dict  # constructor arguments (small, fast settings)
    fit: Callable[[], tuple]  # () -> (positional args, keyword args) of fit
    predict: dict  # method name -> (() -> (args, kwargs), role)


def _args(*args, **kwargs):
    return lambda: (args, kwargs)


_PROBS_ROLE = {"predict_proba": (_args(_logits), "proba")}
CASES = {
    "SplitConformalClassifier": Case({"score": "aps", "randomized": True, "seed": 0}, _args(_probs, _labels),
                                     {"predict_set": (_args(_probs), "set")}),
    "LocalizedConformalClassifier": Case({"kernel": _gaussian_kernel}, _args(_probs, _labels, _X),
                                         {"predict_set": (_args(_probs, _X), "set")}),
    "RAPSClassifier": Case({"seed": 0}, _args(_probs, _labels), {"predict_set": (_args(_probs), "set")}),
    "SplitConformalRegressor": Case({}, _args(_y, _y + 0.1), {"predict_interval": (_args(_y), "interval")}),
    "CrossConformalRegressor": Case({"estimator": LinearRegression(), "n_folds": 5, "seed": 0}, _args(_X, _y),
                                    {"predict_interval": (_args(_X), "interval")}),
    "ConformalizedQuantileRegressor": Case({}, _args(np.stack([_y - 1, _y + 1], axis=1), _y),
                                            {"predict_interval": (_args(np.stack([_y - 1, _y + 1], axis=1)),
                                                                  "interval")}),
    "OneSidedConformalRegressor": Case({"levels": _levels}, _args(np.tile([-1.3, 0.0, 1.3], (M, 1)), _y),
                        {"predict_quantiles": (_args(_levels, np.tile([-1.3, 0.0, 1.3], (M, 1))), "quantiles")}),
    "DistributionalConformalRegressor": Case({}, _args(_pit), {
        "predict_interval": (lambda: ((_quantile_function(),), {}), "interval"),
        "predict_quantiles": (lambda: ((_levels, _quantile_function()), {}), "quantiles")}),
    "TemperatureScaling": Case({}, _args(_logits, _labels), _PROBS_ROLE),
    "SGDTemperatureScaling": Case({"epochs": 3, "seed": 0}, _args(_logits, _labels), _PROBS_ROLE),
    "PlattScaling": Case({}, _args(_logits, _labels), _PROBS_ROLE),
    "VectorScaling": Case({}, _args(_logits, _labels), _PROBS_ROLE),
    "MatrixScaling": Case({"l2": 0.1}, _args(_logits, _labels), _PROBS_ROLE),
    "HistogramBinning": Case({"n_bins": 5}, _args(_probs, _labels), {"predict_proba": (_args(_probs), "proba")}),
    "QuantileRecalibrator": Case({"method": "kde", "max_kde_points": 30, "seed": 0}, _args(_pit), {
        "predict_quantiles": (lambda: ((_levels, _quantile_function()), {}), "quantiles"),
        "transform": (_args(_pit), "pit")}),
    "IsotonicRecalibrator": Case({}, _args(_pit), {
        "predict_quantiles": (lambda: ((_levels, _quantile_function()), {}), "quantiles"),
        "transform": (_args(_pit), "pit")}),
    "VennPredictor": Case({}, _args(_probs, _labels),
                          {"predict_multiprobabilities": (_args(_probs), "multiprobabilities")}),
    "VennABERS": Case({}, _args(_y, (_y > 0).astype(int)),
                      {"predict_multiprobabilities": (_args(_y), "probability pair")}),
    "ADMIT": Case({"omega": 0.5, "kappa": 9}, lambda: ((_knn(),), {}),
                  {"predict_set": (lambda: ((_knn(False),), {}), "set")}),
    "VennADMIT": Case({"omega": 0.5, "kappa": 9}, lambda: ((_knn(), _knn()), {}),
                      {"predict_admitted": (lambda: ((_knn(False),), {}), "mask")}),
    "LogisticDiscriminator": Case({"seed": 0}, _args(_X, _X + 0.5),
                                  {"predict_source_proba": (_args(_X), "probability")}),
    "MLPDiscriminator": Case({"hidden": (4,), "epochs": 2, "seed": 0}, _args(_X, _X + 0.5),
                             {"predict_source_proba": (_args(_X), "probability")}),
    "MarginalKDE": Case({"n_kernels": 10}, _args(_y), {"pit": (_args(_y), "pit")}),
    "Standardizer": Case({}, _args(_X, _y), {"transform": (_args(_X), "features")}),
    "KNNFeaturePipeline": Case({"n_neighbors": 5, "epochs": 2}, _args(_X, _logits, _labels),
                               {"kneighbors": (_args(_X), "neighbours")}),
}


def _public_estimators():
    """Every public class with a ``fit`` method, once, by name."""
    found = {}
    for info in pkgutil.walk_packages(calibtut.__path__, "calibtut."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and callable(getattr(obj, "fit", None)):
                found.setdefault(name, obj)
    return dict(sorted(found.items()))


ESTIMATORS = _public_estimators()
_ids = list(ESTIMATORS)


def _build(name, **changes):
    return ESTIMATORS[name](**{**CASES[name].params, **changes})


def _fit_inputs(name):
    return CASES[name].fit()


def _fitted(name, **changes):
    args, kwargs = _fit_inputs(name)
    return _build(name, **changes).fit(*args, **kwargs)


def _outputs(model, name):
    results = {}
    for method, (inputs, _) in CASES[name].predict.items():
        args, kwargs = inputs()
        results[method] = getattr(model, method)(*args, **kwargs)
    return results


def test_the_walk_finds_every_estimator():
    assert {"SplitConformalClassifier", "TemperatureScaling", "VennADMIT", "MLPDiscriminator", "MarginalKDE",
            "CrossConformalRegressor", "Standardizer"} <= set(ESTIMATORS)
    unknown = sorted(set(ESTIMATORS) - set(CASES))
    assert not unknown, f"public estimators without a case in CASES (add their minimal fit inputs): {unknown}"
    stale = sorted(set(CASES) - set(ESTIMATORS))
    assert not stale, f"CASES for classes that are not public estimators: {stale}"


@pytest.mark.parametrize("name", _ids)
def test_derives_from_the_base_and_declares_every_parameter(name):
    cls = ESTIMATORS[name]
    assert issubclass(cls, Estimator), f"{name} does not derive from calibtut._estimator.Estimator"
    names = cls._get_param_names()
    assert set(cls._parameter_constraints) == set(names), (
        f"{name}: the constraint table names {sorted(cls._parameter_constraints)}, the constructor {names}")


@pytest.mark.parametrize("name", _ids)
def test_constructor_is_keyword_only(name):
    allowed = POSITIONAL.get(name, ())
    cls = ESTIMATORS[name]
    parameters = [] if cls.__init__ is object.__init__ else list(inspect.signature(cls.__init__).parameters.values())
    for p in parameters[1:]:
        assert p.kind is inspect.Parameter.KEYWORD_ONLY or p.name in allowed, (
            f"{name}({p.name}) may be passed by position: hyper-parameters are keyword-only")


@pytest.mark.parametrize("name", _ids)
def test_get_params_round_trip_and_clone(name):
    model = _build(name)
    params = model.get_params(deep=False)
    assert list(params) == ESTIMATORS[name]._get_param_names()
    assert all(params[k] is v for k, v in CASES[name].params.items())  # stored unchanged
    rebuilt = type(model)(**params)
    assert rebuilt.get_params(deep=False).keys() == params.keys()
    assert all(rebuilt.get_params(deep=False)[k] is v for k, v in params.items())
    cloned = clone(model)
    assert type(cloned) is type(model) and cloned is not model
    assert repr(cloned) == repr(model)
    assert model.set_params(**params) is model
    with pytest.raises(ValueError, match="not a parameter"):
        model.set_params(no_such_parameter=1)


def test_nested_parameters_reach_the_wrapped_estimator():
    model = _build("CrossConformalRegressor")
    assert model.get_params()["estimator__fit_intercept"] is True
    model.set_params(estimator__fit_intercept=False)
    assert model.estimator.fit_intercept is False
    assert clone(model).estimator is not model.estimator


@pytest.mark.parametrize("name", _ids)
def test_every_parameter_is_checked_by_fit_after_set_params(name):
    args, kwargs = _fit_inputs(name)
    refused = object()  # no rule accepts it
    for parameter in ESTIMATORS[name]._get_param_names():
        model = _build(name).set_params(**{parameter: refused})
        assert model.get_params(deep=False)[parameter] is refused  # stored, not checked, here
        with pytest.raises((TypeError, ValueError)) as info:
            model.fit(*args, **kwargs)
        assert re.search(rf"\b{parameter}\b", str(info.value)), (
            f"{name}.fit with a bad {parameter}: the error does not name it: {info.value}")


@pytest.mark.parametrize("name", _ids)
def test_predicting_before_fit_raises(name):
    for method, (inputs, _) in CASES[name].predict.items():
        args, kwargs = inputs()
        with pytest.raises(RuntimeError, match="fit"):
            getattr(_build(name), method)(*args, **kwargs)


def _check_role(role, out, name, method):
    where = f"{name}.{method}"
    if role == "set":
        assert isinstance(out, np.ndarray) and out.dtype == bool and out.shape == (M, K), where
    elif role == "interval":
        assert isinstance(out, tuple) and len(out) == 2, f"{where} must return (lower, upper)"
        assert out[0].shape == out[1].shape == (M,) and np.all(out[0] <= out[1]), where
    elif role == "quantiles":
        assert out.shape == (M, _levels.size), where
    elif role == "proba":
        assert out.shape == (M, K) and np.all((out >= 0) & (out <= 1)), where
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-9, err_msg=where)
    elif role == "multiprobabilities":
        assert out.shape == (M, K, K), where
        np.testing.assert_allclose(out.sum(axis=2), 1.0, atol=1e-9, err_msg=where)
    elif role == "probability pair":
        assert isinstance(out, tuple) and len(out) == 2 and out[0].shape == (M,), where
        assert np.all((0 <= out[0]) & (out[0] <= out[1]) & (out[1] <= 1)), where
    elif role == "mask":
        assert out.dtype == bool and out.shape == (M,), where
    elif role in ("probability", "pit"):
        assert out.shape == (M,) and np.all((out >= 0) & (out <= 1)), where
    elif role == "features":
        assert out.shape == _X.shape, where
    elif role == "neighbours":
        distances, indices = out
        assert distances.shape == indices.shape == (M, 5), where
        assert np.all(np.diff(np.asarray(distances), axis=1) >= 0), f"{where}: distances not sorted"
    else:
        raise AssertionError(f"unknown role {role!r} of {where}")


@pytest.mark.parametrize("name", _ids)
def test_fit_returns_self_and_outputs_have_the_role_shapes(name):
    args, kwargs = _fit_inputs(name)
    model = _build(name)
    assert model.fit(*args, **kwargs) is model
    for method, out in _outputs(model, name).items():
        _check_role(CASES[name].predict[method][1], out, name, method)


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("name", _ids)
def test_deterministic_given_the_parameters(name):
    first, second = _outputs(_fitted(name), name), _outputs(_fitted(name), name)
    for method in first:
        assert _same(first[method], second[method]), f"{name}.{method} differs between two seeded fits"


def _array_arguments(name):
    """(position or keyword, parameter name, numeric array) of every array given to fit."""
    cls = ESTIMATORS[name]
    names = list(inspect.signature(cls.fit).parameters)[1:]
    args, kwargs = _fit_inputs(name)
    found = [(i, names[i], a) for i, a in enumerate(args)] + [(k, k, a) for k, a in kwargs.items()]
    return [(where, parameter, a) for where, parameter, a in found
            if isinstance(a, np.ndarray) and a.dtype.kind in "iuf"]


_bad_input_cases = [pytest.param(name, where, parameter, id=f"{name}.fit.{parameter}")
                    for name in _ids if name in CASES for where, parameter, _ in _array_arguments(name)]


@pytest.mark.parametrize(("name", "where", "parameter"), _bad_input_cases)
def test_bad_fit_input_is_refused_naming_the_argument(name, where, parameter):
    args, kwargs = _fit_inputs(name)
    args = list(args)
    value = args[where] if isinstance(where, int) else kwargs[where]
    bad = value.astype(float)
    bad.flat[0] = np.nan if value.dtype.kind == "f" else 0.5
    if isinstance(where, int):
        args[where] = bad
    else:
        kwargs[where] = bad
    with pytest.raises((TypeError, ValueError)) as info:
        _build(name).fit(*args, **kwargs)
    assert re.search(rf"\b{parameter}\b", str(info.value)), f"{name}.fit({parameter}=bad): {info.value}"


def test_every_estimator_has_a_bad_input_check():
    covered = {case.values[0] for case in _bad_input_cases}
    assert covered == set(CASES) - {"ADMIT", "VennADMIT"}  # KNNFeatures check their own fields


@pytest.mark.parametrize("name", _ids)
def test_repr_shows_the_changed_parameters(name):
    defaults = {k: p.default for k, p in inspect.signature(ESTIMATORS[name]).parameters.items()}
    shown = repr(_build(name))
    assert shown.startswith(f"{name}(") and shown.endswith(")")
    for key, value in CASES[name].params.items():
        changed = defaults[key] is inspect.Parameter.empty or not np.array_equal(value, defaults[key])
        assert (f"{key}={value!r}" in shown) == changed, f"{name}: repr {shown} and parameter {key}={value!r}"


@pytest.mark.parametrize("name", _ids)
def test_docstring_has_see_also_and_references(name):
    doc = inspect.getdoc(ESTIMATORS[name]) or ""
    for section in ("See Also", "References"):
        match = re.search(rf"^{section}\n-{{{len(section)}}}\n(.+?)(?:\n\n[A-Z][a-z ]+\n-+\n|\Z)", doc, re.M | re.S)
        assert match, f"{name}: its docstring has no {section!r} section"
        body = match.group(1)
        if section == "References":  # a citation: authors, a year, a title
            assert re.search(r"\b(19|20)\d\d\b", body) and ('"' in body or "*" in body), f"{name}: {body}"
        else:  # at least one related name and what it is
            assert re.search(r"^\S+.* : \S", body, re.M), f"{name}: {body}"


# --- the public torch functions ------------------------------------------------------------------
#
# Every public function of calibtut.metrics.torch and calibtut.regularizers, and the forward of the
# selective networks, refuses a NaN, an out-of-range value and a wrong shape in each tensor argument
# with an error that names it. The training steps call them with validate_args=False (no device
# read per step); that path is not walked here.

torch = pytest.importorskip("torch")

_T = 8


def _t(*values):
    return torch.tensor(values, dtype=torch.float64)


def _nan(x):
    x = x.clone()
    x.view(-1)[0] = float("nan")
    return x


def _set_first(value):
    def bad(x):
        x = x.clone()
        x.view(-1)[0] = value
        return x
    return bad


def _drop_last(x):
    return x[..., :-1]


def _rows(n=_T):
    return lambda: torch.linspace(0.05, 0.95, n, dtype=torch.float64)


_GAUSSIAN = {"y": lambda: torch.zeros(_T, dtype=torch.float64), "mean": lambda: torch.zeros(_T, dtype=torch.float64),
             "std": lambda: torch.ones(_T, dtype=torch.float64)}
_MIXTURE = {"y": lambda: torch.zeros(_T, dtype=torch.float64),
            "weights": lambda: torch.full((_T, 2), 0.5, dtype=torch.float64),
            "means": lambda: torch.zeros(_T, 2, dtype=torch.float64),
            "stds": lambda: torch.ones(_T, 2, dtype=torch.float64)}
_QUANTILES = {"quantiles": lambda: torch.zeros(_T, 3, dtype=torch.float64),
              "y": lambda: torch.zeros(_T, dtype=torch.float64), "levels": lambda: _t(0.1, 0.5, 0.9)}
_GAUSSIAN_BAD = {"y": [_nan, _drop_last], "mean": [_nan, _drop_last], "std": [_nan, _set_first(-1.0), _drop_last]}
_MIXTURE_BAD = {"y": [_nan, _drop_last], "weights": [_nan, _set_first(-0.5), _drop_last],
                "means": [_nan, _drop_last], "stds": [_nan, _set_first(-1.0), _drop_last]}
_QUANTILES_BAD = {"quantiles": [_nan, _drop_last], "y": [_nan, _drop_last],
                  "levels": [_nan, _set_first(0.0), _set_first(1.5), _drop_last]}
_PIT_BAD = {"pit": [_nan, _set_first(1.5), _set_first(-0.1), lambda x: x[:, None]]}


def _knn_forward(**kwargs):
    from calibtut.selective import KNNApproximation

    return KNNApproximation(3)(**kwargs)


def _localizer_forward(**kwargs):
    from calibtut.selective import Localizer

    return Localizer()(**kwargs)


def _qr_loss(**kwargs):
    from calibtut.regularizers import qr_loss

    return qr_loss(torch.tensor(1.0, dtype=torch.float64), **kwargs)


#: name -> (function, valid tensors by argument, bad transforms by argument)
TORCH_CASES = {
    "pit_gaussian": ("calibtut.metrics.torch", _GAUSSIAN, _GAUSSIAN_BAD),
    "nll_gaussian": ("calibtut.metrics.torch", _GAUSSIAN, _GAUSSIAN_BAD),
    "crps_gaussian": ("calibtut.metrics.torch", _GAUSSIAN, _GAUSSIAN_BAD),
    "nll_mixture": ("calibtut.metrics.torch", _MIXTURE, _MIXTURE_BAD),
    "crps_mixture": ("calibtut.metrics.torch", _MIXTURE, _MIXTURE_BAD),
    "pit_mixture": ("calibtut.metrics.torch", _MIXTURE, _MIXTURE_BAD),
    "pinball_loss": ("calibtut.metrics.torch", _QUANTILES, _QUANTILES_BAD),
    "pce_kde_quantile": ("calibtut.regularizers", _QUANTILES, _QUANTILES_BAD),
    "trunc_penalty": ("calibtut.regularizers", _QUANTILES, _QUANTILES_BAD),
    "pce_kde_pit": ("calibtut.regularizers", {"pit": _rows()}, _PIT_BAD),
    "pce_sort": ("calibtut.regularizers", {"pit": _rows()}, _PIT_BAD),
    "pit_negentropy": ("calibtut.regularizers", {"pit": _rows(16)}, _PIT_BAD),
    "qr_loss": (_qr_loss, {"pit": _rows(16)}, _PIT_BAD),
    "KNNApproximation.forward": (_knn_forward, {
        "distances": lambda: torch.rand(_T, 4, dtype=torch.float64),
        "neighbor_logits": lambda: torch.zeros(_T, 4, 3, dtype=torch.float64),
        "neighbor_labels": lambda: torch.arange(4 * _T).reshape(_T, 4) % 3}, {
        "distances": [_nan, _set_first(-1.0), _drop_last], "neighbor_logits": [_nan, _drop_last],
        "neighbor_labels": [_set_first(3), _set_first(-1), lambda x: x.double(), _drop_last]}),
    "Localizer.forward": (_localizer_forward, {
        "distances": lambda: torch.rand(_T, 4, dtype=torch.float64),
        "support_logits": lambda: torch.zeros(4, 3, dtype=torch.float64)}, {
        "distances": [_nan, _set_first(-1.0), _drop_last], "support_logits": [_nan, lambda x: x[:-1]]}),
}

#: Public names of the walked torch modules that take no tensor to check, or only inside a step.
TORCH_EXEMPT = {
    # building blocks that pit_negentropy calls inside the training step: type and shape checks only
    "spacing_entropy_torch", "abs_diff_row_sums", "hard_sort_matrix", "neural_sort_matrix", "soft_sort",
    "soft_sort_l2",
    # numpy, scalars or tables
    "check_spacing", "resolve_spacing", "spacing_entropy", "spacing_entropy_bias", "qr_spacing_002", "BASE_MODELS",
    "REGULARIZERS",
    # the (output, y) losses of the training loops: they run at each step, with validate_args=False inside
    "QuantileRegularizedLoss", "StudyLoss",
}


def test_the_torch_walk_knows_every_public_torch_function():
    walked = set()
    for module in ("calibtut.metrics.torch", "calibtut.regularizers"):
        walked |= set(importlib.import_module(module).__all__)
    unknown = sorted(walked - set(TORCH_CASES) - TORCH_EXEMPT)
    assert not unknown, f"public torch functions without a case in TORCH_CASES (or a reason in TORCH_EXEMPT): {unknown}"


def _torch_function(name):
    where = TORCH_CASES[name][0]
    return getattr(importlib.import_module(where), name) if isinstance(where, str) else where


_torch_cases = [pytest.param(name, arg, i, id=f"{name}.{arg}[{i}]")
                for name, (_, _, bad) in TORCH_CASES.items() for arg, transforms in bad.items()
                for i in range(len(transforms))]


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_torch_function_accepts_its_valid_tensors(name):
    out = _torch_function(name)(**{k: v() for k, v in TORCH_CASES[name][1].items()})
    assert bool(torch.isfinite(out).all())


@pytest.mark.parametrize(("name", "arg", "index"), _torch_cases)
def test_torch_function_refuses_a_bad_tensor_naming_it(name, arg, index):
    fn, valid, bad = _torch_function(name), TORCH_CASES[name][1], TORCH_CASES[name][2]
    kwargs = {k: v() for k, v in valid.items()}
    kwargs[arg] = bad[arg][index](kwargs[arg])
    with pytest.raises((TypeError, ValueError)) as info:
        fn(**kwargs)
    assert re.search(rf"\b{arg}\b", str(info.value)), f"{name}({arg}: bad #{index}): {info.value}"


@pytest.mark.parametrize(("network", "width"), [("GaussianMLP", 3), ("MixtureMLP", 3), ("SQRNet", 3),
                                                ("MCDropoutGaussian", 3), ("DeepEnsemble", 3)])
def test_network_forward_names_x_when_its_width_is_wrong(network, width):
    from calibtut import models

    model = getattr(models, network)(width, hidden=(4,), seed=0)
    model(torch.zeros(5, width))
    with pytest.raises(ValueError, match=rf"x must have {width} features"):
        model(torch.zeros(5, width + 1))
