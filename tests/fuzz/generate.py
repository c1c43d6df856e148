"""The program generator: draws a chain of 1-6 op calls, running each on CPU as it is drawn, so
every later choice sees real shapes and dtypes, and the CPU run is the reference.

`generate(seed, index)` depends only on its arguments: program `index` of a run with `seed` can be
drawn again on its own (the worker and the reproducers rely on it).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch

from . import values as V
from .program import Input, Program, Ref, Step, View, _refs, make_input, run_step


class StopGen(Exception):
    """The CPU raised at the step just drawn: the program ends there."""


class Redraw(Exception):
    """The step just drawn writes where PyTorch leaves the result undefined: draw another."""


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: the elements fill a range of memory once each."""
    dims = sorted((st, sz) for st, sz in zip(t.stride(), t.shape, strict=True) if sz != 1)
    expect = 1
    for st, sz in dims:
        if st != expect:
            return False
        expect *= sz
    return True


# Elementwise ops (TensorIterator on CPU) that check that what they write does not overlap
# itself or partially overlap an input, and raise when it does (fill_ and zero_ write one value,
# so overlap is harmless). Other ops (reductions, matmuls, index ops, tril, masked_fill_,
# threshold) do not check, and an overlapping or aliased out= leaves their result undefined
# (CPU's tril corrupts its heap), so the fuzzer never draws one.
OVERLAP_CHECKED_OPS = frozenset(
    "neg sign sqrt rsqrt reciprocal exp exp2 expm1 log log2 log10 log1p sin cos tan tanh sinh "
    "cosh asin acos atan erf erfc erfinv sigmoid floor ceil round trunc frac bitwise_not abs logit "
    "nan_to_num logical_not isneginf isposinf relu silu mish hardsigmoid hardswish gelu elu "
    "leaky_relu hardtanh softplus add sub mul div atan2 copysign pow fmod remainder "
    "bitwise_and bitwise_or bitwise_xor logical_and logical_or logical_xor eq ne lt le gt ge "
    "floor_divide clamp_min clamp_max maximum minimum lerp addcmul addcdiv where clamp "
    "copy_ fill_ zero_".split()
)

# Ops whose out= may not overlap itself or any input at all: their kernels check every pair
# before they resize or write (index_select_out_cpu_, masked_select_out_cpu), so every such
# write raises, and stays in.
OVERLAP_REFUSED_OPS = frozenset(["index_select", "masked_select"])


def undefined_write(target: torch.Tensor, others: list[torch.Tensor], op: str) -> bool:
    """Whether writing into `target` while reading `others` is undefined in PyTorch: the target
    overlaps itself in a way CPU does not detect (as_strided) or in any way for an op that does
    not check, or it shares memory with an input in a way CPU cannot check (either is not dense,
    or the op does not check). The cases CPU detects raise, and stay in."""
    if op in OVERLAP_REFUSED_OPS:
        return False
    if target.numel():
        overlap = torch._debug_has_internal_overlap(target)
        if overlap == 2 or (overlap == 1 and op not in OVERLAP_CHECKED_OPS):
            return True
    key = target.untyped_storage()._cdata
    for o in others:
        if o.untyped_storage()._cdata != key:
            continue
        if op not in OVERLAP_CHECKED_OPS:
            return True  # also when empty: resizing the out= would resize an input
        if o.numel() == 0 or target.numel() == 0:
            continue
        same = (
            o.data_ptr() == target.data_ptr()
            and o.shape == target.shape
            and o.stride() == target.stride()
        )
        if not same and not (_dense(o) and _dense(target)):
            return True
    return False


class Gen:
    """The state of one program being drawn: its inputs and steps so far, and the CPU values."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.inputs: list[Input] = []
        self.steps: list[Step] = []
        self.values: dict[str, Any] = {}
        self.bases: dict[str, torch.Tensor] = {}
        self.on_dev: set[str] = set()
        self.results: list[str] = []  # tensor-valued results, newest last
        self.error: tuple[int, BaseException] | None = None

    # -- values -----------------------------------------------------------------------------

    def t(self, ref: Any) -> torch.Tensor:
        """The CPU value of a reference."""
        v = self.values[ref.name]
        return v if ref.index is None else v[ref.index]

    def new_input(
        self,
        shape: tuple[int, ...],
        dtype: torch.dtype,
        *,
        data: torch.Tensor | None = None,
        views: bool = True,
        on_cpu: bool = False,
        zeros: bool = False,
    ) -> Ref:
        """A new input of `shape` and `dtype` (values drawn for it, or `data`), through a view
        recipe when `views`."""
        rng = self.rng
        vs: tuple[View, ...] = ()
        if data is not None or on_cpu or not views:
            base_shape = shape
        else:
            base_shape, vs = V.view_recipe(rng, shape)
            vs += V.math_bits(rng, dtype)
        if data is None:
            data = (
                torch.zeros(base_shape, dtype=dtype) if zeros else V.values(rng, base_shape, dtype)
            )
        elif vs:
            raise ValueError("data with views")
        name = f"a{len(self.inputs)}"
        inp = Input(name, data.contiguous(), vs, on_cpu)
        self.inputs.append(inp)
        self.bases[name], self.values[name] = make_input(inp, "cpu")
        if not on_cpu:
            self.on_dev.add(name)
        return Ref(name)

    def fresh(self, pred: Callable[[torch.Tensor], bool] | None = None) -> Ref:
        """A new input of a random shape and dtype that satisfies `pred` (tries a few draws)."""
        for _ in range(20):
            shape, dtype = V.pick_shape(self.rng), V.pick_dtype(self.rng)
            probe = torch.empty(shape, dtype=dtype)
            if pred is None or pred(probe):
                return self.new_input(shape, dtype)
        shape, dtype = (3, 4), torch.float32
        return self.new_input(shape, dtype)

    def tensor(self, pred: Callable[[torch.Tensor], bool] | None = None) -> Ref:
        """A device tensor to operate on: most often the newest result (a chain), else an
        earlier value, else a new input."""
        rng = self.rng
        r = rng.random()
        cands: list[str] = []
        if r < 0.8:
            names = self.results[::-1] if r < 0.6 else self.results + sorted(self.on_dev)
            for n in names:
                v = self.values.get(n)
                if isinstance(v, torch.Tensor) and n in self.on_dev and (pred is None or pred(v)):
                    cands.append(n)
            if cands:
                return _split_ref(cands[0] if r < 0.6 else rng.choice(cands))
        return self.fresh(pred)

    def shaped(self, shape: tuple[int, ...], dtype: torch.dtype | None = None) -> Ref:
        """A device tensor of exactly `shape`: an existing one when there is one, else new."""
        if self.rng.random() < 0.3:
            for n in self.results[::-1]:
                v = self.values.get(n)
                if (
                    isinstance(v, torch.Tensor)
                    and n in self.on_dev
                    and tuple(v.shape) == shape
                    and (dtype is None or v.dtype == dtype)
                ):
                    return _split_ref(n)
        return self.new_input(shape, dtype or V.pick_dtype(self.rng))

    def broadcast_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts with `shape` (sometimes one that does not)."""
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            return shape
        if r < 0.65:
            return tuple(1 if rng.random() < 0.5 else s for s in shape)
        if r < 0.8:
            return shape[rng.randint(0, len(shape)) :]
        if r < 0.88:
            return ()
        if r < 0.93:
            return (rng.choice([1, 2]),) + shape
        if shape:  # incompatible
            d = rng.randrange(len(shape))
            s = list(shape)
            s[d] = s[d] + rng.choice([1, 2])
            return tuple(s)
        return (2,)

    def py_scalar(self, like: torch.dtype | None = None) -> bool | int | float | complex:
        rng = self.rng
        kind = rng.choices(["int", "float", "bool", "complex", "like"], [25, 35, 8, 4, 28])[0]
        if kind == "like" and like is not None:
            kind = (
                "bool"
                if like == torch.bool
                else "complex"
                if like.is_complex
                else "float"
                if like.is_floating_point
                else "int"
            )
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "int" or kind == "like":
            return rng.choice([0, 1, 2, 3, -1, -2, 5, 7, 100, -128, 255, 1000])
        if kind == "complex":
            return complex(rng.choice([0.5, -1.0, 2.0]), rng.choice([0.0, 1.5, -0.25]))
        return rng.choice(
            [0.5, -1.5, 2.0, 0.0, -0.0, 1e-3, 3.25, -7.0, 1e4, 65536.0, float("nan"), float("inf")]
        )

    def operand(
        self, x: torch.Tensor, *, scalars: bool = True, dtype: torch.dtype | None = None
    ) -> Any:
        """A second operand for `x`: a broadcastable device tensor, a 0-d CPU tensor, a 0-d
        device tensor or a Python scalar."""
        rng = self.rng
        r = rng.random()
        if scalars and r < 0.22:
            return self.py_scalar(x.dtype)
        dt = dtype or (x.dtype if rng.random() < 0.6 else V.pick_dtype(rng))
        if scalars and r < 0.34:
            return self.new_input((), dt, on_cpu=True)
        return self.shaped(self.broadcast_shape(tuple(x.shape)), dt)

    def dim(self, x: torch.Tensor, *, allow_none: bool = False) -> int | None:
        rng = self.rng
        nd = x.dim()
        if allow_none and rng.random() < 0.2:
            return None
        if rng.random() < 0.03:
            return nd + rng.choice([0, 1])  # out of range
        if nd == 0:
            return rng.choice([0, -1])
        return rng.randrange(-nd, nd)

    def dims(self, x: torch.Tensor) -> int | tuple[int, ...] | None:
        """A dim argument for reductions: None, one dim, or a tuple (sometimes empty, sometimes
        with a repeat)."""
        rng = self.rng
        nd = x.dim()
        r = rng.random()
        if r < 0.2:
            return None
        if r < 0.6 or nd == 0:
            return self.dim(x)
        k = rng.randint(0, nd)
        ds = rng.sample(range(nd), k)
        ds = [d - nd if rng.random() < 0.3 else d for d in ds]
        if ds and rng.random() < 0.03:
            ds.append(ds[0])  # a repeated dim
        return tuple(ds)

    def out_tensor(
        self, expected: torch.Tensor, *, same_dtype: float = 0.75, strided: bool = True
    ) -> Ref:
        """An out= tensor for a call whose CPU result is `expected`: most often its shape and
        dtype, else another dtype, the empty tensor, a wrong size, or a non-contiguous view;
        or an existing value (the output aliases an input)."""
        rng = self.rng
        shape = tuple(expected.shape)
        r = rng.random()
        if r < 0.06:
            cands = [
                n
                for n in sorted(self.on_dev)
                if isinstance(self.values.get(n), torch.Tensor)
                and tuple(self.values[n].shape) == shape
                and (strided or self.values[n].is_contiguous())
            ]
            if cands:
                return _split_ref(rng.choice(cands))
        r = rng.random()
        if r < same_dtype:
            dtype = expected.dtype
        elif r < same_dtype + (1 - same_dtype) / 2:
            dtype = _wider(expected.dtype, rng)
        else:
            dtype = V.pick_dtype(rng)
        r = rng.random()
        views = False
        if r < 0.08:
            shape = (0,)
        elif r < 0.14:
            shape = V.pick_shape(rng)
        elif r < 0.3:
            views = strided
        return self.new_input(shape, dtype, views=views, zeros=True)

    # -- steps ------------------------------------------------------------------------------

    def emit(
        self,
        op: str,
        fn: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None = None,
        variant: str = "functional",
    ) -> Any:
        """Appends a step and runs it on CPU; raises StopGen when the CPU raises."""
        step = Step(f"r{len(self.steps)}", op, fn, args, tuple((kwargs or {}).items()), variant)
        writes = step.writes()
        if writes:
            # What the call reads besides the tensors it writes (an in-place call's self is
            # both, which is fine).
            read_args = step.args[1:] if variant == "inplace" else step.args
            read_kwargs = tuple(v for k, v in step.kwargs if k != "out")
            refs = list(_refs(read_args)) + list(_refs(read_kwargs))
            reads = [self.t(r) for r in refs]
            reads = [t for t in reads if isinstance(t, torch.Tensor)]
            targets = [self.t(w) for w in writes]
            targets = [t for t in targets if isinstance(t, torch.Tensor)]
            keys = [t.untyped_storage()._cdata for t in targets]
            if len(keys) != len(set(keys)):
                raise Redraw  # two outputs in one memory (min(..., out=(o, o)))
            for wt in targets:
                if undefined_write(wt, reads, op):
                    raise Redraw
        self.steps.append(step)
        try:
            out = run_step(self.values, step)
        except Exception as e:
            self.error = (len(self.steps) - 1, e)
            raise StopGen from e
        dev = any(r.name in self.on_dev for r in step.refs())
        if dev:
            self.on_dev.add(step.name)
        if isinstance(out, torch.Tensor):
            self.results.append(step.name)
        elif isinstance(out, tuple):
            for i, o in enumerate(out):
                if isinstance(o, torch.Tensor) and dev:
                    name = f"{step.name}[{i}]"
                    self.values[name] = o
                    self.on_dev.add(name)
                    self.results.append(name)
        return out


def _wider(dtype: torch.dtype, rng: random.Random) -> torch.dtype:
    """A dtype the result can be cast to without an error: a wider float, complex, or int64."""
    if dtype.is_complex:
        return torch.complex128 if rng.random() < 0.3 else torch.complex64
    if dtype.is_floating_point:
        return rng.choice([d for d in (torch.float32, torch.float64) if d != dtype] or [dtype])
    return rng.choice([torch.int64, torch.float32, torch.float64])


def _split_ref(name: str) -> Ref:
    if name.endswith("]"):
        base, idx = name[:-1].split("[")
        return Ref(base, int(idx))
    return Ref(name)


def generate(seed: int, index: int, *, max_ops: int = 6) -> tuple[Program, Gen]:
    """Program `index` of the run with `seed`, and its generator state (the CPU reference)."""
    from .ops import pick_op

    rng = random.Random(f"{seed}:{index}")
    g = Gen(rng)
    n = rng.choices(range(1, max_ops + 1), [20, 22, 20, 15, 12, 11])[0]
    try:
        drawn = 0
        for _ in range(3 * n):
            if drawn == n:
                break
            try:
                pick_op(rng)(g)
                drawn += 1
            except Redraw:
                pass
    except StopGen:
        pass
    prog = Program(tuple(g.inputs), tuple(g.steps), {"seed": seed, "index": index})
    return prog, g


__all__ = ["Gen", "StopGen", "generate", "View", "_split_ref"]
