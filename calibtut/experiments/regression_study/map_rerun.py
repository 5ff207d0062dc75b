"""Paper 002: the mixtures' post-hoc maps refitted on retrained 65% base models.

The full study stores metrics, not models, so a change to a post-hoc map
needs its base model trained again. Two such changes matter for the claims:

* **Rec-KDE as the authors' code fits it.** Their map is fitted on
  ``min(2048, N')`` calibration PITs drawn *with replacement* (a bootstrap
  resample even when ``N' < 2048``); ours uses every PIT, as the paper's
  eq. (7). Claim C11 ("with MIX-CRPS, Rec-KDE significantly worsens the
  CRPS") rests on this map.
* **Rec-LIN with tied calibration PITs merged.** Before the fix its density
  integrated to less than 1 where calibration points repeat, which made its
  NLL wrong on the datasets with repeated rows.

The rerun trains only the vanilla post-hoc base of each mixture (65% of the
data, alone rather than batched with the regularized models, so it is not
bitwise the stored one) and fits every map on it, the resampled Rec-KDE
beside ours: :func:`map_rerun_tasks` lists it, :func:`full_map_rerun` reads
the published or stored run, :func:`kde_resampling_table` and
:func:`kde_resampling_summary` compare the two Rec-KDE fits,
:func:`with_rerun_maps` puts the refitted maps into the full run so that
:func:`~calibtut.experiments.regression_study.claim_verdicts` reads every
claim again (:func:`rerun_claim_parts`, :func:`rerun_claims_table`), and
:func:`calibration_ties` counts the repeated calibration rows, which
:func:`lin_refit_table` sets beside the change of Rec-LIN's NLL.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from calibtut._validation import check_choice, check_choices, check_frame, check_int
from calibtut.experiments.regression_study._common import FullRun, check_full_arguments, published_table, read_full_run
from calibtut.experiments.regression_study.claims import claim_verdicts, claims_from_parts
from calibtut.experiments.regression_study.tasks import (
    OFFLINE_DATASETS,
    STUDY_RUNS,
    complete_runs,
    method_label,
    study_split,
    study_tasks,
)
from calibtut.run import verdict_table

__all__ = [
    "MAP_RERUN_BASES",
    "calibration_ties",
    "full_map_rerun",
    "kde_resampling_summary",
    "kde_resampling_table",
    "lin_refit_summary",
    "lin_refit_table",
    "map_rerun_tasks",
    "REFIT_LABELS",
    "rerun_claim_parts",
    "rerun_claims_table",
    "with_rerun_maps",
]

#: The base models whose maps are refitted: the two mixtures.
MAP_RERUN_BASES = ("mix-nll", "mix-crps")

#: The full rerun of the maps: every offline dataset x 5 runs x both mixtures.
_FULL_MAP_RERUN = FullRun("06_paper_vs_ours", "map_rerun", "map_rerun", ("dataset", "run", "base"),
                          functools.partial(complete_runs, datasets=OFFLINE_DATASETS, bases=MAP_RERUN_BASES),
                          len(OFFLINE_DATASETS) * len(MAP_RERUN_BASES) * STUDY_RUNS, "map rerun",
                          "every dataset and both mixtures")

_KDE_FORMS = {"kde": "Rec-KDE (all PITs)", "kde-resampled": "Rec-KDE (resampled)"}

#: Claims on the Appendix B models (maps on regularized models, maps fitted on the training split).
_APPENDIX_B_CLAIMS = ("C13", "C14")

#: The two readings of the full run with its maps refitted, by the Rec-KDE fit that stands for Rec-KDE.
REFIT_LABELS = {"kde": "maps refitted", "kde-resampled": "maps refitted, authors' Rec-KDE"}


def map_rerun_tasks(datasets, runs, bases=MAP_RERUN_BASES, **fixed):
    """Tasks of the rerun: each mixture's 65% base trained again and every map refitted on it.

    Parameters
    ----------
    datasets : sequence of str
        Keys of :data:`calibtut.data.regression_study.STUDY_DATASETS`.
    runs : sequence of int
    bases : sequence of str, default :data:`MAP_RERUN_BASES`
        Mixture base models only (the resampled Rec-KDE is a mixture map).
    **fixed
        Further arguments of :func:`~calibtut.experiments.regression_study.run_study_task`
        (e.g. ``epochs``).

    Returns
    -------
    list of dict
        Tasks for :func:`calibtut.run.sweep`: no regularizer, no 80% model,
        the resampled Rec-KDE on.

    Examples
    --------
    >>> tasks = map_rerun_tasks(["Yacht"], [0], epochs=30)
    >>> [(t["base"], t["fit_full"], t["kde_resampled"]) for t in tasks]
    [('mix-nll', False, True), ('mix-crps', False, True)]
    """
    bases = list(check_choices(bases, "bases", MAP_RERUN_BASES))
    return study_tasks(datasets, runs, bases, lambdas=(), regularizers=(), fit_full=False, kde_resampled=True,
                       **fixed)


def full_map_rerun(*, min_runs=2, root=None):
    """The full rerun of the maps, part of the ``full`` profile of chapter ``06_paper_vs_ours``.

    Every offline dataset x 5 runs x both mixtures, read as
    :func:`~calibtut.experiments.regression_study.full_study` reads the full
    run (same arguments, same ``FullStudy``).

    Examples
    --------
    >>> import tempfile
    >>> full_map_rerun(root=tempfile.mkdtemp()).note
    'The full map rerun is not yet published and its store holds no complete runs (0 of 230 tasks stored).'
    """
    return read_full_run(_FULL_MAP_RERUN, min_runs=min_runs, root=root)


def _check_rerun(rows, name="rows"):
    check_frame(rows, name, ["dataset", "run", "base", "posthoc", "train_fraction", "test_wis", "test_nll"])
    if not (rows["posthoc"] == "kde-resampled").any():
        raise ValueError(f"{name} hold no resampled Rec-KDE rows: pass rows of map_rerun_tasks")


def kde_resampling_table(rows, base="mix-crps"):
    """Run-mean test WIS and NLL per dataset of one mixture's maps, both Rec-KDE fits included.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of :func:`map_rerun_tasks` (several datasets and runs).
    base : {"mix-nll", "mix-crps"}, default "mix-crps"

    Returns
    -------
    pandas.DataFrame
        One row per dataset; columns (metric, map) for ``wis`` and ``nll``
        and the maps Rec-EMP, Rec-LIN and the two Rec-KDE fits, and
        ``runs``.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": "a", "run": 0, "base": "mix-crps", "train_fraction": 0.65,
    ...                      "posthoc": ["emp", "lin", "kde", "kde-resampled"],
    ...                      "test_wis": [1.0, 1.1, 1.2, 1.3], "test_nll": [np.inf, 2.0, 1.5, 1.6]})
    >>> kde_resampling_table(rows)["wis"].iloc[0].tolist()
    [1.0, 1.1, 1.2, 1.3]
    """
    _check_rerun(rows)
    check_choice(base, "base", MAP_RERUN_BASES)
    maps = {"emp": "Rec-EMP", "lin": "Rec-LIN", **_KDE_FORMS}
    picked = rows[(rows["base"] == base) & rows["posthoc"].isin(list(maps))]
    if picked.empty:
        raise ValueError(f"rows hold no post-hoc rows of base {base!r}")
    means = picked.groupby(["dataset", "posthoc"])[["test_wis", "test_nll"]].mean()
    means.columns = ["wis", "nll"]
    table = means.unstack("posthoc").reindex(columns=list(maps), level="posthoc")
    table = table.rename(columns=maps, level="posthoc")
    table.columns.names = ["metric", "map"]
    table[("runs", "")] = picked.groupby("dataset")["run"].nunique()
    return table


def kde_resampling_summary(table):
    """How often each Rec-KDE fit has a worse run-mean WIS than Rec-EMP and Rec-LIN.

    Parameters
    ----------
    table : pandas.DataFrame
        As :func:`kde_resampling_table` returns it.

    Returns
    -------
    pandas.DataFrame
        One row per Rec-KDE fit: ``worse than Rec-EMP`` and ``worse than
        Rec-LIN`` (datasets on which its WIS is higher), ``datasets``, and the
        median WIS ratio to each.

    Examples
    --------
    >>> rows = pd.DataFrame({"dataset": list("aaaabbbb"), "run": 0, "base": "mix-crps",
    ...                      "train_fraction": 0.65, "posthoc": ["emp", "lin", "kde", "kde-resampled"] * 2,
    ...                      "test_wis": [1.0, 1.0, 0.9, 1.2, 2.0, 2.0, 2.1, 2.2], "test_nll": 1.0})
    >>> kde_resampling_summary(kde_resampling_table(rows))["worse than Rec-EMP"].tolist()
    [1, 2]
    """
    if not isinstance(table, pd.DataFrame) or "wis" not in table.columns.get_level_values(0):
        raise TypeError("table must be the DataFrame kde_resampling_table returns")
    wis = table["wis"]
    out = {}
    for form in _KDE_FORMS.values():
        row = {}
        for other in ("Rec-EMP", "Rec-LIN"):
            pair = wis[[form, other]].dropna()
            row[f"worse than {other}"] = int((pair[form] > pair[other]).sum())
            row[f"median ratio to {other}"] = float((pair[form] / pair[other]).median())
        row["datasets"] = len(wis[form].dropna())
        out[form] = row
    summary = pd.DataFrame.from_dict(out, orient="index")
    summary.index.name = "Rec-KDE fit"
    return summary[["worse than Rec-EMP", "worse than Rec-LIN", "datasets", "median ratio to Rec-EMP",
                    "median ratio to Rec-LIN"]]


def with_rerun_maps(full_rows, rerun_rows, *, kde="kde"):
    """The full run's rows with each mixture's vanilla 65% model and its maps replaced by the rerun's.

    Only the (dataset, run, base) the rerun holds are replaced; the 80%
    models, the regularized models and the maps fitted on the training split
    (Appendix B) stay as stored. With ``kde="kde-resampled"`` the stored
    Rec-KDE rows of those Appendix B models are dropped: they were fitted on
    every PIT, and a claim that set them against the resampled map would
    compare two fits of Rec-KDE, so such parts are "not run".

    Parameters
    ----------
    full_rows : pandas.DataFrame
        Rows of the full study (:func:`~calibtut.experiments.regression_study.full_study`).
    rerun_rows : pandas.DataFrame
        Rows of :func:`map_rerun_tasks`.
    kde : {"kde", "kde-resampled"}, default "kde"
        Which Rec-KDE fit stands for Rec-KDE: ours (every PIT) or the
        authors' resample.

    Returns
    -------
    pandas.DataFrame
        Rows for :func:`~calibtut.experiments.regression_study.claim_verdicts`.

    Examples
    --------
    >>> keys = {"dataset": "a", "run": 0, "base": "mix-crps", "regularizer": "none", "lam": 0.0}
    >>> full = pd.DataFrame({**keys, "posthoc": ["none", "none", "kde"], "train_fraction": [0.8, 0.65, 0.65],
    ...                      "map_split": ["none", "none", "calibration"], "test_wis": [1.0, 2.0, 3.0],
    ...                      "test_nll": 0.0})
    >>> rerun = pd.DataFrame({**keys, "posthoc": ["none", "kde", "kde-resampled"], "train_fraction": 0.65,
    ...                       "map_split": ["none", "calibration", "calibration"], "test_wis": [2.5, 3.5, 4.0],
    ...                       "test_nll": 0.0})
    >>> out = with_rerun_maps(full, rerun, kde="kde-resampled")
    >>> out[["posthoc", "train_fraction", "test_wis"]].values.tolist()
    [['none', 0.8, 1.0], ['none', 0.65, 2.5], ['kde', 0.65, 4.0]]
    >>> out["method"].tolist()[-1]
    'MIX-CRPS + Rec-KDE'
    """
    check_frame(full_rows, "full_rows", ["dataset", "run", "base", "regularizer", "posthoc", "train_fraction",
                                         "map_split"])
    _check_rerun(rerun_rows, "rerun_rows")
    check_choice(kde, "kde", tuple(_KDE_FORMS))
    drop = "kde-resampled" if kde == "kde" else "kde"
    new = rerun_rows[rerun_rows["posthoc"] != drop].copy()
    new["posthoc"] = new["posthoc"].replace({kde: "kde"})
    new["method"] = [method_label(b, "none", p) for b, p in zip(new["base"], new["posthoc"])]
    keys = ["dataset", "run", "base"]
    held = pd.MultiIndex.from_frame(new[keys].drop_duplicates())
    rerun_held = pd.MultiIndex.from_frame(full_rows[keys]).isin(held)
    replaced = (rerun_held & (full_rows["regularizer"] == "none") & (full_rows["train_fraction"] == 0.65)
                & full_rows["map_split"].isin(["none", "calibration"]))
    if kde == "kde-resampled":
        replaced |= rerun_held & (full_rows["posthoc"] == "kde")
    return pd.concat([full_rows[~replaced], new], ignore_index=True)


def calibration_ties(datasets, runs, *, crime="code"):
    """Repeated calibration rows per (dataset, run): where a mixture's calibration PITs tie.

    Two calibration points with the same inputs and target have the same PIT
    under any model; the LIN map merges such ties (its density integrated to
    less than 1 before it did).

    Parameters
    ----------
    datasets : sequence of str
        Keys of :data:`calibtut.data.regression_study.STUDY_DATASETS` that load here.
    runs : sequence of int
    crime : {"code", "table1"}, default "code"

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, run): ``n_cal`` and ``tied`` (calibration rows
        that share their inputs and target with another one).

    Examples
    --------
    >>> import os
    >>> ties = calibration_ties(["Yacht"], [0]) if os.environ.get("CALIBTUT_DATA_MIRROR") else None
    >>> ties is None or ties[["n_cal", "tied"]].values.tolist() == [[46, 0]]
    True
    """
    if isinstance(datasets, str) or isinstance(runs, (str, int)):
        raise TypeError("datasets and runs must be sequences (e.g. ['Yacht'], [0])")
    runs = [check_int(r, "runs", minimum=0) for r in runs]
    out = []
    for dataset in datasets:
        for run in runs:
            split = study_split(dataset, run, crime=crime)
            rows = np.column_stack([split.X[split.cal], split.y[split.cal]])
            _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
            out.append({"dataset": dataset, "run": run, "n_cal": len(split.cal),
                        "tied": int((counts[inverse.ravel()] > 1).sum())})
    return pd.DataFrame(out)


def rerun_claim_parts(full, rerun, *, ablations=None, test_table=None, recompute=False, seed=0, root=None):
    """Every claim's parts on the full run with its mixtures' maps refitted, once per Rec-KDE fit.

    :func:`with_rerun_maps` puts the rerun's maps into the full run, with our
    Rec-KDE and then with the authors' resample standing for Rec-KDE, and
    :func:`~calibtut.experiments.regression_study.claim_verdicts` reads every
    claim on each. Chapter 6 publishes the result with its full profile
    (table ``rerun_claim_parts``) and reads it back at ``ci``.

    Parameters
    ----------
    full : FullStudy
        The full study (:func:`~calibtut.experiments.regression_study.full_study`, with rows).
    rerun : FullStudy
        The map rerun (:func:`full_map_rerun`, with rows).
    ablations, test_table : pandas.DataFrame, optional
        As for :func:`~calibtut.experiments.regression_study.claim_verdicts`.
    recompute : bool, default False
        Compute the parts even when they are published.
    seed : int, default 0
        Seed of the bootstrap power, >= 0.
    root : str or path-like, optional
        Repository root; found from the working directory by default.

    Returns
    -------
    pandas.DataFrame
        The parts of ``claim_verdicts(..., parts=True)`` with a ``maps`` column
        (a key of :data:`REFIT_LABELS`). With the resampled Rec-KDE, claims
        C13 and C14 are one "not run" part each: the Appendix B models keep
        Rec-KDE fitted on every PIT. Only when both runs are the
        published full ones (label ``"full"``) is the published table read,
        and only when it was drawn with ``seed``.

    Examples
    --------
    >>> import tempfile
    >>> from calibtut.experiments.regression_study import FullStudy
    >>> rerun_claim_parts(FullStudy(None, "full", ""), FullStudy(None, "full", ""), root=tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    TypeError: full must be a FullStudy with rows, got FullStudy(rows=None, label='full', note='')
    """
    seed = check_full_arguments(full, recompute, seed)
    check_full_arguments(rerun, recompute, seed)
    if full.label == "full" and rerun.label == "full" and not recompute:
        parts = published_table("rerun_claim_parts", seed, root)
        if parts is not None:
            return parts
    found = []
    for kde in REFIT_LABELS:
        rows = with_rerun_maps(full.rows, rerun.rows, kde=kde)
        parts = claim_verdicts(rows, ablations=ablations, test_table=test_table, seed=seed, parts=True)
        if kde == "kde-resampled":
            parts = _appendix_b_not_run(parts)
        found.append(parts.assign(maps=kde))
    return pd.concat(found, ignore_index=True)


def _appendix_b_not_run(parts):
    """Claims C13 and C14 as one "not run" part each: their maps are not refitted with the resample."""
    appendix_b = parts["claim"].isin(_APPENDIX_B_CLAIMS)
    out = parts[~appendix_b | (parts.groupby("claim").cumcount() == 0)].reset_index(drop=True)
    replaced = out["claim"].isin(_APPENDIX_B_CLAIMS)
    out.loc[replaced, ["rule", "verdict"]] = "not run"
    out.loc[replaced, ["agree", "differ", "ties", "pvalue", "power"]] = np.nan
    out.loc[replaced, "evidence"] = ("the resampled Rec-KDE is refitted on the vanilla 65% models only; the "
                                     "Appendix B models (regularized + map, map on the training split) keep "
                                     "Rec-KDE on every PIT")
    return out

def rerun_claims_table(parts, rerun_parts):
    """Each claim's verdict on the full run as stored beside its two readings with the maps refitted.

    Parameters
    ----------
    parts : pandas.DataFrame
        The full run's parts (:func:`~calibtut.experiments.regression_study.full_claim_parts`).
    rerun_parts : pandas.DataFrame
        As :func:`rerun_claim_parts` returns them.

    Returns
    -------
    pandas.DataFrame
        One row per claim, the verdicts first: ``stored`` and one column per
        label of :data:`REFIT_LABELS`; then ``claim`` and ``changed`` (the
        verdicts differ).

    Examples
    --------
    >>> part = {"claim": "C11", "part": 1, "rule": "significantly", "agree": 1, "differ": 2, "ties": 0,
    ...         "pvalue": 0.5, "power": float("nan"), "evidence": "", "datasets": 23}
    >>> stored = pd.DataFrame([{**part, "verdict": "does not hold"}])
    >>> refit = pd.DataFrame([{**part, "verdict": "does not hold", "maps": "kde"},
    ...                       {**part, "verdict": "holds", "maps": "kde-resampled"}])
    >>> row = rerun_claims_table(stored, refit).iloc[0]
    >>> row.tolist()[:4], bool(row["changed"])
    (['does not hold', 'does not hold', 'holds', 'C11'], True)
    """
    columns = ["claim", "part", "verdict", "evidence"]
    check_frame(parts, "parts", columns)
    check_frame(rerun_parts, "rerun_parts", [*columns, "maps"])
    missing = set(REFIT_LABELS) - set(rerun_parts["maps"])
    if missing:
        raise ValueError(f"rerun_parts lack the maps {sorted(missing)}: pass rerun_claim_parts's table")
    table = claims_from_parts(parts).set_index("claim")[["verdict"]].rename(columns={"verdict": "stored"})
    for kde, label in REFIT_LABELS.items():
        verdicts = claims_from_parts(rerun_parts[rerun_parts["maps"] == kde].drop(columns="maps"))
        table[label] = verdicts.set_index("claim")["verdict"]
    table["changed"] = table.nunique(axis=1) > 1
    return verdict_table(table.reset_index(), verdicts=("stored", *REFIT_LABELS.values()))


def lin_refit_table(full_rows, rerun_rows, ties):
    """Rec-LIN's test NLL as stored and refitted, per (base, dataset, run), beside the calibration ties.

    The refitted base is trained again, so its own NLL moves too; ``excess``
    is the change of Rec-LIN's NLL less that of its base, the part due to the
    map. Where calibration PITs tie, the stored map's density integrated to
    less than 1, so its NLL was too high: there the excess should be
    negative, elsewhere near 0.

    Parameters
    ----------
    full_rows : pandas.DataFrame
        Rows of the full study.
    rerun_rows : pandas.DataFrame
        Rows of :func:`map_rerun_tasks`.
    ties : pandas.DataFrame
        As :func:`calibration_ties` returns it, for the same datasets and runs.

    Returns
    -------
    pandas.DataFrame
        One row per (base, dataset, run) held by both runs: ``tied``,
        ``stored``, ``refitted`` (Rec-LIN's test NLL), ``base_change`` (the
        65% base's NLL, refitted less stored) and ``excess``.

    Examples
    --------
    >>> keys = {"dataset": "a", "run": 0, "base": "mix-nll", "regularizer": "none", "train_fraction": 0.65,
    ...         "map_split": "calibration"}
    >>> full = pd.DataFrame({**keys, "posthoc": ["none", "lin"], "test_nll": [1.0, 1.5]})
    >>> rerun = pd.DataFrame({**keys, "posthoc": ["none", "lin", "kde-resampled"], "test_nll": [1.1, 1.3, 0.0],
    ...                       "test_wis": 0.0})
    >>> ties = pd.DataFrame({"dataset": ["a"], "run": [0], "n_cal": [10], "tied": [2]})
    >>> lin_refit_table(full, rerun, ties)[["tied", "base_change", "excess"]].round(2).values.tolist()
    [[2.0, 0.1, -0.3]]
    """
    check_frame(full_rows, "full_rows", ["dataset", "run", "base", "regularizer", "posthoc", "train_fraction",
                                         "map_split", "test_nll"])
    _check_rerun(rerun_rows, "rerun_rows")
    check_frame(ties, "ties", ["dataset", "run", "tied"])
    keys = ["base", "dataset", "run"]

    def nll(rows, posthoc):
        picked = rows[(rows["posthoc"] == posthoc) & (rows["regularizer"] == "none")
                      & (rows["train_fraction"] == 0.65) & (rows["map_split"] != "train")
                      & rows["base"].isin(MAP_RERUN_BASES)]
        return picked.set_index(keys)["test_nll"]

    table = pd.DataFrame({"stored": nll(full_rows, "lin"), "refitted": nll(rerun_rows, "lin"),
                          "base_change": nll(rerun_rows, "none") - nll(full_rows, "none")}).dropna()
    if table.empty:
        raise ValueError("full_rows and rerun_rows share no mixture's Rec-LIN row of one (dataset, run)")
    table["excess"] = table["refitted"] - table["stored"] - table["base_change"]
    tied = ties.set_index(["dataset", "run"])["tied"]
    table.insert(0, "tied", tied.reindex(table.index.droplevel("base")).to_numpy(dtype=float))
    return table.sort_index()


def lin_refit_summary(table):
    """The excess change of Rec-LIN's NLL where calibration rows tie and where they do not.

    Parameters
    ----------
    table : pandas.DataFrame
        As :func:`lin_refit_table` returns it.

    Returns
    -------
    pandas.DataFrame
        One row per (base, calibration rows tied or not): ``pairs``
        (dataset-run pairs), ``lowered`` (pairs whose excess is negative),
        ``median_excess`` and ``median_abs_excess``.

    Examples
    --------
    >>> index = pd.MultiIndex.from_tuples([("mix-nll", "a", 0), ("mix-nll", "a", 1), ("mix-nll", "b", 0)],
    ...                                   names=["base", "dataset", "run"])
    >>> table = pd.DataFrame({"tied": [3.0, 0.0, 0.0], "excess": [-0.2, 0.01, -0.03]}, index=index)
    >>> lin_refit_summary(table)[["pairs", "lowered"]].values.tolist()
    [[2, 1], [1, 1]]
    """
    check_frame(table, "table", ["tied", "excess"])
    if "base" not in table.index.names:
        raise TypeError("table must be the DataFrame lin_refit_table returns")
    ties = table["tied"].gt(0).map({True: "tied", False: "no ties"}).rename("calibration rows")
    grouped = table["excess"].groupby([table.index.get_level_values("base"), ties])
    return pd.DataFrame({"pairs": grouped.size(), "lowered": grouped.apply(lambda e: int((e < 0).sum())),
                         "median_excess": grouped.median(),
                         "median_abs_excess": grouped.apply(lambda e: e.abs().median())})
