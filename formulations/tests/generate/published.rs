//! Parameter counts and FLOPs against published figures; granularity.

use super::*;

/// Parameter counts against the published ones (torchvision's model tables, Hugging Face
/// configurations, the GPT-3 paper, Galvatron-BMW's Table I, Alpa's benchmark names).
#[test]
fn parameter_counts_match_published_figures() {
    let published: [(&str, f64, f64); 18] = [
        ("resnet50", 25_557_032.0, 0.001),
        ("resnet101", 44_549_160.0, 0.001),
        ("inception-v3", 23_834_568.0, 0.10),
        ("densenet121", 7_978_856.0, 0.10),
        ("wide-resnet", 126_886_696.0, 0.001),
        ("wresnet-1b", 1.0e9, 0.10),
        ("wresnet-2b", 2.0e9, 0.10),
        ("bert-large", 335e6, 0.05),
        ("gpt3-2.6b", 2.65e9, 0.05),
        ("gpt3-6.7b", 6.7e9, 0.05),
        ("gpt3-175b", 175e9, 0.01),
        ("llama3-8b", 8.03e9, 0.001),
        ("llama3-70b", 70.6e9, 0.001),
        ("llama3-405b", 405.9e9, 0.001),
        ("mixtral-8x7b", 46.7e9, 0.001),
        ("t5-512-4", 737_668_096.0, 0.001),
        ("vit-huge", 632e6, 0.01),
        ("swin-huge", 701e6, 0.01),
    ];
    for (model, want, rel) in published {
        assert_within(params(model), want, rel, model);
    }
    // Exact where the architecture is fully public.
    assert_eq!(params("resnet50"), 25_557_032.0);
    assert_eq!(params("resnet101"), 44_549_160.0);
    assert_eq!(params("inception-v3"), 23_834_568.0);
    assert_eq!(params("densenet121"), 7_978_856.0);
    assert_eq!(params("wide-resnet"), 126_886_696.0);
    assert_eq!(params("t5-512-4"), 737_668_096.0);
    assert_eq!(params("gpt3-2.6b"), 2_651_553_280.0);
    // Every model of the table has a test row.
    let names: BTreeSet<&str> = models().iter().map(|m| m.name).collect();
    let tested: BTreeSet<&str> = published.iter().map(|p| p.0).collect();
    assert_eq!(names, tested);
}

#[test]
fn resnet50_at_224_px_is_4_1_gmacs() {
    let net = network(&GenerateOptions {
        image_size: Some(224),
        ..opts("resnet50")
    })
    .unwrap();
    assert_within(net.macs(), 4.1e9, 0.10, "ResNet-50 MACs at 224 px");
    // Conv + fc MACs of torchvision's ResNet-50 are 4.0892 G.
    assert_within(net.macs(), 4.0892e9, 0.001, "ResNet-50 MACs at 224 px");
}

#[test]
fn transformer_flops_follow_24_s_h2_plus_4_s2_h() {
    // Forward FLOPs of one GPT block: 24 s h^2 + 4 s^2 h (MLP 4h).
    let net = network(&opts("gpt3-2.6b")).unwrap();
    let (s, h) = (2048.0, 2560.0);
    let block = &net.layers[1];
    assert_eq!(block.name, "layer.0");
    assert_within(
        2.0 * block.macs,
        24.0 * s * h * h + 4.0 * s * s * h,
        1e-12,
        "GPT block FLOPs",
    );
}

#[test]
fn granularity() {
    let layers = |m: &str| network(&opts(m)).unwrap().layers.len();
    assert_eq!(layers("resnet50"), 18);
    assert_eq!(layers("resnet101"), 35);
    assert_eq!(layers("inception-v3"), 17);
    assert_eq!(layers("densenet121"), 63);
    assert_eq!(layers("bert-large"), 26);
    assert_eq!(layers("gpt3-2.6b"), 34);
    assert_eq!(layers("t5-512-4"), 51);
    assert_eq!(layers("vit-huge"), 34);
    assert_eq!(layers("swin-huge"), 37);
}
