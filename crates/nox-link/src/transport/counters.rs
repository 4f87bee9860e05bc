//! Plain atomic counters, read by the node's metrics exporter.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// Link counters. Shared (`Arc`) between a [`super::Listener`] and
        /// [`super::OutboundLinks`] or kept apart; all are monotonic.
        #[derive(Debug, Default)]
        pub struct LinkCounters {
            $( $(#[$doc])* pub $name: AtomicU64, )*
        }

        /// A point-in-time copy of [`LinkCounters`].
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct CounterSnapshot {
            $( $(#[$doc])* pub $name: u64, )*
        }

        impl LinkCounters {
            /// Reads every counter (each atomically; not one consistent cut).
            pub fn snapshot(&self) -> CounterSnapshot {
                CounterSnapshot { $( $name: self.$name.load(Ordering::Relaxed), )* }
            }
        }

        impl CounterSnapshot {
            /// `(name, value)` pairs in declaration order, for exporters.
            pub fn pairs(&self) -> Vec<(&'static str, u64)> {
                vec![ $( (stringify!($name), self.$name), )* ]
            }
        }
    };
}

counters! {
    /// Handshakes completed (either side).
    handshakes_ok,
    /// Connections the listener's gate refused: on accept (address banned or
    /// over its connection limits), before any handshake work, or after the
    /// handshake (a client on an address the gate could only judge then).
    rejected_by_gate,
    /// Handshakes that failed: bad preamble, wrong geometry, failed
    /// authentication, connection closed or timed out mid-handshake.
    handshakes_failed,
    /// Of `handshakes_failed`: those that hit the handshake timeout.
    handshake_timeouts,
    /// Nodes that authenticated with a static key not in the allowed set.
    rejected_unauthenticated,
    /// Connections refused because the listener was at its connection limit.
    rejected_connection_limit,
    /// TCP connects that failed or timed out (dialer).
    connect_failures,
    /// Packets received and handed to the inbound channel.
    frames_in,
    /// Packets written to a socket.
    frames_out,
    /// Packets dropped because the inbound channel was full.
    dropped_inbound_full,
    /// Packets dropped because a peer's send queue was full.
    dropped_outbound_full,
    /// Records that failed to authenticate (the link was closed).
    dropped_decrypt,
    /// Links that ended in the middle of a record (the partial record is dropped).
    dropped_truncated,
    /// Packets of the wrong length given to `send` (oversize or short).
    dropped_bad_length,
    /// Packets lost because their link failed while writing them.
    dropped_link_down,
    /// Links closed for any reason after a completed handshake.
    links_closed,
    /// Reconnect attempts after a link failed or could not be set up.
    reconnects,
    /// WebSocket connections upgraded (listener) or dialed (client): each then
    /// runs the link handshake, counted as above.
    ws_connections,
    /// WebSocket connections whose HTTP upgrade failed or timed out (listener:
    /// an offence; dialer: counted here, not in `connect_failures`).
    ws_upgrade_failures,
    /// WebSocket links closed for a protocol violation after the upgrade: a
    /// text message, a malformed or unmasked frame, a message or frame over
    /// the limit, a continuation out of place (an offence).
    ws_protocol_errors,
    /// `wss://` connections whose TLS handshake failed or timed out (listener: an offence;
    /// dialer: counted here, not in `connect_failures`). A plain-HTTP client on a TLS port
    /// lands here.
    ws_tls_failures,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}
