"""A plan judged: the evaluator's figures, its chart, its timeline and what binds it."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Union

from . import _native
from ._chart import Chart
from ._common import InstanceLike, PathLike, _calibrated, _fspath, _instance
from ._native import Instance
from ._solution import Solution


def evaluate(
    plan: Union[Solution, Mapping[str, Any], str, PathLike],
    instance: InstanceLike,
    *,
    calibration: Optional[PathLike] = None,
    plan_from: Optional[str] = None,
    modules: Optional[PathLike] = None,
    repair_layers: bool = False,
) -> Dict[str, Any]:
    """Judges a plan on an instance with the neutral evaluator (``pipeplan evaluate --json``).

    ``plan``: a :class:`Solution` (its plan), a plan dict (``{"stages": ..., "schedule": ...}``),
    a solution dict (its ``plan``) or JSON text of either. With ``plan_from`` (``"galvatron"``,
    ``"pipedream"`` with ``modules``, or ``"sailor"``, as ``--plan-from``), ``plan`` is the path
    of a runtime's plan file, e.g. a measured run's ``plan_config_*.json``; ``repair_layers``
    mends a Sailor plan's mistyped layer index (``--repair-layers``). What the CLI tells on
    standard error (what was mended; a plan made for other GPUs than the instance's) comes as a
    :class:`UserWarning`. ``calibration``: a file of ``pipeplan calibrate`` whose constants the
    evaluator judges with. Raises :class:`InstanceError` for a plan that does not fit the
    instance (the message names the file or field) or a bad calibration file.
    """
    read = _read(plan, instance, calibration, plan_from, modules, repair_layers)
    data, _record = _native.evaluate(read.plan, read.instance)
    return json.loads(data)


def plan_chart(
    plan: Union[Solution, Mapping[str, Any], str, PathLike],
    instance: InstanceLike,
    *,
    periods: int = 3,
    calibration: Optional[PathLike] = None,
    plan_from: Optional[str] = None,
    modules: Optional[PathLike] = None,
    repair_layers: bool = False,
) -> Chart:
    """A plan's chart as ``pipeplan plot`` draws it: the simulator's schedule over ``periods``
    periods (or one iteration) above every GPU's memory (evaluated parts, a solution's claimed
    peak as a tick, the GPU's memory as a red line). Returns a :class:`Chart` (SVG text; Jupyter
    shows it).

    ``plan`` and the keywords are those of :func:`evaluate`: a :class:`Solution`, a plan or
    solution dict or JSON text, or with ``plan_from`` the path of a runtime's plan file. The
    title names the solution's algorithm, else the runtime file's name, else ``plan``. Raises
    as :func:`evaluate` does.
    """
    r = _read(plan, instance, calibration, plan_from, modules, repair_layers)
    return Chart(_native.plan_svg(r.plan, r.instance, r.name, r.claimed, periods))


def trace(
    plan: Union[Solution, Mapping[str, Any], str, PathLike],
    instance: InstanceLike,
    *,
    periods: int = 3,
    calibration: Optional[PathLike] = None,
    plan_from: Optional[str] = None,
    modules: Optional[PathLike] = None,
    repair_layers: bool = False,
) -> Dict[str, Any]:
    """A plan's timeline as ``pipeplan trace`` writes it: the Chrome trace-event document (open
    it in Perfetto or ``chrome://tracing`` after ``json.dump``), one complete event per operation
    and track (``traceEvents``, microseconds), a memory counter per GPU, and in ``otherData`` the
    simulation's end beside the evaluator's iteration or period and peaks. ``periods``: periods
    shown after the warm-up of an asynchronous plan.

    ``plan`` and the keywords are those of :func:`evaluate`; raises as it does.
    """
    r = _read(plan, instance, calibration, plan_from, modules, repair_layers)
    return json.loads(_native.trace(r.plan, r.instance, periods))


def explain(
    plan: Union[Solution, Mapping[str, Any], str, PathLike],
    instance: InstanceLike,
    *,
    calibration: Optional[PathLike] = None,
    plan_from: Optional[str] = None,
    modules: Optional[PathLike] = None,
    repair_layers: bool = False,
) -> Dict[str, Any]:
    """Why a plan's period or iteration and memory are what they are (``pipeplan explain
    --json``): ``why`` (what sets the period or iteration, term by term) and per stage its
    binding constraint (time or memory) and by how much, its loads and what fills its busiest
    GPU, with the findings the CLI prints.

    ``plan`` and the keywords are those of :func:`evaluate`; raises as it does.
    """
    r = _read(plan, instance, calibration, plan_from, modules, repair_layers)
    return json.loads(_native.explain(r.plan, r.instance))


class _Read(NamedTuple):
    """A plan read for judging, in any form :func:`evaluate` accepts."""

    #: The instance, under the calibration when one is given.
    instance: Instance
    #: The plan as JSON text.
    plan: str
    #: What made it: a solution's algorithm, a runtime file's name, else ``plan``.
    name: str
    #: A solution's claimed peak memory per GPU.
    claimed: Optional[List[float]]


def _read(
    plan: Any,
    instance: InstanceLike,
    calibration: Optional[PathLike],
    plan_from: Optional[str],
    modules: Optional[PathLike],
    repair_layers: bool,
) -> _Read:
    """The instance and the plan of :func:`evaluate`, :func:`plan_chart`, :func:`trace` and
    :func:`explain`. A runtime's plan file is read (``plan_from``) as the CLI reads it; what the
    CLI tells on standard error comes as warnings at the user's call."""
    inst = _calibrated(_instance(instance), calibration)
    _check_source(plan, plan_from, modules, repair_layers)
    if plan_from is not None:
        plan_json, told = _native.read_plan_file(
            plan_from,
            os.fspath(plan),
            _fspath(modules),
            repair_layers,
            inst,
        )
        for line in told:
            warnings.warn(line, UserWarning, stacklevel=3)
        name = os.path.splitext(os.path.basename(os.fspath(plan)))[0]
        return _Read(inst, plan_json, name, None)
    name, claimed = "plan", None
    if isinstance(plan, Solution):
        plan, name, claimed = plan.plan, plan.algorithm, plan.claimed.get("peak_memory")
    elif isinstance(plan, str):
        plan = json.loads(plan)
    if isinstance(plan, Mapping) and "stages" not in plan and "plan" in plan:
        name = plan.get("algorithm") or name
        claimed = (plan.get("claimed") or {}).get("peak_memory")
        plan = plan["plan"]
    return _Read(inst, json.dumps(plan), name, claimed)


def _check_source(
    plan: Any, plan_from: Optional[str], modules: Optional[PathLike], repair_layers: bool
) -> None:
    """Refuses a plan given in one form with the options of the other: with ``plan_from``,
    ``plan`` is a path; ``modules`` and ``repair_layers`` need ``plan_from``."""
    if plan_from is not None:
        if isinstance(plan, (Solution, Mapping)):
            raise TypeError("with plan_from, plan is the path of the runtime's plan file")
    elif modules is not None or repair_layers:
        raise TypeError("modules and repair_layers read a runtime's plan file: give plan_from")
