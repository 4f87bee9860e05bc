//! Epoch rotation: every period and right after each epoch boundary, create, load and erase
//! epoch keys, publish them, open the new epochs' replay caches (from their journals) and
//! retire the old ones.

use std::sync::{Arc, RwLock, atomic::Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nox_keystore::EpochKeyStore;
use nox_relay::Relay;
use nox_replay::BloomParameters;
use nox_topology::EpochSchedule;
use rand_chacha::ChaCha20Rng;
use tokio::sync::watch;

use super::now_unix;
use crate::{NodeMetrics, Publisher, ReplayStore};

/// What the rotation task owns and shares.
pub(super) struct Rotation {
    pub(super) schedule: EpochSchedule,
    pub(super) store: EpochKeyStore,
    pub(super) rng: ChaCha20Rng,
    pub(super) publisher: Publisher,
    pub(super) relay: Arc<RwLock<Relay>>,
    pub(super) journal: Arc<ReplayStore>,
    pub(super) bloom: BloomParameters,
    pub(super) metrics: Arc<NodeMetrics>,
}

impl Rotation {
    /// Rotates until `shutdown` turns true (or a lock is poisoned).
    pub(super) async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let schedule = self.schedule;
        let period = (schedule.overlap() / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
        loop {
            // Every `period`, and right after each epoch boundary: the new epoch's key (created
            // and published an epoch ahead) must be open before clients switch to it, half an
            // overlap after the boundary — a periodic tick alone could open it up to a whole
            // period late.
            let pause = until_next_epoch(&schedule).map_or(period, |boundary| boundary.min(period));
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            if !self.step() {
                return;
            }
        }
    }

    /// One rotation; `false` if the relay's lock is poisoned.
    fn step(&mut self) -> bool {
        let now = now_unix();
        let Ok(rotation) = self.store.rotate(now, &mut self.rng) else { return true };
        self.publisher.offer(&self.store, now);
        let fresh: Vec<u32> = match self.relay.read() {
            Ok(relay) => self
                .store
                .loaded_epochs()
                .filter(|e| !relay.epochs().any(|have| have == *e) && !relay.is_refused(*e))
                .collect(),
            Err(_) => return false,
        };
        for epoch in fresh {
            let Some(secret) = self.store.secret(epoch) else { continue };
            // Disk work (read, sync) before taking the lock the workers need.
            let loaded = self.journal.load(epoch, self.bloom);
            let Ok(mut relay) = self.relay.write() else { return false };
            open_epoch(&mut relay, epoch, secret.clone(), loaded, &self.metrics);
        }
        if let (Some(oldest), Ok(mut relay)) = (self.store.loaded_epochs().min(), self.relay.write()) {
            relay.retire_before(oldest);
            self.metrics.replay_refused_epochs.store(relay.refused_epochs().count() as u64, Ordering::Relaxed);
        }
        for epoch in rotation.erased {
            if let Err(error) = self.journal.retire(epoch) {
                tracing::warn!(epoch, %error, "could not delete a retired epoch's replay files");
            }
        }
        self.metrics.epoch.store(u64::from(self.schedule.epoch_at(now)), Ordering::Relaxed);
        true
    }
}

/// Time until just after the next key-epoch boundary (50 ms past it, so `now_unix` is already in
/// the new epoch).
fn until_next_epoch(schedule: &nox_topology::EpochSchedule) -> Option<Duration> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
    let next = schedule.epoch_start(schedule.epoch_at(now.as_secs()).checked_add(1)?);
    Some(Duration::from_secs(next).checked_sub(now).unwrap_or_default() + Duration::from_millis(50))
}

/// Opens `epoch` with its loaded replay state, or — if the state is lost
/// (damaged journal, unreadable snapshot, I/O error) — refuses the epoch's
/// packets until it ends, logging why.
pub(super) fn open_epoch(
    relay: &mut Relay,
    epoch: u32,
    secret: nox_sphinx::SecretKey,
    loaded: Result<(nox_replay::ReplayCache, usize), crate::ReplayStateError>,
    metrics: &NodeMetrics,
) {
    match loaded {
        Ok((cache, recovered)) => {
            if recovered > 0 {
                tracing::info!(epoch, recovered, "replay cache restored from its journal");
            }
            relay.open_epoch_with(epoch, secret, cache);
        }
        Err(error) => {
            tracing::error!(
                epoch,
                %error,
                kind = error.kind(),
                "replay state of this key epoch is lost: its packets are refused until the epoch ends \
                 (nox_packets_dropped_total{{reason=\"replay_state_lost\"}})"
            );
            relay.refuse_epoch(epoch);
            metrics.replay_refused_epochs.store(relay.refused_epochs().count() as u64, Ordering::Relaxed);
        }
    }
}
