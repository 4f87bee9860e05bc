//! `nox testnet up --hosts`: every node on a host of its own — a Linux network namespace
//! (`noxh-<base port>-<index>`) with its own address, joined to this machine's namespace by a
//! veth pair — and the [`crate::wan`] delay relay between the hosts.
//!
//! Addresses (second octet `s` from the base port, so that two testnets apart in ports do not
//! collide): node `i` binds `10.s.(i+1).2` in its namespace; its public address, which its
//! descriptor and registration name, is `10.s.(i+1).1` in this machine's namespace, where the
//! relay listens and forwards to the node after the WAN delay of the two regions. A node dials
//! another node's public address: the packet leaves its namespace by its default route, the
//! relay takes it. The clients, the directory and the chain stay in this machine's namespace
//! (region [`crate::wan::Profile::HUB_REGION`]); the nodes reach the directory and the chain at
//! `10.s.0.1`, through the relay as well. Nothing is forwarded by the kernel (no `ip_forward`,
//! no firewall rules): every address a host dials is local to this machine's namespace.
//!
//! [`teardown`] removes the namespaces and veths (`nox testnet down`, a failed `up`, the tests'
//! drop); it finds them by name, so it also cleans up after a crash.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::{
    net::TestnetError,
    wan::{Plan, Profile, Route, Wan},
};

/// The file in the state directory that marks a hosts testnet (the plan of [`HostPlan`]).
const PLAN: &str = "hosts/plan";

/// The hosts of a testnet: names and addresses of node `i`'s namespace.
#[derive(Clone, Debug)]
pub struct HostPlan {
    base_port: u16,
    octet: u8,
    wan: Wan,
    profile: Profile,
}

impl HostPlan {
    /// The plan for a testnet at `base_port` over `wan` with `loss`; at most 250 nodes.
    pub fn new(base_port: u16, nodes: usize, wan: Wan, loss: f64) -> Result<Self, TestnetError> {
        if nodes > 250 {
            return Err(format!("--hosts: {nodes} nodes, at most 250"));
        }
        // 10.64.x.x ..= 10.191.x.x, by base port.
        let octet = 64 + (base_port / 10 % 128) as u8;
        Ok(Self { base_port, octet, wan, profile: Profile::new(wan, loss) })
    }

    /// Node `index`'s namespace.
    pub fn namespace(&self, index: usize) -> String {
        format!("noxh-{}-{index}", self.base_port)
    }

    fn veth(&self, index: usize) -> String {
        format!("nh{}-{index}", self.base_port)
    }

    fn subnet(&self, index: usize) -> [u8; 3] {
        [10, self.octet, (index + 1) as u8]
    }

    /// The address node `index` binds, in its namespace.
    pub fn bind_ip(&self, index: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet(index);
        Ipv4Addr::new(a, b, c, 2)
    }

    /// Node `index`'s public address (the relay's, in this namespace).
    pub fn public_ip(&self, index: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet(index);
        Ipv4Addr::new(a, b, c, 1)
    }

    /// Where the nodes reach the directory and the chain (the relay, in this namespace).
    pub fn hub_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, self.octet, 0, 1)
    }

    /// A loopback address of node `index` (as the loopback testnet lays them out) as the node
    /// binds it and as others dial it.
    pub fn addresses(&self, index: usize, loopback: SocketAddr) -> (SocketAddr, SocketAddr) {
        (
            SocketAddr::new(IpAddr::V4(self.bind_ip(index)), loopback.port()),
            SocketAddr::new(IpAddr::V4(self.public_ip(index)), loopback.port()),
        )
    }

    /// The WAN profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Creates node namespaces `0..nodes` and their veths (removing leftovers of the same
    /// names first) and records the plan in `dir`.
    pub fn create(&self, dir: &Path, nodes: usize) -> Result<(), TestnetError> {
        remove_namespaces(self.base_port);
        let plan = dir.join(PLAN);
        if let Some(parent) = plan.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        // Written first: a failure below still leaves what teardown needs.
        std::fs::write(&plan, format!("{} {}\n", self.base_port, nodes))
            .map_err(|e| format!("{}: {e}", plan.display()))?;
        for index in 0..nodes {
            let ns = self.namespace(index);
            let veth = self.veth(index);
            let inner = format!("{veth}i");
            let [a, b, c] = self.subnet(index);
            ip(&["netns", "add", &ns])?;
            ip(&["link", "add", &veth, "type", "veth", "peer", "name", &inner, "netns", &ns])?;
            ip(&["addr", "add", &format!("{a}.{b}.{c}.1/24"), "dev", &veth])?;
            ip(&["link", "set", &veth, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "addr", "add", &format!("{a}.{b}.{c}.2/24"), "dev", &inner])?;
            ip(&["-n", &ns, "link", "set", &inner, "up"])?;
            ip(&["-n", &ns, "route", "add", "default", "via", &format!("{a}.{b}.{c}.1")])?;
            if index == 0 {
                ip(&["addr", "add", &format!("{}/32", self.hub_ip()), "dev", &veth])?;
            }
        }
        Ok(())
    }

    /// A node config for the namespaces: every `http://127.0.0.1:<port>` (the directory, the
    /// chain's JSON-RPC) and the exit's `sink` become the hub address; returns it and the
    /// HTTP ports it named (the sink is UDP: no relay).
    pub fn rewrite_config(&self, config: &str) -> (String, Vec<u16>) {
        let loopback = "http://127.0.0.1:";
        let mut ports = Vec::new();
        for piece in config.split(loopback).skip(1) {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(port) = digits.parse() {
                ports.push(port);
            }
        }
        // The exits' measurement sink (UDP, bound on every address): reached directly.
        let config = config.replace("sink = \"127.0.0.1:", &format!("sink = \"{}:", self.hub_ip()));
        (config.replace(loopback, &format!("http://{}:", self.hub_ip())), ports)
    }

    /// Starts the relay (`nox testnet wan-relay`) for `node_ports` (each node's link and
    /// WebSocket ports, bound at `bind_ip`) and the hub's `hub_ports` (services on 127.0.0.1),
    /// and waits until it listens.
    pub fn start_relay(
        &self,
        dir: &Path,
        exe: &Path,
        node_ports: &[(usize, Vec<u16>)],
        hub_ports: &[u16],
    ) -> Result<(), TestnetError> {
        let mut routes = Vec::new();
        let mut hosts = std::collections::HashMap::new();
        for (index, ports) in node_ports {
            let region = self.profile.region_of(*index);
            hosts.insert(IpAddr::V4(self.bind_ip(*index)), region);
            for port in ports {
                routes.push(Route {
                    listen: SocketAddr::new(IpAddr::V4(self.public_ip(*index)), *port),
                    target: SocketAddr::new(IpAddr::V4(self.bind_ip(*index)), *port),
                    region,
                });
            }
        }
        let mut hub_ports = hub_ports.to_vec();
        hub_ports.sort_unstable();
        hub_ports.dedup();
        for port in hub_ports {
            routes.push(Route {
                listen: SocketAddr::new(IpAddr::V4(self.hub_ip()), port),
                target: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
                region: Profile::HUB_REGION,
            });
        }
        let plan = Plan { profile: self.profile.clone(), hosts, routes };
        let process = relay_dir(dir);
        std::fs::create_dir_all(&process).map_err(|e| format!("{}: {e}", process.display()))?;
        let plan_file = process.join("plan");
        std::fs::write(&plan_file, plan.to_text(self.wan)).map_err(|e| format!("{}: {e}", plan_file.display()))?;
        let log = std::fs::File::create(process.join("relay.log")).map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .args(["testnet", "wan-relay", "--plan"])
            .arg(&plan_file)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting the WAN relay: {e}"))?;
        std::fs::write(process.join("pid"), child.id().to_string()).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !process.join("ready").exists() {
            if Instant::now() > deadline || !crate::net::pid_alive(&process) {
                let log = std::fs::read_to_string(process.join("relay.log")).unwrap_or_default();
                return Err(format!("the WAN relay did not start:\n{log}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// Whether the testnet in `dir` was started with `--hosts`.
pub fn is_hosts_testnet(dir: &Path) -> bool {
    dir.join(PLAN).exists()
}

/// The relay's process directory (plan, pid, log, ready mark).
pub fn relay_dir(dir: &Path) -> PathBuf {
    dir.join("wan-relay")
}

/// The namespace a node runs in (`<node dir>/netns`), if the testnet is a hosts testnet.
pub fn namespace_of(node_dir: &Path) -> Option<String> {
    std::fs::read_to_string(node_dir.join("netns")).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// Stops the relay and removes the namespaces and veths of the hosts testnet in `dir` (nothing
/// if it is not one). Call after the nodes are stopped.
pub fn teardown(dir: &Path) {
    crate::net::kill_process(&relay_dir(dir));
    let Ok(plan) = std::fs::read_to_string(dir.join(PLAN)) else { return };
    if let Some(base_port) = plan.split_whitespace().next().and_then(|p| p.parse().ok()) {
        remove_namespaces(base_port);
    }
}

/// Removes every `noxh-<base_port>-*` namespace and `nh<base_port>-*` veth.
fn remove_namespaces(base_port: u16) {
    let prefix = format!("noxh-{base_port}-");
    for ns in namespaces().into_iter().filter(|n| n.starts_with(&prefix)) {
        // Deleting the namespace destroys its veth end, and with it the pair.
        let _ = ip(&["netns", "del", &ns]);
        if let Some(index) = ns.strip_prefix(&prefix) {
            let _ = Command::new("ip")
                .args(["link", "del", &format!("nh{base_port}-{index}")])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The network namespaces on this machine (`ip netns list`).
pub fn namespaces() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn ip(args: &[&str]) -> Result<(), TestnetError> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_reach_the_hub_not_their_own_loopback() {
        let plan = HostPlan::new(19_000, 9, Wan::ThreeRegions, 0.0).unwrap();
        let config =
            "url = \"http://127.0.0.1:41234\"\nrpc_urls = [\"http://127.0.0.1:19200\"]\nallow = [\"127.0.0.1:8080\"]\n";
        let (text, ports) = plan.rewrite_config(config);
        assert_eq!(ports, vec![41234, 19200]);
        assert!(!text.contains("http://127.0.0.1"), "{text}");
        assert!(text.contains(&format!("http://{}:41234", plan.hub_ip())), "{text}");
        let (bind, public) = plan.addresses(3, "127.0.0.1:19003".parse().unwrap());
        assert_ne!(bind.ip(), public.ip());
        assert_eq!((bind.port(), public.port()), (19003, 19003));
        assert!(plan.namespace(3).starts_with("noxh-"));
        assert!(HostPlan::new(19_000, 251, Wan::Loopback, 0.0).is_err());
    }
}
