//! `nox testnet up --hosts`: every node on a host of its own — a Linux network namespace
//! (`noxh-<base port>-<index>`) with its own address, joined to this machine's namespace by a
//! veth pair — and the [`crate::wan`] delay relay between the hosts.
//!
//! Addresses (second octet `s` from the base port, so that two testnets apart in ports do not
//! collide): node `i` binds `10.s.(i+1).2` in its namespace; its public address, which its
//! descriptor and registration name, is `10.s.(i+1).1` in this machine's namespace, where the
//! relay listens and forwards to the node after the WAN delay of the two regions. A node dials
//! another node's public address: the packet leaves its namespace by its default route, the
//! relay takes it. Two more hosts: the chain's (`noxh-<base port>-chain`, `10.s.251.2`, public
//! `10.s.251.1`) runs Anvil and the directory in region [`HostPlan::chain_region`]; the clients'
//! (`noxh-<base port>-client`, `10.s.252.2`) is in region [`crate::wan::Profile::HUB_REGION`].
//! Configs and records name the chain's and the directory's public address, never 127.0.0.1.
//! `10.s.0.1` (the "hub", this machine's namespace) is left for what the testnet process itself
//! serves, e.g. the benchmarks' UDP measurement sink. Nothing is forwarded by the kernel (no
//! `ip_forward`, no firewall rules): every address a host dials is local to this machine's
//! namespace, where the relay listens.
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

/// The third octet of the chain's host.
const CHAIN_SUBNET: u8 = 251;
/// The third octet of the clients' host.
const CLIENT_SUBNET: u8 = 252;

/// A host that is not a node: the chain's (Anvil, the directory) or the clients'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceHost {
    /// Its namespace.
    pub namespace: String,
    /// The address its processes bind, in its namespace.
    pub bind: Ipv4Addr,
    /// Its public address (the relay's, in this machine's namespace): what others dial.
    pub public: Ipv4Addr,
    /// Its region in the profile.
    pub region: usize,
}

impl ServiceHost {
    /// `http://<public>:<port>`: the URL configs and records name.
    pub fn url(&self, port: u16) -> String {
        format!("http://{}:{port}", self.public)
    }

    /// `ip netns exec <namespace> <program>`: a command that runs `program` on this host.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.namespace]).arg(program);
        command
    }
}

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

    fn service_host(&self, name: &str, third: u8, region: usize) -> ServiceHost {
        ServiceHost {
            namespace: format!("noxh-{}-{name}", self.base_port),
            bind: Ipv4Addr::new(10, self.octet, third, 2),
            public: Ipv4Addr::new(10, self.octet, third, 1),
            region,
        }
    }

    /// The chain's host: Anvil and the directory.
    pub fn chain_host(&self) -> ServiceHost {
        self.service_host("chain", CHAIN_SUBNET, self.chain_region())
    }

    /// The clients' host (clients, wallets, the watcher, a relayer's claim).
    pub fn client_host(&self) -> ServiceHost {
        self.service_host("client", CLIENT_SUBNET, Profile::HUB_REGION)
    }

    /// The chain's region: the profile's second (eu-central-1 in three regions), so that a
    /// client reaches it over a WAN path too; the only one in a one-region profile.
    pub fn chain_region(&self) -> usize {
        1.min(self.profile.regions.len().saturating_sub(1))
    }

    /// The directory's port on the chain's host (Anvil's is the testnet's `base + 200`).
    pub fn directory_port(&self) -> u16 {
        self.base_port.saturating_add(201)
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

    /// Creates node namespaces `0..nodes`, the chain's and the clients' and their veths
    /// (removing leftovers of the same names first) and records the plan in `dir`.
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
            self.add_host(&self.namespace(index), &self.veth(index), self.subnet(index))?;
            if index == 0 {
                ip(&["addr", "add", &format!("{}/32", self.hub_ip()), "dev", &self.veth(index)])?;
            }
        }
        for (host, name, third) in
            [(self.chain_host(), "chain", CHAIN_SUBNET), (self.client_host(), "client", CLIENT_SUBNET)]
        {
            self.add_host(&host.namespace, &format!("nh{}-{name}", self.base_port), [10, self.octet, third])?;
        }
        Ok(())
    }

    /// One namespace `ns`, its veth pair (`veth` here, `<veth>i` inside), `<subnet>.1` here,
    /// `<subnet>.2` inside with the default route to `.1`.
    fn add_host(&self, ns: &str, veth: &str, [a, b, c]: [u8; 3]) -> Result<(), TestnetError> {
        let inner = format!("{veth}i");
        ip(&["netns", "add", ns])?;
        ip(&["link", "add", veth, "type", "veth", "peer", "name", &inner, "netns", ns])?;
        ip(&["addr", "add", &format!("{a}.{b}.{c}.1/24"), "dev", veth])?;
        ip(&["link", "set", veth, "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        ip(&["-n", ns, "addr", "add", &format!("{a}.{b}.{c}.2/24"), "dev", &inner])?;
        ip(&["-n", ns, "link", "set", &inner, "up"])?;
        ip(&["-n", ns, "route", "add", "default", "via", &format!("{a}.{b}.{c}.1")])?;
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
    /// WebSocket ports, bound at `bind_ip`) and the hub's `hub_ports` (services of this
    /// process on 127.0.0.1), and waits until it listens.
    pub fn start_relay(
        &self,
        dir: &Path,
        exe: &Path,
        node_ports: &[(usize, Vec<u16>)],
        hub_ports: &[u16],
    ) -> Result<(), TestnetError> {
        let mut routes = Vec::new();
        for (index, ports) in node_ports {
            let region = self.profile.region_of(*index);
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
        let nodes: Vec<usize> = node_ports.iter().map(|(index, _)| *index).collect();
        self.spawn_relay(&relay_dir(dir), exe, self.relay_plan(&nodes, routes))
    }

    /// Starts the chain host's relay (`<dir>/wan-relay-chain`): the public address of the
    /// chain's host, `ports` (Anvil's JSON-RPC, the directory) forwarded to its bind address in
    /// its region. Separate from the nodes' relay because the chain is up (contracts deployed,
    /// nodes registered) before the nodes' ports are known.
    pub fn start_chain_relay(&self, dir: &Path, exe: &Path, nodes: usize, ports: &[u16]) -> Result<(), TestnetError> {
        let routes = self.chain_routes(ports);
        let nodes: Vec<usize> = (0..nodes).collect();
        self.spawn_relay(&chain_relay_dir(dir), exe, self.relay_plan(&nodes, routes))
    }

    /// The chain host's routes for `ports`.
    pub fn chain_routes(&self, ports: &[u16]) -> Vec<Route> {
        let chain = self.chain_host();
        ports
            .iter()
            .map(|port| Route {
                listen: SocketAddr::new(IpAddr::V4(chain.public), *port),
                target: SocketAddr::new(IpAddr::V4(chain.bind), *port),
                region: chain.region,
            })
            .collect()
    }

    /// A relay plan over `routes` that knows the region of node `nodes`, the chain's and the
    /// clients' host by their source addresses.
    pub fn relay_plan(&self, nodes: &[usize], routes: Vec<Route>) -> Plan {
        let mut hosts = std::collections::HashMap::new();
        for index in nodes {
            hosts.insert(IpAddr::V4(self.bind_ip(*index)), self.profile.region_of(*index));
        }
        for host in [self.chain_host(), self.client_host()] {
            hosts.insert(IpAddr::V4(host.bind), host.region);
        }
        Plan { profile: self.profile.clone(), hosts, routes }
    }

    fn spawn_relay(&self, process: &Path, exe: &Path, plan: Plan) -> Result<(), TestnetError> {
        std::fs::create_dir_all(process).map_err(|e| format!("{}: {e}", process.display()))?;
        let _ = std::fs::remove_file(process.join("ready"));
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
            if Instant::now() > deadline || !crate::net::pid_alive(process) {
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

/// The chain host's relay's process directory.
pub fn chain_relay_dir(dir: &Path) -> PathBuf {
    dir.join("wan-relay-chain")
}

/// The namespace a node runs in (`<node dir>/netns`), if the testnet is a hosts testnet.
pub fn namespace_of(node_dir: &Path) -> Option<String> {
    std::fs::read_to_string(node_dir.join("netns")).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// Stops the relay and removes the namespaces and veths of the hosts testnet in `dir` (nothing
/// if it is not one). Call after the nodes are stopped.
pub fn teardown(dir: &Path) {
    crate::net::kill_process(&relay_dir(dir));
    crate::net::kill_process(&chain_relay_dir(dir));
    let Ok(plan) = std::fs::read_to_string(dir.join(PLAN)) else { return };
    if let Some(base_port) = plan.split_whitespace().next().and_then(|p| p.parse().ok()) {
        remove_namespaces(base_port);
    }
}

/// Removes every `noxh-<base_port>-*` namespace (nodes, chain, client) and `nh<base_port>-*` veth.
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

    #[test]
    fn the_chain_and_the_clients_are_hosts_of_their_own() {
        let plan = HostPlan::new(19_000, 250, Wan::ThreeRegions, 0.0).unwrap();
        let (chain, client) = (plan.chain_host(), plan.client_host());
        assert_eq!(chain.namespace, "noxh-19000-chain");
        assert_eq!(client.namespace, "noxh-19000-client");
        // Every name, both veth ends included, fits Linux's 15-byte interface names.
        assert!(format!("nh{}-client", u16::MAX).len() < 15);
        // Their subnets are nobody else's: not a node's (even the 250th), not the hub's.
        let mut subnets: Vec<[u8; 3]> = (0..250).map(|i| plan.subnet(i)).collect();
        subnets.extend([[10, plan.octet, 0], octets3(chain.bind), octets3(client.bind)]);
        let count = subnets.len();
        subnets.sort_unstable();
        subnets.dedup();
        assert_eq!(subnets.len(), count, "two hosts share a subnet");
        for host in [&chain, &client] {
            assert_eq!(octets3(host.bind), octets3(host.public));
            assert_eq!((host.bind.octets()[3], host.public.octets()[3]), (2, 1));
            assert!(!host.public.is_loopback() && host.public != plan.hub_ip());
        }
        // The chain in the profile's second region, the clients in the hub's.
        assert_eq!((chain.region, client.region), (1, Profile::HUB_REGION));
        assert_eq!(HostPlan::new(19_000, 3, Wan::Loopback, 0.0).unwrap().chain_region(), 0);
        // Configs and records name the chain's public address.
        assert_eq!(chain.url(19_200), format!("http://{}:19200", chain.public));
        // The chain relay forwards the public address to the bind address, in the chain's region,
        // and the relay knows the clients' and the chain's region by their source address.
        let routes = plan.chain_routes(&[19_200, plan.directory_port()]);
        assert_eq!(routes[1].listen, SocketAddr::from((chain.public, 19_201)));
        assert_eq!(routes[1].target, SocketAddr::from((chain.bind, 19_201)));
        assert!(routes.iter().all(|r| r.region == 1));
        let relay = plan.relay_plan(&[0, 1, 2], routes);
        assert_eq!(relay.hosts.get(&IpAddr::V4(client.bind)), Some(&Profile::HUB_REGION));
        assert_eq!(relay.hosts.get(&IpAddr::V4(chain.bind)), Some(&1));
        assert_eq!(relay.hosts.get(&IpAddr::V4(plan.bind_ip(2))), Some(&2));
        // Two testnets apart in base ports: different namespaces and addresses.
        let other = HostPlan::new(19_010, 3, Wan::ThreeRegions, 0.0).unwrap();
        assert_ne!(other.chain_host().namespace, chain.namespace);
        assert_ne!(other.chain_host().public, chain.public);
    }

    fn octets3(ip: Ipv4Addr) -> [u8; 3] {
        let [a, b, c, _] = ip.octets();
        [a, b, c]
    }
}
