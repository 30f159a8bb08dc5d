//! `pipeplan import --from galvatron --config FILE --data-root DIR`.

use super::Failure;
use crate::cli::ImportArgs;
use clap::Args;
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

/// Runs `import --from galvatron`.
pub fn import(_a: ImportArgs) -> Result<(), Failure> {
    Err(Failure::input("import --from galvatron: not built yet"))
}
