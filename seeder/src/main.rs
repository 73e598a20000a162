//! `seed-history`: writes a realistic invocation history for benchmarks and trials
//! (docs/seeding.md).

fn main() -> std::process::ExitCode {
    seeder::main()
}
