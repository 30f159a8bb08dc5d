"""pipeplan from Python: memory-aware partitioning of DNN training across GPUs.

The functions mirror the command line's nouns and run the same Rust code:

>>> import pipeplan
>>> inst = pipeplan.generate("resnet50", gpus=4, memory="8GiB", bandwidth="12GB/s")
>>> sol = pipeplan.solve(inst, "madpipe", time_limit=10)
>>> sol.evaluated["period_ms"]                      # the neutral evaluator's figure
>>> frame = pipeplan.compare([inst], ["pipedream", "madpipe"])   # a pandas DataFrame

Every figure an algorithm reports about its own plan is under ``claimed``; every figure of the
neutral evaluator under ``evaluated`` (see ``docs/evaluator.md`` of the repository). Solves run
without the GIL; Ctrl-C stops them and raises ``KeyboardInterrupt``. Errors are the exceptions of
:mod:`pipeplan._errors`, with the CLI's messages.
"""

from __future__ import annotations

from ._chart import Chart
from ._common import InstanceLike, PathLike, TimeLimit  # the types of the signatures
from ._errors import (
    InfeasibleError,
    InstanceError,
    PipeplanError,
    SolverError,
    TimeLimitError,
    UnsupportedError,
)
from ._evaluate import evaluate, explain, plan_chart, trace
from ._export import export
from ._instances import generate, import_profile, models
from ._measured import accuracy, accuracy_chart, calibrate
from ._native import Instance
from ._solution import Solution
from ._solve import algorithms, compare, settings, solve

__all__ = [
    "Instance",
    "Solution",
    "algorithms",
    "settings",
    "models",
    "generate",
    "import_profile",
    "solve",
    "evaluate",
    "compare",
    "accuracy",
    "plan_chart",
    "trace",
    "explain",
    "export",
    "accuracy_chart",
    "Chart",
    "calibrate",
    "PipeplanError",
    "InstanceError",
    "UnsupportedError",
    "InfeasibleError",
    "TimeLimitError",
    "SolverError",
]

# The public classes live in private modules; they are known (in reprs, pickles and
# documentation) by the package's name.
for _public in (Chart, Solution):
    _public.__module__ = __name__
del _public
