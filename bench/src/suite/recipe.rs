//! A suite's recipe: scenarios (an analytic model or a peer profile, a cluster, a schedule),
//! each expanded into one member per memory level ([`MemoryClass`]). The instances come from
//! the library functions behind `pipeplan generate` and `pipeplan import`; the recipe only
//! chooses their arguments, names the members, tags them and sets their memory budgets.
//!
//! Names and tags are documented in `docs/suite.md`.

use super::memory::{Anchors, MemoryClass};
use super::{instance_hash, Member, SuiteError};
use pipeplan_formulations::galvatron::fit::FitMethod;
use pipeplan_formulations::generate::{self, Device, GenerateOptions};
use pipeplan_formulations::import::{ClusterSpec, ImportRequest, Source};
use pipeplan_formulations::instance::{Bandwidth, Cluster, ScheduleKind};
use pipeplan_formulations::Instance;
use std::path::Path;

/// Members with more layers than this are tagged `large` (slow for the exact methods).
pub const LARGE_LAYERS: usize = 130;

/// A kind of cluster: the device whose peak rate times an analytic model, and the links.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Net {
    /// Device of analytic models (imported profiles carry their own times).
    pub device: Device,
    /// Bandwidth between GPUs of a node (bytes/s).
    pub intra: f64,
    /// Bandwidth between nodes (bytes/s).
    pub inter: f64,
    /// Host-device bandwidth for swapping (bytes/s).
    pub pcie: f64,
    /// What the links inside a node are, for the instance's `source`.
    pub intra_what: &'static str,
    /// What the links between nodes are.
    pub inter_what: &'static str,
}

/// A peer profile, read with `pipeplan import`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Format.
    pub source: Source,
    /// Short name in member names (after the source's).
    pub label: &'static str,
    /// The file, relative to the peers folder.
    pub file: &'static str,
    /// Galvatron / Sailor: the folder the file's paths are relative to, within the peers folder.
    pub data_root: Option<&'static str>,
    /// Sailor: the GPU type.
    pub gpu_type: Option<&'static str>,
}

/// Where a scenario's instance comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Origin {
    /// `pipeplan generate MODEL` at the model's default input size.
    Analytic {
        /// Generator model name.
        model: &'static str,
        /// Samples per micro-batch (default: the model's).
        batch: Option<u32>,
    },
    /// `pipeplan import` of a peer profile.
    Peer(Profile),
}

/// One model on one cluster under one schedule; [`MemoryClass::ALL`] makes three members.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// The instance's origin.
    pub origin: Origin,
    /// Model family (tag `family:`).
    pub family: &'static str,
    /// GPUs.
    pub gpus: u32,
    /// Nodes (equal shares of the GPUs).
    pub nodes: u32,
    /// The links; `None` for profiles that carry their cluster (Galvatron, Sailor: `gpus` and
    /// `nodes` must then be what the profile gives, which generation checks).
    pub net: Option<Net>,
    /// Default schedule of the instances.
    pub schedule: ScheduleKind,
    /// Whether the chain has more than [`LARGE_LAYERS`] layers (checked at generation).
    pub large: bool,
    /// Why the scenario is in the suite (written into each instance's `source`).
    pub why: &'static str,
}

/// A versioned suite's recipe.
#[derive(Debug, Clone)]
pub struct Recipe {
    /// Version name (`v1`).
    pub version: &'static str,
    /// Scenarios in manifest order.
    pub scenarios: Vec<Scenario>,
    /// What rebuilds the members as the version was published.
    pub published: AsPublished,
}

/// How a version rebuilds its members as it was published, where the importers have changed
/// since (`docs/suite.md`, "Versions"). A new version publishes what the importers make now:
/// [`AsPublished::CURRENT`].
#[derive(Debug, Clone, Copy)]
pub struct AsPublished {
    /// How the Galvatron importer fits the `sequence` profile mode's curves.
    pub galvatron_fits: FitMethod,
    /// Applied to a scenario's instance before its memory levels are derived from it.
    pub base: fn(&mut Instance),
    /// Applied to each member's instance.
    pub member: fn(&mut Instance),
}

impl AsPublished {
    /// The importers as they are now.
    pub const CURRENT: AsPublished = AsPublished {
        galvatron_fits: FitMethod::Engine,
        base: unchanged,
        member: unchanged,
    };
}

fn unchanged(_: &mut Instance) {}

impl Origin {
    /// The source tag value: `analytic` or the import format.
    pub fn source(&self) -> &'static str {
        match self {
            Origin::Analytic { .. } => "analytic",
            Origin::Peer(p) => p.source.name(),
        }
    }

    /// The first part of member names: `resnet50-1000px-b8` (model, input, micro-batch) or
    /// `pipedream-vgg16` (source, profile).
    pub fn label(&self) -> String {
        match self {
            Origin::Analytic { model, batch } => {
                let info = generate::models().iter().find(|m| m.name == *model);
                let input = match info.map(|m| (m.default_image_size, m.default_seq_len)) {
                    Some((Some(px), _)) => format!("-{px}px"),
                    Some((_, Some(s))) => format!("-s{s}"),
                    _ => String::new(),
                };
                let b = batch.or(info.map(|m| m.default_batch)).unwrap_or(1);
                format!("{model}{input}-b{b}")
            }
            Origin::Peer(p) => format!("{}-{}", p.source.name(), p.label),
        }
    }
}

/// The GPU-count class of `gpus` (tag `gpus:`).
pub fn gpu_class(gpus: u32) -> &'static str {
    match gpus {
        0..=4 => "2-4",
        5..=8 => "5-8",
        9..=16 => "9-16",
        _ => "17-64",
    }
}

impl Scenario {
    /// GPUs per node.
    fn per_node(&self) -> u32 {
        self.gpus / self.nodes.max(1)
    }

    /// `8gpu` on one node, `4x8gpu` on four nodes of eight.
    fn shape(&self) -> String {
        if self.nodes > 1 {
            format!("{}x{}gpu", self.nodes, self.per_node())
        } else {
            format!("{}gpu", self.gpus)
        }
    }

    /// The member name of `class`: `{label}-{shape}-{schedule}-{class}`.
    pub fn member_name(&self, class: MemoryClass) -> String {
        format!(
            "{}-{}-{}-{}",
            self.origin.label(),
            self.shape(),
            self.schedule,
            class.name()
        )
    }

    /// The tags of the member of `class`.
    pub fn tags(&self, class: MemoryClass) -> Vec<String> {
        let mut tags = vec![
            format!("family:{}", self.family),
            format!("source:{}", self.origin.source()),
            format!("gpus:{}", gpu_class(self.gpus)),
            format!("nodes:{}", if self.nodes > 1 { "multi" } else { "1" }),
            format!("memory:{}", class.name()),
            format!("schedule:{}", self.schedule),
        ];
        if self.large {
            tags.push("large".to_string());
        }
        tags
    }

    /// Whether building it needs the peers folder.
    pub fn needs_peers(&self) -> bool {
        matches!(self.origin, Origin::Peer(_))
    }

    fn invalid(&self, what: String) -> SuiteError {
        SuiteError::Invalid {
            path: format!(
                "recipe scenario {}",
                self.member_name(MemoryClass::Moderate)
            ),
            what,
        }
    }

    /// The sentence on the cluster, for `source`.
    fn cluster_sentence(&self) -> String {
        match &self.net {
            None => format!(
                "Cluster: as the profile gives it ({} GPUs on {} node{}).",
                self.gpus,
                self.nodes,
                if self.nodes > 1 { "s" } else { "" }
            ),
            Some(n) if self.nodes > 1 => format!(
                "Cluster: {} nodes of {} GPUs ({}); {} GB/s between GPUs of a node ({}), {} GB/s \
                 between nodes ({}), host link {} GB/s.",
                self.nodes,
                self.per_node(),
                n.device.name(),
                n.intra / 1e9,
                n.intra_what,
                n.inter / 1e9,
                n.inter_what,
                n.pcie / 1e9,
            ),
            Some(n) => format!(
                "Cluster: one node of {} GPUs ({}); {} GB/s between GPUs ({}), host link {} \
                 GB/s.",
                self.gpus,
                n.device.name(),
                n.intra / 1e9,
                n.intra_what,
                n.pcie / 1e9,
            ),
        }
    }

    /// The cluster of `net` with a placeholder budget (the memory level replaces it).
    fn cluster(&self, net: &Net) -> Cluster {
        Cluster {
            gpus: self.gpus,
            gpus_per_node: (self.nodes > 1).then(|| self.per_node()),
            gpu: None,
            memory: PLACEHOLDER_MEMORY,
            bandwidth: Bandwidth {
                intra_node: net.intra,
                inter_node: (self.nodes > 1).then_some(net.inter),
            },
            pcie: Some(net.pcie),
        }
    }

    /// The instance before its memory level: generated or imported, checked against the
    /// scenario's declared shape, as `published` rebuilds it. `peers` is the peers folder
    /// (needed by peer profiles).
    pub fn base_instance(
        &self,
        published: &AsPublished,
        peers: Option<&Path>,
    ) -> Result<Instance, SuiteError> {
        let inst = match (&self.origin, &self.net) {
            (Origin::Analytic { model, batch }, Some(net)) => {
                let mut o = GenerateOptions::new(model, self.cluster(net));
                o.device = net.device;
                if let Some(b) = batch {
                    o.batch = *b;
                }
                o.schedule = Some(self.schedule);
                generate::generate(&o).map_err(|e| self.invalid(e.to_string()))?
            }
            (Origin::Analytic { .. }, None) => {
                return Err(self.invalid("an analytic model needs a cluster (net)".into()))
            }
            (Origin::Peer(p), net) => {
                let Some(peers) = peers else {
                    return Err(self.invalid("needs the peers folder".into()));
                };
                self.import(published, p, net.as_ref(), peers)?
            }
        };
        let layers = inst.num_layers();
        let nodes = inst.cluster.gpus / inst.gpus_per_node().max(1);
        if inst.cluster.gpus != self.gpus || nodes != self.nodes {
            return Err(self.invalid(format!(
                "declared {} GPUs on {} nodes, the instance has {} on {nodes}",
                self.gpus, self.nodes, inst.cluster.gpus
            )));
        }
        if (layers > LARGE_LAYERS) != self.large {
            return Err(self.invalid(format!(
                "declared large = {} but the chain has {layers} layers (large: more than \
                 {LARGE_LAYERS})",
                self.large
            )));
        }
        Ok(inst)
    }

    fn import(
        &self,
        published: &AsPublished,
        p: &Profile,
        net: Option<&Net>,
        peers: &Path,
    ) -> Result<Instance, SuiteError> {
        let mut req = ImportRequest::new(p.source, peers.join(p.file));
        req.galvatron_fits = published.galvatron_fits;
        if let Some(n) = net {
            let c = self.cluster(n);
            req.cluster = ClusterSpec {
                gpus: Some(c.gpus),
                memory: Some(format!("{}", c.memory)),
                bandwidth: Some(format!("{}", n.intra)),
                gpus_per_node: c.gpus_per_node,
                inter_node_bandwidth: c.bandwidth.inter_node.map(|b| format!("{b}")),
                pcie: Some(format!("{}", n.pcie)),
            };
        }
        req.data_root = p.data_root.map(|d| peers.join(d));
        req.gpu_type = p.gpu_type.map(str::to_string);
        if p.source == Source::Sailor {
            req.nodes = Some(self.nodes);
        }
        req.schedule = Some(self.schedule);
        if !p.source.carries_cluster() && self.schedule != ScheduleKind::Async {
            // As `generate` does: 4 micro-batches per GPU (a profile's own batch plan, e.g.
            // Piper's mbsInBatch, belongs to another cluster).
            req.micro_batches = Some(4 * self.gpus);
        }
        req.import().map_err(|e| self.invalid(e.to_string()))
    }

    /// The members of this scenario in `recipe`'s version, one per memory level, with their
    /// instances.
    pub fn members(
        &self,
        recipe: &Recipe,
        peers: Option<&Path>,
    ) -> Result<Vec<(Member, Instance)>, SuiteError> {
        let (version, published) = (recipe.version, &recipe.published);
        let mut base = self.base_instance(published, peers)?;
        // Before the memory levels: they are derived from the sizes.
        (published.base)(&mut base);
        let anchors = Anchors::of(&base)?;
        // The levels must mean what docs/suite.md says: no plain pipeline fits at tight.
        let [t, m, l] = MemoryClass::ALL.map(|c| anchors.budget(c));
        if !(t < anchors.pipeline && t < m && m < l) {
            return Err(self.invalid(format!(
                "memory levels collapse: tight {t}, moderate {m}, loose {l} bytes for a \
                 plain-pipeline peak of {} bytes",
                anchors.pipeline
            )));
        }
        MemoryClass::ALL
            .iter()
            .map(|&class| {
                let name = self.member_name(class);
                let mut inst = base.clone();
                (published.member)(&mut inst);
                inst.name = name.clone();
                inst.cluster.memory = anchors.budget(class);
                inst.source = format!(
                    "{} Benchmark suite {version}, member {name}: {} {} {}",
                    inst.source,
                    self.why,
                    self.cluster_sentence(),
                    anchors.sentence(class)
                );
                inst.validate().map_err(|e| self.invalid(e.to_string()))?;
                let member = Member {
                    file: format!("instances/{name}.json"),
                    hash: instance_hash(&inst),
                    layers: inst.num_layers(),
                    gpus: inst.cluster.gpus,
                    tags: self.tags(class),
                    name,
                };
                Ok((member, inst))
            })
            .collect()
    }
}

/// The budget instances carry before their memory level is set (no anchor depends on it).
const PLACEHOLDER_MEMORY: f64 = 1024.0 * 1024.0 * 1024.0;
