//! The shell's tasks around the core: packets in, stream packets out, the timer.

use super::*;

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn complete(state: &mut State, done: Completed) {
        if let Some(waiter) = state.waiters.remove(&done.id) {
            let _ = waiter.send(done.result);
        }
    }

    /// After the core changed: stream packets due now (cover off) to send,
    /// and the tasks of changed streams woken.
    pub(super) fn streams_after(state: &mut State, now: Now) -> Vec<Outgoing> {
        let packets = state.core.poll_streams(now);
        Self::notify_touched(state);
        packets
    }

    /// Wakes the tasks of streams whose state changed.
    pub(super) fn notify_touched(state: &mut State) {
        for key in state.core.take_touched_streams() {
            if let Some(notify) = state.stream_waiters.get(&key) {
                notify.notify_one();
            }
        }
    }

    /// Whether to drop a packet on purpose (`ClientConfig::inject_loss`).
    pub(super) fn inject_loss(&self) -> bool {
        let (rate, rng) = &self.loss;
        if *rate <= 0.0 {
            return false;
        }
        let draw = rng.lock().unwrap_or_else(|p| p.into_inner()).next_u64();
        ((draw >> 11) as f64 / (1u64 << 53) as f64) < *rate
    }

    /// Reports a packet handed to an entry link to the observer, if there is one.
    pub(super) fn sent(&self, entry: NodeId, kind: PacketKind) {
        if !self.observed.load(Ordering::Acquire) {
            return;
        }
        let sends = self.sends.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = sends.as_ref() {
            let unix_us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
            let _ = tx.send(SentPacket { unix_us, entry, kind });
        }
    }

    /// Hands stream packets to the stream sender (in order, never dropped for a full link).
    pub(super) fn send_streams(&self, packets: Vec<Outgoing>) {
        for out in packets {
            let _ = self.stream_out.send(out);
        }
    }

    pub(super) fn send_now(&self, out: Outgoing) {
        if self.inject_loss() {
            return;
        }
        match self.directory.link_key(&out.entry) {
            Some(key) => {
                let (entry, kind) = (out.entry, out.kind);
                match self.entries.send(&key, out.packet) {
                    Ok(()) => self.sent(entry, kind),
                    Err(e) => tracing::debug!("entry send failed: {e}"),
                }
            }
            None => tracing::warn!("entry node missing from the topology"),
        }
    }
}

pub(super) async fn inbound_task(
    shared: Arc<Shared>,
    mut inbound: mpsc::Receiver<Inbound>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let record = tokio::select! {
            r = inbound.recv() => match r { Some(r) => r, None => return },
            _ = stop.changed() => return,
        };
        let from = match record.from {
            PeerIdentity::Node(key) => shared.directory.node_id(&key),
            PeerIdentity::Client(..) => None,
        };
        let now = Now::system();
        {
            let mut state = shared.lock();
            if let Some(done) = state.core.on_downstream(from, &record.packet, now) {
                Shared::complete(&mut state, done);
            }
            // Wake the stream's task before building what is due (SURB
            // refills take milliseconds): it may answer its program first.
            Shared::notify_touched(&mut state);
        }
        let packets = Shared::streams_after(&mut shared.lock(), now);
        shared.send_streams(packets);
    }
}

/// Sends stream packets in order, waiting for room on the entry link.
pub(super) async fn stream_sender(
    shared: Arc<Shared>,
    mut packets: mpsc::UnboundedReceiver<Outgoing>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let out = tokio::select! {
            out = packets.recv() => match out { Some(out) => out, None => return },
            _ = stop.changed() => return,
        };
        if shared.inject_loss() {
            continue;
        }
        let Some(key) = shared.directory.link_key(&out.entry) else {
            tracing::warn!("entry node missing from the topology");
            continue;
        };
        let (entry, kind) = (out.entry, out.kind);
        match shared.entries.send_wait(&key, out.packet).await {
            Ok(()) => shared.sent(entry, kind),
            Err(e) => tracing::debug!("stream packet not sent: {e}"),
        }
    }
}

pub(super) async fn timer_task(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut current = shared.lock().core.gateway();
    let mut unreachable: Vec<NodeId> = Vec::new();
    loop {
        let now = Now::system();
        let (due, next, wanted) = {
            let mut state = shared.lock();
            let mut due = Vec::new();
            while let Some(out) = state.core.poll_transmit(now) {
                match out {
                    Ok(out) => due.push(out),
                    Err(e) => tracing::warn!("cover packet: {e}"),
                }
            }
            for done in state.core.poll_timeouts(now) {
                Shared::complete(&mut state, done);
            }
            shared.send_streams(Shared::streams_after(&mut state, now));
            let next = [state.core.next_transmit_at(), state.core.next_timeout()].into_iter().flatten().min();
            (due, next, state.core.reply_gateways())
        };
        // Loop health may have marked the gateway degraded: same mailbox, new
        // link; the old one stays open while replies are owed through it, and
        // a former gateway's link closes once they are over.
        let failed = shared.replies.sync(&wanted);
        if failed != unreachable {
            if !failed.is_empty() {
                tracing::warn!(count = failed.len(), "reply gateway missing from the topology");
            }
            unreachable = failed;
        }
        if let Some(&gateway) = wanted.first()
            && gateway != current
        {
            current = gateway;
            let kept = wanted.len().saturating_sub(1);
            tracing::info!(kept, "reply gateway changed; former gateways still owed replies kept");
        }
        for out in due {
            shared.send_now(out);
        }
        let wake = next.map_or(now.at + MAX_TICK, |at| at.min(now.at + MAX_TICK));
        tokio::select! {
            _ = tokio::time::sleep_until(wake.to_std(clock_origin()).map_or_else(far_future, Into::into)) => {}
            _ = stop.changed() => {
                shared.replies.close_all();
                return;
            }
        }
    }
}

/// A wake-up beyond what `std::time::Instant` holds: a day from now (the
/// timer task wakes every [`MAX_TICK`] anyway).
pub(super) fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86_400)
}
