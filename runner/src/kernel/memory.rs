//! The kernel's memory functions: allocation, byte and word access, input, output and error.
//! None of them traps on a bad offset (Extism's bounds-checked kernel answers 0 or ignores).

use wasmtime::{Caller, Linker};

use super::MODULE;
use crate::call::CallState;

type C<'a> = Caller<'a, CallState>;

pub(crate) fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.func_wrap(MODULE, "alloc", |mut c: C<'_>, n: i64| -> i64 {
        c.data_mut().arena.alloc(n as u64) as i64
    })?;
    linker.func_wrap(MODULE, "free", |mut c: C<'_>, h: i64| {
        let state = c.data_mut();
        state.arena.free(h as u64);
        if h != 0 && h as u64 == state.input.0 {
            state.input = (0, 0);
        }
    })?;
    linker.func_wrap(MODULE, "length", |c: C<'_>, h: i64| -> i64 {
        c.data().arena.length(h as u64) as i64
    })?;
    linker.func_wrap(MODULE, "length_unsafe", |c: C<'_>, h: i64| -> i64 {
        c.data().arena.length(h as u64) as i64
    })?;
    linker.func_wrap(MODULE, "load_u8", |c: C<'_>, at: i64| -> i32 {
        i32::from(c.data().arena.load_u8(at as u64))
    })?;
    linker.func_wrap(MODULE, "load_u64", |c: C<'_>, at: i64| -> i64 {
        c.data().arena.load_u64(at as u64) as i64
    })?;
    linker.func_wrap(MODULE, "store_u8", |mut c: C<'_>, at: i64, v: i32| {
        c.data_mut().arena.store_u8(at as u64, v as u8);
    })?;
    linker.func_wrap(MODULE, "store_u64", |mut c: C<'_>, at: i64, v: i64| {
        c.data_mut().arena.store_u64(at as u64, v as u64);
    })?;
    linker.func_wrap(MODULE, "memory_bytes", |c: C<'_>| -> i64 {
        c.data().arena.size() as i64
    })?;
    link_input(linker)?;
    link_output(linker)?;
    Ok(())
}

fn link_input(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.func_wrap(MODULE, "input_length", |c: C<'_>| -> i64 {
        c.data().input.1 as i64
    })?;
    linker.func_wrap(MODULE, "input_offset", |c: C<'_>| -> i64 {
        c.data().input.0 as i64
    })?;
    // Offsets relative to the start of the input; nothing past its end.
    linker.func_wrap(MODULE, "input_load_u8", |c: C<'_>, i: i64| -> i32 {
        let (start, len) = c.data().input;
        let i = i as u64;
        if i >= len {
            return 0;
        }
        i32::from(c.data().arena.load_u8(start + i))
    })?;
    linker.func_wrap(MODULE, "input_load_u64", |c: C<'_>, i: i64| -> i64 {
        let (start, len) = c.data().input;
        let i = i as u64;
        if i.checked_add(8).is_none_or(|end| end > len) {
            return 0;
        }
        c.data().arena.load_u64(start + i) as i64
    })?;
    linker.func_wrap(MODULE, "input_set", |mut c: C<'_>, h: i64, len: i64| {
        let state = c.data_mut();
        if state.arena.contains(h as u64, len as u64) {
            state.input = (h as u64, len as u64);
        }
    })?;
    Ok(())
}

fn link_output(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    // The C PDK passes `handle + offset`: any in-arena range is accepted, as in the kernel.
    linker.func_wrap(MODULE, "output_set", |mut c: C<'_>, at: i64, len: i64| {
        let state = c.data_mut();
        if state.arena.contains(at as u64, len as u64) {
            state.output = Some((at as u64, len as u64));
        }
    })?;
    linker.func_wrap(MODULE, "output_length", |c: C<'_>| -> i64 {
        c.data().output.map_or(0, |(_, len)| len as i64)
    })?;
    linker.func_wrap(MODULE, "output_offset", |c: C<'_>| -> i64 {
        c.data().output.map_or(0, |(at, _)| at as i64)
    })?;
    linker.func_wrap(MODULE, "error_set", |mut c: C<'_>, h: i64| {
        let state = c.data_mut();
        if h == 0 || state.arena.contains(h as u64, 1) {
            state.error = h as u64;
        }
    })?;
    linker.func_wrap(MODULE, "error_get", |c: C<'_>| -> i64 {
        c.data().error as i64
    })?;
    // Extism's host calls reset before each call; a module calling it drops its blocks.
    linker.func_wrap(MODULE, "reset", |mut c: C<'_>| {
        let state = c.data_mut();
        state.arena.reset();
        state.input = (0, 0);
        state.output = None;
        state.error = 0;
    })?;
    Ok(())
}
