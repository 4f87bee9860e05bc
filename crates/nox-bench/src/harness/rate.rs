//! The exits' UDP sink method of `nox bench testnet` (also `hosts` and the sweeps' throughput):
//! pre-built packets paced onto the entry links, each carrying its sequence number, and the
//! instant the exits deliver it to the bench's sink — send and receive on one clock. Beside the
//! latencies, the nodes' queue gauges and over-delayed hops while the rate is offered.

use std::{
    collections::HashMap,
    path::Path,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use super::{BenchError, err, percentile};
use nox_testnet::{self as testnet, TestnetClient};

const MAGIC: &[u8; 8] = b"NOXBENCH";

/// Offers `rate` packets/s for `seconds` from `client` and records which the
/// exits delivered to `sink`, and when: one row of the sweep (with every
/// latency sample and the peak RSS over the nodes).
pub async fn measure_rate(
    dir: &Path,
    client: &mut TestnetClient,
    sink: &tokio::net::UdpSocket,
    rate: f64,
    seconds: f64,
    next_seq: &mut u64,
) -> Result<Value, BenchError> {
    let count = ((rate * seconds).ceil() as u64).max(1);
    let mut packets = Vec::with_capacity(count as usize);
    let mut payload = [0u8; 256];
    payload[..8].copy_from_slice(MAGIC);
    for seq in *next_seq..*next_seq + count {
        payload[8..16].copy_from_slice(&seq.to_be_bytes());
        packets.push((seq, client.build(&payload).map_err(err)?));
    }
    *next_seq += count;
    let first_seq = packets.first().map_or(0, |p| p.0);
    let mut sent_at: HashMap<u64, Instant> = HashMap::with_capacity(packets.len());
    let mut received: HashMap<u64, Instant> = HashMap::with_capacity(packets.len());
    let mut buffer = [0u8; 128];
    let mixing_before = mixing_counters(dir);
    let sampler = QueueSampler::start(dir);
    let started = Instant::now();
    let mut peak_rss = 0u64;
    for (index, (seq, (entry, packet))) in packets.into_iter().enumerate() {
        let due = started + Duration::from_secs_f64(index as f64 / rate);
        let now = Instant::now();
        if due > now + Duration::from_millis(1) {
            tokio::time::sleep_until(due.into()).await;
        }
        sent_at.insert(seq, Instant::now());
        client.send(&entry, packet).await.map_err(err)?;
        while let Ok((n, _)) = sink.try_recv_from(&mut buffer) {
            record(&buffer[..n], &mut received);
        }
        if index % 500 == 0 {
            peak_rss =
                peak_rss.max(testnet::nodes(dir).iter().filter_map(|n| testnet::rss_kb(&n.dir)).max().unwrap_or(0));
        }
    }
    let send_elapsed = started.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(3);
    while received.len() < sent_at.len() && Instant::now() < deadline {
        if let Ok(Ok((n, _))) = tokio::time::timeout(Duration::from_millis(50), sink.recv_from(&mut buffer)).await {
            record(&buffer[..n], &mut received);
        }
    }
    let queues = sampler.finish();
    let over_delayed = over_delayed(mixing_before, mixing_counters(dir));
    let mut latencies: Vec<f64> = received
        .iter()
        .filter(|(seq, _)| **seq >= first_seq)
        .filter_map(|(seq, at)| sent_at.get(seq).map(|sent| at.duration_since(*sent).as_secs_f64() * 1e3))
        .collect();
    latencies.sort_by(f64::total_cmp);
    let last_delivery = received.values().max().map_or(send_elapsed, |t| t.duration_since(started).as_secs_f64());
    let lost = sent_at.len() - latencies.len();
    let row = json!({
        "offered_rate": rate,
        "sent": sent_at.len(),
        "achieved_send_rate": sent_at.len() as f64 / send_elapsed,
        "delivered": latencies.len(),
        "lost": lost,
        "delivered_rate": latencies.len() as f64 / last_delivery.max(1e-9),
        "latency_ms": { "p50": percentile(&latencies, 0.5), "p90": percentile(&latencies, 0.9),
            "p99": percentile(&latencies, 0.99), "max": latencies.last() },
        "peak_rss_kb": peak_rss,
        "queue_depth": queues,
        "over_delayed": over_delayed,
        "latency_samples_ms": latencies.iter().map(|l| (l * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
    });
    Ok(row)
}

/// Every node's `(nox_mixing_over_delayed_total, nox_mixing_delay_seconds_count)` summed: packets
/// whose processing at a hop (arrival to enqueue: Sphinx unwrap and worker queueing) outlasted the
/// delay drawn for them, and packets the mixers released.
fn mixing_counters(dir: &Path) -> (u64, u64) {
    testnet::nodes(dir).iter().filter_map(|n| testnet::scrape(n.metrics)).fold((0, 0), |(o, r), text| {
        (
            o + testnet::metric(&text, "nox_mixing_over_delayed_total"),
            r + testnet::metric(&text, "nox_mixing_delay_seconds_count"),
        )
    })
}

/// The over-delayed fraction of the hops taken between two [`mixing_counters`] readings.
fn over_delayed(before: (u64, u64), after: (u64, u64)) -> Value {
    let packets = after.0.saturating_sub(before.0);
    let hops = after.1.saturating_sub(before.1);
    let fraction = (hops > 0).then(|| packets as f64 / hops as f64);
    json!({ "packets": packets, "hops_released": hops, "fraction": fraction })
}

/// Interval between two scrapes of every node's queue gauges.
const QUEUE_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Samples every node's queue gauges (`nox_mixer_held_packets`: packets the mixer holds, in their
/// mixing delay or at the replay gate; `nox_worker_queue_depth`: packets waiting for a Sphinx
/// worker) every [`QUEUE_SAMPLE_EVERY`] on a thread of its own, from the first packet sent until
/// the deliveries are counted.
struct QueueSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<QueueSample>>,
}

/// One node's gauges at one instant.
#[derive(Clone, Copy)]
struct QueueSample {
    layer: u8,
    mixer_held: u64,
    worker_queue: u64,
}

impl QueueSampler {
    fn start(dir: &Path) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let nodes: Vec<(u8, std::net::SocketAddr)> = testnet::nodes(dir).iter().map(|n| (n.layer, n.metrics)).collect();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let next = Instant::now() + QUEUE_SAMPLE_EVERY;
                for &(layer, addr) in &nodes {
                    if let Some(text) = testnet::scrape(addr) {
                        samples.push(QueueSample {
                            layer,
                            mixer_held: testnet::metric(&text, "nox_mixer_held_packets"),
                            worker_queue: testnet::metric(&text, "nox_worker_queue_depth"),
                        });
                    }
                }
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            samples
        });
        Self { stop, thread }
    }

    /// Stops sampling: mean / p99 / max per gauge over all nodes' samples, and per layer.
    fn finish(self) -> Value {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let samples = self.thread.join().unwrap_or_default();
        queue_summary(&samples)
    }
}

/// Mean / p99 / max of both gauges over `samples`, pooled and per layer.
fn queue_summary(samples: &[QueueSample]) -> Value {
    let stats = |values: Vec<u64>| {
        let mut v: Vec<f64> = values.into_iter().map(|x| x as f64).collect();
        v.sort_by(f64::total_cmp);
        let mean =
            if v.is_empty() { None } else { Some((v.iter().sum::<f64>() / v.len() as f64 * 100.0).round() / 100.0) };
        json!({ "mean": mean, "p99": percentile(&v, 0.99), "max": v.last() })
    };
    let both = |s: &[QueueSample]| {
        json!({ "samples": s.len(), "mixer_held": stats(s.iter().map(|q| q.mixer_held).collect()),
            "worker_queue": stats(s.iter().map(|q| q.worker_queue).collect()) })
    };
    let mut layers: Vec<u8> = samples.iter().map(|s| s.layer).collect();
    layers.sort_unstable();
    layers.dedup();
    let per_layer: serde_json::Map<String, Value> = layers
        .iter()
        .map(|&l| {
            let of: Vec<QueueSample> = samples.iter().copied().filter(|s| s.layer == l).collect();
            (format!("layer_{l}"), both(&of))
        })
        .collect();
    json!({ "per_node_sample_every_ms": QUEUE_SAMPLE_EVERY.as_millis() as u64, "all_nodes": both(samples),
        "per_layer": per_layer })
}

fn record(datagram: &[u8], received: &mut HashMap<u64, Instant>) {
    if datagram.len() >= 16 && &datagram[..8] == MAGIC {
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&datagram[8..16]);
        received.entry(u64::from_be_bytes(seq)).or_insert_with(Instant::now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_summary_pools_nodes_and_splits_layers() {
        let sample = |layer, mixer_held, worker_queue| QueueSample { layer, mixer_held, worker_queue };
        let samples = [sample(0, 0, 1), sample(0, 4, 0), sample(1, 10, 3), sample(1, 2, 0)];
        let s = queue_summary(&samples);
        assert_eq!(s["all_nodes"]["samples"], 4);
        assert_eq!(s["all_nodes"]["mixer_held"]["mean"], 4.0);
        assert_eq!(s["all_nodes"]["mixer_held"]["max"], 10.0);
        assert_eq!(s["all_nodes"]["worker_queue"]["max"], 3.0);
        assert_eq!(s["per_layer"]["layer_0"]["mixer_held"]["max"], 4.0);
        assert_eq!(s["per_layer"]["layer_1"]["mixer_held"]["mean"], 6.0);
        assert_eq!(s["per_layer"]["layer_1"]["worker_queue"]["mean"], 1.5);
        // No sample (no node answered): no figure rather than a zero.
        assert!(queue_summary(&[])["all_nodes"]["mixer_held"]["mean"].is_null());
    }

    #[test]
    fn over_delayed_is_a_fraction_of_the_hops_between_readings() {
        let row = over_delayed((10, 1000), (35, 1500));
        assert_eq!(row["packets"], 25);
        assert_eq!(row["hops_released"], 500);
        assert_eq!(row["fraction"], 0.05);
        assert!(over_delayed((3, 7), (3, 7))["fraction"].is_null());
    }
}
