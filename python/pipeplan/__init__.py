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

import html
import json
import os
import warnings
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _native
from ._errors import (
    InfeasibleError,
    InstanceError,
    PipeplanError,
    SolverError,
    TimeLimitError,
    UnsupportedError,
)
from ._native import Instance

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


class Solution:
    """One solve's result: the plan, the algorithm's claims, the evaluator's verdict.

    Attributes are the JSON of ``pipeplan solve --json`` as Python values: :attr:`plan`,
    :attr:`claimed`, :attr:`evaluated`, :attr:`stats`, :attr:`notes`; :attr:`record` is the
    flat row of ``pipeplan solve --csv``.
    """

    __slots__ = ("_data", "_record", "_instance")

    def __init__(
        self,
        data: Dict[str, Any],
        record: Dict[str, Any],
        instance: Optional[Instance] = None,
    ) -> None:
        self._data = data
        self._record = record
        self._instance = instance

    @property
    def algorithm(self) -> str:
        """The algorithm's name."""
        return self._data["algorithm"]

    @property
    def family(self) -> str:
        """The algorithm's family (baseline, madpipe, galvatron, capture, dawnpiper)."""
        return self._data["family"]

    @property
    def instance(self) -> str:
        """The instance's name."""
        return self._data["instance"]

    @property
    def plan(self) -> Dict[str, Any]:
        """The plan (stages and schedule); :func:`evaluate` takes it back."""
        return self._data["plan"]

    @property
    def claimed(self) -> Dict[str, Any]:
        """The algorithm's own figures under its own model (never the evaluator's)."""
        return self._data["claimed"]

    @property
    def evaluated(self) -> Optional[Dict[str, Any]]:
        """The neutral evaluator's figures for the plan."""
        return self._data.get("evaluated")

    @property
    def stats(self) -> Dict[str, Any]:
        """Wall time (``wall_ms``), optimality ``status``, ``bound``, ``gap``, counters."""
        return self._data["stats"]

    @property
    def notes(self) -> List[str]:
        """What the algorithm derived or assumed."""
        return list(self._data.get("notes", []))

    @property
    def record(self) -> Dict[str, Any]:
        """The flat record of ``pipeplan solve --csv`` (the columns of :func:`compare`)."""
        return dict(self._record)

    def to_dict(self) -> Dict[str, Any]:
        """The solution as ``pipeplan solve --json`` prints it (a deep copy)."""
        return json.loads(json.dumps(self._data))

    def to_json(self) -> str:
        """The solution as JSON text (a file ``pipeplan evaluate`` reads)."""
        return json.dumps(self._data, indent=2)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Solution) and other._data == self._data

    def __repr__(self) -> str:
        r = self._record
        time = r.get("evaluated_period_ms")
        what = "period"
        if time is None:
            time, what = r.get("evaluated_iteration_ms"), "iteration"
        fits = "fits" if r.get("evaluated_fits") else "does NOT fit"
        return (
            f"<pipeplan.Solution {self.algorithm} on {self.instance}: {r.get('stages')} stages, "
            f"evaluated {what} {time} ms, {fits}>"
        )

    def chart_svg(self, periods: int = 2) -> str:
        """The plan's chart as SVG text, as ``pipeplan plot`` draws it: the simulator's schedule
        over ``periods`` periods (or iterations) above every GPU's memory (evaluated parts, the
        claimed peak as a tick, the GPU's memory as a red line).

        Needs the instance the plan was solved on (solutions of :func:`solve` and
        :func:`compare` carry it); raises :class:`InstanceError` otherwise.
        """
        if self._instance is None:
            raise InstanceError(
                "this solution carries no instance (make it with pipeplan.solve or "
                "pipeplan.compare); pipeplan.evaluate(solution, instance) judges it"
            )
        return plan_chart(self, self._instance, periods=periods)

    def _repr_html_(self) -> str:
        """Jupyter: the plan's chart (:meth:`chart_svg`), then its stages and the claimed
        against evaluated metrics, as tables."""
        e = self.evaluated or {}
        stage_time = e.get("stage_time", [])
        rows = []
        for i, s in enumerate(self.plan.get("stages", [])):
            t = stage_time[i] if i < len(stage_time) else None
            cells = [
                i,
                f"{s.get('first')}-{s.get('last')}",
                ",".join(str(g) for g in s.get("gpus", [])),
                s.get("dp", 1),
                s.get("tp", 1),
                "yes" if s.get("sdp") else "",
                "-" if t is None else f"{t:.3f}",
            ]
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        # A plan in its own layer order counts positions in that order (``plan["order"]``).
        layers = "positions in plan order" if self.plan.get("order") else "layers"
        head = "".join(
            f"<th>{h}</th>"
            for h in ["stage", layers, "GPUs", "dp", "tp", "sdp", "time/mb ms (evaluated)"]
        )
        r = self._record
        metrics = [
            ("period ms (async)", r.get("claimed_period_ms"), r.get("evaluated_period_ms")),
            ("iteration ms (sync)", r.get("claimed_iteration_ms"), r.get("evaluated_iteration_ms")),
            ("throughput samples/s", r.get("claimed_throughput"), r.get("evaluated_throughput")),
            ("max memory bytes", r.get("claimed_max_memory"), r.get("evaluated_max_memory")),
            ("fits", r.get("claimed_fits"), r.get("evaluated_fits")),
        ]
        mrows = "".join(
            "<tr>"
            + "".join(f"<td>{html.escape('-' if v is None else str(v))}</td>" for v in row)
            + "</tr>"
            for row in metrics
        )
        title = html.escape(
            f"{self.algorithm} ({self.family}) on {self.instance}: status {self.stats.get('status')}"
        )
        chart = ""
        if self._instance is not None and self.evaluated is not None:
            try:
                chart = f"<div>{self.chart_svg()}</div>"
            except InstanceError as e:
                chart = f"<p>no chart: {html.escape(str(e))}</p>"
        return (
            f"<div><p><b>{title}</b></p>{chart}"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            "<table><thead><tr><th>metric</th><th>claimed</th><th>evaluated</th></tr></thead>"
            f"<tbody>{mrows}</tbody></table></div>"
        )


def algorithms(settings: bool = False) -> List[Dict[str, Any]]:
    """Every algorithm: ``name``, ``family``, ``exact``, ``description`` (``pipeplan algorithms
    --json``). ``settings=True``: every algorithm's settings instead (``--params``)."""
    return json.loads(_native.settings() if settings else _native.algorithms())


def settings(algorithm: Optional[str] = None) -> List[Dict[str, Any]]:
    """The settings algorithms take as keywords of :func:`solve` / :func:`compare`:
    ``algorithm``, ``setting``, ``values``, ``default``, ``doc`` (of one algorithm if named)."""
    rows = json.loads(_native.settings())
    return [r for r in rows if algorithm is None or r["algorithm"] == algorithm]


def models() -> List[Dict[str, Any]]:
    """The networks :func:`generate` knows (``pipeplan generate --list``)."""
    return json.loads(_native.models())


def _cluster(
    gpus: Optional[int],
    memory: Union[str, int, float, None],
    bandwidth: Union[str, int, float, None],
    gpus_per_node: Optional[int],
    inter_node_bandwidth: Union[str, int, float, None],
    pcie: Union[str, int, float, None],
) -> Dict[str, Any]:
    return {
        "gpus": gpus,
        "memory": _quantity(memory),
        "bandwidth": _quantity(bandwidth),
        "gpus_per_node": gpus_per_node,
        "inter_node_bandwidth": _quantity(inter_node_bandwidth),
        "pcie": _quantity(pcie),
    }


def generate(
    model: str,
    gpus: int = 8,
    memory: Union[str, int, float] = "16GiB",
    bandwidth: Union[str, int, float] = "12GB/s",
    *,
    gpus_per_node: Optional[int] = None,
    inter_node_bandwidth: Union[str, int, float, None] = None,
    pcie: Union[str, int, float, None] = None,
    batch: Optional[int] = None,
    image_size: Optional[int] = None,
    seq_len: Optional[int] = None,
    blocks: Optional[int] = None,
    precision: Optional[str] = None,
    optimizer: Optional[str] = None,
    device: str = "v100",
    tflops: Optional[float] = None,
    efficiency: Optional[float] = None,
    schedule: Optional[str] = None,
    micro_batches: Optional[int] = None,
    name: Optional[str] = None,
    note: Optional[str] = None,
) -> Instance:
    """An instance from an analytic model of a known network (``pipeplan generate``).

    ``model`` is one of :func:`models`. Quantities are text with a unit (``"16GiB"``,
    ``"12GB/s"``) or bare numbers (bytes, bytes/s). ``blocks``: decoder blocks of a decoder-only
    language model (gpt3-*, llama3-*, mixtral-8x7b). ``precision``: fp32, fp16, bf16 or mixed;
    ``optimizer``: sgd, momentum or adam; ``device``: v100 or a100; ``schedule``: async, 1f1b or
    gpipe. Defaults are the generator's (see ``pipeplan generate --help``).
    """
    return _native.generate_instance(
        model,
        _cluster(gpus, memory, bandwidth, gpus_per_node, inter_node_bandwidth, pcie),
        batch,
        image_size,
        seq_len,
        blocks,
        precision,
        optimizer,
        device,
        tflops,
        efficiency,
        schedule,
        micro_batches,
        name,
        note,
    )


def import_profile(
    source: str,
    path: PathLike,
    *,
    gpus: Optional[int] = None,
    memory: Union[str, int, float, None] = None,
    bandwidth: Union[str, int, float, None] = None,
    gpus_per_node: Optional[int] = None,
    inter_node_bandwidth: Union[str, int, float, None] = None,
    pcie: Union[str, int, float, None] = None,
    cluster_from_profile: bool = False,
    name: Optional[str] = None,
    batch: Optional[int] = None,
    time_unit_ms: Optional[float] = None,
    data_root: Optional[PathLike] = None,
    gpu_type: Optional[str] = None,
    nodes: Optional[int] = None,
    schedule: Optional[str] = None,
    micro_batches: Optional[int] = None,
    optimizer_state_factor: Optional[float] = None,
) -> Instance:
    """An instance from another tool's profile (``pipeplan import --from SOURCE``).

    ``source``: ``"pipedream"`` (profiler ``graph.txt``), ``"piper"`` (JSON),
    ``"dnn-partitioning"`` (layer- or operator-graph JSON), ``"galvatron"`` (a search config; the
    file carries the cluster, ``data_root`` locates its files) or ``"sailor"`` (a training config
    of a Sailor checkout; needs ``gpu_type``). The cluster (``gpus``, ``memory``, ``bandwidth``)
    is required unless the file carries it or ``cluster_from_profile`` is set; then the values
    given override the file's. Arguments of the engine the import does not emulate are reported
    as a :class:`UserWarning`, as the CLI prints them.
    """
    inst, warning = _native.import_profile(
        source,
        os.fspath(path),
        _cluster(gpus, memory, bandwidth, gpus_per_node, inter_node_bandwidth, pcie),
        cluster_from_profile,
        name,
        batch,
        time_unit_ms,
        _fspath(data_root),
        gpu_type,
        nodes,
        schedule,
        micro_batches,
        optimizer_state_factor,
    )
    if warning:
        warnings.warn(warning, UserWarning, stacklevel=2)
    return inst


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
    if read.evaluation is not None:
        return json.loads(read.evaluation)
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
    #: A runtime's plan file is judged as it is read: the evaluation's JSON.
    evaluation: Optional[str]


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
    if plan_from is not None:
        if isinstance(plan, (Solution, Mapping)):
            raise TypeError("with plan_from, plan is the path of the runtime's plan file")
        data, _record, told, plan_json = _native.evaluate_file(
            plan_from,
            os.fspath(plan),
            _fspath(modules),
            repair_layers,
            inst,
        )
        for line in told:
            warnings.warn(line, UserWarning, stacklevel=3)
        name = os.path.splitext(os.path.basename(os.fspath(plan)))[0]
        return _Read(inst, plan_json, name, None, data)
    if modules is not None or repair_layers:
        raise TypeError("modules and repair_layers read a runtime's plan file: give plan_from")
    name, claimed = "plan", None
    if isinstance(plan, Solution):
        plan, name, claimed = plan.plan, plan.algorithm, plan.claimed.get("peak_memory")
    elif isinstance(plan, str):
        plan = json.loads(plan)
    if isinstance(plan, Mapping) and "stages" not in plan and "plan" in plan:
        name = plan.get("algorithm") or name
        claimed = (plan.get("claimed") or {}).get("peak_memory")
        plan = plan["plan"]
    return _Read(inst, json.dumps(plan), name, claimed, None)


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
    is a file of ``pipeplan calibrate``; ``sailor_root``, ``model`` and ``repair_layers`` are the
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


class Chart(str):
    """A chart as SVG text (a ``str``): ``save(path)`` writes it; Jupyter displays it."""

    def _repr_svg_(self) -> str:
        return str(self)

    def save(self, path: PathLike) -> None:
        """Writes the SVG text to ``path``."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self)


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
