//! `nox bench profiles`: what each client cover profile (`nox client --profile`) costs on a
//! real testnet — upstream bytes per client per minute while idle and during one wallet-like
//! session of requests, scaled to a day, and the round trip of the session's requests.
//!
//! One `nox testnet up` (real node processes, μ as given, no chain: echo requests need none),
//! one in-process `nox-client` per profile, exactly as the daemon builds it (`ClientConfig`
//! with λ_P = `DAEMON_COVER_RATE` and the profile), all three side by side. Each client's
//! upstream is what it hands its entry link (`ClientHandle::observe_sends`), × the packet
//! length. The pattern: `idle` seconds with no request, then a session of `requests` echo
//! requests evenly spread over `session` seconds, counted until the session's end plus the
//! wallet profile's idle tail (so the wallet's padding is in the figure).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nox_client::profile::{CoverProfile, MobileProfile, WalletProfile};
use nox_client::{ClientConfig, SentPacket};
use nox_message::RequestBody;
use serde_json::json;

use crate::harness::capture::now_us;
use crate::harness::{BenchError, ECHO_BYTES, client, err, stats, write_report};
use nox_testnet::{self as testnet, Layout};

/// Options of `nox bench profiles`.
#[derive(clap::Args, Clone)]
pub struct ProfilesArgs {
    /// CI-sized: 3 s idle, a 6 s session of 3 requests, the wallet padded to 6 s + 2 s.
    #[arg(long)]
    pub quick: bool,
    /// Mean delay per hop μ, ms (50: the nodes' shipped default).
    #[arg(long, default_value_t = 50.0)]
    pub mean_delay_ms: f64,
    /// Seconds of the idle window (default 60; quick 3).
    #[arg(long)]
    pub idle_secs: Option<f64>,
    /// Seconds over which the session's requests are spread (default 120; quick 6).
    #[arg(long)]
    pub session_secs: Option<f64>,
    /// Requests in the session (default 10; quick 3).
    #[arg(long)]
    pub requests: Option<u32>,
    /// First link port of the bench testnet.
    #[arg(long, default_value_t = 26_000)]
    pub base_port: u16,
    /// Testnet state directory.
    #[arg(long, default_value = ".nox-bench-profiles")]
    pub dir: PathBuf,
    /// Output JSON (default bench/data/cover-profiles.json; quick: bench/data/cover-profiles-quick.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

struct Plan {
    idle: f64,
    session: f64,
    requests: u32,
    profiles: Vec<CoverProfile>,
}

impl ProfilesArgs {
    fn plan(&self) -> Plan {
        let wallet = if self.quick {
            WalletProfile { min_session: Duration::from_secs(6), idle_tail: Duration::from_secs(2) }
        } else {
            WalletProfile::default()
        };
        Plan {
            idle: self.idle_secs.unwrap_or(if self.quick { 3.0 } else { 60.0 }),
            session: self.session_secs.unwrap_or(if self.quick { 6.0 } else { 120.0 }),
            requests: self.requests.unwrap_or(if self.quick { 3 } else { 10 }).max(1),
            profiles: vec![
                CoverProfile::AlwaysOn,
                CoverProfile::Wallet(wallet),
                CoverProfile::Mobile(MobileProfile::default()),
            ],
        }
    }
}

/// What one client did.
struct Measured {
    profile: CoverProfile,
    idle_packets: u64,
    session_packets: u64,
    rtts_ms: Vec<f64>,
    failures: u64,
}

/// Runs the measurement and writes the JSON.
pub fn run(args: &ProfilesArgs) -> Result<(), BenchError> {
    let plan = args.plan();
    if !(plan.idle > 0.0 && plan.session > 0.0 && args.mean_delay_ms >= 0.0) {
        return Err(err("idle and session seconds must be positive, μ not negative"));
    }
    let started = Instant::now();
    let layout =
        Layout { mean_delay_ms: args.mean_delay_ms, base_port: args.base_port, no_chain: true, ..Layout::default() };
    testnet::up(&args.dir, &layout).map_err(err)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(err)?;
    let result = runtime.block_on(measure(args, &plan));
    let _ = testnet::down(&args.dir);
    let (measured, windows) = result?;
    let packet_len = nox_sphinx::Geometry::default().packet_len() as f64;
    let (idle_s, session_s) = windows;
    let mut rows = Vec::new();
    for m in measured {
        let per_min = |packets: u64, secs: f64| packets as f64 * packet_len / 1e6 / secs * 60.0;
        let (idle_mb_min, session_mb_min) = (per_min(m.idle_packets, idle_s), per_min(m.session_packets, session_s));
        // A day idle except for this one session.
        let one_session_day_mb =
            m.session_packets as f64 * packet_len / 1e6 + idle_mb_min / 60.0 * (86_400.0 - session_s);
        let mut rtts = m.rtts_ms.clone();
        let rtt = stats(&mut rtts);
        println!(
            "{:>9}: idle {:.2} MB/min ({:.2} GB/day), session {:.2} MB/min ({:.2} GB/day), a day with one session {:.1} MB; RTT p50 {} ms ({} failed)",
            m.profile.name(),
            idle_mb_min,
            idle_mb_min * 1440.0 / 1e3,
            session_mb_min,
            session_mb_min * 1440.0 / 1e3,
            one_session_day_mb,
            rtt["p50"],
            m.failures,
        );
        rows.push(json!({
            "profile": m.profile.name(),
            "parameters": format!("{:?}", m.profile),
            "idle": { "packets": m.idle_packets, "seconds": round2(idle_s), "mb_per_min": round2(idle_mb_min),
                "gb_per_day": round2(idle_mb_min * 1440.0 / 1e3) },
            "session": { "packets": m.session_packets, "seconds": round2(session_s), "mb_per_min": round2(session_mb_min),
                "gb_per_day_if_sustained": round2(session_mb_min * 1440.0 / 1e3) },
            "day_with_one_session_mb": round2(one_session_day_mb),
            "rtt_ms": rtt,
            "requests": m.rtts_ms.len(),
            "failures": m.failures,
        }));
    }
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(if args.quick {
            "bench/data/cover-profiles-quick.json"
        } else {
            "bench/data/cover-profiles.json"
        })
    });
    let parameters = json!({
        "mean_delay_ms": args.mean_delay_ms,
        "cover_rate": nox_client::DAEMON_COVER_RATE,
        "packet_len": packet_len,
        "idle_secs": plan.idle,
        "session_secs": plan.session,
        "requests": plan.requests,
        "quick": args.quick,
        "testnet": "nox testnet up defaults (3 layers × 3 nodes, node cover λ_L = λ_D = 0.05/s), --no-chain",
        "client": "one nox-client per profile, side by side: ClientConfig::default() with cover_rate = DAEMON_COVER_RATE and the profile",
        "pattern": "idle window, then `requests` 64-byte echo requests evenly spread over `session_secs`; the session window runs to session_secs + the wallet's idle tail",
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "elapsed_s": round2(started.elapsed().as_secs_f64()),
    });
    let summary = json!(rows.iter().map(|r| json!({
        "profile": r["profile"], "idle_gb_per_day": r["idle"]["gb_per_day"],
        "session_gb_per_day": r["session"]["gb_per_day_if_sustained"], "day_with_one_session_mb": r["day_with_one_session_mb"],
        "rtt_p50_ms": r["rtt_ms"]["p50"] })).collect::<Vec<_>>());
    write_report(&out, "cover-profiles", parameters, json!(rows), summary, Vec::new())
}

type Windows = (f64, f64);

async fn measure(args: &ProfilesArgs, plan: &Plan) -> Result<(Vec<Measured>, Windows), BenchError> {
    let mut handles = Vec::new();
    let mut observed = Vec::new();
    for profile in &plan.profiles {
        let config =
            ClientConfig { cover_rate: nox_client::DAEMON_COVER_RATE, profile: *profile, ..ClientConfig::default() };
        let handle = client(&args.dir, config).await?;
        observed.push(handle.observe_sends());
        handles.push(handle);
    }
    // Links up before the windows open; what was sent while connecting is not counted.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for rx in &mut observed {
        while rx.try_recv().is_ok() {}
    }
    let idle_start = now_us();
    tokio::time::sleep(Duration::from_secs_f64(plan.idle)).await;
    let session_start = now_us();
    let opened = tokio::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (c, handle) in handles.iter().enumerate() {
        for i in 0..plan.requests {
            let due = opened + Duration::from_secs_f64(plan.session * f64::from(i) / f64::from(plan.requests));
            let handle = handle.clone();
            let body = vec![u8::try_from(i % 251).unwrap_or(0); ECHO_BYTES];
            tasks.spawn(async move {
                tokio::time::sleep_until(due).await;
                let sent = Instant::now();
                let result = handle.request(RequestBody::Echo(body.clone()), 2 * ECHO_BYTES).await;
                (c, matches!(result, Ok(r) if r.body == body).then(|| sent.elapsed().as_secs_f64() * 1e3))
            });
        }
    }
    let mut measured: Vec<Measured> = plan
        .profiles
        .iter()
        .map(|p| Measured { profile: *p, idle_packets: 0, session_packets: 0, rtts_ms: Vec::new(), failures: 0 })
        .collect();
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok((c, Some(rtt))) => measured[c].rtts_ms.push(rtt),
            Ok((c, None)) => measured[c].failures += 1,
            Err(e) => return Err(err(e)),
        }
    }
    let tail = plan
        .profiles
        .iter()
        .find_map(|p| match p {
            CoverProfile::Wallet(w) => Some(w.idle_tail.as_secs_f64()),
            _ => None,
        })
        .unwrap_or(0.0);
    let window = plan.session + tail;
    tokio::time::sleep_until(opened + Duration::from_secs_f64(window)).await;
    let session_end = now_us();
    for (c, rx) in observed.iter_mut().enumerate() {
        while let Ok(SentPacket { unix_us, .. }) = rx.try_recv() {
            if (idle_start..session_start).contains(&unix_us) {
                measured[c].idle_packets += 1;
            } else if (session_start..session_end).contains(&unix_us) {
                measured[c].session_packets += 1;
            }
        }
    }
    let secs = |a: u64, b: u64| (b - a) as f64 / 1e6;
    Ok((measured, (secs(idle_start, session_start), secs(session_start, session_end))))
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_and_full_plans() {
        let mut args = ProfilesArgs {
            quick: true,
            mean_delay_ms: 50.0,
            idle_secs: None,
            session_secs: None,
            requests: None,
            base_port: 26_000,
            dir: PathBuf::from("x"),
            out: None,
        };
        let quick = args.plan();
        assert_eq!((quick.idle, quick.session, quick.requests), (3.0, 6.0, 3));
        args.quick = false;
        let full = args.plan();
        assert_eq!((full.idle, full.session, full.requests), (60.0, 120.0, 10));
        assert_eq!(full.profiles[1], CoverProfile::Wallet(WalletProfile::default()));
        let names: Vec<_> = full.profiles.iter().map(CoverProfile::name).collect();
        assert_eq!(names, nox_client::profile::PROFILE_NAMES);
    }
}
