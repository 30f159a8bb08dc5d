//! `pipeplan import --from galvatron --config FILE --data-root DIR`.

use super::{write_or_print, Failure};
use crate::cli::ImportArgs;
use clap::Args;
use pipeplan_formulations::galvatron::import::import_file;
use std::path::PathBuf;

/// Options of `import --from galvatron`.
#[derive(Debug, Args)]
pub struct GalvatronImportArgs {
    /// Galvatron: a JSON file holding a `config` object (engine arguments, profile and hardware
    /// file paths relative to `--data-root`), e.g. a golden file.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Galvatron: the folder the config's paths are relative to.
    #[arg(long)]
    pub data_root: Option<PathBuf>,
}

/// Runs `import --from galvatron`: the cluster, schedule and batch come from the config (the
/// engine's arguments), so the cluster flags of other formats are not used here.
pub fn import(a: ImportArgs) -> Result<(), Failure> {
    if a.file.is_some() {
        return Err(Failure::input(
            "import --from galvatron: give --config FILE (and --data-root DIR), not a profile file",
        ));
    }
    let Some(config) = a.galvatron.config.as_deref() else {
        return Err(Failure::input(
            "import --from galvatron: --config FILE is required (a JSON file with a `config` object)",
        ));
    };
    let root = match a.galvatron.data_root.clone() {
        Some(r) => r,
        None => config.parent().map(PathBuf::from).unwrap_or_default(),
    };
    let mut inst = import_file(config, &root)?;
    if let Some(n) = a.name {
        inst.name = n;
    }
    // Say it where the user looks, not only in the instance's `source`.
    if let Some(note) = inst
        .source
        .split(". ")
        .find(|s| s.starts_with("engine arguments not emulated"))
    {
        eprintln!(
            "warning: {}: {}",
            config.display(),
            note.trim_end_matches('.')
        );
    }
    write_or_print(a.output.as_deref(), &inst.to_json())?;
    if let Some(p) = a.output.as_deref() {
        eprintln!(
            "wrote {}: {} layers, {} GPUs (layer_types extension)",
            p.display(),
            inst.num_layers(),
            inst.cluster.gpus
        );
    }
    Ok(())
}
