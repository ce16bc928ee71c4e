//! A long recorded session for the views' tests and benchmark: the bundled example's recorded
//! session stretched to `n` iterations, its two iterations' events repeated and renumbered
//! between its start and its end, one event every 10 ms.

use chrono::{Duration, Utc};
use ralph_actors::events::event::{Envelope, Event};

const RECORDED: &str = include_str!("../../src/views/tui/testdata/median-js.events.jsonl");

pub fn long_session(n: u32) -> Vec<Envelope> {
    let events: Vec<Envelope> = RECORDED
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let start = events
        .iter()
        .position(|e| matches!(e.event, Event::IterationStarted { .. }))
        .unwrap();
    let end = events.len() - 1;
    let mut out: Vec<Envelope> = events[..start].to_vec();
    for i in 0..n {
        for e in &events[start..end] {
            let mut json = serde_json::to_value(&e.event).unwrap();
            if let Some(it) = json.get_mut("iteration") {
                let was = it.as_u64().unwrap();
                *it = serde_json::json!(u64::from(i) * 2 + was);
            }
            if let Some(max) = json.get_mut("max_iterations") {
                *max = serde_json::json!(n * 2);
            }
            let mut e = e.clone();
            e.event = serde_json::from_value(json).unwrap();
            out.push(e);
        }
    }
    out.push(events[end].clone());
    let t0 = Utc::now() - Duration::hours(1);
    for (i, e) in out.iter_mut().enumerate() {
        e.seq = i as u64 + 1;
        e.time = t0 + Duration::milliseconds(10 * i as i64);
    }
    out
}
