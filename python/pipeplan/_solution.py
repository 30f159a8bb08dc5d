"""A solve's result."""

from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Optional

from ._errors import InstanceError
from ._native import Instance


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
        # Imported here: judging a plan takes a Solution, so _evaluate imports this module.
        from ._evaluate import plan_chart

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
                # The ZeRO stage; 3 is sdp.
                3 if s.get("sdp") else (s.get("zero") or ""),
                "-" if t is None else f"{t:.3f}",
            ]
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        # A plan in its own layer order counts positions in that order (``plan["order"]``).
        layers = "positions in plan order" if self.plan.get("order") else "layers"
        head = "".join(
            f"<th>{h}</th>"
            for h in ["stage", layers, "GPUs", "dp", "tp", "zero", "time/mb ms (evaluated)"]
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
