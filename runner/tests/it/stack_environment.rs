//! The runner the stack script starts holds only its role's variables (SPEC: the call-token
//! secret stays with ingress and the pipeline): it runs vendor modules, so a module escaping its
//! sandbox must find no secret that signs tokens or seals values and no storage credential.

use service::testing::{repo_root, stack};

/// The `KEY=value` pairs of the process whose pid the stack recorded for `service`.
fn environment_of(service: &str) -> Vec<(String, String)> {
    let pid_file = repo_root().join(format!(".stack/run/{service}.pid"));
    let pid = std::fs::read_to_string(&pid_file).expect("the stack's pid file");
    let environ = std::fs::read(format!("/proc/{}/environ", pid.trim())).expect("environ");
    environ
        .split(|byte| *byte == 0)
        .filter_map(|pair| {
            let text = String::from_utf8_lossy(pair);
            let (key, value) = text.split_once('=')?;
            Some((key.to_owned(), value.to_owned()))
        })
        .collect()
}

#[test]
fn the_stacks_runner_holds_no_secret_beyond_its_own_bearer() {
    let runner = environment_of("runner");
    let keys: Vec<&str> = runner.iter().map(|(key, _)| key.as_str()).collect();
    assert!(keys.contains(&"APP_RUNNER_TOKEN"), "{keys:?}");
    assert!(keys.contains(&"API_INTERNAL_URL"), "{keys:?}");
    for withheld in [
        "APP_CALL_TOKEN_SECRET",
        "JWT_SECRET",
        "SECRET_STORE_KEY",
        "DATABASE_URL",
        "STORAGE_SECRET_KEY",
    ] {
        assert!(!keys.contains(&withheld), "the runner holds {withheld}");
        let value = stack().var(withheld);
        assert!(
            runner.iter().all(|(_, held)| !held.contains(value)),
            "the runner holds the value of {withheld}"
        );
    }
    // The pipeline signs call tokens: it keeps the secret the runner is denied.
    let pipeline = environment_of("pipeline");
    assert!(
        pipeline
            .iter()
            .any(|(key, _)| key == "APP_CALL_TOKEN_SECRET")
    );
}
