"""A plan written for a training runtime."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Mapping, Optional, Union

from . import _native
from ._common import InstanceLike, PathLike, _calibrated, _fspath, _instance
from ._evaluate import _check_source
from ._solution import Solution


def export(
    plan: Union[Solution, Mapping[str, Any], str, PathLike],
    instance: InstanceLike,
    to: str,
    *,
    calibration: Optional[PathLike] = None,
    plan_from: Optional[str] = None,
    modules: Optional[PathLike] = None,
    repair_layers: bool = False,
) -> str:
    """The plan in a training runtime's format, as ``pipeplan export --to`` writes it: ``to`` is
    ``"galvatron"`` (the engine's output config), ``"pipedream"`` (the runtime configuration),
    ``"megatron"`` (Megatron-LM's arguments), ``"torchtitan"`` (the ``[parallelism]`` TOML) or
    ``"deepspeed"`` (``ds_config.json`` and the pipeline split); ``docs/export.md`` of the
    repository has the mapping.

    ``plan`` and the keywords are those of :func:`evaluate`: a :class:`Solution` (a Galvatron
    planner's keeps its vocabulary tp, embedding sharding and global batch), a plan or solution
    dict or JSON text, or with ``plan_from`` the path of another runtime's plan file. A plan the
    runtime cannot run as it is raises :class:`UnsupportedError` with every reason and the
    nearest plan the runtime runs, evaluated beside the plan (under ``calibration`` when given);
    a plan that does not fit the instance raises :class:`InstanceError`. A plan the evaluator
    says does not fit memory is returned all the same, as the runtime can express it, with a
    :class:`UserWarning` naming the GPU, what it needs and the limit (the CLI's warning); so is
    a Galvatron plan whose runtime, with ``async_grad_reduce`` off, all-reduces replicated
    stages after every micro-batch where the evaluator charges once (warned once, also when
    reading a ``plan_from`` file said it).
    """
    inst = _calibrated(_instance(instance), calibration)
    _check_source(plan, plan_from, modules, repair_layers)
    if plan_from is not None:
        text = os.fspath(plan)
    else:
        if isinstance(plan, Solution):
            plan = plan.to_dict()
        text = plan if isinstance(plan, str) else json.dumps(plan)
    out, told = _native.export(text, inst, to, plan_from, _fspath(modules), repair_layers)
    for line in told:
        warnings.warn(line, UserWarning, stacklevel=2)
    return out
