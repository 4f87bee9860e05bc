//! What durable replay tags cost (`cargo bench -p nox-node --bench replay_sync`).
//!
//! 1. `fdatasync` of one appended batch of 40-byte records on this disk, by
//!    batch size: the floor of any durable write.
//! 2. Group commit through the node's real code (`TagJournal` over
//!    `DirStorage`), tags arriving as a Poisson stream at several rates,
//!    each with an Exp(μ) mixing delay (μ = 1 ms, the node's default): how
//!    long a packet waits at the egress gate after its delay ended, and how
//!    many tags each sync carries.
//! 3. One node's pipeline (2 Sphinx workers, μ = 1 ms) fed a burst of
//!    pre-built packets, without a journal and with the durable journal:
//!    packets per second through the node and the mean time in the node.
//!
//! The directory is `$NOX_BENCH_DIR` (default: the system temp dir); run it
//! on the disk the node's replay directory lives on. With `$NOX_BENCH_JSON`
//! set, the rows and the machine (CPU, load, commit, file system of the
//! directory) are also written to that JSON file. Wall-clock figures:
//! they change with the machine and disk, compare them as ratios to the
//! `fdatasync` latency of part 1.

use std::{
    fs::OpenOptions,
    io::Write,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use nox_mixing::MixingConfig;
use nox_node::{
    GroupCommitConfig, Inbound, IngestAdmission, NodeMetrics, Origin, Pipeline, PipelineConfig, ReplayStore, TagJournal,
};
use nox_relay::Relay;
use nox_replay::BloomParameters;
use nox_sphinx::{BuildOptions, Geometry, PathHop, SecretKey, build_forward};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn exp_sample(rng: &mut ChaCha20Rng, mean: f64) -> f64 {
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    -mean * (1.0 - u).ln()
}

fn raw_fdatasync(dir: &std::path::Path, rows: &mut Vec<Value>) {
    println!("## 1. fdatasync of one appended batch (40-byte records)");
    println!("| records per batch | bytes | median ms | p99 ms | tags/s if back to back |");
    println!("|---|---|---|---|---|");
    let path = dir.join("fdatasync-probe");
    let mut file = OpenOptions::new().create(true).append(true).open(&path).expect("probe file");
    for batch in [1usize, 16, 256, 4096] {
        let bytes = vec![0xA5u8; batch * 40];
        let mut times: Vec<f64> = (0..150)
            .map(|_| {
                let start = Instant::now();
                file.write_all(&bytes).expect("write");
                file.sync_data().expect("fdatasync");
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let median = percentile(&times, 0.5);
        rows.push(json!({
            "records_per_batch": batch, "bytes": batch * 40,
            "median_ms": median, "p99_ms": percentile(&times, 0.99), "samples": times.len(),
        }));
        println!(
            "| {batch} | {} | {median:.3} | {:.3} | {:.0} |",
            batch * 40,
            percentile(&times, 0.99),
            batch as f64 / (median / 1e3)
        );
    }
    let _ = std::fs::remove_file(&path);
}

fn group_commit(dir: &std::path::Path, rate: f64, seconds: f64, mean_delay_ms: f64, rows: &mut Vec<Value>) {
    let sub = dir.join(format!("group-commit-{rate}"));
    let _ = std::fs::remove_dir_all(&sub);
    let store = Arc::new(ReplayStore::open(&sub).expect("replay dir"));
    store.load(1, BloomParameters::for_capacity(1_000_000, 0.001).expect("params")).expect("load");
    let metrics = Arc::new(NodeMetrics::default());
    let (journal, sync) = TagJournal::spawn(store, GroupCommitConfig::default(), metrics.clone()).expect("spawn");
    // (when, durable watermark) after every sync.
    let marks: Arc<Mutex<Vec<(Instant, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    {
        let (marks, journal_weak) = (marks.clone(), Arc::downgrade(&journal));
        journal.set_waker(move || {
            if let (Some(journal), Ok(mut marks)) = (journal_weak.upgrade(), marks.lock()) {
                marks.push((Instant::now(), journal.durable_seq()));
            }
        });
    }
    let mut rng = ChaCha20Rng::seed_from_u64(rate as u64);
    let count = (rate * seconds) as usize;
    let mut records: Vec<(u64, Instant, Instant)> = Vec::with_capacity(count);
    let start = Instant::now();
    let mut next = 0.0f64;
    for _ in 0..count {
        next += exp_sample(&mut rng, 1.0 / rate);
        let at = start + Duration::from_secs_f64(next);
        while Instant::now() < at {
            std::hint::spin_loop();
        }
        let mut tag = [0u8; 32];
        rng.fill_bytes(&mut tag);
        let recorded = Instant::now();
        let seq = journal.record(1, &tag).expect("record");
        let delay_end = recorded + Duration::from_secs_f64(exp_sample(&mut rng, mean_delay_ms / 1e3));
        records.push((seq, recorded, delay_end));
    }
    std::thread::sleep(Duration::from_millis(100));
    sync.finish();
    let marks = marks.lock().expect("marks").clone();
    let mut waits = Vec::with_capacity(records.len());
    let mut durable_after = Vec::with_capacity(records.len());
    let mut mark = 0;
    for (seq, recorded, delay_end) in &records {
        while mark < marks.len() && marks[mark].1 < *seq {
            mark += 1;
        }
        let Some((durable_at, _)) = marks.get(mark) else { continue };
        durable_after.push(durable_at.saturating_duration_since(*recorded).as_secs_f64() * 1e3);
        waits.push(durable_at.saturating_duration_since(*delay_end).as_secs_f64() * 1e3);
    }
    let waited = waits.iter().filter(|w| **w > 0.0).count() as f64 / waits.len().max(1) as f64;
    let mean_wait = waits.iter().sum::<f64>() / waits.len().max(1) as f64;
    waits.sort_by(f64::total_cmp);
    durable_after.sort_by(f64::total_cmp);
    let syncs = metrics.replay_syncs.load(std::sync::atomic::Ordering::Relaxed).max(1);
    let synced = metrics.replay_synced_tags.load(std::sync::atomic::Ordering::Relaxed);
    rows.push(json!({
        "tags_per_second": rate, "mean_delay_ms": mean_delay_ms, "tags": records.len(),
        "durable_after_p50_ms": percentile(&durable_after, 0.5), "durable_after_p99_ms": percentile(&durable_after, 0.99),
        "waiting_fraction": waited, "added_mean_ms": mean_wait,
        "added_p50_ms": percentile(&waits, 0.5), "added_p99_ms": percentile(&waits, 0.99),
        "syncs": syncs, "tags_per_sync": synced as f64 / syncs as f64,
    }));
    println!(
        "| {rate:.0} | {mean_delay_ms} | {:.2} | {:.2} | {:.0} % | {mean_wait:.2} | {:.2} | {:.2} | {syncs} | {:.1} |",
        percentile(&durable_after, 0.5),
        percentile(&durable_after, 0.99),
        waited * 100.0,
        percentile(&waits, 0.5),
        percentile(&waits, 0.99),
        synced as f64 / syncs as f64,
    );
    let _ = std::fs::remove_dir_all(&sub);
}

fn pipeline_burst(
    dir: Option<&std::path::Path>,
    packets: &[Vec<u8>],
    key: &SecretKey,
    label: &str,
    rows: &mut Vec<Value>,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    runtime.block_on(async {
        let bloom = BloomParameters::for_capacity(1_000_000, 0.001).expect("params");
        let metrics = Arc::new(NodeMetrics::default());
        let mut relay = Relay::new(Geometry::new(4096, 3).expect("geometry"));
        let mut sync = None;
        let journal = match dir {
            Some(dir) => {
                let sub = dir.join("pipeline");
                let _ = std::fs::remove_dir_all(&sub);
                let store = Arc::new(ReplayStore::open(&sub).expect("replay dir"));
                let (cache, _) = store.load(1, bloom).expect("load");
                relay.open_epoch_with(1, key.clone(), cache);
                let (journal, thread) =
                    TagJournal::spawn(store, GroupCommitConfig::default(), metrics.clone()).expect("spawn");
                sync = Some(thread);
                Some(journal)
            }
            None => {
                relay.open_epoch(1, key.clone(), bloom);
                None
            }
        };
        let queue = packets.len() + 16;
        let config = PipelineConfig {
            workers: 2,
            inbound_queue: queue,
            worker_queue: queue,
            mixer_queue: queue,
            egress_queue: queue,
            mixing: MixingConfig::new(Duration::from_millis(1), queue),
        };
        let mut handles = Pipeline::spawn(
            Arc::new(std::sync::RwLock::new(relay)),
            journal,
            Arc::new(|_: &Origin| true),
            Arc::new(IngestAdmission::fixed(0)),
            config,
            metrics.clone(),
        )
        .expect("pipeline");
        let start = Instant::now();
        for packet in packets {
            let frame = Inbound {
                origin: Origin::Client,
                received_at: Instant::now(),
                packet: packet.clone(),
                client_ip: None,
            };
            handles.inbound.send(frame).await.expect("inbound");
        }
        let mut in_node = 0.0;
        for _ in packets {
            match handles.egress.recv().await {
                Some(nox_node::Egress::Forward { received_at, .. }) => in_node += received_at.elapsed().as_secs_f64(),
                Some(_) => {}
                None => break,
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        rows.push(json!({
            "journal": label, "packets": packets.len(), "packets_per_second": packets.len() as f64 / elapsed,
            "mean_in_node_ms": in_node / packets.len() as f64 * 1e3,
            "syncs": metrics.replay_syncs.load(std::sync::atomic::Ordering::Relaxed),
        }));
        println!(
            "| {label} | {} | {:.0} | {:.2} | {} |",
            packets.len(),
            packets.len() as f64 / elapsed,
            in_node / packets.len() as f64 * 1e3,
            metrics.replay_syncs.load(std::sync::atomic::Ordering::Relaxed),
        );
        drop(handles.inbound);
        if let Some(sync) = sync {
            sync.finish();
        }
    });
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = std::env::var_os("NOX_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = dir.join(format!("nox-replay-sync-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let (mut raw, mut gate, mut burst) = (Vec::new(), Vec::new(), Vec::new());
    raw_fdatasync(&dir, &mut raw);
    println!();
    println!("## 2. Group commit (TagJournal over DirStorage), Poisson arrivals, Exp(μ) mixing delay");
    println!(
        "| tags/s | μ ms | durable after p50 ms | p99 ms | packets that wait | mean added ms | added p50 ms | added p99 ms | syncs | tags per sync |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (rate, mu) in [(100.0, 1.0), (1_000.0, 1.0), (10_000.0, 1.0), (50_000.0, 1.0), (1_000.0, 10.0), (1_000.0, 50.0)]
    {
        group_commit(&dir, rate, 3.0, mu, &mut gate);
    }
    println!();
    println!("## 3. One node's pipeline, burst of packets (2 workers, μ = 1 ms)");
    println!("| journal | packets | packets/s | mean ms from arrival to egress | syncs |");
    println!("|---|---|---|---|---|");
    let geometry = Geometry::new(4096, 3).expect("geometry");
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let keys: Vec<SecretKey> = (0..3).map(|_| SecretKey::generate(&mut rng)).collect();
    let hops: Vec<PathHop> = nox_test_support::sphinx::hops(&keys);
    let packets: Vec<Vec<u8>> = (0..3000)
        .map(|i: u32| {
            build_forward(&geometry, &BuildOptions::new(1), &hops, &i.to_le_bytes(), &mut rng).expect("build")
        })
        .collect();
    for round in 0..2 {
        let _ = round;
        pipeline_burst(None, &packets, &keys[0], "none (tags in memory only)", &mut burst);
        pipeline_burst(Some(&dir), &packets, &keys[0], "durable (group commit, fdatasync)", &mut burst);
    }
    if let Some(path) = std::env::var_os("NOX_BENCH_JSON") {
        let document = json!({
            "what": "cost of durable replay tags: fdatasync by batch, egress-gate wait, pipeline burst",
            "command": "cargo bench -p nox-node --bench replay_sync",
            "directory": dir.display().to_string(),
            "filesystem": filesystem_of(&dir),
            "machine": machine(),
            "fdatasync": raw,
            "group_commit": gate,
            "pipeline_burst": burst,
        });
        let text = serde_json::to_string_pretty(&document).expect("json") + "\n";
        std::fs::write(path, text).expect("write json");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The mount (device, type) holding `dir`: the longest mount point that prefixes it.
fn filesystem_of(dir: &std::path::Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    let dir = dir.canonicalize().ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() > 2 && dir.starts_with(fields[1]))
                .then(|| (fields[1].len(), format!("{} {} {}", fields[0], fields[1], fields[2])))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, text)| text)
}

fn machine() -> Value {
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|s| s.trim().to_string());
    let cpu = read("/proc/cpuinfo").and_then(|text| {
        text.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let command = |program: &str, args: &[&str]| {
        let output = std::process::Command::new(program).args(args).output().ok()?;
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    json!({
        "cpu_model": cpu,
        "logical_cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "os": read("/proc/sys/kernel/osrelease"),
        "load_average": read("/proc/loadavg"),
        "git_commit": command("git", &["rev-parse", "HEAD"]),
        "git_dirty": command("git", &["status", "--porcelain"]).map(|s| !s.is_empty()),
        "timestamp_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs()),
    })
}
