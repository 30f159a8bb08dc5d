//! Convolutional networks: ResNet / Wide-ResNet, Inception-v3 and DenseNet-121, as chains of
//! blocks. Architectures follow torchvision (and Alpa's Flax model for `wresnet-*`); parameter
//! counts match the published ones (see `tests/generate/published.rs`).
//!
//! Accounting (per sample, at the activation precision):
//! - `output`: the tensor the next block reads;
//! - `saved`: the block input plus, for every convolution followed by BatchNorm, the BatchNorm
//!   input, and for every ReLU its output (in-place ReLUs share it with the next convolution's
//!   input); pooled tensors fed to a convolution; the block's own output is left to the next block;
//! - MACs of convolutions and fully connected layers only (the usual "4.1 GFLOPs" of ResNet-50).

use super::net::{conv, conv_rect, Acc, Fm, InputKind, LayerSpec, Network};

const CLASSES: u64 = 1000;

const CNN_ACCOUNTING: &str = "output = the feature map the next block reads; saved = the block \
    input + every BatchNorm input + every ReLU output (in-place ReLU outputs double as the next \
    convolution's input) + pooled maps fed to a convolution, the block's own output being counted \
    by the next block; max-pooling indices and the classifier's dropout mask are not counted";

/// Stem, bottleneck widths and block counts of a ResNet-style network.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResNetCfg {
    /// Blocks per stage.
    pub blocks: [u32; 4],
    /// Stem channels, also the "planes" of the first stage (doubling at each stage).
    pub stem: u64,
    /// Channels of the first 1x1 convolution of a bottleneck, as a multiple of its planes.
    pub w1: u64,
    /// Channels of the 3x3 convolution of a bottleneck, as a multiple of its planes.
    pub w2: u64,
}

/// ResNet with bottleneck blocks (torchvision v1.5: the stride is on the 3x3 convolution).
/// Layers: the stem (conv 7x7 + BN + ReLU + max-pool), one layer per bottleneck, the head
/// (global average pooling + fully connected).
pub(crate) fn resnet(title: &str, cfg: ResNetCfg, img: u64) -> Result<Network, String> {
    let x0 = Fm::new(3, img, img);
    let mut layers = Vec::new();
    let mut a = Acc::new("stem", "conv");
    a.save(x0.elems());
    let y = a.conv_bn_relu(x0, conv(cfg.stem, 7, 2, 3))?;
    let y = a.pool(y, 3, 2, 1)?;
    layers.push(a.finish(y.elems(), false));
    let mut x = y;
    for (i, &n) in cfg.blocks.iter().enumerate() {
        let planes = cfg.stem << i;
        for j in 0..n {
            let stride = if i > 0 && j == 0 { 2 } else { 1 };
            let mut a = Acc::new(format!("layer{}.{j}", i + 1), "bottleneck");
            a.save(x.elems());
            let h = a.conv_bn_relu(x, conv(planes * cfg.w1, 1, 1, 0))?;
            let h = a.conv_bn_relu(h, conv(planes * cfg.w2, 3, stride, 1))?;
            let h = a.conv_bn(h, conv(planes * 4, 1, 1, 0))?;
            if stride != 1 || x.c != planes * 4 {
                a.conv_bn(x, conv(planes * 4, 1, stride, 0))?;
            }
            // Residual addition, then ReLU: its output is the block output.
            a.save(h.elems());
            layers.push(a.finish(h.elems(), true));
            x = h;
        }
    }
    layers.push(classifier(x));
    let depth = 2 + 3 * cfg.blocks.iter().sum::<u32>();
    Ok(Network {
        title: title.to_string(),
        input: x0.elems(),
        input_kind: InputKind::Image,
        shape_note: format!(
            "{img}x{img} px RGB input; {} layers: stem, one per bottleneck ({:?} blocks, \
             {depth} weight layers), head",
            layers.len(),
            cfg.blocks
        ),
        layers,
        accounting_note: CNN_ACCOUNTING.to_string(),
    })
}

/// Global average pooling + fully connected classifier; saves the pooled vector and the logits.
fn classifier(x: Fm) -> LayerSpec {
    let mut a = Acc::new("head", "classifier");
    a.linear(1.0, x.c, CLASSES, true);
    a.save((x.c + CLASSES) as f64);
    a.finish(CLASSES as f64, false)
}

/// Concatenates branch outputs of equal spatial size.
fn concat(parts: &[Fm]) -> Fm {
    let c = parts.iter().map(|p| p.c).sum();
    Fm::new(c, parts[0].h, parts[0].w)
}

/// A 3x3 stride-1 average pooling feeding a convolution: the pooled map is saved.
fn avg_pool_branch(a: &mut Acc, x: Fm) -> Result<Fm, String> {
    let p = a.pool(x, 3, 1, 1)?;
    a.save(p.elems());
    Ok(p)
}

fn inception_a(a: &mut Acc, x: Fm, pool_features: u64) -> Result<Fm, String> {
    let b1 = a.conv_bn_relu(x, conv(64, 1, 1, 0))?;
    let b5 = a.conv_bn_relu(x, conv(48, 1, 1, 0))?;
    let b5 = a.conv_bn_relu(b5, conv(64, 5, 1, 2))?;
    let b3 = a.conv_bn_relu(x, conv(64, 1, 1, 0))?;
    let b3 = a.conv_bn_relu(b3, conv(96, 3, 1, 1))?;
    let b3 = a.conv_bn_relu(b3, conv(96, 3, 1, 1))?;
    let bp = avg_pool_branch(a, x)?;
    let bp = a.conv_bn_relu(bp, conv(pool_features, 1, 1, 0))?;
    Ok(concat(&[b1, b5, b3, bp]))
}

fn inception_b(a: &mut Acc, x: Fm) -> Result<Fm, String> {
    let b3 = a.conv_bn_relu(x, conv(384, 3, 2, 0))?;
    let bd = a.conv_bn_relu(x, conv(64, 1, 1, 0))?;
    let bd = a.conv_bn_relu(bd, conv(96, 3, 1, 1))?;
    let bd = a.conv_bn_relu(bd, conv(96, 3, 2, 0))?;
    let bp = a.pool(x, 3, 2, 0)?;
    Ok(concat(&[b3, bd, bp]))
}

fn inception_c(a: &mut Acc, x: Fm, c7: u64) -> Result<Fm, String> {
    let b1 = a.conv_bn_relu(x, conv(192, 1, 1, 0))?;
    let b7 = a.conv_bn_relu(x, conv(c7, 1, 1, 0))?;
    let b7 = a.conv_bn_relu(b7, conv_rect(c7, 1, 7))?;
    let b7 = a.conv_bn_relu(b7, conv_rect(192, 7, 1))?;
    let bd = a.conv_bn_relu(x, conv(c7, 1, 1, 0))?;
    let bd = a.conv_bn_relu(bd, conv_rect(c7, 7, 1))?;
    let bd = a.conv_bn_relu(bd, conv_rect(c7, 1, 7))?;
    let bd = a.conv_bn_relu(bd, conv_rect(c7, 7, 1))?;
    let bd = a.conv_bn_relu(bd, conv_rect(192, 1, 7))?;
    let bp = avg_pool_branch(a, x)?;
    let bp = a.conv_bn_relu(bp, conv(192, 1, 1, 0))?;
    Ok(concat(&[b1, b7, bd, bp]))
}

fn inception_d(a: &mut Acc, x: Fm) -> Result<Fm, String> {
    let b3 = a.conv_bn_relu(x, conv(192, 1, 1, 0))?;
    let b3 = a.conv_bn_relu(b3, conv(320, 3, 2, 0))?;
    let b7 = a.conv_bn_relu(x, conv(192, 1, 1, 0))?;
    let b7 = a.conv_bn_relu(b7, conv_rect(192, 1, 7))?;
    let b7 = a.conv_bn_relu(b7, conv_rect(192, 7, 1))?;
    let b7 = a.conv_bn_relu(b7, conv(192, 3, 2, 0))?;
    let bp = a.pool(x, 3, 2, 0)?;
    Ok(concat(&[b3, b7, bp]))
}

fn inception_e(a: &mut Acc, x: Fm) -> Result<Fm, String> {
    let b1 = a.conv_bn_relu(x, conv(320, 1, 1, 0))?;
    let b3 = a.conv_bn_relu(x, conv(384, 1, 1, 0))?;
    let b3a = a.conv_bn_relu(b3, conv_rect(384, 1, 3))?;
    let b3b = a.conv_bn_relu(b3, conv_rect(384, 3, 1))?;
    let bd = a.conv_bn_relu(x, conv(448, 1, 1, 0))?;
    let bd = a.conv_bn_relu(bd, conv(384, 3, 1, 1))?;
    let bda = a.conv_bn_relu(bd, conv_rect(384, 1, 3))?;
    let bdb = a.conv_bn_relu(bd, conv_rect(384, 3, 1))?;
    let bp = avg_pool_branch(a, x)?;
    let bp = a.conv_bn_relu(bp, conv(192, 1, 1, 0))?;
    Ok(concat(&[b1, b3a, b3b, bda, bdb, bp]))
}

/// Inception-v3 (torchvision, without the auxiliary classifier). Layers: the five stem
/// convolutions (the two max-poolings joined to the convolution before them), one layer per
/// Inception module (Mixed_5b ... Mixed_7c), the head.
pub(crate) fn inception_v3(img: u64) -> Result<Network, String> {
    let x0 = Fm::new(3, img, img);
    let mut layers = Vec::new();
    // (name, convolution, max-pool after it)
    let stem = [
        ("Conv2d_1a_3x3", conv(32, 3, 2, 0), false),
        ("Conv2d_2a_3x3", conv(32, 3, 1, 0), false),
        ("Conv2d_2b_3x3", conv(64, 3, 1, 1), true),
        ("Conv2d_3b_1x1", conv(80, 1, 1, 0), false),
        ("Conv2d_4a_3x3", conv(192, 3, 1, 0), true),
    ];
    let mut x = x0;
    for (name, c, pool) in stem {
        let mut a = Acc::new(name, "conv");
        a.save(x.elems());
        let y = a.conv_bn_relu(x, c)?;
        let y = if pool { a.pool(y, 3, 2, 0)? } else { y };
        layers.push(a.finish(y.elems(), !pool));
        x = y;
    }
    type Module = fn(&mut Acc, Fm) -> Result<Fm, String>;
    let modules: [(&str, Module); 11] = [
        ("Mixed_5b", |a, x| inception_a(a, x, 32)),
        ("Mixed_5c", |a, x| inception_a(a, x, 64)),
        ("Mixed_5d", |a, x| inception_a(a, x, 64)),
        ("Mixed_6a", inception_b),
        ("Mixed_6b", |a, x| inception_c(a, x, 128)),
        ("Mixed_6c", |a, x| inception_c(a, x, 160)),
        ("Mixed_6d", |a, x| inception_c(a, x, 160)),
        ("Mixed_6e", |a, x| inception_c(a, x, 192)),
        ("Mixed_7a", inception_d),
        ("Mixed_7b", inception_e),
        ("Mixed_7c", inception_e),
    ];
    for (name, f) in modules {
        let mut a = Acc::new(name, "inception");
        a.save(x.elems());
        let y = f(&mut a, x)?;
        layers.push(a.finish(y.elems(), false));
        x = y;
    }
    layers.push(classifier(x));
    Ok(Network {
        title: "Inception-v3 (torchvision, no auxiliary classifier)".to_string(),
        input: x0.elems(),
        input_kind: InputKind::Image,
        shape_note: format!(
            "{img}x{img} px RGB input; {} layers: 5 stem convolutions (max-pools joined to the \
             convolution before them), one per Inception module (its parallel branches inside \
             the layer; the module output is a single concatenated tensor), head",
            layers.len()
        ),
        layers,
        accounting_note: format!("{CNN_ACCOUNTING}; Inception modules save their branch tensors"),
    })
}

/// DenseNet-121 (torchvision, growth 32, bottleneck 4x, compression 0.5, memory-inefficient
/// concatenation). Layers: the stem, one per dense layer, one per transition, the head.
pub(crate) fn densenet121(img: u64) -> Result<Network, String> {
    const GROWTH: u64 = 32;
    const BLOCKS: [u32; 4] = [6, 12, 24, 16];
    let x0 = Fm::new(3, img, img);
    let mut layers = Vec::new();
    let mut a = Acc::new("stem", "conv");
    a.save(x0.elems());
    let y = a.conv_bn_relu(x0, conv(64, 7, 2, 3))?;
    let y = a.pool(y, 3, 2, 1)?;
    layers.push(a.finish(y.elems(), false));
    let mut x = y;
    for (b, &n) in BLOCKS.iter().enumerate() {
        for j in 0..n {
            let mut a = Acc::new(format!("denseblock{}.layer{}", b + 1, j + 1), "dense");
            if j == 0 {
                // The block input stays alive (as one piece of the feature list) until the block
                // ends; the concatenation below is a copy of it.
                a.save(x.elems());
            }
            // torch.cat of the features so far (a new tensor, the BatchNorm input) + ReLU output.
            a.bn_relu(x);
            let h = a.conv_bn_relu(x, conv(4 * GROWTH, 1, 1, 0))?;
            let f = a.conv_only(h, conv(GROWTH, 3, 1, 1), false)?;
            // The new features stay alive until the end of the block.
            a.save(f.elems());
            let out = x.with_c(x.c + GROWTH);
            layers.push(a.finish(out.elems(), false));
            x = out;
        }
        if b + 1 < BLOCKS.len() {
            let mut a = Acc::new(format!("transition{}", b + 1), "transition");
            a.bn_relu(x);
            let y = a.conv_only(x, conv(x.c / 2, 1, 1, 0), false)?;
            let y = a.pool(y, 2, 2, 0)?;
            layers.push(a.finish(y.elems(), false));
            x = y;
        }
    }
    // Final BatchNorm + ReLU, then the classifier.
    let mut a = Acc::new("head", "classifier");
    a.bn_relu(x);
    a.linear(1.0, x.c, CLASSES, true);
    a.save((x.c + CLASSES) as f64);
    layers.push(a.finish(CLASSES as f64, false));
    Ok(Network {
        title: "DenseNet-121 (torchvision)".to_string(),
        input: x0.elems(),
        input_kind: InputKind::Image,
        shape_note: format!(
            "{img}x{img} px RGB input; {} layers: stem, one per dense layer (6/12/24/16), one \
             per transition, head",
            layers.len()
        ),
        layers,
        accounting_note: format!(
            "{CNN_ACCOUNTING}; DenseNet: output = all feature maps of the block so far (what the \
             next dense layer reads and what crosses a cut, so cut = output), saved = the \
             concatenated copy torch.cat makes + BatchNorm/ReLU tensors + the layer's new \
             features (alive until the block ends) + the block input for a block's first layer"
        ),
    })
}
