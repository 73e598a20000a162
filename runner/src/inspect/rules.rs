//! SPEC §4.11 applied to the raw bytes of an upload: size, header, full validation, the import
//! allow-list, the module's own memory and the required exports.
//!
//! One pass over the module with `wasmparser`: every payload is validated as it is read (function
//! bodies included), and the rules look only at the import, memory and export sections, so the
//! work is linear in the size of the module and nothing is kept but the function export names.

use std::collections::BTreeSet;

use serde::Serialize;
use wasmparser::{
    CompositeInnerType, ExternalKind, FuncType, FuncValidatorAllocations, Parser, Payload, TypeRef,
    ValType, ValidPayload, Validator, WasmFeatures,
};

use schema::manifest::Manifest;
// The import modules a module may use, each defined where it is linked: the platform's five
// functions (the Extism user namespace), the Extism kernel the runner implements on the host,
// and WASI preview 1 without sockets and a file system.
use crate::host::MODULE as USER_MODULE;
use crate::kernel::MODULE as KERNEL_MODULE;
use crate::wasi::MODULE as WASI_MODULE;
use crate::{Error, Refusal};

use schema::module::MAX_MODULE_BYTES;

/// The first four bytes of every WebAssembly binary.
const MAGIC: [u8; 4] = *b"\0asm";
/// The version field of a core module (version 1). A component carries a different version and
/// layer 1 in the same four bytes.
const MODULE_VERSION: [u8; 4] = [1, 0, 0, 0];
const COMPONENT_LAYER: [u8; 2] = [1, 0];

/// The WebAssembly 2.0 feature set: mutable globals, sign extension, saturating float-to-int,
/// multi-value, bulk memory, reference types and SIMD, all of which wasmtime 48 enables by
/// default and the PDK toolchains emit. Threads (shared memory), memory64, multi-memory, the
/// component model, exceptions, GC, tail calls and the other post-2.0 proposals are refused by
/// leaving them out.
const FEATURES: WasmFeatures = WasmFeatures::WASM2;

/// WASI preview 1 name prefixes that are refused: sockets and paths (SPEC §4.11 rule 2).
const WASI_REFUSED_PREFIXES: [&str; 2] = ["sock_", "path_"];

/// The exports every module has (SPEC §4.11 rule 4).
pub(crate) const REQUIRED_EXPORTS: [&str; 2] = ["manifest", "invoke"];
/// The export a module provides when its manifest says `handles.webhook`.
pub(crate) const WEBHOOK_EXPORT: &str = "handle_webhook";
/// The export a module provides when its manifest names `handles.handoff`.
pub(crate) const HANDOFF_EXPORT: &str = "handoff";
/// The reactor initialiser the runner calls once per instance when it is exported.
pub(crate) const INITIALIZE_EXPORT: &str = "_initialize";

/// Longest import or export name a refusal message quotes in full.
const MAX_NAME_SHOWN: usize = 100;

/// A function type as the import rules compare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signature {
    pub params: &'static [ValType],
    pub results: &'static [ValType],
}

impl Signature {
    const fn new(params: &'static [ValType], results: &'static [ValType]) -> Self {
        Self { params, results }
    }

    fn matches(&self, ty: &FuncType) -> bool {
        ty.params() == self.params && ty.results() == self.results
    }
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_type(f, self.params, self.results)
    }
}

const I32: ValType = ValType::I32;
const I64: ValType = ValType::I64;

/// `(handle) -> handle`.
const HANDLE_TO_HANDLE: Signature = Signature::new(&[I64], &[I64]);
/// `(handle) -> ()`.
const HANDLE_TO_NOTHING: Signature = Signature::new(&[I64], &[]);
/// `() -> handle`.
const NOTHING_TO_HANDLE: Signature = Signature::new(&[], &[I64]);
/// `(handle, handle) -> ()`.
const TWO_HANDLES_TO_NOTHING: Signature = Signature::new(&[I64, I64], &[]);

/// The platform's functions in [`USER_MODULE`] and their exact types. Every argument and result
/// is an Extism handle (an i64 offset into the call's arena, 0 = empty) to a UTF-8 JSON
/// document; `log` answers nothing.
///
/// - `http_send(request) -> response`: one vendor HTTP request.
/// - `secret_get(name) -> value`: one of the install's secrets.
/// - `document_list(filter) -> list`: the tenant's clean documents the call may read.
/// - `document_read(id) -> document`: one document, body included.
/// - `log(entry)`: one log line of the call.
pub(crate) const USER_FUNCTIONS: [(&str, Signature); 5] = [
    ("http_send", HANDLE_TO_HANDLE),
    ("secret_get", HANDLE_TO_HANDLE),
    ("document_list", HANDLE_TO_HANDLE),
    ("document_read", HANDLE_TO_HANDLE),
    ("log", HANDLE_TO_NOTHING),
];

/// The Extism kernel functions in [`KERNEL_MODULE`] and their exact types (the types of the
/// kernel that the Extism runtime ships; bytes are i32, everything else i64).
pub(crate) const KERNEL_FUNCTIONS: [(&str, Signature); 32] = [
    ("alloc", HANDLE_TO_HANDLE),
    ("free", HANDLE_TO_NOTHING),
    ("length", HANDLE_TO_HANDLE),
    ("length_unsafe", HANDLE_TO_HANDLE),
    ("load_u8", Signature::new(&[I64], &[I32])),
    ("load_u64", HANDLE_TO_HANDLE),
    ("input_load_u8", Signature::new(&[I64], &[I32])),
    ("input_load_u64", HANDLE_TO_HANDLE),
    ("store_u8", Signature::new(&[I64, I32], &[])),
    ("store_u64", TWO_HANDLES_TO_NOTHING),
    ("input_set", TWO_HANDLES_TO_NOTHING),
    ("input_length", NOTHING_TO_HANDLE),
    ("input_offset", NOTHING_TO_HANDLE),
    ("output_set", TWO_HANDLES_TO_NOTHING),
    ("output_length", NOTHING_TO_HANDLE),
    ("output_offset", NOTHING_TO_HANDLE),
    ("error_set", HANDLE_TO_NOTHING),
    ("error_get", NOTHING_TO_HANDLE),
    ("reset", Signature::new(&[], &[])),
    ("memory_bytes", NOTHING_TO_HANDLE),
    ("config_get", HANDLE_TO_HANDLE),
    ("var_get", HANDLE_TO_HANDLE),
    ("var_set", TWO_HANDLES_TO_NOTHING),
    ("http_request", Signature::new(&[I64, I64], &[I64])),
    ("http_status_code", Signature::new(&[], &[I32])),
    ("http_headers", NOTHING_TO_HANDLE),
    ("log_info", HANDLE_TO_NOTHING),
    ("log_debug", HANDLE_TO_NOTHING),
    ("log_warn", HANDLE_TO_NOTHING),
    ("log_error", HANDLE_TO_NOTHING),
    ("log_trace", HANDLE_TO_NOTHING),
    ("get_log_level", Signature::new(&[], &[I32])),
];

/// `(i32, i32) -> errno`, the shape of most WASI preview 1 functions.
const WASI_TWO: Signature = Signature::new(&[I32, I32], &[I32]);
/// `(i32) -> errno`.
const WASI_ONE: Signature = Signature::new(&[I32], &[I32]);

/// WASI preview 1 (`wasi_snapshot_preview1` as the WASI SDK, TinyGo, AssemblyScript and Zig
/// import it) without its `sock_*` and `path_*` functions, with each function's type. The runner
/// implements a few and answers `ENOSYS` from the rest (`crate::wasi`).
pub(crate) const WASI_FUNCTIONS: [(&str, Signature); 32] = [
    ("args_get", WASI_TWO),
    ("args_sizes_get", WASI_TWO),
    ("environ_get", WASI_TWO),
    ("environ_sizes_get", WASI_TWO),
    ("clock_res_get", WASI_TWO),
    ("clock_time_get", Signature::new(&[I32, I64, I32], &[I32])),
    ("fd_advise", Signature::new(&[I32, I64, I64, I32], &[I32])),
    ("fd_allocate", Signature::new(&[I32, I64, I64], &[I32])),
    ("fd_close", WASI_ONE),
    ("fd_datasync", WASI_ONE),
    ("fd_fdstat_get", WASI_TWO),
    ("fd_fdstat_set_flags", WASI_TWO),
    (
        "fd_fdstat_set_rights",
        Signature::new(&[I32, I64, I64], &[I32]),
    ),
    ("fd_filestat_get", WASI_TWO),
    ("fd_filestat_set_size", Signature::new(&[I32, I64], &[I32])),
    (
        "fd_filestat_set_times",
        Signature::new(&[I32, I64, I64, I32], &[I32]),
    ),
    (
        "fd_pread",
        Signature::new(&[I32, I32, I32, I64, I32], &[I32]),
    ),
    ("fd_prestat_get", WASI_TWO),
    (
        "fd_prestat_dir_name",
        Signature::new(&[I32, I32, I32], &[I32]),
    ),
    (
        "fd_pwrite",
        Signature::new(&[I32, I32, I32, I64, I32], &[I32]),
    ),
    ("fd_read", Signature::new(&[I32, I32, I32, I32], &[I32])),
    (
        "fd_readdir",
        Signature::new(&[I32, I32, I32, I64, I32], &[I32]),
    ),
    ("fd_renumber", WASI_TWO),
    ("fd_seek", Signature::new(&[I32, I64, I32, I32], &[I32])),
    ("fd_sync", WASI_ONE),
    ("fd_tell", WASI_TWO),
    ("fd_write", Signature::new(&[I32, I32, I32, I32], &[I32])),
    ("poll_oneoff", Signature::new(&[I32, I32, I32, I32], &[I32])),
    ("proc_exit", Signature::new(&[I32], &[])),
    ("proc_raise", WASI_ONE),
    ("sched_yield", Signature::new(&[], &[I32])),
    ("random_get", WASI_TWO),
];

/// What the rules learnt about a module that passed them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleShape {
    /// The exported functions the host can call as plugin functions, that is of type
    /// `() -> i32` or `() -> ()`. A function export of another type cannot be called that way,
    /// so it is not listed.
    pub exports: BTreeSet<String>,
    /// Initial size of the module's own memory, in 64 KiB pages.
    pub memory_initial_pages: u64,
    /// Declared maximum of that memory, in 64 KiB pages.
    pub memory_maximum_pages: Option<u64>,
    /// Whether `_initialize` is exported as `() -> ()` (a WASI reactor or a C module built with
    /// `-mexec-model=reactor`): the host calls it once per instance before anything else.
    pub initialize: bool,
}

impl ModuleShape {
    /// Whether the module exports `name` as a callable plugin function.
    pub fn has_export(&self, name: &str) -> bool {
        self.exports.contains(name)
    }
}

/// Applies SPEC §4.11 to `bytes`: the module's shape, or why it is refused.
///
/// The memory cap is not checked here; [`super::cap_memory`] writes it.
pub fn check_module(bytes: &[u8]) -> Result<ModuleShape, Error> {
    check_header(bytes)?;

    let mut validator = Validator::new_with_features(FEATURES);
    let mut allocations = FuncValidatorAllocations::default();
    let mut memory: Option<(u64, Option<u64>)> = None;
    // (name, function index) of every function export; their types are known at the end.
    let mut function_exports: Vec<(String, u32)> = Vec::new();

    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(invalid)?;
        match validator.payload(&payload).map_err(invalid)? {
            ValidPayload::Func(to_validate, body) => {
                let mut func = to_validate.into_validator(std::mem::take(&mut allocations));
                func.validate(&body).map_err(invalid)?;
                allocations = func.into_allocations();
            }
            ValidPayload::End(types) => {
                let (initial, maximum) = memory.ok_or_else(|| {
                    Error::refused(Refusal::InvalidModule, "the module defines no memory")
                })?;
                let shape = shape(&types, function_exports, initial, maximum);
                check_required_exports(&shape)?;
                return Ok(shape);
            }
            ValidPayload::Ok | ValidPayload::Parser(_) => {}
        }
        match payload {
            Payload::ImportSection(section) => {
                let Some(types) = validator.types(0) else {
                    return Err(Error::Internal("validator lost the module types".into()));
                };
                for import in section.into_imports() {
                    let import = import.map_err(invalid)?;
                    let ty = match import.ty {
                        TypeRef::Func(index) | TypeRef::FuncExact(index) => func_type(
                            &types[types.core_type_at_in_module(index)]
                                .composite_type
                                .inner,
                        ),
                        _ => None,
                    };
                    check_import(import.module, import.name, &import.ty, ty)?;
                }
            }
            Payload::MemorySection(section) => {
                for entry in section {
                    let entry = entry.map_err(invalid)?;
                    if memory.is_some() {
                        return Err(Error::refused(
                            Refusal::InvalidModule,
                            "the module defines more than one memory",
                        ));
                    }
                    memory = Some((entry.initial, entry.maximum));
                }
            }
            Payload::ExportSection(section) => {
                for export in section {
                    let export = export.map_err(invalid)?;
                    if matches!(export.kind, ExternalKind::Func | ExternalKind::FuncExact) {
                        function_exports.push((export.name.to_owned(), export.index));
                    }
                }
            }
            _ => {}
        }
    }
    // `parse_all` ends with `End` on a complete module and with an error otherwise.
    Err(Error::refused(
        Refusal::InvalidModule,
        "the module ends early",
    ))
}

/// Whether the module provides the optional exports its manifest claims (SPEC §4.11 rule 4).
///
/// Only that direction is a refusal: an export the manifest does not mention is never called,
/// so exporting `handle_webhook` with `handles.webhook: false` is allowed.
pub(crate) fn require_handles(shape: &ModuleShape, manifest: &Manifest) -> Result<(), Error> {
    if manifest.handles.webhook && !shape.has_export(WEBHOOK_EXPORT) {
        return Err(missing_export(
            WEBHOOK_EXPORT,
            "the manifest sets handles.webhook",
        ));
    }
    if manifest.handles.handoff.is_some() && !shape.has_export(HANDOFF_EXPORT) {
        return Err(missing_export(
            HANDOFF_EXPORT,
            "the manifest sets handles.handoff",
        ));
    }
    Ok(())
}

fn check_header(bytes: &[u8]) -> Result<(), Error> {
    if bytes.len() > MAX_MODULE_BYTES {
        return Err(Error::refused(
            Refusal::InvalidModule,
            format!(
                "the module is {} bytes; the limit is {MAX_MODULE_BYTES} bytes (32 MiB)",
                bytes.len()
            ),
        ));
    }
    if bytes.get(..4) != Some(MAGIC.as_slice()) {
        return Err(Error::refused(
            Refusal::NotWasm,
            "the bytes are not WebAssembly (no \\0asm magic number)",
        ));
    }
    match bytes.get(4..8) {
        None => Err(Error::refused(
            Refusal::InvalidModule,
            "the module ends inside its header",
        )),
        Some(version) if version == MODULE_VERSION => Ok(()),
        Some(version) if version[2..] == COMPONENT_LAYER => Err(Error::refused(
            Refusal::InvalidModule,
            "the bytes are a WebAssembly component; only core modules run",
        )),
        Some(version) => Err(Error::refused(
            Refusal::InvalidModule,
            format!(
                "unsupported WebAssembly version {}; only version 1 runs",
                u32::from_le_bytes([version[0], version[1], version[2], version[3]])
            ),
        )),
    }
}

/// The import allow-list. `ty` is the function type when the import is a function.
fn check_import(
    module: &str,
    name: &str,
    import: &TypeRef,
    ty: Option<&FuncType>,
) -> Result<(), Error> {
    if let TypeRef::Memory(_) = import {
        return Err(Error::refused(
            Refusal::ImportedMemory,
            format!(
                "the module imports its memory ({}); it must define its own",
                qualified(module, name)
            ),
        ));
    }
    let expected = match module {
        USER_MODULE => lookup(&USER_FUNCTIONS, name),
        KERNEL_MODULE => lookup(&KERNEL_FUNCTIONS, name),
        WASI_MODULE => {
            if WASI_REFUSED_PREFIXES.iter().any(|p| name.starts_with(p)) {
                return Err(forbidden(
                    module,
                    name,
                    "sockets and paths are not provided",
                ));
            }
            lookup(&WASI_FUNCTIONS, name)
        }
        _ => return Err(forbidden(module, name, "the platform does not provide it")),
    };
    let Some(expected) = expected else {
        return Err(forbidden(module, name, "the platform does not provide it"));
    };
    match ty {
        None => Err(forbidden(module, name, "only functions can be imported")),
        Some(ty) if expected.matches(ty) => Ok(()),
        Some(ty) => Err(forbidden(
            module,
            name,
            &format!(
                "its type is {}, the platform provides {expected}",
                DisplayType(ty)
            ),
        )),
    }
}

fn lookup(table: &[(&str, Signature)], name: &str) -> Option<Signature> {
    table
        .iter()
        .find_map(|(known, signature)| (*known == name).then_some(*signature))
}

fn func_type(inner: &CompositeInnerType) -> Option<&FuncType> {
    match inner {
        CompositeInnerType::Func(ty) => Some(ty),
        _ => None,
    }
}

/// Plugin functions take nothing and answer an i32 status or nothing (the Extism convention).
fn is_plugin_function(ty: &FuncType) -> bool {
    ty.params().is_empty() && matches!(ty.results(), [] | [ValType::I32])
}

fn shape(
    types: &wasmparser::types::Types,
    function_exports: Vec<(String, u32)>,
    initial: u64,
    maximum: Option<u64>,
) -> ModuleShape {
    let types = types.as_ref();
    let mut exports = BTreeSet::new();
    let mut initialize = false;
    for (name, index) in function_exports {
        let Some(ty) = func_type(&types[types.core_function_at(index)].composite_type.inner) else {
            continue;
        };
        if is_plugin_function(ty) {
            if name == INITIALIZE_EXPORT && ty.results().is_empty() {
                initialize = true;
            }
            exports.insert(name);
        }
    }
    ModuleShape {
        exports,
        memory_initial_pages: initial,
        memory_maximum_pages: maximum,
        initialize,
    }
}

fn check_required_exports(shape: &ModuleShape) -> Result<(), Error> {
    for name in REQUIRED_EXPORTS {
        if !shape.has_export(name) {
            return Err(missing_export(name, "every module exports it"));
        }
    }
    Ok(())
}

fn missing_export(name: &str, why: &str) -> Error {
    Error::refused(
        Refusal::MissingExport,
        format!("the module does not export {name} as a function () -> i32 ({why})"),
    )
}

fn invalid(error: wasmparser::BinaryReaderError) -> Error {
    Error::refused(Refusal::InvalidModule, error.to_string())
}

fn forbidden(module: &str, name: &str, why: &str) -> Error {
    Error::refused(
        Refusal::ForbiddenImport,
        format!("import {} is not allowed: {why}", qualified(module, name)),
    )
}

/// `module.name`, each part shortened and escaped: names come from untrusted bytes.
fn qualified(module: &str, name: &str) -> String {
    format!("{}.{}", shown(module), shown(name))
}

fn shown(name: &str) -> String {
    let mut out: String = name
        .chars()
        .take(MAX_NAME_SHOWN)
        .flat_map(char::escape_debug)
        .collect();
    if name.chars().nth(MAX_NAME_SHOWN).is_some() {
        out.push('…');
    }
    out
}

struct DisplayType<'a>(&'a FuncType);

impl std::fmt::Display for DisplayType<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_type(f, self.0.params(), self.0.results())
    }
}

fn write_type(
    f: &mut std::fmt::Formatter<'_>,
    params: &[ValType],
    results: &[ValType],
) -> std::fmt::Result {
    let list = |types: &[ValType]| {
        types
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    write!(f, "({}) -> ({})", list(params), list(results))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module with the required exports, its own memory and `extra` spliced in.
    fn module(extra: &str) -> Vec<u8> {
        wat::parse_str(format!(
            r#"(module
                {extra}
                (memory (export "memory") 2 100)
                (func (export "manifest") (result i32) i32.const 0)
                (func (export "invoke") (result i32) i32.const 0))"#
        ))
        .expect("fixture compiles")
    }

    fn refusal(bytes: &[u8]) -> (Refusal, String) {
        match check_module(bytes) {
            Err(Error::InvalidModule {
                refusal, message, ..
            }) => (refusal, message),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn assert_refused(bytes: &[u8], expected: Refusal, needle: &str) {
        let (refusal, message) = refusal(bytes);
        assert_eq!(refusal, expected, "{message}");
        assert!(
            message.contains(needle),
            "{message:?} should name {needle:?}"
        );
    }

    #[test]
    fn a_plain_module_passes_and_reports_its_shape() {
        let shape = check_module(&module("")).expect("accepted");
        assert_eq!(
            shape.exports,
            BTreeSet::from(["invoke".to_owned(), "manifest".to_owned()])
        );
        assert_eq!(shape.memory_initial_pages, 2);
        assert_eq!(shape.memory_maximum_pages, Some(100));
        assert!(!shape.initialize);
    }

    #[test]
    fn every_platform_import_with_its_exact_type_is_accepted() {
        let mut imports = String::new();
        for (module, table) in [
            (USER_MODULE, USER_FUNCTIONS.as_slice()),
            (KERNEL_MODULE, KERNEL_FUNCTIONS.as_slice()),
            (WASI_MODULE, WASI_FUNCTIONS.as_slice()),
        ] {
            for (name, signature) in table {
                let params: Vec<String> =
                    signature.params.iter().map(ToString::to_string).collect();
                let results: Vec<String> =
                    signature.results.iter().map(ToString::to_string).collect();
                imports.push_str(&format!(
                    r#"(import "{module}" "{name}" (func (param {}) (result {})))"#,
                    params.join(" "),
                    results.join(" ")
                ));
            }
        }
        imports.push_str(
            r#"(import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
               (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))"#,
        );
        check_module(&module(&imports)).expect("accepted");
    }

    #[test]
    fn forbidden_imports_are_refused_with_their_name() {
        let cases = [
            (
                r#"(import "env" "abort" (func (param i32 i32 i32 i32)))"#,
                "env.abort",
            ),
            (r#"(import "vendor" "thing" (func))"#, "vendor.thing"),
            (
                r#"(import "extism:host/user" "http_fetch" (func (param i64) (result i64)))"#,
                "extism:host/user.http_fetch",
            ),
            (
                r#"(import "extism:host/user" "http_send" (func (param i32) (result i64)))"#,
                "extism:host/user.http_send",
            ),
            (
                r#"(import "extism:host/user" "log" (func (param i64) (result i64)))"#,
                "extism:host/user.log",
            ),
            (
                r#"(import "extism:host/env" "alloc" (func (param i32) (result i32)))"#,
                "extism:host/env.alloc",
            ),
            (
                r#"(import "extism:host/env" "load_u8" (func (param i64) (result i64)))"#,
                "extism:host/env.load_u8",
            ),
            (
                r#"(import "extism:host/env" "extism_context" (global i32))"#,
                "extism:host/env.extism_context",
            ),
            (
                r#"(import "extism:host/env" "extism_alloc" (func (param i64) (result i64)))"#,
                "extism:host/env.extism_alloc",
            ),
            (
                r#"(import "extism:host/env" "table" (table 1 funcref))"#,
                "extism:host/env.table",
            ),
            (
                r#"(import "wasi_snapshot_preview1" "sock_accept" (func (param i32 i32 i32) (result i32)))"#,
                "wasi_snapshot_preview1.sock_accept",
            ),
            (
                r#"(import "wasi_snapshot_preview1" "path_open" (func (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))"#,
                "wasi_snapshot_preview1.path_open",
            ),
            (
                r#"(import "wasi_snapshot_preview1" "clock" (global i64))"#,
                "wasi_snapshot_preview1.clock",
            ),
            (
                r#"(import "wasi_snapshot_preview1" "fd_bogus" (func (param i32) (result i32)))"#,
                "wasi_snapshot_preview1.fd_bogus",
            ),
            (
                r#"(import "wasi_snapshot_preview1" "fd_write" (func (param i32) (result i32)))"#,
                "wasi_snapshot_preview1.fd_write",
            ),
        ];
        for (import, name) in cases {
            assert_refused(&module(import), Refusal::ForbiddenImport, name);
        }
    }

    #[test]
    fn a_wrong_type_names_both_types() {
        let (_, message) = refusal(&module(
            r#"(import "extism:host/env" "alloc" (func (param i32) (result i32)))"#,
        ));
        assert!(message.contains("(i32) -> (i32)"), "{message}");
        assert!(message.contains("(i64) -> (i64)"), "{message}");
    }

    #[test]
    fn an_imported_memory_is_refused_whatever_the_import_module() {
        for import_module in ["env", "extism:host/env", "wasi_snapshot_preview1"] {
            let bytes = wat::parse_str(format!(
                r#"(module
                    (import "{import_module}" "memory" (memory 1))
                    (func (export "manifest") (result i32) i32.const 0)
                    (func (export "invoke") (result i32) i32.const 0))"#
            ))
            .expect("fixture compiles");
            assert_refused(&bytes, Refusal::ImportedMemory, "memory");
        }
    }

    #[test]
    fn a_module_without_memory_or_with_two_is_invalid() {
        let none = wat::parse_str(
            r#"(module
                (func (export "manifest") (result i32) i32.const 0)
                (func (export "invoke") (result i32) i32.const 0))"#,
        )
        .expect("fixture compiles");
        assert_refused(&none, Refusal::InvalidModule, "no memory");
        // Two memories need the multi-memory proposal, which validation refuses first.
        let two = module("(memory 1)");
        assert_eq!(refusal(&two).0, Refusal::InvalidModule);
    }

    #[test]
    fn missing_or_mistyped_exports_are_refused_by_name() {
        let without = |skip: &str, replacement: &str| {
            let manifest = if skip == "manifest" {
                replacement
            } else {
                r#"(func (export "manifest") (result i32) i32.const 0)"#
            };
            let invoke = if skip == "invoke" {
                replacement
            } else {
                r#"(func (export "invoke") (result i32) i32.const 0)"#
            };
            wat::parse_str(format!("(module (memory 1) {manifest} {invoke})"))
                .expect("fixture compiles")
        };
        assert_refused(&without("manifest", ""), Refusal::MissingExport, "manifest");
        assert_refused(&without("invoke", ""), Refusal::MissingExport, "invoke");
        let takes_a_parameter = r#"(func (export "invoke") (param i32) (result i32) i32.const 0)"#;
        assert_refused(
            &without("invoke", takes_a_parameter),
            Refusal::MissingExport,
            "invoke",
        );
        let answers_i64 = r#"(func (export "manifest") (result i64) i64.const 0)"#;
        assert_refused(
            &without("manifest", answers_i64),
            Refusal::MissingExport,
            "manifest",
        );
        let a_global = r#"(global (export "invoke") i32 (i32.const 0))"#;
        assert_refused(
            &without("invoke", a_global),
            Refusal::MissingExport,
            "invoke",
        );
        // `() -> ()` is a plugin function too.
        let no_result = r#"(func (export "invoke"))"#;
        check_module(&without("invoke", no_result)).expect("() -> () accepted");
    }

    #[test]
    fn initialize_is_reported_when_exported_as_a_reactor_initialiser() {
        let shape = check_module(&module(r#"(func (export "_initialize"))"#)).expect("accepted");
        assert!(shape.initialize);
        assert!(shape.has_export("_initialize"));
        let shape =
            check_module(&module(r#"(func (export "helper") (param i32))"#)).expect("accepted");
        assert!(
            !shape.has_export("helper"),
            "not callable as a plugin function"
        );
    }

    #[test]
    fn the_exports_the_manifest_claims_are_required() {
        let manifest = |handles: serde_json::Value| {
            super::super::parse_manifest(&serde_json::json!({
                "interface": 1,
                "name": "echo",
                "version": "1.0.0",
                "actions": { "echo": { "input": {}, "output": {} } },
                "handles": handles
            }))
            .expect("valid manifest")
        };
        let webhook = manifest(serde_json::json!({ "webhook": true }));
        let handoff = manifest(serde_json::json!({ "handoff": "vendor-sdk" }));
        let neither = manifest(serde_json::json!({}));

        let plain = check_module(&module("")).expect("accepted");
        let (refusal, message) = match require_handles(&plain, &webhook) {
            Err(Error::InvalidModule {
                refusal, message, ..
            }) => (refusal, message),
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(refusal, Refusal::MissingExport);
        assert!(message.contains("handle_webhook"), "{message}");
        assert!(require_handles(&plain, &handoff).is_err());
        require_handles(&plain, &neither).expect("nothing claimed");

        let both = check_module(&module(
            r#"(func (export "handle_webhook") (result i32) i32.const 0)
               (func (export "handoff") (result i32) i32.const 0)"#,
        ))
        .expect("accepted");
        require_handles(&both, &webhook).expect("exported");
        require_handles(&both, &handoff).expect("exported");
        // Exporting more than the manifest claims is allowed.
        require_handles(&both, &neither).expect("extra exports are never called");
    }

    #[test]
    fn bytes_that_are_not_webassembly_are_not_wasm() {
        let text = b"#!/bin/sh\necho hello\n".as_slice();
        let random = [0x9e, 0x37, 0x79, 0xb9, 0x7f, 0x4a, 0x7c, 0x15, 0xf3, 0x9c];
        for bytes in [&[][..], text, &random, b"\0as"] {
            assert_eq!(refusal(bytes).0, Refusal::NotWasm, "{bytes:?}");
        }
        let wat_text = br#"(module (memory 1))"#;
        assert_eq!(refusal(wat_text).0, Refusal::NotWasm);
    }

    #[test]
    fn a_bad_version_a_component_or_truncated_bytes_are_invalid() {
        assert_refused(b"\0asm\x02\0\0\0", Refusal::InvalidModule, "version 2");
        assert_refused(b"\0asm\x0d\0\x01\0", Refusal::InvalidModule, "component");
        assert_refused(b"\0asm\x01\0", Refusal::InvalidModule, "header");
        let whole = module("");
        for cut in [9, whole.len() / 2, whole.len() - 1] {
            assert_eq!(
                refusal(&whole[..cut]).0,
                Refusal::InvalidModule,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_module_failing_validation_is_invalid_with_the_parser_message() {
        // `i32.add` with an empty stack: well-formed bytes, invalid code.
        let bytes = module(r#"(func (export "bad") (result i32) i32.add)"#);
        let (refusal, message) = refusal(&bytes);
        assert_eq!(refusal, Refusal::InvalidModule);
        assert!(message.contains("type mismatch"), "{message}");
    }

    #[test]
    fn post_2_0_proposals_are_refused() {
        for extra in [
            "(memory 1 1 shared)",
            "(memory i64 1)",
            r#"(tag $e) (func (export "t") (throw $e))"#,
            r#"(type $s (struct (field i32)))"#,
        ] {
            let bytes = wat::parse_str(format!(
                r#"(module {extra}
                    (func (export "manifest") (result i32) i32.const 0)
                    (func (export "invoke") (result i32) i32.const 0))"#
            ))
            .expect("fixture compiles");
            assert_eq!(refusal(&bytes).0, Refusal::InvalidModule, "{extra}");
        }
    }

    #[test]
    fn wasm_2_0_features_are_accepted() {
        let bytes = module(
            r#"(func (export "simd") (result i32) (i32x4.extract_lane 0 (v128.const i32x4 1 2 3 4)))
               (func (export "sat") (param f32) (result i32) (i32.trunc_sat_f32_s (local.get 0)))
               (func (export "multi") (result i32 i32) (i32.const 1) (i32.const 2))
               (func (export "bulk") (memory.fill (i32.const 0) (i32.const 0) (i32.const 1)))
               (func (export "ext") (param i32) (result i32) (i32.extend8_s (local.get 0)))
               (table 1 externref)
               (global (mut i32) (i32.const 0))"#,
        );
        check_module(&bytes).expect("accepted");
    }

    #[test]
    fn more_than_32_mib_is_refused_before_parsing() {
        let mut bytes = module("");
        bytes.resize(MAX_MODULE_BYTES + 1, 0);
        assert_refused(&bytes, Refusal::InvalidModule, "32 MiB");
    }

    #[test]
    fn long_names_are_shortened_in_messages() {
        let name = "x".repeat(10_000);
        let (_, message) = refusal(&module(&format!(r#"(import "{name}" "f" (func))"#)));
        assert!(message.len() < 400, "{}", message.len());
    }
}
