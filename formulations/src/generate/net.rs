//! Precision-free description of a network as a chain of layers, per sample.
//!
//! The generator's private builders (CNNs, transformers) produce a [`Network`]; the generator
//! turns it into an [`crate::instance::Instance`] by multiplying element counts by the
//! micro-batch and the bytes per element, and multiply-accumulates (MACs) by the device rate.

/// One layer of an analytic chain. Every quantity is **per sample**.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerSpec {
    /// Layer name (`layer3.5`, `encoder.11`, ...).
    pub name: String,
    /// Kind (`bottleneck`, `inception`, `transformer`, ...).
    pub kind: &'static str,
    /// Multiply-accumulates of the forward pass counted for time: convolutions, linear layers and
    /// attention matrix products. Normalisation, activations, pooling and lookups are not counted.
    pub macs: f64,
    /// Parameters owned by this layer (each parameter of the network is owned by one layer).
    pub params: f64,
    /// Parameters this layer holds as a copy of parameters owned by another layer (tied
    /// embeddings kept by both the first and the last pipeline stage). They occupy memory but are
    /// not counted in the network's parameter total.
    pub tied_params: f64,
    /// Elements of the tensor this layer sends on.
    pub output: f64,
    /// Elements (at the activation precision) kept for the backward pass: this layer's input plus
    /// the tensors created inside the layer that its backward needs, *excluding* its own output
    /// (which is counted once, by the next layer, as its input).
    pub saved: f64,
    /// Bytes per sample kept for the backward that do not scale with the activation precision:
    /// dropout masks (1 byte per element) and token ids (8 bytes each).
    pub saved_fixed_bytes: f64,
    /// Elements crossing a cut after this layer when that differs from `output`.
    pub cut: Option<f64>,
}

impl LayerSpec {
    /// A layer with no parameters, no cost and no tensors; fields are filled by the builders.
    pub(crate) fn new(name: impl Into<String>, kind: &'static str) -> LayerSpec {
        LayerSpec {
            name: name.into(),
            kind,
            macs: 0.0,
            params: 0.0,
            tied_params: 0.0,
            output: 0.0,
            saved: 0.0,
            saved_fixed_bytes: 0.0,
            cut: None,
        }
    }
}

/// What the model input is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InputKind {
    /// Pixels, stored at the activation precision.
    Image,
    /// Token ids, stored as 8-byte integers (PyTorch `int64`).
    Tokens,
}

/// A network as a chain of layers, per sample, independent of precision and device.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// Human-readable model name (`ResNet-50`).
    pub title: String,
    /// Elements of the model input per sample.
    pub input: f64,
    /// What the input elements are.
    pub input_kind: InputKind,
    /// The layers in execution order.
    pub layers: Vec<LayerSpec>,
    /// Input size and granularity, for the instance's `source` field.
    pub shape_note: String,
    /// How `output`, `saved` and `cut` were counted for this family, for the `source` field.
    pub accounting_note: String,
}

impl Network {
    /// Total number of parameters (tied copies counted once).
    pub fn params(&self) -> f64 {
        self.layers.iter().map(|l| l.params).sum()
    }

    /// Total forward multiply-accumulates per sample.
    pub fn macs(&self) -> f64 {
        self.layers.iter().map(|l| l.macs).sum()
    }
}

/// A feature map (channels x height x width) of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fm {
    pub c: u64,
    pub h: u64,
    pub w: u64,
}

impl Fm {
    pub fn new(c: u64, h: u64, w: u64) -> Fm {
        Fm { c, h, w }
    }

    /// Number of elements.
    pub fn elems(self) -> f64 {
        (self.c * self.h * self.w) as f64
    }

    /// Same spatial size, other channel count.
    pub fn with_c(self, c: u64) -> Fm {
        Fm { c, ..self }
    }
}

/// Output length of a convolution or pooling window along one axis (PyTorch floor rule), or an
/// error when the input is smaller than the window.
pub(crate) fn out_len(x: u64, k: u64, s: u64, p: u64, what: &str) -> Result<u64, String> {
    if x + 2 * p < k {
        Err(format!(
            "the feature map of {what} is {x} px wide, smaller than its {k} px window"
        ))
    } else {
        Ok((x + 2 * p - k) / s + 1)
    }
}

/// Accumulates the costs of the operations of one layer.
#[derive(Debug)]
pub(crate) struct Acc {
    pub layer: LayerSpec,
}

/// A 2-D convolution: output channels, kernel (h, w), stride, padding (h, w).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conv {
    pub out: u64,
    pub k: (u64, u64),
    pub stride: u64,
    pub pad: (u64, u64),
}

/// A square convolution `k x k` with stride `s` and padding `p`.
pub(crate) fn conv(out: u64, k: u64, s: u64, p: u64) -> Conv {
    Conv {
        out,
        k: (k, k),
        stride: s,
        pad: (p, p),
    }
}

/// A `kh x kw` convolution with stride 1 and "same" padding (Inception's factorized 1x7, 7x1...).
pub(crate) fn conv_rect(out: u64, kh: u64, kw: u64) -> Conv {
    Conv {
        out,
        k: (kh, kw),
        stride: 1,
        pad: (kh / 2, kw / 2),
    }
}

impl Acc {
    pub fn new(name: impl Into<String>, kind: &'static str) -> Acc {
        Acc {
            layer: LayerSpec::new(name, kind),
        }
    }

    /// Keeps `elems` elements for the backward pass.
    pub fn save(&mut self, elems: f64) {
        self.layer.saved += elems;
    }

    /// A convolution without bias and without normalisation; saves nothing (its input is saved by
    /// whoever produced it).
    pub fn conv_only(&mut self, x: Fm, c: Conv, bias: bool) -> Result<Fm, String> {
        let name = self.layer.name.clone();
        let h = out_len(x.h, c.k.0, c.stride, c.pad.0, &name)?;
        let w = out_len(x.w, c.k.1, c.stride, c.pad.1, &name)?;
        let y = Fm::new(c.out, h, w);
        let per_out = (x.c * c.k.0 * c.k.1) as f64;
        self.layer.macs += y.elems() * per_out;
        self.layer.params += c.out as f64 * per_out + if bias { c.out as f64 } else { 0.0 };
        Ok(y)
    }

    /// Convolution (no bias) + BatchNorm: saves the BatchNorm input.
    pub fn conv_bn(&mut self, x: Fm, c: Conv) -> Result<Fm, String> {
        let y = self.conv_only(x, c, false)?;
        self.layer.params += 2.0 * y.c as f64;
        self.save(y.elems());
        Ok(y)
    }

    /// Convolution (no bias) + BatchNorm + ReLU: saves the BatchNorm input and the ReLU output
    /// (which is also the next convolution's input).
    pub fn conv_bn_relu(&mut self, x: Fm, c: Conv) -> Result<Fm, String> {
        let y = self.conv_bn(x, c)?;
        self.save(y.elems());
        Ok(y)
    }

    /// BatchNorm over `x` (saves its input) followed by an in-place ReLU (saves its output).
    pub fn bn_relu(&mut self, x: Fm) {
        self.layer.params += 2.0 * x.c as f64;
        self.save(2.0 * x.elems());
    }

    /// Max or average pooling `k x k`, stride `s`, padding `p`; saves nothing (a max pooling's
    /// input is the ReLU output saved before it; its int64 indices are not counted).
    pub fn pool(&mut self, x: Fm, k: u64, s: u64, p: u64) -> Result<Fm, String> {
        let name = self.layer.name.clone();
        Ok(Fm::new(
            x.c,
            out_len(x.h, k, s, p, &name)?,
            out_len(x.w, k, s, p, &name)?,
        ))
    }

    /// Fully connected layer with bias over `n` positions; saves nothing.
    pub fn linear(&mut self, n: f64, inp: u64, out: u64, bias: bool) {
        self.layer.macs += n * (inp * out) as f64;
        self.layer.params += (inp * out) as f64 + if bias { out as f64 } else { 0.0 };
    }

    /// Finishes the layer with `output` elements sent on. `drop_output_from_saved`: the last
    /// operation saved its own output (a ReLU), which is the next layer's input and is counted
    /// there, so it is removed here.
    pub fn finish(mut self, output: f64, drop_output_from_saved: bool) -> LayerSpec {
        self.layer.output = output;
        if drop_output_from_saved {
            self.layer.saved -= output;
        }
        self.layer
    }
}
