//! The memory cap of SPEC §4.11 rule 3: the manifest's `memoryMiB` written into the module as the
//! maximum of its memory, so the stored module (and the hash that names it) carries its own
//! limit and no engine setting is needed to enforce it.
//!
//! Only the memory section is re-encoded (with `wasm-encoder`); every other section, custom
//! sections included, is copied byte for byte in its place. Re-encoding writes minimal LEB128
//! numbers, so capping a capped module gives the same bytes.

use wasm_encoder::{MemorySection, Section};
use wasmparser::{BinaryReader, MemorySectionReader};

use crate::{Error, Refusal};

/// Size of a WebAssembly page.
pub(crate) const PAGE_BYTES: u64 = 64 * 1024;
/// Pages in one MiB.
const PAGES_PER_MIB: u64 = 1024 * 1024 / PAGE_BYTES;
/// The most pages a 32-bit memory can have (4 GiB).
const MAX_PAGES: u64 = 65_536;

const HEADER_BYTES: usize = 8;
const MEMORY_SECTION_ID: u8 = 5;

/// `bytes` with the maximum of its single defined memory set to `memory_mib` MiB, or to the
/// module's own maximum when that is lower.
///
/// Expects a module that passed [`super::check_module`]: it walks the section structure only and
/// does not validate again. Refused (`invalid_module`) when the memory's initial size is above
/// the cap, when there is not exactly one memory, or when the sections do not parse.
pub fn cap_memory(bytes: &[u8], memory_mib: u32) -> Result<Vec<u8>, Error> {
    let cap = u64::from(memory_mib) * PAGES_PER_MIB;
    if cap > MAX_PAGES {
        return Err(Error::Internal(format!(
            "memory cap of {memory_mib} MiB is beyond the 4 GiB of a 32-bit memory"
        )));
    }
    let header = bytes
        .get(..HEADER_BYTES)
        .ok_or_else(|| invalid("the module ends inside its header"))?;

    let mut out = Vec::with_capacity(bytes.len() + 8);
    out.extend_from_slice(header);
    let mut reader = BinaryReader::new(&bytes[HEADER_BYTES..], HEADER_BYTES);
    let mut capped = false;
    while !reader.eof() {
        let start = reader.original_position();
        let id = reader.read_u8().map_err(parse_error)?;
        let size = reader.read_var_u32().map_err(parse_error)?;
        let content_start = reader.original_position();
        let content = reader.read_bytes(size as usize).map_err(parse_error)?;
        if id != MEMORY_SECTION_ID {
            out.extend_from_slice(&bytes[start..content_start + content.len()]);
            continue;
        }
        if capped {
            return Err(invalid("the module has more than one memory section"));
        }
        capped_section(content, content_start, cap)?.append_to(&mut out);
        capped = true;
    }
    if !capped {
        return Err(invalid("the module defines no memory"));
    }
    Ok(out)
}

/// The memory section with its one memory capped at `cap` pages.
fn capped_section(content: &[u8], offset: usize, cap: u64) -> Result<MemorySection, Error> {
    let reader =
        MemorySectionReader::new(BinaryReader::new(content, offset)).map_err(parse_error)?;
    if reader.count() != 1 {
        return Err(invalid(format!(
            "the module defines {} memories; it must define exactly one",
            reader.count()
        )));
    }
    let mut section = MemorySection::new();
    for memory in reader {
        let memory = memory.map_err(parse_error)?;
        if memory.initial > cap {
            return Err(invalid(format!(
                "the memory starts at {} pages ({} MiB), above the manifest's memoryMiB of {} MiB",
                memory.initial,
                memory.initial.div_ceil(PAGES_PER_MIB),
                cap / PAGES_PER_MIB
            )));
        }
        section.memory(wasm_encoder::MemoryType {
            minimum: memory.initial,
            maximum: Some(memory.maximum.map_or(cap, |max| max.min(cap))),
            memory64: memory.memory64,
            shared: memory.shared,
            page_size_log2: memory.page_size_log2,
        });
    }
    Ok(section)
}

fn invalid(message: impl Into<String>) -> Error {
    Error::refused(Refusal::InvalidModule, message)
}

fn parse_error(error: wasmparser::BinaryReaderError) -> Error {
    invalid(error.to_string())
}

#[cfg(test)]
mod tests {
    use std::ops::Range;

    use wasmparser::{Parser, Payload};

    use super::*;
    use crate::inspect::check_module;

    /// A module with custom sections before and after the memory section, data and code.
    fn module(memory: &str) -> Vec<u8> {
        let mut bytes = wat::parse_str(format!(
            r#"(module
                (@custom "before" "first custom section")
                (type (func (result i32)))
                (import "extism:host/env" "alloc" (func (param i64) (result i64)))
                (func $f (export "manifest") (result i32) i32.const 7)
                (func (export "invoke") (result i32) i32.const 0)
                {memory}
                (global (mut i32) (i32.const 1))
                (data (i32.const 16) "hello")
                (@custom "after" (after data) "last custom section"))"#
        ))
        .expect("fixture compiles");
        // A trailing custom section written by hand, the way some toolchains append one.
        bytes.extend_from_slice(&[0, 6, 4, b't', b'a', b'i', b'l', 0xff]);
        bytes
    }

    /// (section id or custom name, raw bytes of the section contents) for every section.
    fn sections(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut found = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.expect("parses");
            let name = match &payload {
                Payload::CustomSection(custom) => custom.name().to_owned(),
                other => match other.as_section() {
                    Some((id, _)) => id.to_string(),
                    None => continue,
                },
            };
            let (_, range): (u8, Range<usize>) = payload.as_section().expect("a section");
            found.push((name, bytes[range].to_vec()));
        }
        found
    }

    fn memory_limits(bytes: &[u8]) -> (u64, Option<u64>) {
        let shape = check_module(bytes).expect("the capped module passes the rules");
        (shape.memory_initial_pages, shape.memory_maximum_pages)
    }

    #[test]
    fn the_cap_is_written_as_the_maximum() {
        let original = module("(memory (export \"memory\") 2)");
        let capped = cap_memory(&original, 64).expect("capped");
        assert_eq!(memory_limits(&capped), (2, Some(64 * 16)));
        wasmparser::validate(&capped).expect("valid");
    }

    #[test]
    fn a_higher_maximum_is_lowered_and_a_lower_one_kept() {
        let capped = cap_memory(&module("(memory 2 5000)"), 16).expect("capped");
        assert_eq!(memory_limits(&capped), (2, Some(256)));
        let capped = cap_memory(&module("(memory 2 40)"), 256).expect("capped");
        assert_eq!(memory_limits(&capped), (2, Some(40)));
    }

    #[test]
    fn an_initial_size_above_the_cap_is_refused() {
        let error = cap_memory(&module("(memory 257)"), 16).expect_err("refused");
        assert!(
            matches!(
                &error,
                Error::InvalidModule { refusal: Refusal::InvalidModule, message, .. }
                    if message.contains("257 pages")
            ),
            "{error:?}"
        );
        // Exactly at the cap is fine.
        let capped = cap_memory(&module("(memory 256)"), 16).expect("capped");
        assert_eq!(memory_limits(&capped), (256, Some(256)));
    }

    #[test]
    fn capping_is_idempotent() {
        for memory in ["(memory 1)", "(memory 1 3)", "(memory 3 10000)"] {
            let once = cap_memory(&module(memory), 32).expect("capped");
            let twice = cap_memory(&once, 32).expect("capped again");
            assert_eq!(once, twice, "{memory}");
        }
    }

    #[test]
    fn every_other_section_is_byte_identical_and_in_order() {
        let original = module("(memory (export \"memory\") 1)");
        let capped = cap_memory(&original, 128).expect("capped");
        let before = sections(&original);
        let after = sections(&capped);
        let names: Vec<&str> = before.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            after
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
        );
        assert!(names.contains(&"before") && names.contains(&"after") && names.contains(&"tail"));
        for ((name, old), (_, new)) in before.iter().zip(&after) {
            if name == "5" {
                assert_ne!(old, new, "the memory section changed");
            } else {
                assert_eq!(old, new, "section {name} is copied verbatim");
            }
        }
        // Outside the memory section, the bytes are the same bytes.
        let memory = |bytes: &[u8]| {
            Parser::new(0)
                .parse_all(bytes)
                .find_map(|p| match p.expect("parses") {
                    Payload::MemorySection(s) => Some(s.range()),
                    _ => None,
                })
                .expect("a memory section")
        };
        let (old, new) = (memory(&original), memory(&capped));
        // The section's size byte sits just before its contents.
        assert_eq!(original[..old.start - 1], capped[..new.start - 1]);
        assert_eq!(original[old.end..], capped[new.end..]);
    }

    #[test]
    fn a_module_without_memory_is_refused() {
        let bytes = wat::parse_str(r#"(module (func (export "invoke")))"#).expect("compiles");
        assert!(matches!(
            cap_memory(&bytes, 64),
            Err(Error::InvalidModule {
                refusal: Refusal::InvalidModule,
                ..
            })
        ));
        assert!(cap_memory(b"\0asm", 64).is_err());
        let truncated = module("(memory 1)");
        assert!(cap_memory(&truncated[..truncated.len() - 3], 64).is_err());
    }
}
