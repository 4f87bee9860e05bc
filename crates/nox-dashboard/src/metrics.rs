//! The Prometheus text exposition format (version 0.0.4), as `nox dashboard` reads a node's
//! `GET /metrics`: a bounded parser into samples, and the node's aggregate view taken from them.
//!
//! Pure (no I/O, no clock): it only sees the bytes a scrape returned. It depends on `std` and
//! `thiserror` alone, so the fuzz target `fuzz/fuzz_targets/dashboard_metrics.rs` includes this
//! file as a module without building the whole `nox-dashboard` crate. No Rust crate for *parsing* the text
//! format is both kept up and small (the `prometheus` crate only writes it; `prometheus-parse`
//! has had no release since 2023), and the subset a NOX node writes is small: `# HELP` / `# TYPE`
//! comments and `name{label="value",...} value` samples.

use std::collections::BTreeMap;

/// Bounds on what one scrape may hold: a node writes ~200 samples; anything far beyond is
/// refused rather than stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Samples per scrape.
    pub max_samples: usize,
    /// Labels per sample.
    pub max_labels: usize,
    /// Bytes of one line.
    pub max_line: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_samples: 4096, max_labels: 8, max_line: 1024 }
    }
}

/// Why a scrape's text was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// More samples than [`Limits::max_samples`].
    #[error("more than {0} samples")]
    TooManySamples(usize),
    /// A line longer than [`Limits::max_line`].
    #[error("line {0}: longer than the limit")]
    LineTooLong(usize),
    /// A sample with more labels than [`Limits::max_labels`].
    #[error("line {0}: too many labels")]
    TooManyLabels(usize),
    /// A metric name that is not `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    #[error("line {0}: bad metric name")]
    BadName(usize),
    /// A label set that does not parse (`{name="value",...}`).
    #[error("line {0}: bad label set")]
    BadLabels(usize),
    /// A sample value that is not a number.
    #[error("line {0}: bad value")]
    BadValue(usize),
}

/// One sample: a metric name, its labels (in the order written) and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The metric name.
    pub name: String,
    /// `(label, value)` pairs, unescaped.
    pub labels: Vec<(String, String)>,
    /// The value (`NaN`, `+Inf` and `-Inf` included).
    pub value: f64,
}

impl Sample {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Parses the text format. Comments and blank lines are skipped; an optional timestamp after
/// the value is accepted and ignored.
pub fn parse(text: &str, limits: Limits) -> Result<Vec<Sample>, ParseError> {
    let mut samples = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        if raw.len() > limits.max_line {
            return Err(ParseError::LineTooLong(number));
        }
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if samples.len() == limits.max_samples {
            return Err(ParseError::TooManySamples(limits.max_samples));
        }
        samples.push(parse_line(line, number, limits)?);
    }
    Ok(samples)
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

fn parse_line(line: &str, number: usize, limits: Limits) -> Result<Sample, ParseError> {
    let name_end = line.find(|c: char| !is_name_char(c)).unwrap_or(line.len());
    let name = &line[..name_end];
    if !name.starts_with(is_name_start) {
        return Err(ParseError::BadName(number));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, remaining) = parse_labels(after, number, limits)?;
        labels = parsed;
        rest = remaining;
    }
    if !rest.starts_with([' ', '\t']) {
        return Err(ParseError::BadValue(number));
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or(ParseError::BadValue(number))?;
    let value = parse_value(value).ok_or(ParseError::BadValue(number))?;
    // An optional timestamp (integer milliseconds), then nothing.
    if let Some(timestamp) = fields.next()
        && timestamp.parse::<i64>().is_err()
    {
        return Err(ParseError::BadValue(number));
    }
    if fields.next().is_some() {
        return Err(ParseError::BadValue(number));
    }
    Ok(Sample { name: name.to_owned(), labels, value })
}

/// A sample's labels, `(name, value)` in the order written.
type Labels = Vec<(String, String)>;

/// Parses `name="value",...}` (after the opening brace); returns the labels and what follows
/// the closing brace.
fn parse_labels(mut rest: &str, number: usize, limits: Limits) -> Result<(Labels, &str), ParseError> {
    let bad = ParseError::BadLabels(number);
    let mut labels = Vec::new();
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        if labels.len() == limits.max_labels {
            return Err(ParseError::TooManyLabels(number));
        }
        let key_end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        let key = &rest[..key_end];
        if !key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return Err(bad);
        }
        rest = rest[key_end..].trim_start().strip_prefix('=').ok_or(bad.clone())?.trim_start();
        rest = rest.strip_prefix('"').ok_or(bad.clone())?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err(bad),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    _ => return Err(bad),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((key.to_owned(), value));
        rest = rest[close + 1..].trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        } else if !rest.starts_with('}') {
            return Err(bad);
        }
    }
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        // Rust's float parser also takes "inf", "infinity" and "nan" in any case: the format
        // spells them only as above.
        _ if text.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) => {
            text.parse().ok()
        }
        _ => None,
    }
}

/// A histogram: upper bounds in seconds (ascending, `+Inf` last) and the count in each bucket
/// (not cumulative).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Upper bound of each bucket, seconds; the last is `None` (+Inf).
    pub le_seconds: Vec<Option<f64>>,
    /// Observations in each bucket.
    pub counts: Vec<u64>,
    /// All observations.
    pub count: u64,
    /// Sum of the observations, seconds.
    pub sum_seconds: f64,
}

impl Histogram {
    /// Adds `other` bucket by bucket (same bounds); a histogram of other bounds is skipped and
    /// `false` returned.
    pub fn add(&mut self, other: &Histogram) -> bool {
        if self.le_seconds.is_empty() {
            *self = other.clone();
            return true;
        }
        if self.le_seconds != other.le_seconds {
            return false;
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine = mine.saturating_add(*theirs);
        }
        self.count = self.count.saturating_add(other.count);
        self.sum_seconds += other.sum_seconds;
        true
    }

    /// Bucket counts since `earlier` (a previous scrape of the same node); `None` if the bounds
    /// differ or a counter went back (the node restarted).
    pub fn since(&self, earlier: &Histogram) -> Option<Histogram> {
        if earlier.le_seconds.is_empty() {
            return Some(self.clone());
        }
        if earlier.le_seconds != self.le_seconds || earlier.count > self.count {
            return None;
        }
        let counts =
            self.counts.iter().zip(&earlier.counts).map(|(now, then)| now.checked_sub(*then)).collect::<Option<_>>()?;
        Some(Histogram {
            le_seconds: self.le_seconds.clone(),
            counts,
            count: self.count - earlier.count,
            sum_seconds: (self.sum_seconds - earlier.sum_seconds).max(0.0),
        })
    }
}

/// What the dashboard takes from one node's scrape: aggregate counters and gauges only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeReading {
    /// Frames handed to ingest (`nox_packets_received_total`).
    pub received: u64,
    /// Packets processed by a worker.
    pub processed: u64,
    /// Packets sent on to the next hop.
    pub forwarded: u64,
    /// Exit payloads delivered.
    pub delivered: u64,
    /// SURB replies handed to clients.
    pub replies: u64,
    /// Drops by reason (`nox_packets_dropped_total{reason=...}`).
    pub drops: BTreeMap<String, u64>,
    /// Proof-of-work difficulty required at ingest, bits.
    pub pow_difficulty: u64,
    /// The node's current key epoch.
    pub epoch: u64,
    /// Packets held by the mixer.
    pub mixer_held: u64,
    /// Packets waiting for a worker.
    pub worker_queue: u64,
    /// Loop cover packets sent, returned, lost.
    pub loops: [u64; 3],
    /// 1 if the replay journal failed (the node emits nothing).
    pub journal_failed: bool,
    /// Mixing delay histogram (`nox_mixing_delay_seconds`), if the node exports one.
    pub delay: Option<Histogram>,
    /// Registry block and active registered nodes, when the node's membership is on-chain.
    pub chain: Option<(u64, u64)>,
}

/// Why samples do not make a node's reading.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadingError {
    /// The text does not parse.
    #[error("malformed metrics: {0}")]
    Parse(#[from] ParseError),
    /// A sample the node always writes is absent: not a NOX node's metrics.
    #[error("not a NOX node's metrics: no {0}")]
    Missing(&'static str),
    /// A counter or gauge is negative, fractional where a count is expected, or not finite.
    #[error("metric {0} is not a count")]
    NotACount(String),
    /// The mixing delay histogram is inconsistent (bounds not ascending, counts not cumulative).
    #[error("mixing delay histogram is inconsistent")]
    BadHistogram,
}

fn count(sample: &Sample) -> Result<u64, ReadingError> {
    let value = sample.value;
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < 2f64.powi(63) {
        Ok(value as u64)
    } else {
        Err(ReadingError::NotACount(sample.name.clone()))
    }
}

impl NodeReading {
    /// Parses a node's `/metrics` body into its reading.
    pub fn from_text(text: &str, limits: Limits) -> Result<Self, ReadingError> {
        Self::from_samples(&parse(text, limits)?)
    }

    /// Takes the reading from parsed samples.
    pub fn from_samples(samples: &[Sample]) -> Result<Self, ReadingError> {
        let find = |name: &str| samples.iter().find(|s| s.name == name && s.labels.is_empty());
        let required = |name: &'static str| -> Result<u64, ReadingError> {
            find(name).ok_or(ReadingError::Missing(name)).and_then(count)
        };
        let optional = |name: &str| -> Result<u64, ReadingError> { find(name).map_or(Ok(0), count) };
        let mut drops = BTreeMap::new();
        for sample in samples.iter().filter(|s| s.name == "nox_packets_dropped_total") {
            if let Some(reason) = sample.label("reason") {
                let entry = drops.entry(reason.to_owned()).or_insert(0u64);
                *entry = entry.saturating_add(count(sample)?);
            }
        }
        let chain = match (find("nox_chain_block"), find("nox_chain_registered_nodes")) {
            (Some(block), Some(registered)) => Some((count(block)?, count(registered)?)),
            _ => None,
        };
        Ok(NodeReading {
            received: required("nox_packets_received_total")?,
            processed: required("nox_packets_processed_total")?,
            forwarded: required("nox_packets_forwarded_total")?,
            delivered: required("nox_packets_delivered_total")?,
            replies: optional("nox_replies_delivered_total")?,
            drops,
            pow_difficulty: optional("nox_pow_difficulty_bits")?,
            epoch: required("nox_key_epoch")?,
            mixer_held: optional("nox_mixer_held_packets")?,
            worker_queue: optional("nox_worker_queue_depth")?,
            loops: [
                optional("nox_cover_loops_sent_total")?,
                optional("nox_cover_loops_returned_total")?,
                optional("nox_cover_loops_lost_total")?,
            ],
            journal_failed: optional("nox_replay_journal_failed")? != 0,
            delay: histogram(samples, "nox_mixing_delay_seconds")?,
            chain,
        })
    }
}

/// Reads histogram `name` (`_bucket{le=...}`, `_sum`, `_count`) into per-bucket counts.
fn histogram(samples: &[Sample], name: &str) -> Result<Option<Histogram>, ReadingError> {
    let bucket_name = format!("{name}_bucket");
    let mut buckets = Vec::new();
    for sample in samples.iter().filter(|s| s.name == bucket_name) {
        let le = sample.label("le").ok_or(ReadingError::BadHistogram)?;
        let bound = parse_value(le).filter(|b| !b.is_nan()).ok_or(ReadingError::BadHistogram)?;
        buckets.push((bound, count(sample)?));
    }
    if buckets.is_empty() {
        return Ok(None);
    }
    let ascending = buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1);
    let Some(&(last_bound, total)) = buckets.last() else { return Ok(None) };
    if !ascending || last_bound != f64::INFINITY {
        return Err(ReadingError::BadHistogram);
    }
    let find = |suffix: &str| samples.iter().find(|s| s.name == format!("{name}{suffix}") && s.labels.is_empty());
    let count_total = find("_count").map_or(Ok(total), count)?;
    if count_total != total {
        return Err(ReadingError::BadHistogram);
    }
    let sum_seconds = find("_sum").map_or(0.0, |s| s.value);
    if !sum_seconds.is_finite() || sum_seconds < 0.0 {
        return Err(ReadingError::BadHistogram);
    }
    let mut previous = 0;
    let mut counts = Vec::with_capacity(buckets.len());
    let mut le_seconds = Vec::with_capacity(buckets.len());
    for (bound, cumulative) in buckets {
        counts.push(cumulative - previous);
        previous = cumulative;
        le_seconds.push(bound.is_finite().then_some(bound));
    }
    Ok(Some(Histogram { le_seconds, counts, count: total, sum_seconds }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "# HELP nox_packets_received_total Frames handed to ingest.\n\
        # TYPE nox_packets_received_total counter\n\
        nox_packets_received_total 120\n\
        nox_packets_processed_total 110\n\
        nox_packets_forwarded_total 100\n\
        nox_packets_delivered_total 0\n\
        nox_replies_delivered_total 3\n\
        nox_packets_dropped_total{reason=\"replay\"} 4\n\
        nox_packets_dropped_total{reason=\"mac_mismatch\"} 2\n\
        nox_packets_dropped_total{reason=\"wrong_layer\"} 0\n\
        nox_pow_difficulty_bits 12\n\
        nox_key_epoch 498795\n\
        nox_mixer_held_packets 5\n\
        nox_mixing_delay_seconds_bucket{le=\"0.001\"} 10\n\
        nox_mixing_delay_seconds_bucket{le=\"0.01\"} 90\n\
        nox_mixing_delay_seconds_bucket{le=\"+Inf\"} 100\n\
        nox_mixing_delay_seconds_sum 0.42\n\
        nox_mixing_delay_seconds_count 100\n\
        nox_chain_block 77\n\
        nox_chain_registered_nodes 3\n\
        nox_link_events_total{event=\"handshakes\"} 9\n";

    #[test]
    fn a_node_exposition_gives_its_reading() {
        let reading = NodeReading::from_text(NODE, Limits::default()).unwrap();
        assert_eq!((reading.received, reading.processed, reading.forwarded, reading.delivered), (120, 110, 100, 0));
        assert_eq!(reading.replies, 3);
        assert_eq!(reading.drops.get("replay"), Some(&4));
        assert_eq!(reading.drops.get("mac_mismatch"), Some(&2));
        assert_eq!(reading.drops.get("wrong_layer"), Some(&0));
        assert_eq!((reading.pow_difficulty, reading.epoch, reading.mixer_held), (12, 498_795, 5));
        assert_eq!(reading.chain, Some((77, 3)));
        let delay = reading.delay.unwrap();
        assert_eq!(delay.le_seconds, vec![Some(0.001), Some(0.01), None]);
        assert_eq!(delay.counts, vec![10, 80, 10], "cumulative buckets become per-bucket counts");
        assert_eq!((delay.count, delay.sum_seconds), (100, 0.42));
    }

    #[test]
    fn the_real_node_rendering_parses() {
        let metrics = nox_node::NodeMetrics::default();
        metrics.received.store(7, std::sync::atomic::Ordering::Relaxed);
        metrics.count_drop(nox_relay::DropReason::Replay);
        let reading = NodeReading::from_text(&metrics.render(), Limits::default()).unwrap();
        assert_eq!(reading.received, 7);
        assert_eq!(reading.drops.get("replay"), Some(&1));
        for reason in nox_relay::DropReason::ALL {
            assert!(reading.drops.contains_key(reason.label()), "{}", reason.label());
        }
    }

    #[test]
    fn labels_unescape_and_timestamps_are_ignored() {
        let samples = parse("m{a=\"x\\\"y\\\\z\\n\" , b=\"\"} 1.5e3 1700000000000\n", Limits::default()).unwrap();
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].label("a"), Some("x\"y\\z\n"));
        assert_eq!(samples[0].label("b"), Some(""));
        assert_eq!(samples[0].value, 1500.0);
        let special = parse("a +Inf\nb -Inf\nc NaN\nd{} 2\n", Limits::default()).unwrap();
        assert_eq!(special[0].value, f64::INFINITY);
        assert_eq!(special[1].value, f64::NEG_INFINITY);
        assert!(special[2].value.is_nan());
        assert!(special[3].labels.is_empty());
    }

    #[test]
    fn malformed_lines_are_refused_with_their_line() {
        let limits = Limits::default();
        assert_eq!(parse("ok 1\n9bad 1\n", limits), Err(ParseError::BadName(2)));
        assert_eq!(parse("m{a=\"x} 1\n", limits), Err(ParseError::BadLabels(1)));
        assert_eq!(parse("m{a=x} 1\n", limits), Err(ParseError::BadLabels(1)));
        assert_eq!(parse("m{a=\"x\"b=\"y\"} 1\n", limits), Err(ParseError::BadLabels(1)));
        assert_eq!(parse("m{a=\"\\q\"} 1\n", limits), Err(ParseError::BadLabels(1)));
        assert_eq!(parse("m one\n", limits), Err(ParseError::BadValue(1)));
        assert_eq!(parse("m inf\n", limits), Err(ParseError::BadValue(1)));
        assert_eq!(parse("m\n", limits), Err(ParseError::BadValue(1)));
        assert_eq!(parse("m1\n", limits), Err(ParseError::BadValue(1)));
        assert_eq!(parse("m 1 2 3\n", limits), Err(ParseError::BadValue(1)));
        assert_eq!(parse("m 1 soon\n", limits), Err(ParseError::BadValue(1)));
        assert_eq!(parse("<html>\n", limits), Err(ParseError::BadName(1)));
    }

    #[test]
    fn limits_bound_what_is_kept() {
        let limits = Limits { max_samples: 2, max_labels: 1, max_line: 20 };
        assert_eq!(parse("a 1\nb 2\nc 3\n", limits), Err(ParseError::TooManySamples(2)));
        assert_eq!(parse("# a comment\n# another\na 1\nb 2\n", limits).map(|s| s.len()), Ok(2));
        assert_eq!(parse("m{a=\"1\",b=\"2\"} 1\n", limits), Err(ParseError::TooManyLabels(1)));
        assert_eq!(parse(&format!("m{{a=\"{}\"}} 1\n", "x".repeat(30)), limits), Err(ParseError::LineTooLong(1)));
    }

    #[test]
    fn a_reading_needs_a_nox_node_and_counts() {
        let limits = Limits::default();
        assert_eq!(NodeReading::from_text("up 1\n", limits), Err(ReadingError::Missing("nox_packets_received_total")));
        let negative = NODE.replace("nox_packets_forwarded_total 100", "nox_packets_forwarded_total -1");
        assert!(matches!(NodeReading::from_text(&negative, limits), Err(ReadingError::NotACount(_))));
        let fractional = NODE.replace("nox_key_epoch 498795", "nox_key_epoch 1.5");
        assert!(matches!(NodeReading::from_text(&fractional, limits), Err(ReadingError::NotACount(_))));
        let not_cumulative = NODE.replace("le=\"0.01\"} 90", "le=\"0.01\"} 5");
        assert_eq!(NodeReading::from_text(&not_cumulative, limits), Err(ReadingError::BadHistogram));
        let no_inf = NODE.replace("nox_mixing_delay_seconds_bucket{le=\"+Inf\"} 100\n", "");
        assert_eq!(NodeReading::from_text(&no_inf, limits), Err(ReadingError::BadHistogram));
        let wrong_count = NODE.replace("nox_mixing_delay_seconds_count 100", "nox_mixing_delay_seconds_count 99");
        assert_eq!(NodeReading::from_text(&wrong_count, limits), Err(ReadingError::BadHistogram));
        let without = NODE.replace("nox_chain_block 77\n", "");
        assert_eq!(NodeReading::from_text(&without, limits).unwrap().chain, None);
    }

    #[test]
    fn histograms_add_and_subtract() {
        let bounds = vec![Some(0.001), None];
        let earlier = Histogram { le_seconds: bounds.clone(), counts: vec![1, 2], count: 3, sum_seconds: 0.5 };
        let later = Histogram { le_seconds: bounds.clone(), counts: vec![4, 2], count: 6, sum_seconds: 0.75 };
        let delta = later.since(&earlier).unwrap();
        assert_eq!((delta.counts, delta.count, delta.sum_seconds), (vec![3, 0], 3, 0.25));
        assert_eq!(earlier.since(&later), None, "a counter that went back (restart) gives no delta");
        let mut total = Histogram::default();
        assert!(total.add(&earlier) && total.add(&later));
        assert_eq!((total.counts.clone(), total.count), (vec![5, 4], 9));
        let other = Histogram { le_seconds: vec![None], counts: vec![1], count: 1, sum_seconds: 0.0 };
        assert!(!total.add(&other), "other bounds are not mixed in");
    }
}
