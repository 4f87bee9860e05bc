//! Header inspection on arbitrary bytes: length/geometry checks, epoch,
//! replay tag and proof-of-work verification must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nox_sphinx::{Geometry, HeaderView, Surb};

fuzz_target!(|data: &[u8]| {
    for geometry in [Geometry::new(2048, 3).unwrap(), Geometry::new(2048, 5).unwrap()] {
        if let Ok(view) = HeaderView::parse(&geometry, data) {
            let _ = view.key_epoch();
            let tag = view.replay_tag();
            let _ = view.check_work(&tag, data.first().copied().unwrap_or(0) % 24);
        }
        let _ = Surb::from_bytes(&geometry, data);
    }
});
