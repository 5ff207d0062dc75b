"""Conformal prediction: sets and intervals with finite-sample coverage.

numpy only. Modules, by what they produce:

* :mod:`calibtut.conformal.quantiles`: the conformal threshold, plain and
  weighted under covariate shift; :func:`conformal_rank` is the shared rank.
* :mod:`calibtut.conformal.coverage`: the finite-sample law of coverage.
* :mod:`calibtut.conformal.scores`: LAC, APS and RAPS nonconformity scores.
* :mod:`calibtut.conformal.sets`: classification sets (split, Mondrian,
  label-conditional, weighted: :class:`SplitConformalClassifier`; localized:
  :class:`LocalizedConformalClassifier`; tuned RAPS: :class:`RAPSClassifier`).
* :mod:`calibtut.conformal.intervals`: regression intervals, plain and
  weighted (:class:`SplitConformalRegressor`).
* :mod:`calibtut.conformal.cross`: jackknife+ and CV+ intervals (and their
  min-max and naive forms) around refitted regressors
  (:class:`CrossConformalRegressor`), the one family here that calls a model.
* :mod:`calibtut.conformal.cqr`: conformalized quantile regression, two-sided
  and one-sided.
* :mod:`calibtut.conformal.dcp`: distributional conformal prediction.

Every method is a class following the estimator contract of CONTRIBUTING.md
(``Name(alpha=..., ...)``, ``fit(cal_pred, cal_y, ...)``, ``predict_set`` /
``predict_interval`` / ``predict_quantiles``), and the one-call functions are
thin wrappers around them.
"""


from calibtut._numeric import conformal_rank
from calibtut.conformal.coverage import (
    coverage_band,
    coverage_count_distribution,
    coverage_distribution,
)
from calibtut.conformal.cqr import (
    ConformalizedQuantileRegressor,
    OneSidedConformalRegressor,
    cqr_interval,
    one_sided_cqr_quantiles,
)
from calibtut.conformal.cross import CrossConformalRegressor, cross_conformal_interval
from calibtut.conformal.dcp import (
    DistributionalConformalRegressor,
    dcp_interval,
    recalibration_conformal_table,
)
from calibtut.conformal.intervals import (
    SplitConformalRegressor,
    split_conformal_interval,
    weighted_conformal_interval,
)
from calibtut.conformal.quantiles import (
    conformal_quantile,
    weighted_conformal_quantile,
)
from calibtut.conformal.scores import (
    aps_scores,
    class_scores,
    lac_scores,
)
from calibtut.conformal.sets import (
    LocalizedConformalClassifier,
    RAPSClassifier,
    SplitConformalClassifier,
    label_conditional_sets,
    localized_conformal_sets,
    mondrian_conformal_sets,
    raps_sets,
    split_conformal_sets,
    weighted_conformal_sets,
)

__all__ = [
    "conformal_quantile",
    "weighted_conformal_quantile",
    "coverage_distribution",
    "coverage_count_distribution",
    "coverage_band",
    "lac_scores",
    "aps_scores",
    "class_scores",
    "SplitConformalClassifier",
    "LocalizedConformalClassifier",
    "RAPSClassifier",
    "weighted_conformal_sets",
    "mondrian_conformal_sets",
    "split_conformal_sets",
    "label_conditional_sets",
    "localized_conformal_sets",
    "raps_sets",
    "split_conformal_interval",
    "SplitConformalRegressor",
    "weighted_conformal_interval",
    "CrossConformalRegressor",
    "cross_conformal_interval",
    "ConformalizedQuantileRegressor",
    "cqr_interval",
    "OneSidedConformalRegressor",
    "one_sided_cqr_quantiles",
    "DistributionalConformalRegressor",
    "dcp_interval",
    "recalibration_conformal_table",
    "conformal_rank",
]
