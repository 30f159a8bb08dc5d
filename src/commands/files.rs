//! `validate`, `import`, `generate` and `schema`: the commands that read or write instance files.

use super::cluster::schedule;
use super::{write_or_print, Failure, Format};
use crate::cli::{
    DeviceArg, GenerateArgs, ImportArgs, OptimizerArg, PrecisionArg, ProfileArgs, SchemaArgs,
    SchemaKind, SourceArg, ValidateArgs,
};
use crate::report;
use crate::table::Table;
use pipeplan_formulations::generate::{self, Device, GenerateOptions, Optimizer};
use pipeplan_formulations::import::request::unemulated_arguments;
use pipeplan_formulations::import::{ImportRequest, Source};
use pipeplan_formulations::instance::{self, Precision};
use pipeplan_formulations::units::fmt_bytes;
use pipeplan_formulations::{Instance, Plan};
use pipeplan_solvers::algorithm::Solution;

/// `pipeplan validate`: every file is checked; the exit code is 2 if any is invalid.
pub fn validate(a: ValidateArgs) -> Result<(), Failure> {
    #[derive(serde::Serialize)]
    struct Verdict {
        file: String,
        valid: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        layers: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        gpus: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    }
    let verdicts: Vec<Verdict> = a
        .files
        .iter()
        .map(|p| match super::read_instance(p) {
            Ok(i) => Verdict {
                file: p.display().to_string(),
                valid: true,
                name: Some(i.name.clone()),
                layers: Some(i.num_layers()),
                gpus: Some(i.cluster.gpus),
                error: None,
            },
            Err(e) => Verdict {
                file: p.display().to_string(),
                valid: false,
                name: None,
                layers: None,
                gpus: None,
                error: Some(e.to_string()),
            },
        })
        .collect();
    let text = match a.out.format() {
        Format::Json => report::json(&verdicts),
        Format::Csv => report::csv(&verdicts),
        Format::Table => verdicts
            .iter()
            .map(|v| match &v.error {
                None => format!(
                    "ok       {}: {} ({} layers, {} GPUs)\n",
                    v.file,
                    v.name.as_deref().unwrap_or(""),
                    v.layers.unwrap_or(0),
                    v.gpus.unwrap_or(0)
                ),
                Some(e) => format!("invalid  {e}\n"),
            })
            .collect(),
    };
    write_or_print(None, &text)?;
    let bad = verdicts.iter().filter(|v| !v.valid).count();
    if bad == 0 {
        Ok(())
    } else {
        Err(Failure::input(format!(
            "{bad} of {} files invalid",
            verdicts.len()
        )))
    }
}

/// `pipeplan import`.
pub fn import(a: ImportArgs) -> Result<(), Failure> {
    let Some(file) = a.file.clone().or(a.config.clone()) else {
        return Err(Failure::input(
            "import: give the profile file (or --config FILE)",
        ));
    };
    let inst = import_profile(a.from, &file, &a.profile)?;
    write_instance(&inst, a.output.as_deref())
}

/// The instance of a profile file (`import`, `solve --from`); a Galvatron config's arguments
/// that pipeplan does not emulate are also said on standard error.
pub fn import_profile(
    from: SourceArg,
    file: &std::path::Path,
    a: &ProfileArgs,
) -> Result<Instance, Failure> {
    let source = match from {
        SourceArg::Pipedream => Source::PipeDream,
        SourceArg::Piper => Source::Piper,
        SourceArg::DnnPartitioning => Source::DnnPartitioning,
        SourceArg::Galvatron => Source::Galvatron,
        SourceArg::Sailor => Source::Sailor,
    };
    let mut req = ImportRequest::new(source, file);
    req.cluster = a.cluster.spec();
    req.cluster_from_profile = a.cluster_from_profile;
    req.name = a.name.clone();
    req.batch = a.batch;
    req.time_unit_ms = a.time_unit_ms;
    req.data_root = a.data_root.clone();
    req.gpu_type = a.gpu_type.clone();
    req.nodes = a.nodes;
    req.schedule = a.schedule.map(schedule);
    req.micro_batches = a.micro_batches;
    req.optimizer_state_factor = a.optimizer_state_factor;
    let inst = req.import()?;
    // Say it where the user looks, not only in the instance's `source`.
    if let Some(note) = unemulated_arguments(&inst) {
        eprintln!("warning: {}: {note}", file.display());
    }
    Ok(inst)
}

fn write_instance(inst: &Instance, out: Option<&std::path::Path>) -> Result<(), Failure> {
    write_or_print(out, &inst.to_json())?;
    if let Some(p) = out.filter(|p| *p != std::path::Path::new("-")) {
        eprintln!(
            "wrote {}: {} layers, {} {} x {}",
            p.display(),
            inst.num_layers(),
            inst.cluster.gpus,
            crate::report::gpus_word(inst),
            fmt_bytes(inst.cluster.memory)
        );
    }
    Ok(())
}

/// `pipeplan generate`.
pub fn generate(a: GenerateArgs) -> Result<(), Failure> {
    if a.list {
        let mut t = Table::new(&["model", "input", "micro-batch", "description"], &[2]);
        for m in generate::models() {
            let input = match (m.default_image_size, m.default_seq_len) {
                (Some(px), _) => format!("{px} px"),
                (_, Some(s)) => format!("{s} tokens"),
                _ => String::new(),
            };
            t.row(vec![
                m.name.into(),
                input,
                m.default_batch.to_string(),
                m.description.into(),
            ]);
        }
        return write_or_print(None, &t.render());
    }
    let model = a.model.as_deref().unwrap_or_default();
    let mut o = GenerateOptions::new(model, a.cluster.spec().cluster()?);
    if let Some(b) = a.batch {
        o.batch = b;
    }
    o.image_size = a.image_size;
    o.seq_len = a.seq_len;
    o.blocks = a.blocks;
    o.precision = a.precision.map(|p| match p {
        PrecisionArg::Fp32 => Precision::Fp32,
        PrecisionArg::Fp16 => Precision::Fp16,
        PrecisionArg::Bf16 => Precision::Bf16,
        PrecisionArg::Mixed => Precision::Mixed,
    });
    o.optimizer = a.optimizer.map(|p| match p {
        OptimizerArg::Sgd => Optimizer::Sgd,
        OptimizerArg::Momentum => Optimizer::Momentum,
        OptimizerArg::Adam => Optimizer::Adam,
    });
    o.device = match a.device {
        DeviceArg::V100 => Device::V100,
        DeviceArg::A100 => Device::A100,
    };
    o.device_tflops = a.tflops;
    o.efficiency = a.efficiency;
    o.schedule = a.schedule.map(schedule);
    o.micro_batches = a.micro_batches;
    o.name = a.name.clone();
    o.note = a.note.clone();
    let inst = generate::generate(&o)?;
    write_instance(&inst, a.output.as_deref())
}

/// The JSON Schema of one of the formats.
pub fn schema_json(kind: SchemaKind) -> String {
    let value = match kind {
        SchemaKind::Instance => instance::json_schema(),
        SchemaKind::Plan => {
            serde_json::to_value(schemars::schema_for!(Plan)).expect("schema serializes")
        }
        SchemaKind::Solution => {
            serde_json::to_value(schemars::schema_for!(Solution)).expect("schema serializes")
        }
    };
    report::json(&value)
}

/// `pipeplan schema`.
pub fn schema(a: SchemaArgs) -> Result<(), Failure> {
    write_or_print(a.output.as_deref(), &schema_json(a.kind))
}
