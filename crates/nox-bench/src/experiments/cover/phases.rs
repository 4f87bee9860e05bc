//! The measurement on the running testnet: for one μ, a phase per (λ_P, request rate,
//! repeat), each with a fresh set of clients whose sends and round trips are captured.

use super::*;

pub(super) type Run = (Vec<(String, u8)>, Vec<Phase>);

pub(super) async fn run_phases(
    args: &CoverArgs,
    mu_ms: f64,
    (rates, request_rates): (&[f64], &[f64]),
    seconds: f64,
    rng: &mut ChaCha20Rng,
) -> Result<Run, BenchError> {
    let names = capture::node_names(&TestnetClient::connect(&args.dir).map_err(err)?.topology);
    let mut phases = Vec::new();
    for &request_rate in request_rates {
        for &cover_rate in rates {
            for repeat in 0..args.repeats {
                let point = (mu_ms, cover_rate, request_rate, repeat);
                phases.push(phase(args, point, seconds, &names.by_id, rng).await?);
            }
        }
    }
    Ok((names.nodes, phases))
}

/// One phase of the point `(μ ms, λ_P, requests/s, repeat index)`.
pub(super) async fn phase(
    args: &CoverArgs,
    (mu_ms, cover_rate, request_rate, repeat): (f64, f64, f64, u32),
    seconds: f64,
    short_of: &HashMap<nox_sphinx::NodeId, String>,
    rng: &mut ChaCha20Rng,
) -> Result<Phase, BenchError> {
    // The daemon's client: the core's defaults (loops, parity, timeout) with λ_P set.
    let config = ClientConfig { cover_rate, ..ClientConfig::default() };
    let mut handles = Vec::new();
    let mut observed = Vec::new();
    for _ in 0..args.clients {
        let handle = client(&args.dir, config.clone()).await?;
        observed.push(handle.observe_sends());
        handles.push(handle);
    }
    // Links up and the Poisson timers running before the window opens.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for rx in &mut observed {
        while rx.try_recv().is_ok() {}
    }
    let start_us = now_us();
    let opened = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..args.active {
        let mut t = 0.0;
        loop {
            let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            t += -u.ln() / request_rate;
            if t >= seconds {
                break;
            }
            let handle = handles[c as usize].clone();
            let due = opened + Duration::from_secs_f64(t);
            let body = vec![u8::try_from(c % 251).unwrap_or(0); ECHO_BYTES];
            tasks.spawn(async move {
                tokio::time::sleep_until(due.into()).await;
                let sent = Instant::now();
                let result = handle.request(RequestBody::Echo(body.clone()), 2 * ECHO_BYTES).await;
                match result {
                    Ok(response) if response.body == body => Some(sent.elapsed().as_secs_f64() * 1e3),
                    _ => None,
                }
            });
        }
    }
    let (mut rtts_ms, mut failures) = (Vec::new(), 0u64);
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Some(rtt)) => rtts_ms.push(rtt),
            _ => failures += 1,
        }
    }
    // At least the whole request window, then the last packets' way out.
    let rest = Duration::from_secs_f64((seconds - opened.elapsed().as_secs_f64()).max(0.0));
    tokio::time::sleep(rest + capture::drain_time(mu_ms)).await;
    let end_us = now_us();
    let window_s = (end_us - start_us) as f64 / 1e6;
    drop(handles);
    let mut sends = Vec::new();
    let mut heads = HashMap::new();
    let mut per_client = vec![0u64; args.clients as usize];
    for (c, rx) in observed.iter_mut().enumerate() {
        while let Ok(SentPacket { unix_us, entry, kind }) = rx.try_recv() {
            if unix_us > end_us {
                continue;
            }
            per_client[c] += 1;
            let message = match kind {
                PacketKind::Fragment { head } => {
                    let next = heads.len() as u64;
                    Some(*heads.entry(head).or_insert(next))
                }
                PacketKind::Loop | PacketKind::Drop => None,
            };
            let entry = short_of.get(&entry).cloned().unwrap_or_default();
            sends.push(ClientSend { time_us: unix_us, client: c as u32, entry, message });
        }
    }
    sends.sort_by_key(|s| s.time_us);
    // The clients' links close with their handles; let the nodes settle before the next phase.
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(Phase {
        mu_ms,
        cover_rate,
        request_rate,
        repeat,
        sends,
        heads,
        start_us,
        end_us,
        rtts_ms,
        failures,
        per_client,
        window_s,
    })
}
