//! Transformers: BERT-Large, GPT-3 2.6B / 6.7B / 175B, T5-512/4, ViT-Huge/14 and Swin-Huge, one layer
//! per transformer block plus embedding and head layers.
//!
//! Saved activations follow Korthikanti et al., "Reducing Activation Recomputation in Large
//! Transformer Models" (2022): a block with hidden size h, sequence s and a heads keeps
//! `s h (34 + 5 a s / h)` bytes per sample in 16-bit precision, i.e. 16 s h + 2 a s^2 elements
//! (norm inputs and outputs, Q, K, V, softmax output, its dropout output, projection input, the
//! MLP's two 4h-wide tensors) plus 2 s h + a s^2 one-byte dropout masks. The generator counts
//! those elements at the chosen precision and the masks at one byte; models trained without
//! dropout (ViT, Swin) have neither masks nor a separate dropout output.

use super::net::{InputKind, LayerSpec, Network};

/// Shape of the blocks of one transformer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dims {
    /// Hidden size h.
    pub h: u64,
    /// Attention heads a.
    pub heads: u64,
    /// Attention inner width (heads x head size); equal to h except in unusual configurations.
    pub d: u64,
    /// MLP inner width.
    pub ff: u64,
    /// Linear layers carry biases.
    pub bias: bool,
    /// Normalisation parameters per norm layer as a multiple of h (LayerNorm 2, RMSNorm 1).
    pub norm: u64,
    /// Dropout active in training (masks and a separate dropout output are kept).
    pub dropout: bool,
}

impl Dims {
    fn b(&self, n: u64) -> f64 {
        if self.bias {
            n as f64
        } else {
            0.0
        }
    }
}

/// Adds an attention sub-layer (norm, projections, scores, output projection) to `l`.
/// `sq` query tokens, `skv` key tokens, `pairs` (query, key) pairs scored per head.
fn attention(l: &mut LayerSpec, dm: &Dims, sq: f64, skv: f64, pairs: f64) {
    let (h, d, a) = (dm.h as f64, dm.d as f64, dm.heads as f64);
    l.params += (dm.norm * dm.h) as f64 + 4.0 * h * d + dm.b(3 * dm.d) + dm.b(dm.h);
    // Q from the queries, K and V from the keys, scores, weighted sum, output projection.
    l.macs += sq * h * d + 2.0 * skv * h * d + 2.0 * pairs * d + sq * d * h;
    let probs = if dm.dropout { 2.0 } else { 1.0 };
    // Norm input and output, Q, K, V, softmax (and dropout) output, projection input.
    l.saved += 2.0 * sq * h + sq * d + 2.0 * skv * d + probs * a * pairs + sq * d;
    if dm.dropout {
        l.saved_fixed_bytes += a * pairs + sq * h;
    }
}

/// Adds an MLP sub-layer (norm, two linear layers) over `s` tokens to `l`.
fn mlp(l: &mut LayerSpec, dm: &Dims, s: f64) {
    let (h, f) = (dm.h as f64, dm.ff as f64);
    l.params += (dm.norm * dm.h) as f64 + 2.0 * h * f + dm.b(dm.ff) + dm.b(dm.h);
    l.macs += 2.0 * s * h * f;
    // Norm input and output, activation input, second linear input.
    l.saved += 2.0 * s * h + 2.0 * s * f;
    if dm.dropout {
        l.saved_fixed_bytes += s * h;
    }
}

/// A self-attention block over `s` tokens, full attention.
fn block(name: String, dm: &Dims, s: u64) -> LayerSpec {
    let mut l = LayerSpec::new(name, "transformer");
    let s = s as f64;
    attention(&mut l, dm, s, s, s * s);
    mlp(&mut l, dm, s);
    l.output = s * dm.h as f64;
    l
}

fn check_seq(seq: u64, max: Option<u64>, title: &str) -> Result<(), String> {
    if seq == 0 {
        return Err("must be at least 1 token".to_string());
    }
    if let Some(m) = max {
        if seq > m {
            return Err(format!(
                "{seq} tokens exceed the {m} learned positions of {title}"
            ));
        }
    }
    Ok(())
}

const TF_ACCOUNTING: &str = "output = the hidden states (tokens x h) sent to the next block; \
    saved per block = 16 s h + 2 a s^2 elements + (2 s h + a s^2) one-byte dropout masks \
    (Korthikanti et al. 2022, i.e. s h (34 + 5 a s / h) bytes in 16-bit), with the MLP width and \
    the attention span of the model; token ids are 8-byte integers";

/// BERT-Large (uncased, 24 layers, h 1024, 16 heads, vocabulary 30522, 512 positions) with the
/// pre-training heads (masked LM over every position, next-sentence prediction).
pub(crate) fn bert_large(seq: u64) -> Result<Network, String> {
    let title = "BERT-Large";
    check_seq(seq, Some(512), title)?;
    let dm = Dims {
        h: 1024,
        heads: 16,
        d: 1024,
        ff: 4096,
        bias: true,
        norm: 2,
        dropout: true,
    };
    let (v, s, h) = (30522.0, seq as f64, 1024.0);
    let mut layers = Vec::new();
    let mut e = LayerSpec::new("embeddings", "embedding");
    e.params = v * h + 512.0 * h + 2.0 * h + 2.0 * h;
    e.saved = s * h; // LayerNorm input
    e.saved_fixed_bytes = 8.0 * s + s * h; // token ids, dropout mask
    e.output = s * h;
    layers.push(e);
    for i in 0..24 {
        layers.push(block(format!("encoder.{i}"), &dm, seq));
    }
    let mut hd = LayerSpec::new("heads", "lm-head");
    // MLM: dense + GELU + LayerNorm, then the decoder tied to the word embeddings (+ bias);
    // NSP: pooler dense + tanh, 2-way classifier.
    hd.params = (h * h + h) + 2.0 * h + v + (h * h + h) + (2.0 * h + 2.0);
    hd.tied_params = v * h;
    hd.macs = s * h * h + s * h * v + h * h + 2.0 * h;
    hd.saved = 4.0 * s * h + s * v + 2.0 * h;
    hd.output = s;
    layers.push(hd);
    Ok(Network {
        title: title.to_string(),
        input: s,
        input_kind: InputKind::Tokens,
        shape_note: format!(
            "sequence length {seq}; 26 layers: embeddings, 24 encoder layers, pre-training heads \
             (masked-LM logits at every position + next-sentence prediction)"
        ),
        layers,
        accounting_note: format!(
            "{TF_ACCOUNTING}; the head saves the logits (s x vocabulary) and outputs per-token \
             losses; the decoder matrix tied to the word embeddings is held by both the first \
             and the last layer (counted once in the parameter total)"
        ),
    })
}

/// GPT-3 2.6B ("2.7B" in the GPT-3 paper: 32 layers, h 2560, 32 heads), 6.7B (32 layers,
/// h 4096, 32 heads) or 175B (96 layers, h 12288, 96 heads) (Brown et al. 2020, Table 2.1);
/// vocabulary 50257, 2048 learned positions, LM head tied to the embeddings.
pub(crate) fn gpt3(blocks: u64, h: u64, heads: u64, seq: u64) -> Result<Network, String> {
    let title = match h {
        2560 => "GPT-3 2.6B",
        4096 => "GPT-3 6.7B",
        _ => "GPT-3 175B",
    };
    check_seq(seq, Some(2048), title)?;
    let dm = Dims {
        h,
        heads,
        d: h,
        ff: 4 * h,
        bias: true,
        norm: 2,
        dropout: true,
    };
    let (v, s, hf) = (50257.0, seq as f64, h as f64);
    let mut layers = Vec::new();
    let mut e = LayerSpec::new("embeddings", "embedding");
    e.params = v * hf + 2048.0 * hf;
    e.saved_fixed_bytes = 8.0 * s + s * hf; // token ids, dropout mask
    e.output = s * hf;
    layers.push(e);
    for i in 0..blocks {
        layers.push(block(format!("layer.{i}"), &dm, seq));
    }
    let mut hd = LayerSpec::new("head", "lm-head");
    hd.params = 2.0 * hf; // final LayerNorm
    hd.tied_params = v * hf;
    hd.macs = s * hf * v;
    hd.saved = 2.0 * s * hf + s * v; // LayerNorm input and output, logits
    hd.output = s;
    layers.push(hd);
    Ok(Network {
        title: title.to_string(),
        input: s,
        input_kind: InputKind::Tokens,
        shape_note: format!(
            "sequence length {seq}; {} layers: embeddings, {blocks} decoder blocks (h {h}, \
             {heads} heads, MLP 4h), final LayerNorm + LM head",
            blocks + 2
        ),
        layers,
        accounting_note: format!(
            "{TF_ACCOUNTING}; the head saves the logits (s x 50257) and outputs per-token \
             losses; the LM head matrix tied to the embeddings is held by both the first and \
             the last layer (counted once in the parameter total)"
        ),
    })
}

/// Decoder sequence length of T5-512/4.
pub(crate) const T5_DECODER_SEQ: u64 = 4;

/// T5-512/4 as in Galvatron-BMW: the T5-Large configuration (24 encoder + 24 decoder layers,
/// h 1024, 16 heads of 64, MLP 4096, vocabulary 32128, relative position buckets, RMSNorm, no
/// biases, embeddings shared by encoder, decoder and LM head) with an encoder sequence of 512
/// tokens and a decoder sequence of 4 tokens (SQuAD-style question answering).
pub(crate) fn t5_512_4(seq: u64) -> Result<Network, String> {
    let title = "T5-512/4 (T5-Large, 24+24 layers)";
    check_seq(seq, None, title)?;
    let dm = Dims {
        h: 1024,
        heads: 16,
        d: 1024,
        ff: 4096,
        bias: false,
        norm: 1,
        dropout: true,
    };
    let (v, h) = (32128.0, 1024.0);
    let (se, sd) = (seq as f64, T5_DECODER_SEQ as f64);
    let rel_bias = 32.0 * 16.0;
    let mut layers = Vec::new();
    let mut e = LayerSpec::new("encoder.embed", "embedding");
    e.params = v * h;
    e.saved_fixed_bytes = 8.0 * se + se * h;
    e.output = se * h;
    layers.push(e);
    for i in 0..24 {
        let mut l = block(format!("encoder.{i}"), &dm, seq);
        l.kind = "encoder";
        if i == 0 {
            l.params += rel_bias;
        }
        layers.push(l);
    }
    // Final encoder norm (its output is the encoder output every decoder layer attends to, kept
    // here) + decoder embedding lookup (tied to the shared embeddings).
    let mut de = LayerSpec::new("encoder.norm+decoder.embed", "embedding");
    de.params = h;
    de.tied_params = v * h;
    de.saved = 2.0 * se * h;
    de.saved_fixed_bytes = 8.0 * sd + se * h + sd * h;
    de.output = sd * h;
    de.cut = Some(sd * h + se * h);
    layers.push(de);
    for i in 0..24 {
        let mut l = LayerSpec::new(format!("decoder.{i}"), "decoder");
        attention(&mut l, &dm, sd, sd, sd * sd);
        attention(&mut l, &dm, sd, se, sd * se);
        mlp(&mut l, &dm, sd);
        if i == 0 {
            l.params += rel_bias;
        }
        l.output = sd * h;
        l.cut = Some(sd * h + se * h);
        layers.push(l);
    }
    let mut hd = LayerSpec::new("decoder.norm+lm_head", "lm-head");
    hd.params = h;
    hd.tied_params = v * h;
    hd.macs = sd * h * v;
    hd.saved = 2.0 * sd * h + sd * v;
    hd.output = sd;
    layers.push(hd);
    Ok(Network {
        title: title.to_string(),
        input: se + sd,
        input_kind: InputKind::Tokens,
        shape_note: format!(
            "encoder sequence {seq}, decoder sequence {T5_DECODER_SEQ} (the T5-512/4 \
             imbalance of Galvatron-BMW); 51 layers: encoder embedding, 24 encoder layers, final \
             encoder norm + decoder embedding, 24 decoder layers (self-attention, \
             cross-attention, MLP), final norm + LM head"
        ),
        layers,
        accounting_note: format!(
            "{TF_ACCOUNTING}; cross-attention keeps Q over the decoder tokens and K, V over the \
             encoder tokens; after the encoder, a cut carries the decoder hidden states *and* \
             the encoder output (cut = output + encoder output); the shared embedding matrix is \
             held by the encoder embedding, the decoder embedding and the LM head layers \
             (counted once in the parameter total)"
        ),
    })
}

/// ViT-Huge/14 (32 layers, h 1280, 16 heads, MLP 5120, class token, 1000-class head).
pub(crate) fn vit_huge(img: u64) -> Result<Network, String> {
    const P: u64 = 14;
    if img < P {
        return Err(format!("{img} px is smaller than one {P} px patch"));
    }
    let dm = Dims {
        h: 1280,
        heads: 16,
        d: 1280,
        ff: 5120,
        bias: true,
        norm: 2,
        dropout: false,
    };
    let n = (img / P) * (img / P);
    let s = n + 1;
    let (h, sf) = (1280.0, s as f64);
    let mut layers = Vec::new();
    let mut e = LayerSpec::new("patch_embed", "embedding");
    e.params = (3 * P * P) as f64 * h + h + h + sf * h; // conv + bias, class token, positions
    e.macs = (n * 3 * P * P) as f64 * h;
    e.saved = (3 * img * img) as f64;
    e.output = sf * h;
    layers.push(e);
    for i in 0..32 {
        layers.push(block(format!("encoder.{i}"), &dm, s));
    }
    let mut hd = LayerSpec::new("head", "classifier");
    hd.params = 2.0 * h + h * 1000.0 + 1000.0;
    hd.macs = h * 1000.0;
    hd.saved = sf * h + h + 1000.0;
    hd.output = 1000.0;
    layers.push(hd);
    Ok(Network {
        title: "ViT-Huge/14".to_string(),
        input: (3 * img * img) as f64,
        input_kind: InputKind::Image,
        shape_note: format!(
            "{img}x{img} px input, {n} patches of {P}x{P} + class token = {s} tokens; 34 \
             layers: patch embedding, 32 encoder layers, final LayerNorm + classifier"
        ),
        layers,
        accounting_note: format!("{TF_ACCOUNTING}; trained without dropout (no masks)"),
    })
}

/// Swin-Huge as in Galvatron-BMW ("Swin-Huge-32": depths 2/2/26/2, widths 320/640/1280/2560,
/// head size 32, window 7, patch 4, MLP ratio 4).
pub(crate) fn swin_huge(img: u64) -> Result<Network, String> {
    const DEPTHS: [u32; 4] = [2, 2, 26, 2];
    const C: u64 = 320;
    const WINDOW: u64 = 7;
    if img < 4 {
        return Err(format!("{img} px is smaller than one 4 px patch"));
    }
    let mut layers = Vec::new();
    let mut r = img / 4;
    let mut e = LayerSpec::new("patch_embed", "embedding");
    e.params = (3 * 16 * C + C + 2 * C) as f64;
    e.macs = (r * r * 3 * 16 * C) as f64;
    e.saved = (3 * img * img + r * r * C) as f64; // image, LayerNorm input
    e.output = (r * r * C) as f64;
    layers.push(e);
    for (i, &depth) in DEPTHS.iter().enumerate() {
        let c = C << i;
        let dm = Dims {
            h: c,
            heads: c / 32,
            d: c,
            ff: 4 * c,
            bias: true,
            norm: 2,
            dropout: false,
        };
        // Swin shrinks the window to the feature map when the map is smaller, and pads the map
        // to a whole number of windows otherwise.
        let m = WINDOW.min(r);
        let windows = r.div_ceil(m) * r.div_ceil(m);
        let n = (r * r) as f64;
        let pairs = (windows * m * m * m * m) as f64;
        for j in 0..depth {
            let mut l = LayerSpec::new(format!("stage{}.{j}", i + 1), "transformer");
            attention(&mut l, &dm, n, n, pairs);
            mlp(&mut l, &dm, n);
            l.params += ((2 * m - 1) * (2 * m - 1) * dm.heads) as f64; // relative position bias
            l.output = n * c as f64;
            layers.push(l);
        }
        if i + 1 < DEPTHS.len() {
            // Patch merging: 2x2 neighbours concatenated (4c), LayerNorm, linear 4c -> 2c.
            let r2 = r.div_ceil(2);
            let n2 = (r2 * r2) as f64;
            let mut l = LayerSpec::new(format!("merge{}", i + 1), "patch-merging");
            l.params = (8 * c + 8 * c * c) as f64;
            l.macs = n2 * (8 * c * c) as f64;
            l.saved = 2.0 * n2 * (4 * c) as f64; // the concatenation (LayerNorm input), its output
            l.output = n2 * (2 * c) as f64;
            layers.push(l);
            r = r2;
        }
    }
    let cf = (C << 3) as f64;
    let n = (r * r) as f64;
    let mut hd = LayerSpec::new("head", "classifier");
    hd.params = 2.0 * cf + cf * 1000.0 + 1000.0;
    hd.macs = cf * 1000.0;
    hd.saved = n * cf + cf + 1000.0; // LayerNorm input, pooled features, logits
    hd.output = 1000.0;
    layers.push(hd);
    Ok(Network {
        title: "Swin-Huge (Galvatron-BMW's Swin-Huge-32)".to_string(),
        input: (3 * img * img) as f64,
        input_kind: InputKind::Image,
        shape_note: format!(
            "{img}x{img} px input, 4x4 patches, window 7; {} layers: patch embedding, 32 Swin \
             blocks (2/2/26/2), 3 patch mergings, final LayerNorm + classifier",
            layers.len()
        ),
        layers,
        accounting_note: format!(
            "{TF_ACCOUNTING}; attention is windowed (a s^2 becomes a x tokens x 49); trained \
             without dropout (no masks); shifted-window rolls and masks are not counted"
        ),
    })
}
