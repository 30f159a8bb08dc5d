"""The evaluator against training runs measured on real GPUs: accuracy and calibration."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _native
from ._chart import Chart
from ._common import PathLike, _frame, _fspath, _fspaths


def accuracy(
    paths: Union[PathLike, Sequence[PathLike]],
    *,
    calibration: Optional[PathLike] = None,
    sailor_root: Optional[PathLike] = None,
    model: Optional[str] = None,
    repair_layers: bool = False,
) -> Any:
    """The neutral evaluator against training runs measured on real GPUs (``pipeplan accuracy
    --csv``): Sailor's ``plan_config_*.json`` files under the folders (or given directly).

    Returns a ``pandas.DataFrame`` with one row per run and exactly the columns of ``accuracy
    --csv``: ``status`` is ``judged`` (with predicted and measured iteration time, peak memory
    and gradient reduction, and the signed relative errors), ``unsupported`` or ``invalid``
    (with the ``reason``). Without pandas, a list of dicts with the same keys. ``calibration``
    is a file of ``pipeplan calibrate`` (a :class:`UserWarning` for each run on a GPU model it
    was not fitted to); ``sailor_root``, ``model`` and ``repair_layers`` are the
    CLI's ``--sailor-root``, ``--model`` and ``--repair-layers``. Raises :class:`InstanceError`
    when a folder holds no run or cannot be read, or for a bad calibration file.
    """
    records, _svg = _accuracy(paths, calibration, sailor_root, model, repair_layers, False)
    return _frame(json.loads(records))


def accuracy_chart(
    paths: Union[PathLike, Sequence[PathLike]],
    *,
    calibration: Optional[PathLike] = None,
    sailor_root: Optional[PathLike] = None,
    model: Optional[str] = None,
    repair_layers: bool = False,
) -> Chart:
    """The runs of :func:`accuracy` drawn as ``pipeplan accuracy --plot`` draws them: evaluated
    against measured iteration time and peak memory, one point per judged run, with a band of
    15% relative error. Returns a :class:`Chart` (SVG text; Jupyter shows it). Raises
    :class:`InstanceError` as :func:`accuracy` does, and when no run can be judged.
    """
    _records, svg = _accuracy(paths, calibration, sailor_root, model, repair_layers, True)
    return Chart(svg)


def _accuracy(
    paths: Union[PathLike, Sequence[PathLike]],
    calibration: Optional[PathLike],
    sailor_root: Optional[PathLike],
    model: Optional[str],
    repair_layers: bool,
    chart: bool,
) -> Tuple[str, Optional[str]]:
    return _native.accuracy(
        _fspaths(paths),
        _fspath(calibration),
        _fspath(sailor_root),
        model,
        repair_layers,
        chart,
    )


def calibrate(
    paths: Union[PathLike, Sequence[PathLike]],
    output: Optional[PathLike] = None,
    *,
    p2p_overlap: float = 0.0,
    sailor_root: Optional[PathLike] = None,
    model: Optional[str] = None,
    repair_layers: bool = False,
) -> Dict[str, Any]:
    """Fits the evaluator's constants to training runs measured on real GPUs (``pipeplan
    calibrate DIR... -o FILE``): Sailor's ``plan_config_*.json`` files under the folders.

    Returns the calibration file's content: ``constants`` and ``fit`` (the method, the runs
    left out and why, the errors before, in-sample and leave-one-out, every run's errors). With
    ``output``, also writes the file there, byte for byte as the CLI does; ``calibration=output``
    then works in :func:`solve`, :func:`evaluate`, :func:`compare`, :func:`accuracy` and
    :meth:`Instance.calibrated`. ``p2p_overlap`` is the runtime's (``--p2p-overlap``, not
    fitted); ``sailor_root``, ``model`` and ``repair_layers`` are the CLI's. Raises
    :class:`InstanceError` when fewer than two runs can be judged (naming why the others
    cannot) or a folder cannot be read. The GIL is released while fitting (seconds).
    """
    text = _native.calibrate(
        _fspaths(paths),
        float(p2p_overlap),
        _fspath(sailor_root),
        model,
        repair_layers,
    )
    if output is not None:
        with open(os.fspath(output), "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return json.loads(text)
