"""Winograd convolution for 3x3, stride-1 convolutions: the numpy twin of native/src/winograd.c.

The idea, in one dimension. Two outputs of a 3-tap correlation over 4 inputs d0..d3,

    y0 = g0 d0 + g1 d1 + g2 d2          (6 multiplications done directly)
    y1 = g0 d1 + g1 d2 + g2 d3

can be computed with 4 multiplications (Winograd's F(2, 3)):

    u = G g        (4 numbers from the filter; computed once per filter)
    v = B^T d      (4 numbers from the input; only additions)
    y = A^T (u * v)   (* = elementwise: the 4 multiplications)

Where do G, B^T, A^T come from? Correlation is the transpose of polynomial multiplication:
multiply g(x) (degree 2) by h(x) (degree m-1) by *evaluating* both at a = m + 2 points,
multiplying the values, and *interpolating* the product back (Toom-Cook). Transposing that
algorithm gives  A^T = evaluation of degree-(m-1) polynomials (one column per point),
G = evaluation of degree-2 polynomials (one row per point), B^T = (Vandermonde)^-T.
``toom_cook`` below derives them exactly (fractions) from the points; the point "inf" stands
for the leading coefficient. Scaling row i of B^T by s and row i of G by 1/s changes nothing, so
each row of B^T is scaled to small integers with a positive first entry.

In two dimensions the transforms nest: for a 3x3 filter g and an a x a input tile d,

    Y (m x m) = A^T [ (G g G^T) * (B^T d B) ] A

F(4x4, 3x3) (points 0, 1, -1, 2, -2, inf; 6x6 tiles) needs 36 multiplications for 16
outputs instead of 144: 4x fewer. F(2x2, 3x3) (points 0, 1, -1, inf; 4x4 tiles) needs 16
for 4 (2.25x fewer) and loses less precision (its matrices hold only 0, +-1, +-1/2).

With C input and K output channels, the sum over c turns the elementwise products into a^2
independent matrix products, which is where the time goes (the SGEMM):

    U[xi] = (G g[k, c] G^T)[xi]    (a^2, C, K)   -- transform_weight, once per weight
    V[xi] = (B^T d[c, t] B)[xi]    (a^2, C, T)   -- T = tiles over the batch
    M[xi] = V[xi]^T @ U[xi]        (a^2, T, K)
    y     = A^T M[:, t, k] A + bias, each m x m block cropped into the (N, K, Ho, Wo) output

``winograd3x3`` computes exactly this with numpy (readable, not fast); the native kernel does
the same steps with vector transforms and the SGEMM microkernel. The native backend keeps U
between calls until the weight is written (backend/prepared.py).
"""
from fractions import Fraction
from functools import lru_cache
from math import gcd

import numpy as np

__all__ = ["POINTS", "toom_cook", "matrices", "transform_weight", "winograd3x3",
           "choose_tile", "should_use"]

INF = "inf"
#: interpolation points of each tile size m (output block m x m, input tile (m+2) x (m+2))
POINTS = {4: (0, 1, -1, 2, -2, INF), 2: (0, 1, -1, INF)}


# ---- the matrices ------------------------------------------------------------------------------

def _eval_row(p, n):
    """Row that evaluates a polynomial with n coefficients at p (at inf: its leading one)."""
    if p == INF:
        return [Fraction(0)] * (n - 1) + [Fraction(1)]
    return [Fraction(p) ** i for i in range(n)]


def _inverse(mat):
    """Exact inverse of a square matrix of Fractions (Gauss-Jordan)."""
    n = len(mat)
    aug = [row[:] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(mat)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        lead = aug[col][col]
        aug[col] = [v / lead for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [v - f * c for v, c in zip(aug[r], aug[col])]
    return [row[n:] for row in aug]


def toom_cook(m, r, points):
    """(A^T, G, B^T) of Winograd's F(m, r) for the given m + r - 1 points, as lists of
    Fractions: A^T is m x a, G is a x r, B^T is a x a (a = m + r - 1)."""
    a = m + r - 1
    if len(points) != a:
        raise ValueError(f"F({m}, {r}) needs {a} points, got {len(points)}")
    vinv = _inverse([_eval_row(p, a) for p in points])         # interpolation
    bt = [[vinv[j][i] for j in range(a)] for i in range(a)]     # V^-T
    g = [_eval_row(p, r) for p in points]
    at = [[_eval_row(p, m)[i] for p in points] for i in range(m)]
    for i in range(a):  # row i of B^T to smallest integers, first entry positive; G inverse
        lcm = 1
        for v in bt[i]:
            lcm = lcm * v.denominator // gcd(lcm, v.denominator)
        ints = [int(v * lcm) for v in bt[i]]
        div = 0
        for v in ints:
            div = gcd(div, v)
        scale = Fraction(lcm, div)
        if next(v for v in ints if v != 0) < 0:
            scale = -scale
        bt[i] = [v * scale for v in bt[i]]
        g[i] = [v / scale for v in g[i]]
    return at, g, bt


@lru_cache(maxsize=None)
def matrices(tile):
    """(A^T, G, B^T) of F(tile x tile, 3x3) as float64 arrays (tile 4 or 2)."""
    if tile not in POINTS:
        raise ValueError(f"winograd: tile must be 4 or 2, got {tile}")
    at, g, bt = toom_cook(tile, 3, POINTS[tile])
    arrays = tuple(np.array([[float(v) for v in row] for row in mat]) for mat in (at, g, bt))
    for arr in arrays:
        arr.setflags(write=False)
    return arrays


# ---- the selection rule (the same as mte_winograd_tile / mte_winograd_should_use) --------------

def _rule(n, c, k, h, w, pad_h, pad_w, cached):
    ho, wo = h + 2 * pad_h - 2, w + 2 * pad_w - 2
    if min(n, c, k) < 0 or ho < 1 or wo < 1:
        return 0, False
    t4 = n * -(-ho // 4) * -(-wo // 4)                          # F(4,3) tiles in the batch
    t2 = n * -(-ho // 2) * -(-wo // 2)
    enough_channels = c >= 32 and k >= 32                      # else the transforms dominate
    if min(ho, wo) >= 12 and (t4 >= 32 or c * k <= 128 * 128):
        return 4, enough_channels
    return 2, enough_channels and (t2 >= 16 if cached else t2 >= 32 and c * k <= 256 * 256)


def choose_tile(n, c, k, h, w, pad_h=1, pad_w=1, cached=False):
    """The tile the native rule picks for an (n, c, h, w) input to k channels: 4 or 2 (0 when
    the output is empty). cached: U is transformed once and reused, not in every call.

    F(4,3) needs an output of at least 12x12 (on smaller ones its 4x4 blocks overhang too
    much) and enough tiles to amortise reading (cached) or computing (per call) its U, which
    is 2.25x F(2,3)'s; otherwise F(2,3). The measurements are in native/src/winograd_rule.c."""
    return _rule(n, c, k, h, w, pad_h, pad_w, cached)[0]


def should_use(n, c, k, h, w, pad_h=1, pad_w=1, cached=False):
    """Whether Winograd (with choose_tile's tile) is expected to beat im2col + GEMM: at least
    32 input and output channels, and for F(2,3) enough tiles."""
    return _rule(n, c, k, h, w, pad_h, pad_w, cached)[1]


# ---- the convolution ---------------------------------------------------------------------------

def transform_weight(w, tile=4):
    """U[xi, c, k] = (G w[k, c] G^T)[xi] for w (K, C, 3, 3): shape ((tile+2)**2, C, K), in w's
    dtype (the layout of the native _C.winograd_transform_weight)."""
    w = np.asarray(w)
    if w.ndim != 4 or w.shape[2:] != (3, 3):
        raise ValueError(f"winograd: w must have shape (K, C, 3, 3), got {w.shape}")
    _, g, _ = matrices(tile)
    g = g.astype(w.dtype)
    u = np.einsum("pi,kcij,qj->pqck", g, w, g, optimize=True)  # (a, a, C, K)
    a = tile + 2
    return np.ascontiguousarray(u.reshape(a * a, w.shape[1], w.shape[0]))


def _tiles(x, tile, pad_h, pad_w):
    """The (N, C, th, tw, a, a) view of overlapping input tiles (stride tile) of x padded with
    pad_h/pad_w zeros before and as many after as the last tiles reach."""
    n, c, h, w = x.shape
    a = tile + 2
    ho, wo = h + 2 * pad_h - 2, w + 2 * pad_w - 2
    th, tw = -(-ho // tile), -(-wo // tile)
    xp = np.zeros((n, c, th * tile + 2, tw * tile + 2), x.dtype)  # >= H + 2 pad_h rows
    xp[:, :, pad_h:pad_h + h, pad_w:pad_w + w] = x
    s = xp.strides
    view = np.lib.stride_tricks.as_strided(
        xp, (n, c, th, tw, a, a), (s[0], s[1], s[2] * tile, s[3] * tile, s[2], s[3]),
        writeable=False)
    return view, ho, wo


def winograd3x3(x, w, bias=None, pad_h=1, pad_w=1, U=None, tile=0):
    """y = conv2d(x, w, bias, stride 1, padding (pad_h, pad_w)) by Winograd F(tile x tile, 3x3)
    for x (N, C, H, W), w (K, C, 3, 3) (or U from transform_weight, with w None), bias (K,) or
    None. tile 4, 2, or 0 = choose_tile's pick. Computed in x's dtype; returns (N, K, Ho, Wo)
    with Ho = H + 2 pad_h - 2, Wo = W + 2 pad_w - 2."""
    x = np.asarray(x)
    n, c, h, wd = x.shape
    if U is not None:
        U = np.asarray(U)
        tile = {36: 4, 16: 2}[U.shape[0]]
    elif tile == 0:
        tile = choose_tile(n, c, w.shape[0], h, wd, pad_h, pad_w) or 4
    at, _, bt = (mat.astype(x.dtype) for mat in matrices(tile))
    if U is None:
        U = transform_weight(np.asarray(w, x.dtype), tile)
    a = tile + 2
    k = U.shape[2]
    d, ho, wo = _tiles(x, tile, pad_h, pad_w)                  # (N, C, th, tw, a, a)
    th, tw = d.shape[2], d.shape[3]
    v = np.einsum("pi,nctuij,qj->pqcntu", bt, d, bt, optimize=True)  # B^T d B
    v = v.reshape(a * a, c, n * th * tw)                       # (a^2, C, T)
    m = np.matmul(v.transpose(0, 2, 1), U)                     # (a^2, T, K): the GEMMs
    m = m.reshape(a, a, n, th, tw, k)
    y = np.einsum("ip,pqntuk,jq->nktiuj", at, m, at, optimize=True)  # A^T M A
    y = y.reshape(n, k, th * tile, tw * tile)[:, :, :ho, :wo]
    if bias is not None:
        y = y + np.asarray(bias, x.dtype).reshape(1, k, 1, 1)
    return np.ascontiguousarray(y)
