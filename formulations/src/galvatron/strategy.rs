//! The strategy space: the engine's decision tree over pp, tp, dp, sdp (fsdp), the consecutive-tp
//! flag, activation checkpointing and, under `sp_space tp+sp`, Ulysses sequence parallelism
//! (`generate_strategies` / `generate_dp_tp_pp_sdp`).

use super::settings::Settings;
use std::fmt;

/// One per-layer strategy `[pp, tp, dp, {tp: consec, fsdp, cpt, sp}]` (pp is the model's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Strategy {
    /// Pipeline degree.
    pub pp: u32,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Consecutive tp groups (`Some` only when 1 < tp < world / pp, the engine's `'tp'` key).
    pub consec: Option<bool>,
    /// Sharded data parallelism (`Some` only when dp > 1, the engine's `'fsdp'` key).
    pub fsdp: Option<bool>,
    /// Activation checkpointing.
    pub cpt: bool,
    /// Ulysses sequence parallelism (the engine's `'sp': 1`, only under `sp_space tp+sp` and
    /// tp > 1): the tp group splits each sample's sequence instead of the layer's weights, so
    /// every GPU holds the whole layer and the replicas of the `tp x dp` GPUs share gradients.
    pub sp: bool,
}

impl Strategy {
    /// Whether fsdp (ZeRO-3) is on.
    pub fn sdp(&self) -> bool {
        self.fsdp == Some(true)
    }
    /// The engine's `match_strategy(a, b, except_keys)`: same degrees and same dict entries
    /// apart from the excepted keys (`"fsdp"`, `"cpt"`; `sp` always compared).
    pub fn matches_except(&self, o: &Strategy, fsdp: bool, cpt: bool) -> bool {
        self.sp == o.sp && self.matches_except_sp(o, fsdp, cpt)
    }
    /// [`Strategy::matches_except`] with `"sp"` excepted too.
    pub fn matches_except_sp(&self, o: &Strategy, fsdp: bool, cpt: bool) -> bool {
        (self.pp, self.tp, self.dp) == (o.pp, o.tp, o.dp)
            && self.consec == o.consec
            && (fsdp || self.fsdp == o.fsdp)
            && (cpt || self.cpt == o.cpt)
    }
    /// The group its data-parallel state is shared over: `tp x dp` under Ulysses, else `dp`
    /// (the engine's `sdp_size`).
    pub fn sdp_size(&self) -> u32 {
        if self.sp {
            self.tp * self.dp
        } else {
            self.dp
        }
    }
}

/// The engine's name of a strategy (`form_strategy`): `pp-tp-dp`, `f` after dp for fsdp, `*` after
/// tp for a consecutive tp group and after dp for a strided one, then `-c` for checkpointing and
/// `-sp` for Ulysses: `1-2*-4`, `1-2-4f*-c`, `2-4-1-sp`.
impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let star = |consec: bool| if self.consec == Some(consec) { "*" } else { "" };
        let fsdp = if self.sdp() { "f" } else { "" };
        let (pp, tp, dp) = (self.pp, self.tp, self.dp);
        write!(f, "{pp}-{tp}{}-{dp}{fsdp}{}", star(true), star(false))?;
        if self.cpt {
            f.write_str("-c")?;
        }
        if self.sp {
            f.write_str("-sp")?;
        }
        Ok(())
    }
}

fn push_degrees(out: &mut Vec<Strategy>, pp: u32, tp: u32, gpus: u32, sdp: bool) {
    let dp = gpus / (pp * tp);
    let base = Strategy {
        pp,
        tp,
        dp,
        consec: None,
        fsdp: None,
        cpt: false,
        sp: false,
    };
    if tp == 1 || tp == gpus / pp {
        if dp == 1 {
            out.push(base);
        } else {
            out.push(Strategy {
                fsdp: Some(false),
                ..base
            });
            if sdp {
                out.push(Strategy {
                    fsdp: Some(true),
                    ..base
                });
            }
        }
    } else {
        for consec in [false, true] {
            out.push(Strategy {
                consec: Some(consec),
                fsdp: Some(false),
                ..base
            });
            if sdp {
                out.push(Strategy {
                    consec: Some(consec),
                    fsdp: Some(true),
                    ..base
                });
            }
        }
    }
}

/// The engine's strategy list in its order (ckpt variants appended after all others).
/// `search_space` other than `full` applies the engine's presets.
pub fn generate(s: &Settings) -> Vec<Strategy> {
    let gpus = s.gpu_num();
    let degrees: Vec<u32> = (0..=gpus.trailing_zeros()).map(|k| 1 << k).collect();
    if !s.filtered_space() {
        return with_sp(s, vec![preset_strategy(s, &s.search_space)]);
    }
    let space = s.search_space.as_str();
    let pps: &[u32] = if space == "dp+tp" { &[1] } else { &degrees };
    let tps: &[u32] = if space == "dp+pp" { &[1] } else { &degrees };
    let mut out = Vec::new();
    for &pp in pps {
        for &tp in tps {
            if pp * tp <= gpus {
                push_degrees(&mut out, pp, tp, gpus, space == "full");
            }
        }
    }
    let disable_sdp = s.sdp_off();
    let disable_pp = s.disable_pp || space == "dp+tp";
    let disable_tp = s.disable_tp || space == "dp+pp";
    let mut kept: Vec<Strategy> = out
        .into_iter()
        .filter(|st| {
            !(s.disable_dp && st.dp > 1 && st.fsdp == Some(false)
                || disable_sdp && st.dp > 1 && st.fsdp == Some(true)
                || disable_tp && st.tp > 1
                || disable_pp && st.pp > 1
                || s.disable_tp_consec && st.consec == Some(false)
                || st.tp > s.max_tp_deg
                || st.pp > s.max_pp_deg)
        })
        .collect();
    if !s.disable_ckpt {
        let cpt: Vec<Strategy> = kept
            .iter()
            .map(|st| Strategy { cpt: true, ..*st })
            .collect();
        kept.extend(cpt);
    }
    with_sp(s, kept)
}

/// The one strategy of a preset search space (`3d`, `dp`, `sdp`, `tp`, else `pp`); presets also
/// disable checkpointing.
fn preset_strategy(s: &Settings, preset: &str) -> Strategy {
    let gpus = s.gpu_num();
    match preset {
        "3d" => Strategy {
            pp: 2,
            tp: 2,
            dp: gpus / 4,
            consec: Some(true),
            fsdp: Some(false),
            cpt: false,
            sp: false,
        },
        "dp" => Strategy {
            pp: 1,
            tp: 1,
            dp: gpus,
            consec: None,
            fsdp: Some(false),
            cpt: false,
            sp: false,
        },
        "sdp" => Strategy {
            pp: 1,
            tp: 1,
            dp: gpus,
            consec: None,
            fsdp: Some(true),
            cpt: false,
            sp: false,
        },
        "tp" => {
            let dp = gpus / s.max_tp_deg;
            Strategy {
                pp: 1,
                tp: s.max_tp_deg,
                dp,
                consec: (dp > 1).then_some(true),
                fsdp: Some(false),
                cpt: false,
                sp: false,
            }
        }
        _ => Strategy {
            pp: s.max_pp_deg,
            tp: 1,
            dp: gpus / s.max_pp_deg,
            consec: None,
            fsdp: Some(false),
            cpt: false,
            sp: false,
        },
    }
}

/// Under `sp_space tp+sp`, every strategy with tp > 1 followed by its Ulysses twin (the engine
/// inserts the twin right after it).
fn with_sp(s: &Settings, strategies: Vec<Strategy>) -> Vec<Strategy> {
    if !s.ulysses() {
        return strategies;
    }
    let mut out = Vec::with_capacity(strategies.len() * 2);
    for st in strategies {
        out.push(st);
        if st.tp > 1 {
            out.push(Strategy { sp: true, ..st });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Strategy;

    fn strategy(tp: u32, dp: u32, consec: Option<bool>, fsdp: Option<bool>) -> Strategy {
        Strategy {
            pp: 2,
            tp,
            dp,
            consec,
            fsdp,
            cpt: false,
            sp: false,
        }
    }

    #[test]
    fn names_are_the_engines() {
        let cases = [
            (strategy(1, 4, None, Some(false)), "2-1-4"),
            (strategy(2, 2, Some(true), Some(false)), "2-2*-2"),
            (strategy(2, 2, Some(false), Some(false)), "2-2-2*"),
            (strategy(2, 2, Some(false), Some(true)), "2-2-2f*"),
            (strategy(2, 2, Some(true), Some(true)), "2-2*-2f"),
            (strategy(4, 1, None, None), "2-4-1"),
        ];
        for (s, name) in cases {
            assert_eq!(s.to_string(), name);
        }
        let marked = Strategy {
            cpt: true,
            sp: true,
            ..strategy(2, 2, Some(false), Some(true))
        };
        assert_eq!(marked.to_string(), "2-2-2f*-c-sp");
    }
}
