//! Ports: each test file's block of per-process port ranges, the kernel's ephemeral range they
//! stay below, and a free loopback port for a one-off listener.

/// `start + (pid % slots) * stride`: the first port of this process's range in a file's block
/// of `slots` ranges of `stride` ports each. Each file has its own block (see its call); a
/// file with several tests adds `slot * 10` for the test's own testnet. Every block must end
/// below the kernel's ephemeral range (32768 on Linux): see `the_port_blocks_stay_below_the_ephemeral_range`.
pub fn port_base(start: u16, slots: u32, stride: u16) -> u16 {
    start + (std::process::id() % slots) as u16 * stride
}

/// The first port the kernel may pick for an outgoing connection (Linux's default
/// `ip_local_port_range`; read from /proc where there is one).
pub fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()))
        .unwrap_or(32_768)
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}
