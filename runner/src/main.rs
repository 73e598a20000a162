//! `runner`: runs vendor app modules for the API and the pipeline (see the library's
//! documentation).

fn main() -> std::process::ExitCode {
    runner::main()
}
