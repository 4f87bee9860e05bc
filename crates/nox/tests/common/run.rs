//! Running a `nox` command (or any command) to its end: its stdout and stderr as one text, its
//! success, and the panic that names the command and shows that text when it must succeed.

use std::{
    ffi::OsStr,
    fmt::Display,
    path::Path,
    process::{Command, Output},
};

use super::wallet::PASSPHRASE;

/// The `nox` binary under test.
pub const NOX: &str = env!("CARGO_BIN_EXE_nox");

/// A finished command's stdout followed by its stderr.
pub fn output_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

/// Runs `command` to its end: whether it succeeded, and [`output_text`].
pub fn run(command: &mut Command) -> (bool, String) {
    let out = command.output().expect("run nox");
    (out.status.success(), output_text(&out))
}

/// Runs `command`, which must succeed: its [`output_text`], else a panic
/// "`what` failed:\n<output>".
pub fn run_ok(command: &mut Command, what: impl Display) -> String {
    let (success, text) = run(command);
    assert!(success, "{what} failed:\n{text}");
    text
}

/// `nox <args>` with the wallets' passphrase (`NOX_WALLET_PASSPHRASE`), run to its end.
pub fn nox_output<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(NOX).args(args).env("NOX_WALLET_PASSPHRASE", PASSPHRASE).output().expect("run nox")
}

/// Runs `nox <args>` with the wallets' passphrase; stdout + stderr, or the failure text.
pub fn nox<S: AsRef<OsStr>>(args: &[S]) -> Result<String, String> {
    let out = nox_output(args);
    let text = output_text(&out);
    if out.status.success() { Ok(text) } else { Err(text) }
}

/// [`nox`], which must succeed (else the test panics with its output).
pub fn ok<S: AsRef<OsStr> + std::fmt::Debug>(args: &[S]) -> String {
    nox(args).unwrap_or_else(|e| panic!("nox {args:?} failed:\n{e}"))
}

/// Runs `nox <args>` in `dir` with `env` added and no `NOX_OPERATOR_PASSWORD` inherited (the
/// operator commands' tests); returns (success, stdout, stderr).
pub fn nox_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let mut command = Command::new(NOX);
    command.current_dir(dir).args(args).env_remove("NOX_OPERATOR_PASSWORD");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("nox runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A current-thread runtime for a synchronous test that blocks on a few async calls (the
/// chain's reads, a directory fetch).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}
