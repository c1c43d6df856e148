"""A differential fuzzer: random programs over the ops torch_tpu runs natively, run on CPU and on
tpu in each eager mode, compared, and every failure shrunk to a standalone reproducer.

Run it:

    make fuzz                                 # FUZZ_SECONDS (420), FUZZ_SEED (20), FUZZ_JOBS (1)
    python -m tests.fuzz --seconds N --seed S --modes debug,strict,fused [--jobs J] [--json F]
    python -m tests.fuzz --seed S --program I # check program I alone, print its reproducer

It exits 1 when it finds a difference that known.py does not list. tests/test_fuzz.py runs a
fixed-seed run of 2,400 programs (in the three modes) in `make test`.

Speed (one core of the 2-core test machine, AMD EPYC Zen 4, seed 20): about 1,000 programs a
second through all three modes; per mode, counting its tpu runs and comparisons plus a third of
the drawing and CPU runs, about 3,100 (debug), 3,700 (strict) and 2,500 (fused) programs a second.
The default budget of 420 s draws about 390,000 programs in each mode there; a slower or loaded
machine draws fewer.

The pieces:

- program.py: a program as data (inputs with values, dtype and views; a chain of op calls),
  executed on any device and rendered as a script.
- values.py, generate.py, ops.py: seeded drawing of inputs (shapes with 0- and 1-sized
  dimensions and 0-d; transposes, step slices with offsets, expands, overlapping as_strided,
  flips, channels_last, conjugate and negative views; every computable dtype; CPU 0-d tensors and
  Python scalars) and of 1-6 op calls (functional, in-place and out= variants, out= of wrong sizes
  and dtypes, out= overlapping an input for the ops whose CPU kernels refuse that; in-place ops
  through conjugate and negative views; batch/instance norm and pooling on every layout; unknown
  gelu approximations and uint8 masks), each run on CPU as it is drawn, so the draw sees real
  shapes and the CPU run is the reference.
- check.py: the comparison (errors, dtypes, shapes, strides, values; its docstring has the
  rules), with a local oracle that tells rounding propagated from earlier steps apart from a
  wrong op.
- shrink.py: shrinking to a minimal program, and reproducers.
- known.py: ALLOWED (deliberate differences, with reasons) and OPEN_ISSUES (reported bugs).
- runner.py, worker.py, __main__.py, report.py: the loop, grouping by signature (op, variant,
  kind of difference, dtype class, empty or not), worker processes that survive a crash.
"""
