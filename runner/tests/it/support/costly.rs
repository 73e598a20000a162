//! Modules that are valid but costly to compile, built with `wasm-encoder` (a WAT text of
//! megabytes would cost more to parse than the test is worth).

use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction, MemorySection,
    MemoryType, Module, TypeSection, ValType,
};

/// `functions` functions `(i32) -> i32`, each a chain of `ops` additions to its local, with its
/// own memory and the first function exported as `invoke`. Cranelift's time grows with the
/// total number of instructions, its memory with the size of the largest function.
pub fn module(functions: u32, ops: u32) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32], [ValType::I32]);
    let mut declared = FunctionSection::new();
    let mut code = CodeSection::new();
    let mut body = Function::new([]);
    for k in 0..ops {
        body.instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::I32Const((k % 1000) as i32))
            .instruction(&Instruction::I32Add)
            .instruction(&Instruction::LocalSet(0));
    }
    body.instruction(&Instruction::LocalGet(0))
        .instruction(&Instruction::End);
    for _ in 0..functions {
        declared.function(0);
        code.function(&body);
    }
    let mut memory = MemorySection::new();
    memory.memory(MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut exports = ExportSection::new();
    exports.export("invoke", ExportKind::Func, 0);
    let mut module = Module::new();
    module
        .section(&types)
        .section(&declared)
        .section(&memory)
        .section(&exports)
        .section(&code);
    module.finish()
}
