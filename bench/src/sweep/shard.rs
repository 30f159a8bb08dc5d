//! Shards: `--shard K/N` keeps the runs whose key hashes to K modulo N (`docs/sweep.md`,
//! "Sharding"). The hash is SHA-256 of the key's text, so a run's shard depends on nothing but
//! its key: not on the order of the runs, nor on the other runs of the sweep.

use super::plan::RunKey;
use super::SweepError;
use sha2::{Digest, Sha256};

/// Shard `index` of `count` (numbered from 0, as Slurm's `%a` over `--array=0-(N-1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// Parses `K/N`.
    pub fn parse(text: &str) -> Result<Shard, SweepError> {
        let bad = |why: &str| SweepError::Input(format!("--shard {text}: {why}"));
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| bad("expected K/N, e.g. 0/4 (shards are numbered from 0)"))?;
        let k: u64 = k
            .trim()
            .parse()
            .map_err(|_| bad("K is not a whole number"))?;
        let n: u64 = n
            .trim()
            .parse()
            .map_err(|_| bad("N is not a whole number"))?;
        Shard::new(k, n).map_err(|why| bad(&why))
    }

    fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 {
            return Err("N must be at least 1".into());
        }
        if index >= count {
            return Err(format!(
                "K must be in 0..{} (shards are numbered from 0)",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// The shard of a Slurm array task: `(SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN) /
    /// SLURM_ARRAY_TASK_STEP` of `SLURM_ARRAY_TASK_COUNT` (MIN defaults to 0, STEP to 1), read
    /// with `var`; `None` outside an array task.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, SweepError> {
        let Some(id) = var("SLURM_ARRAY_TASK_ID") else {
            return Ok(None);
        };
        let num = |name: &str, default: Option<u64>| -> Result<u64, SweepError> {
            match var(name) {
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| SweepError::Input(format!("{name}={v:?} is not a whole number"))),
                None => default.ok_or_else(|| {
                    SweepError::Input(format!(
                        "SLURM_ARRAY_TASK_ID is set but {name} is not; give --shard K/N"
                    ))
                }),
            }
        };
        let id: u64 = id.trim().parse().map_err(|_| {
            SweepError::Input(format!("SLURM_ARRAY_TASK_ID={id:?} is not a whole number"))
        })?;
        let count = num("SLURM_ARRAY_TASK_COUNT", None)?;
        let min = num("SLURM_ARRAY_TASK_MIN", Some(0))?;
        let step = num("SLURM_ARRAY_TASK_STEP", Some(1))?.max(1);
        let offset = id.checked_sub(min).ok_or_else(|| {
            SweepError::Input(format!(
                "SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"
            ))
        })?;
        Shard::new(offset / step, count).map(Some).map_err(|why| {
            SweepError::Input(format!(
                "Slurm array task {id} (min {min}, step {step}, count {count}): {why}; \
                 a sweep's array must be one contiguous range"
            ))
        })
    }

    /// Whether the run of `key` belongs to this shard.
    pub fn contains(&self, key: &RunKey) -> bool {
        shard_of(key, self.count) == self.index
    }
}

/// The shard, of `count`, of the run of `key`: the first 8 bytes of SHA-256 of the key's text,
/// big-endian, modulo `count`.
pub fn shard_of(key: &RunKey, count: u64) -> u64 {
    let digest = Sha256::digest(key.text().as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) % count.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn parses_and_rejects() {
        assert_eq!(Shard::parse("0/4").unwrap(), Shard { index: 0, count: 4 });
        assert_eq!(Shard::parse("3/4").unwrap(), Shard { index: 3, count: 4 });
        for bad in ["4/4", "1/0", "x/2", "2", "-1/3"] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--shard {bad}:")), "{e}");
        }
        assert!(Shard::parse("4/4")
            .unwrap_err()
            .to_string()
            .contains("0..3"));
    }

    #[test]
    fn slurm_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            let m: HashMap<&str, &str> = pairs.iter().copied().collect();
            move |k: &str| m.get(k).map(|v| v.to_string())
        };
        assert_eq!(Shard::from_env(env(&[])).unwrap(), None);
        let s = Shard::from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]))
        .unwrap();
        assert_eq!(s, Some(Shard { index: 2, count: 4 }));
        let e = Shard::from_env(env(&[
            ("SLURM_ARRAY_TASK_ID", "9"),
            ("SLURM_ARRAY_TASK_MIN", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("contiguous"), "{e}");
        let e = Shard::from_env(env(&[("SLURM_ARRAY_TASK_ID", "1")])).unwrap_err();
        assert!(e.to_string().contains("SLURM_ARRAY_TASK_COUNT"), "{e}");
    }

    #[test]
    fn shards_partition_the_keys() {
        let keys: Vec<RunKey> = (0..200)
            .map(|i| RunKey {
                instance_hash: format!("sha256:{i}"),
                algorithm: "a".into(),
                settings: String::new(),
                seed: 0,
                repeat: i % 3,
            })
            .collect();
        let n = 4;
        let mut sizes = [0usize; 4];
        for k in &keys {
            let owners: Vec<u64> = (0..n)
                .filter(|&i| Shard { index: i, count: n }.contains(k))
                .collect();
            assert_eq!(owners.len(), 1);
            sizes[owners[0] as usize] += 1;
        }
        // 200 keys over 4 shards: none is empty or holds more than half.
        assert!(sizes.iter().all(|&s| s > 0 && s < 100), "{sizes:?}");
    }
}
