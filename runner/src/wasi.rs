//! WASI preview 1 for modules, as a sandbox: no arguments, no environment, no files (no
//! preopened directories, so no `path_*`), no sockets (refused at upload). Standard output and
//! error become the call's log lines; clocks and randomness work; `proc_exit` ends the call.
//! Every other preview 1 function answers `ENOSYS` (see [`stub_missing`]).
//!
//! Written by hand rather than with `wasmtime-wasi`: the policy is "nothing", which is a dozen
//! small functions, and a per-call WASI context would cost more than the call it serves.

use std::time::{SystemTime, UNIX_EPOCH};

use rand::RngCore;
use wasmtime::{Caller, Extern, Linker, Module, Val};

use crate::call::CallState;
use crate::call::logs::Level;

pub(crate) const MODULE: &str = "wasi_snapshot_preview1";

const ERRNO_SUCCESS: i32 = 0;
const ERRNO_BADF: i32 = 8;
const ERRNO_FAULT: i32 = 21;
const ERRNO_INVAL: i32 = 28;
const ERRNO_NOSYS: i32 = 52;
const ERRNO_SPIPE: i32 = 70;

/// How much of one `fd_write` becomes log lines (a call keeps 200 lines of 2,000 characters).
const WRITE_KEEP_BYTES: usize = 64 * 1024;

/// `proc_exit` was called: the call ends with this status.
#[derive(Debug, thiserror::Error)]
#[error("module exited with status {0}")]
pub(crate) struct ProcExit(pub i32);

type C<'a> = Caller<'a, CallState>;

/// The functions implemented here (everything else is stubbed per module).
const IMPLEMENTED: &[&str] = &[
    "args_get",
    "args_sizes_get",
    "environ_get",
    "environ_sizes_get",
    "clock_res_get",
    "clock_time_get",
    "fd_write",
    "fd_close",
    "fd_fdstat_get",
    "fd_seek",
    "fd_prestat_get",
    "proc_exit",
    "random_get",
    "sched_yield",
];

pub(crate) fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    // No arguments and no environment: both lists are empty.
    linker.func_wrap(MODULE, "args_get", |_: C<'_>, _: i32, _: i32| ERRNO_SUCCESS)?;
    linker.func_wrap(MODULE, "environ_get", |_: C<'_>, _: i32, _: i32| {
        ERRNO_SUCCESS
    })?;
    linker.func_wrap(MODULE, "args_sizes_get", write_two_zeros)?;
    linker.func_wrap(MODULE, "environ_sizes_get", write_two_zeros)?;
    linker.func_wrap(
        MODULE,
        "clock_res_get",
        |mut c: C<'_>, _id: i32, out: i32| write_bytes(&mut c, out, &1_000u64.to_le_bytes()),
    )?;
    linker.func_wrap(MODULE, "clock_time_get", clock_time_get)?;
    linker.func_wrap(MODULE, "fd_write", fd_write)?;
    linker.func_wrap(MODULE, "fd_close", |_: C<'_>, _: i32| ERRNO_BADF)?;
    linker.func_wrap(MODULE, "fd_fdstat_get", fd_fdstat_get)?;
    linker.func_wrap(
        MODULE,
        "fd_seek",
        |_: C<'_>, fd: i32, _: i64, _: i32, _: i32| {
            if (0..=2).contains(&fd) {
                ERRNO_SPIPE
            } else {
                ERRNO_BADF
            }
        },
    )?;
    // No preopened directories: enumeration ends at once.
    linker.func_wrap(MODULE, "fd_prestat_get", |_: C<'_>, _: i32, _: i32| {
        ERRNO_BADF
    })?;
    linker.func_wrap(
        MODULE,
        "proc_exit",
        |_: C<'_>, code: i32| -> wasmtime::Result<()> { Err(wasmtime::Error::new(ProcExit(code))) },
    )?;
    linker.func_wrap(MODULE, "random_get", random_get)?;
    linker.func_wrap(MODULE, "sched_yield", |_: C<'_>| ERRNO_SUCCESS)?;
    Ok(())
}

/// Defines every other preview 1 function `module` imports as answering `ENOSYS` (or, for a
/// function without a result, doing nothing), on a copy of the shared linker.
pub(crate) fn stub_missing(
    linker: &mut Linker<CallState>,
    module: &Module,
) -> wasmtime::Result<()> {
    for import in module.imports() {
        if import.module() != MODULE || IMPLEMENTED.contains(&import.name()) {
            continue;
        }
        let Some(ty) = import.ty().func().cloned() else {
            continue;
        };
        linker.func_new(MODULE, import.name(), ty, |_, _, results| {
            for result in results.iter_mut() {
                *result = Val::I32(ERRNO_NOSYS);
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn write_two_zeros(mut c: C<'_>, first: i32, second: i32) -> i32 {
    match write_bytes(&mut c, first, &0u32.to_le_bytes()) {
        ERRNO_SUCCESS => write_bytes(&mut c, second, &0u32.to_le_bytes()),
        errno => errno,
    }
}

fn clock_time_get(mut c: C<'_>, id: i32, _precision: i64, out: i32) -> i32 {
    let nanos = match id {
        // realtime, monotonic, process and thread CPU time: wall time serves them all here.
        0..=3 => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        _ => return ERRNO_INVAL,
    };
    write_bytes(&mut c, out, &nanos.to_le_bytes())
}

/// Standard output and error become log lines (info and warn); any other descriptor is bad.
/// Only the first [`WRITE_KEEP_BYTES`] of one write are kept; the rest is accepted and dropped,
/// so that iovecs pointing many times at the same region cannot make the host allocate more
/// than that.
fn fd_write(mut c: C<'_>, fd: i32, iovs: i32, iovs_len: i32, written: i32) -> i32 {
    let level = match fd {
        1 => Level::Info,
        2 => Level::Warn,
        _ => return ERRNO_BADF,
    };
    let Some(memory) = memory(&mut c) else {
        return ERRNO_FAULT;
    };
    let data = memory.data(&c);
    let mut text = Vec::new();
    let mut total = 0u64;
    let base = iovs as u32 as usize;
    for i in 0..iovs_len.max(0) as usize {
        // An iovec array past the end of memory faults, so this loop is bounded by the memory.
        let Some(bytes) = iovec(data, base, i) else {
            return ERRNO_FAULT;
        };
        total += bytes.len() as u64;
        let room = WRITE_KEEP_BYTES - text.len();
        text.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
    let state = c.data_mut();
    for line in String::from_utf8_lossy(&text)
        .lines()
        .filter(|l| !l.is_empty())
    {
        state.logs.write(&state.context.secrets, level, line);
    }
    let total = u32::try_from(total).unwrap_or(u32::MAX);
    write_bytes(&mut c, written, &total.to_le_bytes())
}

/// The bytes of the `index`th iovec of the array at `base`, if the array and the bytes are
/// inside memory.
fn iovec(data: &[u8], base: usize, index: usize) -> Option<&[u8]> {
    let at = base.checked_add(index.checked_mul(8)?)?;
    let ptr = read_u32(data, at)? as usize;
    let len = read_u32(data, at.checked_add(4)?)? as usize;
    data.get(ptr..ptr.checked_add(len)?)
}

/// Fills the module's buffer in place: nothing is allocated, and a buffer outside memory faults
/// before any work is done.
fn random_get(mut c: C<'_>, buf: i32, len: i32) -> i32 {
    let Some(memory) = memory(&mut c) else {
        return ERRNO_FAULT;
    };
    let start = buf as u32 as usize;
    let Some(end) = start.checked_add(len as u32 as usize) else {
        return ERRNO_FAULT;
    };
    match memory.data_mut(&mut c).get_mut(start..end) {
        Some(target) => {
            rand::rng().fill_bytes(target);
            ERRNO_SUCCESS
        }
        None => ERRNO_FAULT,
    }
}

fn fd_fdstat_get(mut c: C<'_>, fd: i32, out: i32) -> i32 {
    if !(0..=2).contains(&fd) {
        return ERRNO_BADF;
    }
    // filetype character device (2), no flags, rights to write only.
    let mut stat = [0u8; 24];
    stat[0] = 2;
    stat[8..16].copy_from_slice(&(1u64 << 6).to_le_bytes());
    write_bytes(&mut c, out, &stat)
}

fn memory(c: &mut C<'_>) -> Option<wasmtime::Memory> {
    match c.get_export("memory") {
        Some(Extern::Memory(memory)) => Some(memory),
        _ => None,
    }
}

fn read_u32(data: &[u8], at: usize) -> Option<u32> {
    let bytes = data.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn write_bytes(c: &mut C<'_>, at: i32, bytes: &[u8]) -> i32 {
    let Some(memory) = memory(c) else {
        return ERRNO_FAULT;
    };
    match memory.write(c, at as u32 as usize, bytes) {
        Ok(()) => ERRNO_SUCCESS,
        Err(_) => ERRNO_FAULT,
    }
}
