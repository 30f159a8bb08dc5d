//! The DP's rounding grids and rounds (`--set grid_t`, `grid_m`, `grid_v`, `rounds`).

use crate::settings::{Kind, Param, Settings};

/// Discretization and search settings of MadPipe-DP (paper §5: 101 x 11 x 51 points, K = 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpOptions {
    /// Points of the special GPU's load grid over `[0, U(0,L)]` (`--set grid_t`); 0 = exact.
    pub grid_t: usize,
    /// Points of the special GPU's memory grid over `[0, M]` (`--set grid_m`); 0 = exact.
    pub grid_m: usize,
    /// Points of the delay grid over `[0, U(0,L) + Sum C]` (`--set grid_v`); 0 = exact.
    pub grid_v: usize,
    /// Rounds K of the T^ search (`--set rounds`).
    pub k_rounds: usize,
    /// Longest chain the DP runs on (`--set blocks`): a longer one is merged into at most this
    /// many blocks of consecutive layers first; 0 = never merge.
    pub blocks: usize,
}

impl Default for DpOptions {
    fn default() -> Self {
        DpOptions {
            grid_t: 101,
            grid_m: 11,
            grid_v: 51,
            k_rounds: 10,
            blocks: 128,
        }
    }
}

impl DpOptions {
    /// The settings [`DpOptions::from_settings`] reads.
    pub const PARAMS: [Param; 5] = [
        Param::new(
            "grid_t",
            Kind::Grid,
            "101",
            "points of the special GPU's load grid (0 / exact: no rounding)",
        ),
        Param::new(
            "grid_m",
            Kind::Grid,
            "11",
            "points of the special GPU's memory grid (0 / exact: no rounding)",
        ),
        Param::new(
            "grid_v",
            Kind::Grid,
            "51",
            "points of the delay grid (0 / exact: no rounding)",
        ),
        Param::new(
            "rounds",
            Kind::Count { min: 1 },
            "10",
            "rounds K of the T^ search",
        ),
        Param::new(
            "blocks",
            Kind::Count { min: 0 },
            "128",
            "longest chain the DP runs on: longer ones are merged into this many blocks of \
             consecutive layers (0: never)",
        ),
    ];

    /// No rounding at all (every grid 0): the DP memoizes exact values. Exponential in the worst
    /// case; meant for small chains and tests.
    pub fn exact() -> DpOptions {
        DpOptions {
            grid_t: 0,
            grid_m: 0,
            grid_v: 0,
            ..DpOptions::default()
        }
    }

    /// The grids and rounds of checked settings (declared by [`DpOptions::PARAMS`]).
    pub fn from_settings(s: &Settings) -> DpOptions {
        let d = DpOptions::default();
        let get = |key: &str, default: usize| s.count(key).map_or(default, |n| n as usize);
        DpOptions {
            grid_t: get("grid_t", d.grid_t),
            grid_m: get("grid_m", d.grid_m),
            grid_v: get("grid_v", d.grid_v),
            k_rounds: get("rounds", d.k_rounds),
            blocks: get("blocks", d.blocks),
        }
    }
}
