"""Shared fixtures: the repository's shipped instances, the CLI binary to compare against, and
the peers folder's Sailor checkout."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.json"))
FIXTURES = ROOT / "formulations" / "tests" / "fixtures" / "import"
SAILOR_RUNS = ROOT / "formulations" / "src" / "peers" / "sailor_runs.json"


def _cli_path():
    path = os.environ.get("PIPEPLAN_CLI") or shutil.which("pipeplan")
    return path if path and os.access(path, os.X_OK) else None


@pytest.fixture(scope="session")
def cli():
    """Runs the `pipeplan` binary (``$PIPEPLAN_CLI``, else on ``PATH``). Tests comparing with the
    CLI are skipped without one, unless ``PIPEPLAN_REQUIRE_CLI=1`` (CI) makes that a failure."""
    path = _cli_path()
    if path is None:
        if os.environ.get("PIPEPLAN_REQUIRE_CLI") == "1":
            pytest.fail("PIPEPLAN_REQUIRE_CLI=1 but no CLI: set PIPEPLAN_CLI to the binary")
        pytest.skip("no pipeplan CLI binary (set PIPEPLAN_CLI)")

    def run(*args, ok=True):
        out = subprocess.run(
            [path, *map(str, args)], capture_output=True, text=True, timeout=600
        )
        if ok:
            assert out.returncode == 0, out.stderr
        return out

    return run


@pytest.fixture(scope="session")
def sailor_root():
    """The Sailor checkout of the peers folder (``$PIPEPLAN_PEERS``, else ``shared/peers`` beside
    the repository), as the Rust tests find it. Tests needing it are skipped without it, each
    with a ``SKIPPED`` line in the summary."""
    peers = Path(os.environ.get("PIPEPLAN_PEERS") or ROOT.parent / "shared" / "peers")
    root = peers / "sailor" / "sailor"
    if not root.is_dir():
        pytest.skip(f"Sailor measured runs: {root} not found (set PIPEPLAN_PEERS)")
    return root


@pytest.fixture(scope="session")
def galvatron_data():
    """The Galvatron engine's profiles and hardware configs in the peers folder, the data root
    of ``references/galvatron``'s configs; tests needing it are skipped without it."""
    peers = Path(os.environ.get("PIPEPLAN_PEERS") or ROOT.parent / "shared" / "peers")
    root = peers / "galvatron" / "v2.x_14f5972"
    if not root.is_dir():
        pytest.skip(f"Galvatron profiles: {root} not found (set PIPEPLAN_PEERS)")
    return root


def documented(verdict):
    """The measured runs of the peers folder that ``accuracy`` gives ``verdict`` (``judged``,
    ``invalid`` or ``unsupported``), as paths under ``Planner/simulations/validation``; the list
    the Rust tests read (``peers::sailor_runs``)."""
    return sorted(json.loads(SAILOR_RUNS.read_text())[verdict])


def documented_runs(sailor_root, under):
    """The documented runs under ``under`` (``"clariden"``, ``"mit"``...), whatever their verdict:
    tests whose counts or fitted figures are fixed pass these files rather than the folder, so
    that runs added to it change nothing there."""
    validation = sailor_root / "Planner" / "simulations" / "validation"
    names = [n for v in ("judged", "invalid", "unsupported") for n in documented(v)]
    runs = sorted(validation / n for n in names if n.startswith(under.rstrip("/") + "/"))
    missing = [str(r) for r in runs if not r.is_file()]
    assert not missing, f"not the documented peers folder: {missing} missing"
    assert runs, f"no documented run under {under!r}"
    return runs


def pytest_configure(config):
    """Skipped tests are listed with their reason (``-rs``), as the Rust tests print theirs."""
    if "s" not in config.option.reportchars:
        config.option.reportchars += "s"
