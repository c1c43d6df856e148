"""bench: torch-tpu's measuring instrument (issue 3).

Every performance figure of the project comes from here: the tpu device and its alternatives run on
the same machine in the same run, results are reported as ratios, and the machine's own limits
(memory bandwidth, FMA peak, BLAS) are measured alongside so each figure can be read as a fraction
of what the hardware allows. Entry point: ``python -m bench.run --quick|--full``.
"""
