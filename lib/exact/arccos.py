"""The arc-cosine kernel of ReLU layers: expected inner products and distances at any depth.

For unit inputs at angle theta and ``w ~ N(0, I)``,
``k1(theta) = E[ReLU(w.x1) ReLU(w.x2)] = (sin theta + (pi - theta) cos theta) / (2 pi)``
(Cho & Saul 2009, degree 1). A ReLU layer of width m with weights ``N(0, 2/m)`` maps the
cosine of two unit inputs to ``2 k1(theta)`` in expectation, and this map, iterated, is the
infinite-width law of the angle through depth.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import validate as v

__all__ = ["relu_kernel", "distance_ratio"]


def relu_kernel(theta: float) -> float:
    """``E[ReLU(w.x1) ReLU(w.x2)]`` for unit x1, x2 at angle ``theta`` and ``w ~ N(0, I)``.

    References
    ----------
    Cho & Saul (2009), the arc-cosine kernel of degree 1; Arpit & Bengio (2019), section 3.4.

    Examples
    --------
    >>> relu_kernel(0.0), round(relu_kernel(math.pi / 2), 6)
    (0.5, 0.159155)
    """
    theta = v.in_interval("theta", theta, 0.0, math.pi, closed_hi=True)
    # the order of operations of SymPy's lambdified k1 (the chapter's derivation)
    return float((1 / 2) * (-theta * np.cos(theta) + np.sin(theta) + np.pi * np.cos(theta)) / np.pi)


def distance_ratio(theta: float, depth: int = 1) -> float:
    """``E||f(x1) - f(x2)||^2 / ||x1 - x2||^2`` after ``depth`` ReLU layers, infinite width.

    Unit inputs at angle ``theta`` in (0, pi]; every layer has weights ``N(0, 2/m)`` (He,
    fan-out), so norms are preserved and the cosine maps to ``2 k1(theta)`` per layer
    (clipped to 1 against rounding). At depth 1 this is the expectation at every width.

    Parameters
    ----------
    theta : float
        The angle between the inputs, in (0, pi].
    depth : int
        The number of layers.

    Returns
    -------
    float
        ``(2 - 2 cos theta_L) / (2 - 2 cos theta)``.

    References
    ----------
    Arpit & Bengio (2019), section 3.4 (the claim that wide ReLU networks preserve distances);
    Cho & Saul (2009), the arc-cosine kernel.

    Examples
    --------
    >>> round(distance_ratio(math.pi / 2), 6), round(distance_ratio(math.pi), 6)
    (0.68169, 0.5)
    """
    theta = v.in_interval("theta", theta, 0.0, math.pi, closed_hi=True)
    if theta == 0:
        raise ValueError("theta must be > 0 (equal inputs have no distance ratio)")
    depth = v.positive_int("depth", depth)
    if theta < _SMALL:
        return _small_angle_ratio(theta, depth)
    c = math.cos(theta)
    for _ in range(depth):
        c = min(1.0, 2 * relu_kernel(math.acos(max(-1.0, min(1.0, c)))))
    return (2 - 2 * c) / (2 - 2 * math.cos(theta))


#: below this angle the cosines of the inputs and outputs agree to more digits than a float
#: holds (``2 - 2 cos theta`` cancels): :func:`distance_ratio` follows the angle instead
_SMALL = 1e-3


def _small_angle_ratio(theta: float, depth: int) -> float:
    """:func:`distance_ratio` for ``0 < theta < _SMALL``, without cancellation.

    With ``s = sin(theta / 2)``, one layer maps the angle to ``2 asin(s sqrt(1 - g))``,
    ``g = (sin theta - theta cos theta) / (2 pi s^2)`` (from ``1 - 2 k1(theta)``), and the
    ratio of squared distances is ``(sin(theta_L / 2) / sin(theta / 2))^2``. For small
    angles ``sin t - t cos t = (t^3 / 3)(1 - t^2 / 10 + t^4 / 280 - ...)``, so that ``g``
    is exact to rounding at every scale (the ratio tends to 1 as theta -> 0).
    """
    angle = theta
    for _ in range(depth):
        s = math.sin(angle / 2)
        g = angle / (6 * math.pi) * (angle / s) ** 2 * (1 - angle**2 / 10 + angle**4 / 280)
        angle = 2 * math.asin(min(1.0, s * math.sqrt(1 - g)))
    return (math.sin(angle / 2) / math.sin(theta / 2)) ** 2
