"""Type stubs of the Rust extension `pipeplan._native` (python/src/lib.rs). Use the `pipeplan`
package's functions; these are its building blocks. Results cross as JSON text."""

import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

_Quantity = Optional[str]

class Instance:
    """A pipeplan instance (format `pipeplan/instance@1`): a layer chain, a cluster and training
    settings. Always valid: every constructor validates, and instances are immutable."""

    @staticmethod
    def load(path: Union[str, "os.PathLike[str]"]) -> Instance:
        """Reads and validates an instance file (JSON)."""
    @staticmethod
    def from_json(text: str) -> Instance:
        """Parses and validates an instance from JSON text."""
    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Instance:
        """Builds and validates an instance from a dict of the JSON format."""
    def calibrated(self, path: Union[str, "os.PathLike[str]"]) -> Instance:
        """The same instance under the constants of a calibration file (`pipeplan calibrate`); a
        :class:`UserWarning` when the file was fitted to runs on other GPU models than the one
        this instance was profiled on (``cluster.gpu``)."""
    def to_json(self) -> str:
        """The instance as JSON text (the file format)."""
    def to_dict(self) -> Dict[str, Any]:
        """The instance as a dict of the JSON format."""
    def validate(self) -> Dict[str, Any]:
        """Checks every field again; returns `{"name", "layers", "gpus"}`."""
    @property
    def name(self) -> str:
        """The instance's name."""
    @property
    def layers(self) -> int:
        """Number of layers of the chain."""
    @property
    def gpus(self) -> int:
        """Number of GPUs of the cluster."""
    @property
    def memory(self) -> float:
        """Memory per GPU (bytes)."""
    def __eq__(self, other: object) -> bool: ...
    def __reduce__(self) -> Tuple[Any, Tuple[str]]: ...

def solve(
    instance: Instance,
    algorithm_name: str,
    time_limit: Union[float, int, str, None],
    seed: int,
    stages: Optional[int],
    settings: Dict[str, str],
) -> Tuple[str, str]:
    """Solution JSON and its CSV record's JSON."""

def compare(
    instances: List[Instance],
    algorithms: Optional[List[str]],
    time_limit: Union[float, int, str, None],
    seed: int,
    stages: Optional[int],
    settings: Dict[str, str],
) -> Tuple[str, str]:
    """The comparison's JSON and its CSV records' JSON."""

def evaluate(plan: str, instance: Instance) -> Tuple[str, str]:
    """The evaluation's JSON and its CSV record's JSON."""

def read_plan_file(
    format: str,
    path: str,
    modules: Optional[str],
    repair_layers: bool,
    instance: Instance,
) -> Tuple[str, List[str]]:
    """A runtime's plan file read as ``--plan-from`` reads it: the plan's JSON and the notes for
    the user."""

def plan_svg(
    plan: str,
    instance: Instance,
    name: str,
    claimed_peak_memory: Optional[List[float]],
    periods: int,
) -> str:
    """A judged plan's chart as SVG text (``pipeplan plot``), titled after ``name``."""

def trace(plan: str, instance: Instance, periods: int) -> str:
    """A judged plan's timeline as ``pipeplan trace`` writes it (Chrome trace-event JSON)."""

def explain(plan: str, instance: Instance) -> str:
    """Why a judged plan's figures are what they are (``pipeplan explain --json``)."""

def export(
    plan: str,
    instance: Instance,
    to: str,
    plan_from: Optional[str],
    modules: Optional[str],
    repair_layers: bool,
) -> Tuple[str, List[str]]:
    """A plan or solution (JSON text), or with ``plan_from`` a runtime's plan file (its path), in
    the runtime format ``to`` (``pipeplan export``), with the notes for the user."""

def algorithms() -> str: ...
def settings() -> str: ...
def models() -> str: ...
def generate_instance(
    model: str,
    cluster: Dict[str, Any],
    batch: Optional[int],
    image_size: Optional[int],
    seq_len: Optional[int],
    precision: Optional[str],
    optimizer: Optional[str],
    device: str,
    tflops: Optional[float],
    efficiency: Optional[float],
    schedule: Optional[str],
    micro_batches: Optional[int],
    name: Optional[str],
    note: Optional[str],
) -> Instance: ...
def import_profile(
    source: str,
    path: str,
    cluster: Dict[str, Any],
    cluster_from_profile: bool,
    name: Optional[str],
    batch: Optional[int],
    time_unit_ms: Optional[float],
    data_root: Optional[str],
    gpu_type: Optional[str],
    nodes: Optional[int],
    schedule: Optional[str],
    micro_batches: Optional[int],
    optimizer_state_factor: Optional[float],
) -> Tuple[Instance, Optional[str]]: ...

def accuracy(
    paths: List[str],
    calibration: Optional[str],
    sailor_root: Optional[str],
    model: Optional[str],
    repair_layers: bool,
    chart: bool,
) -> Tuple[str, Optional[str]]:
    """The records of `pipeplan accuracy --csv`, as JSON, and with `chart` the runs drawn as
    `pipeplan accuracy --plot` draws them (SVG text)."""

def calibrate(
    paths: List[str],
    p2p_overlap: float,
    sailor_root: Optional[str],
    model: Optional[str],
    repair_layers: bool,
) -> str:
    """The calibration file of `pipeplan calibrate`, as JSON."""
