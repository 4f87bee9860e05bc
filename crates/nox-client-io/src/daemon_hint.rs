//! What to tell the user when `nox wallet` or `nox tx` cannot reach their `--rpc` endpoint.
//!
//! `--rpc` is normally a `nox client --rpc` daemon: the wallet's reads go through it into the
//! mixnet. When nothing listens there, the JSON-RPC library's error ("error sending request
//! for url …") does not say that the daemon is not running, nor how to start it. [`explain`]
//! checks whether anything accepts a TCP connection at the endpoint and, if not, says so and
//! gives the command that starts the daemon on that address.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long the check waits for the endpoint to accept a connection.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// The `host:port` of an `http://` URL (the port defaults to 80), or `None` for anything else.
pub fn endpoint(url: &str) -> Option<(String, u16)> {
    let rest = url.trim().strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None if after.is_empty() => 80,
            None => return None,
        };
        return Some((format!("[{host}]"), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), port.parse().ok()?)),
        None if !authority.is_empty() => Some((authority.to_owned(), 80)),
        None => None,
    }
}

/// The message for an endpoint where nothing listens: names the daemon and how to start it
/// (on the same address, so the command works as printed).
pub fn not_listening(url: &str, error: &str) -> String {
    let listen = endpoint(url).map_or_else(|| "127.0.0.1:8645".to_owned(), |(host, port)| format!("{host}:{port}"));
    format!(
        "nothing listens at --rpc {url}: is the `nox client --rpc` daemon running? Start it in another terminal \
         with `nox client --testnet <testnet dir> --rpc {listen}` (or `--directory … --authority …` instead of \
         `--testnet` for another network) and run this command again; or give --rpc the URL of an endpoint that is \
         up. ({error})"
    )
}

/// Whether something accepts TCP connections at `url`'s host and port (any of its addresses,
/// within [`PROBE_TIMEOUT`] each). `None` when the URL names no `http://` endpoint or its name
/// does not resolve.
pub fn listening(url: &str) -> Option<bool> {
    let (host, port) = endpoint(url)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().ok()?.collect();
    Some(addrs.iter().any(|addr| TcpStream::connect_timeout(addr, PROBE_TIMEOUT).is_ok()))
}

/// `error` (from a request to the `--rpc` endpoint `url`) as the user should read it: with the
/// daemon hint when nothing listens there, else `url: error` unchanged.
pub fn explain(url: &str, error: &str) -> String {
    match listening(url) {
        Some(false) => not_listening(url, error),
        _ => format!("{url}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_of_urls() {
        assert_eq!(endpoint("http://127.0.0.1:8645"), Some(("127.0.0.1".into(), 8645)));
        assert_eq!(endpoint("http://127.0.0.1:8645/"), Some(("127.0.0.1".into(), 8645)));
        assert_eq!(endpoint("http://localhost/rpc"), Some(("localhost".into(), 80)));
        assert_eq!(endpoint("http://[::1]:9/x"), Some(("[::1]".into(), 9)));
        assert_eq!(endpoint("http://u:p@host:7"), Some(("host".into(), 7)));
        assert_eq!(endpoint("https://host:7"), None, "only plain http is a local daemon");
        assert_eq!(endpoint("http://host:port"), None);
    }

    #[test]
    fn a_closed_port_gets_the_daemon_hint_and_an_open_one_does_not() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = format!("http://{}", listener.local_addr().unwrap());
        assert_eq!(explain(&open, "boom"), format!("{open}: boom"));
        drop(listener);
        let closed = open;
        let message = explain(&closed, "boom");
        let port = closed.rsplit(':').next().unwrap();
        assert!(message.contains("`nox client --rpc` daemon"), "{message}");
        assert!(message.contains(&format!("nox client --testnet <testnet dir> --rpc 127.0.0.1:{port}")), "{message}");
        assert!(message.ends_with("(boom)"), "the original error is kept: {message}");
    }
}
