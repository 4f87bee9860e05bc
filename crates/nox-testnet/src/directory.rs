//! The testnet's directory authority: a `nox directory` process next to the nodes, in
//! `<state dir>/directory/`, listening on a free loopback port written to
//! `<state dir>/directory.addr`.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use nox_sphinx::Scheme;
use nox_topology::{VerifiedTopology, VerifyConfig, VerifyingKey};

use crate::net::TestnetError;

/// Patience for one exchange with the directory.
const TIMEOUT: Duration = Duration::from_secs(3);

/// The directory's process directory (config, log, pid).
pub fn process_dir(dir: &Path) -> PathBuf {
    dir.join("directory")
}

/// Where the directory writes its address.
pub fn addr_file(dir: &Path) -> PathBuf {
    dir.join("directory.addr")
}

/// The directory's address, if the testnet has one: where nodes and clients reach it (on a
/// `--hosts` testnet the chain host's public address, the relay's).
pub fn addr(dir: &Path) -> Option<SocketAddr> {
    let bind = bind_addr(dir)?;
    Some(match host(dir) {
        Some((_, public)) => SocketAddr::new(public.into(), bind.port()),
        None => bind,
    })
}

/// The address the directory binds (what it writes to [`addr_file`]).
fn bind_addr(dir: &Path) -> Option<SocketAddr> {
    std::fs::read_to_string(addr_file(dir)).ok()?.trim().parse().ok()
}

/// `--hosts`: the namespace the directory runs in and its host's public address.
fn host(dir: &Path) -> Option<(String, std::net::Ipv4Addr)> {
    let text = std::fs::read_to_string(process_dir(dir).join("host")).ok()?;
    let mut words = text.split_whitespace();
    Some((words.next()?.to_owned(), words.next()?.parse().ok()?))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), TestnetError> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes the authority key (0600) and `directory.toml` (for the geometry of `scheme`,
/// `layers` and `packet_len`), starts
/// `nox directory` and waits until it serves the document at `topology.json`. Returns its
/// address.
pub fn start(
    dir: &Path,
    exe: &Path,
    authority_seed: &[u8; 32],
    scheme: Scheme,
    layers: u8,
    packet_len: nox_topology::PacketLen,
) -> Result<SocketAddr, TestnetError> {
    start_on(dir, exe, authority_seed, (scheme, layers, packet_len), None)
}

/// [`start`], on the chain's host at `port` (`--hosts`: in its namespace, bound to its
/// address; [`addr`] then names its public address) if given.
pub fn start_on(
    dir: &Path,
    exe: &Path,
    authority_seed: &[u8; 32],
    (scheme, layers, packet_len): (Scheme, u8, nox_topology::PacketLen),
    host: Option<(&crate::hosts::ServiceHost, u16)>,
) -> Result<SocketAddr, TestnetError> {
    let chain = crate::chain::load(dir);
    use std::os::unix::fs::OpenOptionsExt;
    let key_file = dir.join("authority.key");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_file)
        .map_err(|e| format!("{}: {e}", key_file.display()))?;
    std::io::Write::write_all(&mut file, hex::encode(authority_seed).as_bytes()).map_err(|e| e.to_string())?;
    let process = process_dir(dir);
    std::fs::create_dir_all(&process).map_err(|e| format!("{}: {e}", process.display()))?;
    let config = format!(
        // The shipped limits (4 connections per address, 16 per /24, 64 in all): every node and
        // client of the testnet fetches from 127.0.0.1, briefly and rarely at the same moment
        // (a refused fetch is retried), so the testnet needs no exception.
        "listen = \"{listen}\"\nauthority_key_file = {key:?}\ninitial_document = {doc:?}\naddr_file = {addr:?}\nsphinx_scheme = \"{scheme}\"\nlayers = {layers}\npacket_len = {packet_len}\n",
        key = key_file.display().to_string(),
        doc = dir.join("topology.json").display().to_string(),
        addr = addr_file(dir).display().to_string(),
        listen =
            host.map_or_else(|| "127.0.0.1:0".to_owned(), |(h, port)| SocketAddr::from((h.bind, port)).to_string()),
    );
    write(&process.join("directory.toml"), config.as_bytes())?;
    if let Some((host, _)) = host {
        write(&process.join("host"), format!("{} {}\n", host.namespace, host.public).as_bytes())?;
    }
    if let Some(chain) = chain {
        write(&process.join("chain.toml"), chain.toml(None).as_bytes())?;
    }
    spawn(dir, exe)?;
    wait_serving(dir)
}

/// Starts `nox directory` from the files [`start`] wrote (its log appended to).
fn spawn(dir: &Path, exe: &Path) -> Result<(), TestnetError> {
    let process = process_dir(dir);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(process.join("directory.log"))
        .map_err(|e| e.to_string())?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    // `ip netns exec` execs the directory in its namespace: the pid is the directory's.
    let mut command = match host(dir) {
        Some((ns, _)) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &ns]).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    command.arg("directory").arg("--config").arg(process.join("directory.toml"));
    if process.join("chain.toml").exists() {
        command.arg("--chain").arg(process.join("chain.toml"));
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("starting the directory: {e}"))?;
    write(&process.join("pid"), child.id().to_string().as_bytes())
}

/// SIGKILLs the directory (as a crash would); returns whether it was running.
pub fn kill(dir: &Path) -> bool {
    crate::net::kill_process(&process_dir(dir))
}

/// Starts the directory again on the address it had (nodes and clients know it by that
/// address), with the `nox` binary at `exe`, and waits until it serves a document. It starts
/// from `topology.json` and its chain, as at `up`; nodes upload their descriptors again.
pub fn restart(dir: &Path, exe: &Path) -> Result<SocketAddr, TestnetError> {
    let addr = bind_addr(dir).ok_or("the testnet has no directory")?;
    let config_file = process_dir(dir).join("directory.toml");
    let config = std::fs::read_to_string(&config_file).map_err(|e| format!("{}: {e}", config_file.display()))?;
    let config: String = config
        .lines()
        .map(|line| if line.starts_with("listen = ") { format!("listen = \"{addr}\"") } else { line.to_owned() })
        .collect::<Vec<_>>()
        .join("\n");
    write(&config_file, config.as_bytes())?;
    spawn(dir, exe)?;
    wait_serving(dir)
}

/// Waits (15 s at most) until the directory serves a document at its recorded address.
fn wait_serving(dir: &Path) -> Result<SocketAddr, TestnetError> {
    let process = process_dir(dir);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(addr) = addr(dir)
            && nox_directory::fetch_document_blocking(addr, TIMEOUT).is_ok()
        {
            return Ok(addr);
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(process.join("directory.log")).unwrap_or_default();
            return Err(format!("the directory did not start:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn authority_key(dir: &Path) -> Result<VerifyingKey, TestnetError> {
    let authority = std::fs::read_to_string(dir.join("authority.pub")).map_err(|e| format!("no testnet: {e}"))?;
    let bytes: [u8; 32] = hex::decode(authority.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("authority.pub: expected 64 hex digits")?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| format!("authority.pub: {e}"))
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The testnet's current topology, verified: from the directory when it has one, else from
/// `topology.json`; against the registry when the testnet has a chain, else the authority's key;
/// for the geometry the document names (`nox testnet up --geometry`), as a client finds it
/// (blocking; usable inside or outside a tokio runtime).
pub fn topology(dir: &Path) -> Result<VerifiedTopology, TestnetError> {
    let dir = dir.to_path_buf();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| e.to_string())?
                    .block_on(topology_async(&dir))
            })
            .join()
            .map_err(|_| "the topology reader panicked".to_owned())?
    })
}

/// This process's own loopback address for talking to a loopback directory: 127.x.y.z derived
/// from the process id (x in 1..=254, so never 127.0.0.0/24 where the nodes are, nor the
/// broadcast 127.255.255.255). The testnet's processes all live on one host; with their own
/// addresses the directory's shipped per-address and per-subnet caps apply to them as to
/// separate hosts, and the testnet needs no exception. `None` for a directory off loopback.
pub fn own_loopback_source(directory: SocketAddr) -> Option<IpAddr> {
    if !directory.ip().is_loopback() || !directory.is_ipv4() {
        return None;
    }
    let pid = std::process::id();
    let subnet = u8::try_from((pid >> 16) % 254).unwrap_or(0) + 1;
    let [_, _, high, low] = pid.to_be_bytes();
    Some(IpAddr::V4(Ipv4Addr::new(127, subnet, high, low)))
}

/// Fetches the document from the testnet's directory: from this process's own loopback
/// address ([`own_loopback_source`]), or from the default one where that cannot be bound (only
/// Linux routes all of 127.0.0.0/8 to the loopback interface); a refused attempt (the directory
/// busy) is retried twice, 200 ms apart.
async fn fetch(addr: SocketAddr) -> Result<nox_topology::TopologyDocument, nox_directory::ClientError> {
    let mut last = None;
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let from_own = match own_loopback_source(addr) {
            Some(source) => nox_directory::fetch_document_from(addr, source, TIMEOUT).await,
            None => nox_directory::fetch_document(addr, TIMEOUT).await,
        };
        let outcome = match from_own {
            Err(nox_directory::ClientError::Io { .. }) if own_loopback_source(addr).is_some() => {
                nox_directory::fetch_document(addr, TIMEOUT).await
            }
            other => other,
        };
        match outcome {
            Ok(document) => return Ok(document),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or(nox_directory::ClientError::NoMirror))
}

/// [`topology`] without blocking (inside a tokio runtime).
pub async fn topology_async(dir: &Path) -> Result<VerifiedTopology, TestnetError> {
    let document = match addr(dir) {
        Some(addr) => fetch(addr).await.map_err(|e| e.to_string())?,
        None => {
            let bytes = std::fs::read(dir.join("topology.json")).map_err(|e| format!("no testnet: {e}"))?;
            nox_topology::TopologyDocument::from_json(&bytes).map_err(|e| e.to_string())?
        }
    };
    let geometry = nox_topology::geometry_for(&document).map_err(|e| e.to_string())?;
    match crate::chain::trust(dir).await? {
        Some(trust) => trust.verify(&document, &geometry, now_unix()).await,
        None => {
            document.verify(&VerifyConfig::new(authority_key(dir)?, geometry), now_unix()).map_err(|e| e.to_string())
        }
    }
}

/// One status line: address, process, current document, upload outcomes.
pub fn status_line(dir: &Path, running: bool) -> Option<String> {
    let addr = addr(dir)?;
    let document = topology(dir).map_or_else(
        |e| format!("document: {e}"),
        |t| {
            let epoch = t.schedule().epoch_at(t.issued_at());
            format!("document issued_at {} (epoch {epoch}), {} nodes", t.issued_at(), t.nodes().len())
        },
    );
    let metrics = nox_directory::get_blocking(addr, "/metrics", TIMEOUT)
        .map(|(_, body)| String::from_utf8_lossy(&body).into_owned())
        .unwrap_or_default();
    let count =
        |outcome: &str| crate::net::metric(&metrics, &format!("nox_directory_requests_total{{outcome=\"{outcome}\"}}"));
    let refused: u64 = metrics
        .lines()
        .filter(|l| l.starts_with("nox_directory_requests_total{outcome=\"refused_"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    Some(format!(
        "directory {addr} running {} — {document}; uploads accepted {} unchanged {} refused {refused}",
        if running { "yes" } else { "no" },
        count("accepted"),
        count("unchanged"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_talks_to_a_loopback_directory_from_its_own_loopback_address() {
        let source = own_loopback_source("127.0.0.1:7000".parse().unwrap()).expect("a source on loopback");
        let IpAddr::V4(v4) = source else { panic!("{source} is not IPv4") };
        let [a, b, ..] = v4.octets();
        assert_eq!(a, 127);
        assert!((1..=254).contains(&b), "{v4}: outside 127.0.0.0/24 (the nodes') and not broadcast");
        assert_eq!(own_loopback_source("127.0.0.1:7001".parse().unwrap()), Some(source), "one address per process");
        assert_eq!(own_loopback_source("10.0.0.1:7000".parse().unwrap()), None, "only for a loopback directory");
        assert_eq!(own_loopback_source("[::1]:7000".parse().unwrap()), None);
    }
}
