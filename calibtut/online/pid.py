"""PID control of the adjustment (Eq. 6).

With ``E^t`` the adjustment of Eq. (3) at step ``t``, the controller outputs
``kp E^t + CLIP_[-B, B](k_i * sum_{tau <= t} E^tau + kd (E^t - E^{t-1}))``
with ``E^0 = 0`` and the level-dependent integral gains ``k_i`` of Eq. (45).
The clip applies to the sum of the integral and derivative terms, as Eq. (6)
is printed; without a bound ``B`` nothing is clipped.
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import check_int, check_positive, check_real
from calibtut.online._forecasts import check_bound

__all__ = ["PIDController"]


class PIDController:
    """Proportional-integral-derivative control of a batch of adjustments.

    Parameters
    ----------
    n_series : int
    kp, kd : float
        Proportional and derivative gains.
    ki : array_like of shape (K,)
        Integral gain per level (see :func:`~calibtut.online.adjustment.integral_gains`).
    B : float, optional
        Clip bound of the integral + derivative term.

    Examples
    --------
    >>> pid = PIDController(1, kp=1.0, kd=0.5, ki=[0.1], B=None)
    >>> pid.output(np.array([[2.0]])).tolist()
    [[3.2]]
    >>> pid.commit(np.array([[2.0]])).output(np.array([[2.0]])).tolist()
    [[2.4]]
    """

    def __init__(self, n_series, *, kp, kd, ki, B=None):
        n = check_int(n_series, "n_series", minimum=1)
        self.kp = check_real(kp, "kp", low=0)
        self.kd = check_real(kd, "kd", low=0)
        self.ki = check_positive(ki, "ki", strict=False, ndim=1)
        self.B = check_bound(B)
        self.integral = np.zeros((n, len(self.ki)))
        self.previous = np.zeros((n, len(self.ki)))

    def output(self, adjustment):
        """The control output for the current adjustment ``E^t`` (state unchanged)."""
        e = np.asarray(adjustment, dtype=float)
        slow = self.ki * (self.integral + e) + self.kd * (e - self.previous)
        if self.B is not None:
            slow = np.clip(slow, -self.B, self.B)
        return self.kp * e + slow

    def commit(self, adjustment):
        """Record ``E^t`` once the step is over (integral and previous value)."""
        e = np.asarray(adjustment, dtype=float)
        self.integral = self.integral + e
        self.previous = e
        return self
