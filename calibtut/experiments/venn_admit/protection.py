"""When does Venn-ADMIT protect you? Synthetic shifts with a known truth (paper 001, chapter 9).

A binary task in the plane whose truth is known: ``x2 ~ N(0, 1)``, the
signed distance to a curved class boundary ``u ~ N(0, 1.5^2)``,
``x1 = 0.1 x2^3 + u`` and ``P(y = 1 | x) = sigmoid(3 u)``. The network is a
*linear* logistic regression (wrong where the boundary bends), its exemplar
vector is ``x`` itself, and the paper's KNN approximation, ``q``, ``d``,
``omega`` and the localizer are fitted on held-out points
(:mod:`calibtut.selective.knn_approximation`). Test points come from one of
four worlds (:func:`shifted_sample`), each with a ``strength`` in [0, 1]:

* ``"exchangeable"``: the training law (strength 0 of every shift);
* ``"off-support"``: ``x2`` moves by ``4 strength`` along the boundary, off
  the calibration support, where the linear network is wrong (``d`` grows);
* ``"boundary"``: ``u`` shrinks by the factor ``1 - 0.75 strength``: points
  crowd the boundary with ``P(y | x)`` unchanged;
* ``"label noise"``: each test label flips with probability
  ``0.2 strength``, which neither ``q`` nor ``d`` (functions of ``x``) can see.

:func:`protection_runs` (or, task by task, :func:`run_protection_config`) fits the whole pipeline per seed and records, for
Venn-ADMIT (weighted and unweighted "-w", each also censored to ``q = K``,
"_qK"), ADMIT and split-conformal singletons (``Conf_base``), the admitted
points and correct ones per true and per predicted class, and the signals
that the method sees (:func:`separation_signals`);
:func:`protection_summary` pools them with a binomial band around
``1 - alpha``; :func:`sentiment_signals` computes the same signals on the
Sentiment task's points (:func:`~calibtut.experiments.venn_admit.va_points`),
and the two figures draw the accuracy against the share admitted by shift
strength and the map of the signals against the admitted accuracy.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import cross_val_predict

from calibtut._validation import check_alpha, check_choice, check_frame, check_int, check_real, check_rng
from calibtut.conformal.sets import split_conformal_sets
from calibtut.experiments.venn_admit._common import N_NEIGHBORS, with_prediction
from calibtut.experiments.venn_admit.tasks import va_points
from calibtut.selective.admit import VennADMIT, admitted_accuracy_by_class
from calibtut.selective.features import KNNFeatures
from calibtut.selective.knn_approximation import band_width
from calibtut.selective.pipeline import KNNFeaturePipeline

__all__ = [
    "PROTECTION_METHODS",
    "SHIFTS",
    "plot_accuracy_share",
    "plot_protection_map",
    "protection_map",
    "protection_runs",
    "protection_side_by_side",
    "protection_summary",
    "protection_tables",
    "representation_signals",
    "run_protection_config",
    "run_sentiment_signals",
    "sentiment_by_class",
    "sentiment_map_points",
    "sentiment_signals",
    "separation_signals",
    "shifted_sample",
]

#: The test worlds of :func:`shifted_sample`; "exchangeable" is strength 0 of the others.
SHIFTS = ("exchangeable", "off-support", "boundary", "label noise")

#: The methods of :func:`protection_runs`, conformal baseline first.
PROTECTION_METHODS = ("Conf_base", "ADMIT", "Venn-ADMIT-w", "Venn-ADMIT_qK-w", "Venn-ADMIT", "Venn-ADMIT_qK")

_CURVE, _U_SCALE, _SLOPE = 0.1, 1.5, 3.0  # x1 = 0.1 x2^3 + u, u ~ N(0, 1.5^2), P(y=1|x) = sigmoid(3u)
_MOVE, _SQUEEZE, _FLIP = 4.0, 0.75, 0.2  # the shifts at strength 1


def shifted_sample(n, seed=None, *, shift="exchangeable", strength=0.0):
    """Points and labels of the synthetic task, drawn from one of the test worlds.

    ``x2 ~ N(0, 1)`` and ``u ~ N(0, 1.5^2)``, ``x = (0.1 x2^3 + u, x2)``, and
    ``y = 1`` with probability ``sigmoid(3 u)``: ``u`` is the signed distance
    (along ``x1``) to the curved boundary ``x1 = 0.1 x2^3``. The shifts, at
    ``strength`` ``s``: ``"off-support"`` adds ``4 s`` to ``x2``;
    ``"boundary"`` multiplies ``u`` by ``1 - 0.75 s``; ``"label noise"`` flips
    each label with probability ``0.2 s``. The first two change only the law
    of ``x`` (``P(y | x)`` is the same function); the third changes only
    ``P(y | x)``.

    Parameters
    ----------
    n : int
        Number of points (at least 1).
    seed : int, numpy.random.Generator or None
        Source of the sample.
    shift : {"exchangeable", "off-support", "boundary", "label noise"}, default "exchangeable"
        The test world.
    strength : float, default 0.0
        Strength of the shift in [0, 1] (ignored for ``"exchangeable"``).

    Returns
    -------
    x : numpy.ndarray of shape (n, 2)
    y : numpy.ndarray of int, shape (n,)

    Examples
    --------
    >>> x, y = shifted_sample(4, seed=0, shift="off-support", strength=1.0)
    >>> x.shape, bool(x[:, 1].mean() > 2), y.tolist()
    ((4, 2), True, [0, 0, 1, 1])
    """
    n = check_int(n, "n", minimum=1)
    check_choice(shift, "shift", SHIFTS)
    strength = check_real(strength, "strength", low=0, high=1)
    rng = check_rng(seed)
    x2 = rng.normal(size=n) + (_MOVE * strength if shift == "off-support" else 0.0)
    u = _U_SCALE * rng.normal(size=n) * (1 - _SQUEEZE * strength if shift == "boundary" else 1.0)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-_SLOPE * u))).astype(np.int64)
    if shift == "label noise":
        y = np.where(rng.uniform(size=n) < _FLIP * strength, 1 - y, y)
    return np.column_stack([_CURVE * x2**3 + u, x2]), y


class _Pipeline:
    """The network and the fitted :class:`~calibtut.selective.pipeline.KNNFeaturePipeline` of one seed.

    The KNN's distance temperature starts at the median distance of its fitting points to their
    neighbours, the localizer's at the median ``d`` of ``D_ca^mc``.
    """

    def __init__(self, rng, n_train, n_knn, n_mc, n_vp, epochs, seed):
        (x_tr, y_tr), (x_knn, _), (x_cal, y_cal) = (shifted_sample(m, rng) for m in (n_train, n_knn, n_mc + n_vp))
        self.net = LogisticRegression().fit(x_tr, y_tr)
        self.knn = KNNFeaturePipeline(n_neighbors=N_NEIGHBORS, knn_eta="median", epochs=epochs)
        self.knn.fit(x_tr, self._logits(x_tr), y_tr)
        fitting = self.knn.kneighbors(x_knn)
        self.knn.fit_knn(None, self._logits(x_knn), neighbours=fitting, seed=seed)
        cal = self.features(x_cal, y_cal)
        self.mc, self.vp = cal[np.arange(n_mc)], cal[np.arange(n_mc, n_mc + n_vp)]
        self.omega = band_width(self.mc)
        self.knn.fit_localizer(x_knn, x_cal[n_mc:], eta=float(np.median(self.mc.d)) + 1e-12, neighbours=fitting,
                               seed=seed)

    def _logits(self, x):
        z = self.net.decision_function(x)
        return np.column_stack([-z / 2, z / 2])

    def features(self, x, y):
        """The labelled :class:`KNNFeatures` of points ``x``."""
        return self.knn.transform(x, y)

    def psi(self, x):
        """The localizer's weights of points ``x`` over the Venn split."""
        return self.knn.localizer_weights(x)


def _admissions(pipe, model, cal, test, x_test, alpha):
    """Admitted points of every method of :data:`PROTECTION_METHODS` on one test set."""
    sets = with_prediction(split_conformal_sets(cal.probs, cal.labels, test.probs, alpha), test.probs)
    admit_sets = model.admit_.predict_set(test)
    qk = test.q == N_NEIGHBORS
    admitted = {"Conf_base": sets.sum(axis=1) == 1, "ADMIT": admit_sets.sum(axis=1) == 1,
                "Venn-ADMIT-w": model.predict_admitted(test),
                "Venn-ADMIT": model.predict_admitted(test, localizer_psi=pipe.psi(x_test))}
    admitted["Venn-ADMIT_qK-w"] = admitted["Venn-ADMIT-w"] & qk
    admitted["Venn-ADMIT_qK"] = admitted["Venn-ADMIT"] & qk
    return admitted


def separation_signals(cal, test, *, cap=N_NEIGHBORS, seed=0):
    """How well the method's own signals ``q`` and ``d`` see a shift, and what they miss.

    Parameters
    ----------
    cal : KNNFeatures
        Labelled calibration points (the Venn split).
    test : KNNFeatures
        Labelled test points.
    cap : int, default 25
        The largest ``q`` (``K``).
    seed : int, default 0
        Seed of the two-fold split of the separation classifier.

    Returns
    -------
    dict
        ``separation``: AUROC of a logistic regression on ``(q, [q = K], d)``,
        two-fold cross-fitted, telling test from calibration points (0.5: the
        signals cannot see the shift; 1: they see it fully);
        ``error_auroc``: AUROC of ``d`` for the KNN's errors among the test
        points with ``q = K`` (NaN if they are all right or all wrong);
        ``qk_share_cal``, ``qk_share_test``: shares of ``q = K``;
        ``qk_accuracy_cal``, ``qk_accuracy_test``: the KNN's accuracy there;
        ``qk_accuracy_cal_pred<c>``, ``qk_accuracy_test_pred<c>``: that
        accuracy among the points predicted class ``c`` (for each class; NaN
        if there are none): the Venn categories that can admit are these
        ``(q = K, predicted class)`` cells, so their calibration accuracy is
        the margin Venn-ADMIT has above ``1 - alpha``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> def bundle(d):
    ...     probs = np.full((200, 2), 0.5)
    ...     probs[:, 1] += 0.1
    ...     return KNNFeatures(probs / probs.sum(1, keepdims=True), rng.integers(0, 2, 200), np.full(200, 25), d)
    >>> out = separation_signals(bundle(rng.uniform(0, 1, 200)), bundle(rng.uniform(2, 3, 200)))
    >>> out["separation"], out["qk_share_test"]
    (1.0, 1.0)
    """
    cap = check_int(cap, "cap", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    for name, bundle in (("cal", cal), ("test", test)):
        if not isinstance(bundle, KNNFeatures) or bundle.labels is None:
            raise TypeError(f"{name} must be a labelled KNNFeatures bundle, got {type(bundle).__name__}"
                            + (" without labels" if isinstance(bundle, KNNFeatures) else ""))
    q = np.concatenate([cal.q, test.q])
    d = np.concatenate([cal.d, test.d])
    is_test = np.r_[np.zeros(len(cal)), np.ones(len(test))]
    signals = np.column_stack([q / cap, q == cap, d / max(float(np.std(d)), 1e-12)])
    folds = np.random.default_rng(seed).permutation(len(q)) % 2
    score = cross_val_predict(LogisticRegression(), signals, is_test, groups=folds, cv=_two_folds(folds),
                              method="decision_function")
    out = {"separation": float(roc_auc_score(is_test, score))}
    wrong = test.probs.argmax(axis=1) != test.labels
    top = test.q == cap
    both = 0 < wrong[top].sum() < top.sum()
    out["error_auroc"] = float(roc_auc_score(wrong[top], test.d[top])) if both else float("nan")
    for name, bundle in (("cal", cal), ("test", test)):
        top = bundle.q == cap
        out[f"qk_share_{name}"] = float(top.mean())
        predicted = bundle.probs.argmax(axis=1)[top]
        correct = predicted == bundle.labels[top]
        out[f"qk_accuracy_{name}"] = float(correct.mean()) if top.any() else float("nan")
        for c in range(bundle.probs.shape[1]):
            cell = predicted == c
            out[f"qk_accuracy_{name}_pred{c}"] = float(correct[cell].mean()) if cell.any() else float("nan")
    return out


def _two_folds(folds):
    return [(np.flatnonzero(folds != k), np.flatnonzero(folds == k)) for k in (0, 1)]


def protection_runs(n_seeds, *, strengths=(0.25, 0.5, 0.75, 1.0), n_train=2000, n_knn=400, n_mc=1500, n_vp=1500,
                    n_test=1500, alpha=0.1, kappa=50, epochs=10, seed=0):
    """Venn-ADMIT, ADMIT and split-conformal singletons in every test world, over seeds.

    Each run (seed ``seed + run``) draws a training set, a KNN-fitting set,
    ADMIT's calibration split ``mc`` and the Venn split ``vp`` from the
    training law, fits the linear network, the KNN approximation (``K = 25``)
    and the localizer, and then, for an exchangeable test set and each shift
    of :data:`SHIFTS` at each strength, records every method's admissions.
    ``Conf_base`` is split-conformal LAC on the KNN's probabilities,
    calibrated on ``mc`` and ``vp`` together, with the prediction added to
    every set (the paper's convention); its admitted points are its singletons.

    Parameters
    ----------
    n_seeds : int
        Number of runs (at least 1).
    strengths : sequence of float, default (0.25, 0.5, 0.75, 1.0)
        Strengths of the shifts, each in (0, 1].
    n_train, n_knn, n_mc, n_vp, n_test : int
        Sizes of the training set (at least 100), the KNN-fitting set, the two
        calibration splits and each test set (at least 10 each).
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    kappa : int, default 50
        ADMIT's smallest band count per class.
    epochs : int, default 10
        Epochs of the KNN and localizer fits (at least 1).
    seed : int, default 0
        Seed of the first run (non-negative).

    Returns
    -------
    dict
        ``"admissions"``: a DataFrame with columns ``run``, ``shift``,
        ``strength``, ``method``, ``by`` (``"true"`` or ``"predicted"``),
        ``class``, ``n`` (test points of the class), ``admitted`` and
        ``correct``; ``"signals"``: a DataFrame with ``run``, ``shift``,
        ``strength`` and the entries of :func:`separation_signals` (the Venn
        split against the test set).

    Examples
    --------
    >>> out = protection_runs(1, strengths=(1.0,), n_train=300, n_knn=100, n_mc=200, n_vp=200, n_test=100,
    ...                       kappa=9, epochs=2)
    >>> sorted(out["admissions"]["shift"].unique())
    ['boundary', 'exchangeable', 'label noise', 'off-support']
    """
    n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
    strengths = [check_real(s, "strengths", low=0, high=1, low_open=True) for s in strengths]
    n_train = check_int(n_train, "n_train", minimum=100)
    sizes = [check_int(v, name, minimum=10) for v, name in ((n_knn, "n_knn"), (n_mc, "n_mc"), (n_vp, "n_vp"),
                                                          (n_test, "n_test"))]
    alpha = check_alpha(alpha)
    kappa = check_int(kappa, "kappa", minimum=math.ceil(1 / alpha) - 1)
    epochs = check_int(epochs, "epochs", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    worlds = [("exchangeable", 0.0)] + [(s, t) for s in SHIFTS[1:] for t in strengths]
    rows, signals = [], []
    for run in range(n_seeds):
        rng = np.random.default_rng(seed + run)
        pipe = _Pipeline(rng, n_train, *sizes[:3], epochs, seed + run)
        model = VennADMIT(alpha=alpha, omega=pipe.omega, kappa=kappa).fit(pipe.mc, pipe.vp)
        cal = KNNFeatures(np.concatenate([pipe.mc.probs, pipe.vp.probs]),
                          np.concatenate([pipe.mc.labels, pipe.vp.labels]), np.concatenate([pipe.mc.q, pipe.vp.q]),
                          np.concatenate([pipe.mc.d, pipe.vp.d]))
        for shift, strength in worlds:
            x, y = shifted_sample(sizes[3], rng, shift=shift, strength=strength)
            test = pipe.features(x, y)
            world = {"run": run, "shift": shift, "strength": strength}
            signals.append({**world, **separation_signals(pipe.vp, test, seed=seed + run)})
            prediction = test.probs.argmax(axis=1)
            for method, chosen in _admissions(pipe, model, cal, test, x, alpha).items():
                for by, stratum in (("true", y), ("predicted", prediction)):
                    for c in range(2):
                        of_class = chosen & (stratum == c)
                        rows.append({**world, "method": method, "by": by, "class": c,
                                     "n": int(np.sum(stratum == c)), "admitted": int(of_class.sum()),
                                     "correct": int(np.sum(of_class & (prediction == y)))})
    return {"admissions": pd.DataFrame(rows), "signals": pd.DataFrame(signals)}


def _strength_list(strengths):
    """Shift strengths from a sequence or a comma-separated str (the form a sweep task holds)."""
    if isinstance(strengths, str):
        try:
            strengths = [float(t) for t in strengths.split(",")]
        except ValueError:
            raise ValueError(f"strengths must be numbers separated by commas, got {strengths!r}") from None
    try:
        return list(strengths)
    except TypeError:
        raise TypeError(f"strengths must be a sequence of numbers or a comma-separated str, got {strengths!r}") from None


def run_protection_config(seed=0, *, strengths="0.25,0.5,0.75,1.0", n_train=2000, n_knn=400, n_mc=1500,
                          n_vp=1500, n_test=1500, alpha=0.1, kappa=50, epochs=10):
    """One run of :func:`protection_runs`, as a task of :func:`calibtut.run.sweep`.

    ``run_protection_config(seed=s)`` is run ``s`` of ``protection_runs(n, seed=0)``
    for any ``n > s``, so a sweep over seeds ``0..n-1`` gives the same pooled
    tables as :func:`protection_runs`, stored task by task.

    Parameters
    ----------
    seed : int, default 0
        Seed of the run (non-negative); it is also the ``run`` column.
    strengths : str or sequence of float, default "0.25,0.5,0.75,1.0"
        Strengths of the shifts, each in (0, 1]; a task holds them as a
        comma-separated str.
    n_train, n_knn, n_mc, n_vp, n_test, alpha, kappa, epochs
        As in :func:`protection_runs`.

    Returns
    -------
    pandas.DataFrame
        The rows of both frames of :func:`protection_runs`, marked by a column
        ``table`` (``"admissions"`` or ``"signals"``);
        :func:`protection_tables` splits them again.

    Examples
    --------
    >>> rows = run_protection_config(3, strengths="1.0", n_train=300, n_knn=100, n_mc=200, n_vp=200,
    ...                              n_test=100, kappa=9, epochs=2)
    >>> sorted(rows["table"].unique()), rows["run"].unique().tolist()
    (['admissions', 'signals'], [3])
    """
    seed = check_int(seed, "seed", minimum=0)
    out = protection_runs(1, strengths=_strength_list(strengths), n_train=n_train, n_knn=n_knn, n_mc=n_mc,
                          n_vp=n_vp, n_test=n_test, alpha=alpha, kappa=kappa, epochs=epochs, seed=seed)
    return pd.concat([frame.assign(table=name, run=seed) for name, frame in out.items()], ignore_index=True)


def protection_tables(rows):
    """The two frames of :func:`protection_runs` from rows of :func:`run_protection_config` (a sweep's, say).

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of one or more :func:`run_protection_config` calls, with their
        ``table`` column; further columns (a sweep's task keys) are kept.

    Returns
    -------
    dict
        ``"admissions"`` and ``"signals"``, as :func:`protection_runs` returns
        them (counts and classes as integers again).

    Examples
    --------
    >>> rows = run_protection_config(0, strengths="1.0", n_train=300, n_knn=100, n_mc=200, n_vp=200,
    ...                              n_test=100, kappa=9, epochs=2)
    >>> tables = protection_tables(rows)
    >>> tables["admissions"]["admitted"].dtype.kind, len(tables["signals"])
    ('i', 4)
    """
    check_frame(rows, "rows", ["table", "run", "shift", "strength"])
    unknown = set(rows["table"]) - {"admissions", "signals"}
    if unknown:
        raise ValueError(f"rows['table'] must hold 'admissions' or 'signals', got {sorted(map(str, unknown))}")
    out = {}
    for name in ("admissions", "signals"):
        part = rows[rows["table"] == name].drop(columns="table").dropna(axis=1, how="all")
        out[name] = part.reset_index(drop=True)
    counts = ["run", "class", "n", "admitted", "correct"]
    out["admissions"] = out["admissions"].astype({c: int for c in counts if c in out["admissions"]})
    return out


def protection_side_by_side(summaries, *, strength=1.0, methods=("Conf_base", "Venn-ADMIT"), classes=("0", "all"),
                            columns=("share", "accuracy", "holds")):
    """Several pooled summaries (``ci`` and ``full``, say) side by side, at one strength of every shift.

    Parameters
    ----------
    summaries : dict of str to pandas.DataFrame
        Label (a column level) to the output of :func:`protection_summary`.
    strength : float, default 1.0
        The strength shown for the shifts; the exchangeable world has strength 0.
    methods : sequence of str, default ("Conf_base", "Venn-ADMIT")
        Methods shown, in this order.
    classes : sequence of str, default ("0", "all")
        True classes shown.
    columns : sequence of str, default ("share", "accuracy", "holds")
        Columns shown per summary, from ``n``, ``admitted``, ``share``,
        ``accuracy``, ``band`` and ``holds``.

    Returns
    -------
    pandas.DataFrame
        Index ``shift``, ``method``, ``class``; columns (label, column) for
        each label of ``summaries`` and each of ``columns``.

    Examples
    --------
    >>> s = pd.DataFrame({"shift": ["exchangeable", "off-support"], "strength": [0.0, 1.0],
    ...                   "method": "Conf_base", "by": "true", "class": "all", "n": 10, "admitted": 5,
    ...                   "share": 0.5, "accuracy": [0.9, 0.6], "band": 0.8, "holds": [True, False]})
    >>> protection_side_by_side({"ci": s}, classes=("all",))[("ci", "holds")].tolist()
    [True, False]
    """
    if not isinstance(summaries, dict) or not summaries:
        raise TypeError(f"summaries must be a non-empty dict of label to summary, got {type(summaries).__name__}")
    strength = check_real(strength, "strength", low=0, high=1, low_open=True)
    columns = list(columns)
    unknown = [c for c in columns if c not in ("n", "admitted", "share", "accuracy", "band", "holds")]
    if unknown or not columns:
        raise ValueError(f"columns must name columns of a summary (n, admitted, share, accuracy, band, holds), "
                         f"got {columns}")
    parts = {}
    for label, summary in summaries.items():
        check_frame(summary, f"summaries[{label!r}]", ["shift", "strength", "method", "by", "class", *columns])
        chosen = summary[(summary["by"] == "true") & summary["method"].isin(methods)
                         & summary["class"].isin(classes)
                         & ((summary["shift"] == "exchangeable") | np.isclose(summary["strength"], strength))]
        if chosen.empty:
            raise ValueError(f"summaries[{label!r}] has no rows at strength {strength} for {list(methods)}")
        parts[label] = chosen.set_index(["shift", "method", "class"])[columns]
    table = pd.concat(parts, axis=1)
    order = [(sh, m, c) for sh in SHIFTS for m in methods for c in classes if (sh, m, c) in table.index]
    return table.loc[order]


def protection_summary(admissions, alpha, *, z=2.326):
    """Pooled admitted share and accuracy per world, method and class, with a binomial band.

    Over the runs, for each shift, strength, method, stratification and class
    (plus a pooled class ``"all"``): the admitted points, their share of the
    class's test points and the accuracy among them. ``band`` is
    ``1 - alpha - z sqrt(alpha (1 - alpha) / admitted)``, the lowest accuracy
    that a method right with probability ``1 - alpha`` on each admitted point
    reaches with probability about ``Phi(z)`` (one-sided, normal
    approximation of the binomial); ``holds`` says whether the accuracy is
    at least the band (NA when nothing is admitted).

    Parameters
    ----------
    admissions : pandas.DataFrame
        ``protection_runs(...)["admissions"]``.
    alpha : float
        Miscoverage level in (0, 1).
    z : float, default 2.326
        Width of the band in binomial standard errors (positive; 2.326 is
        the one-sided 99 % normal quantile).

    Returns
    -------
    pandas.DataFrame
        Columns ``shift``, ``strength``, ``method``, ``by``, ``class``, ``n``,
        ``admitted``, ``share``, ``accuracy``, ``band``, ``holds``.

    Examples
    --------
    >>> runs = pd.DataFrame({"run": [0, 1], "shift": "exchangeable", "strength": 0.0, "method": "m",
    ...                      "by": "true", "class": 0, "n": 100, "admitted": 50, "correct": [44, 46]})
    >>> protection_summary(runs, 0.1)[["class", "share", "accuracy", "holds"]]
      class  share  accuracy  holds
    0     0    0.5       0.9   True
    1   all    0.5       0.9   True
    """
    check_frame(admissions, "admissions", ["shift", "strength", "method", "by", "class", "n", "admitted", "correct"])
    alpha = check_alpha(alpha)
    z = check_real(z, "z", low=0, low_open=True)
    keys = ["shift", "strength", "method", "by"]
    counts = ["n", "admitted", "correct"]
    by_class = admissions.groupby([*keys, "class"], sort=False)[counts].sum().reset_index()
    pooled = admissions.groupby(keys, sort=False)[counts].sum().reset_index().assign(**{"class": "all"})
    table = pd.concat([by_class, pooled], ignore_index=True)
    table["class"] = table["class"].astype(str)
    table = table.sort_values([*keys, "class"], kind="stable").reset_index(drop=True)
    admitted = table["admitted"].where(table["admitted"] > 0)
    table["share"] = table["admitted"] / table["n"]
    table["accuracy"] = table["correct"] / admitted
    table["band"] = 1 - alpha - z * np.sqrt(alpha * (1 - alpha) / admitted)
    table["holds"] = (table["accuracy"] >= table["band"]).where(admitted.notna()).astype("boolean")
    return table[[*keys, "class", "n", "admitted", "share", "accuracy", "band", "holds"]]


def sentiment_signals(points, *, alpha=0.1, kappa=1000):
    """The signals of :func:`separation_signals` and Venn-ADMIT-w's admissions on a Sentiment task.

    Parameters
    ----------
    points : pandas.DataFrame
        The output of :func:`~calibtut.experiments.venn_admit.va_points`
        (columns ``split``, ``label``, ``p0``, ``p1``, ``q``, ``d``).
    alpha : float, default 0.1
        Miscoverage level in (0, 1).
    kappa : int, default 1000
        ADMIT's smallest band count per class.

    Returns
    -------
    signals : dict
        :func:`separation_signals` of the Venn split against the test points.
    admissions : pandas.DataFrame
        Venn-ADMIT-w (unweighted: the localizer's exemplar vectors are not
        among the points) on ``D_ca^mc`` and ``D_ca^vp`` with ``omega`` from
        ``D_ca^mc``: columns ``by``, ``class``, ``n``, ``accuracy``, ``share``
        (:func:`~calibtut.selective.admitted_accuracy_by_class`, by true and
        by predicted class).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(size=400)
    >>> points = pd.DataFrame({"split": np.repeat(["mc", "vp", "test"], [150, 150, 100]),
    ...                        "label": (rng.uniform(size=400) < p1).astype(int), "p0": 1 - p1, "p1": p1,
    ...                        "q": 25, "d": rng.uniform(size=400)})
    >>> signals, admissions = sentiment_signals(points, kappa=9)
    >>> round(signals["qk_share_test"], 2), sorted(admissions["by"].unique())
    (1.0, ['predicted', 'true'])
    """
    check_frame(points, "points", ["split", "label", "p0", "p1", "q", "d"])
    alpha = check_alpha(alpha)
    kappa = check_int(kappa, "kappa", minimum=math.ceil(1 / alpha) - 1)
    mc, vp, test = (KNNFeatures(part[["p0", "p1"]].to_numpy(), part["label"].to_numpy(), part["q"].to_numpy(),
                                part["d"].to_numpy())
                    for part in (points[points["split"] == name] for name in ("mc", "vp", "test")))
    model = VennADMIT(alpha=alpha, omega=band_width(mc), kappa=kappa).fit(mc, vp)
    admitted = model.predict_admitted(test)
    prediction = test.probs.argmax(axis=1)
    admissions = pd.concat([admitted_accuracy_by_class(admitted, prediction, test.labels, 2, by=by).assign(by=by)
                            for by in ("true", "predicted")], ignore_index=True)
    return separation_signals(vp, test), admissions[["by", "class", "n", "accuracy", "share"]]


def run_sentiment_signals(dataset="sentiment_ood", seed=0, *, n_calibration=16000, hidden=128, max_features=20000,
                          epochs=10, alpha=0.1, kappa=1000):
    """:func:`sentiment_signals` of one Sentiment task and calibration split, as rows (a sweep runner).

    Parameters
    ----------
    dataset : {"sentiment", "sentiment_ood"}, default "sentiment_ood"
    seed : int, default 0
        Calibration-split seed.
    n_calibration, hidden, max_features, epochs : int
        As in :func:`~calibtut.experiments.venn_admit.va_points` (TF-IDF features, model seed 0).
    alpha : float, default 0.1
    kappa : int, default 1000

    Returns
    -------
    pandas.DataFrame
        The admissions of :func:`sentiment_signals` (``by``, ``class``,
        ``n``, ``accuracy``, ``share``), each row with the signals as columns.

    Examples
    --------
    >>> rows = run_sentiment_signals("sentiment_ood", 0, n_calibration=2000, kappa=100)  # doctest: +SKIP
    >>> sorted(rows["by"].unique())  # doctest: +SKIP
    ['predicted', 'true']
    """
    alpha = check_alpha(alpha)
    kappa = check_int(kappa, "kappa", minimum=math.ceil(1 / alpha) - 1)  # checked before any model is trained
    points = va_points(dataset, seed, n_calibration=n_calibration, hidden=hidden, epochs=epochs,
                       max_features=max_features)
    signals, admissions = sentiment_signals(points, alpha=alpha, kappa=kappa)
    admissions["class"] = admissions["class"].astype(str)
    return admissions.assign(**signals)


def sentiment_map_points(rows):
    """The Sentiment tasks as points of :func:`plot_protection_map`, pooled over calibration splits.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_sentiment_signals` (with the task's ``dataset``
        column, as :func:`calibtut.run.sweep` returns them).

    Returns
    -------
    pandas.DataFrame
        One row per dataset: ``label``, ``separation``, ``error_auroc``,
        ``qk_share_cal``, ``qk_share_test``, ``qk_drop`` (means over splits),
        ``share`` (admitted share) and ``accuracy`` (admitted accuracy, both
        pooled over the classes and the splits).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "sentiment_ood", "by": "true", "class": ["0", "1", "all"],
    ...                      "n": [10, 30, 40], "accuracy": [0.6, 0.9, 0.825], "share": [0.1, 0.3, 0.4],
    ...                      "separation": 0.65, "error_auroc": 0.54, "qk_share_cal": 0.8, "qk_share_test": 0.5,
    ...                      "qk_accuracy_cal": 0.9, "qk_accuracy_test": 0.78})
    >>> sentiment_map_points(rows)[["label", "qk_drop", "share", "accuracy"]].round(3).values.tolist()
    [['SentimentOOD', 0.12, 0.4, 0.825]]
    """
    check_frame(rows, "rows", ["dataset", "by", "class", "n", "accuracy", "share", "separation", "error_auroc",
                               "qk_share_cal", "qk_share_test", "qk_accuracy_cal", "qk_accuracy_test"])
    out = []
    for dataset, frame in rows.groupby("dataset", sort=False):
        pooled = frame[(frame["by"] == "true") & (frame["class"] == "all")]
        admitted = pooled["n"].sum()
        out.append({"label": {"sentiment": "Sentiment", "sentiment_ood": "SentimentOOD"}.get(dataset, dataset),
                    **frame[["separation", "error_auroc", "qk_share_cal", "qk_share_test"]].mean().to_dict(),
                    "qk_drop": float((frame["qk_accuracy_cal"] - frame["qk_accuracy_test"]).mean()),
                    "share": float(pooled["share"].mean()),
                    "accuracy": float((pooled["accuracy"] * pooled["n"]).sum() / admitted) if admitted else np.nan})
    return pd.DataFrame(out)


def sentiment_by_class(rows):
    """Venn-ADMIT-w's admissions on the Sentiment tasks per dataset, stratification and class, pooled over splits.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`run_sentiment_signals` with their ``dataset`` column.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``dataset``, ``by``, ``class``: ``n`` (admitted points),
        ``correct`` and ``accuracy`` (NaN when nothing is admitted).

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "sentiment", "by": "true", "class": ["0", "0"], "n": [10, 0],
    ...                      "accuracy": [0.5, np.nan]})
    >>> sentiment_by_class(rows).values.tolist()
    [[10.0, 5.0, 0.5]]
    """
    check_frame(rows, "rows", ["dataset", "by", "class", "n", "accuracy"])
    pooled = rows.assign(correct=rows["accuracy"].fillna(0) * rows["n"])
    pooled = pooled.groupby(["dataset", "by", "class"])[["n", "correct"]].sum().astype(float)
    pooled["correct"] = pooled["correct"].round()
    return pooled.assign(accuracy=pooled["correct"] / pooled["n"].where(pooled["n"] > 0))


def representation_signals(signals, alpha=0.1):
    """What each representation's ``q`` and ``d`` see of the tweets, and what Venn-ADMIT admits, side by side.

    Parameters
    ----------
    signals : dict of str to pandas.DataFrame
        Per representation (its display name), rows of
        :func:`run_sentiment_signals` with their ``dataset`` column (a sweep's
        output, or the ``signals.csv`` of the GPU run).
    alpha : float, default 0.1
        Miscoverage level of the runs.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``representation`` and ``dataset``, means over calibration
        splits: ``separation`` (AUROC of q/d telling test points from
        calibration points), ``error_auroc`` (d against the KNN's errors
        inside q = K), ``qk_share_cal``, ``qk_share_test``, ``margin`` (the
        lowest calibration accuracy of the ``(q = K, predicted class)``
        categories minus ``1 - alpha``: how far the categories that can admit
        sit above the target), and, pooled over splits, Venn-ADMIT's admitted
        ``share`` and accuracy by true class (``true 0``, ``true 1``) and by
        predicted class (``pred 0``, ``pred 1``), NaN where nothing is admitted.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "sentiment_ood", "by": ["true"] * 3 + ["predicted"] * 3,
    ...                      "class": ["0", "1", "all"] * 2, "n": [10, 30, 40] * 2,
    ...                      "accuracy": [0.6, 0.9, 0.825, 0.8, 0.833, 0.825], "share": [0.1, 0.3, 0.4] * 2,
    ...                      "separation": 0.65, "error_auroc": 0.54, "qk_share_cal": 0.8, "qk_share_test": 0.5,
    ...                      "qk_accuracy_cal_pred0": 0.91, "qk_accuracy_cal_pred1": 0.93})
    >>> t = representation_signals({"TF-IDF": rows})
    >>> t.loc[("TF-IDF", "SentimentOOD"), ["margin", "share", "true 0", "pred 1"]].round(3).tolist()
    [0.01, 0.4, 0.6, 0.833]
    """
    alpha = check_alpha(alpha)
    if not isinstance(signals, dict) or not signals:
        raise TypeError(f"signals must be a non-empty dict of representation name to rows, got {type(signals)}")
    names = {"sentiment": "Sentiment", "sentiment_ood": "SentimentOOD"}
    out = []
    for name, rows in signals.items():
        check_frame(rows, f"signals[{name!r}]", [
            "dataset", "by", "class", "n", "accuracy", "share", "separation", "error_auroc", "qk_share_cal",
            "qk_share_test", "qk_accuracy_cal_pred0", "qk_accuracy_cal_pred1"])
        pooled = sentiment_by_class(rows)
        for dataset, frame in rows.groupby("dataset", sort=False):
            means = frame[["separation", "error_auroc", "qk_share_cal", "qk_share_test"]].mean()
            worst = frame[["qk_accuracy_cal_pred0", "qk_accuracy_cal_pred1"]].min(axis=1).mean()
            row = {"representation": name, "dataset": names.get(dataset, dataset), **means.to_dict(),
                   "margin": float(worst - (1 - alpha)),
                   "share": float(frame.loc[(frame["by"] == "true") & (frame["class"] == "all"), "share"].mean())}
            for by, label in (("true", "true"), ("predicted", "pred")):
                for c in ("0", "1"):
                    row[f"{label} {c}"] = pooled["accuracy"].get((dataset, by, c), np.nan)
            out.append(row)
    return pd.DataFrame(out).set_index(["representation", "dataset"])


def protection_map(summary, signals, *, method="Venn-ADMIT"):
    """One row per test world: what ``q`` and ``d`` see of the shift, and what the method admits.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`protection_summary` of the runs.
    signals : pandas.DataFrame
        ``protection_runs(...)["signals"]``.
    method : str, default "Venn-ADMIT"
        The method whose admissions are shown.

    Returns
    -------
    pandas.DataFrame
        Columns ``shift``, ``strength``, ``separation``, ``error_auroc`` and
        ``qk_share_test`` (means over runs), ``qk_drop`` (accuracy at
        ``q = K``, calibration minus test, mean over runs), and the method's
        admitted ``share``, ``accuracy`` and ``band`` (all classes pooled).

    Examples
    --------
    >>> summary = pd.DataFrame({"shift": "boundary", "strength": 1.0, "method": "m", "by": "true",
    ...                         "class": ["0", "1", "all"], "share": [0.1, 0.2, 0.15],
    ...                         "accuracy": [0.95, 0.85, 0.88], "band": [0.8, 0.8, 0.85]})
    >>> signals = pd.DataFrame({"run": [0, 1], "shift": "boundary", "strength": 1.0, "separation": [0.7, 0.8],
    ...                         "error_auroc": 0.5, "qk_share_test": 0.3, "qk_accuracy_cal": 0.98,
    ...                         "qk_accuracy_test": 0.9})
    >>> protection_map(summary, signals, method="m").round(2).values.tolist()
    [['boundary', 1.0, 0.75, 0.5, 0.3, 0.08, 0.15, 0.88, 0.85]]
    """
    check_frame(summary, "summary", ["shift", "strength", "method", "by", "class", "share", "accuracy", "band"])
    check_frame(signals, "signals", ["shift", "strength", "separation", "error_auroc", "qk_share_test",
                                     "qk_accuracy_cal", "qk_accuracy_test"])
    if method not in set(summary["method"]):
        raise ValueError(f"method {method!r} is not in summary; it has {sorted(set(summary['method']))}")
    keys = ["shift", "strength"]
    seen = signals.assign(qk_drop=signals["qk_accuracy_cal"] - signals["qk_accuracy_test"])
    out = seen.groupby(keys, sort=False)[["separation", "error_auroc", "qk_share_test", "qk_drop"]].mean()
    out = out.reset_index()
    chosen = summary[(summary["method"] == method) & (summary["by"] == "true") & (summary["class"] == "all")]
    return out.join(chosen.set_index(keys)[["share", "accuracy", "band"]], on=keys).reset_index(drop=True)


def _strength_styles(frame):
    """Marker sizes growing with the shift strength."""
    return 12 + 50 * frame["strength"].to_numpy()


def plot_accuracy_share(summary, alpha, *, methods=PROTECTION_METHODS, shifts=SHIFTS[1:]):
    """Admitted accuracy against admitted share, one panel per shift, one line per method over strengths.

    Every line starts at the exchangeable world (strength 0) and grows its
    markers with the strength; the dotted line is ``1 - alpha``. Pooled over
    true classes (row ``"all"`` of :func:`protection_summary`).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`protection_summary` of the runs.
    alpha : float
        Miscoverage level in (0, 1).
    methods : sequence of str, default :data:`PROTECTION_METHODS`
    shifts : sequence of str, default every shift but ``"exchangeable"``

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> summary = pd.DataFrame({"shift": ["exchangeable", "boundary"], "strength": [0.0, 1.0], "method": "m",
    ...                         "by": "true", "class": "all", "share": [0.3, 0.1], "accuracy": [0.99, 0.95]})
    >>> fig = plot_accuracy_share(summary, 0.1, methods=["m"], shifts=["boundary"])
    >>> len(fig.axes)
    1
    """
    check_frame(summary, "summary", ["shift", "strength", "method", "by", "class", "share", "accuracy"])
    alpha = check_alpha(alpha)
    pooled = summary[(summary["by"] == "true") & (summary["class"] == "all")]
    fig, axes = plt.subplots(1, len(shifts), figsize=(7.0, 2.9), sharey=True, squeeze=False)
    for ax, shift in zip(axes[0], shifts):
        for i, method in enumerate(methods):
            line = pooled[(pooled["method"] == method) & pooled["shift"].isin(["exchangeable", shift])]
            line = line.sort_values("strength")
            ax.plot(line["share"], line["accuracy"], "--" if "_qK" in method else "-", color=f"C{i}", lw=1,
                    label=method)
            ax.scatter(line["share"], line["accuracy"], s=_strength_styles(line), color=f"C{i}", zorder=3)
        ax.axhline(1 - alpha, color="k", ls=":", lw=0.8)
        ax.set_title(shift, fontsize=10)
        ax.set_xlabel("admitted share", fontsize=9)
        ax.set_xlim(-0.03, 1.03)
        ax.tick_params(labelsize=9)
    axes[0, 0].set_ylabel("accuracy of admitted", fontsize=9)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.17, 1, 1))
    return fig


def plot_protection_map(world_map, alpha, *, points=None):
    """What ``q`` and ``d`` see against what is lost inside ``q = K``, and the admitted accuracy.

    Left: the separation AUROC (how well ``q`` and ``d`` tell test from
    calibration points) against the drop of accuracy at ``q = K``; right:
    the same separation against the admitted accuracy.
    Markers grow with the shift strength; ``points`` adds labelled points
    (e.g. the Sentiment tasks) drawn as black stars.

    Parameters
    ----------
    world_map : pandas.DataFrame
        :func:`protection_map` of the runs.
    alpha : float
        Miscoverage level in (0, 1).
    points : pandas.DataFrame, optional
        Rows with ``label``, ``separation``, ``qk_drop`` and ``accuracy``
        (NaN leaves a point off a panel).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> world_map = pd.DataFrame({"shift": "boundary", "strength": [0.5, 1.0], "separation": [0.6, 0.8],
    ...                           "qk_drop": [0.0, 0.05], "accuracy": [0.97, 0.9]})
    >>> len(plot_protection_map(world_map, 0.1).axes)
    2
    """
    check_frame(world_map, "world_map", ["shift", "strength", "separation", "qk_drop", "accuracy"])
    alpha = check_alpha(alpha)
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.1))
    for i, shift in enumerate(SHIFTS):
        rows = world_map[world_map["shift"] == shift]
        for ax, column in zip(axes, ("qk_drop", "accuracy")):
            ax.scatter(rows["separation"], rows[column], s=_strength_styles(rows), color=f"C{i}", label=shift,
                       alpha=0.85)
    if points is not None:
        check_frame(points, "points", ["label", "separation", "qk_drop", "accuracy"])
        for ax, column in zip(axes, ("qk_drop", "accuracy")):
            ax.scatter(points["separation"], points[column], marker="*", s=90, color="k")
            for row in points.itertuples():
                ax.annotate(row.label, (row.separation, getattr(row, column)), fontsize=8,
                            xytext=(4, 3), textcoords="offset points")
    axes[1].axhline(1 - alpha, color="k", ls=":", lw=0.8)
    for ax, label in zip(axes, ("accuracy drop at q = K", "accuracy of admitted")):
        ax.set_xlabel("separation AUROC of (q, d)", fontsize=9)
        ax.set_ylabel(label, fontsize=9)
        ax.tick_params(labelsize=9)
    axes[0].legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return fig
