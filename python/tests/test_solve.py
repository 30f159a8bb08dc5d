"""Solving, evaluating and comparing: every algorithm, the CLI's numbers, errors, the GIL and
Ctrl-C."""

import _thread
import csv
import io
import json
import pickle
import signal
import threading
import time
import warnings

import pytest

import pipeplan
from conftest import INSTANCES, ROOT, documented, documented_runs

# Small instances every family handles between them: an async CNN and a synchronous
# transformer, on power-of-two GPU counts (Galvatron's requirement).
SMALL = {
    "resnet50": lambda: pipeplan.generate("resnet50", gpus=4, memory="8GiB", bandwidth="12GB/s"),
    "bert-large": lambda: pipeplan.generate("bert-large", gpus=4, memory="16GiB", bandwidth="150GB/s"),
}
NAMES = [a["name"] for a in pipeplan.algorithms()]
# Algorithms whose result does not depend on time (no search cut short by the clock): their
# solutions must equal the CLI's field for field, wall time aside.
DETERMINISTIC = ["uniform", "balanced-time", "balanced-memory", "pipedream", "madpipe"]


def without_timing(solution):
    d = json.loads(json.dumps(solution))
    d["stats"].pop("wall_ms")
    return d


def test_algorithms_lists_every_family():
    algos = pipeplan.algorithms()
    assert len(NAMES) == len(set(NAMES)) >= 10
    assert {a["family"] for a in algos} == {"baseline", "madpipe", "galvatron", "capture", "dawnpiper"}
    assert all(set(a) == {"name", "family", "exact", "description"} for a in algos)
    assert any(a["exact"] for a in algos) and not all(a["exact"] for a in algos)
    assert {s["setting"] for s in pipeplan.settings("madpipe")} >= {"grid_t"}
    assert pipeplan.algorithms(settings=True) == pipeplan.settings()


@pytest.mark.parametrize("name", NAMES)
def test_every_algorithm_solves_through_the_package(name):
    solved = []
    for label, make in SMALL.items():
        inst = make()
        try:
            sol = pipeplan.solve(inst, name, time_limit=3)
        except pipeplan.UnsupportedError as e:
            assert str(e).startswith(f"{name} does not support instance {inst.name}: ")
            continue
        assert isinstance(sol, pipeplan.Solution)
        assert sol.algorithm == name and sol.instance == inst.name
        assert sol.evaluated is not None and sol.stats["wall_ms"] >= 0
        assert sol.record["result"] == "solved" and sol.record["algorithm"] == name
        # The neutral evaluator judges the returned plan the same way again.
        assert pipeplan.evaluate(sol, inst) == sol.evaluated
        assert pipeplan.evaluate(sol.plan, inst) == sol.evaluated
        assert pipeplan.evaluate(sol.to_json(), inst) == sol.evaluated
        page = sol._repr_html_()
        assert "<table>" in page
        # The plan's chart (as `pipeplan plot` draws it), inline.
        assert "<svg" in page and "no chart" not in page, page[:300]
        solved.append(label)
    assert solved, f"{name} solved none of {list(SMALL)}"


@pytest.mark.parametrize("name", DETERMINISTIC)
@pytest.mark.parametrize("path", INSTANCES[:6], ids=lambda p: p.stem)
def test_solve_gives_the_numbers_of_the_cli_json(cli, path, name):
    out = cli("solve", path, "--algo", name, "--json", "--time-limit", "30", ok=False)
    try:
        sol = pipeplan.solve(path, name, time_limit=30)
    except pipeplan.PipeplanError as e:
        assert out.returncode in (1, 2)
        assert out.stderr.strip() == f"error: {e}"
        return
    assert out.returncode == 0, out.stderr
    assert without_timing(sol.to_dict()) == without_timing(json.loads(out.stdout))


def test_compare_is_the_cli_csv(cli):
    paths = [ROOT / "instances" / "resnet50-1000px-b8-4gpu-8gib.json", INSTANCES[0]]
    algos = ["uniform", "balanced-time", "pipedream", "madpipe", "exact-contiguous"]
    frame = pipeplan.compare(paths, algos, time_limit=30)
    out = cli("compare", *paths, "--algos", ",".join(algos), "--csv", "--time-limit", "30")
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    header = out.stdout.splitlines()[0].split(",")
    assert list(frame.columns) == header
    assert len(frame) == len(rows) == len(paths) * len(algos)
    for (_, mine), theirs in zip(frame.iterrows(), rows):
        for col in header:
            if col == "solve_ms":
                continue
            value = mine[col]
            if theirs[col] == "":
                assert value is None or value != value, (col, value)  # None or NaN
            elif isinstance(value, bool) or col.endswith("fits") or col == "evaluated_valid_schedule":
                assert str(value).lower() == theirs[col], col
            elif isinstance(value, (int, float)):
                assert float(value) == float(theirs[col]), (mine["algorithm"], col)
            else:
                assert str(value) == theirs[col], col


def test_compare_returns_solutions_and_says_why_not():
    inst = SMALL["resnet50"]()
    odd = pipeplan.generate("resnet50", gpus=3, memory="8GiB", bandwidth="12GB/s")
    frame, sols = pipeplan.compare([inst, odd], "uniform,galvatron-bmw", time_limit=5, solutions=True)
    assert list(frame["instance"]) == [inst.name, inst.name, odd.name, odd.name]
    assert len(sols) == 4
    for (_, row), sol in zip(frame.iterrows(), sols):
        assert (sol is not None) == (row["result"] == "solved")
        if sol is not None:
            assert sol.algorithm == row["algorithm"]
            assert sol.evaluated["throughput"] == row["evaluated_throughput"]
        else:
            assert row["reason"]
    # Galvatron declines three GPUs.
    assert frame.iloc[3]["result"] == "unsupported"
    # Each solution carries its own instance: its chart names it.
    for sol in sols:
        if sol is not None:
            svg = sol.chart_svg(periods=1)
            assert svg.startswith("<svg") and f"{sol.algorithm} on {sol.instance}" in svg


def test_a_chart_needs_the_instance():
    inst = SMALL["resnet50"]()
    sol = pipeplan.solve(inst, "uniform")
    bare = pipeplan.Solution(sol.to_dict(), sol.record)
    with pytest.raises(pipeplan.InstanceError, match="carries no instance"):
        bare.chart_svg()
    # Without an instance the page keeps its tables and has no chart.
    page = bare._repr_html_()
    assert "<table>" in page and "<svg" not in page
    assert sol.chart_svg() != sol.chart_svg(periods=3)


def test_a_solution_and_a_chart_pickle_under_the_packages_name():
    # Worker processes (multiprocessing, dask) hand solutions back by pickle; the classes live in
    # private modules but are known as pipeplan.Solution and pipeplan.Chart.
    inst = SMALL["resnet50"]()
    sol = pipeplan.solve(inst, "uniform")
    assert repr(type(sol)) == "<class 'pipeplan.Solution'>"
    back = pickle.loads(pickle.dumps(sol))
    assert back == sol and back.record == sol.record
    assert back.chart_svg(periods=1) == sol.chart_svg(periods=1)
    chart = sol.chart_svg()
    assert type(chart).__qualname__ == "Chart" and type(chart).__module__ == "pipeplan"
    assert pickle.loads(pickle.dumps(chart)) == chart


def test_compare_without_pandas_gives_dicts(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("no pandas here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    rows = pipeplan.compare(SMALL["resnet50"](), ["uniform"], time_limit=5)
    assert isinstance(rows, list) and rows[0]["algorithm"] == "uniform"
    assert rows[0]["result"] == "solved"


def test_solve_errors_are_the_clis(cli, tmp_path):
    path = ROOT / "instances" / "resnet50-1000px-b8-4gpu-8gib.json"
    cases = [
        (("no-such-algo",), {}, pipeplan.InstanceError, ["--algo", "no-such-algo"]),
        (("madpipe",), {"no_such_setting": 3}, pipeplan.InstanceError, ["--algo", "madpipe", "--set", "no_such_setting=3"]),
        (("madpipe",), {"stages": 0}, pipeplan.InstanceError, ["--algo", "madpipe", "--stages", "0"]),
        (("uniform",), {"time_limit": "soon"}, pipeplan.InstanceError, None),
    ]
    for args, kwargs, error, cli_args in cases:
        with pytest.raises(error) as e:
            pipeplan.solve(path, *args, **kwargs)
        assert isinstance(e.value, ValueError)
        if cli_args:
            out = cli("solve", path, *cli_args, ok=False)
            assert out.returncode == 2
            assert out.stderr.strip() == f"error: {e.value}"


def test_unsupported_and_infeasible_raise_their_classes(cli, tmp_path):
    odd = pipeplan.generate("resnet50", gpus=3, memory="8GiB", bandwidth="12GB/s")
    with pytest.raises(pipeplan.UnsupportedError) as e:
        pipeplan.solve(odd, "galvatron-bmw")
    path = tmp_path / "odd.json"
    path.write_text(odd.to_json())
    out = cli("solve", path, "--algo", "galvatron-bmw", ok=False)
    assert out.returncode == 2 and out.stderr.strip() == f"error: {e.value}"

    tiny = pipeplan.generate("resnet50", gpus=2, memory="64MiB", bandwidth="12GB/s")
    with pytest.raises(pipeplan.InfeasibleError) as e:
        pipeplan.solve(tiny, "madpipe", time_limit=10)
    assert not isinstance(e.value, ValueError)
    path = tmp_path / "tiny.json"
    path.write_text(tiny.to_json())
    out = cli("solve", path, "--algo", "madpipe", "--time-limit", "10", ok=False)
    assert out.returncode == 1 and out.stderr.strip() == f"error: {e.value}"


def test_evaluate_rejects_a_plan_of_another_instance():
    small = SMALL["resnet50"]()
    sol = pipeplan.solve(small, "uniform")
    two = pipeplan.generate("resnet50", gpus=2, memory="8GiB", bandwidth="12GB/s")
    with pytest.raises(pipeplan.InstanceError, match="gpu"):
        pipeplan.evaluate(sol, two)


def slow_solve(time_limit):
    """A solve that runs until its time limit: mCAP's Bayesian optimization on a large instance."""
    big = ROOT / "instances" / "densenet121-1000px-b8-8gpu-4gib.json"
    return pipeplan.solve(big, "mcap-bo", time_limit=time_limit)


def test_a_solve_in_a_thread_does_not_block_another_thread():
    done = threading.Event()
    result = {}

    def work():
        start = time.perf_counter()
        try:
            result["solution"] = slow_solve(2)
        except pipeplan.PipeplanError as e:
            result["error"] = e
        result["seconds"] = time.perf_counter() - start
        done.set()

    t = threading.Thread(target=work)
    t.start()
    # Pure-Python work on this thread: it progresses only while the solve does not hold the GIL.
    longest_stall, ticks, last = 0.0, 0, time.perf_counter()
    while not done.is_set():
        sum(range(1000))
        now = time.perf_counter()
        longest_stall, last, ticks = max(longest_stall, now - last), now, ticks + 1
    t.join()
    assert result["seconds"] > 1.0, "the solve ended too soon to show anything"
    assert ticks > 1000
    assert longest_stall < 0.5, f"this thread stalled {longest_stall:.2f} s during the solve"


def interrupt_after(seconds):
    # Python installs its Ctrl-C handler only if SIGINT was not ignored when it started, and a
    # process started in the background without job control (`cmd &` in a script, `nohup`)
    # ignores it; without the handler, interrupt_main does nothing.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(seconds, _thread.interrupt_main)
    timer.start()
    return timer


def test_ctrl_c_stops_a_long_compare_cleanly():
    big = [ROOT / "instances" / "densenet121-1000px-b8-8gpu-4gib.json"] * 3
    timer = interrupt_after(1.0)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        # Three solves of up to 60 s each without Ctrl-C.
        pipeplan.compare(big, ["mcap-bo"], time_limit=60)
    elapsed = time.perf_counter() - start
    timer.join()
    assert elapsed < 15, f"compare took {elapsed:.1f} s to stop"
    # The package still works afterwards.
    assert pipeplan.solve(SMALL["resnet50"](), "uniform").algorithm == "uniform"


def test_ctrl_c_stops_a_long_solve():
    timer = interrupt_after(1.0)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        slow_solve(60)
    timer.join()
    assert time.perf_counter() - start < 15


def test_a_calibration_file_changes_what_is_planned_and_judged(cli, tmp_path):
    calibration = ROOT / "calibrations" / "clariden-gh200.json"
    path = str(INSTANCES[0])
    inst = pipeplan.Instance.load(path)
    calibrated = inst.calibrated(calibration)
    assert "calibration" in calibrated.to_dict() and "calibration" not in inst.to_dict()
    plain = pipeplan.solve(inst, "uniform")
    sol = pipeplan.solve(path, "uniform", calibration=calibration)
    # The CLI's figures under the same file.
    out = json.loads(cli("solve", path, "-a", "uniform", "--calibration", calibration, "--json").stdout)
    assert without_timing(sol.to_dict()) == without_timing(out)
    assert sol.evaluated != plain.evaluated
    assert pipeplan.evaluate(plain, inst, calibration=calibration) == sol.evaluated
    frame = pipeplan.compare([path], ["uniform"], calibration=calibration)
    rows = frame.to_dict("records") if hasattr(frame, "to_dict") else frame
    assert rows[0]["evaluated_max_memory"] == sol.evaluated["max_memory"]
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(pipeplan.InstanceError, match="bad.json"):
        pipeplan.solve(inst, "uniform", calibration=bad)


def test_a_calibration_fitted_on_another_gpu_model_warns(sailor_root):
    calibration = ROOT / "calibrations" / "clariden-gh200.json"
    config = sailor_root / "Planner" / "simulations" / "configs" / "training_config_opt_350.json"
    a100 = pipeplan.import_profile("sailor", config, gpu_type="A100-40", nodes=2)
    with pytest.warns(UserWarning, match="fitted to runs on GH-96; instance .* was profiled on A100-40"):
        a100.calibrated(calibration)
    gh200 = pipeplan.import_profile("sailor", config, gpu_type="GH-96", nodes=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gh200.calibrated(calibration)


def test_accuracy_lists_the_clis_records(cli, sailor_root, tmp_path):
    runs = documented_runs(sailor_root, "clariden") + documented_runs(sailor_root, "mit")
    calibration = ROOT / "calibrations" / "clariden-gh200.json"
    frame = pipeplan.accuracy(runs, calibration=calibration)
    out = cli("accuracy", *runs, "--calibration", calibration, "--csv").stdout
    expected = list(csv.DictReader(io.StringIO(out)))
    assert list(frame.columns) == list(expected[0].keys())
    rows = frame.to_dict("records")
    assert [(r["name"], r["status"]) for r in rows] == [(r["name"], r["status"]) for r in expected]
    judged = [(r, e) for r, e in zip(rows, expected) if r["status"] == "judged"]
    assert [r["name"] for r, _ in judged] == documented("judged")
    for r, e in judged:
        for key in ("time_error", "memory_error", "predicted_iteration_ms"):
            assert r[key] == pytest.approx(float(e[key]), rel=1e-12), (r["name"], key)
    assert any(r["status"] == "unsupported" and "heterogeneous" in r["reason"] for r in rows)
    with pytest.raises(pipeplan.InstanceError, match="no measured run"):
        pipeplan.accuracy(tmp_path)


def test_accuracy_chart_is_the_clis_plot(cli, sailor_root, tmp_path):
    runs = documented_runs(sailor_root, "clariden")
    calibration = ROOT / "calibrations" / "clariden-gh200.json"
    chart = pipeplan.accuracy_chart(runs, calibration=calibration)
    cli("accuracy", *runs, "--calibration", calibration, "--plot", tmp_path / "cli.svg")
    assert chart == (tmp_path / "cli.svg").read_text()
    assert chart._repr_svg_() == chart and "19 measured runs" in chart
    chart.save(tmp_path / "py.svg")
    assert (tmp_path / "py.svg").read_text() == chart
    with pytest.raises(pipeplan.InstanceError, match="no run judged"):
        pipeplan.accuracy_chart(documented_runs(sailor_root, "mit"))


def test_calibrate_writes_the_shipped_file(sailor_root, tmp_path):
    runs = documented_runs(sailor_root, "clariden")
    out = tmp_path / "cal.json"
    fitted = pipeplan.calibrate(runs, out)
    # The shipped file is `pipeplan calibrate` on the same runs (tests/sailor_cli.rs checks
    # that): the same bytes from Python.
    shipped = ROOT / "calibrations" / "clariden-gh200.json"
    assert out.read_text() == shipped.read_text()
    assert fitted == json.loads(shipped.read_text())
    cv = fitted["fit"]["summary"][2]
    assert cv["dataset"] == "after, leave-one-out" and cv["runs"] == 19
    # The file serves calibration= at once.
    frame = pipeplan.accuracy(runs, calibration=out)
    judged = frame[frame["status"] == "judged"]
    assert len(judged) == len(documented("judged"))
    with pytest.raises(pipeplan.InstanceError, match=r"(?s)0 judged run\(s\) of 8.*heterogeneous"):
        pipeplan.calibrate(documented_runs(sailor_root, "mit"))


def _opt350_n4_d2(sailor_root):
    """OPT-350's training config, its measured run `N4_D2`, and the instance of its profiles on
    4 GH200 nodes at micro-batch 1."""
    config = sailor_root / "Planner" / "simulations" / "configs" / "training_config_opt_350.json"
    run = (
        sailor_root / "Planner" / "simulations" / "validation" / "clariden" / "OPT-350" / "N4"
        / "plan_config_N4_D2.json"
    )
    gh200 = pipeplan.import_profile("sailor", config, gpu_type="GH-96", nodes=4, batch=1)
    return config, run, gh200


def test_evaluate_reads_a_runtimes_plan_file_as_the_cli_does(cli, sailor_root, tmp_path):
    config, run, gh200 = _opt350_n4_d2(sailor_root)
    path = tmp_path / "gh200.json"
    path.write_text(gh200.to_json())
    ours = pipeplan.evaluate(run, gh200, plan_from="sailor")
    theirs = json.loads(cli("evaluate", "--plan-from", "sailor", run, path, "--json").stdout)
    assert ours == theirs
    # A plan made for GH200 nodes judged on A100s: as asked, and said.
    a100 = pipeplan.import_profile("sailor", config, gpu_type="A100-40", nodes=4, batch=1)
    with pytest.warns(UserWarning, match=r"its GPUs are GH-96, the instance's A100-40"):
        pipeplan.evaluate(run, a100, plan_from="sailor")
    with pytest.raises(pipeplan.InstanceError, match="mends Sailor plan files"):
        pipeplan.evaluate(run, gh200, plan_from="galvatron", repair_layers=True)
    with pytest.raises(pipeplan.InstanceError, match="unknown plan format"):
        pipeplan.evaluate(run, gh200, plan_from="megatron")
    with pytest.raises(TypeError, match="plan_from"):
        pipeplan.evaluate({"stages": []}, gh200, plan_from="sailor")


def test_a_solutions_chart_trace_and_explanation_are_the_clis(cli, tmp_path):
    # Its algorithm in the title, its claimed peaks drawn, as `plot SOLUTION`.
    inst = SMALL["resnet50"]()
    sol = pipeplan.solve(inst, "madpipe", time_limit=10)
    (tmp_path / "inst.json").write_text(inst.to_json())
    (tmp_path / "sol.json").write_text(sol.to_json())
    cli("plot", tmp_path / "sol.json", tmp_path / "inst.json", "-o", tmp_path / "cli.svg")
    chart = pipeplan.plan_chart(sol, inst)
    assert chart == (tmp_path / "cli.svg").read_text()
    assert chart == pipeplan.plan_chart(sol.to_dict(), inst) == sol.chart_svg(periods=3)
    assert f"madpipe on {inst.name} (" in chart and chart._repr_svg_() == chart
    with pytest.raises(TypeError, match="plan_from"):
        pipeplan.plan_chart(sol, inst, repair_layers=True)
    # `trace SOLUTION`: the same document, at the CLI's periods and at others.
    files = (tmp_path / "sol.json", tmp_path / "inst.json")
    assert pipeplan.trace(sol, inst) == json.loads(cli("trace", *files).stdout)
    ours = pipeplan.trace(sol.to_dict(), inst, periods=1)
    assert ours == json.loads(cli("trace", *files, "--periods", "1").stdout)
    assert ours["otherData"]["evaluated_period_ms"] == sol.evaluated["period_ms"]
    # `explain SOLUTION --json`: what sets the period, stage by stage.
    ours = pipeplan.explain(sol, inst)
    assert ours == json.loads(cli("explain", *files, "--json").stdout)
    assert ours["why"][0].startswith("period") and len(ours["stages"]) == len(sol.plan["stages"])


def test_a_runtimes_plan_files_chart_trace_and_explanation_are_the_clis(cli, sailor_root, tmp_path):
    config, run, gh200 = _opt350_n4_d2(sailor_root)
    (tmp_path / "gh200.json").write_text(gh200.to_json())
    cli("plot", "--plan-from", "sailor", run, tmp_path / "gh200.json", "-o", tmp_path / "run.svg")
    chart = pipeplan.plan_chart(run, gh200, plan_from="sailor")
    assert chart == (tmp_path / "run.svg").read_text()
    assert "plan_config_N4_D2 on " in chart
    theirs = cli("trace", "--plan-from", "sailor", run, tmp_path / "gh200.json").stdout
    ours = pipeplan.trace(run, gh200, plan_from="sailor")
    assert ours == json.loads(theirs) and ours["otherData"]["schedule"] == "1f1b"
    theirs = cli("explain", "--plan-from", "sailor", run, tmp_path / "gh200.json", "--json").stdout
    assert pipeplan.explain(run, gh200, plan_from="sailor") == json.loads(theirs)
    a100 = pipeplan.import_profile("sailor", config, gpu_type="A100-40", nodes=4, batch=1)
    with pytest.warns(UserWarning, match=r"its GPUs are GH-96, the instance's A100-40"):
        pipeplan.plan_chart(run, a100, plan_from="sailor")


def test_export_writes_what_the_cli_writes(cli, tmp_path):
    inst = SMALL["bert-large"]()
    sol = pipeplan.solve(inst, "galvatron-base", time_limit=30)
    files = (tmp_path / "sol.json", tmp_path / "inst.json")
    files[0].write_text(sol.to_json())
    files[1].write_text(inst.to_json())
    for to in ["galvatron", "megatron", "torchtitan"]:
        theirs = cli("export", *files, "--to", to).stdout
        assert pipeplan.export(sol, inst, to) == theirs
        assert pipeplan.export(sol.to_dict(), inst, to) == theirs
    # Galvatron's config read back and exported again: the same file, extras included.
    config = tmp_path / "galvatron.json"
    config.write_text(pipeplan.export(sol, inst, "galvatron"))
    assert pipeplan.export(config, inst, "galvatron", plan_from="galvatron") == config.read_text()
    # A runtime that cannot run the plan: the CLI's reasons and nearest plan, nothing returned.
    out = cli("export", *files, "--to", "pipedream", ok=False)
    assert out.returncode == 2
    with pytest.raises(pipeplan.UnsupportedError, match="nearest plan it runs") as refused:
        pipeplan.export(sol, inst, "pipedream")
    assert out.stderr.strip() == f"error: {files[0]}: {refused.value}"
    with pytest.raises(pipeplan.InstanceError, match="unknown export format"):
        pipeplan.export(sol, inst, "jax")
    with pytest.raises(TypeError, match="plan_from"):
        pipeplan.export(sol, inst, "megatron", repair_layers=True)


def test_export_says_once_what_galvatron_spends_beyond_the_evaluator(
    cli, galvatron_data, tmp_path
):
    # The engine's plan at ddp over 4 chunks, recorded with async_grad_reduce off.
    golden = ROOT / "references" / "galvatron" / "fine_h_swin_chunk4_ddp_nonconsec.json"
    path = tmp_path / "swin.json"
    cli("import", "--from", "galvatron", "--config", golden, "--data-root", galvatron_data,
        "-o", path)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(json.loads(golden.read_text())["result"]["output_config"]))
    out = cli("export", "--plan-from", "galvatron", cfg, path, "--to", "galvatron")
    note = out.stderr.strip()
    assert note.startswith(f"note: {cfg}: Galvatron's runtime with async_grad_reduce off"), note
    assert "after each of the 4 micro-batches" in note
    with pytest.warns(UserWarning) as told:
        text = pipeplan.export(cfg, pipeplan.Instance.load(path), "galvatron",
                               plan_from="galvatron")
    assert text == out.stdout
    assert [str(w.message) for w in told] == [note.split(": ", 1)[1]]


def test_export_warns_as_the_cli_when_the_plan_does_not_fit(cli, tmp_path):
    path = ROOT / "instances" / "bert-large-s512-b8-8gpu-8gib.json"
    inst = pipeplan.Instance.load(path)
    sol = pipeplan.solve(inst, "uniform")
    (tmp_path / "sol.json").write_text(sol.to_json())
    out = cli("export", tmp_path / "sol.json", path, "--to", "megatron")
    warning = out.stderr.strip()
    assert warning.startswith(f"warning: {tmp_path / 'sol.json'}: the evaluator says this plan")
    with pytest.warns(UserWarning) as told:
        assert pipeplan.export(sol, inst, "megatron") == out.stdout
    assert [str(w.message) for w in told] == [warning.split(": ", 2)[2]]
    assert "does not fit: GPU " in warning
    # A plan that fits: no warning from either.
    fits = pipeplan.solve(inst, "balanced-memory")
    assert fits.evaluated["fits"]
    (tmp_path / "fits.json").write_text(fits.to_json())
    out = cli("export", tmp_path / "fits.json", path, "--to", "megatron")
    assert out.stderr == ""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pipeplan.export(fits, inst, "megatron") == out.stdout


def test_a_chart_refuses_what_it_cannot_draw_by_field():
    inst = pipeplan.Instance.load(ROOT / "instances" / "t5-512-4-s512-b8-8gpu-8gib.json")
    sol = pipeplan.solve(inst, "madpipe", time_limit=30).to_dict()
    sol["claimed"]["peak_memory"][2] = -1.0
    with pytest.raises(pipeplan.InstanceError, match=r"claimed.peak_memory\[2\]: -1 B is not"):
        pipeplan.plan_chart(sol, inst)
    sol["claimed"]["peak_memory"][2] = 1.0
    sol["plan"]["schedule"]["pattern"]["ops"][3]["shift"] = 2**32 - 1
    with pytest.raises(pipeplan.InstanceError, match=r"ops\[3\].shift: the timeline would"):
        pipeplan.plan_chart(sol, inst)
    with pytest.raises(pipeplan.InstanceError, match=r"ops\[3\].shift: the timeline would"):
        pipeplan.trace(sol, inst)


def test_export_of_a_runtimes_plan_file_is_the_clis(cli, sailor_root, tmp_path):
    config, run, gh200 = _opt350_n4_d2(sailor_root)
    (tmp_path / "gh200.json").write_text(gh200.to_json())
    theirs = cli(
        "export", "--plan-from", "sailor", run, tmp_path / "gh200.json", "--to", "megatron"
    ).stdout
    ours = pipeplan.export(run, gh200, "megatron", plan_from="sailor")
    assert ours == theirs and "--pipeline-model-parallel-size 2" in ours
