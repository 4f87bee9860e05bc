//! [`MixStream`]: a stream through the mixnet, a handle on the core's stream state.

use super::*;

/// A stream through the mixnet, from [`ClientHandle::open_stream`]. Dropping
/// it closes the stream (a reset if it was still open).
pub struct MixStream {
    pub(super) key: RequestId,
    pub(super) handle: ClientHandle,
    pub(super) notify: Arc<Notify>,
}

impl MixStream {
    /// Runs `f` on the core, then sends what became due and wakes streams.
    pub(super) fn flush<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let shared = &self.handle.shared;
        let (value, packets) = {
            let mut state = shared.lock();
            let value = f(&mut state);
            (value, Shared::streams_after(&mut state, Now::system()))
        };
        shared.send_streams(packets);
        value
    }

    /// The stream's state.
    pub fn status(&self) -> StreamStatus {
        let state = self.handle.shared.lock();
        state.core.stream_status(self.key).unwrap_or(StreamStatus {
            opened: false,
            readable: 0,
            eof: true,
            writable: 0,
            closed: true,
            reset: Some(ResetCode::General),
        })
    }

    /// Waits until the exit has connected, or tells why it has not (the
    /// reset code carries the SOCKS5 reply).
    pub async fn opened(&self) -> Result<(), ResetCode> {
        loop {
            let status = self.status();
            if let Some(code) = status.reset {
                return Err(code);
            }
            if status.opened {
                return Ok(());
            }
            self.changed().await;
        }
    }

    /// Waits for a change of state (bytes arrived or were acknowledged, the
    /// stream opened, finished or was reset). May return spuriously.
    pub async fn changed(&self) {
        let _ = tokio::time::timeout(MAX_TICK, self.notify.notified()).await;
    }

    /// Writes what fits; returns how many bytes were taken.
    pub fn write(&self, bytes: &[u8]) -> usize {
        let key = self.key;
        self.flush(|state| state.core.stream_write(key, bytes))
    }

    /// Reads up to `max` bytes received in order.
    pub fn read(&self, max: usize) -> Vec<u8> {
        let key = self.key;
        self.flush(|state| state.core.stream_read(key, max, Now::system()))
    }

    /// No more bytes will be written.
    pub fn finish(&self) {
        let key = self.key;
        self.flush(|state| state.core.stream_finish(key));
    }
}

impl Drop for MixStream {
    fn drop(&mut self) {
        let key = self.key;
        self.flush(|state| {
            state.stream_waiters.remove(&key);
            state.core.stream_close(key);
        });
    }
}
