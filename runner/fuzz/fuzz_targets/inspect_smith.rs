//! Valid-by-construction modules (wasm-smith, WebAssembly 2.0 features) through the module rules
//! and the memory cap: never a panic; a capped module validates and keeps every other section
//! byte for byte.

#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use wasmparser::{Parser, Payload};

fuzz_target!(|data: &[u8]| {
    let mut input = Unstructured::new(data);
    let Ok(mut config) = input.arbitrary::<wasm_smith::Config>() else {
        return;
    };
    // The features the runner accepts (WebAssembly 2.0), one memory of 32-bit pages.
    config.threads_enabled = false;
    config.memory64_enabled = false;
    config.exceptions_enabled = false;
    config.gc_enabled = false;
    config.tail_call_enabled = false;
    config.relaxed_simd_enabled = false;
    config.custom_page_sizes_enabled = false;
    config.wide_arithmetic_enabled = false;
    config.max_memories = 1;
    config.max_memory32_bytes = 256 << 20;
    let Ok(module) = wasm_smith::Module::new(config, &mut input) else {
        return;
    };
    let bytes = module.to_bytes();
    let _ = runner::check_module(&bytes);
    // wasm-smith may use proposals past 2.0 (extended-const, ...): the invariant below is about
    // modules the runner accepts.
    if accepted_features().validate_all(&bytes).is_err() {
        return;
    }
    let Ok(capped) = runner::cap_memory(&bytes, 16) else {
        return;
    };
    accepted_features()
        .validate_all(&capped)
        .expect("the capped module validates");
    assert_eq!(other_sections(&bytes), other_sections(&capped), "only the memory section changes");
});

fn accepted_features() -> wasmparser::Validator {
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::WASM2)
}

/// The raw bytes of every section but the memory section, in order.
fn other_sections(module: &[u8]) -> Vec<Vec<u8>> {
    let mut sections = Vec::new();
    for payload in Parser::new(0).parse_all(module) {
        let Ok(payload) = payload else { break };
        if let Some((id, range)) = payload.as_section()
            && id != 5
        {
            sections.push(module[range].to_vec());
        }
    }
    sections
}
