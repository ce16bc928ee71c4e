//! The pause between two steps, the same for every machine: while the live view holds `true`,
//! the loop waits, and says so on its events (`paused`, then `resumed`).

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::events::bus::EventBus;
use crate::events::event::Event;

/// A stop that ended a pause: the loop ends now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// Waits while `pause` holds `true` (iteration `iteration` is the one last begun). A cancelled
/// `stop` ends the wait and the loop (`Err`); a cancelled `go_on` (a stop asked for between
/// iterations) ends the wait and lets the loop go on to its end as it would. A view that went
/// away cannot resume the loop: it goes on.
pub async fn hold(
    pause: &mut watch::Receiver<bool>,
    events: &EventBus,
    iteration: u32,
    stop: &CancellationToken,
    go_on: &CancellationToken,
) -> Result<(), Stopped> {
    if !*pause.borrow_and_update() {
        return Ok(());
    }
    events.emit(Event::Paused { iteration });
    loop {
        tokio::select! {
            changed = pause.changed() => {
                if changed.is_err() || !*pause.borrow_and_update() {
                    break;
                }
            }
            _ = stop.cancelled() => return Err(Stopped),
            _ = go_on.cancelled() => break,
        }
    }
    events.emit(Event::Resumed { iteration });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_pause_waits_for_its_release_and_says_so() {
        let (tx, mut rx) = watch::channel(true);
        let events = EventBus::new("s");
        let mut seen = events.subscribe();
        let (stop, go_on) = (CancellationToken::new(), CancellationToken::new());
        let release = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            tx.send(false).expect("sent");
            tx
        });
        assert_eq!(hold(&mut rx, &events, 2, &stop, &go_on).await, Ok(()));
        let kinds: Vec<Event> = std::iter::from_fn(|| seen.try_recv())
            .map(|e| e.event.clone())
            .collect();
        assert_eq!(
            kinds,
            [
                Event::Paused { iteration: 2 },
                Event::Resumed { iteration: 2 }
            ]
        );
        let tx = release.await.expect("released");
        // Not paused: no wait, nothing said.
        assert_eq!(hold(&mut rx, &events, 3, &stop, &go_on).await, Ok(()));
        assert!(seen.try_recv().is_none());
        // Paused again, then stopped: the loop ends without a `resumed`.
        tx.send(true).expect("sent");
        stop.cancel();
        assert_eq!(hold(&mut rx, &events, 3, &stop, &go_on).await, Err(Stopped));
        let last: Vec<Event> = std::iter::from_fn(|| seen.try_recv())
            .map(|e| e.event.clone())
            .collect();
        assert_eq!(last, [Event::Paused { iteration: 3 }]);
    }
}
