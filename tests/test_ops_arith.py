"""Binary arithmetic through the table-driven harness (see harness.py)."""
from harness import Row, broadcast_shapes, make_tests, positive, away_from

BIN = broadcast_shapes(2)

TABLE = [
    Row("add", lambda m, a, b: a + b, shapes=BIN, arity=2, double=True),
    Row("add_alpha", lambda m, a, b: m.add(a, b, alpha=2.5), shapes=BIN, arity=2),
    Row("radd_scalar", lambda m, a: 2.0 + a),
    Row("sub", lambda m, a, b: a - b, shapes=BIN, arity=2),
    Row("rsub_scalar", lambda m, a: 3 - a),
    Row("mul", lambda m, a, b: a * b, shapes=BIN, arity=2, double=True),
    Row("mul_scalar", lambda m, a: a * 1.5),
    Row("div", lambda m, a, b: a / b, shapes=BIN, arity=2, make=positive, double=True),
    Row("rdiv_scalar", lambda m, a: 2 / a, make=positive),
    Row("pow", lambda m, a, b: a ** b, shapes=BIN, arity=2, make=positive, double=True),
    Row("pow_scalar", lambda m, a: a ** 3, double=True),
    Row("rpow_scalar", lambda m, a: 2.0 ** a),
    Row("remainder", lambda m, a, b: a % b, shapes=BIN, arity=2, make=positive,
        gradcheck=False),
    Row("fmod", lambda m, a, b: m.fmod(a, b), shapes=BIN, arity=2, make=positive,
        gradcheck=False),
    Row("floordiv", lambda m, a, b: a // b, shapes=BIN, arity=2, make=positive, grad=False),
    Row("maximum", lambda m, a, b: m.maximum(a, b), shapes=BIN, arity=2),
    Row("minimum", lambda m, a, b: m.minimum(a, b), shapes=BIN, arity=2),
    Row("where", lambda m, a, b: m.where(a > 0, a, b), shapes=BIN, arity=2,
        make=away_from([0.0])),
    Row("lerp", lambda m, a, b: m.lerp(a, b, 0.3), shapes=BIN, arity=2),
    Row("atan2", lambda m, a, b: m.atan2(a, b), shapes=BIN, arity=2, make=positive),
    Row("eq", lambda m, a, b: a == b, shapes=BIN, arity=2, grad=False),
    Row("lt", lambda m, a, b: a < b, shapes=BIN, arity=2, grad=False),
    Row("ge_scalar", lambda m, a: a >= 0.1, grad=False),
    Row("logical_and", lambda m, a, b: m.logical_and(a > 0, b > 0), shapes=BIN, arity=2,
        grad=False),
    Row("isfinite", lambda m, a: m.isfinite(a / a), grad=False),
]

make_tests(TABLE, globals())
