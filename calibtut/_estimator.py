"""The estimator contract in code: the base class of every estimator of the package.

A hyper-parameter is a keyword-only argument of the constructor, stored
unchanged under its own name; ``fit`` checks them all against the class's
table ``_parameter_constraints`` (one rule per parameter, as scikit-learn's
parameter constraints are declared) and keeps the checked values in
``params_``, which the fitted methods read. So ``set_params`` followed by
``fit`` is checked exactly as the constructor's arguments are, and
``sklearn.base.clone`` rebuilds an estimator from :meth:`Estimator.get_params`.
"""

from __future__ import annotations

import functools
import inspect
import types

from calibtut._validation import check_rng

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def rule(check, **options):
    """A parameter rule: ``check(value, name, **options)``, returning the checked value.

    Examples
    --------
    >>> from calibtut._validation import check_int
    >>> rule(check_int, minimum=1)(3, "n_bins")
    3
    """
    return functools.partial(check, **options)


def optional(check, **options):
    """A parameter rule accepting None, else ``check(value, name, **options)``.

    Examples
    --------
    >>> from calibtut._validation import check_int
    >>> optional(check_int, minimum=1)(None, "n_folds") is None
    True
    """
    checked = rule(check, **options)
    return lambda value, name: None if value is None else checked(value, name)


def check_seed(seed, name="seed"):
    """A seed rule: an int, None or a ``numpy.random.Generator``, returned as a Generator.

    Examples
    --------
    >>> type(check_seed(0)).__name__
    'Generator'
    """
    return check_rng(seed)


def _is_default(value, default):
    if value is default:
        return True
    if type(value) is not type(default):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # arrays compare elementwise
        return False


class Estimator:
    """Base of the package's estimators: parameters, cloning, ``repr`` and their checks.

    A subclass declares its hyper-parameters once, in ``__init__`` (keyword-only,
    stored unchanged) and in ``_parameter_constraints`` (parameter name -> a
    rule ``f(value, name)`` returning the checked value, see :func:`rule`);
    ``_check_params`` adds the rules that tie several parameters together.
    ``fit`` starts with ``p = self._validate_params()``.

    Attributes
    ----------
    params_ : types.SimpleNamespace
        The checked hyper-parameters of the last :meth:`fit`, read by the
        fitted methods (a later :meth:`set_params` takes effect at the next
        ``fit``).

    See Also
    --------
    sklearn.base.BaseEstimator : the same interface, from which this one is
        derived.

    Examples
    --------
    >>> from calibtut._validation import check_int
    >>> class Binner(Estimator):
    ...     _parameter_constraints = {"n_bins": rule(check_int, minimum=1)}
    ...     def __init__(self, *, n_bins=10):
    ...         self.n_bins = n_bins
    ...     def fit(self):
    ...         self._validate_params()
    ...         return self
    >>> Binner(n_bins=5)
    Binner(n_bins=5)
    >>> Binner().set_params(n_bins=0).fit()
    Traceback (most recent call last):
    ...
    ValueError: n_bins must be >= 1, got 0
    """

    _parameter_constraints: dict = {}

    @classmethod
    def _get_param_names(cls):
        """The constructor's parameter names, in signature order."""
        if cls.__init__ is object.__init__:
            return []
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        variadic = [p.name for p in parameters if p.kind in _VARIADIC]
        if variadic:
            raise TypeError(f"{cls.__name__}.__init__ takes *args or **kwargs ({variadic}): an estimator's "
                            "parameters are named")
        return [p.name for p in parameters]

    def get_params(self, deep=True):
        """The hyper-parameters, by name (those of a nested estimator too when ``deep``).

        Parameters
        ----------
        deep : bool, default True
            Also return the parameters of a parameter that is itself an
            estimator, as ``<name>__<parameter>``.

        Returns
        -------
        dict
        """
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            params[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", v) for key, v in value.get_params().items())
        return params

    def set_params(self, **params):
        """Set hyper-parameters by name (``<name>__<parameter>`` for a nested estimator's).

        They are checked by the next :meth:`fit`.

        Parameters
        ----------
        **params
            New values.

        Returns
        -------
        Estimator
            ``self``.
        """
        names = self._get_param_names()
        nested = {}
        for key, value in params.items():
            name, nested_key, sub = key.partition("__")
            if name not in names:
                raise ValueError(f"{key!r} is not a parameter of {type(self).__name__}; its parameters are {names}")
            if nested_key:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def _check_params(self, p):
        """Rules that tie several checked parameters together (none by default)."""

    def _validate_params(self):
        """Check every hyper-parameter against ``_parameter_constraints``; keep and return them as ``params_``."""
        rules = type(self)._parameter_constraints
        names = self._get_param_names()
        undeclared = [name for name in names if name not in rules]
        if undeclared:
            raise TypeError(f"{type(self).__name__} declares no rule for {undeclared} in _parameter_constraints")
        p = types.SimpleNamespace(**{name: rules[name](getattr(self, name), name) for name in names})
        self._check_params(p)
        self.params_ = p
        return p

    def __repr__(self):
        defaults = {name: p.default for name, p in inspect.signature(type(self).__init__).parameters.items()}
        shown = [f"{name}={value!r}" for name, value in self.get_params(deep=False).items()
                 if not _is_default(value, defaults[name])]
        return f"{type(self).__name__}({', '.join(shown)})"
