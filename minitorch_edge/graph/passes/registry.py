"""The table of graph passes by name: each pass file registers its function here with
``@register("name")``; passes/__init__.py imports them all and fixes the default order."""

PASSES = {}


def register(name):
    """Decorator: make a function Graph -> Graph the pass called `name`."""
    def add(fn):
        PASSES[name] = fn
        return fn
    return add
