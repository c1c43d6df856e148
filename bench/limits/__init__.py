"""Physical limits of the machine, measured in the same run (see measure.py)."""

from bench.limits.measure import Limit, fp32_peak, measure_limits, merge, value

__all__ = ["Limit", "fp32_peak", "measure_limits", "merge", "value"]
