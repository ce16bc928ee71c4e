//! Links ralph-loop's binaries as position-dependent executables on Linux.
//!
//! A position-independent executable of this size (a 189 MB `.text`, mostly LanceDB and
//! DataFusion) carries about 374,000 relative relocations. The dynamic loader applies every one
//! at start, writing into `.data.rel.ro` and so copying its pages: about 3.5 ms of each
//! `ralph-loop --version` (measured with `LD_DEBUG=statistics` and `perf`, docs/performance.md),
//! and those pages stay in memory for the whole run. Linked with `-no-pie`, the addresses are
//! fixed at link time and nothing is relocated. The price is that the executable's own image is
//! not placed at a random address (its libraries, stack, heap and mappings still are).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
