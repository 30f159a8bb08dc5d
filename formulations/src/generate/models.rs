//! The models the generator knows: name, description, family and default sizes.

/// Broad family of a model, which fixes its default precision, optimizer and schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Convolutional network: fp32, SGD, async (the MadPipe setting).
    Cnn,
    /// Transformer: mixed precision, Adam, 1f1b.
    Transformer,
}

/// A model the generator knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelInfo {
    /// Name accepted by [`GenerateOptions::model`](super::GenerateOptions::model).
    pub name: &'static str,
    /// One line: architecture, parameters, granularity.
    pub description: &'static str,
    /// Family (default precision, optimizer and schedule).
    pub family: Family,
    /// Default micro-batch (samples).
    pub default_batch: u32,
    /// Default square image side (px) for vision models.
    pub default_image_size: Option<u32>,
    /// Default sequence length (tokens) for language models.
    pub default_seq_len: Option<u32>,
}

const fn cnn(name: &'static str, description: &'static str, batch: u32, img: u32) -> ModelInfo {
    ModelInfo {
        name,
        description,
        family: Family::Cnn,
        default_batch: batch,
        default_image_size: Some(img),
        default_seq_len: None,
    }
}

const fn vision_tf(
    name: &'static str,
    description: &'static str,
    batch: u32,
    img: u32,
) -> ModelInfo {
    ModelInfo {
        name,
        description,
        family: Family::Transformer,
        default_batch: batch,
        default_image_size: Some(img),
        default_seq_len: None,
    }
}

const fn lm(name: &'static str, description: &'static str, batch: u32, seq: u32) -> ModelInfo {
    ModelInfo {
        name,
        description,
        family: Family::Transformer,
        default_batch: batch,
        default_image_size: None,
        default_seq_len: Some(seq),
    }
}

static MODELS: [ModelInfo; 18] = [
    cnn("resnet50", "ResNet-50 (torchvision), 25.6M params; stem + 16 bottlenecks + head = 18 layers", 8, 1000),
    cnn("resnet101", "ResNet-101 (torchvision), 44.5M params; stem + 33 bottlenecks + head = 35 layers", 8, 1000),
    cnn("inception-v3", "Inception-v3 (torchvision, no aux classifier), 23.8M params; 5 stem convs + 11 modules + head = 17 layers", 8, 1000),
    cnn("densenet121", "DenseNet-121 (torchvision), 8.0M params; stem + 58 dense layers + 3 transitions + head = 63 layers", 8, 1000),
    cnn("wide-resnet", "Wide-ResNet WRN-101-2 (torchvision wide_resnet101_2), 126.9M params; stem + 33 bottlenecks + head = 35 layers", 8, 1000),
    cnn("wresnet-1b", "Wide-ResNet \"1B\" of Alpa's benchmark used by CAPTURE (50 layers, base 320 channels, 3x3 width x2), ~1.0B params; 18 layers", 32, 224),
    cnn("wresnet-2b", "Wide-ResNet \"2B\" of Alpa's benchmark used by CAPTURE (50 layers, base 448 channels, 3x3 width x2), ~2.0B params; 18 layers", 32, 224),
    lm("bert-large", "BERT-Large with pre-training heads, 336M params; embeddings + 24 encoder layers + heads = 26 layers", 8, 512),
    lm("gpt3-2.6b", "GPT-3 2.6B (the paper's \"2.7B\": 32 layers, h 2560), 2.65B params; embeddings + 32 blocks + head = 34 layers", 1, 2048),
    lm("gpt3-6.7b", "GPT-3 6.7B (32 layers, h 4096), 6.66B params; embeddings + 32 blocks + head = 34 layers", 1, 2048),
    lm("gpt3-175b", "GPT-3 175B (96 layers, h 12288, 96 heads), 174.6B params; embeddings + 96 blocks + head = 98 layers", 1, 2048),
    lm("llama3-8b", "Llama 3 8B (32 layers, h 4096, GQA 32/8 heads, SwiGLU 14336, untied head), 8.03B params; 34 layers", 1, 8192),
    lm("llama3-70b", "Llama 3 70B (80 layers, h 8192, GQA 64/8 heads, SwiGLU 28672, untied head), 70.6B params; 82 layers", 1, 8192),
    lm("llama3-405b", "Llama 3 405B (126 layers, h 16384, GQA 128/8 heads, SwiGLU 53248, untied head), 405.9B params; 128 layers", 1, 8192),
    lm("mixtral-8x7b", "Mixtral 8x7B (32 layers, h 4096, GQA 32/8 heads, 8 SwiGLU experts of 14336, top-2), 46.7B params (12.9B active); 34 layers", 1, 4096),
    lm("t5-512-4", "T5-512/4 of Galvatron-BMW: T5-Large (24+24 layers, h 1024), 738M params, encoder sequence 512, decoder sequence 4; 51 layers", 8, 512),
    vision_tf("vit-huge", "ViT-Huge/14 (32 layers, h 1280), 632M params, 224 px = 257 tokens; patch embedding + 32 layers + head = 34 layers", 32, 224),
    vision_tf("swin-huge", "Swin-Huge of Galvatron-BMW (2/2/26/2 blocks, widths 320..2560), 701M params; 37 layers", 32, 224),
];

/// Every model [`generate`](super::generate()) knows, with a one-line description.
pub fn models() -> &'static [ModelInfo] {
    &MODELS
}

/// Most decoder blocks [`GenerateOptions::blocks`](super::GenerateOptions::blocks) takes (chains
/// of this length take a few MB).
pub const MAX_BLOCKS: u32 = 100_000;

/// The models whose block count [`GenerateOptions::blocks`] sets.
pub(super) const DECODERS: [&str; 7] = [
    "gpt3-2.6b",
    "gpt3-6.7b",
    "gpt3-175b",
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "mixtral-8x7b",
];

pub(super) fn model_info(name: &str) -> Option<&'static ModelInfo> {
    MODELS.iter().find(|m| m.name == name)
}

pub(super) fn known_models() -> String {
    MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}
