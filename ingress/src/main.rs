//! `ingress`: the apps platform's API (see the library's documentation).

fn main() -> std::process::ExitCode {
    ingress::main()
}
