// `sqlx::migrate!` embeds the migrations at compile time; without this, adding a migration file
// would not rebuild the crate and the new migration would silently be missing.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
