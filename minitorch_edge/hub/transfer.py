"""Transfer learning helpers: freeze a pretrained backbone, unfreeze it again, and build
parameter groups with their own learning rates (discriminative fine-tuning).

``freeze(module)`` is ``module.requires_grad_(False)`` (the PyTorch idiom works as well) that
also returns the count of parameters it froze; ``trainable_parameters`` is what an optimizer
over "only the head" wants; ``param_groups(model, {"bert": 1e-5, "classifier": 1e-3})`` maps
module-name prefixes to learning rates, in the optimizers' param_groups format (every
optimizer in minitorch_edge.optim takes a list of such dicts). A frozen parameter is left out.
"""
__all__ = ["freeze", "unfreeze", "trainable_parameters", "param_groups"]


def freeze(module):
    """Stop gradients for every parameter of `module` (a model or a submodule). Returns the
    module."""
    return module.requires_grad_(False)


def unfreeze(module):
    """Gradients again for every parameter of `module`. Returns the module."""
    return module.requires_grad_(True)


def trainable_parameters(module):
    """The parameters of `module` that still take gradients."""
    return [p for p in module.parameters() if p.requires_grad]


def param_groups(module, lrs, default_lr=None):
    """Optimizer parameter groups from name prefixes: `lrs` maps a prefix of
    ``named_parameters()`` names ("bert.encoder.layer.1", "classifier") to a learning rate; the
    longest matching prefix wins. Parameters no prefix matches go into a group at `default_lr`
    (or raise ValueError naming them when it is None). Frozen parameters are left out."""
    if not isinstance(lrs, dict) or not lrs:
        raise ValueError(f"param_groups: lrs must be a non-empty dict of name prefix -> lr, got "
                         f"{lrs!r}")
    names = dict(module.named_parameters())
    for prefix in lrs:
        if not any(n == prefix or n.startswith(prefix + ".") for n in names):
            raise ValueError(f"param_groups: no parameter name starts with {prefix!r}; names "
                             f"look like {sorted(names)[:4]}")
    groups, rest = {prefix: [] for prefix in lrs}, []
    for name, p in names.items():
        if not p.requires_grad:
            continue
        matches = [pre for pre in lrs if name == pre or name.startswith(pre + ".")]
        if matches:
            groups[max(matches, key=len)].append(p)
        else:
            rest.append((name, p))
    out = [{"params": params, "lr": lrs[prefix]} for prefix, params in groups.items() if params]
    if rest:
        if default_lr is None:
            raise ValueError(f"param_groups: {len(rest)} trainable parameters match no prefix "
                             f"(e.g. {rest[0][0]!r}); add a prefix or pass default_lr")
        out.append({"params": [p for _, p in rest], "lr": default_lr})
    return out
