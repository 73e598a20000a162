//! `pipeline`: the write path's worker (see the library's documentation).

fn main() -> std::process::ExitCode {
    pipeline::main()
}
