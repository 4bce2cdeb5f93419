"""Weight laws: batched samplers of weight matrices, and the :class:`Law` that describes one.

Every sampler returns a stack of independent matrices of shape ``(n_nets, fan_out, fan_in)``,
so that one call initializes one layer of ``n_nets`` independent networks. Layers act as
``a = W h`` with ``W`` of shape ``(fan_out, fan_in)``: fan-in is the input width.

A :class:`Law` is an *initializer* (``law(n_nets, fan_out, fan_in, gen)`` returns such a stack)
that also says what it is (its distribution, its entry variance, its kurtosis), so that the
exact engines of :mod:`eit.exact` can read the law off a layer description (a Gaussian law
has an exact norm chain; a uniform one has exact moments; any other callable is sampled only).

Random numbers come from the caller's generator (:func:`eit.core.seeds.generator`). Large
draws on the CPU are split into fixed chunks of :data:`CHUNK` numbers, each filled by its own
generator seeded from the caller's, in parallel threads (torch's CPU generator is single
threaded and releases the GIL): the numbers depend on the seed only, never on the number of
threads. Draws stay float64 (float32 normals upcast would be 2-4x faster but truncate the
tails at about 5.8 standard deviations and quantize them; the book keeps full precision).
"""

from __future__ import annotations

import math
import numbers
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import torch

from ..core import validate as v
from ..core.device import DTYPE, device, rand, randn
from ..core.scaling import rescaled

Mode = Literal["fan_in", "fan_out", "fan_avg"]
Distribution = Literal["normal", "uniform", "truncated_normal"]
#: An initializer: ``init(n_nets, fan_out, fan_in, gen) -> (n_nets, fan_out, fan_in)``.
Initializer = Callable[[int, int, int, torch.Generator], torch.Tensor]
#: A rule giving a number from ``(fan_in, fan_out)`` (a variance or a gain).
FanRule = Callable[[int, int], float]

#: Numbers per independently seeded chunk of a parallel draw (fixed: the stream must not
#: depend on the machine).
CHUNK = 1 << 20
#: Draws of at least this many numbers on a CPU generator are chunked and drawn in parallel.
PARALLEL_MIN = 1 << 22

_pool_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    workers = max(1, min(torch.get_num_threads(), os.cpu_count() or 1))
    with _pool_lock:
        if _pool is None or _pool[0] != workers:
            _pool = (workers, ThreadPoolExecutor(workers, thread_name_prefix="eit-rng"))
        return _pool[1]


def _chunk_seeds(numel: int, gen: torch.Generator) -> list[int]:
    """One seed per chunk of :data:`CHUNK` numbers, drawn from ``gen`` in one call."""
    return torch.randint(0, 2**62, (-(-numel // CHUNK),), generator=gen).tolist()


def _fill_chunk(kind: str, dest: torch.Tensor, seed: int) -> torch.Tensor:
    child = torch.Generator().manual_seed(seed)
    if kind == "normal":
        return dest.normal_(generator=child)
    return dest.uniform_(generator=child)


def chunks(kind: str, numel: int, gen: torch.Generator, *, dtype: torch.dtype = DTYPE,
           out: torch.Tensor | None = None) -> Iterator[tuple[int, torch.Tensor]]:
    """The chunked stream of a large CPU draw, one filled chunk at a time, in order.

    A draw of ``numel >= PARALLEL_MIN`` numbers on a CPU generator is the concatenation of
    chunks of :data:`CHUNK` numbers (the last one shorter), chunk ``i`` filled by its own
    generator seeded with the ``i``-th of a list of seeds drawn from ``gen`` first. This is
    the stream of :func:`standard_normal` and :func:`standard_uniform`, exposed so that a
    caller can use each chunk while it is in the cache (the explicit engine multiplies the
    rows of a weight matrix as they are drawn). The chunks are filled in parallel threads
    (at most :func:`torch.get_num_threads` at a time, a few chunks ahead of the consumer);
    the numbers depend on ``gen``'s state only, never on the number of threads.

    Parameters
    ----------
    kind : {'normal', 'uniform'}
        Standard normal or uniform on [0, 1).
    numel : int
        How many numbers.
    gen : torch.Generator
        A CPU generator (:func:`eit.core.seeds.generator`).
    dtype : torch.dtype
        A floating-point dtype.
    out : torch.Tensor, optional
        A contiguous tensor of ``numel`` numbers to fill (its chunks are yielded); without
        it, the chunks are yielded in a few buffers of :data:`CHUNK` numbers that are
        reused: a chunk is valid only until the consumer asks for the next one.

    Yields
    ------
    (int, torch.Tensor)
        The flat index of the chunk's first number, and the chunk ``(size,)``.

    Raises
    ------
    ValueError
        On a bad ``kind``, ``numel``, a non-CPU generator or a wrong ``out``.
    TypeError
        If ``dtype`` is not a floating-point dtype or ``out`` not a floating-point tensor.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> [(start, len(c)) for start, c in chunks("normal", CHUNK + 3, generator(0))]
    [(0, 1048576), (1048576, 3)]
    >>> whole = torch.empty(PARALLEL_MIN + 3, dtype=torch.float64)
    >>> for _ in chunks("normal", len(whole), generator(0), out=whole):
    ...     pass
    >>> torch.equal(whole, standard_normal(PARALLEL_MIN + 3, gen=generator(0)))
    True
    """
    if kind not in ("normal", "uniform"):
        raise ValueError(f"kind must be 'normal' or 'uniform', got {kind!r}")
    numel = v.positive_int("numel", numel)
    if not isinstance(gen, torch.Generator) or gen.device.type != "cpu":
        raise ValueError("gen must be a CPU torch.Generator")
    dtype = _dtype(dtype)
    if out is not None and not (isinstance(out, torch.Tensor) and out.is_floating_point()):
        what = out.dtype if isinstance(out, torch.Tensor) else type(out).__name__
        raise TypeError(f"out must be None or a floating-point torch.Tensor, got {what}")
    if out is not None and (out.numel() != numel or not out.is_contiguous()
                            or out.device.type != "cpu"):
        raise ValueError(f"out must be a contiguous CPU tensor of {numel} numbers")
    return _chunks(kind, numel, gen, dtype, out)


def _chunks(kind: str, numel: int, gen: torch.Generator, dtype: torch.dtype,
            out: torch.Tensor | None) -> Iterator[tuple[int, torch.Tensor]]:
    seeds = _chunk_seeds(numel, gen)
    starts = [i * CHUNK for i in range(len(seeds))]
    flat = None if out is None else out.view(-1)

    def dest(i: int, buffer: torch.Tensor | None) -> torch.Tensor:
        size = min(CHUNK, numel - starts[i])
        if flat is not None:
            return flat[starts[i]:starts[i] + size]
        return buffer[:size]

    workers = max(1, min(torch.get_num_threads(), os.cpu_count() or 1))
    if workers == 1:                     # in this thread: each chunk used while in cache
        buffer = None if flat is not None else torch.empty(min(CHUNK, numel), dtype=dtype)
        for i, seed in enumerate(seeds):
            yield starts[i], _fill_chunk(kind, dest(i, buffer), seed)
        return
    ahead = workers + 1                  # chunks in flight (and buffers without out)
    buffers = [None if flat is not None else torch.empty(min(CHUNK, numel), dtype=dtype)
               for _ in range(min(ahead, len(seeds)))]
    pool = _executor()
    futures = {}

    def submit(i: int) -> None:
        if i < len(seeds):
            futures[i] = pool.submit(_fill_chunk, kind, dest(i, buffers[i % ahead]),
                                     seeds[i])

    for i in range(ahead - 1):
        submit(i)
    try:
        for i in range(len(seeds)):
            submit(i + ahead - 1)       # its buffer's chunk i - 1 is consumed
            yield starts[i], futures.pop(i).result()
    finally:
        for f in futures.values():      # an abandoned stream: let the threads finish
            f.result()


def _direct(kind: str, shape: tuple[int, ...], gen: torch.Generator,
            dtype: torch.dtype) -> torch.Tensor:
    """A draw below :data:`PARALLEL_MIN` numbers (or on a device): one call of ``gen``."""
    return (randn if kind == "normal" else rand)(*shape, gen=gen, dtype=dtype)


def _dtype(dtype) -> torch.dtype:
    """A floating-point torch.dtype, else a TypeError naming ``dtype`` (draws nothing)."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def _sizes(shape: tuple) -> tuple[int, ...]:
    """The sizes of a draw: ints >= 0 (not bools), else an error naming ``shape``."""
    for i, n in enumerate(shape):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"shape[{i}] must be an int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"shape[{i}] must be >= 0, got {n!r}")
    return tuple(int(n) for n in shape)


def _fill(kind: str, shape: tuple[int, ...], gen: torch.Generator,
          dtype: torch.dtype) -> torch.Tensor:
    shape, dtype = _sizes(shape), _dtype(dtype)
    v.generator("gen", gen, optional=False)
    numel = math.prod(shape)
    if gen.device.type != "cpu" or numel < PARALLEL_MIN:
        return _direct(kind, shape, gen, dtype)
    out = torch.empty(numel, dtype=dtype)
    for _ in _chunks(kind, numel, gen, dtype, out):
        pass
    return out.view(shape).to(device())


def standard_normal(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE
                    ) -> torch.Tensor:
    """I.i.d. N(0, 1) numbers of the given shape, on the compute device.

    Small draws call :func:`eit.core.device.randn`; large CPU draws are split into chunks of
    :data:`CHUNK` numbers with their own generators (seeded from ``gen``) and drawn in
    parallel threads. The result depends on ``gen``'s state only.

    Parameters
    ----------
    *shape : int
        The shape of the result.
    gen : torch.Generator
        The random generator (:func:`eit.core.seeds.generator`).
    dtype : torch.dtype
        A floating-point dtype (default float64).

    Returns
    -------
    torch.Tensor
        Shape ``shape``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> standard_normal(2, 3, gen=generator(0)).shape
    torch.Size([2, 3])
    """
    return _fill("normal", tuple(shape), gen, dtype)


def standard_uniform(*shape: int, gen: torch.Generator, dtype: torch.dtype = DTYPE
                     ) -> torch.Tensor:
    """I.i.d. U(0, 1) numbers of the given shape (parallel like :func:`standard_normal`).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> bool(((u := standard_uniform(1000, gen=generator(0))) >= 0).all() and (u < 1).all())
    True
    """
    return _fill("uniform", tuple(shape), gen, dtype)


def _shape(n_nets: int, fan_out: int, fan_in: int) -> tuple[int, int, int]:
    return (v.positive_int("n_nets", n_nets), v.positive_int("fan_out", fan_out),
            v.positive_int("fan_in", fan_in))


def _guard(shape: tuple[int, ...], dtype: torch.dtype = DTYPE) -> None:
    dtype = _dtype(dtype)
    v.memory("n_nets, fan_out, fan_in", math.prod(shape) * torch.finfo(dtype).bits / 8)


def gaussian(n_nets: int, fan_out: int, fan_in: int, variance: float, *,
             gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. N(0, variance).

    Parameters
    ----------
    n_nets, fan_out, fan_in : int
        The stack has shape ``(n_nets, fan_out, fan_in)``.
    variance : float
        The variance of every entry (> 0).
    gen : torch.Generator
        The random generator.
    dtype : torch.dtype
        A floating-point dtype.

    Returns
    -------
    torch.Tensor
        Shape ``(n_nets, fan_out, fan_in)``.

    Raises
    ------
    ValueError
        If a size is not a positive int or ``variance`` is not finite and positive.
    TypeError
        If ``gen`` is not a torch.Generator or ``dtype`` not a floating-point dtype (checked
        before anything is drawn).
    eit.core.validate.AllocationTooLarge
        If the stack does not fit in memory.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> gaussian(2, 3, 4, 0.5, gen=generator(0)).shape
    torch.Size([2, 3, 4])
    """
    shape = _shape(n_nets, fan_out, fan_in)
    std = math.sqrt(v.positive_float("variance", variance))
    v.generator("gen", gen, optional=False)
    _guard(shape, dtype)
    return std * standard_normal(*shape, gen=gen, dtype=dtype)


def uniform(n_nets: int, fan_out: int, fan_in: int, variance: float, *,
            gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. U(-a, a) with a = sqrt(3 variance), so that Var = variance.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> float(uniform(1, 2, 2, 1 / 3, gen=generator(0)).abs().max()) <= 1
    True
    """
    shape = _shape(n_nets, fan_out, fan_in)
    a = math.sqrt(3.0 * v.positive_float("variance", variance))
    v.generator("gen", gen, optional=False)
    _guard(shape, dtype)
    return a * (2.0 * standard_uniform(*shape, gen=gen, dtype=dtype) - 1.0)


def truncated_normal_variance(std: float, bound: float = 2.0) -> float:
    """Variance of N(0, std^2) truncated to [-bound*std, bound*std] (a property of the law).

    Accurate for every finite positive ``bound`` (a series below 1, where the closed form
    cancels); a ValueError names ``std`` where the variance exceeds float64.

    Examples
    --------
    >>> round(truncated_normal_variance(1.0), 3)
    0.774
    """
    std = v.positive_float("std", std)
    b = v.positive_float("bound", bound)
    if b < 1.0:                          # (std b)^2 E[U^2]: finite wherever the answer is
        s0, s1, _ = _truncated_series(b)
        out = (std * b) * (std * b) * (s1 / s0)
    else:
        out = std * std * _truncated_moments(b)[0]
    if not math.isfinite(out):
        raise ValueError(f"std = {std!r}: the variance std^2 overflows float64")
    return out


def truncated_normal_kurtosis(bound: float = 2.0) -> float:
    """mu_4 / mu_2^2 of a normal truncated at ``bound`` standard deviations.

    With Z truncated to [-b, b]: E Z^2 = 1 - 2 b phi(b)/m and E Z^4 = 3 E Z^2 - 2 b^3 phi(b)/m,
    m = erf(b / sqrt 2) (integration by parts).

    Examples
    --------
    >>> round(truncated_normal_kurtosis(50.0), 6)
    3.0
    """
    b = v.positive_float("bound", bound)
    if b < 1.0:                          # the powers of b cancel: S_2 S_0 / S_1^2
        s0, s1, s2 = _truncated_series(b)
        return s2 * s0 / (s1 * s1)
    m2, m4 = _truncated_moments(b)
    return m4 / m2**2


def _truncated_series(b: float) -> tuple[float, float, float]:
    """``S_k = sum_n (-b^2/2)^n / (n! (2k + 2n + 1))``, k = 0, 1, 2, for 0 < b < 1.

    ``E Z^(2k) = b^(2k) S_k / S_0`` for a standard normal Z truncated to [-b, b] (the
    integrals of z^(2k) exp(-z^2/2) term by term); the terms decrease at once, so there is
    none of the cancellation of the closed forms (moments about b^2 / 3 and b^4 / 5).
    """
    x = -b * b / 2
    s = [0.0, 0.0, 0.0]
    term = 1.0
    for n in range(30):
        for k in range(3):
            s[k] += term / (2 * k + 2 * n + 1)
        term *= x / (n + 1)
    return s[0], s[1], s[2]


def _truncated_moments(b: float) -> tuple[float, float]:
    """E Z^2 and E Z^4 of a standard normal Z truncated to [-b, b], b >= 1 (closed forms;
    E Z^4 without the b^3 phi(b) term where phi(b) underflows to 0)."""
    phi = math.exp(-b * b / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(b / math.sqrt(2))
    m2 = 1.0 - 2.0 * b * phi / mass
    m4 = 3.0 * m2 - (2.0 * b**3 * phi / mass if phi > 0 else 0.0)
    return m2, m4


def truncated_normal(n_nets: int, fan_out: int, fan_in: int, std: float, *,
                     gen: torch.Generator, bound: float = 2.0,
                     dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. N(0, std^2) conditioned on |x| <= bound*std (inverse-CDF sampling).

    ``std`` is the scale of the *underlying* normal, as in ``torch.nn.init.trunc_normal_``;
    the variance of the result is :func:`truncated_normal_variance` (smaller than std^2).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> float(truncated_normal(1, 5, 5, 1.0, gen=generator(0)).abs().max()) <= 2
    True
    """
    shape = _shape(n_nets, fan_out, fan_in)
    std = v.positive_float("std", std)
    b = v.positive_float("bound", bound)
    v.generator("gen", gen, optional=False)
    _guard(shape, dtype)
    lo = 0.5 * (1.0 + math.erf(-b / math.sqrt(2)))
    u = lo + (1.0 - 2.0 * lo) * standard_uniform(*shape, gen=gen, dtype=dtype)
    return std * torch.special.ndtri(u).clamp_(-b, b)


def centered_exponential(n_nets: int, fan_out: int, fan_in: int, variance: float, *,
                         gen: torch.Generator, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Entries i.i.d. sqrt(variance) (E - 1), E ~ Exp(1): mean 0, skewness 2 (not symmetric).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> centered_exponential(1, 2, 3, 1.0, gen=generator(0)).shape
    torch.Size([1, 2, 3])
    """
    shape = _shape(n_nets, fan_out, fan_in)
    std = math.sqrt(v.positive_float("variance", variance))
    v.generator("gen", gen, optional=False)
    _guard(shape, dtype)
    return std * (-torch.log1p(-standard_uniform(*shape, gen=gen, dtype=dtype)) - 1.0)


def haar_orthogonal(n_nets: int, fan_out: int, fan_in: int, *, gen: torch.Generator,
                    gain: float = 1.0, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Haar-distributed (semi-)orthogonal matrices times ``gain`` (the book's one Haar sampler).

    The Q factor of a Gaussian matrix G = Q R with R_ii > 0 (Mezzadri 2007), computed by
    Cholesky QR twice (CholeskyQR2): R is the transposed Cholesky factor of G^T G, which has a
    positive diagonal, and the second pass restores orthogonality to rounding error. It is
    several times faster than Householder QR for batches on a CPU; draws too ill-conditioned
    for it (a Cholesky failure, or an orthogonality error above 1e-10, as happens for
    near-square matrices) are redone by Householder QR with the sign correction. With
    fan_out <= fan_in the rows are orthonormal, otherwise the columns are.

    Parameters
    ----------
    n_nets, fan_out, fan_in : int
        The stack has shape ``(n_nets, fan_out, fan_in)``.
    gen : torch.Generator
        The random generator.
    gain : float
        A positive factor.
    dtype : torch.dtype
        A floating-point dtype.

    Returns
    -------
    torch.Tensor
        Shape ``(n_nets, fan_out, fan_in)``.

    References
    ----------
    F. Mezzadri, "How to generate random matrices from the classical compact groups",
    Notices of the AMS 54 (2007), section 5.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> q = haar_orthogonal(2, 3, 3, gen=generator(0))
    >>> bool(torch.allclose(q @ q.transpose(-2, -1), torch.eye(3, dtype=q.dtype)))
    True
    """
    n_nets, fan_out, fan_in = _shape(n_nets, fan_out, fan_in)
    gain = v.positive_float("gain", gain)
    v.generator("gen", gen, optional=False)
    dtype = _dtype(dtype)
    tall = fan_out >= fan_in
    rows, cols = (fan_out, fan_in) if tall else (fan_in, fan_out)
    _guard((n_nets, rows, cols), dtype)
    g = standard_normal(n_nets, rows, cols, gen=gen, dtype=dtype)
    q, ok = g, torch.ones(n_nets, dtype=torch.bool, device=g.device)
    eye = torch.eye(cols, dtype=g.dtype, device=g.device)
    for _ in range(2):
        chol, info = torch.linalg.cholesky_ex(q.transpose(-2, -1) @ q)
        ok &= info == 0
        chol = torch.where(ok[:, None, None], chol, eye)
        q = torch.linalg.solve_triangular(chol, q.transpose(-2, -1), upper=False)
        q = q.transpose(-2, -1)
    ok &= ((q.transpose(-2, -1) @ q - eye).abs().amax(dim=(-2, -1)) < 1e-10)
    if not bool(ok.all()):
        bad = ~ok
        qq, rr = torch.linalg.qr(g[bad])
        q[bad] = qq * torch.sign(torch.diagonal(rr, dim1=-2, dim2=-1)).unsqueeze(-2)
    q = q if tall else q.transpose(-2, -1)
    return q if gain == 1.0 else gain * q


def sphere_rows(n_nets: int, fan_out: int, fan_in: int, *, gen: torch.Generator,
                radius: float = 1.0, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Rows i.i.d. uniform on the sphere of the given radius in R^fan_in.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> w = sphere_rows(1, 2, 3, gen=generator(0), radius=2.0)
    >>> bool(torch.allclose(w.norm(dim=-1), torch.full((1, 2), 2.0, dtype=w.dtype)))
    True
    """
    shape = _shape(n_nets, fan_out, fan_in)
    radius = v.positive_float("radius", radius)
    v.generator("gen", gen, optional=False)
    _guard(shape, dtype)
    w = standard_normal(*shape, gen=gen, dtype=dtype)
    return radius * w / w.norm(dim=-1, keepdim=True)


# --------------------------------------------------------------------------- row laws (WN)

#: Row laws of weight normalization: isotropic ones (``gaussian``, ``sphere``, ``student_t``),
#: two controls that are not isotropic (``cube``: i.i.d. U(-1, 1) entries; ``elongated``:
#: Gaussian whose first coordinate has standard deviation 2), and ``orthogonal`` (the rows of
#: a Haar matrix; orthonormal when fan_out <= fan_in, else columns orthonormal).
LAWS = ("gaussian", "sphere", "student_t", "cube", "elongated", "orthogonal")
RowLaw = Literal["gaussian", "sphere", "student_t", "cube", "elongated", "orthogonal"]
#: The two row laws of Arpit, Campos & Bengio (2019) after normalization.
DIRECTIONS = ("sphere", "orthogonal")
Direction = Literal["sphere", "orthogonal"]


def rows(n_nets: int, fan_out: int, fan_in: int, *, gen: torch.Generator,
         law: RowLaw = "gaussian", df: int = 3, dtype: torch.dtype = DTYPE) -> torch.Tensor:
    """Un-normalized weight matrices ``(n_nets, fan_out, fan_in)`` with rows of a law.

    ``gaussian``: N(0, I). ``sphere``: uniform on the sphere of radius sqrt(fan_in).
    ``student_t``: multivariate t with ``df`` degrees of freedom, g / sqrt(chi2_df / df) with
    one chi-squared per row (isotropic, heavy-tailed). ``cube``, ``elongated``,
    ``orthogonal``: see :data:`LAWS`.

    References
    ----------
    Arpit & Bengio (2019), section 4 (weight normalization, Theorem 4's isotropy).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> w = rows(1, 2, 4, gen=generator(0), law="sphere")
    >>> bool(torch.allclose(w.norm(dim=-1), torch.full((1, 2), 2.0, dtype=w.dtype)))
    True
    """
    n_nets, fan_out, fan_in = _shape(n_nets, fan_out, fan_in)
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    df = v.positive_int("df", df)
    v.generator("gen", gen, optional=False)
    dtype = _dtype(dtype)
    if law == "orthogonal":
        return haar_orthogonal(n_nets, fan_out, fan_in, gen=gen, dtype=dtype)
    _guard((n_nets, fan_out, fan_in), dtype)
    if law == "cube":
        return 2.0 * standard_uniform(n_nets, fan_out, fan_in, gen=gen, dtype=dtype) - 1.0
    g = standard_normal(n_nets, fan_out, fan_in, gen=gen, dtype=dtype)
    if law == "sphere":
        return math.sqrt(fan_in) * g / g.norm(dim=-1, keepdim=True)
    if law == "student_t":
        chi2 = randn(n_nets, fan_out, df, gen=gen, dtype=dtype).square().sum(-1, keepdim=True)
        return g / torch.sqrt(chi2 / df)
    if law == "elongated":
        g[..., 0] *= 2.0
    return g


def normalize_rows(w: torch.Tensor) -> torch.Tensor:
    """W_hat: every row of ``w`` divided by its Euclidean norm (Arpit & Bengio 2019, eq. 19).

    Raises
    ------
    ValueError
        If a row is zero.

    Examples
    --------
    >>> normalize_rows(torch.tensor([[3.0, 4.0]], dtype=torch.float64))
    tensor([[0.6000, 0.8000]], dtype=torch.float64)
    """
    w = v.tensor("w", w, ndim=(2, 3))
    # rows of any finite scale: an exact power-of-two rescaling where a squared norm would
    # overflow or lose digits (a no-op at ordinary scales, bit for bit)
    w = rescaled(w, w.ndim - 1)[0]
    norms = w.norm(dim=-1, keepdim=True)
    if (norms == 0).any():
        raise ValueError("w has a zero row, which cannot be normalized")
    return w / norms


def directions(n_nets: int, fan_out: int, fan_in: int, direction: RowLaw = "sphere", *,
               gen: torch.Generator) -> torch.Tensor:
    """Unit-norm rows, shape ``(n_nets, fan_out, fan_in)``: the normalized rows of a law.

    ``'sphere'``: rows i.i.d. uniform on the unit sphere, the normalized rows of any isotropic
    law (He, Gaussian). ``'orthogonal'``: the rows of a Haar (semi-)orthogonal matrix,
    normalized; with fan_out <= fan_in they are orthonormal, with fan_out > fan_in (more rows
    than dimensions) the matrix has orthonormal columns and its rows are rescaled to unit norm,
    as weight normalization does. Any other name of :data:`LAWS` normalizes :func:`rows`.

    References
    ----------
    Arpit, Campos & Bengio (2019), section 3 (eq. 2).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> w = directions(1, 2, 3, "orthogonal", gen=generator(0))
    >>> bool(torch.allclose(w.norm(dim=-1), torch.ones(1, 2, dtype=w.dtype)))
    True
    """
    if direction not in LAWS:
        raise ValueError(f"direction must be one of {LAWS}, got {direction!r}")
    _shape(n_nets, fan_out, fan_in)
    v.generator("gen", gen, optional=False)
    if direction == "sphere":
        return sphere_rows(n_nets, fan_out, fan_in, gen=gen)
    w = rows(n_nets, fan_out, fan_in, gen=gen, law=direction)
    if direction == "orthogonal" and fan_out <= fan_in:
        return w
    return normalize_rows(w)


def proposed_gain(fan_in: int, fan_out: int, gamma: float = 2.0) -> float:
    """The gain k = sqrt(gamma fan_in / fan_out) of a weight-normalized layer.

    gamma = 2 before a ReLU (Arpit & Bengio 2019, Corollary 2 and eq. 30; Arpit, Campos &
    Bengio 2019, Theorem 1), gamma = 1 without a ReLU, gamma = 1/B on the last layer of a
    residual block (Arpit, Campos & Bengio 2019, section 4).

    Examples
    --------
    >>> proposed_gain(50, 100)
    1.0
    """
    fan_in, fan_out = v.positive_int("fan_in", fan_in), v.positive_int("fan_out", fan_out)
    return math.sqrt(v.positive_float("gamma", gamma) * fan_in / fan_out)


# --------------------------------------------------------------------------------- Law

_KURTOSIS = {"normal": 3.0, "uniform": 9.0 / 5.0, "centered_exponential": 9.0}


@dataclass(frozen=True, eq=False)
class Law:
    """A described weight law, callable as an initializer ``law(n_nets, fan_out, fan_in, gen)``.

    Attributes
    ----------
    distribution : str
        ``'normal'``, ``'uniform'``, ``'truncated_normal'``, ``'centered_exponential'`` (i.i.d.
        entries), ``'orthogonal'`` (Haar times a gain) or ``'weight_normalized'`` (the
        effective matrix ``k W_hat`` of a weight-normalized layer, rows of law ``rows``).
    rule : callable
        ``rule(fan_in, fan_out)``: the entry variance (i.i.d. laws; for ``truncated_normal``
        the variance of the *underlying* normal) or the gain (``orthogonal``,
        ``weight_normalized``).
    name : str
        A readable name.
    rows : str
        The row law of a ``weight_normalized`` law (see :data:`LAWS`).
    bound : float
        The truncation of a ``truncated_normal`` law, in standard deviations.

    Examples
    --------
    >>> law = he()
    >>> law.distribution, law.variance(50, 10)
    ('normal', 0.04)
    >>> from eit.core.seeds import generator
    >>> law(3, 10, 50, generator(0)).shape
    torch.Size([3, 10, 50])
    """

    distribution: str
    rule: FanRule
    name: str
    rows: str = "gaussian"
    bound: float = 2.0
    _check: bool = field(default=True, repr=False)

    def __call__(self, n_nets: int, fan_out: int, fan_in: int,
                 gen: torch.Generator) -> torch.Tensor:
        s = float(self.rule(fan_in, fan_out))
        d = self.distribution
        if d == "normal":
            return gaussian(n_nets, fan_out, fan_in, s, gen=gen)
        if d == "uniform":
            return uniform(n_nets, fan_out, fan_in, s, gen=gen)
        if d == "truncated_normal":
            return truncated_normal(n_nets, fan_out, fan_in, math.sqrt(s), gen=gen,
                                    bound=self.bound)
        if d == "centered_exponential":
            return centered_exponential(n_nets, fan_out, fan_in, s, gen=gen)
        if d == "orthogonal":
            return haar_orthogonal(n_nets, fan_out, fan_in, gen=gen, gain=s)
        if d == "weight_normalized":
            return v.positive_float("gain", s) * directions(n_nets, fan_out, fan_in, self.rows,
                                                             gen=gen)
        raise ValueError(f"unknown distribution {d!r}")

    def gain(self, fan_in: int, fan_out: int) -> float:
        """The gain of an ``orthogonal`` or ``weight_normalized`` law."""
        if self.distribution not in ("orthogonal", "weight_normalized"):
            raise ValueError(f"a {self.distribution} law has no gain")
        return float(self.rule(fan_in, fan_out))

    def variance(self, fan_in: int, fan_out: int) -> float:
        """The variance of one entry (for ``orthogonal``: gain^2 / max(fan_in, fan_out))."""
        s = float(self.rule(fan_in, fan_out))
        d = self.distribution
        if d in ("normal", "uniform", "centered_exponential"):
            return s
        if d == "truncated_normal":
            return truncated_normal_variance(math.sqrt(s), self.bound)
        if d == "orthogonal":
            return s * s / max(fan_in, fan_out)
        if d == "weight_normalized" and self.rows in ("gaussian", "sphere", "student_t"):
            return s * s / fan_in
        raise NotImplementedError(f"the entry variance of {self.name} is not implemented")

    @property
    def iid(self) -> bool:
        """Whether the entries are i.i.d. (the laws of Hanin & Rolnick's Definition 1)."""
        return self.distribution in ("normal", "uniform", "truncated_normal",
                                     "centered_exponential")

    @property
    def kurtosis(self) -> float:
        """mu_4 / mu_2^2 of one entry (i.i.d. laws only)."""
        if self.distribution == "truncated_normal":
            return truncated_normal_kurtosis(self.bound)
        if self.distribution in _KURTOSIS:
            return _KURTOSIS[self.distribution]
        raise ValueError(f"{self.name} has no i.i.d. entries, hence no entry kurtosis")

    def __repr__(self) -> str:
        return f"Law({self.name})"


_NUMERATOR = {"he": 2.0, "lecun": 1.0, "glorot": 1.0}


def scheme_variance(scheme: str, fan_in: int, fan_out: int, mode: Mode | None = None) -> float:
    """Target variance of a named scheme.

    He: 2/fan, LeCun: 1/fan, Glorot: 2/(fan_in + fan_out) (= 1/fan_avg). ``mode`` picks the
    fan for He and LeCun (default fan_in; Arpit & Bengio 2019 use He with fan_out).

    References
    ----------
    He et al. (2015), eq. (10); Glorot & Bengio (2010), eq. (16).

    Examples
    --------
    >>> scheme_variance("he", 100, 50, "fan_out")
    0.04
    """
    if scheme not in _NUMERATOR:
        raise ValueError(f"scheme must be one of {sorted(_NUMERATOR)}, got {scheme!r}")
    fan_in, fan_out = v.positive_int("fan_in", fan_in), v.positive_int("fan_out", fan_out)
    if scheme == "glorot":
        if mode not in (None, "fan_avg"):
            raise ValueError(f"mode for glorot must be 'fan_avg', got {mode!r}")
        return 2.0 / (fan_in + fan_out)
    mode = mode or "fan_in"
    fans = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}
    if mode not in fans:
        raise ValueError(f"mode must be one of {sorted(fans)}, got {mode!r}")
    return _NUMERATOR[scheme] / fans[mode]


def named(scheme: str, *, mode: Mode | None = None, distribution: Distribution = "normal",
          gain: float = 1.0) -> Law:
    """A :class:`Law` for He, LeCun or Glorot, times ``gain`` in standard deviation.

    ``distribution='truncated_normal'`` follows PyTorch and Keras: the underlying normal has
    the scheme's variance and is truncated at two standard deviations, so the realized
    variance is smaller (about 0.774 of it).

    Examples
    --------
    >>> named("lecun", distribution="uniform").variance(4, 8)
    0.25
    """
    scheme_variance(scheme, 1, 1, mode)  # validates scheme and mode now, not at first call
    gain = v.positive_float("gain", gain)
    if not 0 < gain * gain < math.inf:
        raise ValueError(f"gain must have a finite non-zero square (the variance scales by "
                         f"gain^2), got {gain!r}")
    if distribution not in ("normal", "uniform", "truncated_normal"):
        raise ValueError("distribution must be 'normal', 'uniform' or 'truncated_normal', "
                         f"got {distribution!r}")

    def rule(fan_in: int, fan_out: int) -> float:
        return gain**2 * scheme_variance(scheme, fan_in, fan_out, mode)

    return Law(distribution, rule, f"{scheme}_{mode or 'default'}_{distribution}")


def he(mode: Mode = "fan_in", distribution: Distribution = "normal") -> Law:
    """He et al. (2015): variance 2/fan.

    Examples
    --------
    >>> he("fan_out").variance(10, 40)
    0.05
    """
    v.choice("mode", mode, ("fan_in", "fan_out", "fan_avg"))
    return named("he", mode=mode, distribution=distribution)


def lecun(mode: Mode = "fan_in", distribution: Distribution = "normal") -> Law:
    """LeCun: variance 1/fan.

    Examples
    --------
    >>> lecun().variance(10, 40)
    0.1
    """
    v.choice("mode", mode, ("fan_in", "fan_out", "fan_avg"))
    return named("lecun", mode=mode, distribution=distribution)


def glorot(distribution: Distribution = "normal") -> Law:
    """Glorot & Bengio (2010): variance 2/(fan_in + fan_out).

    Examples
    --------
    >>> glorot().variance(10, 30)
    0.05
    """
    return named("glorot", distribution=distribution)


def gaussian_variance(rule: FanRule) -> Law:
    """A Gaussian :class:`Law` with entry variance ``rule(fan_in, fan_out)``.

    Examples
    --------
    >>> gaussian_variance(lambda fan_in, fan_out: 3.0 / fan_in).variance(6, 1)
    0.5
    """
    if not callable(rule):
        raise TypeError(f"rule must be callable (fan_in, fan_out) -> variance, got {rule!r}")
    return Law("normal", rule, "gaussian_variance")


def gaussian_fixed(variance: float) -> Law:
    """A Gaussian :class:`Law` with the same entry variance whatever the fans.

    Examples
    --------
    >>> gaussian_fixed(0.25).variance(3, 7)
    0.25
    """
    var = v.positive_float("variance", variance)
    return Law("normal", lambda fan_in, fan_out: var, f"gaussian({var:g})")


def orthogonal(gain: float = 1.0) -> Law:
    """A :class:`Law` of Haar (semi-)orthogonal matrices times ``gain``.

    Examples
    --------
    >>> orthogonal().distribution
    'orthogonal'
    """
    gain = v.positive_float("gain", gain)
    return Law("orthogonal", lambda fan_in, fan_out: gain, f"orthogonal({gain:g})")


def weight_normalized(rows: RowLaw = "gaussian", *, gain: float | FanRule | None = None,
                      gamma: float = 2.0) -> Law:
    """The effective matrix ``k W_hat`` of a weight-normalized layer, as a :class:`Law`.

    ``W_hat`` has the normalized rows of ``rows`` (:data:`LAWS`; ``'sphere'`` and
    ``'gaussian'`` give the same unit rows, ``'orthogonal'`` the rows of a Haar matrix).
    ``gain``: None for the proposed ``sqrt(gamma fan_in / fan_out)`` (:func:`proposed_gain`),
    a number (1.0 is traditional weight normalization) or a rule ``gain(fan_in, fan_out)``.
    Passed to :class:`eit.sample.layers.Dense` or :func:`eit.sample.mlps.relu_mlp`, the
    reported weight gradient is with respect to the effective matrix.

    References
    ----------
    Arpit & Bengio (2019), eqs. (18)-(19) and (30); Arpit, Campos & Bengio (2019), eq. (2).

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> w = weight_normalized("sphere")(1, 8, 32, generator(0))
    >>> bool(torch.allclose(w.norm(dim=-1), torch.tensor(2 * 2**0.5, dtype=w.dtype)))
    True
    """
    if rows not in LAWS:
        raise ValueError(f"rows must be one of {LAWS}, got {rows!r}")
    gamma = v.positive_float("gamma", gamma)
    if gain is None:
        rule: FanRule = lambda fan_in, fan_out: proposed_gain(fan_in, fan_out, gamma)  # noqa: E731
        label = f"proposed({gamma:g})"
    elif callable(gain):
        rule, label = gain, "rule"
    else:
        k = v.positive_float("gain", gain)
        rule, label = (lambda fan_in, fan_out: k), f"{k:g}"  # noqa: E731
    return Law("weight_normalized", rule, f"weight_normalized({rows}, gain {label})", rows=rows)


# --------------------------------------------------------------------------------- biases

@dataclass(frozen=True, eq=False)
class BiasLaw:
    """Biases i.i.d. N(0, variance): ``bias(n_nets, width, gen) -> (n_nets, width)``.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> gaussian_bias(0.5)(2, 3, generator(0)).shape
    torch.Size([2, 3])
    """

    variance: float

    def __call__(self, n_nets: int, width: int, gen: torch.Generator) -> torch.Tensor:
        n_nets, width = v.positive_int("n_nets", n_nets), v.positive_int("width", width)
        return math.sqrt(self.variance) * standard_normal(n_nets, width, gen=gen)

    @property
    def fourth_moment(self) -> float:
        """E[b^4] = 3 variance^2 (Gaussian)."""
        return 3.0 * self.variance**2


def gaussian_bias(variance: float) -> BiasLaw:
    """Biases i.i.d. N(0, variance) (Hanin & Rolnick 2018, eq. 3).

    Examples
    --------
    >>> gaussian_bias(0.1).variance
    0.1
    """
    return BiasLaw(v.positive_float("variance", variance))


def check_initializer(name: str, init, n_nets: int, fan_out: int, fan_in: int,
                      gen: torch.Generator) -> torch.Tensor:
    """Call an initializer and check the shape, dtype and finiteness of what it returns.

    Raises
    ------
    eit.core.validate.AllocationTooLarge
        If the stack would not fit in memory (checked before calling ``init``).
    TypeError
        If ``init`` is not callable or returns no floating-point tensor.
    ValueError
        If the result has the wrong shape or is not finite.

    Examples
    --------
    >>> from eit.core.seeds import generator
    >>> check_initializer("init", he(), 1, 2, 3, generator(0)).shape
    torch.Size([1, 2, 3])
    """
    if not callable(init):
        raise TypeError(f"{name} must be callable (an Initializer), got {type(init).__name__}")
    n_nets, fan_out, fan_in = _shape(n_nets, fan_out, fan_in)
    v.generator("gen", gen, optional=False)
    _guard((n_nets, fan_out, fan_in))
    w = init(n_nets, fan_out, fan_in, gen)
    if not isinstance(w, torch.Tensor) or not torch.is_floating_point(w):
        raise TypeError(f"{name} must return a floating-point torch.Tensor, got "
                        f"{type(w).__name__}")
    if tuple(w.shape) != (n_nets, fan_out, fan_in):
        raise ValueError(f"{name} must return shape (n_nets, fan_out, fan_in) = "
                         f"{(n_nets, fan_out, fan_in)}, got {tuple(w.shape)}")
    if not bool(torch.isfinite(w).all()):
        raise ValueError(f"{name} returned inf or NaN weights")
    return w.to(device=device(), dtype=DTYPE)


__all__ = ["CHUNK", "chunks", "DIRECTIONS", "Direction", "Distribution", "FanRule", "Initializer",
           "LAWS", "Law", "BiasLaw", "Mode", "PARALLEL_MIN", "RowLaw", "centered_exponential",
           "check_initializer", "directions", "gaussian", "gaussian_bias", "gaussian_fixed",
           "gaussian_variance", "glorot", "haar_orthogonal", "he", "lecun", "named",
           "normalize_rows", "orthogonal", "proposed_gain", "rows", "scheme_variance",
           "sphere_rows", "standard_normal", "standard_uniform", "truncated_normal",
           "truncated_normal_kurtosis", "truncated_normal_variance", "uniform",
           "weight_normalized"]
