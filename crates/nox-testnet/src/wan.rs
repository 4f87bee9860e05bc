//! The emulated WAN of `nox testnet up --hosts`: a profile of one-way delays between regions
//! and the userspace delay relay that applies them to every TCP connection between two hosts
//! (the kernel here has no `tc netem`, and the nodes must run the shipped binary, not the
//! `--features chaos` build).
//!
//! The relay listens on each host's public address (the one its descriptor names), connects
//! to the address the host's process binds, and copies both directions. Each chunk it reads is
//! released to the other side at `max(previous release, arrival + one-way delay + jitter)`: the
//! delay of the (source region, destination region) pair, jitter drawn per chunk but never
//! reordering a stream (TCP delivers in order; so does the relay). Loss is emulated as TCP
//! shows it to the application: a lost segment is retransmitted after the retransmission
//! timeout, so with probability `loss` a chunk (and everything behind it) is held back one
//! more RTO (Linux's floor, 200 ms, or the path's round trip if longer). Nothing is dropped:
//! the links are TCP (`nox_link::transport`), which never loses bytes, only time.

use std::{
    collections::HashMap,
    io::{Read, Write},
    net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream},
    path::Path,
    sync::mpsc,
    time::{Duration, Instant},
};

use rand_core::{RngCore, SeedableRng};

use crate::net::TestnetError;

/// A WAN profile for `--wan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Wan {
    /// Three cloud regions (eu-west-1 Ireland, eu-central-1 Frankfurt, us-east-1 N. Virginia):
    /// round trips 19.6, 80.5 and 88.7 ms between them, 1 ms between hosts of one region.
    ThreeRegions,
    /// Every host in one place: namespaces and the relay, no added delay (the relay's own
    /// cost, beside plain loopback).
    Loopback,
}

/// Average round trips between AWS regions, ms: "Latency Between AWS Global Regions", as tabulated
/// at <https://acomputerscientistlearnsaws.blogspot.com/2017/04/aws-regions.html> (Ireland ↔
/// Frankfurt 19.56, Ireland ↔ N. Virginia 80.52, Frankfurt ↔ N. Virginia 88.66). Between hosts of
/// one region (availability zones): 0.25–3.4 ms measured by <https://www.xkyle.com/Measuring-AWS-Region-and-AZ-Latency/>;
/// 1 ms here.
const THREE_REGIONS_RTT_MS: [[f64; 3]; 3] = [[1.0, 19.56, 80.52], [19.56, 1.0, 88.66], [80.52, 88.66, 1.0]];
/// The regions of [`Wan::ThreeRegions`], in the order of [`THREE_REGIONS_RTT_MS`].
const THREE_REGIONS: [&str; 3] = ["eu-west-1", "eu-central-1", "us-east-1"];
/// Linux's minimum retransmission timeout (`TCP_RTO_MIN`).
const RTO_MIN: Duration = Duration::from_millis(200);

/// A profile: regions, round trips between them, jitter and loss.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// Region names.
    pub regions: Vec<&'static str>,
    /// Round trip between regions `a` and `b`, ms (symmetric).
    pub rtt_ms: Vec<Vec<f64>>,
    /// Extra one-way delay, uniform in `[0, jitter_ms)`, per chunk (never reordering).
    pub jitter_ms: f64,
    /// Probability that a chunk waits one retransmission timeout more (a lost TCP segment).
    pub loss: f64,
}

/// Errors of the WAN relay and its plan.
#[derive(Debug, thiserror::Error)]
pub enum WanError {
    /// A line of the plan file is not understood.
    #[error("wan plan line {line}: {text:?}")]
    Plan {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// Reading the plan, binding a listener, writing the ready mark.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl Profile {
    /// The profile `wan` with `loss` (0 ≤ loss < 1).
    pub fn new(wan: Wan, loss: f64) -> Self {
        let (regions, rtt_ms, jitter_ms) = match wan {
            Wan::ThreeRegions => {
                (THREE_REGIONS.to_vec(), THREE_REGIONS_RTT_MS.iter().map(|r| r.to_vec()).collect(), 1.0)
            }
            Wan::Loopback => (vec!["local"], vec![vec![0.0]], 0.0),
        };
        Self { regions, rtt_ms, jitter_ms, loss: loss.clamp(0.0, 0.99) }
    }

    /// The one-way delay from region `from` to region `to` (half the round trip).
    pub fn one_way(&self, from: usize, to: usize) -> Duration {
        let rtt = self.rtt_ms.get(from).and_then(|r| r.get(to)).copied().unwrap_or(0.0);
        Duration::from_secs_f64(rtt.max(0.0) / 2_000.0)
    }

    /// The region of host `index` (nodes round-robin over the regions).
    pub fn region_of(&self, index: usize) -> usize {
        index % self.regions.len().max(1)
    }

    /// The region of the clients, the directory and the chain: the first.
    pub const HUB_REGION: usize = 0;

    /// The least one-way time of a packet of a client (in [`Profile::HUB_REGION`]) through
    /// `hops` (entry, …, exit region indices) and back to the client: the WAN floor a round
    /// trip through those nodes cannot beat, whatever the mixing delays.
    pub fn round_trip_floor(&self, hops: &[usize]) -> Duration {
        let mut total = Duration::ZERO;
        let mut at = Self::HUB_REGION;
        for &hop in hops {
            total += self.one_way(at, hop);
            at = hop;
        }
        total + self.one_way(at, Self::HUB_REGION)
    }
}

/// The release schedule of one direction of one stream: `max(previous release, arrival +
/// delay)`, so jitter and retransmission waits never reorder it.
#[derive(Debug, Default)]
pub struct Release {
    last: Option<Instant>,
}

impl Release {
    /// When a chunk that arrived at `arrival` and must take `delay` leaves.
    pub fn next(&mut self, arrival: Instant, delay: Duration) -> Instant {
        let at = arrival + delay;
        let at = match self.last {
            Some(last) if last > at => last,
            _ => at,
        };
        self.last = Some(at);
        at
    }
}

/// One direction of a relayed stream: its base delay, the profile's jitter and loss, and the
/// round trip that sets a retransmission wait.
#[derive(Clone, Copy, Debug)]
struct Shaping {
    delay: Duration,
    jitter: Duration,
    loss: f64,
    rto: Duration,
}

impl Shaping {
    fn new(profile: &Profile, from: usize, to: usize) -> Self {
        let rtt = profile.one_way(from, to) + profile.one_way(to, from);
        Self {
            delay: profile.one_way(from, to),
            jitter: Duration::from_secs_f64(profile.jitter_ms.max(0.0) / 1_000.0),
            loss: profile.loss,
            rto: RTO_MIN.max(rtt),
        }
    }

    /// This chunk's delay: the base, a uniform jitter, one RTO more if "lost".
    fn draw(&self, rng: &mut impl RngCore) -> Duration {
        let unit = |rng: &mut dyn RngCore| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut delay = self.delay + self.jitter.mul_f64(unit(rng));
        if self.loss > 0.0 && unit(rng) < self.loss {
            delay += self.rto;
        }
        delay
    }
}

/// A listener of the relay: where it listens, where it forwards, the region behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// The public address (what descriptors and configs name).
    pub listen: SocketAddr,
    /// The address the host's process binds.
    pub target: SocketAddr,
    /// The region of the host behind it.
    pub region: usize,
}

/// What the relay process runs: the profile, each host address's region (sources not listed
/// are in [`Profile::HUB_REGION`]), the routes.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The WAN profile.
    pub profile: Profile,
    /// The region of each source address.
    pub hosts: HashMap<IpAddr, usize>,
    /// The listeners.
    pub routes: Vec<Route>,
}

impl Plan {
    /// The plan as the text the relay process reads (`wan <name> <loss>`, `host <ip> <region>`,
    /// `route <listen> <target> <region>`).
    pub fn to_text(&self, wan: Wan) -> String {
        let name = match wan {
            Wan::ThreeRegions => "three-regions",
            Wan::Loopback => "loopback",
        };
        let mut text = format!("wan {name} {}\n", self.profile.loss);
        let mut hosts: Vec<_> = self.hosts.iter().collect();
        hosts.sort();
        for (ip, region) in hosts {
            text.push_str(&format!("host {ip} {region}\n"));
        }
        for route in &self.routes {
            text.push_str(&format!("route {} {} {}\n", route.listen, route.target, route.region));
        }
        text
    }

    /// Parses [`Plan::to_text`].
    pub fn parse(text: &str) -> Result<Self, WanError> {
        let mut profile = Profile::new(Wan::Loopback, 0.0);
        let mut hosts = HashMap::new();
        let mut routes = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let bad = || WanError::Plan { line: n + 1, text: line.to_owned() };
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["wan", name, loss] => {
                    let wan = <Wan as clap::ValueEnum>::from_str(name, false).map_err(|_| bad())?;
                    profile = Profile::new(wan, loss.parse().map_err(|_| bad())?);
                }
                ["host", ip, region] => {
                    hosts.insert(ip.parse().map_err(|_| bad())?, region.parse().map_err(|_| bad())?);
                }
                ["route", listen, target, region] => routes.push(Route {
                    listen: listen.parse().map_err(|_| bad())?,
                    target: target.parse().map_err(|_| bad())?,
                    region: region.parse().map_err(|_| bad())?,
                }),
                _ => return Err(bad()),
            }
        }
        Ok(Self { profile, hosts, routes })
    }
}

/// Runs the relay of the plan in `plan_file` until killed: binds every route, writes `ready`
/// beside the plan, then forwards.
pub fn run_relay(plan_file: &Path) -> Result<(), TestnetError> {
    let io = |what: String| move |source| WanError::Io { what, source };
    let text = std::fs::read_to_string(plan_file).map_err(io(plan_file.display().to_string())).map_err(e)?;
    let plan = Plan::parse(&text).map_err(e)?;
    let mut listeners = Vec::new();
    for route in &plan.routes {
        let listener = TcpListener::bind(route.listen).map_err(io(format!("binding {}", route.listen))).map_err(e)?;
        listeners.push((listener, route.clone()));
    }
    let ready = plan_file.with_file_name("ready");
    std::fs::write(&ready, b"ready\n").map_err(io(ready.display().to_string())).map_err(e)?;
    let mut threads = Vec::new();
    for (listener, route) in listeners {
        let plan = plan.clone();
        threads.push(std::thread::spawn(move || accept_loop(&listener, &route, &plan)));
    }
    for thread in threads {
        let _ = thread.join();
    }
    Ok(())
}

fn e(error: WanError) -> TestnetError {
    error.to_string()
}

fn accept_loop(listener: &TcpListener, route: &Route, plan: &Plan) {
    for inbound in listener.incoming() {
        let Ok(inbound) = inbound else { continue };
        let source = inbound.peer_addr().map(|a| a.ip()).ok();
        let from = source.and_then(|ip| plan.hosts.get(&ip).copied()).unwrap_or(Profile::HUB_REGION);
        let to = route.region;
        let Ok(outbound) = TcpStream::connect(route.target) else {
            let _ = inbound.shutdown(Shutdown::Both);
            continue;
        };
        let _ = inbound.set_nodelay(true);
        let _ = outbound.set_nodelay(true);
        let forward = Shaping::new(&plan.profile, from, to);
        let backward = Shaping::new(&plan.profile, to, from);
        if let (Ok(a), Ok(b)) = (inbound.try_clone(), outbound.try_clone()) {
            std::thread::spawn(move || pipe(a, b, forward));
            std::thread::spawn(move || pipe(outbound, inbound, backward));
        }
    }
}

/// Copies `from` to `to`, each chunk released on its [`Release`] schedule: a reader thread
/// stamps arrivals, this thread sleeps until each release. At most 256 chunks wait (the
/// reader then stops reading, and TCP's flow control pushes back on the sender).
fn pipe(mut from: TcpStream, mut to: TcpStream, shaping: Shaping) {
    let (tx, rx) = mpsc::sync_channel::<(Instant, Vec<u8>)>(256);
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = from.shutdown(Shutdown::Read);
    });
    let mut rng = rand_chacha::ChaCha12Rng::from_os_rng();
    let mut release = Release::default();
    for (arrival, chunk) in rx {
        let at = release.next(arrival, shaping.draw(&mut rng));
        let now = Instant::now();
        if at > now {
            std::thread::sleep(at - now);
        }
        if to.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = reader.join();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_never_reorders_and_never_shortens_the_delay() {
        let mut release = Release::default();
        let start = Instant::now();
        let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(7);
        let shaping = Shaping {
            delay: Duration::from_millis(40),
            jitter: Duration::from_millis(30),
            loss: 0.1,
            rto: Duration::from_millis(200),
        };
        let mut previous = start;
        let mut held_back = 0;
        for i in 0..2_000u64 {
            let arrival = start + Duration::from_micros(i * 100);
            let delay = shaping.draw(&mut rng);
            assert!(delay >= shaping.delay, "a chunk left before its one-way delay");
            held_back += usize::from(delay >= shaping.delay + shaping.rto);
            let at = release.next(arrival, delay);
            assert!(at >= arrival + shaping.delay, "released before arrival + delay");
            assert!(at >= previous, "chunk {i} overtook the one before it");
            previous = at;
        }
        // 10 % loss over 2,000 chunks: about 200 retransmission waits.
        assert!((120..300).contains(&held_back), "{held_back} chunks waited an RTO");
    }

    #[test]
    fn three_regions_spans_real_round_trips() {
        let profile = Profile::new(Wan::ThreeRegions, 0.0);
        assert_eq!(profile.one_way(0, 2), Duration::from_secs_f64(0.08052 / 2.0));
        assert_eq!(profile.one_way(2, 0), profile.one_way(0, 2));
        // A client in region 0 through entry in 0, mix in 1, exit in 2 and back.
        let floor = profile.round_trip_floor(&[0, 1, 2]);
        let expected = (1.0 + 19.56 + 88.66 + 80.52) / 2.0;
        assert!((floor.as_secs_f64() * 1_000.0 - expected).abs() < 1e-6, "{floor:?}");
        assert_eq!(Profile::new(Wan::Loopback, 0.0).round_trip_floor(&[0, 0, 0]), Duration::ZERO);
    }

    #[test]
    fn the_plan_survives_its_text() {
        let plan = Plan {
            profile: Profile::new(Wan::ThreeRegions, 0.01),
            hosts: [("10.1.1.2".parse().unwrap(), 1)].into_iter().collect(),
            routes: vec![Route {
                listen: "10.1.1.1:19000".parse().unwrap(),
                target: "10.1.1.2:19000".parse().unwrap(),
                region: 1,
            }],
        };
        assert_eq!(Plan::parse(&plan.to_text(Wan::ThreeRegions)).unwrap(), plan);
        assert!(matches!(Plan::parse("route nonsense"), Err(WanError::Plan { line: 1, .. })));
    }

    #[test]
    fn the_relay_delays_each_direction_by_its_regions() {
        // A real relay on loopback: an echo server behind a route in region 2, a client from
        // an address the plan does not list (region 0): the round trip is at least 80.52 ms.
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let target = server.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = server.accept().unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).unwrap();
            s.write_all(&buf).unwrap();
        });
        let front = TcpListener::bind("127.0.0.1:0").unwrap();
        let route = Route { listen: front.local_addr().unwrap(), target, region: 2 };
        let plan = Plan { profile: Profile::new(Wan::ThreeRegions, 0.0), hosts: HashMap::new(), routes: vec![] };
        let listen = route.listen;
        std::thread::spawn(move || accept_loop(&front, &route, &plan));
        let start = Instant::now();
        let mut client = TcpStream::connect(listen).unwrap();
        client.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        client.read_exact(&mut buf).unwrap();
        let rtt = start.elapsed();
        assert_eq!(&buf, b"hello");
        assert!(rtt >= Duration::from_micros(80_520), "round trip {rtt:?} under the WAN floor");
    }
}
