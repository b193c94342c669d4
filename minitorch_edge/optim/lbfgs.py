"""L-BFGS: a quasi-Newton method that builds an approximate inverse Hessian from the last few
steps ``s = x_{k+1} - x_k`` and gradient changes ``y = g_{k+1} - g_k``.

All parameters are treated as one flat vector. Each call of ``step(closure)`` runs up to
``max_iter`` iterations:

1. direction ``d = -H g`` by the two-loop recursion over the stored (s, y) pairs, with
   ``H_0 = (y.s / y.y) I`` (the first iteration uses ``d = -g``);
2. a step ``t`` along d: fixed (``lr``; the very first one is ``min(1, 1/|g|_1) lr``), or found by
   a line search satisfying the strong Wolfe conditions (``line_search_fn="strong_wolfe"``:
   bracketing, then zooming with cubic interpolation);
3. stop when the gradient is tiny (tolerance_grad), the step or the loss change is tiny
   (tolerance_change), or max_iter / max_eval is reached.

This follows PyTorch's algorithm step for step (itself after minFunc), and keeps the scalars
that PyTorch keeps as 0-d tensors as numpy scalars of the parameters' dtype, so results match.
Only one parameter group is supported.
"""
import numpy as np

from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor
from .optimizer import Optimizer, _scalar

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clamped to
    ``bounds`` (default: the interval between x1 and x2); the midpoint if the cubic has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Find t with f(x + t d) <= f + c1 t gtd (sufficient decrease) and |g(x + t d).d| <=
    -c2 gtd (curvature). Returns (f_new, g_new, t, number of evaluations)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    # phase 1: grow t until the minimum is bracketed
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # extrapolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:              # reached the evaluation budget
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # phase 2: zoom into the bracket until a point satisfies the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # keep t away from the bracket's ends (a safeguard against slow progress)
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _wrap(v):
    """State value -> what state_dict shows (numpy arrays and numpy scalars become Tensors)."""
    if isinstance(v, (np.ndarray, np.generic)):
        return Tensor._make(np.asarray(v))
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


def _unwrap(v):
    """The inverse of _wrap: Tensors back to arrays (0-d ones to numpy scalars)."""
    if isinstance(v, Tensor):
        return v._data[()] if v._data.ndim == 0 else v._data
    if isinstance(v, (list, tuple)):
        return [_unwrap(x) for x in v]
    return v


class LBFGS(Optimizer):
    """L-BFGS. Args: params, lr (1), max_iter (20: iterations per ``step``), max_eval
    (default max_iter * 5 // 4: closure evaluations per step), tolerance_grad (1e-7),
    tolerance_change (1e-9), history_size (100), line_search_fn (None or "strong_wolfe").

    ``step(closure)`` needs the closure (it re-evaluates the loss many times); it returns the
    loss of the first evaluation. Memory: about ``history_size * 2`` copies of the parameters."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if _scalar(lr) < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ---- the parameters as one flat vector ------------------------------------------------------
    def _gather_flat_grad(self):
        return np.concatenate([p.grad._data.reshape(-1) if p.grad is not None
                               else np.zeros(p._data.size, p._data.dtype)
                               for p in self._params])

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            n = p._data.size
            p._data += step_size * update[offset:offset + n].reshape(p._data.shape)
            self._bump(p)
            offset += n

    def _set_param(self, params_data):
        for p, data in zip(self._params, params_data):
            np.copyto(p._data, data)
            self._bump(p)

    def _directional_evaluate(self, closure, x, t, d):
        """Loss and flat gradient at x + t d; the parameters are put back to x afterwards."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure=None):
        """Run up to max_iter L-BFGS iterations; ``closure`` re-evaluates the model (zeroing the
        gradients, computing the loss, calling backward) and returns the loss."""
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that re-evaluates the model and "
                               "returns the loss")
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        lr = _scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:      # already optimal
            return orig_loss

        d, t = _unwrap(state.get("d")), _unwrap(state.get("t"))
        old_dirs, old_stps = _unwrap(state.get("old_dirs")), _unwrap(state.get("old_stps"))
        ro, H_diag = _unwrap(state.get("ro")), _unwrap(state.get("H_diag"))
        prev_flat_grad, prev_loss = _unwrap(state.get("prev_flat_grad")), state.get("prev_loss")
        al = _unwrap(state.get("al"))

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # ---- direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:                      # keep the pair only if curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                q = -flat_grad                      # two-loop recursion
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            # ---- step length
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:             # not a descent direction
                break
            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = [p._data.copy() for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            # ---- stopping tests
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"], state["t"] = _wrap(d), _wrap(t)
        state["old_dirs"], state["old_stps"] = _wrap(old_dirs), _wrap(old_stps)
        state["ro"], state["H_diag"] = _wrap(ro), _wrap(H_diag)
        state["prev_flat_grad"], state["prev_loss"] = _wrap(prev_flat_grad), prev_loss
        if al is not None:
            state["al"] = _wrap(al)
        return orig_loss
