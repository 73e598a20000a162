//! What the compiler child may not do once it starts on a module: a seccomp filter (and
//! `no_new_privs`) that answers `EPERM` to running programs, networking, tracing or signalling
//! other processes, writing or changing files, and the kernel's riskier interfaces. Cranelift
//! needs none of them; the child reads a pipe, allocates, starts its compile threads and writes a
//! pipe. A bug in cranelift that a module could steer would meet this filter, not the server's
//! privileges (the child runs as the server's user).
//!
//! A deny list rather than an allow list: what the Rust runtime, the allocator and the thread
//! pool need varies with libc and kernel versions, and an allow list that misses one breaks every
//! compilation; the denied calls are the ones an escape would need.

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// Calls refused whatever their arguments.
const DENIED: &[libc::c_long] = &[
    // Running programs.
    libc::SYS_execve,
    libc::SYS_execveat,
    // Networking.
    libc::SYS_socket,
    libc::SYS_socketpair,
    libc::SYS_connect,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_sendto,
    libc::SYS_sendmsg,
    libc::SYS_sendmmsg,
    libc::SYS_recvfrom,
    libc::SYS_recvmsg,
    libc::SYS_recvmmsg,
    // Other processes (the server runs as the same user).
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kill,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_send_signal,
    libc::SYS_pidfd_getfd,
    // Changing files.
    libc::SYS_creat,
    libc::SYS_unlink,
    libc::SYS_unlinkat,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_rmdir,
    libc::SYS_link,
    libc::SYS_linkat,
    libc::SYS_symlink,
    libc::SYS_symlinkat,
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_lchown,
    libc::SYS_truncate,
    libc::SYS_ftruncate,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    // Namespaces, mounts, identities, and the kernel's riskier interfaces.
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_setns,
    libc::SYS_unshare,
    libc::SYS_setuid,
    libc::SYS_setgid,
    libc::SYS_setreuid,
    libc::SYS_setregid,
    libc::SYS_setresuid,
    libc::SYS_setresgid,
    libc::SYS_setgroups,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_reboot,
    libc::SYS_personality,
];

/// `open`/`openat` flags that write or create: refused, reading stays possible (the child reads
/// `/proc/self/status` for its report).
const WRITING_FLAGS: &[libc::c_int] = &[libc::O_WRONLY, libc::O_RDWR, libc::O_CREAT, libc::O_TRUNC];

/// Applies the filter to the calling thread and every thread it starts afterwards.
// `c_long` is `i64` here but `i32` on 32-bit targets: the conversion is needed there.
#[allow(clippy::useless_conversion)]
pub fn confine() -> Result<(), String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED
        .iter()
        .map(|&call| (i64::from(call), Vec::new()))
        .collect();
    // `open(path, flags)` has its flags in argument 1, `openat(dir, path, flags)` in argument 2.
    for (call, flags_arg) in [(libc::SYS_open, 1u8), (libc::SYS_openat, 2u8)] {
        let writing = WRITING_FLAGS
            .iter()
            .map(|&flag| {
                let flag = flag as u64;
                SeccompCondition::new(
                    flags_arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )
                .and_then(|condition| SeccompRule::new(vec![condition]))
                .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(i64::from(call), writing);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;

    use super::*;

    /// The filter applies to the thread that installs it (and its children) only, so a test
    /// thread can take it without confining the test process.
    fn confined<T: Send + 'static>(check: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            confine().expect("the filter applies");
            check()
        })
        .join()
        .expect("the confined thread ends")
    }

    #[test]
    fn a_confined_thread_cannot_write_files_connect_or_run_programs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let readable = dir.path().join("readable");
        std::fs::write(&readable, b"yes").expect("written before the filter");
        let created = dir.path().join("created");
        let (read, create, append, connect, spawn) = confined(move || {
            (
                std::fs::read(&readable).map_err(|e| e.kind()),
                std::fs::File::create(&created)
                    .map(drop)
                    .map_err(|e| e.kind()),
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&readable)
                    .map(drop)
                    .map_err(|e| e.kind()),
                std::net::TcpStream::connect("127.0.0.1:9")
                    .map(drop)
                    .map_err(|e| e.kind()),
                std::process::Command::new("/bin/true")
                    .status()
                    .map(drop)
                    .map_err(|e| e.kind()),
            )
        });
        assert_eq!(read, Ok(b"yes".to_vec()), "reading still works");
        assert_eq!(create, Err(ErrorKind::PermissionDenied));
        assert_eq!(append, Err(ErrorKind::PermissionDenied));
        assert_eq!(connect, Err(ErrorKind::PermissionDenied));
        assert!(spawn.is_err(), "{spawn:?}");
        // A thread the confined thread starts is confined too.
        let nested = confined(|| {
            std::thread::spawn(|| {
                std::net::TcpStream::connect("127.0.0.1:9")
                    .map(drop)
                    .map_err(|e| e.kind())
            })
            .join()
            .expect("joined")
        });
        assert_eq!(nested, Err(ErrorKind::PermissionDenied));
    }
}
