//! Arbitrary JSON through the manifest checks of inspection (SPEC §2.8, §2.9, and the strict
//! compilation of every JSON Schema a manifest carries): never a panic, and a manifest that is
//! accepted keeps to the limits the rest of the platform relies on.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(manifest) = schema::manifest::parse_manifest(&value) else {
        return;
    };
    assert!((16..=256).contains(&manifest.memory_mib));
    assert!(!manifest.actions.is_empty() && manifest.actions.len() <= 1000);
    assert!(manifest.hosts.len() <= 20 && manifest.secrets.len() <= 20);
    for action in manifest.actions.values() {
        assert!((100..=60_000).contains(&action.timeout_ms));
    }
});
