#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ralph_loop::fuzzing::spec_config(data));
