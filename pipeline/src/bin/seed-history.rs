//! `seed-history`: writes a realistic invocation history for benchmarks and trials (README
//! "Seeding a history").

fn main() -> std::process::ExitCode {
    pipeline::seed_history_main()
}
