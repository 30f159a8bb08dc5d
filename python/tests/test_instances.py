"""Instances: loading, round trips, generation and import, and the errors of bad input."""

import json
import pickle
import warnings

import pytest

import pipeplan
from conftest import FIXTURES, INSTANCES, ROOT


def test_the_shipped_instances_are_found():
    assert len(INSTANCES) >= 10


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_round_trips_keep_every_field(path):
    inst = pipeplan.Instance.load(path)
    assert inst.name == path.stem
    d = inst.to_dict()
    # The dict is the file's JSON (units normalized to numbers): loading it again changes nothing.
    again = pipeplan.Instance.from_dict(d)
    assert again == inst
    assert again.to_dict() == d
    assert pipeplan.Instance.from_json(inst.to_json()) == inst
    assert pickle.loads(pickle.dumps(inst)) == inst
    assert inst.validate() == {"name": inst.name, "layers": inst.layers, "gpus": inst.gpus}
    assert inst.layers == len(d["model"]["layers"])
    assert inst.gpus == d["cluster"]["gpus"]


def test_an_edited_dict_makes_another_instance():
    inst = pipeplan.Instance.load(INSTANCES[0])
    d = inst.to_dict()
    d["cluster"]["memory"] = "1 GiB"
    other = pipeplan.Instance.from_dict(d)
    assert other != inst
    assert other.memory == 2**30


def test_generate_reproduces_a_shipped_instance():
    shipped = pipeplan.Instance.load(ROOT / "instances" / "resnet50-1000px-b8-4gpu-8gib.json")
    made = pipeplan.generate("resnet50", gpus=4, memory="8GiB", bandwidth="12GB/s", pcie="12GB/s")
    a, b = made.to_dict(), shipped.to_dict()
    # The shipped file's `source` adds a note on where its cluster comes from.
    assert b["source"].startswith(a.pop("source"))
    b.pop("source")
    assert a == b


def test_generate_takes_the_cli_options():
    inst = pipeplan.generate(
        "bert-large",
        gpus=4,
        memory=16 * 2**30,
        bandwidth="150GB/s",
        precision="fp16",
        optimizer="adam",
        device="a100",
        schedule="gpipe",
        micro_batches=8,
        name="mine",
    )
    d = inst.to_dict()
    assert inst.name == "mine" and inst.gpus == 4 and inst.memory == 16 * 2**30
    assert d["training"]["schedule"] == "gpipe"
    assert d["training"]["micro_batches"] == 8
    assert {m["name"] for m in pipeplan.models()} >= {"resnet50", "bert-large", "gpt3-2.6b"}
    long = pipeplan.generate("gpt3-6.7b", gpus=32, memory="80GiB", bandwidth="300GB/s", blocks=510)
    assert long.name == "gpt3-6.7b-510blocks-s2048-b1-32gpu-80gib" and long.layers == 512


def test_generate_rejects_bad_values_with_the_cli_messages(cli):
    with pytest.raises(pipeplan.InstanceError) as e:
        pipeplan.generate("resnet50", memory="16 GiBs")
    out = cli("generate", "resnet50", "--gpus", "8", "--memory", "16 GiBs", "--bandwidth", "12GB/s", ok=False)
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: {e.value}"
    with pytest.raises(pipeplan.InstanceError, match="--optimizer"):
        pipeplan.generate("resnet50", optimizer="lion")
    with pytest.raises(pipeplan.InstanceError, match="--schedule"):
        pipeplan.generate("resnet50", schedule="zero-bubble")
    with pytest.raises(pipeplan.InstanceError, match="fixed layout"):
        pipeplan.generate("resnet50", blocks=4)
    with pytest.raises(ValueError):
        pipeplan.generate("no-such-net")


@pytest.mark.parametrize(
    "source,path",
    [
        ("pipedream", FIXTURES / "pipedream" / "skip.txt"),
        ("piper", FIXTURES / "piper" / "skip.json"),
        ("dnn-partitioning", FIXTURES / "dnn-partitioning" / "skip_training.json"),
    ],
)
def test_import_profile_matches_the_cli(cli, tmp_path, source, path):
    inst = pipeplan.import_profile(source, path, gpus=2, memory="16GiB", bandwidth="12GB/s")
    out = tmp_path / "cli.json"
    cli("import", "--from", source, path, "--gpus", "2", "--memory", "16GiB", "--bandwidth", "12GB/s", "-o", out)
    assert inst == pipeplan.Instance.load(out)
    assert inst.to_dict() == json.loads(out.read_text())


def test_import_profile_needs_the_cluster_and_says_which_flag():
    path = FIXTURES / "pipedream" / "skip.txt"
    with pytest.raises(pipeplan.InstanceError, match="--memory: required"):
        pipeplan.import_profile("pipedream", path, gpus=2)
    with pytest.raises(pipeplan.InstanceError, match="unknown profile format"):
        pipeplan.import_profile("tensorflow", path, gpus=2, memory="1GiB", bandwidth="1GB/s")


def test_import_profile_overrides_a_profiles_cluster():
    path = FIXTURES / "piper" / "skip.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Piper has no unemulated engine arguments
        inst = pipeplan.import_profile(
            "piper", path, cluster_from_profile=True, gpus=3, memory="2GiB", bandwidth="1GB/s"
        )
    assert inst.gpus == 3 and inst.memory == 2 * 2**30


def test_load_errors_are_the_clis(cli, tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(pipeplan.InstanceError) as e:
        pipeplan.Instance.load(missing)
    out = cli("validate", missing, ok=False)
    assert str(e.value) in out.stdout + out.stderr

    bad = json.loads(INSTANCES[0].read_text())
    bad["model"]["layers"][2]["forward"] = -1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(pipeplan.InstanceError) as e:
        pipeplan.Instance.load(path)
    assert "model.layers[2].forward" in str(e.value)
    out = cli("solve", path, "--algo", "uniform", ok=False)
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: {e.value}"
    with pytest.raises(ValueError, match="model.layers"):
        pipeplan.Instance.from_dict(bad)
    with pytest.raises(pipeplan.InstanceError):
        pipeplan.Instance.from_json("{not json")
    with pytest.raises(TypeError):
        pipeplan.solve(42, "uniform")
