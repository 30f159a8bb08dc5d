//! Bad options are reported by field; other input sizes.

use super::*;

fn field_of(e: &InputError) -> &str {
    match e {
        InputError::Field { field, .. } => field,
        other => panic!("expected a field error, got {other}"),
    }
}

#[test]
fn bad_options_are_reported_by_field() {
    let e = generate(&opts("resnet-50")).unwrap_err();
    assert_eq!(field_of(&e), "model");
    let msg = e.to_string();
    assert!(msg.contains("unknown model \"resnet-50\""), "{msg}");
    for m in models() {
        assert!(msg.contains(m.name), "{msg}");
    }

    let e = generate(&GenerateOptions {
        batch: 0,
        ..opts("resnet50")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "batch");

    let e = generate(&GenerateOptions {
        image_size: Some(20),
        ..opts("inception-v3")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "image_size");
    assert!(e.to_string().contains("too small"), "{e}");
    assert_eq!(
        field_of(
            &generate(&GenerateOptions {
                image_size: Some(0),
                ..opts("resnet50")
            })
            .unwrap_err()
        ),
        "image_size"
    );

    let e = generate(&GenerateOptions {
        seq_len: Some(1024),
        ..opts("bert-large")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "seq_len");
    assert!(e.to_string().contains("512"), "{e}");
    let e = generate(&GenerateOptions {
        seq_len: Some(0),
        ..opts("t5-512-4")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "seq_len");
    let e = generate(&GenerateOptions {
        image_size: Some(224),
        ..opts("gpt3-2.6b")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "image_size");
    let e = generate(&GenerateOptions {
        seq_len: Some(128),
        ..opts("resnet50")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "seq_len");

    for bad in [0.0, -1.0, 1.5, f64::NAN] {
        let e = generate(&GenerateOptions {
            efficiency: Some(bad),
            ..opts("resnet50")
        })
        .unwrap_err();
        assert_eq!(field_of(&e), "efficiency");
    }
    for bad in [0.0, -3.0, f64::INFINITY] {
        let e = generate(&GenerateOptions {
            device_tflops: Some(bad),
            ..opts("resnet50")
        })
        .unwrap_err();
        assert_eq!(field_of(&e), "device_tflops");
    }
    let e = generate(&GenerateOptions {
        micro_batches: Some(0),
        ..opts("bert-large")
    })
    .unwrap_err();
    assert_eq!(field_of(&e), "micro_batches");
    let e = generate(&GenerateOptions::new("resnet50", cluster(0, 8.0))).unwrap_err();
    assert_eq!(field_of(&e), "cluster.gpus");
}

#[test]
fn other_input_sizes() {
    let small = generate(&GenerateOptions {
        image_size: Some(299),
        batch: 32,
        ..opts("inception-v3")
    })
    .unwrap();
    assert_eq!(small.name, "inception-v3-299px-b32-4gpu-16gib");
    let short = generate(&GenerateOptions {
        seq_len: Some(128),
        name: Some("short".into()),
        ..opts("bert-large")
    })
    .unwrap();
    assert_eq!(short.name, "short");
    let odd = generate(&GenerateOptions {
        image_size: Some(300),
        ..opts("swin-huge")
    });
    assert!(odd.is_ok());
}
