//! Synthesis creates no `tracing` span, even under a subscriber that wants every span.
//!
//! arkworks' gadgets are `#[tracing::instrument]`ed with their variables as fields, and a
//! variable's `Debug` prints its whole constraint system: under a node's INFO subscriber an
//! insertion proof took minutes of CPU (each gadget call formatted the system built so far).
//! `nox_zk` synthesises with tracing off (`quiet`); without it this test counts thousands of spans.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Counts every span it is offered, at every level.
struct CountSpans(Arc<AtomicUsize>);

impl Subscriber for CountSpans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        Id::from_u64(n as u64)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn synthesis_creates_no_tracing_span_under_a_subscriber() {
    let spans = Arc::new(AtomicUsize::new(0));
    let dispatch = tracing::Dispatch::new(CountSpans(spans.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        // The subscriber does see spans made outside synthesis (the test is not vacuous).
        drop(tracing::info_span!("outside"));
        assert_eq!(spans.load(Ordering::Relaxed), 1);
        let (insert, _, _) = nox_zk::insert::constraint_count().expect("insertion circuit");
        let (transfer, _, _) = nox_zk::transfer::constraint_count().expect("transfer circuit");
        assert!(insert > 10_000 && transfer > 10_000);
    });
    assert_eq!(spans.load(Ordering::Relaxed), 1, "synthesis created tracing spans");
}
