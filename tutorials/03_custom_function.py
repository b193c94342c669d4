# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # 03 · A custom autograd Function
#
# The first seed article shows how to give an op your own differentiation rule by subclassing
# `autograd.Function`. The same code runs here with `minitorch_edge` in place of `torch`.
#
# Read alongside: `minitorch_edge/autograd/function.py` (Function.apply, the ctx API).

# %%
import minitorch_edge as torch   # the article's code, unchanged below this line
from minitorch_edge import autograd


class CustomTensorFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        # custom forward logic
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        # custom backward logic
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


# %% [markdown]
# `apply` runs `forward` with grad mode off, records one node whose backward is ours, and
# returns a tensor whose `grad_fn` is that node.

# %%
x = torch.tensor([-2.0, -0.5, 0.5, 3.0], requires_grad=True)
y = CustomTensorFunction.apply(x)
print(y, y.grad_fn)
y.sum().backward()
print("grad:", x.grad)

# %% [markdown]
# ## Check it against the built-in relu and numerically
# gradcheck needs float64 and points away from the kink at 0.

# %%
xd = torch.tensor([-1.3, -0.2, 0.4, 2.0], dtype=torch.float64, requires_grad=True)
print("gradcheck:", autograd.gradcheck(CustomTensorFunction.apply, (xd,)))
x2 = x.detach().requires_grad_()
x2.relu().sum().backward()
print("same as relu:", torch.equal(x.grad, x2.grad))

# %% [markdown]
# ## More of the ctx API
# `ctx.needs_input_grad` tells which inputs want a gradient; non-tensor arguments get `None`
# back; `mark_non_differentiable` marks integer-like outputs.


# %%
class ScaledClamp(autograd.Function):
    @staticmethod
    def forward(ctx, input, scale):
        ctx.scale = scale
        ctx.save_for_backward(input)
        return input.clamp(min=0) * scale

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output * (input > 0).float() * ctx.scale
        return grad_input, None       # no gradient for the Python number `scale`


z = torch.tensor([-1.0, 2.0], requires_grad=True)
ScaledClamp.apply(z, 3.0).sum().backward()
print(z.grad)
