"""The paper's forecaster: conformal calibration, adjustment, springs and PID.

Algorithm 1 of the paper with Eq. (6): at each step the base forecast is
conformally calibrated (``Z~``), the adjustment ``E`` of Eq. (3) is computed
from the counts ``F_k^t`` of the *output* quantiles, passed through the PID
controller, and the output ``Z`` is the equilibrium of Eq. (4). Each stage can
be switched off, which gives the four panels of the paper's Figure 1.

Differences from the public torchuq code (``OnlineQuantileCalibrator``), which
this implementation does not follow unless stated:

* its conformal stage is fed labels mapped back through the current
  adjustment; here it sees the PIT of each label under the base forecast;
* its tolerance is the full width of the binomial band (``params="torchuq"``
  selects it, with the code's other defaults); the paper's is the half-width;
* it starts adjusting only after two labels; here from the first label on
  (``F = 0`` at ``t = 0`` is inside every tolerance anyway);
* it solves the springs by a damped iteration with a ``1e-3`` gap floor
  (:func:`~calibtut.online.springs.solve_equilibrium_damped`); here the
  equilibrium is solved exactly by Newton's method;
* the exponent of Eq. (3) is capped here (see :mod:`calibtut.online.adjustment`).
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import check_real
from calibtut.online._base import OnlineCalibrator
from calibtut.online.adjustment import exponential_adjustment, integral_gains, resolve_params
from calibtut.online.conformal import ConformalCalibrator, ToleranceTable
from calibtut.online.pid import PIDController
from calibtut.online.springs import solve_equilibrium

__all__ = ["DriftCalibrator"]


class DriftCalibrator(OnlineCalibrator):
    """Provably calibrated online quantile forecasts under drift (paper 000).

    Parameters
    ----------
    levels : array_like of shape (K,)
        Quantile levels, strictly increasing in (0, 1) (the paper: ``k / (K + 1)``).
    B : float, optional
        Label bound: labels must lie in ``[-B, B]``. Needed for the guarantees
        (Theorems 1 and 2), for the padding springs and for the PID clip.
    conformal : bool, default True
        Conformally calibrate the base forecasts first (otherwise ``Z~`` is the base forecast).
    control : {"pid", "basic"}, default "pid"
        ``"basic"``: the adjustment of Eq. (3); ``"pid"``: Eq. (6).
    feasibility : bool, default True
        Solve the spring equilibrium of Eq. (4); otherwise output ``Z~ + E``.
    params : str or DriftParams, default "paper"
        ``"paper"`` (Appendix B.1), ``"torchuq"`` (the public code) or a
        :class:`~calibtut.online.adjustment.DriftParams`.
    solver_tol : float, default 1e-12
        Tolerance of :func:`~calibtut.online.springs.solve_equilibrium`.
    **overrides
        Fields of ``params`` to change (``beta=0.3``, ...).

    Notes
    -----
    What the guarantee does not cover. With springs (Theorem 2) and PID
    (Corollary 1) the calibration bound ``K (2 h(T) + c)`` holds only on
    transcripts whose likelihood (Eq. 5, the forecast density on the interval
    where the label fell) stays below a level set by ``c``. That is a
    hypothesis on nature, not something the algorithm enforces. An adaptive
    nature that places every label just around the calibrated median (just
    below, then just above, :func:`~calibtut.online.theory.adversarial_labels`
    with ``strategy="median"``) pulls the central quantiles onto the labels;
    the intervals between them shrink towards zero, the likelihood grows
    without bound, and the smallest admissible ``c`` grows with its
    logarithm. The bound still holds, but only vacuously: it exceeds ``T``
    (a frequency error above 1), while the output is far from calibrated.
    Against such a nature the basic algorithm without springs
    (``control="basic", feasibility=False``) keeps Theorem 1's guarantee,
    which holds for any labels in ``[-B, B]``, at the price of crossing
    quantiles.

    Examples
    --------
    >>> from calibtut.online.drift import figure1_stream
    >>> s = figure1_stream(n_steps=60, n_series=4, seed=0)
    >>> z = DriftCalibrator(s.levels, B=s.B).run(s.forecasts, s.labels)
    >>> bool(np.all(np.diff(z, axis=-1) > 0))
    True
    """

    def __init__(self, levels, B=None, *, conformal=True, control="pid", feasibility=True, params="paper",
                 solver_tol=1e-12, **overrides):
        super().__init__(levels, B)
        if control not in ("pid", "basic"):
            raise ValueError(f"control must be 'pid' or 'basic', got {control!r}")
        if not isinstance(conformal, bool) or not isinstance(feasibility, bool):
            raise TypeError("conformal and feasibility must be booleans")
        self.params = resolve_params(params, **overrides)
        self.conformal = conformal
        self.control = control
        self.feasibility = feasibility
        self.solver_tol = check_real(solver_tol, "solver_tol", low=0, low_open=True)
        self._tolerance = ToleranceTable(self.levels, self.params.delta, self.params.tolerance)
        self._ki = integral_gains(self.n_levels, self.params.ki_max, self.params.ki_min)

    def _reset(self, n_series):
        self.counts = np.zeros((n_series, self.n_levels))
        self._stage = ConformalCalibrator(self.levels, self.B).reset(n_series) if self.conformal else None
        p = self.params
        self._pid = PIDController(n_series, kp=p.kp, kd=p.kd, ki=self._ki, B=self.B) if self.control == "pid" else None
        self._adjustment = None
        self._displacement = np.zeros((n_series, self.n_levels))

    def initial_quantiles(self, forecast):
        """``Z~``: conformally calibrated (or raw) base quantiles for this step."""
        if self._stage is not None:
            return self._stage._predict(forecast)
        return forecast.base_quantiles()

    def _predict(self, forecast):
        base = self.initial_quantiles(forecast)
        e = exponential_adjustment(self.counts, self.t, self.levels, self._tolerance(self.t), self.params.beta, self.B)
        self._adjustment = e
        force = self._pid.output(e) if self._pid is not None else e
        if not self.feasibility:
            return base + force
        moved = np.any(force != 0, axis=1)
        out = base.copy()
        if np.any(moved):
            warm = base[moved] + self._displacement[moved]
            out[moved] = solve_equilibrium(base[moved], force[moved], self.params.eta, self.B, tol=self.solver_tol,
                                           start=warm)
        if np.any(~moved):
            out[~moved] = _separate_ties(base[~moved], self.params.eta, self.B, self.solver_tol)
        self._displacement = out - base
        return out

    def _update(self, labels, quantiles, forecast):
        self.counts += labels[:, None] <= quantiles
        if self._stage is not None:
            self._stage._update(labels, None, forecast)
        if self._pid is not None:
            self._pid.commit(self._adjustment)


def _separate_ties(base, eta, B, tol):
    """With no force the equilibrium is ``Z~`` itself unless ``Z~`` has ties (or touches ``+-B``)."""
    gaps = np.diff(base, axis=1)
    bad = np.any(gaps <= 0, axis=1)
    if B is not None:
        bad |= (base[:, 0] <= -B) | (base[:, -1] >= B)
    if np.any(bad):
        base = base.copy()
        base[bad] = solve_equilibrium(base[bad], np.zeros_like(base[bad]), eta, B, tol=tol)
    return base
