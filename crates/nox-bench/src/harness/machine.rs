//! What a benchmark ran on: recorded in every JSON result so figures can be
//! compared honestly.

use serde_json::{Value, json};

/// CPU model, core count, memory, OS, rustc and git commit, best effort:
/// a field that cannot be read is `null`, never a guess.
pub fn describe() -> Value {
    json!({
        "cpu_model": cpu_model(),
        "logical_cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "cpu_flags_of_interest": cpu_flags(),
        "memory_bytes": memory_bytes(),
        "os": read_trimmed("/proc/sys/kernel/ostype").zip(read_trimmed("/proc/sys/kernel/osrelease"))
            .map(|(t, r)| format!("{t} {r}")),
        "load_average": read_trimmed("/proc/loadavg"),
        "rustc": command_output("rustc", &["-V"]),
        "git_commit": command_output("git", &["rev-parse", "HEAD"]),
        "git_dirty": command_output("git", &["status", "--porcelain"]).map(|s| !s.is_empty()),
        "timestamp_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs()),
    })
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn cpuinfo_field(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|line| line.starts_with(name))
        .and_then(|line| line.split_once(':'))
        .map(|(_, value)| value.trim().to_string())
}

fn cpu_model() -> Option<String> {
    cpuinfo_field("model name")
}

fn cpu_flags() -> Option<Vec<String>> {
    let flags = cpuinfo_field("flags")?;
    let wanted = ["avx2", "avx512f", "avx512ifma", "vaes", "aes", "sha_ni", "bmi2", "adx"];
    Some(flags.split_whitespace().filter(|f| wanted.contains(f)).map(str::to_string).collect())
}

fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}
