//! `nox testnet traffic`: an anonymous client sending Sphinx packets through the testnet.

use super::*;

/// Sends `packets` Sphinx packets as an anonymous client and waits for the
/// exits to deliver them.
pub fn traffic(dir: &Path, packets: u64, rate: f64) -> Result<(), TestnetError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(traffic_async(dir, packets, rate))
}

/// An anonymous client of a testnet: its verified topology and links to
/// the entry nodes.
pub struct TestnetClient {
    /// The verified topology.
    pub topology: nox_topology::VerifiedTopology,
    geometry: Geometry,
    links: nox_link::transport::OutboundLinks,
    /// Records entry nodes send down (difficulty notices). Kept open: a
    /// client link whose receiver is gone closes on its first record.
    pub downstream: tokio::sync::mpsc::Receiver<nox_link::transport::Inbound>,
    _stop: tokio::sync::watch::Sender<bool>,
    rng: rand_chacha::ChaCha20Rng,
}

impl TestnetClient {
    /// Loads the testnet's topology; call inside a tokio runtime.
    pub fn connect(dir: &Path) -> Result<Self, TestnetError> {
        use nox_link::{
            LinkConfig, LinkPublicKey,
            transport::{DialerConfig, LinkCounters, OutboundLinks},
        };
        // The geometry the testnet's topology names.
        let topology = directory::topology(dir)?;
        let geometry = *topology.geometry();
        let directory: std::collections::HashMap<LinkPublicKey, SocketAddr> = topology
            .nodes()
            .iter()
            .map(|n| (LinkPublicKey(n.descriptor.link_key.to_bytes()), n.descriptor.address))
            .collect();
        let link = LinkConfig::new(geometry).map_err(|e| e.to_string())?;
        let (replies_tx, downstream) = tokio::sync::mpsc::channel(16);
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let links = OutboundLinks::new(
            DialerConfig::client(link),
            std::sync::Arc::new(directory),
            replies_tx,
            std::sync::Arc::new(LinkCounters::default()),
            stop_rx,
        )
        .map_err(|e| e.to_string())?;
        Ok(Self { topology, geometry, links, downstream, _stop: stop, rng: rand_chacha::ChaCha20Rng::from_os_rng() })
    }

    /// Fetches the current topology again (from the directory when the testnet has one), so
    /// packets use the epoch keys published since. Link keys and addresses of the nodes stay
    /// those known at [`TestnetClient::connect`] (the directory pins them).
    pub async fn refresh(&mut self, dir: &Path) -> Result<(), TestnetError> {
        self.topology = directory::topology_async(dir).await?;
        Ok(())
    }

    /// A packet carrying `payload` on a fresh random path, and its entry's link key.
    pub fn build(&mut self, payload: &[u8]) -> Result<(nox_link::LinkPublicKey, Vec<u8>), TestnetError> {
        let epoch = self.topology.client_epoch(unix_now());
        let path = self.topology.random_path(&mut self.rng, epoch, &|_| false).map_err(|e| e.to_string())?;
        let packet = nox_sphinx::build_forward(
            &self.geometry,
            &nox_sphinx::BuildOptions::new(epoch),
            &path,
            payload,
            &mut self.rng,
        )
        .map_err(|e| e.to_string())?;
        let entry = self.topology.node(&path[0].node).ok_or("entry node vanished")?;
        Ok((nox_link::LinkPublicKey(entry.descriptor.link_key.to_bytes()), packet))
    }

    /// Queues a packet for its entry node, waiting for queue space.
    pub async fn send(&self, entry: &nox_link::LinkPublicKey, packet: Vec<u8>) -> Result<(), TestnetError> {
        self.links.send_wait(entry, packet).await.map_err(|e| e.to_string())
    }
}

pub(super) async fn traffic_async(dir: &Path, packets: u64, rate: f64) -> Result<(), TestnetError> {
    let mut client = TestnetClient::connect(dir)?;
    let exits: Vec<NodeEntry> = {
        let all = nodes(dir);
        let last = all.iter().map(|n| n.layer).max().unwrap_or(0);
        all.into_iter().filter(|n| n.layer == last).collect()
    };
    let delivered_now = || {
        exits.iter().map(|n| metric(&scrape(n.metrics).unwrap_or_default(), "nox_packets_delivered_total")).sum::<u64>()
    };
    let before = delivered_now();
    let epoch = client.topology.client_epoch(unix_now());
    let started = Instant::now();
    let mut payload = [0u8; 256];
    let mut refreshed = Instant::now();
    for sent in 0..packets {
        // Long runs cross epochs: pick up the keys nodes publish meanwhile.
        if refreshed.elapsed() > Duration::from_secs(1) {
            client.refresh(dir).await?;
            refreshed = Instant::now();
        }
        payload[..8].copy_from_slice(&sent.to_be_bytes());
        let (entry, packet) = client.build(&payload)?;
        client.send(&entry, packet).await?;
        if rate > 0.0 {
            let due = started + Duration::from_secs_f64((sent + 1) as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
        }
    }
    let sent_in = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut delivered = delivered_now() - before;
    while delivered < packets && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        delivered = delivered_now() - before;
    }
    let elapsed = started.elapsed();
    println!(
        "traffic: sent {packets} packets ({} KiB, {} hops, {}, epoch {epoch}) in {:.2} s; exits delivered {delivered} ({:.1} %) within {:.2} s: {:.0} packets/s end to end",
        client.geometry.packet_len() / 1024,
        client.geometry.hops(),
        client.geometry.scheme(),
        sent_in.as_secs_f64(),
        100.0 * delivered as f64 / packets.max(1) as f64,
        elapsed.as_secs_f64(),
        delivered as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}
