"""De-biased Variation Strength: the estimate, its noise floor and a test-inversion interval.

The paper's VS is biased upward by a *noise floor*: the group means carry sampling error, which
inflates their spread. Per scenario ``s`` the one-way ANOVA identity

    E[ sum_g (m_g - mbar)^2 ] = sum_g (mu_g - mubar)^2 + (K-1)/K * sum_g sigma_g^2 / n_g

(``m_g`` group means of face-level phi, ``sigma_g^2`` the within-group variance, estimated by
``s_g^2`` with ddof 1; a one-face group uses the pooled within-group variance) gives the unbiased
``theta2_s = (sum_g (m_g - mbar)^2 - c_s) / (K - ddof)``, ``c_s = (K-1)/K sum_g s_g^2 / n_g``.
``T = mean_s theta2_s`` estimates the squared spread ``tau = mean_s sum_g (mu_g - mubar)^2 /
(K - ddof)`` without bias; it is *not* truncated and is negative about half the time when the
groups do not differ. On the VS scale it is reported as the signed root ``sign(T) sqrt(|T|)``.

Interval: **test-inversion bootstrap** (Carpenter 1999, JRSS B 61:159). A basic (pivot) bootstrap
interval is wrong here: in the bootstrap world the truth is the *plug-in* spread ``T + floor^2``,
whose cross term with the resampling error inflates the spread of ``T*``, so it over-covers at a
true spread of 0 and, the statistic being skewed the other way near the floor, under-covers there.
Instead the data are moved to a world whose truth is known: each group's phi are shifted by ``a *
d_g - (m_g - mbar)`` (``d_g = m_g - mbar`` the observed deviations), which keeps every within-group
variance and sets the group-mean spread to ``tau = a^2 P`` (``P = mean_s sum_g d_g^2 / (K -
ddof)``). For one face resample ``b`` the de-biased statistic of that world is exactly quadratic in
``a``, ``T*_b(a) = A_b + 2 a B_b + a^2 C_b`` (``A_b`` from the resampling errors ``e = m*_g - m_g``
with the resample's own ``c*``, ``B_b`` their cross term with ``d``, ``C_b = P`` when no group is
missing from the resample), so the sampling distribution of ``T`` at any ``tau`` costs one
quantile. ``tau`` is accepted when ``T`` lies between the ``(1-ci)/2`` and ``(1+ci)/2`` quantiles
of ``T*(a)``; the interval is the hull of the accepted values. Below 0 (no spread can be smaller
than none) the family is continued by a shift of the null distribution, ``T*(tau) = A + tau``, so
the interval is never empty and, like the estimate, may lie below 0: it then says the groups differ
*less* than chance would make them, an event of probability ``(1-ci)/2`` at the null. At ``tau =
0`` the test is the bootstrap's null distribution of ``T``, whose spread the resample overstates
(the sample covariance across many scenarios carries spurious correlations): it is rescaled to an
unbiased ``tr(Sigma^2)`` (:func:`null_trace`). The cross term is rescaled for the unknown direction
of the true group differences (:func:`tib_terms`).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

log = logging.getLogger(__name__)


def _scenario_terms(
    s1: np.ndarray, s2: np.ndarray, cnt: np.ndarray, ddof: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Group means and per-scenario noise terms from sums, sums of squares and counts (..., K, S).

    Returns ``(ok, means, c, denom, usable)``: groups with phi, their means (NaN where none),
    ``c_s``, ``K_s - ddof`` and the scenarios with >= 2 groups and a finite ``c_s``.
    """
    ok = cnt > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(ok, cnt, 1.0)
        means = np.where(ok, s1 / safe, np.nan)
        ssw = np.where(ok, s2 - s1 * s1 / safe, 0.0).clip(min=0.0)  # within-group sum of squares
        dfw = np.where(cnt > 1, cnt - 1.0, 0.0)
        pooled = ssw.sum(axis=-2, keepdims=True) / dfw.sum(axis=-2, keepdims=True)
        var_g = np.where(cnt > 1, ssw / np.where(cnt > 1, cnt - 1.0, 1.0), pooled)
        k = ok.sum(axis=-2)  # groups with phi, per scenario
        c = (k - 1) / np.where(k > 0, k, 1) * np.where(ok, var_g / safe, 0.0).sum(axis=-2)
    usable = (k >= 2) & np.isfinite(c)
    denom = np.where(usable, k - ddof, 1.0)
    return ok, means, c, denom, usable


def _centred(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``x`` minus its mean over the present groups (axis -2), 0 where absent."""
    k = np.maximum(ok.sum(axis=-2, keepdims=True), 1)
    xm = np.where(ok, x, 0.0)
    return np.where(ok, xm - xm.sum(axis=-2, keepdims=True) / k, 0.0)


def _scenario_mean(x: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """Mean over the usable scenarios (last axis); NaN where none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        n = usable.sum(axis=-1)
        return np.where(n > 0, np.where(usable, x, 0.0).sum(axis=-1) / np.maximum(n, 1), np.nan)


def debiased_spread(
    s1: np.ndarray, s2: np.ndarray, cnt: np.ndarray, ddof: int
) -> tuple[np.ndarray, np.ndarray]:
    """Unbiased squared spread ``T`` and squared noise floor from group sums (..., K, S).

    NaN where no scenario has two groups with phi (see the module docstring).
    """
    ok, means, c, denom, usable = _scenario_terms(s1, s2, cnt, ddof)
    between = (_centred(np.nan_to_num(means), ok) ** 2).sum(axis=-2)
    return _scenario_mean((between - c) / denom, usable), _scenario_mean(c / denom, usable)


def signed_root(t: np.ndarray | float) -> np.ndarray:
    """``sign(t) sqrt(|t|)``: the VS scale of a (possibly negative) squared spread."""
    t = np.asarray(t, dtype=np.float64)
    return np.sign(t) * np.sqrt(np.abs(t))


def vs_debiased(
    s1: np.ndarray, s2: np.ndarray, cnt: np.ndarray, ddof: int
) -> tuple[np.ndarray, np.ndarray]:
    """De-biased VS (signed root of ``T``) and its noise floor, from group sums (..., K, S)."""
    t, floor2 = debiased_spread(s1, s2, cnt, ddof)
    return signed_root(t), np.sqrt(floor2)


def null_trace(
    phi: np.ndarray, mask: np.ndarray, onehot: np.ndarray, ddof: int
) -> tuple[float, float]:
    """``psi = tr(M^2)`` of the group means' sampling covariance ``M``: unbiased and plug-in.

    The null-world spread of ``T`` is driven by ``2 tr(M^2)`` (``M`` = covariance of the
    scenario-scaled, group-centred means). A face resample plays back the *sample* covariance of
    each group's (faces x scenarios) phi, and ``tr(S_g^2)`` is biased up by about
    ``tr(Sigma_g)^2 / n_g``: every spurious sample correlation between two scenarios, each
    ``O(1/sqrt(n_g))``, adds ``O(1/n_g)`` once squared, over ``S (S - 1)`` scenario pairs. With 25
    scenarios and 10-50 faces per group that inflates the null variance of ``T*`` by about
    ``1 + (1 - 1/K)(S - 1)/n_g`` (1.2-2.9; measured 1.65 for gender in the calibration's null
    plant), i.e. intervals that cover a true spread of 0 almost always.
    The unbiased ``tr(Sigma_g^2) = (n-1)^2 / ((n-2)(n+1)) (tr(S_g^2) - tr(S_g)^2 / (n-1))``
    (Bai & Saranadasa 1996; normal theory) corrects it; cross-group terms ``tr(S_g S_h)`` are
    unbiased as they stand (independent groups). Returns ``(psi_unbiased, psi_resample)``, the
    latter with the resample's covariance ``S_g (n-1)/n``. Groups with < 3 faces keep the plug-in.
    """
    sums = (onehot.T @ (phi * mask), onehot.T @ (phi * phi * mask), onehot.T @ mask)
    _, means, _, denom, usable = _scenario_terms(*sums, ddof)
    w = np.where(usable, 1.0 / np.sqrt(max(int(usable.sum()), 1) * denom), 0.0)
    labels = onehot.argmax(axis=1)
    k = onehot.shape[1]
    cov, n = [], []
    for g in range(k):
        rows = labels == g
        ng = int(rows.sum())
        if ng < 2:
            cov.append(None)
            n.append(ng)
            continue
        x = (phi[rows] - np.nan_to_num(means[g])) * mask[rows] * w
        cov.append(x.T @ x / (ng - 1))
        n.append(ng)
    unb = res = 0.0
    for g in range(k):
        if cov[g] is None:
            continue
        ng = n[g]
        tr2 = float(np.sum(cov[g] * cov[g]))
        tr1 = float(np.trace(cov[g]))
        u = (ng - 1) ** 2 / ((ng - 2) * (ng + 1)) * (tr2 - tr1 * tr1 / (ng - 1)) if ng > 2 else tr2
        f = (ng - 1) / ng
        unb += (1 - 1 / k) ** 2 * u / ng**2
        res += (1 - 1 / k) ** 2 * tr2 * f * f / ng**2
        for h in range(k):
            if h == g or cov[h] is None:
                continue
            cross = float(np.sum(cov[g] * cov[h])) / (ng * n[h])
            unb += cross / k**2
            res += cross * f * (n[h] - 1) / n[h] / k**2
    return unb, res


def tib_terms(
    obs: tuple[np.ndarray, np.ndarray, np.ndarray],
    boot: tuple[np.ndarray, np.ndarray, np.ndarray],
    ddof: int,
    psi: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Coefficients of ``T*_b(a) = A_b + 2 a B_b + a^2 C_b`` per face resample, and ``P``.

    ``obs`` = observed group sums, sums of squares and counts (K, S); ``boot`` = the same per
    resample (B, K, S). ``P`` is the observed plug-in squared spread (``tau = a^2 P``). When every
    group mean is equal (``P = 0``) the direction ``d`` is a fixed linear contrast of the groups.

    The cross term ``B`` carries the one nuisance of the problem, the *direction* of the true
    group means: its variance at ``tau`` is ``4 tau R(mu)``, ``R(v) = v' Sigma v / v'v`` the
    Rayleigh quotient of the sampling covariance ``Sigma`` of the (centred, scaled) group means
    along that direction. The observed ``d`` is ``mu`` plus noise, and noise points along
    ``Sigma``'s typical, not its leading, directions, so ``R(d)`` understates ``R(mu)`` when the
    true spread lies along correlated noise (a group difference of the same sign in every
    scenario, with faces that differ in every scenario alike) -- the interval would under-cover
    near the floor. ``B`` is therefore rescaled to ``R = max(R(d), min(eta / T, lambda_max))``:
    ``eta = d' Sigma d - tr(Sigma^2)`` is unbiased for ``mu' Sigma mu`` and ``T`` for ``mu'mu``,
    ``lambda_max`` (the largest ``R`` of any direction) bounds it, and ``T <= 0`` (no evidence
    of a direction) takes ``lambda_max``. ``Sigma`` is the covariance of the resampled means.
    """
    ok, means, _, denom, usable = _scenario_terms(*obs, ddof)
    d = _centred(np.nan_to_num(means), ok)
    w0 = np.where(usable, 1.0 / np.sqrt(np.maximum(usable.sum(-1), 1) * denom), 0.0)
    p = float(((d * w0[..., None, :]) ** 2).sum())
    if not p > 1e-300:
        k = d.shape[-2]
        d = _centred(np.broadcast_to(np.linspace(-1.0, 1.0, k)[:, None], d.shape), ok)
        p = float(((d * w0[..., None, :]) ** 2).sum())
    okb, mb, cb, denb, useb = _scenario_terms(*boot, ddof)
    okb = okb & ok
    useb = useb & usable
    nb = useb.sum(axis=-1)
    wb = np.where(useb, 1.0 / np.sqrt(np.maximum(nb, 1)[:, None] * denb), 0.0)[:, None, :]
    e = _centred(np.where(okb, np.nan_to_num(mb) - np.nan_to_num(means), 0.0), okb) * wb
    dd = _centred(np.broadcast_to(d, okb.shape), okb) * wb
    a = (e * e).sum(axis=(-2, -1)) - _scenario_mean(cb / denb, useb)
    b = (e * dd).sum(axis=(-2, -1))
    c = (dd * dd).sum(axis=(-2, -1))
    keep = (nb > 0) & np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    a, b, c = a[keep], b[keep], c[keep]
    ez = e[keep].reshape(int(keep.sum()), int(np.prod(e.shape[1:])))
    if ez.shape[0] > 2:
        t = float(debiased_spread(*obs, ddof)[0])
        nu = np.linalg.eigvalsh(np.cov(ez, rowvar=False)).clip(min=0.0)
        psi_unb = float(np.sum(nu * nu))
        if psi is not None and psi[0] > 0 and psi[1] > 0:
            psi_unb = psi[0]
            a = a.mean() + np.sqrt(psi[0] / psi[1]) * (a - a.mean())
        dsd = float(b.var(ddof=1))  # d' Sigma d
        r_d = dsd / p
        r_max = float(nu[-1])
        r_mu = min((dsd - psi_unb) / t, r_max) if t > 0 else r_max
        r = max(r_d, r_mu)
        if r_d > 0 and np.isfinite(r):
            b = b * np.sqrt(r / r_d)
    return a, b, c, p


def tib_interval(
    t: float, a: np.ndarray, b: np.ndarray, c: np.ndarray, p: float, ci: float
) -> tuple[float, float]:
    """Test-inversion interval for ``tau`` (squared-spread scale) given ``T`` and the terms.

    ``tau >= 0`` is accepted when ``q_lo(a) <= T <= q_hi(a)``, the ``(1 -+ ci)/2`` quantiles of
    ``A + 2 a B + a^2 C`` at ``a = sqrt(tau / P)``; ``tau < 0`` when ``T`` lies within the null
    quantiles shifted by ``tau``. Returns the hull of the accepted values (NaN if ``T`` or the
    replicates are not finite).
    """
    if not (np.isfinite(t) and a.size and p > 0):
        return np.nan, np.nan
    probs = [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0]

    def quant(theta: np.ndarray) -> np.ndarray:
        s = np.atleast_1d(theta) / np.sqrt(p)
        dist = a[:, None] + 2.0 * s[None, :] * b[:, None] + (s * s)[None, :] * c[:, None]
        return np.quantile(dist, probs, axis=0)  # (2, len(theta))

    def accepted(theta: np.ndarray) -> np.ndarray:
        q = quant(theta)
        return (q[0] <= t) & (t <= q[1])

    q0 = quant(np.array([0.0]))[:, 0]
    lo_neg, hi_neg = t - q0[1], min(t - q0[0], 0.0)  # tau < 0: T within q0 + tau
    neg = lo_neg < 0.0 and lo_neg <= hi_neg
    pos = _tib_positive(t, quant, accepted, q0, p)
    lo_t, hi_t = (lo_neg, hi_neg) if neg else (np.nan, np.nan)
    if pos is not None:
        first, last, _ = pos
        lo_t = first * first if not neg else lo_neg
        hi_t = last * last
    return float(lo_t), float(hi_t)


def _tib_positive(t, quant, accepted, q0, p):
    """The accepted ``a = sqrt(tau / P)``-scale hull on ``tau >= 0``: ``(first, last, step)``
    on the VS scale (``step``: the search grid's spacing), or None when no ``tau >= 0`` is."""
    top = 2.0 * max(np.sqrt(max(t, 0.0)), np.sqrt(max(q0[1], 0.0)), np.sqrt(p), 1e-12)
    for _ in range(80):  # the upper end of the search: q_lo(top) above T
        if quant(np.array([top]))[0, 0] > t:
            break
        top *= 2.0
    grid = np.linspace(0.0, top, 257)
    acc = accepted(grid)
    if not acc.any():
        return None
    i, j = int(np.argmax(acc)), int(len(acc) - 1 - np.argmax(acc[::-1]))
    first = grid[i] if i == 0 else _bisect(accepted, grid[i - 1], grid[i])
    last = _bisect(accepted, grid[j + 1], grid[j]) if j + 1 < len(grid) else grid[j]
    return float(first), float(last), float(grid[1])


def boundary_interval(
    obs: tuple[np.ndarray, np.ndarray, np.ndarray],
    boot: tuple[np.ndarray, np.ndarray, np.ndarray],
    ddof: int,
    ci: float,
    psi: tuple[float, float] | None,
    pval: float,
) -> tuple[float, float]:
    """Boundary-aware interval of the spread (VS scale, ``>= 0``): a confidence set for
    ``tau >= 0`` that holds its level at a true spread of 0 and above.

    * ``tau = 0`` is in the set iff the face-label permutation test of VS (``pval``, one-sided:
      only a large spread speaks against none) does not reject at ``1 - ci``. Under no spread the
      face labels are exchangeable, so this holds 0 with probability ``ci`` whatever the noise
      floor (the whole level goes to the one tail that can reject at the boundary).
    * ``tau > 0`` is in the set iff the two-sided test-inversion bootstrap accepts it
      (:func:`tib_interval`, ``(1 -+ ci)/2`` quantiles of ``T*(tau)``).

    The interval is the hull: ``[0, U]`` when 0 is accepted (``U`` the test inversion's upper
    end, 0 when no ``tau > 0`` is accepted: ``T`` far below the floor), else ``[L, U]`` with
    ``L > 0`` (the test inversion's lower end; where it reaches 0 although the permutation test
    rejects, the first positive point of its search grid). Unlike :func:`debiased_interval` it
    need not hold the signed estimate, which can be negative. NaN when ``pval`` or the
    replicates are not finite.
    """
    t = float(debiased_spread(*obs, ddof)[0])
    a, b, c, p = tib_terms(obs, boot, ddof, psi)
    if not (np.isfinite(t) and np.isfinite(pval) and a.size and p > 0):
        return np.nan, np.nan
    probs = [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0]

    def quant(theta: np.ndarray) -> np.ndarray:
        sc = np.atleast_1d(theta) / np.sqrt(p)
        dist = a[:, None] + 2.0 * sc[None, :] * b[:, None] + (sc * sc)[None, :] * c[:, None]
        return np.quantile(dist, probs, axis=0)

    def accepted(theta: np.ndarray) -> np.ndarray:
        q = quant(theta)
        return (q[0] <= t) & (t <= q[1])

    pos = _tib_positive(t, quant, accepted, quant(np.array([0.0]))[:, 0], p)
    zero_in = pval > 1.0 - ci
    if zero_in:
        return 0.0, (pos[1] if pos is not None else 0.0)
    if pos is None:  # 0 rejected and no tau > 0 accepted (not seen): the estimate alone
        root = float(np.sqrt(max(t, 0.0)))
        return root, root
    first, last, step = pos
    return (first if first > 0 else step), last


def _bisect(accepted, outside: float, inside: float, steps: int = 30) -> float:
    """The boundary between a rejected and an accepted value (returns an accepted one)."""
    for _ in range(steps):
        mid = 0.5 * (outside + inside)
        if accepted(np.array([mid]))[0]:
            inside = mid
        else:
            outside = mid
    return inside


def debiased_interval(
    obs: tuple[np.ndarray, np.ndarray, np.ndarray],
    boot: tuple[np.ndarray, np.ndarray, np.ndarray],
    ddof: int,
    ci: float,
    psi: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Test-inversion bootstrap interval of the de-biased VS, on the VS (signed-root) scale.

    ``obs`` = observed group sums, sums of squares and counts (K, S); ``boot`` = the same per
    face resample (B, K, S). The interval always holds the estimate (guarded; a warning if the
    guard ever acts).
    """
    t = float(debiased_spread(*obs, ddof)[0])
    a, b, c, p = tib_terms(obs, boot, ddof, psi)
    lo, hi = tib_interval(t, a, b, c, p, ci)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return np.nan, np.nan
    if not lo <= t <= hi:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            log.warning(
                "de-biased VS: test-inversion interval [%.3g, %.3g] misses its estimate %.3g "
                "(squared scale); widened to include it",
                lo,
                hi,
                t,
            )
        lo, hi = min(lo, t), max(hi, t)
    return float(signed_root(lo)), float(signed_root(hi))
