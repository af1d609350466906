#!/usr/bin/env python3
"""Generated-program fuzzing (issue 25, parts 3 and 4; docs/testing.md, "Generated-program fuzzing").

Writes random weft programs, deterministically from a seed (Python's random.Random(seed): the same
seed gives the same program on every machine). Two modes:

  gen.py --soundness SEED            one program, printed: sometimes ill-shaped on purpose (operands
                                     of broadcasting ops, products, concat, reshape, gather, select,
                                     views and reductions with random shapes), static sizes, random
                                     inputs. The soundness oracle (tools/fuzz-programs/soundness)
                                     runs it: if `weft check` accepts it, `weft run --cpu` must not
                                     fail with a shape error.
  gen.py --differential SEED         one well-typed program, printed: a `def main` that makes its
                                     inputs with `random` (fixed seeds, values mapped to tame
                                     ranges), computes, and `save`s results named pSEED_oK.npy.
                                     tools/fuzz-programs/differential builds it for the GPU and
                                     compares the executable's files with the interpreter's.
  gen.py --differential SEED --body  the program's body alone (an expression of type `()`), for
                                     putting several programs into one `main` (a batch).
  gen.py --differential SEED --tolerance   the relative tolerance its results are compared with.

Stdlib only.
"""

import argparse
import math
import random
import sys

FLOATS = ["f32", "bf16", "f16"]
INTS = ["i32", "i64", "i16", "i8", "u8"]
SIXTEEN = {"bf16", "f16"}


def is_float(t):
    return t in ("f32", "f64", "bf16", "f16")


def is_int(t):
    return t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")


# --------------------------------------------------------------------------------------------
# Dims: a dim is its text in weft (a literal or a size name, or a product/sum of them) and its
# value at run time.


class Dim:
    def __init__(self, text, val, literal=False):
        self.text = text
        self.val = val
        self.literal = literal  # a literal integer (so `1` broadcasts)

    def __repr__(self):
        return self.text


def lit(v):
    return Dim(str(v), v, literal=True)


def dim_mul(a, b):
    if a.literal and b.literal:
        return lit(a.val * b.val)
    if a.literal and a.val == 1:
        return b
    if b.literal and b.val == 1:
        return a
    return Dim(_atom(a) + " * " + _atom(b), a.val * b.val)


def dim_add(a, b):
    if a.literal and b.literal:
        return lit(a.val + b.val)
    return Dim(a.text + " + " + b.text, a.val + b.val)


def _atom(d):
    return "(" + d.text + ")" if "+" in d.text else d.text


def shape_text(dims):
    return "[" + ", ".join(d.text for d in dims) + "]"


def shape_vals(dims):
    return [d.val for d in dims]


def count(dims):
    n = 1
    for d in dims:
        n *= d.val
    return n


def same_dim(a, b):
    """The checker must treat a and b as equal: the same text (sizes and literals)."""
    return a.text == b.text


def broadcast_dims(a, b):
    """Weft's (NumPy's) broadcasting over dims as the checker sees them: (result, well_shaped)."""
    out = []
    ok = True
    ra, rb = list(a), list(b)
    while len(ra) < len(rb):
        ra.insert(0, None)
    while len(rb) < len(ra):
        rb.insert(0, None)
    for x, y in zip(ra, rb):
        if x is None:
            out.append(y)
        elif y is None:
            out.append(x)
        elif same_dim(x, y):
            out.append(x)
        elif x.literal and x.val == 1:
            out.append(y)
        elif y.literal and y.val == 1:
            out.append(x)
        else:
            ok = False
            out.append(y if x.val == 1 else x)
    return out, ok


# --------------------------------------------------------------------------------------------
# Values: a let-bound name with its element type and dims; for the differential mode also whether
# its value is exactly the same on the GPU (no reduction order, no approximate transcendental), and
# a bound on its magnitude.


class Val:
    def __init__(self, name, dtype, dims, exact=True, bound=1.0):
        self.name = name
        self.dtype = dtype
        self.dims = list(dims)
        self.exact = exact
        self.bound = bound

    @property
    def rank(self):
        return len(self.dims)


def literal_of(dtype, rng, small=False):
    if dtype == "bool":
        return rng.choice(["true", "false"])
    if is_float(dtype):
        v = rng.choice([0.5, 1.0, 2.0, 0.25, -1.0, 3.0, -0.5, 1.5])
        text = repr(v)
        return "(" + text + ")" if v < 0 else text
    v = rng.choice([1, 2, 3, 5, -1, 7]) if not dtype.startswith("u") else rng.choice([1, 2, 3, 5, 7])
    return "(" + str(v) + ")" if v < 0 else str(v)


# --------------------------------------------------------------------------------------------
# The soundness mode.


class Soundness:
    """One program that may be ill-shaped. Its context is one of:
    - `def f` with annotated parameters (dims literals or size names), called by main with
      concrete inputs (the bug of issue 25: select's broadcasting inside such a def);
    - `def f` without annotations (everything inferred and generalized), called by main;
    - main alone, its values made by `random` with constant shapes."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.lines = []  # the body's `let`s
        self.helpers = []  # top-level helper defs
        self.pool = []
        self.counter = 0

    def fresh(self):
        self.counter += 1
        return "v%d" % self.counter

    def good(self):
        # Most operations get operands that fit (as the checker sees them), so that programs get
        # deep enough to be interesting; the rest get any operands.
        return self.rng.random() < 0.7

    def pick(self, pred=None):
        cands = [v for v in self.pool if pred is None or pred(v)]
        return self.rng.choice(cands) if cands else None

    def let(self, expr, dtype, dims):
        name = self.fresh()
        self.lines.append("let %s = %s in" % (name, expr))
        v = Val(name, dtype, dims)
        self.pool.append(v)
        return v

    def random_dims(self, rank):
        rng = self.rng
        dims = []
        for _ in range(rank):
            if self.sizes and rng.random() < 0.4:
                dims.append(rng.choice(self.sizes))
            else:
                dims.append(lit(rng.choice([1, 1, 2, 3, 4, 4, 5])))
        return dims

    def operand(self, v, like):
        """v, or (sometimes) a weak literal in place of a second operand."""
        return v.name

    # ---- operations: each appends a `let` (or returns None when it has no operands)

    def op_binary(self):
        rng = self.rng
        kind = rng.choice(["arith", "arith", "arith", "cmp", "logic", "minmax"])
        if kind == "logic":
            a = self.pick(lambda v: v.dtype == "bool")
        else:
            a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        if rng.random() < 0.2:
            bname, bdims = literal_of(a.dtype, rng), []
        else:
            if self.good():
                b = self.pick(lambda v: v.dtype == a.dtype and broadcast_dims(a.dims, v.dims)[1])
            elif rng.random() < 0.1:
                b = self.pick()
            else:
                b = self.pick(lambda v: v.dtype == a.dtype)
            if b is None:
                return None
            bname, bdims = b.name, b.dims
        dims, _ = broadcast_dims(a.dims, bdims)
        if kind == "arith":
            op = rng.choice(["+", "-", "*", "/"] if is_float(a.dtype) else ["+", "-", "*", "%"])
            return self.let("%s %s %s" % (a.name, op, bname), a.dtype, dims)
        if kind == "cmp":
            op = rng.choice(["<", ">", "==", "!=", "<=", ">="])
            return self.let("%s %s %s" % (a.name, op, bname), "bool", dims)
        if kind == "logic":
            op = rng.choice(["&&", "||"])
            return self.let("%s %s %s" % (a.name, op, bname), "bool", dims)
        f = rng.choice(["maximum", "minimum"])
        return self.let("%s %s %s" % (f, a.name, bname), a.dtype, dims)

    def op_select(self):
        rng = self.rng
        c = self.pick(lambda v: v.dtype == "bool")
        if c is None:
            return None
        if self.good():
            a = self.pick(lambda v: v.dtype != "bool" and broadcast_dims(c.dims, v.dims)[1])
        else:
            a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        r = rng.random()
        if r < 0.4:
            bname, bdims = literal_of(a.dtype, rng), []
        else:
            if self.good():
                b = self.pick(lambda v: v.dtype == a.dtype and broadcast_dims(broadcast_dims(c.dims, a.dims)[0], v.dims)[1])
            else:
                b = self.pick(lambda v: v.dtype == a.dtype)
            if b is None:
                return None
            bname, bdims = b.name, b.dims
        dims, _ = broadcast_dims(broadcast_dims(c.dims, a.dims)[0], bdims)
        args = [a.name, bname]
        if rng.random() < 0.3:
            args.reverse()
        return self.let("select %s %s %s" % (c.name, args[0], args[1]), a.dtype, dims)

    def op_unary(self):
        rng = self.rng
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        if is_float(a.dtype):
            f = rng.choice(["exp", "tanh", "abs", "sqrt", "sigmoid", "-"])
        else:
            f = rng.choice(["abs", "-"])
        if f == "-":
            return self.let("-%s" % a.name, a.dtype, a.dims)
        return self.let("%s %s" % (f, a.name), a.dtype, a.dims)

    def op_reduce(self):
        rng = self.rng
        a = self.pick(lambda v: v.dtype != "bool" and (v.rank >= 1 or not self.good()))
        if a is None:
            return None
        dims = a.dims[:-1]
        f = rng.choice(["sum", "max", "min", "mean", "argmax", "reduce", "scan"])
        if f == "mean" and not is_float(a.dtype):
            f = "sum"
        if f == "argmax":
            return self.let("argmax %s" % a.name, "i64", dims)
        if f == "reduce":
            return self.let("reduce (fn acc t -> acc + t) %s %s" % (literal_of(a.dtype, rng), a.name), a.dtype, dims)
        if f == "scan":
            return self.let("scan (fn acc t -> maximum acc t) %s %s" % (literal_of(a.dtype, rng), a.name), a.dtype, a.dims)
        return self.let("%s %s" % (f, a.name), a.dtype, dims)

    def op_view(self):
        rng = self.rng
        f = rng.choice(["expand", "transpose", "permute", "reshape", "reshape", "index", "slice", "slice"])
        if f == "expand":
            a = self.pick()
            return self.let("expand %s" % a.name, a.dtype, a.dims + [lit(1)])
        if f == "transpose":
            a = self.pick(lambda v: v.rank >= 2 or not self.good())
            if a is None:
                return None
            dims = a.dims[:-2] + [a.dims[-1], a.dims[-2]] if a.rank >= 2 else a.dims
            return self.let("transpose %s" % a.name, a.dtype, dims)
        if f == "permute":
            a = self.pick(lambda v: v.rank >= 1)
            if a is None:
                return None
            perm = list(range(a.rank))
            rng.shuffle(perm)
            if not self.good():
                r = rng.random()
                if r < 0.3:
                    perm = perm + [a.rank]
                elif r < 0.6 and perm:
                    perm = perm[:-1]
                else:
                    perm = [rng.randrange(a.rank + 1) for _ in perm]
            dims = [a.dims[p] if p < a.rank else lit(1) for p in perm]
            return self.let("permute [%s] %s" % (", ".join(map(str, perm)), a.name), a.dtype, dims)
        if f == "reshape":
            a = self.pick(lambda v: v.rank >= 1)
            if a is None:
                return None
            if self.good():
                r = rng.random()
                if r < 0.4:  # flatten
                    d = a.dims[0]
                    for e in a.dims[1:]:
                        d = dim_mul(d, e)
                    dims = [d]
                elif r < 0.7 and a.rank >= 2:  # merge the last two
                    dims = a.dims[:-2] + [dim_mul(a.dims[-2], a.dims[-1])]
                else:  # unit axes in front
                    dims = [lit(1)] + a.dims
            else:
                dims = self.random_dims(rng.randrange(1, 4))
            return self.let("reshape %s %s" % (shape_text(dims), a.name), a.dtype, dims)
        if f == "index":
            a = self.pick(lambda v: v.rank >= 1)
            if a is None:
                return None
            i = rng.randrange(max(1, a.dims[0].val + (0 if self.good() else 2)))
            return self.let("%s[%d]" % (a.name, i), a.dtype, a.dims[1:])
        # slices: constant bounds (the checker proves 0 <= lo <= hi <= n, or refuses)
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return None
        n = a.dims[0].val
        if self.good():
            lo = rng.randrange(n + 1)
            hi = rng.randrange(lo, n + 1)
        else:
            lo = rng.randrange(n + 2)
            hi = rng.randrange(n + 3)
        if rng.random() < 0.5 and a.rank >= 2:
            n2 = a.dims[1].val
            lo2 = rng.randrange(n2 + 1)
            hi2 = rng.randrange(lo2, n2 + 2)
            return self.let("%s[%d:%d, %d:%d]" % (a.name, lo, hi, lo2, hi2), a.dtype,
                            [lit(max(hi - lo, 0)), lit(max(hi2 - lo2, 0))] + a.dims[2:])
        return self.let("%s[%d:%d]" % (a.name, lo, hi), a.dtype, [lit(max(hi - lo, 0))] + a.dims[1:])

    def op_product(self):
        rng = self.rng
        a = self.pick(lambda v: v.dtype != "bool" and (v.rank >= 2 or not self.good()))
        if a is None:
            return None
        if self.good() and a.rank >= 2:
            b = self.pick(lambda v: v.dtype == a.dtype and v.rank >= 2 and same_dim(v.dims[-2], a.dims[-1])
                          and broadcast_dims(a.dims[:-2], v.dims[:-2])[1])
        else:
            b = self.pick(lambda v: v.dtype == a.dtype or rng.random() < 0.1)
        if b is None:
            return None
        f = rng.choice(["@", "@", "matmul_f32"])
        batch, _ = broadcast_dims(a.dims[:-2], b.dims[:-2])
        m = a.dims[-2] if a.rank >= 2 else lit(1)
        n = b.dims[-1] if b.rank >= 1 else lit(1)
        if f == "@":
            return self.let("%s @ %s" % (a.name, b.name), a.dtype, batch + [m, n])
        return self.let("matmul_f32 %s %s" % (a.name, b.name), "f32", batch + [m, n])

    def op_concat(self):
        rng = self.rng
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return None
        if self.good():
            b = self.pick(lambda v: v.dtype == a.dtype and v.rank == a.rank
                          and all(same_dim(x, y) for x, y in zip(v.dims[:-1], a.dims[:-1])))
        else:
            b = self.pick(lambda v: v.dtype == a.dtype)
        if b is None or b.rank < 1:
            return None
        return self.let("concat %s %s" % (a.name, b.name), a.dtype, a.dims[:-1] + [dim_add(a.dims[-1], b.dims[-1])])

    def op_gather(self):
        rng = self.rng
        a = self.pick(lambda v: v.rank >= 1 or not self.good())
        if a is None:
            return None
        rows = a.dims[0].val if a.rank >= 1 else 1
        idx = self.pick(lambda v: v.dtype == "i64" and v.rank == 1) if not self.good() else None
        if idx is None:
            # indices in range: iota [j] % rows (floor modulo)
            j = rng.randrange(1, 5)
            r = self.let("iota [%d] %% %d" % (j, max(rows, 1)), "i64", [lit(j)])
            idx = r
        return self.let("gather %s %s" % (a.name, idx.name), a.dtype, idx.dims[:1] + a.dims[1:])

    def op_cast(self):
        rng = self.rng
        a = self.pick()
        t = rng.choice(["f32", "i32", "bf16", "bool", "i64", "f16"])
        return self.let("cast %s %s" % (t, a.name), t, a.dims)

    def op_map(self):
        rng = self.rng
        if rng.random() < 0.5:
            a = self.pick(lambda v: v.dtype != "bool")
            if a is None:
                return None
            return self.let("map (fn t -> t * %s) %s" % (literal_of(a.dtype, rng), a.name), a.dtype, a.dims)
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        if self.good():
            b = self.pick(lambda v: v.dtype == a.dtype and len(v.dims) == len(a.dims)
                          and all(same_dim(x, y) for x, y in zip(v.dims, a.dims)))
        else:
            b = self.pick(lambda v: v.dtype == a.dtype)
        if b is None:
            return None
        return self.let("map2 (fn s t -> s + t) %s %s" % (a.name, b.name), a.dtype, a.dims)

    def op_make(self):
        rng = self.rng
        dims = self.random_dims(rng.randrange(0, 3))
        f = rng.choice(["zeros", "full", "iota", "literal"])
        if f == "zeros":
            return self.let("(zeros %s : f32%s)" % (shape_text(dims), shape_text(dims)), "f32", dims)
        if f == "full":
            t = rng.choice(["f32", "i32"])
            return self.let("full %s %s" % (shape_text(dims), "1.5" if t == "f32" else "3"), t, dims)
        if f == "iota":
            d = dims[0] if dims else lit(3)
            return self.let("iota [%s]" % d.text, "i64", [d])
        # a tensor literal of existing values (same shapes when well-shaped)
        a = self.pick()
        if self.good():
            b = self.pick(lambda v: v.dtype == a.dtype and len(v.dims) == len(a.dims)
                          and all(same_dim(x, y) for x, y in zip(v.dims, a.dims)))
        else:
            b = self.pick(lambda v: v.dtype == a.dtype)
        if b is None:
            return None
        return self.let("[%s, %s]" % (a.name, b.name), a.dtype, [lit(2)] + a.dims)

    def op_helper(self):
        """An operation through a helper def: unannotated (generalized), or annotated with shape
        variables; then applied to values of this program."""
        rng = self.rng
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        if self.good():
            b = self.pick(lambda v: v.dtype == a.dtype and broadcast_dims(a.dims, v.dims)[1])
        else:
            b = self.pick(lambda v: v.dtype == a.dtype)
        if b is None:
            return None
        name = "h%d" % (len(self.helpers) + 1)
        body = rng.choice(["x + y", "maximum x y", "select (x > y) x y", "x * y - x", "concat x y",
                           "x @ y", "sum x + y", "x + expand (sum y)", "transpose x + y"])
        style = rng.choice(["plain", "plain", "ann"])
        if style == "plain":
            self.helpers.append("def %s x y = %s" % (name, body))
        else:
            sig = rng.choice(["(x: 't[..s]) (y: 't[..s])", "(x: 't[..s, n]) (y: 't[..s, n])",
                              "(x: 't[n, m]) (y: 't[m])", "(x: 't[..b, k]) (y: 't[k])"])
            self.helpers.append("def %s %s = %s" % (name, sig, body))
        # The result shape (as far as the model goes: only the first few bodies are tracked).
        dims, _ = broadcast_dims(a.dims, b.dims)
        return self.let("%s %s %s" % (name, a.name, b.name), a.dtype, dims)

    def op_control(self):
        rng = self.rng
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        if self.good():
            b = self.pick(lambda v: v.dtype == a.dtype and broadcast_dims(a.dims, v.dims)[0] == a.dims
                          and broadcast_dims(a.dims, v.dims)[1])
        else:
            b = self.pick(lambda v: v.dtype == a.dtype)
        if b is None:
            return None
        if rng.random() < 0.5:
            return self.let("loop acc = %s for i < %d do acc + %s" % (a.name, rng.randrange(1, 4), b.name), a.dtype, a.dims)
        c = rng.choice(["true", "false", "1 < 2"])
        return self.let("if %s then %s else %s" % (c, a.name, b.name), a.dtype, a.dims)

    def op_where(self):
        """A helper whose `where` clause the call must discharge (from the caller's sizes)."""
        rng = self.rng
        a = self.pick(lambda v: v.rank == 1 and v.dtype != "bool")
        if a is None:
            return None
        name = "w%d" % (len(self.helpers) + 1)
        d = rng.choice([2, 3])
        form = rng.choice(["split", "slice", "half"])
        if form == "split":
            self.helpers.append("def %s (x: 't[n]) where n %% %d == 0 = reshape [n / %d, %d] x" % (name, d, d, d))
            dims = [Dim("(%s) / %d" % (a.dims[0].text, d), a.dims[0].val // d), lit(d)]
        elif form == "slice":
            self.helpers.append("def %s (x: 't[n]) where n >= %d = x[1:%d]" % (name, d, d))
            dims = [lit(d - 1)]
        else:
            self.helpers.append("def %s (x: 't[2 * n]) = reshape [2, n] x" % name)
            dims = [lit(2), Dim("(%s) / 2" % a.dims[0].text, a.dims[0].val // 2)]
        return self.let("%s %s" % (name, a.name), a.dtype, dims)

    def op_shapefn(self):
        """Functions given to map, reduce, scan and full that return other than a scalar; `if`s and
        `loop`s whose branches or body change the shape; tuples."""
        rng = self.rng
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        lit1 = literal_of(a.dtype, rng)
        form = rng.choice(["map", "reduce", "scan", "full", "if", "loop", "tuple", "index"])
        if form == "map":
            f = rng.choice(["fn t -> [t, t]", "fn t -> t", "fn t -> expand t", "fn t -> t + %s" % a.name])
            return self.let("map (%s) %s" % (f, a.name), a.dtype, a.dims)
        if form == "reduce":
            f = rng.choice(["fn acc t -> acc + t", "fn acc t -> expand acc", "fn acc t -> [acc, t]"])
            return self.let("reduce (%s) %s %s" % (f, lit1, a.name), a.dtype, a.dims[:-1])
        if form == "scan":
            b = self.pick(lambda v: v.dtype == a.dtype)
            return self.let("scan (fn acc t -> acc + t) %s %s" % (b.name if self.rng.random() < 0.3 else lit1, a.name),
                            a.dtype, a.dims)
        if form == "full":
            b = self.pick(lambda v: v.dtype == a.dtype and (v.rank == 0 or not self.good()))
            if b is None:
                return None
            dims = self.random_dims(rng.randrange(0, 3))
            return self.let("full %s %s" % (shape_text(dims), b.name), a.dtype, dims)
        if form == "if":
            b = self.pick(lambda v: v.dtype == a.dtype)
            return self.let("if %s then %s else %s" % (rng.choice(["true", "false"]), a.name, b.name), a.dtype, a.dims)
        if form == "loop":
            body = rng.choice(["concat acc acc", "acc + acc", "expand acc", "acc[0]", "transpose acc"])
            return self.let("loop acc = %s for i < %d do %s" % (a.name, rng.randrange(1, 3), body), a.dtype, a.dims)
        if form == "tuple":
            b = self.pick()
            name = self.fresh()
            self.lines.append("let (%s, %s_b) = (%s, %s) in" % (name, name, a.name, b.name))
            v = Val(name, a.dtype, a.dims)
            self.pool.append(v)
            return v
        # indexing by a computed index (a scalar, or a tensor when ill-shaped)
        if a.rank < 1:
            return None
        i = self.pick(lambda v: v.dtype in ("i64", "i32") and (v.rank == 0 or not self.good()))
        if i is None:
            return None
        return self.let("%s[%s]" % (a.name, i.name), a.dtype, a.dims[1:])

    OPS = [("op_binary", 6), ("op_select", 4), ("op_unary", 2), ("op_reduce", 3), ("op_view", 5),
           ("op_product", 3), ("op_concat", 2), ("op_gather", 2), ("op_cast", 1), ("op_map", 2),
           ("op_make", 2), ("op_helper", 2), ("op_control", 1), ("op_where", 1), ("op_shapefn", 2)]

    def generate(self):
        rng = self.rng
        context = rng.choice(["def", "def", "plain", "main"])
        names = ["n", "m", "k"]
        self.sizes = []
        if context == "def":
            for nm in names[: rng.randrange(0, 4)]:
                self.sizes.append(Dim(nm, rng.choice([1, 2, 3, 4, 4, 5])))
        params = []
        for i in range(rng.randrange(1, 4)):
            t = rng.choice(["f32", "f32", "f32", "bool", "i32", "bf16", "i64"])
            dims = self.random_dims(rng.randrange(0, 4))
            # dims that are arithmetic on sizes: 2 * n, n + 1
            dims = [(Dim("2 * " + d.text, 2 * d.val) if rng.random() < 0.5 else Dim(d.text + " + 1", d.val + 1))
                    if not d.literal and rng.random() < 0.2 else d for d in dims]
            params.append(Val("a%d" % i, t, dims))
        self.pool = list(params)
        for _ in range(rng.randrange(1, 7)):
            total = sum(w for _, w in self.OPS)
            r = rng.uniform(0, total)
            for name, w in self.OPS:
                r -= w
                if r <= 0:
                    break
            getattr(self, name)()
        result = self.pool[-1]
        inputs = []
        for i, p in enumerate(params):
            shape = "[" + ", ".join(str(d.val) for d in p.dims) + "]"
            inputs.append("(random %s %d : %s%s)" % (shape, 1000 + i, p.dtype, shape))
        out = ["-- soundness program, seed %d (tools/fuzz-programs/gen.py --soundness %d)" % (self.seed, self.seed)]
        out += self.helpers
        body = ["  " + line for line in self.lines] + ["  " + result.name]
        if context == "main":
            out.append("def main =")
            for p, inp in zip(params, inputs):
                out.append("  let %s = %s in" % (p.name, inp))
            out += body[:-1]
            out.append("  print %s" % result.name)
        else:
            if context == "def":
                sig = " ".join("(%s: %s%s)" % (p.name, p.dtype, shape_text(p.dims)) for p in params)
            else:
                sig = " ".join(p.name for p in params)
            out.append("def f %s =" % sig)
            out += body
            out.append("def main = print (f %s)" % " ".join(inputs))
        return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# The differential mode: well-typed programs only, shapes constant, values tame.


class Differential:
    # Sizes: some that tiles and vector widths divide, some that nothing divides, rows longer than
    # a block (1024, 3000) and unit axes.
    ROWS = [1, 3, 7, 8, 32, 100, 128, 257]
    COLS = [1, 2, 5, 8, 16, 33, 64, 100, 256, 1000, 1024, 3000]

    def __init__(self, seed):
        self.rng = random.Random(seed * 7919 + 17)
        self.seed = seed
        self.lines = []
        self.pool = []
        self.counter = 0
        self.outputs = 0
        self.sixteen = False
        self.rseed = seed * 100

    def fresh(self):
        self.counter += 1
        return "p%d_%d" % (self.seed, self.counter)

    def let(self, expr, dtype, dims, exact, bound):
        name = self.fresh()
        self.lines.append("let %s = %s in" % (name, expr))
        v = Val(name, dtype, dims, exact, bound)
        if dtype in SIXTEEN:
            self.sixteen = True
        self.pool.append(v)
        return v

    def pick(self, pred=None):
        cands = [v for v in self.pool if pred is None or pred(v)]
        return self.rng.choice(cands) if cands else None

    def input(self, dtype, dims):
        """A `random` tensor mapped to a tame range: floats in [-1, 1), integers in [-8, 8]."""
        self.rseed += 1
        shape = "[" + ", ".join(str(d) for d in dims) + "]"
        r = "(random %s %d : %s%s)" % (shape, self.rseed, dtype, shape)
        dd = [lit(d) for d in dims]
        if is_float(dtype):
            return self.let("%s * 2.0 - 1.0" % r, dtype, dd, True, 1.0)
        if dtype == "bool":
            return self.let(r, dtype, dd, True, 1.0)
        return self.let("%s %% 17 - 8" % r, dtype, dd, True, 8.0)

    def tame(self, v, limit):
        """v scaled by a power of two (exactly) so that its bound is at most `limit`."""
        if not is_float(v.dtype) or v.bound <= limit:
            return v
        s = 2 ** math.ceil(math.log2(v.bound / limit))
        return self.let("%s * %s" % (v.name, repr(1.0 / s)), v.dtype, v.dims, v.exact, v.bound / s)

    def small_int(self, v):
        """An integer v brought to [0, 17) (floor modulo) when its bound is large."""
        if v.bound <= 64:
            return v
        return self.let("%s %% 17" % v.name, v.dtype, v.dims, True, 17.0)

    # ---- operations

    def op_elementwise(self):
        rng = self.rng
        a = self.pick(lambda v: v.dtype != "bool")
        if a is None:
            return None
        cands = [v for v in self.pool if v.dtype == a.dtype and v is not a
                 and (v.dims == a.dims or (len(v.dims) == 1 and a.dims and v.dims[0].val == a.dims[-1].val)
                      or v.rank == 0)]
        if is_float(a.dtype):
            r = rng.random()
            if r < 0.3 or not cands:
                f = rng.choice(["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "abs", "neg",
                                "scale", "square"])
                if f == "exp":
                    a = self.tame(a, 4.0)
                    return self.let("exp %s" % a.name, a.dtype, a.dims, False, math.exp(a.bound))
                if f == "log":
                    return self.let("log (abs %s + 0.5)" % a.name, a.dtype, a.dims, False,
                                    max(math.log(a.bound + 0.5), 0.7))
                if f == "sqrt":
                    return self.let("sqrt (abs %s)" % a.name, a.dtype, a.dims, False, math.sqrt(a.bound) + 1)
                if f == "rsqrt":
                    return self.let("rsqrt (abs %s + 0.25)" % a.name, a.dtype, a.dims, False, 2.0)
                if f in ("tanh", "sigmoid"):
                    return self.let("%s %s" % (f, a.name), a.dtype, a.dims, False, 1.0)
                if f in ("sin", "cos"):
                    a = self.tame(a, 8.0)
                    return self.let("%s %s" % (f, a.name), a.dtype, a.dims, False, 1.0)
                if f == "abs":
                    return self.let("abs %s" % a.name, a.dtype, a.dims, a.exact, a.bound)
                if f == "neg":
                    return self.let("-%s" % a.name, a.dtype, a.dims, a.exact, a.bound)
                if f == "scale":
                    return self.let("%s * 0.5 + 0.25" % a.name, a.dtype, a.dims, a.exact, a.bound * 0.5 + 0.25)
                a = self.tame(a, 16.0)
                return self.let("%s * %s" % (a.name, a.name), a.dtype, a.dims, a.exact, a.bound * a.bound)
            b = rng.choice(cands)
            dims = a.dims if a.rank >= b.rank else b.dims
            op = rng.choice(["+", "-", "*", "/", "maximum", "minimum", "select"])
            a, b = self.tame(a, 64.0), self.tame(b, 64.0)
            exact = a.exact and b.exact
            if op in ("+", "-"):
                return self.let("%s %s %s" % (a.name, op, b.name), a.dtype, dims, exact, a.bound + b.bound)
            if op == "*":
                return self.let("%s * %s" % (a.name, b.name), a.dtype, dims, exact, a.bound * b.bound)
            if op == "/":
                return self.let("%s / (abs %s + 0.5)" % (a.name, b.name), a.dtype, dims, False, a.bound * 2)
            if op == "select":
                # Comparisons only of values that are exactly the interpreter's (else a flip).
                if not exact:
                    return self.let("maximum %s %s" % (a.name, b.name), a.dtype, dims, False, max(a.bound, b.bound))
                cmp = rng.choice(["<", ">", "<=", ">="])
                return self.let("select (%s %s %s) %s (%s * 0.5)" % (a.name, cmp, b.name, b.name, a.name),
                                a.dtype, dims, True, max(a.bound, b.bound))
            return self.let("%s %s %s" % (op, a.name, b.name), a.dtype, dims, exact, max(a.bound, b.bound))
        # integers: exact, wrapping
        if not cands:
            return self.let("abs %s %% 5 + %s" % (a.name, a.name), a.dtype, a.dims, True, a.bound + 5)
        b = rng.choice(cands)
        dims = a.dims if a.rank >= b.rank else b.dims
        op = rng.choice(["+", "-", "*", "/", "%", "maximum", "minimum"])
        a, b = self.small_int(a), self.small_int(b)
        if op in ("maximum", "minimum"):
            return self.let("%s %s %s" % (op, a.name, b.name), a.dtype, dims, True, max(a.bound, b.bound))
        bound = {"+": a.bound + b.bound, "-": a.bound + b.bound, "*": a.bound * b.bound}.get(op, a.bound)
        return self.let("%s %s %s" % (a.name, op, b.name), a.dtype, dims, True, bound)

    def op_reduce(self):
        rng = self.rng
        a = self.pick(lambda v: v.rank >= 1 and v.dtype != "bool")
        if a is None:
            return None
        n = a.dims[-1].val
        f = rng.choice(["sum", "max", "min", "mean", "argmax", "softmax", "reduce", "scan"])
        if is_int(a.dtype):
            a = self.small_int(a)
            if f in ("mean", "softmax"):
                f = "sum"
            if f == "sum":
                return self.let("sum %s" % a.name, a.dtype, a.dims[:-1], True, a.bound * n)
        if f == "argmax":
            if not a.exact:
                f = "max"
            else:
                return self.let("argmax %s" % a.name, "i64", a.dims[:-1], True, float(n))
        if f in ("max", "min"):
            return self.let("%s %s" % (f, a.name), a.dtype, a.dims[:-1], a.exact, a.bound)
        if f == "reduce":
            return self.let("reduce (fn acc t -> maximum acc (abs t)) 0%s %s" % (".0" if is_float(a.dtype) else "", a.name),
                            a.dtype, a.dims[:-1], a.exact, a.bound)
        if f == "scan":
            if is_float(a.dtype):
                a = self.tame(a, 1000.0 / n)
                return self.let("scan (fn acc t -> acc + t) 0.0 %s" % a.name, a.dtype, a.dims, False, a.bound * n)
            return self.let("scan (fn acc t -> acc + t) 0 %s" % a.name, a.dtype, a.dims, True, a.bound * n)
        if f == "sum":
            a = self.tame(a, 1000.0 / n)
            return self.let("sum %s" % a.name, a.dtype, a.dims[:-1], False, a.bound * n)
        if f == "mean":
            return self.let("mean %s" % a.name, a.dtype, a.dims[:-1], False, a.bound)
        # softmax over rows, as nn writes it
        a = self.tame(a, 8.0)
        m = self.let("%s - expand (max %s)" % (a.name, a.name), a.dtype, a.dims, a.exact, 2 * a.bound)
        e = self.let("exp %s" % m.name, a.dtype, a.dims, False, 1.0)
        return self.let("%s / expand (sum %s)" % (e.name, e.name), a.dtype, a.dims, False, 1.0)

    def op_view(self):
        rng = self.rng
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return None
        f = rng.choice(["transpose", "permute", "reshape", "expand", "slice", "index", "concat", "gather"])
        if f == "transpose" and a.rank >= 2:
            return self.let("transpose %s" % a.name, a.dtype, a.dims[:-2] + [a.dims[-1], a.dims[-2]], a.exact, a.bound)
        if f == "permute" and a.rank >= 2:
            perm = list(range(a.rank))
            rng.shuffle(perm)
            return self.let("permute [%s] %s" % (", ".join(map(str, perm)), a.name), a.dtype,
                            [a.dims[p] for p in perm], a.exact, a.bound)
        if f == "reshape":
            if a.rank >= 2 and rng.random() < 0.5:
                dims = a.dims[:-2] + [lit(a.dims[-2].val * a.dims[-1].val)]
            else:
                # split the last axis by a factor of it
                n = a.dims[-1].val
                fs = [d for d in range(2, n) if n % d == 0 and d <= 64]
                if not fs:
                    dims = [lit(1)] + a.dims
                else:
                    d = rng.choice(fs)
                    dims = a.dims[:-1] + [lit(n // d), lit(d)]
            return self.let("reshape %s %s" % (shape_text(dims), a.name), a.dtype, dims, a.exact, a.bound)
        if f == "expand":
            return self.let("expand %s" % a.name, a.dtype, a.dims + [lit(1)], a.exact, a.bound)
        if f == "slice":
            n = a.dims[0].val
            lo = rng.randrange(n)
            hi = rng.randrange(lo + 1, n + 1)
            return self.let("%s[%d:%d]" % (a.name, lo, hi), a.dtype, [lit(hi - lo)] + a.dims[1:], a.exact, a.bound)
        if f == "index" and a.rank >= 2:
            i = rng.randrange(a.dims[0].val)
            return self.let("%s[%d]" % (a.name, i), a.dtype, a.dims[1:], a.exact, a.bound)
        if f == "concat":
            b = self.pick(lambda v: v.dtype == a.dtype and v.rank == a.rank and
                          shape_vals(v.dims[:-1]) == shape_vals(a.dims[:-1]))
            return self.let("concat %s %s" % (a.name, b.name), a.dtype,
                            a.dims[:-1] + [lit(a.dims[-1].val + b.dims[-1].val)], a.exact and b.exact,
                            max(a.bound, b.bound))
        if f == "gather":
            rows = a.dims[0].val
            j = rng.choice([1, 3, 16, 100])
            self.rseed += 1
            idx = "((random [%d] %d : i64[%d]) %% %d)" % (j, self.rseed, j, rows)
            return self.let("gather %s %s" % (a.name, idx), a.dtype, [lit(j)] + a.dims[1:], a.exact, a.bound)
        return self.let("expand %s" % a.name, a.dtype, a.dims + [lit(1)], a.exact, a.bound)

    def op_cast(self):
        rng = self.rng
        a = self.pick()
        if a.dtype == "bool":
            t = rng.choice(["f32", "bf16", "i32"])
            return self.let("cast %s %s" % (t, a.name), t, a.dims, True, 1.0)
        if is_float(a.dtype):
            ts = [t for t in ["f32", "bf16", "f16", "f64"] if t != a.dtype]
            if a.exact:
                ts += ["i32", "i8", "bool"]
            t = rng.choice(ts)
            if t == "f16":
                a = self.tame(a, 1000.0)
            if is_int(t):
                a = self.tame(a, 100.0)
                return self.let("cast %s (%s * 4.0)" % (t, a.name), t, a.dims, True, a.bound * 4)
            if t == "bool":
                return self.let("cast bool %s" % a.name, t, a.dims, True, 1.0)
            return self.let("cast %s %s" % (t, a.name), t, a.dims, a.exact, a.bound)
        a = self.small_int(a)
        t = rng.choice(["f32", "bf16", "f16", "i64", "i32", "i16"])
        return self.let("cast %s %s" % (t, a.name), t, a.dims, True, a.bound)

    def op_product(self):
        """`@` and matmul_f32: f32 (the generic product), bf16/f16 (the stdlib gemm when 128, 256 and
        64 divide m, n and k; the generic product otherwise), integers, a transposed b, batches."""
        rng = self.rng
        kind = rng.choice(["stdlib", "stdlib", "f32", "f32", "int", "batched", "nt"])
        if kind in ("stdlib", "nt"):
            t = rng.choice(["bf16", "bf16", "f16"])
            if rng.random() < 0.6:
                m, n, k = rng.choice([128, 256]), 256, rng.choice([64, 128])
            else:
                m, n, k = rng.choice([1, 8, 100, 128]), rng.choice([8, 64, 200, 256]), rng.choice([16, 64, 100])
            a = self.input(t, [m, k])
            if kind == "nt":
                b = self.input(t, [n, k])
                p = self.let("matmul_f32 %s (transpose %s)" % (a.name, b.name), "f32", [lit(m), lit(n)], False, k)
            else:
                b = self.input(t, [k, n])
                if rng.random() < 0.5:
                    p = self.let("%s @ %s" % (a.name, b.name), t, [lit(m), lit(n)], False, k)
                else:
                    p = self.let("matmul_f32 %s %s" % (a.name, b.name), "f32", [lit(m), lit(n)], False, k)
            # an epilogue, sometimes: a bias and an activation
            if rng.random() < 0.5:
                bias = self.input(p.dtype, [n])
                p = self.let("maximum (%s + %s) 0.0" % (p.name, bias.name), p.dtype, p.dims, False, p.bound + 1)
            return p
        if kind == "f32":
            x = self.pick(lambda v: v.rank == 2 and is_float(v.dtype) and v.dims[-1].val <= 300)
            k = x.dims[-1].val if x else rng.choice([3, 64, 100])
            if x is None or rng.random() < 0.4:
                x = self.input("f32", [rng.choice([1, 7, 64, 100]), k])
            elif x.dtype != "f32":
                x = self.let("cast f32 %s" % x.name, "f32", x.dims, x.exact, x.bound)
            x = self.tame(x, 4.0)
            w = self.input("f32", [k, rng.choice([1, 5, 64, 129])])
            return self.let("%s @ %s" % (x.name, w.name), "f32", [x.dims[0], w.dims[1]], False, x.bound * k)
        if kind == "int":
            m, k, n = rng.choice([3, 64]), rng.choice([5, 32]), rng.choice([7, 64])
            t = rng.choice(["i32", "i64"])
            a = self.input(t, [m, k])
            b = self.input(t, [k, n])
            return self.let("%s @ %s" % (a.name, b.name), t, [lit(m), lit(n)], True, 64.0 * k)
        # batched, with a broadcast batch axis sometimes
        bsz, m, k, n = rng.choice([2, 3]), rng.choice([4, 33]), rng.choice([8, 20]), rng.choice([5, 16])
        a = self.input("f32", [bsz, m, k])
        b = self.input("f32", [rng.choice([1, bsz]), k, n])
        return self.let("%s @ %s" % (a.name, b.name), "f32", [lit(bsz), lit(m), lit(n)], False, k)

    def op_map(self):
        a = self.pick(lambda v: is_float(v.dtype))
        if a is None:
            return None
        a = self.tame(a, 8.0)
        return self.let("map (fn t -> if t > 0.0 then t * t else 0.5 * t) %s" % a.name, a.dtype, a.dims,
                        a.exact, a.bound * a.bound)

    OPS = [("op_elementwise", 8), ("op_reduce", 4), ("op_view", 4), ("op_cast", 2), ("op_product", 2),
           ("op_map", 1)]

    def save(self, v):
        """save v; a value of more than 4096 elements is saved as its last axes' means (sums for
        integers) and its first 512 elements (a slice of a flattening reshape), to keep the
        references small."""
        name = "p%d_o%d.npy" % (self.seed, self.outputs)
        self.outputs += 1
        if count(v.dims) <= 4096 or v.rank == 0:
            self.saves.append('save "%s" %s' % (name, v.name))
            return
        if v.dtype == "bool":
            v = self.let("cast i32 %s" % v.name, "i32", v.dims, True, 1.0)
        red = "mean" if is_float(v.dtype) else "sum"
        expr, dims = v.name, v.dims
        while count(dims) > 4096:
            expr, dims = "(%s %s)" % (red, expr), dims[:-1]
        self.saves.append('save "%s" %s' % (name, expr))
        flat = self.let("reshape [%d] %s" % (count(v.dims), v.name), v.dtype, [lit(count(v.dims))], v.exact, v.bound)
        name2 = "p%d_o%d.npy" % (self.seed, self.outputs)
        self.outputs += 1
        self.saves.append('save "%s" %s[0:512]' % (name2, flat.name))

    def generate(self):
        rng = self.rng
        self.saves = []
        # inputs: one to three tensors of random dtypes and sizes
        for _ in range(rng.randrange(1, 4)):
            t = rng.choice(["f32", "f32", "bf16", "f16", "i32", "i64", "bool", "f32"])
            rank = rng.choice([1, 2, 2, 2, 3])
            if rank == 1:
                dims = [rng.choice(self.COLS)]
            elif rank == 2:
                dims = [rng.choice(self.ROWS), rng.choice(self.COLS)]
            else:
                dims = [rng.choice([2, 3, 4]), rng.choice([1, 5, 8]), rng.choice(self.COLS[:9])]
            while count([lit(d) for d in dims]) > 65536:
                dims[0] = max(1, dims[0] // 2)
            self.input(t, dims)
        for _ in range(rng.randrange(2, 9)):
            total = sum(w for _, w in self.OPS)
            r = rng.uniform(0, total)
            for name, w in self.OPS:
                r -= w
                if r <= 0:
                    break
            getattr(self, name)()
        # the last value, and one or two others (the graph computes only what is saved)
        last = self.pool[-1]
        others = self.pool[:-1]
        rng.shuffle(others)
        self.save(last)
        for v in others[: rng.randrange(0, 3)]:
            self.save(v)
        return self.lines, self.saves

    def body(self):
        lines, saves = self.generate()
        out = list(lines)
        for s in saves[:-1]:
            out.append("let _ = %s in" % s)
        out.append(saves[-1])
        return out

    def tolerance(self):
        return "1e-2" if self.sixteen else "1e-5"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--soundness", type=int, metavar="SEED")
    g.add_argument("--differential", type=int, metavar="SEED")
    p.add_argument("--body", action="store_true", help="the differential program's body alone")
    p.add_argument("--tolerance", action="store_true", help="the differential program's tolerance")
    args = p.parse_args()
    if args.soundness is not None:
        sys.stdout.write(Soundness(args.soundness).generate())
        return
    d = Differential(args.differential)
    body = d.body()
    if args.tolerance:
        print(d.tolerance())
    elif args.body:
        sys.stdout.write("\n".join(body) + "\n")
    else:
        sys.stdout.write(program_text(args.differential, body, d.tolerance()))


def program_text(seed, body, tolerance):
    head = ["-- differential program, seed %d (tools/fuzz-programs/gen.py --differential %d)" % (seed, seed),
            "-- tolerance: %s" % tolerance, "def main ="]
    return "\n".join(head + ["  " + line for line in body]) + "\n"


if __name__ == "__main__":
    main()
