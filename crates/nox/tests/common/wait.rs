//! Waits for a condition itself, with a deadline: never a fixed sleep standing in for "it must
//! be done by now". Each returns whether the condition held; the caller asserts with its own
//! message (and the logs that explain a failure).

use std::{
    net::{TcpStream, ToSocketAddrs},
    time::{Duration, Instant},
};

/// Polls `done` every `every` until it holds (true) or `patience` has passed (false).
pub fn wait_until(patience: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + patience;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}

/// [`wait_until`] without blocking a runtime worker (for a test whose own tasks, such as an
/// in-process client's, share the runtime's few workers).
pub async fn wait_until_async(patience: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        if done() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(every).await;
    }
}

/// Whether something accepts a TCP connection at `addr` now.
pub fn accepts(addr: impl ToSocketAddrs) -> bool {
    TcpStream::connect(addr).is_ok()
}

/// Polls [`accepts`] every 100 ms until `addr` accepts a connection (true) or `patience` has
/// passed (false): a child process that listens once it is ready.
pub fn wait_listening(addr: impl ToSocketAddrs + Copy, patience: Duration) -> bool {
    wait_until(patience, Duration::from_millis(100), || accepts(addr))
}
