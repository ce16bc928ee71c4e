//! The pace of a replay (`ralph-loop replay --speed N`): the time between two recorded events,
//! divided by the speed, a long wait (a model call, a breaker's cooldown) shortened so that a
//! replay never stands still for long. Speed 0 plays as fast as the view can take it.
//! [`play`] prints a run's events at that pace.

use std::time::Duration;

use chrono::{DateTime, Utc};
use ralph_actors::events::event::Envelope;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::printers::Printer;

/// The longest wait between two events, before the speed divides it.
pub const LONGEST_GAP: Duration = Duration::from_secs(3);

/// The longest wait at any speed: a speed so slow that a gap would take longer (`?speed=1e-300`
/// asked of the dashboard) waits this.
pub const SLOWEST_GAP: Duration = Duration::from_secs(3600);

/// How long to wait before an event at `next` after one at `prev`, at `speed`.
pub fn gap(prev: Option<DateTime<Utc>>, next: Option<DateTime<Utc>>, speed: f64) -> Duration {
    let (Some(prev), Some(next)) = (prev, next) else {
        return Duration::ZERO;
    };
    if speed <= 0.0 || !speed.is_finite() {
        return Duration::ZERO;
    }
    let recorded = (next - prev).to_std().unwrap_or(Duration::ZERO);
    Duration::try_from_secs_f64(recorded.min(LONGEST_GAP).as_secs_f64() / speed)
        .unwrap_or(SLOWEST_GAP)
        .min(SLOWEST_GAP)
}

/// Prints `events` one after another at `speed`, holding while `pause` is `true`, until `stop`.
pub async fn play(
    events: &[Envelope],
    speed: f64,
    printer: &mut dyn Printer,
    mut pause: Option<watch::Receiver<bool>>,
    stop: CancellationToken,
) {
    let mut before = None;
    for event in events {
        let wait = gap(before, Some(event.time), speed);
        before = Some(event.time);
        // Events of one instant (and all of them at speed 0) reach the view together.
        if !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => return,
            }
        }
        if let Some(pause) = pause.as_mut() {
            while *pause.borrow_and_update() {
                tokio::select! {
                    changed = pause.changed() => if changed.is_err() { break },
                    _ = stop.cancelled() => return,
                }
            }
        }
        // A closed stdout (`| head`) ends nothing.
        let _ = printer.print(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_divided_by_the_speed_and_long_ones_shortened() {
        let t = |ms: i64| Some(DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::milliseconds(ms));
        assert_eq!(gap(t(0), t(500), 1.0), Duration::from_millis(500));
        assert_eq!(gap(t(0), t(500), 2.0), Duration::from_millis(250));
        assert_eq!(gap(t(0), t(600_000), 1.0), LONGEST_GAP);
        assert_eq!(gap(t(0), t(600_000), 0.0), Duration::ZERO);
        assert_eq!(
            gap(t(500), t(0), 1.0),
            Duration::ZERO,
            "out of order: no wait"
        );
        assert_eq!(gap(None, t(0), 1.0), Duration::ZERO);
    }

    #[test]
    fn a_speed_too_slow_to_divide_by_waits_the_slowest_gap() {
        let t = |ms: i64| Some(DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::milliseconds(ms));
        assert_eq!(gap(t(0), t(500), 1e-300), SLOWEST_GAP);
        assert_eq!(gap(t(0), t(500), f64::MIN_POSITIVE), SLOWEST_GAP);
        assert_eq!(gap(t(0), t(500), 0.001), Duration::from_secs(500));
    }
}
