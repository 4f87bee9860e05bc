//! Child processes a test starts itself: a guard that kills and reaps them on every exit path,
//! a child with its output in a log file of the test's directory, reading those logs into a
//! failure message, reading a piped output, and a wait for a child's exit with a deadline.

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// Kills and reaps every child (a test's clean-up: errors ignored, the child may be gone).
pub fn reap(children: &mut [Child]) {
    for child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The processes a test started in its directory `dir`, stopped on every exit path: on drop
/// they are killed and reaped, then `teardown` (if any) runs on `dir`, then `dir` is removed
/// unless the test is panicking (its logs stay for the failure's reader).
pub struct Processes {
    /// The test's directory (logs, configuration).
    pub dir: PathBuf,
    /// Killed and reaped on drop.
    pub children: Vec<Child>,
    /// Run on `dir` after the children are gone (e.g. removing network namespaces).
    pub teardown: Option<fn(&Path)>,
}

impl Processes {
    /// No process yet, in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        Processes { dir, children: Vec::new(), teardown: None }
    }

    /// No process yet, in `dir`; `teardown` runs on `dir` once the children are gone.
    pub fn with_teardown(dir: PathBuf, teardown: fn(&Path)) -> Self {
        Processes { dir, children: Vec::new(), teardown: Some(teardown) }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        reap(&mut self.children);
        if let Some(teardown) = self.teardown {
            teardown(&self.dir);
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Spawns `command` with no stdin and its stdout and stderr in `dir/log`.
pub fn spawn_logged(dir: &Path, log: &str, command: &mut Command) -> Child {
    let log = std::fs::File::create(dir.join(log)).expect("log");
    command.stdin(Stdio::null()).stdout(log.try_clone().expect("log")).stderr(log).spawn().expect("spawns")
}

/// The logs `names` of `dir`, each under a `--- <name>:` header (for a failure message).
pub fn logs(dir: &Path, names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("--- {name}:\n{}", std::fs::read_to_string(dir.join(name)).unwrap_or_default()))
        .collect()
}

/// Reads `from` to its end into `into` (a thread's body: a child's piped output).
pub fn collect(mut from: impl Read, into: Arc<Mutex<String>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        into.lock().expect("output lock").push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

/// Waits for `child` to exit, polling every 50 ms; kills and reaps it after `patience`.
/// Whether it succeeded, or `None` if it had to be killed.
pub fn wait_or_kill(child: &mut Child, patience: Duration) -> Option<bool> {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status.success());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
