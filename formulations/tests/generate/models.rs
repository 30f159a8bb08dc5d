//! Today's language models and mixtures of experts: released parameter counts, context lengths,
//! repeated blocks.

use super::*;

/// Today's language models: the parameter counts of the released checkpoints (Hugging Face
/// `config.json` shapes: Meta-Llama-3-8B / 70B, Llama-3.1-405B, Mixtral-8x7B-v0.1; GPT-3 175B
/// from the GPT-3 paper's Table 2.1).
#[test]
fn todays_language_models_match_their_released_parameter_counts() {
    assert_eq!(params("llama3-8b"), 8_030_261_248.0);
    assert_eq!(params("llama3-70b"), 70_553_706_496.0);
    assert_eq!(params("llama3-405b"), 405_853_388_800.0);
    assert_eq!(params("mixtral-8x7b"), 46_702_792_704.0);
    assert_within(params("gpt3-175b"), 175e9, 0.01, "gpt3-175b");
    assert_eq!(network(&opts("gpt3-175b")).unwrap().layers.len(), 98);
    assert_eq!(network(&opts("llama3-405b")).unwrap().layers.len(), 128);
}

/// A mixture-of-experts block holds every expert but each token runs two: at one token its
/// multiply-accumulates are the weights a token touches (attention, two experts, the router)
/// plus the two score products.
#[test]
fn mixtral_counts_every_expert_but_computes_two() {
    let net = network(&GenerateOptions {
        seq_len: Some(1),
        ..opts("mixtral-8x7b")
    })
    .unwrap();
    let (h, dkv, ff, experts) = (4096.0, 1024.0, 14336.0, 8.0);
    let block = &net.layers[1];
    let attention = 2.0 * h * h + 2.0 * h * dkv;
    assert_eq!(
        block.params,
        2.0 * h + attention + experts * 3.0 * h * ff + h * experts
    );
    assert_eq!(
        block.macs,
        attention + 2.0 * h + 2.0 * 3.0 * h * ff + h * experts
    );
    let dense = network(&GenerateOptions {
        seq_len: Some(1),
        ..opts("llama3-8b")
    })
    .unwrap();
    assert_eq!(dense.layers[1].macs, attention + 2.0 * h + 3.0 * h * ff);
}

#[test]
fn context_lengths_are_checked() {
    let e = network(&GenerateOptions {
        seq_len: Some(8193),
        ..opts("llama3-8b")
    })
    .unwrap_err();
    assert!(e.to_string().contains("8192 tokens of context"), "{e}");
}

/// `blocks` repeats a decoder-only model's block: the chain has blocks + 2 layers, every block
/// the model's own, and the name and title say how many; other models and zero are refused.
#[test]
fn blocks_repeat_a_decoder_block() {
    let base = network(&opts("gpt3-6.7b")).unwrap();
    let o = GenerateOptions {
        blocks: Some(1248),
        ..opts("gpt3-6.7b")
    };
    let long = network(&o).unwrap();
    assert_eq!(long.layers.len(), 1250);
    assert_eq!(long.layers[700].macs, base.layers[1].macs);
    assert_eq!(long.layers[700].params, base.layers[1].params);
    assert_eq!(long.layers[1249].name, "head");
    let inst = generate(&o).unwrap();
    assert_eq!(inst.name, "gpt3-6.7b-1248blocks-s2048-b1-4gpu-16gib");
    assert_eq!(inst.model.name, "GPT-3 6.7B with 1248 decoder blocks");
    let llama = GenerateOptions {
        blocks: Some(510),
        ..opts("llama3-8b")
    };
    assert_eq!(generate(&llama).unwrap().num_layers(), 512);
    // The model's own count is the default.
    assert_eq!(generate(&opts("llama3-405b")).unwrap().num_layers(), 128);
    let e = generate(&GenerateOptions {
        blocks: Some(4),
        ..opts("resnet50")
    })
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("blocks: resnet50 has a fixed layout"), "{e}");
    for b in [0, 100_001] {
        let e = generate(&GenerateOptions {
            blocks: Some(b),
            ..opts("gpt3-2.6b")
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!("{b} decoder blocks; between 1 and 100000")),
            "{e}"
        );
    }
}
