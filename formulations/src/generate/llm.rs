//! Today's decoder-only language models: Llama 3 8B / 70B / 405B and Mixtral 8x7B, one layer per
//! block plus the embeddings and the head.
//!
//! They differ from GPT-3 in four ways the generator counts:
//! - grouped-query attention: `kv_heads` key/value heads of the query heads' size, so K and V
//!   are `h x kv_heads x head_dim`;
//! - SwiGLU MLP: three `h x ff` matrices (gate, up, down); the backward keeps the gate and up
//!   outputs, the SiLU output and the product (4 s ff elements) besides the norm's input and
//!   output;
//! - RMSNorm (h parameters), no biases, no dropout, rotary positions (no position table);
//! - an untied LM head (`vocab x h` parameters of its own).
//!
//! A mixture-of-experts block (Mixtral) has `experts` SwiGLU MLPs and a router (`h x experts`);
//! every expert's weights are held, each token runs `top_k` of them: compute and saved
//! activations count `top_k` experts per token (balanced routing), plus the router's logits.
//! Attention saves the softmax output as the other transformers do (Korthikanti et al. 2022:
//! no fused attention kernel); the elements are counted at the chosen precision.

use super::net::{InputKind, LayerSpec, Network};

/// The shape of one decoder-only model, with its source.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decoder {
    /// Name in messages.
    pub title: &'static str,
    /// Decoder blocks.
    pub blocks: u64,
    /// Hidden size h.
    pub h: u64,
    /// Query heads.
    pub heads: u64,
    /// Key/value heads (grouped-query attention).
    pub kv_heads: u64,
    /// MLP inner width (per expert).
    pub ff: u64,
    /// Vocabulary.
    pub vocab: u64,
    /// Longest context trained.
    pub context: u64,
    /// (experts, experts per token) of a mixture-of-experts MLP.
    pub experts: Option<(u64, u64)>,
    /// Where the shape comes from.
    pub source: &'static str,
}

/// Llama 3 8B (Dubey et al. 2024, "The Llama 3 Herd of Models", Table 3; the released
/// `config.json`).
pub(crate) const LLAMA3_8B: Decoder = Decoder {
    title: "Llama 3 8B",
    blocks: 32,
    h: 4096,
    heads: 32,
    kv_heads: 8,
    ff: 14336,
    vocab: 128256,
    context: 8192,
    experts: None,
    source: "Llama 3 paper (Dubey et al. 2024), Table 3, and Meta-Llama-3-8B config.json",
};

/// Llama 3 70B (same sources).
pub(crate) const LLAMA3_70B: Decoder = Decoder {
    title: "Llama 3 70B",
    blocks: 80,
    h: 8192,
    heads: 64,
    kv_heads: 8,
    ff: 28672,
    vocab: 128256,
    context: 8192,
    experts: None,
    source: "Llama 3 paper (Dubey et al. 2024), Table 3, and Meta-Llama-3-70B config.json",
};

/// Llama 3.1 405B (same sources; pre-trained at 8k context before the long-context stage).
pub(crate) const LLAMA3_405B: Decoder = Decoder {
    title: "Llama 3 405B",
    blocks: 126,
    h: 16384,
    heads: 128,
    kv_heads: 8,
    ff: 53248,
    vocab: 128256,
    context: 8192,
    experts: None,
    source: "Llama 3 paper (Dubey et al. 2024), Table 3, and Llama-3.1-405B config.json",
};

/// Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts", Table 1).
pub(crate) const MIXTRAL_8X7B: Decoder = Decoder {
    title: "Mixtral 8x7B",
    blocks: 32,
    h: 4096,
    heads: 32,
    kv_heads: 8,
    ff: 14336,
    vocab: 32000,
    context: 32768,
    experts: Some((8, 2)),
    source: "Mixtral paper (Jiang et al. 2024), Table 1, and Mixtral-8x7B-v0.1 config.json",
};

/// One decoder block over `s` tokens with causal attention.
fn block(name: String, m: &Decoder, s: f64) -> LayerSpec {
    let (h, d) = (m.h as f64, m.h as f64);
    let dkv = d / m.heads as f64 * m.kv_heads as f64;
    let ff = m.ff as f64;
    let pairs = s * s;
    let mut l = LayerSpec::new(name, "transformer");
    // Attention: RMSNorm, Q, K, V, scores over every (query, key) pair, weighted sum, output.
    l.params += h + h * d + 2.0 * h * dkv + d * h;
    l.macs += s * h * d + 2.0 * s * h * dkv + 2.0 * pairs * d + s * d * h;
    // Norm input and output, Q, K, V, softmax output, projection input.
    l.saved += 2.0 * s * h + s * d + 2.0 * s * dkv + m.heads as f64 * pairs + s * d;
    // MLP: RMSNorm and SwiGLU (gate, up, down), per expert for a mixture.
    let (experts, top_k) = m.experts.unwrap_or((1, 1));
    let (experts, top_k) = (experts as f64, top_k as f64);
    l.params += h + experts * 3.0 * h * ff;
    l.macs += top_k * 3.0 * s * h * ff;
    l.saved += 2.0 * s * h + top_k * 4.0 * s * ff;
    if m.experts.is_some() {
        l.params += h * experts;
        l.macs += s * h * experts;
        l.saved += s * experts;
    }
    l.output = s * h;
    l
}

/// The network of `m` at `seq` tokens.
pub(crate) fn decoder(m: &Decoder, seq: u64) -> Result<Network, String> {
    if seq == 0 {
        return Err("must be at least 1 token".to_string());
    }
    if seq > m.context {
        return Err(format!(
            "{seq} tokens exceed the {} tokens of context {} was trained at",
            m.context, m.title
        ));
    }
    let (s, h, v) = (seq as f64, m.h as f64, m.vocab as f64);
    let mut layers = Vec::new();
    let mut e = LayerSpec::new("embeddings", "embedding");
    e.params = v * h;
    e.saved_fixed_bytes = 8.0 * s; // token ids
    e.output = s * h;
    layers.push(e);
    for i in 0..m.blocks {
        layers.push(block(format!("layer.{i}"), m, s));
    }
    let mut hd = LayerSpec::new("head", "lm-head");
    hd.params = h + v * h; // final RMSNorm, untied LM head
    hd.macs = s * h * v;
    hd.saved = 2.0 * s * h + s * v; // RMSNorm input and output, logits
    hd.output = s;
    layers.push(hd);
    let moe = match m.experts {
        Some((e, k)) => format!(", {e} experts of which {k} per token"),
        None => String::new(),
    };
    Ok(Network {
        title: m.title.to_string(),
        input: s,
        input_kind: InputKind::Tokens,
        shape_note: format!(
            "sequence length {seq}; {} layers: embeddings, {} decoder blocks (h {}, {} query / \
             {} key-value heads, SwiGLU {}{moe}), final RMSNorm + untied LM head; shapes from \
             the {}",
            m.blocks + 2,
            m.blocks,
            m.h,
            m.heads,
            m.kv_heads,
            m.ff,
            m.source
        ),
        layers,
        accounting_note: "output = the hidden states (tokens x h) sent to the next block; saved \
             per block = norm inputs and outputs, Q, K, V (grouped-query), the softmax output \
             (a s^2), the projection input, and 4 s ff SwiGLU elements per expert a token runs; \
             no dropout; token ids are 8-byte integers; the head saves the logits (s x vocab)"
            .to_string(),
    })
}
