"""What the public functions share: the types they accept and their conversions to the CLI's
forms."""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._native import Instance

PathLike = Union[str, "os.PathLike[str]"]
#: What functions taking an instance accept: an :class:`Instance`, a path to an instance file or
#: a dict of the JSON format.
InstanceLike = Union[Instance, PathLike, Mapping[str, Any]]
#: A time limit: seconds, a time with a unit (``"500ms"``, ``"2min"``) or ``None`` (no limit).
TimeLimit = Union[float, int, str, None]


def _instance(x: InstanceLike) -> Instance:
    if isinstance(x, Instance):
        return x
    if isinstance(x, (str, os.PathLike)):
        return Instance.load(x)
    if isinstance(x, Mapping):
        return Instance.from_dict(x)
    raise TypeError(
        f"expected a pipeplan.Instance, a path or a dict, got {type(x).__name__}"
    )


def _fspath(path: Optional[PathLike]) -> Optional[str]:
    """``path`` as a string, ``None`` kept."""
    return None if path is None else os.fspath(path)


def _fspaths(paths: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """One path or several, as a list of strings."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return [os.fspath(p) for p in paths]


def _calibrated(inst: Instance, calibration: Optional[PathLike]) -> Instance:
    """``inst`` under the calibration file's constants (``--calibration FILE``), if given."""
    return inst if calibration is None else inst.calibrated(calibration)


def _settings(values: Mapping[str, Any]) -> Dict[str, str]:
    """Algorithm settings as the CLI's ``--set KEY=VALUE`` strings (booleans as true/false)."""
    out = {}
    for key, value in values.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        out[str(key)] = str(value)
    return out


def _quantity(value: Union[str, int, float, None]) -> Optional[str]:
    """A quantity as the CLI takes it: text with a unit, or a bare number (bytes, bytes/s)."""
    return None if value is None else str(value)


def _frame(records: List[Dict[str, Any]]) -> Any:
    """``records`` as a ``pandas.DataFrame`` with their keys as columns, in order; without pandas,
    the list itself."""
    try:
        import pandas as pd
    except ImportError:
        return records
    columns = list(records[0].keys()) if records else None
    return pd.DataFrame.from_records(records, columns=columns)


def _names(algos: Union[str, Iterable[str], None]) -> Optional[List[str]]:
    if algos is None:
        return None
    if isinstance(algos, str):
        # As the CLI's --algos: comma-separated.
        return [a for a in algos.split(",") if a.strip()]
    return list(algos)
