//! Every seed of the fuzz targets (`fuzz/seeds/`) and every input a fuzzer ever failed on
//! (`fuzz/regressions/`) run through their targets in `cargo test`: a crash found once stays
//! fixed.

use std::path::Path;

use super::TARGETS;

/// `fuzz/seeds/TARGET/NN-name` is a body whose first byte, the selector, is NN (as
/// `scripts/fuzz` seeds it); a name without NN is the input as it is. `fuzz/regressions/TARGET/`
/// holds whole inputs, as libFuzzer wrote them.
fn inputs(dir: &Path, with_selector: bool) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut inputs: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.expect("entry").path())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let body = std::fs::read(&path).expect("read");
            let selector = name
                .split_once('-')
                .and_then(|(n, _)| n.parse::<u8>().ok())
                .filter(|_| with_selector && name.as_bytes()[..2].iter().all(u8::is_ascii_digit));
            let input = match selector {
                Some(n) => [vec![n], body].concat(),
                None => body,
            };
            (name, input)
        })
        .collect();
    inputs.sort();
    inputs
}

#[test]
fn every_seed_and_every_crash_found_runs_clean_through_its_target() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut ran = 0;
    for target in TARGETS.iter() {
        let seeds = inputs(&fuzz.join("seeds").join(target.name), true);
        let crashes = inputs(&fuzz.join("regressions").join(target.name), false);
        for (name, input) in seeds.iter().chain(&crashes) {
            let outcome = std::panic::catch_unwind(|| (target.run)(input));
            assert!(outcome.is_ok(), "{} panicked on {name}", target.name);
            ran += 1;
        }
    }
    assert!(
        ran >= 50,
        "only {ran} inputs found under {}",
        fuzz.display()
    );
}
