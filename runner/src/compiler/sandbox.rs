//! What the compiler child may not do once it starts on a module: a seccomp filter (and
//! `no_new_privs`) that answers `EPERM` to running programs or starting processes, networking,
//! tracing, signalling or re-limiting other processes, writing or changing files, namespaces,
//! and the kernel's riskier interfaces. Cranelift needs none of them; the child reads a pipe,
//! allocates, starts its compile threads and writes a pipe.
//!
//! What this is and is not: it takes away the child's ambient powers, so a compiler bug that a
//! module could steer cannot act on the machine or on the server directly (kill it, read its
//! memory or environment, which the server also hides by being non-dumpable, or use the
//! network). It is not an isolation boundary for the code the child emits: the server loads
//! and runs the artifact, exactly as it would have run code compiled in process. Its bounds are
//! time and memory (`setrlimit`), and containment of the process itself.
//!
//! A deny list rather than an allow list: what the Rust runtime, the allocator and the thread
//! pool need varies with libc and kernel versions, and an allow list that misses one breaks every
//! compilation; the denied calls are the ones an escape would need.

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

/// `fchmodat2` (Linux 6.6) is number 452 on x86_64 and in the generic table aarch64 uses; the
/// locked libc names it for x86_64 only.
const SYS_FCHMODAT2: libc::c_long = 452;

/// Calls refused whatever their arguments.
const DENIED: &[libc::c_long] = &[
    // Running programs and starting processes (threads are `clone` with `CLONE_THREAD`).
    libc::SYS_execve,
    libc::SYS_execveat,
    // Networking.
    libc::SYS_socket,
    libc::SYS_socketpair,
    libc::SYS_connect,
    libc::SYS_bind,
    libc::SYS_listen,
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
    libc::SYS_tkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_send_signal,
    libc::SYS_pidfd_getfd,
    // Changing files.
    libc::SYS_openat2,
    libc::SYS_unlinkat,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_mkdirat,
    libc::SYS_mknodat,
    libc::SYS_linkat,
    libc::SYS_symlinkat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    SYS_FCHMODAT2,
    libc::SYS_fchown,
    libc::SYS_fchownat,
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

/// The same for the calls only x86_64 still has (aarch64 has just their `*at` forms).
#[cfg(target_arch = "x86_64")]
const DENIED_LEGACY: &[libc::c_long] = &[
    libc::SYS_fork,
    libc::SYS_vfork,
    libc::SYS_accept,
    libc::SYS_creat,
    libc::SYS_unlink,
    libc::SYS_rename,
    libc::SYS_mkdir,
    libc::SYS_rmdir,
    libc::SYS_mknod,
    libc::SYS_link,
    libc::SYS_symlink,
    libc::SYS_chmod,
    libc::SYS_chown,
    libc::SYS_lchown,
];
#[cfg(not(target_arch = "x86_64"))]
const DENIED_LEGACY: &[libc::c_long] = &[];

/// On x86_64 the same calls through the x32 ABI (where the kernel has it) carry this bit in
/// their number; a filter keyed on the plain numbers would let them through.
#[cfg(target_arch = "x86_64")]
const X32_BIT: libc::c_long = 0x4000_0000;
/// x32's own numbers (without [`X32_BIT`]) for the denied calls whose arguments differ there:
/// recvfrom, sendmsg, recvmsg, execve, ptrace, rt_sigqueueinfo, kexec_load, rt_tgsigqueueinfo,
/// recvmmsg, sendmmsg, process_vm_readv, process_vm_writev, execveat.
#[cfg(target_arch = "x86_64")]
const X32_OWN: &[libc::c_long] = &[
    517, 518, 519, 520, 521, 524, 528, 536, 537, 538, 539, 540, 545,
];

/// `clone` flags that make a new namespace.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// `open`/`openat` flags that write or create.
const WRITING_FLAGS: &[libc::c_int] = &[libc::O_WRONLY, libc::O_RDWR, libc::O_CREAT, libc::O_TRUNC];

/// Applies the filters to the calling thread and every thread it starts afterwards.
pub(crate) fn confine() -> Result<(), String> {
    // `clone3` takes its flags in memory, out of a filter's sight: refused as unknown, so that
    // glibc falls back to `clone`, whose flags the second filter checks.
    install(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        libc::ENOSYS,
    )?;
    install(rules()?, libc::EPERM)
}

fn install(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: libc::c_int) -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

// `c_long` is `i64` here but `i32` on 32-bit targets: the conversions are needed there.
#[allow(clippy::useless_conversion)]
fn rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &call in DENIED.iter().chain(DENIED_LEGACY) {
        rules.insert(i64::from(call), Vec::new());
        #[cfg(target_arch = "x86_64")]
        rules.insert(i64::from(call | X32_BIT), Vec::new());
    }
    #[cfg(target_arch = "x86_64")]
    for &call in X32_OWN {
        rules.insert(i64::from(call | X32_BIT), Vec::new());
    }
    let me = u64::from(std::process::id());
    // Opening for writing or creating: refused; reading stays possible (the child reads
    // `/proc/self/status` for its report).
    #[cfg(target_arch = "x86_64")]
    let opens = [(libc::SYS_openat, 2u8), (libc::SYS_open, 1u8)];
    #[cfg(not(target_arch = "x86_64"))]
    let opens = [(libc::SYS_openat, 2u8)];
    for (call, flags_arg) in opens {
        let writing = WRITING_FLAGS
            .iter()
            .map(|&flag| rule(&[(flags_arg, SeccompCmpOp::MaskedEq(flag as u64), flag as u64)]))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(i64::from(call), writing);
    }
    // A process (no `CLONE_THREAD`) or a new namespace: refused; threads are fine.
    let mut clone = vec![rule(&[(
        0,
        SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
        0,
    )])?];
    for &flag in NAMESPACE_FLAGS {
        clone.push(rule(&[(
            0,
            SeccompCmpOp::MaskedEq(flag as u64),
            flag as u64,
        )])?);
    }
    rules.insert(i64::from(libc::SYS_clone), clone);
    // Signals to, and limits of, any process but this one (glibc's `abort` signals itself).
    rules.insert(
        i64::from(libc::SYS_tgkill),
        vec![rule(&[(0, SeccompCmpOp::Ne, me)])?],
    );
    rules.insert(
        i64::from(libc::SYS_rt_tgsigqueueinfo),
        vec![rule(&[(0, SeccompCmpOp::Ne, me)])?],
    );
    rules.insert(
        i64::from(libc::SYS_prlimit64),
        vec![rule(&[
            (0, SeccompCmpOp::Ne, 0),
            (0, SeccompCmpOp::Ne, me),
        ])?],
    );
    Ok(rules)
}

/// One rule: every `(argument, comparison, value)` must hold (32-bit comparisons).
fn rule(conditions: &[(u8, SeccompCmpOp, u64)]) -> Result<SeccompRule, String> {
    let conditions = conditions
        .iter()
        .map(|(arg, op, value)| {
            SeccompCondition::new(*arg, SeccompCmpArgLen::Dword, op.clone(), *value)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    SeccompRule::new(conditions).map_err(|e| e.to_string())
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

    #[test]
    fn a_confined_thread_cannot_signal_or_limit_another_process() {
        // A harmless process stands for the server (nothing happens to it if the filter fails).
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        let pid = rustix::process::Pid::from_child(&other);
        let (signal, limit, own_limit) = confined(move || {
            (
                rustix::process::test_kill_process(pid).map_err(|e| e.raw_os_error()),
                rustix::process::prlimit(
                    Some(pid),
                    rustix::process::Resource::Nofile,
                    rustix::process::Rlimit {
                        current: Some(0),
                        maximum: Some(0),
                    },
                )
                .map(drop)
                .map_err(|e| e.raw_os_error()),
                rustix::process::getrlimit(rustix::process::Resource::Nofile).current,
            )
        });
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(signal, Err(libc::EPERM));
        assert_eq!(limit, Err(libc::EPERM));
        assert!(own_limit.is_some(), "its own limits stay readable");
    }
}
