"""Solving: the algorithms, their settings, one solve and the side-by-side comparison."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _native
from ._common import (
    InstanceLike,
    PathLike,
    TimeLimit,
    _calibrated,
    _frame,
    _instance,
    _names,
    _settings,
)
from ._native import Instance
from ._solution import Solution


def algorithms(settings: bool = False) -> List[Dict[str, Any]]:
    """Every algorithm: ``name``, ``family``, ``exact``, ``description`` (``pipeplan algorithms
    --json``). ``settings=True``: every algorithm's settings instead (``--params``)."""
    return json.loads(_native.settings() if settings else _native.algorithms())


def settings(algorithm: Optional[str] = None) -> List[Dict[str, Any]]:
    """The settings algorithms take as keywords of :func:`solve` / :func:`compare`:
    ``algorithm``, ``setting``, ``values``, ``default``, ``doc`` (of one algorithm if named)."""
    rows = json.loads(_native.settings())
    return [r for r in rows if algorithm is None or r["algorithm"] == algorithm]


def solve(
    instance: InstanceLike,
    algorithm: str,
    time_limit: TimeLimit = 60,
    seed: int = 0,
    *,
    stages: Optional[int] = None,
    calibration: Optional[PathLike] = None,
    **settings: Any,
) -> Solution:
    """Solves ``instance`` with ``algorithm`` (``pipeplan solve --json``) and judges the plan with
    the neutral evaluator.

    ``time_limit`` bounds solvers that can stop early (seconds, ``"500ms"``, or ``None``);
    ``stages`` fixes the stage count for algorithms that take it; ``calibration`` is a file of
    ``pipeplan calibrate`` (``--calibration FILE``): the algorithm plans, and the evaluator
    judges, with its constants; further keywords are the algorithm's settings (``--set
    KEY=VALUE``; see :func:`settings`). The GIL is released while solving; Ctrl-C stops the
    solve and raises ``KeyboardInterrupt``.

    Raises :class:`InstanceError` (bad input, unknown algorithm or setting),
    :class:`UnsupportedError`, :class:`InfeasibleError`, :class:`TimeLimitError` or
    :class:`SolverError`, with the CLI's messages.
    """
    inst = _calibrated(_instance(instance), calibration)
    data, record = _native.solve(inst, algorithm, time_limit, seed, stages, _settings(settings))
    return Solution(json.loads(data), json.loads(record), inst)


def compare(
    instances: Union[InstanceLike, Sequence[InstanceLike]],
    algos: Union[str, Iterable[str], None] = None,
    *,
    time_limit: TimeLimit = 60,
    seed: int = 0,
    stages: Optional[int] = None,
    solutions: bool = False,
    calibration: Optional[PathLike] = None,
    **settings: Any,
) -> Any:
    """Runs algorithms side by side on instances (``pipeplan compare --csv``).

    Returns a ``pandas.DataFrame`` with one row per (instance, algorithm) pair, in instance-major
    order, and exactly the columns of ``compare --csv`` (``claimed_*`` are the algorithm's
    figures, ``evaluated_*`` the neutral evaluator's; ``result`` is solved, unsupported or failed,
    with the ``reason``). Without pandas installed, a list of dicts with the same keys.
    ``solutions=True`` returns ``(frame, solutions)``: the :class:`Solution` of each row, or
    ``None`` where there is none.

    ``calibration``: a file of ``pipeplan calibrate``; every instance is solved and judged under
    its constants. ``algos`` defaults to every algorithm (those that do not support an instance
    get a row that says why). Unlike the CLI, no exception is raised when no algorithm produced a
    plan: the rows say why. Solves run in parallel without the GIL; Ctrl-C stops them (running
    solves stop as at their time limit, pending ones are not started) and raises
    ``KeyboardInterrupt``.
    """
    if isinstance(instances, (Instance, str, os.PathLike, Mapping)):
        instances = [instances]
    insts = [_calibrated(_instance(i), calibration) for i in instances]
    rows_json, records_json = _native.compare(
        insts, _names(algos), time_limit, seed, stages, _settings(settings)
    )
    records = json.loads(records_json)
    frame = _frame(records)
    if not solutions:
        return frame
    by_name = {}
    for inst in insts:
        by_name.setdefault(inst.name, inst)
    sols: List[Optional[Solution]] = []
    for row, record in zip(json.loads(rows_json), records):
        sol = row.get("solution")
        owner = by_name.get(sol["instance"]) if sol is not None else None
        sols.append(None if sol is None else Solution(sol, record, owner))
    return frame, sols
