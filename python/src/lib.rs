//! `pipeplan._native`: the Python bindings of pipeplan's crates. The `pipeplan` package
//! (`python/pipeplan/__init__.py`) wraps these functions in its public API; results cross the
//! boundary as the library's own JSON (the `--json` output of the CLI), which Python parses.
//!
//! Every call that solves runs on a worker thread while the calling thread waits without the GIL
//! (`wait_interruptibly`): other Python threads run meanwhile, and Ctrl-C (checked every
//! `SIGNAL_POLL`) raises the solves' interruption flag, waits for them to stop and re-raises
//! `KeyboardInterrupt`. A panic of the worker becomes `pipeplan.SolverError`; nothing panics
//! across the boundary.

use pipeplan_charts::parity;
use pipeplan_formulations::calibration::{Calibration, CalibrationFile};
use pipeplan_formulations::evaluate::evaluate as judge;
use pipeplan_formulations::generate::{self, Device, GenerateOptions, Optimizer};
use pipeplan_formulations::import::request::unemulated_arguments;
use pipeplan_formulations::import::sailor::report::gather;
use pipeplan_formulations::import::sailor::runs::RunOptions;
use pipeplan_formulations::import::{ClusterSpec, ImportRequest, Source};
use pipeplan_formulations::instance::{Precision, ScheduleKind};
use pipeplan_formulations::plan_from::PlanFormat;
use pipeplan_formulations::{InputError, Instance, Plan};
use pipeplan_solvers::algorithm::{parse_time_limit, Algorithm, SolveError, SolveOptions};
use pipeplan_solvers::harness::{self, Interrupt, Record};
use pipeplan_solvers::registry;
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// How often a waiting call looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The exception class `name` of `pipeplan._errors` carrying `message`.
fn error(py: Python<'_>, name: &str, message: String) -> PyErr {
    let class = py
        .import("pipeplan._errors")
        .and_then(|m| m.getattr(name))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, message),
        Err(e) => e,
    }
}

/// Bad input: the CLI's exit code 2, `pipeplan.InstanceError` (a `ValueError`).
fn input_error(py: Python<'_>, e: &InputError) -> PyErr {
    error(py, "InstanceError", e.to_string())
}

/// A failed solve as the exception the CLI's exit code stands for, with the CLI's message.
fn solve_error(py: Python<'_>, e: SolveError) -> PyErr {
    let name = match e {
        SolveError::Input(_) => "InstanceError",
        SolveError::Unsupported(_) => "UnsupportedError",
        SolveError::Infeasible(_) => "InfeasibleError",
        SolveError::TimeLimit(_) => "TimeLimitError",
        // Only a raised interruption flag ends a solve so, i.e. Ctrl-C.
        SolveError::Interrupted => {
            return pyo3::exceptions::PyKeyboardInterrupt::new_err(e.to_string())
        }
        SolveError::Solver(_) => "SolverError",
    };
    error(py, name, e.to_string())
}

/// Runs `work` on a worker thread and waits for it without the GIL, polling for signals. On
/// Ctrl-C (any exception of `check_signals`) it raises `flag`, waits for `work` to return and
/// re-raises the exception.
fn wait_interruptibly<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&Interrupt) -> T + Send,
) -> PyResult<T> {
    let flag = Interrupt::default();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        // Waiting happens in closures that must be `Send` (`py.detach`): a `&Receiver` is not,
        // a `&Mutex<Receiver>` is. Only this thread locks it.
        let rx = Mutex::new(rx);
        let recv = |timeout: Option<Duration>| {
            let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
            match timeout {
                Some(t) => rx.recv_timeout(t),
                None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            }
        };
        let flag_ref = &flag;
        scope.spawn(move || {
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(flag_ref)));
            // The receiver waits until this arrives; it cannot be gone.
            let _ = tx.send(out);
        });
        let out = loop {
            match py.detach(|| recv(Some(SIGNAL_POLL))) {
                Ok(out) => break out,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(signal) = py.check_signals() {
                        flag.store(true, Ordering::Relaxed);
                        // The solves stop at their next deadline check; their result is dropped.
                        let _ = py.detach(|| recv(None));
                        return Err(signal);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(error(
                        py,
                        "SolverError",
                        "the solver thread vanished".into(),
                    ))
                }
            }
        };
        out.map_err(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            error(py, "SolverError", format!("internal error: {what}"))
        })
    })
}

/// The constants of a calibration file (written by `pipeplan calibrate`); a bad file is an
/// `InstanceError` naming it.
fn calibration_file(py: Python<'_>, path: &std::path::Path) -> PyResult<Calibration> {
    CalibrationFile::from_path(path)
        .map(|f| f.constants)
        .map_err(|e| input_error(py, &e))
}

/// A pipeplan instance (format `pipeplan/instance@1`): a layer chain, a cluster and training
/// settings. Always valid: every constructor validates, and instances are immutable.
#[pyclass(module = "pipeplan", name = "Instance", frozen)]
struct PyInstance {
    inner: Instance,
}

#[pymethods]
impl PyInstance {
    /// Reads and validates an instance file (JSON).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyInstance> {
        Instance::from_path(&path)
            .map(|inner| PyInstance { inner })
            .map_err(|e| input_error(py, &e))
    }

    /// Parses and validates an instance from JSON text.
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<PyInstance> {
        Instance::from_json(text)
            .map(|inner| PyInstance { inner })
            .map_err(|e| input_error(py, &e))
    }

    /// Builds and validates an instance from a dict of the JSON format (as `to_dict` returns).
    #[staticmethod]
    fn from_dict(py: Python<'_>, d: &Bound<'_, PyAny>) -> PyResult<PyInstance> {
        let text: String = py.import("json")?.call_method1("dumps", (d,))?.extract()?;
        Self::from_json(py, &text)
    }

    /// The same instance under the constants of a calibration file (written by `pipeplan
    /// calibrate`, `docs/calibration.md`): algorithms plan, and the evaluator judges, with them.
    fn calibrated(&self, py: Python<'_>, path: PathBuf) -> PyResult<PyInstance> {
        Ok(PyInstance {
            inner: self.inner.calibrated(&calibration_file(py, &path)?),
        })
    }

    /// The instance as JSON text (the file format).
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// The instance as a dict of the JSON format.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?
            .call_method1("loads", (self.inner.to_json(),))
    }

    /// Checks every field again (as `pipeplan validate` does); raises `InstanceError` naming the
    /// offending field. Instances are validated when made, so this passes for every instance
    /// this class holds; it returns `{"name", "layers", "gpus"}`, the CLI's verdict.
    fn validate<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.inner.validate().map_err(|e| input_error(py, &e))?;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("name", &self.inner.name)?;
        d.set_item("layers", self.inner.num_layers())?;
        d.set_item("gpus", self.inner.cluster.gpus)?;
        Ok(d.into_any())
    }

    /// The instance's name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Number of layers of the chain.
    #[getter]
    fn layers(&self) -> usize {
        self.inner.num_layers()
    }

    /// Number of GPUs of the cluster.
    #[getter]
    fn gpus(&self) -> u32 {
        self.inner.cluster.gpus
    }

    /// Memory per GPU (bytes).
    #[getter]
    fn memory(&self) -> f64 {
        self.inner.cluster.memory
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyInstance>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "<pipeplan.Instance {:?}: {} layers, {} GPUs x {}>",
            self.inner.name,
            self.inner.num_layers(),
            self.inner.cluster.gpus,
            pipeplan_formulations::units::fmt_bytes(self.inner.cluster.memory)
        )
    }

    /// Pickling (multiprocessing, joblib): through the JSON format.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let ctor = py.get_type::<PyInstance>().getattr("from_json")?;
        Ok((ctor, (slf.get().inner.to_json(),)))
    }
}

/// A time limit: seconds, a time with a unit (`"500ms"`) or `None` (no limit).
fn time_limit(py: Python<'_>, limit: &Bound<'_, PyAny>) -> PyResult<Option<Duration>> {
    if limit.is_none() {
        return Ok(None);
    }
    let text = match limit.extract::<f64>() {
        Ok(secs) => secs.to_string(),
        Err(_) => limit.str()?.to_string(),
    };
    parse_time_limit(&text).map_err(|m| input_error(py, &InputError::field("--time-limit", m)))
}

fn options(
    py: Python<'_>,
    limit: &Bound<'_, PyAny>,
    seed: u64,
    stages: Option<usize>,
    settings: BTreeMap<String, String>,
) -> PyResult<SolveOptions> {
    Ok(SolveOptions {
        time_limit: time_limit(py, limit)?,
        seed,
        stages,
        params: settings,
    })
}

/// The algorithm called `name`, with the CLI's message for an unknown one.
fn algorithm(py: Python<'_>, name: &str) -> PyResult<Box<dyn Algorithm>> {
    registry::by_name(name).ok_or_else(|| {
        input_error(
            py,
            &InputError::field(
                "--algo",
                format!(
                    "unknown algorithm {name:?}; known: {}",
                    registry::names().join(", ")
                ),
            ),
        )
    })
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("results serialize to JSON")
}

/// Solves `instance` with `algorithm` (as `pipeplan solve --json`); returns the solution's JSON
/// and its CSV record's JSON.
#[pyfunction]
#[pyo3(signature = (instance, algorithm_name, time_limit, seed, stages, settings))]
fn solve(
    py: Python<'_>,
    instance: &Bound<'_, PyInstance>,
    algorithm_name: &str,
    time_limit: &Bound<'_, PyAny>,
    seed: u64,
    stages: Option<usize>,
    settings: BTreeMap<String, String>,
) -> PyResult<(String, String)> {
    let algo = algorithm(py, algorithm_name)?;
    let inst = &instance.get().inner;
    let opts = options(py, time_limit, seed, stages, settings)?;
    match harness::support(algo.as_ref(), inst, &opts) {
        Err(SolveError::Unsupported(u)) => {
            return Err(error(
                py,
                "UnsupportedError",
                harness::unsupported_message(algo.as_ref(), inst, &u),
            ))
        }
        Err(e) => return Err(solve_error(py, e)),
        Ok(()) => {}
    }
    let result = wait_interruptibly(py, |flag| {
        harness::run_interruptible(algo.as_ref(), inst, &opts, Some(flag))
    })?;
    let sol = result.map_err(|e| solve_error(py, e))?;
    Ok((json(&sol), json(&Record::of_solution(&sol))))
}

/// Runs `algorithms` (default: all) on every instance (as `pipeplan compare`); returns the
/// comparison's JSON (`--json`) and its CSV records' JSON (`--csv`).
#[pyfunction]
#[pyo3(signature = (instances, algorithms, time_limit, seed, stages, settings))]
fn compare(
    py: Python<'_>,
    instances: Vec<Bound<'_, PyInstance>>,
    algorithms: Option<Vec<String>>,
    time_limit: &Bound<'_, PyAny>,
    seed: u64,
    stages: Option<usize>,
    settings: BTreeMap<String, String>,
) -> PyResult<(String, String)> {
    let insts: Vec<Instance> = instances.iter().map(|i| i.get().inner.clone()).collect();
    let algos: Vec<Box<dyn Algorithm>> = match algorithms {
        None => registry::all(),
        Some(names) => names
            .iter()
            .map(|n| algorithm(py, n.trim()))
            .collect::<PyResult<_>>()?,
    };
    let opts = options(py, time_limit, seed, stages, settings)?;
    let rows = wait_interruptibly(py, |flag| {
        harness::compare_interruptible(&algos, &insts, &opts, Some(flag))
    })?;
    let records: Vec<Record> = rows.iter().map(Record::of_row).collect();
    Ok((json(&rows), json(&records)))
}

/// Judges a plan (JSON text) on `instance` with the neutral evaluator (as `pipeplan evaluate
/// --json`); returns the evaluation's JSON and its CSV record's JSON.
#[pyfunction]
fn evaluate(
    py: Python<'_>,
    plan: &str,
    instance: &Bound<'_, PyInstance>,
) -> PyResult<(String, String)> {
    let inst = &instance.get().inner;
    let plan = Plan::from_json(plan).map_err(|e| input_error(py, &e))?;
    let e = judge(inst, &plan).map_err(|e| input_error(py, &e))?;
    Ok((json(&e), json(&Record::of_evaluation(inst, &plan, &e))))
}

/// Judges a runtime's plan file (`format`: `galvatron`, `pipedream` or `sailor`) on `instance`
/// (as `pipeplan evaluate --plan-from FORMAT --json`); returns the evaluation's JSON, its CSV
/// record's JSON, and what to tell the user (what was mended, then the notes).
#[pyfunction]
#[pyo3(signature = (format, path, modules, repair_layers, instance))]
fn evaluate_file(
    py: Python<'_>,
    format: &str,
    path: PathBuf,
    modules: Option<PathBuf>,
    repair_layers: bool,
    instance: &Bound<'_, PyInstance>,
) -> PyResult<(String, String, Vec<String>)> {
    let inst = &instance.get().inner;
    let format: PlanFormat = format.parse().map_err(|e| error(py, "InstanceError", e))?;
    let noted = format
        .read_path(&path, modules.as_deref(), repair_layers, inst)
        .map_err(|e| input_error(py, &e))?;
    let plan = &noted.plan.plan;
    let e = judge(inst, plan).map_err(|e| input_error(py, &e))?;
    let told = noted.messages(&path, "repair_layers");
    Ok((json(&e), json(&Record::of_evaluation(inst, plan, &e)), told))
}

/// A judged plan's chart as SVG text (as `pipeplan plot` draws it): the simulator's timeline
/// over `periods` periods above every GPU's memory, the claimed peaks as ticks when given.
#[pyfunction]
#[pyo3(signature = (plan, instance, title, claimed_peak_memory, periods))]
fn plan_svg(
    py: Python<'_>,
    plan: &str,
    instance: &Bound<'_, PyInstance>,
    title: &str,
    claimed_peak_memory: Option<Vec<f64>>,
    periods: usize,
) -> PyResult<String> {
    let inst = &instance.get().inner;
    let plan = Plan::from_json(plan).map_err(|e| input_error(py, &e))?;
    let ev = judge(inst, &plan).map_err(|e| input_error(py, &e))?;
    let claimed = claimed_peak_memory.as_deref();
    pipeplan_charts::plan_chart(title, inst, &plan, &ev, claimed, periods)
        .map_err(|e| error(py, "InstanceError", e))
}

/// Every measured run (Sailor plan files) under `paths` judged by the evaluator, under the
/// calibration file when given (as `pipeplan accuracy --csv`); returns the records' JSON and, with
/// `chart`, the runs drawn as `accuracy --plot` draws them (SVG text).
#[pyfunction]
#[pyo3(signature = (paths, calibration, sailor_root, model, repair_layers, chart))]
fn accuracy(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    calibration: Option<PathBuf>,
    sailor_root: Option<PathBuf>,
    model: Option<String>,
    repair_layers: bool,
    chart: bool,
) -> PyResult<(String, Option<String>)> {
    let cal = match &calibration {
        Some(p) => calibration_file(py, p)?,
        None => Calibration::IDENTITY,
    };
    let opts = RunOptions {
        root: sailor_root,
        model,
        repair_layers,
    };
    let gathered = gather(&paths, &opts).map_err(|e| input_error(py, &e))?;
    let scores = gathered.scores(&cal).map_err(|e| input_error(py, &e))?;
    let svg = if chart {
        let title = parity::title(calibration.as_deref(), &cal, scores.len());
        let svg = parity::parity_svg(&title, &scores, parity::BAND)
            .map_err(|e| error(py, "InstanceError", e))?;
        Some(svg)
    } else {
        None
    };
    Ok((json(&gathered.records(&scores)), svg))
}

/// The evaluator's constants fitted to every measured run under `paths` (as `pipeplan calibrate`);
/// returns the calibration file's JSON. The GIL is released while fitting.
#[pyfunction]
#[pyo3(signature = (paths, p2p_overlap, sailor_root, model, repair_layers))]
fn calibrate(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    p2p_overlap: f64,
    sailor_root: Option<PathBuf>,
    model: Option<String>,
    repair_layers: bool,
) -> PyResult<String> {
    let opts = RunOptions {
        root: sailor_root,
        model,
        repair_layers,
    };
    let options = pipeplan_solvers::calibrate::Options { p2p_overlap };
    let fitted = py
        .detach(|| {
            let gathered = gather(&paths, &opts)?;
            pipeplan_solvers::calibrate::calibrate(&gathered, &options)
        })
        .map_err(|e| input_error(py, &e))?;
    Ok(fitted.file.to_json())
}

/// Every algorithm: name, family, exact, description (as `pipeplan algorithms --json`).
#[pyfunction]
fn algorithms() -> String {
    #[derive(serde::Serialize)]
    struct Entry {
        name: &'static str,
        family: String,
        exact: bool,
        description: &'static str,
    }
    let entries: Vec<Entry> = registry::all()
        .iter()
        .map(|a| Entry {
            name: a.name(),
            family: a.family().to_string(),
            exact: a.exact(),
            description: a.description(),
        })
        .collect();
    json(&entries)
}

/// Every algorithm's settings (as `pipeplan algorithms --params --json`).
#[pyfunction]
fn settings() -> String {
    let entries = registry::settings();
    json(&entries)
}

/// The generator's models: name, description, default micro-batch, image size, sequence length.
#[pyfunction]
fn models() -> String {
    let entries: Vec<serde_json::Value> = generate::models()
        .iter()
        .map(|m| {
            serde_json::json!({
                "name": m.name,
                "description": m.description,
                "batch": m.default_batch,
                "image_size": m.default_image_size,
                "seq_len": m.default_seq_len,
            })
        })
        .collect();
    json(&entries)
}

/// A value of the instance format's enums (`"async"`, `"fp32"`) by its JSON name.
fn format_value<T: serde::de::DeserializeOwned>(
    py: Python<'_>,
    field: &str,
    value: Option<String>,
) -> PyResult<Option<T>> {
    value
        .map(|v| {
            serde_json::from_value(serde_json::Value::String(v.clone())).map_err(|_| {
                input_error(
                    py,
                    &InputError::field(field, format!("unknown value {v:?}")),
                )
            })
        })
        .transpose()
}

/// The cluster keywords as the CLI's flags (a dict with every key).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Cluster {
    gpus: Option<u32>,
    memory: Option<String>,
    bandwidth: Option<String>,
    gpus_per_node: Option<u32>,
    inter_node_bandwidth: Option<String>,
    pcie: Option<String>,
}

impl From<Cluster> for ClusterSpec {
    fn from(c: Cluster) -> ClusterSpec {
        ClusterSpec {
            gpus: c.gpus,
            memory: c.memory,
            bandwidth: c.bandwidth,
            gpus_per_node: c.gpus_per_node,
            inter_node_bandwidth: c.inter_node_bandwidth,
            pcie: c.pcie,
        }
    }
}

/// Generates an instance from an analytic model (as `pipeplan generate`). Keywords are the
/// CLI's flags; `cluster` is a dict of the cluster flags (quantities as text).
#[pyfunction]
#[pyo3(signature = (model, cluster, batch, image_size, seq_len, blocks, precision, optimizer,
                    device, tflops, efficiency, schedule, micro_batches, name, note))]
#[allow(clippy::too_many_arguments)]
fn generate_instance(
    py: Python<'_>,
    model: &str,
    cluster: Cluster,
    batch: Option<u32>,
    image_size: Option<u32>,
    seq_len: Option<u32>,
    blocks: Option<u32>,
    precision: Option<String>,
    optimizer: Option<String>,
    device: &str,
    tflops: Option<f64>,
    efficiency: Option<f64>,
    schedule: Option<String>,
    micro_batches: Option<u32>,
    name: Option<String>,
    note: Option<String>,
) -> PyResult<PyInstance> {
    let bad = |field: &str, v: &str, expected: &str| {
        input_error(
            py,
            &InputError::field(field, format!("unknown value {v:?}; expected {expected}")),
        )
    };
    let spec = ClusterSpec::from(cluster);
    let mut o = GenerateOptions::new(model, spec.cluster().map_err(|e| input_error(py, &e))?);
    if let Some(b) = batch {
        o.batch = b;
    }
    o.image_size = image_size;
    o.seq_len = seq_len;
    o.blocks = blocks;
    o.precision = format_value::<Precision>(py, "--precision", precision)?;
    o.optimizer = match optimizer.as_deref() {
        None => None,
        Some("sgd") => Some(Optimizer::Sgd),
        Some("momentum") => Some(Optimizer::Momentum),
        Some("adam") => Some(Optimizer::Adam),
        Some(v) => return Err(bad("--optimizer", v, "sgd, momentum or adam")),
    };
    o.device = match device {
        "v100" => Device::V100,
        "a100" => Device::A100,
        v => return Err(bad("--device", v, "v100 or a100")),
    };
    o.device_tflops = tflops;
    o.efficiency = efficiency;
    o.schedule = format_value::<ScheduleKind>(py, "--schedule", schedule)?;
    o.micro_batches = micro_batches;
    o.name = name;
    o.note = note;
    generate::generate(&o)
        .map(|inner| PyInstance { inner })
        .map_err(|e| input_error(py, &e))
}

/// Imports a profile of another tool (as `pipeplan import`); returns the instance and the warning
/// the CLI prints about engine arguments the import does not emulate, if any.
#[pyfunction]
#[pyo3(signature = (source, path, cluster, cluster_from_profile, name, batch, time_unit_ms,
                    data_root, gpu_type, nodes, schedule, micro_batches, optimizer_state_factor))]
#[allow(clippy::too_many_arguments)]
fn import_profile(
    py: Python<'_>,
    source: &str,
    path: PathBuf,
    cluster: Cluster,
    cluster_from_profile: bool,
    name: Option<String>,
    batch: Option<u32>,
    time_unit_ms: Option<f64>,
    data_root: Option<PathBuf>,
    gpu_type: Option<String>,
    nodes: Option<u32>,
    schedule: Option<String>,
    micro_batches: Option<u32>,
    optimizer_state_factor: Option<f64>,
) -> PyResult<(PyInstance, Option<String>)> {
    let source: Source = source.parse().map_err(|e| input_error(py, &e))?;
    let mut req = ImportRequest::new(source, path);
    req.cluster = cluster.into();
    req.cluster_from_profile = cluster_from_profile;
    req.name = name;
    req.batch = batch;
    req.time_unit_ms = time_unit_ms;
    req.data_root = data_root;
    req.gpu_type = gpu_type;
    req.nodes = nodes;
    req.schedule = format_value::<ScheduleKind>(py, "--schedule", schedule)?;
    req.micro_batches = micro_batches;
    req.optimizer_state_factor = optimizer_state_factor;
    let inst = req.import().map_err(|e| input_error(py, &e))?;
    let warning = unemulated_arguments(&inst).map(|note| format!("{}: {note}", req.file.display()));
    Ok((PyInstance { inner: inst }, warning))
}

#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyInstance>()?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate_file, m)?)?;
    m.add_function(wrap_pyfunction!(plan_svg, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(settings, m)?)?;
    m.add_function(wrap_pyfunction!(models, m)?)?;
    m.add_function(wrap_pyfunction!(generate_instance, m)?)?;
    m.add_function(wrap_pyfunction!(import_profile, m)?)?;
    Ok(())
}
