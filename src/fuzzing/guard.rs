//! LocalGuard on everything sent to a model and everything that comes back: masking, sealing,
//! restoring, and unmasking a stream cut anywhere.

use std::sync::{Arc, OnceLock};

use ralph_guard::scan::Detector;
use ralph_guard::{Guard, GuardConfig, StreamUnmask};

use super::input::{pick, text};

/// Text on its way out and back: masked (and sealed), then the masked text restored whole and
/// streamed back in pieces (of a length the second byte picks); what comes back either way is
/// what went out.
pub fn local_guard(data: &[u8]) {
    let (choice, rest) = pick(data, 2);
    let (step, body) = pick(rest, 13);
    // The rules are compiled once; each input gets a guard of its own, knowing nothing yet.
    static DETECTOR: OnceLock<Arc<Detector>> = OnceLock::new();
    let detector = DETECTOR.get_or_init(|| match GuardConfig::all().detector() {
        Ok(detector) => Arc::new(detector),
        Err(e) => panic!("the bundled rules: {e}"),
    });
    let guard = Guard::sharing(detector.clone(), &GuardConfig::all());
    let input = text(body);
    let masked = guard.mask(&input, Some("fuzz.txt")).text;
    if choice == 1 {
        drop(guard.seal(&input));
        drop(guard.check(&masked));
        drop(guard.census(&input));
        return;
    }
    let restored = guard.restore(&masked);
    let mut stream = StreamUnmask::new();
    let mut streamed = String::new();
    let mut piece = String::new();
    for c in masked.chars() {
        piece.push(c);
        if piece.len() > step {
            streamed.push_str(&stream.push(&guard, &std::mem::take(&mut piece)));
        }
    }
    streamed.push_str(&stream.push(&guard, &piece));
    streamed.push_str(&stream.finish(&guard));
    assert_eq!(
        restored, input,
        "restoring what was masked gives the input back"
    );
    assert_eq!(
        streamed, restored,
        "a stream cut anywhere restores as the whole text does"
    );
}
