"""Domain discriminators ``g(x) = P(source | x)``, each temperature-calibrated.

Both discriminators are trained on source (``s = 1``) against target
(``s = 0``) inputs with the two domains weighted equally (the paper's
balanced mixture ``r``, so that ``g = 1 / (1 + w)``), then calibrated by one
temperature on the logit, fitted on held-out source-vs-target data by the
balanced squared loss ``E_r[(g_hat - s)^2]`` (the third term of the paper's
Eq. 8; the paper's code does the same with SGD):

* :class:`LogisticDiscriminator`: scikit-learn logistic regression on
  standardised inputs (the paper's Section 5.1 description);
* :class:`MLPDiscriminator`: a one-hidden-layer torch network trained on the
  squared loss of its sigmoid output (the paper's experiments), with the
  package's training loop (Adam by default, or the paper code's SGD with
  momentum, StepLR and equal source and target batches; best held-out loss
  kept).

Both follow the estimator contract: settings (the held-out share
``val_fraction`` and the ``seed`` among them) are checked by the
constructor, ``fit(X_source, X_target, *, val=None)`` returns the fitted
estimator, fitted attributes end in ``_``, and a prediction before ``fit``
raises a ``RuntimeError``. The held-out pair defaults to a seeded 30 % split
of the inputs. Numpy in, numpy out.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import special
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from torch import nn

from calibtut._estimator import Estimator, check_seed, optional, rule
from calibtut._torch import resolve_device, seeded_rng
from calibtut._validation import as_float_array, check_bool, check_choice, check_fitted, check_int, check_real
from calibtut.models.mlp import check_hidden
from calibtut.models.training import fit as fit_model
from calibtut.recalibration.temperature import TemperatureScaling
from calibtut.shift.dann import _Cycler
from calibtut.shift.weights import discriminator_weights

__all__ = ["LogisticDiscriminator", "MLPDiscriminator", "check_domains"]


def check_domains(X_source, X_target, *, source_name="X_source", target_name="X_target"):
    """Check a source and a target sample: 2-d, finite, same feature dimension.

    Examples
    --------
    >>> Xs, Xt = check_domains([[0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]])
    >>> Xs.shape, Xt.shape
    ((1, 2), (2, 2))
    """
    X_source = as_float_array(X_source, source_name, ndim=2)
    X_target = as_float_array(X_target, target_name, ndim=2)
    if X_target.shape[1] != X_source.shape[1]:
        raise ValueError(
            f"{target_name} has {X_target.shape[1]} features but {source_name} has {X_source.shape[1]}: "
            "the target sample must live in the same feature space"
        )
    return X_source, X_target


def _stack(X_source, X_target):
    X = np.vstack([X_source, X_target])
    s = np.concatenate([np.ones(len(X_source)), np.zeros(len(X_target))])
    balance = np.concatenate(
        [np.full(len(X_source), 0.5 / len(X_source)), np.full(len(X_target), 0.5 / len(X_target))]
    )
    return X, s, balance * len(X)


def _split(X, val_fraction, rng):
    order = rng.permutation(len(X))
    n_val = int(round(val_fraction * len(X)))
    if n_val < 1 or n_val >= len(X):
        raise ValueError(f"val_fraction={val_fraction} leaves no training or no held-out point out of {len(X)}")
    return X[order[n_val:]], X[order[:n_val]]


class _Discriminator(Estimator):
    """Shared fit/calibrate/predict logic; subclasses provide ``_fit_raw`` and ``_logit``."""

    _parameter_constraints = {
        "val_fraction": rule(check_real, low=0, high=1, low_open=True, high_open=True),
        "seed": check_seed,
    }

    def fit(self, X_source, X_target, *, val=None):
        """Train the discriminator, then calibrate its temperature on held-out data.

        Parameters
        ----------
        X_source, X_target : array_like of shape (n, d) and (m, d)
            Unlabelled inputs of the two domains.
        val : tuple (X_source_val, X_target_val), optional
            Held-out inputs for model selection and the temperature; default:
            a seeded ``val_fraction`` split of each domain.

        Returns
        -------
        self
        """
        p = self._validate_params()
        X_source, X_target = check_domains(X_source, X_target)
        rng = p.seed
        if val is None:
            X_source, Xs_val = _split(X_source, p.val_fraction, rng)
            X_target, Xt_val = _split(X_target, p.val_fraction, rng)
        else:
            if not isinstance(val, (tuple, list)) or len(val) != 2:
                raise TypeError("val must be a pair (X_source_val, X_target_val)")
            Xs_val, Xt_val = check_domains(val[0], val[1], source_name="val[0]", target_name="val[1]")
            if Xs_val.shape[1] != X_source.shape[1]:
                raise ValueError(f"val[0] has {Xs_val.shape[1]} features, X_source has {X_source.shape[1]}")
        self.n_features_in_ = X_source.shape[1]
        self._fit_raw(X_source, X_target, Xs_val, Xt_val, rng)
        X_val, s_val, w_val = _stack(Xs_val, Xt_val)
        z = self._logit(X_val)
        ts = TemperatureScaling(loss="brier").fit(np.column_stack([np.zeros_like(z), z]), s_val, cal_weight=w_val)
        self.temperature_ = ts.temperature_
        return self

    def _checked(self, X):
        check_fitted(self, "temperature_")
        X = as_float_array(X, "X", ndim=2)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the discriminator was fitted on {self.n_features_in_}")
        return X

    def decision_function(self, X):
        """Calibrated logit of the source domain, ``logit / temperature_``."""
        return self._logit(self._checked(X)) / self.temperature_

    def predict_source_proba(self, X):
        """Calibrated ``g_hat(x) = P(source | x)``, shape ``(n,)``."""
        return special.expit(self.decision_function(X))

    def weights(self, X, *, kind="ratio", upper=1e3):
        """Importance weights at ``X`` (see :func:`calibtut.shift.discriminator_weights`)."""
        g = np.maximum(self.predict_source_proba(X), np.finfo(float).tiny)
        return discriminator_weights(g, kind=kind, upper=upper)


class LogisticDiscriminator(_Discriminator):
    """Logistic-regression domain discriminator with a calibrated temperature.

    Parameters
    ----------
    C : float, default 1.0
        Inverse L2 penalty of :class:`sklearn.linear_model.LogisticRegression` (> 0).
    max_iter : int, default 1000
        At least 1.
    val_fraction : float, default 0.3
        Share of each domain held out for the temperature when ``fit`` is
        given no ``val`` pair, in ``(0, 1)``.
    seed : int, numpy.random.Generator or None, default None
        Seeds the held-out split (the logistic fit itself is deterministic).

    Attributes
    ----------
    pipeline_ : sklearn.pipeline.Pipeline
        ``StandardScaler`` then ``LogisticRegression`` (balanced classes).
    temperature_ : float
        Temperature dividing the logit, fitted on the held-out pair.
    n_features_in_ : int

    See Also
    --------
    MLPDiscriminator : the same weights from a small network.
    calibtut.shift.SGDTemperatureScaling : temperature scaling fitted with these weights.

    References
    ----------
    - Bickel, Brückner & Scheffer (2009), "Discriminative learning under covariate shift", Journal
      of Machine Learning Research 10, 2137-2155.
    - Park, Bastani, Weimer & Lee (2020), "Calibrated prediction with covariate shift via
      unsupervised domain adaptation", Proceedings of the 23rd International Conference on
      Artificial Intelligence and Statistics (AISTATS).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xs, Xt = rng.normal(size=(400, 1)), rng.normal(1.0, 1.0, size=(400, 1))
    >>> d = LogisticDiscriminator(seed=0).fit(Xs, Xt)
    >>> g = d.predict_source_proba([[0.5]])   # the true g is 1/2 at x = 1/2
    >>> bool(abs(g[0] - 0.5) < 0.1)
    True
    """

    _parameter_constraints = {
        **_Discriminator._parameter_constraints,
        "C": rule(check_real, low=0, low_open=True),
        "max_iter": rule(check_int, minimum=1),
    }

    def __init__(self, *, C=1.0, max_iter=1000, val_fraction=0.3, seed=None):
        self.C = C
        self.max_iter = max_iter
        self.val_fraction = val_fraction
        self.seed = seed

    def _fit_raw(self, X_source, X_target, Xs_val, Xt_val, rng):
        X, s, w = _stack(X_source, X_target)
        p = self.params_
        self.pipeline_ = make_pipeline(StandardScaler(), LogisticRegression(C=p.C, max_iter=p.max_iter))
        self.pipeline_.fit(X, s, logisticregression__sample_weight=w)

    def _logit(self, X):
        return self.pipeline_.decision_function(X)


def _check_hidden(hidden, name="hidden"):
    return check_hidden(hidden)


def _check_device(device, name="device"):
    return resolve_device(device)


class _MLP(nn.Module):
    def __init__(self, n_in, hidden, dropout):
        super().__init__()
        layers, width = [], n_in
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(dropout)]
            width = h
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x).squeeze(-1)


class _BalancedSquaredLoss:
    """``sum_i v_i (sigmoid(z_i) - s_i)^2 / sum_i v_i`` with per-domain weights ``v``."""

    def __init__(self, source_weight, target_weight):
        self.source_weight, self.target_weight = source_weight, target_weight

    def __call__(self, z, s):
        v = s * self.source_weight + (1 - s) * self.target_weight
        return torch.sum(v * (torch.sigmoid(z) - s) ** 2) / torch.sum(v)


class _BalancedBatches:
    """``batches`` of :func:`calibtut.models.fit` on ``_stack``'s rows: equal source and target halves.

    Each batch holds ``min(batch_size, n_source, n_target)`` points of each
    domain, the shorter domain cycled, ``ceil(max(n_source, n_target) /
    batch_size)`` batches an epoch (the paper code's ``JointLoader``, as
    :func:`calibtut.shift.fit_dann` draws them).
    """

    def __init__(self, n_source, n_target, batch_size):
        self.n_source, self.size = n_source, min(batch_size, n_source, n_target)
        self.per_epoch = math.ceil(max(n_source, n_target) / batch_size)
        self.n_target, self.cyclers = n_target, None

    def __call__(self, generator):
        if self.cyclers is None:
            self.cyclers = _Cycler(self.n_source, generator), _Cycler(self.n_target, generator)
        source, target = self.cyclers
        return [torch.cat([source.take(self.size), self.n_source + target.take(self.size)])
                for _ in range(self.per_epoch)]


class MLPDiscriminator(_Discriminator):
    """A small torch MLP discriminator trained by the squared loss, then temperature-calibrated.

    Parameters
    ----------
    hidden : int or tuple of int, default (84,)
        Hidden widths (the paper: one layer as wide as the 84-d features).
    dropout : float, default 0.5
        In ``[0, 1)``.
    epochs : int, default 100
    batch_size : int, default 200
    lr : float, default 1e-3
        Initial learning rate (>= 0).
    weight_decay : float, default 5e-4
        At least 0.
    patience : int or None, default 20
        Epochs without improvement of the held-out balanced loss before
        stopping (>= 1); ``None`` trains all epochs.
    optimizer : {"adam", "sgd"}, default "adam"
        Adam, or SGD with ``momentum`` (the paper's code).
    momentum : float, default 0.0
        SGD momentum in ``[0, 1)`` (the paper's code: 0.9); ``optimizer="sgd"`` only.
    lr_step : int or None, default None
        StepLR: multiply the learning rate by ``lr_gamma`` every ``lr_step``
        epochs (>= 1; the paper's code: 100); ``None`` keeps it constant.
    lr_gamma : float, default 0.5
        The StepLR factor (> 0).
    balanced_batches : bool, default False
        Draw every minibatch as ``batch_size`` source plus ``batch_size``
        target points, cycling the shorter domain, and train on their plain
        mean squared loss (the paper's code); ``False`` shuffles the pooled
        points into batches of ``batch_size`` and weights the two domains
        equally in the loss.
    val_fraction : float, default 0.3
        Share of each domain held out for the temperature when ``fit`` is
        given no ``val`` pair, in ``(0, 1)``.
    seed : int, numpy.random.Generator or None, default None
        Seeds the held-out split, the initialisation, dropout and batch order.
    device : {"cpu", "cuda"}, default "cpu"
    progress : bool, default False

    Attributes
    ----------
    model_ : torch.nn.Module
    history_ : calibtut.models.FitHistory
    temperature_ : float
    n_features_in_ : int

    See Also
    --------
    LogisticDiscriminator : the same weights from a logistic regression.
    calibtut.shift.SGDTemperatureScaling : temperature scaling fitted with these weights.

    References
    ----------
    - Park, Bastani, Weimer & Lee (2020), "Calibrated prediction with covariate shift via
      unsupervised domain adaptation", Proceedings of the 23rd International Conference on
      Artificial Intelligence and Statistics (AISTATS).
    - Bickel, Brückner & Scheffer (2009), "Discriminative learning under covariate shift", Journal
      of Machine Learning Research 10, 2137-2155.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Xs, Xt = rng.normal(size=(300, 2)), rng.normal(2.0, 1.0, size=(300, 2))
    >>> d = MLPDiscriminator(hidden=8, epochs=30, seed=0).fit(Xs, Xt)
    >>> g = d.predict_source_proba([[-1.0, -1.0], [3.0, 3.0]])
    >>> bool(g[0] > 0.8 and g[1] < 0.2)
    True

    The paper code's schedule (SGD with momentum, StepLR, 200 + 200 batches):

    >>> d = MLPDiscriminator(hidden=8, epochs=3, optimizer="sgd", momentum=0.9, lr_step=2,
    ...                      balanced_batches=True, patience=None, seed=0).fit(Xs, Xt)
    >>> d.history_.lr
    [0.001, 0.001, 0.0005]
    """

    _parameter_constraints = {
        **_Discriminator._parameter_constraints,
        "hidden": _check_hidden,
        "dropout": rule(check_real, low=0, high=1, high_open=True),
        "epochs": rule(check_int, minimum=1),
        "batch_size": rule(check_int, minimum=1),
        "lr": rule(check_real, low=0),
        "weight_decay": rule(check_real, low=0),
        "patience": optional(check_int, minimum=1),
        "optimizer": rule(check_choice, choices=("adam", "sgd")),
        "momentum": rule(check_real, low=0, high=1, high_open=True),
        "lr_step": optional(check_int, minimum=1),
        "lr_gamma": rule(check_real, low=0, low_open=True),
        "balanced_batches": check_bool,
        "device": _check_device,
        "progress": check_bool,
    }

    def __init__(self, *, hidden=(84,), dropout=0.5, epochs=100, batch_size=200, lr=1e-3, weight_decay=5e-4,
                 patience=20, optimizer="adam", momentum=0.0, lr_step=None, lr_gamma=0.5, balanced_batches=False,
                 val_fraction=0.3, seed=None, device="cpu", progress=False):
        self.hidden = hidden
        self.dropout = dropout
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.patience = patience
        self.optimizer = optimizer
        self.momentum = momentum
        self.lr_step = lr_step
        self.lr_gamma = lr_gamma
        self.balanced_batches = balanced_batches
        self.val_fraction = val_fraction
        self.seed = seed
        self.device = device
        self.progress = progress

    def _check_params(self, p):
        if p.momentum and p.optimizer != "sgd":
            raise ValueError(f"momentum={p.momentum} needs optimizer='sgd', got optimizer={p.optimizer!r}")

    def _fit_raw(self, X_source, X_target, Xs_val, Xt_val, rng):
        p = self.params_
        seed = int(rng.integers(2**31))
        with seeded_rng(seed):
            self.model_ = _MLP(X_source.shape[1], p.hidden, p.dropout)
        X, s, _ = _stack(X_source, X_target)
        Xv, sv, _ = _stack(Xs_val, Xt_val)
        if p.balanced_batches:  # equal halves already balance the domains: the plain mean
            loss = _BalancedSquaredLoss(1.0, 1.0)
            batches = _BalancedBatches(len(X_source), len(X_target), p.batch_size)
        else:
            loss = _BalancedSquaredLoss(0.5 / len(X_source), 0.5 / len(X_target))
            batches = None
        val_loss = _BalancedSquaredLoss(0.5 / len(Xs_val), 0.5 / len(Xt_val))
        self.history_ = fit_model(
            self.model_, X, s, loss=loss, val=(Xv, sv), val_loss=val_loss, epochs=p.epochs,
            batch_size=p.batch_size, lr=p.lr, weight_decay=p.weight_decay, patience=p.patience,
            optimizer=p.optimizer, momentum=p.momentum, lr_step=p.lr_step, lr_gamma=p.lr_gamma,
            batches=batches, seed=seed, device=p.device, progress=p.progress,
        )
        self.model_.cpu()

    def _logit(self, X):
        with torch.no_grad():
            return self.model_(torch.as_tensor(X, dtype=torch.float32)).double().numpy()
