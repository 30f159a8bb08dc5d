//! Every model generates a valid instance; the accounting rules for bytes, times and cuts.

use super::*;

#[test]
fn every_model_generates_a_valid_instance_that_round_trips() {
    for m in models() {
        let inst = generate(&opts(m.name)).unwrap();
        inst.validate().unwrap();
        let back = Instance::from_json(&inst.to_json()).unwrap();
        assert_eq!(back, inst, "{}", m.name);
        // Deterministic.
        assert_eq!(generate(&opts(m.name)).unwrap().to_json(), inst.to_json());
        assert_eq!(inst.model.batch, m.default_batch);
        for l in &inst.model.layers {
            assert!((l.backward - 2.0 * l.forward).abs() <= 1e-6, "{}", l.name);
            assert!(l.saved.unwrap() > 0.0, "{}: {}", m.name, l.name);
        }
        assert!(!inst.source.is_empty());
    }
}

#[test]
fn bytes_and_times_follow_the_stated_rules() {
    // BERT-Large, mixed precision, batch 8: an encoder layer keeps s h (34 + 5 a s / h) bytes
    // per sample (Korthikanti et al.) and weighs 12.6M parameters x 2 bytes.
    let inst = generate(&opts("bert-large")).unwrap();
    let enc = &inst.model.layers[1];
    assert_eq!(enc.name, "encoder.0");
    let (s, h, a, b) = (512.0, 1024.0, 16.0, 8.0);
    assert_eq!(enc.saved, Some(s * h * (34.0 + 5.0 * a * s / h) * b));
    assert_eq!(enc.weights, 12_596_224.0 * 2.0);
    assert_eq!(enc.output, s * h * 2.0 * b);
    // forward = 2 x MACs x batch / (125 TFLOP/s x 0.3).
    let macs = 12.0 * s * h * h + 2.0 * s * s * h;
    assert!((enc.forward - 2.0 * macs * b / (125e12 * 0.3) * 1e3).abs() < 1e-6);
    assert_eq!(inst.training.optimizer_state_factor, 6.0);
    assert_eq!(inst.training.precision, Some(Precision::Mixed));
    assert_eq!(inst.training.schedule, ScheduleKind::OneFOneB);
    assert_eq!(inst.training.micro_batches, Some(16));
    assert_eq!(inst.model.input, s * b * 8.0);

    // ResNet-50, fp32: weights are parameters x 4 bytes; the MadPipe defaults.
    let inst = generate(&opts("resnet50")).unwrap();
    let w: f64 = inst.model.layers.iter().map(|l| l.weights).sum();
    assert_eq!(w, 25_557_032.0 * 4.0);
    assert_eq!(inst.model.input, 3.0 * 1000.0 * 1000.0 * 4.0 * 8.0);
    assert_eq!(inst.training.schedule, ScheduleKind::Async);
    assert_eq!(inst.training.optimizer_state_factor, 0.0);
    assert_eq!(inst.training.weight_versions, 2);
    assert_eq!(inst.training.micro_batches, None);
    // Stem output: 64 channels at 250 x 250 after the stride-2 convolution and max-pooling.
    assert_eq!(
        inst.model.layers[0].output,
        64.0 * 250.0 * 250.0 * 4.0 * 8.0
    );

    // Options: precision, optimizer, device, efficiency, schedule.
    let o = GenerateOptions {
        precision: Some(Precision::Fp32),
        optimizer: Some(Optimizer::Momentum),
        device: Device::A100,
        efficiency: Some(1.0),
        schedule: Some(ScheduleKind::Gpipe),
        ..opts("resnet50")
    };
    let fast = generate(&o).unwrap();
    assert_eq!(fast.training.optimizer_state_factor, 1.0);
    assert_eq!(fast.training.micro_batches, Some(16));
    let ratio = inst.model.layers[5].forward / fast.model.layers[5].forward;
    assert!((ratio - 19.5 / (15.7 * 0.5)).abs() < 1e-4, "{ratio}");
}

#[test]
fn t5_cuts_carry_the_encoder_output() {
    let inst = generate(&opts("t5-512-4")).unwrap();
    let b = 8.0;
    let enc_out = 512.0 * 1024.0 * 2.0 * b;
    let dec = inst
        .model
        .layers
        .iter()
        .find(|l| l.name == "decoder.3")
        .unwrap();
    assert_eq!(dec.output, 4.0 * 1024.0 * 2.0 * b);
    assert_eq!(dec.cut, Some(dec.output + enc_out));
    // Encoder layers: plain chain, no explicit cut.
    assert!(inst.model.layers[5].cut.is_none());
    // The imbalance: an encoder layer keeps far more activations, a decoder layer more weights.
    let enc = &inst.model.layers[5];
    assert!(enc.saved.unwrap() > 10.0 * dec.saved.unwrap());
    assert!(dec.weights > enc.weights);
}
