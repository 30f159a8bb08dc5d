//! Links the `pipeplan` binary as a position-dependent executable: its ~40,000 relative
//! relocations then need no processing at start-up, which is most of a short run's time
//! (BENCHMARKS.md, "PipeDream's optimizer"). Libraries (the Python extension) are unaffected.

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
