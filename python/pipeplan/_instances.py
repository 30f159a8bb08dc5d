"""Instances: from the analytic generator or from another tool's profile."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Optional, Union

from . import _native
from ._common import PathLike, _fspath, _quantity
from ._native import Instance


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
