//! `pipeplan.Instance`: an instance file, validated and immutable.

use crate::errors::input_error;
use pipeplan_formulations::calibration::CalibrationFile;
use pipeplan_formulations::Instance;
use pyo3::prelude::*;
use std::path::PathBuf;

/// A calibration file (written by `pipeplan calibrate`); a bad file is an `InstanceError`
/// naming it.
pub(crate) fn calibration_file(
    py: Python<'_>,
    path: &std::path::Path,
) -> PyResult<CalibrationFile> {
    CalibrationFile::from_path(path).map_err(|e| input_error(py, &e))
}

/// A `UserWarning` when `file` (read from `path`) was fitted to runs on other GPU models than
/// the one `inst` was profiled on (as the CLI warns).
pub(crate) fn warn_if_foreign(
    py: Python<'_>,
    path: &std::path::Path,
    file: &CalibrationFile,
    inst: &Instance,
) -> PyResult<()> {
    match file.foreign_gpu(inst) {
        Some(why) => {
            let message =
                std::ffi::CString::new(format!("{}: {why}", path.display())).unwrap_or_default();
            PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                &message,
                1,
            )
        }
        None => Ok(()),
    }
}

/// A pipeplan instance (format `pipeplan/instance@1`): a layer chain, a cluster and training
/// settings. Always valid: every constructor validates, and instances are immutable.
#[pyclass(module = "pipeplan", name = "Instance", frozen)]
pub(crate) struct PyInstance {
    pub(crate) inner: Instance,
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
    /// A `UserWarning` when the file was fitted to runs on other GPU models than the one this
    /// instance was profiled on (`cluster.gpu`).
    fn calibrated(&self, py: Python<'_>, path: PathBuf) -> PyResult<PyInstance> {
        let file = calibration_file(py, &path)?;
        warn_if_foreign(py, &path, &file, &self.inner)?;
        Ok(PyInstance {
            inner: self.inner.calibrated(&file.constants),
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
