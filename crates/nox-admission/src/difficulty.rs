//! Proof-of-work difficulty that follows the arrival rate (benchmark report, "adaptive
//! difficulty design"): 12 bits at normal load, 16 above 2× the expected rate, 20 above 5×,
//! 24 above 10×; raised at once, lowered one step at a time with hysteresis.

use std::time::{Duration, Instant};

/// One escalation step: above `rate_multiple × expected_rate`, require `difficulty` bits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DifficultyStep {
    /// Multiple of the expected arrival rate that triggers the step (strictly exceeded).
    pub rate_multiple: f64,
    /// Leading zero bits required at this step.
    pub difficulty: u8,
}

/// Configuration of [`AdaptiveDifficulty`].
#[derive(Debug, Clone, PartialEq)]
pub struct DifficultyConfig {
    /// Packets per second the node expects at normal load.
    pub expected_rate_pps: f64,
    /// Difficulty at normal load.
    pub base_difficulty: u8,
    /// Escalation steps, ascending in both multiple and difficulty.
    pub steps: Vec<DifficultyStep>,
    /// Floor applied to every level.
    pub min_difficulty: u8,
    /// Ceiling applied to every level.
    pub max_difficulty: u8,
    /// Width of one counting bucket of the sliding windows.
    pub bucket_width: Duration,
    /// Window whose rate triggers a raise (short: react within seconds).
    pub raise_window: Duration,
    /// Window whose rate must have fallen before lowering (long: no flapping).
    pub lower_window: Duration,
    /// Hysteresis: to step down from a step triggered at `M×`, the long-window rate must be at
    /// most `lower_fraction · M × expected`.
    pub lower_fraction: f64,
    /// Minimum time at a level before it may be lowered.
    pub hold_before_lowering: Duration,
    /// After a raise, packets meeting the previous difficulty are still accepted this long, so
    /// packets already in flight when the difficulty rose are not lost.
    pub grace_after_raise: Duration,
}

impl DifficultyConfig {
    /// The report's schedule (12 → 16 at 2×, 20 at 5×, 24 at 10×) for `expected_rate_pps`,
    /// with 1 s buckets, a 2 s raise window, a 30 s lower window, lowering below half the
    /// trigger rate after 30 s at a level, and a 2 s grace after a raise.
    pub fn report_schedule(expected_rate_pps: f64) -> Self {
        let step = |rate_multiple, difficulty| DifficultyStep { rate_multiple, difficulty };
        Self {
            expected_rate_pps,
            base_difficulty: 12,
            steps: vec![step(2.0, 16), step(5.0, 20), step(10.0, 24)],
            min_difficulty: 0,
            max_difficulty: 32,
            bucket_width: Duration::from_secs(1),
            raise_window: Duration::from_secs(2),
            lower_window: Duration::from_secs(30),
            lower_fraction: 0.5,
            hold_before_lowering: Duration::from_secs(30),
            grace_after_raise: Duration::from_secs(2),
        }
    }

    fn validate(&self) -> Result<(), DifficultyConfigError> {
        if !(self.expected_rate_pps.is_finite() && self.expected_rate_pps > 0.0) {
            return Err(DifficultyConfigError::ExpectedRate);
        }
        let ascending = self
            .steps
            .windows(2)
            .all(|pair| pair[0].rate_multiple < pair[1].rate_multiple && pair[0].difficulty <= pair[1].difficulty);
        let finite = self.steps.iter().all(|s| s.rate_multiple.is_finite() && s.rate_multiple > 0.0);
        if !ascending || !finite {
            return Err(DifficultyConfigError::Steps);
        }
        if self.min_difficulty > self.max_difficulty {
            return Err(DifficultyConfigError::Bounds);
        }
        if self.bucket_width.is_zero() || self.raise_window < self.bucket_width || self.lower_window < self.bucket_width
        {
            return Err(DifficultyConfigError::Windows);
        }
        if !(self.lower_fraction > 0.0 && self.lower_fraction <= 1.0) {
            return Err(DifficultyConfigError::LowerFraction);
        }
        Ok(())
    }
}

/// An unusable [`DifficultyConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DifficultyConfigError {
    /// The expected rate must be finite and positive.
    #[error("expected rate must be finite and positive")]
    ExpectedRate,
    /// Steps must be ascending in multiple and non-decreasing in difficulty.
    #[error("difficulty steps must ascend")]
    Steps,
    /// `min_difficulty` exceeds `max_difficulty`.
    #[error("min difficulty exceeds max difficulty")]
    Bounds,
    /// Bucket width must be positive and no wider than either window.
    #[error("bucket width must be positive and no wider than the windows")]
    Windows,
    /// `lower_fraction` must be in (0, 1].
    #[error("lower fraction must be in (0, 1]")]
    LowerFraction,
}

/// What [`AdaptiveDifficulty::update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DifficultyChange {
    /// No change; the current difficulty.
    Unchanged(u8),
    /// Raised (possibly several steps at once).
    Raised {
        /// Before.
        from: u8,
        /// After.
        to: u8,
    },
    /// Lowered by one step.
    Lowered {
        /// Before.
        from: u8,
        /// After.
        to: u8,
    },
}

/// Load-adaptive PoW difficulty: a pure function of the arrival counts fed in and the
/// instants they are fed at.
#[derive(Debug, Clone)]
pub struct AdaptiveDifficulty {
    config: DifficultyConfig,
    origin: Instant,
    /// Ring of per-bucket arrival counts; `buckets[i % len]` holds absolute bucket `i`.
    buckets: Vec<u64>,
    current_bucket: u64,
    level: usize,
    level_since: Instant,
    previous_difficulty: u8,
    raised_at: Option<Instant>,
}

impl AdaptiveDifficulty {
    /// Starts at the base level at `now`.
    pub fn new(config: DifficultyConfig, now: Instant) -> Result<Self, DifficultyConfigError> {
        config.validate()?;
        let widest = config.raise_window.max(config.lower_window);
        let len = widest.as_nanos().div_ceil(config.bucket_width.as_nanos()).max(1);
        let len = usize::try_from(len).map_err(|_| DifficultyConfigError::Windows)?;
        if len > 100_000 {
            return Err(DifficultyConfigError::Windows);
        }
        let mut difficulty = Self {
            config,
            origin: now,
            buckets: vec![0; len],
            current_bucket: 0,
            level: 0,
            level_since: now,
            previous_difficulty: 0,
            raised_at: None,
        };
        difficulty.previous_difficulty = difficulty.current();
        Ok(difficulty)
    }

    fn bucket_index(&self, now: Instant) -> u64 {
        let elapsed = now.saturating_duration_since(self.origin).as_nanos();
        (elapsed / self.config.bucket_width.as_nanos()) as u64
    }

    /// Moves the ring forward to `now`, zeroing skipped buckets. Time never moves backwards:
    /// an earlier `now` counts into the current bucket.
    fn advance(&mut self, now: Instant) {
        let target = self.bucket_index(now);
        if target <= self.current_bucket {
            return;
        }
        let len = self.buckets.len() as u64;
        let skipped = (target - self.current_bucket).min(len);
        for offset in 1..=skipped {
            let index = ((target - skipped + offset) % len) as usize;
            self.buckets[index] = 0;
        }
        self.current_bucket = target;
    }

    /// Counts `count` arrivals at `now`.
    pub fn record_arrivals(&mut self, now: Instant, count: u64) {
        self.advance(now);
        let len = self.buckets.len() as u64;
        let slot = &mut self.buckets[(self.current_bucket % len) as usize];
        *slot = slot.saturating_add(count);
    }

    /// Arrivals per second over the last `window` (rounded up to whole buckets, at most the
    /// ring), over the time actually covered (never less than one bucket width).
    pub fn arrival_rate(&mut self, now: Instant, window: Duration) -> f64 {
        self.advance(now);
        let len = self.buckets.len() as u64;
        let width = self.config.bucket_width;
        let wanted = window.as_nanos().div_ceil(width.as_nanos()).clamp(1, u128::from(len)) as u64;
        let buckets = wanted.min(self.current_bucket + 1);
        let total: u64 = (0..buckets)
            .map(|back| self.buckets[((self.current_bucket - back) % len) as usize])
            .fold(0u64, u64::saturating_add);
        let elapsed = now.saturating_duration_since(self.origin);
        let into_current = Duration::from_nanos((elapsed.as_nanos() % width.as_nanos()) as u64);
        let covered = width.saturating_mul((buckets - 1) as u32).saturating_add(into_current);
        total as f64 / covered.min(elapsed).max(width).as_secs_f64()
    }

    fn difficulty_of(&self, level: usize) -> u8 {
        let raw = match level.checked_sub(1).and_then(|index| self.config.steps.get(index)) {
            Some(step) => step.difficulty,
            None => self.config.base_difficulty,
        };
        raw.clamp(self.config.min_difficulty, self.config.max_difficulty)
    }

    /// The difficulty new packets must meet.
    pub fn current(&self) -> u8 {
        self.difficulty_of(self.level)
    }

    /// The lowest difficulty accepted at `now`: the previous difficulty during the grace
    /// period right after a raise, the current one otherwise.
    pub fn minimum_accepted(&self, now: Instant) -> u8 {
        match self.raised_at {
            Some(raised) if now.saturating_duration_since(raised) < self.config.grace_after_raise => {
                self.previous_difficulty.min(self.current())
            }
            _ => self.current(),
        }
    }

    /// Re-evaluates the level at `now`: raise at once to the highest step whose trigger the
    /// short-window rate exceeds; otherwise, after `hold_before_lowering` at this level, lower
    /// one step if the long-window rate is at most `lower_fraction` of this step's trigger.
    pub fn update(&mut self, now: Instant) -> DifficultyChange {
        let before = self.current();
        let expected = self.config.expected_rate_pps;
        let short_rate = self.arrival_rate(now, self.config.raise_window);
        let target = self.config.steps.iter().take_while(|step| short_rate > step.rate_multiple * expected).count();
        if target > self.level {
            self.level = target;
            self.level_since = now;
            self.previous_difficulty = before;
            self.raised_at = Some(now);
            let after = self.current();
            return if after == before {
                DifficultyChange::Unchanged(after)
            } else {
                DifficultyChange::Raised { from: before, to: after }
            };
        }
        let held = now.saturating_duration_since(self.level_since) >= self.config.hold_before_lowering;
        if self.level > 0 && held {
            let long_rate = self.arrival_rate(now, self.config.lower_window);
            let trigger = self.config.steps.get(self.level - 1).map_or(0.0, |step| step.rate_multiple * expected);
            if long_rate <= trigger * self.config.lower_fraction {
                self.level -= 1;
                self.level_since = now;
                let after = self.current();
                return if after == before {
                    DifficultyChange::Unchanged(after)
                } else {
                    DifficultyChange::Lowered { from: before, to: after }
                };
            }
        }
        DifficultyChange::Unchanged(before)
    }

    /// The configuration in force.
    pub fn config(&self) -> &DifficultyConfig {
        &self.config
    }
}
