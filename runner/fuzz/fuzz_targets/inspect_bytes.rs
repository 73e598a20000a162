//! Arbitrary bytes through the module rules and the memory cap: never a panic, and a module
//! that passes the rules and is capped passes the rules again with a maximum within the cap.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cap_byte, bytes)) = data.split_first() else {
        return;
    };
    if runner::check_module(bytes).is_err() {
        return;
    }
    let memory_mib = 16 + u32::from(cap_byte) % 241;
    if let Ok(capped) = runner::cap_memory(bytes, memory_mib) {
        let shape = runner::check_module(&capped).expect("a capped module still passes");
        let maximum = shape.memory_maximum_pages.expect("capped modules have a maximum");
        assert!(maximum <= u64::from(memory_mib) * 16);
    }
});
