//! Arbitrary JSON through the definition body parser (`POST /definitions/:kind/:key/versions`):
//! never a panic; a body that reads has its problems, names and app calls computed without one;
//! and what a version keeps (the body as read, serialised again) reads back as the same body.
//! The first byte picks the kind.

#![no_main]

use libfuzzer_sys::fuzz_target;
use topics::definitions::{Body, Kind};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, json)) = data.split_first() else {
        return;
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(json) else {
        return;
    };
    let kind = Kind::ALL[usize::from(pick) % Kind::ALL.len()];
    let Ok(body) = Body::parse(kind, value) else {
        return;
    };
    let _ = body.problems();
    let _ = body.names();
    let _ = body.app_calls();
    let kept = serde_json::to_value(&body).expect("a body that read serialises");
    let again = Body::parse(kind, kept).expect("the kept body reads again");
    assert_eq!(again, body, "the kept body reads as the same body");
});
