//! The memory watchdog: the resident memory of a process group, summed over its members from
//! `/proc`, sampled while it runs, and the group killed when it passes a limit.
//!
//! A cgroup would be a hard limit, but ralph-loop cannot count on one: cgroup v1 hosts (and
//! hybrid ones whose memory controller is on v1) have no `memory.max`, and on cgroup v2 an
//! unprivileged user may only write below a subtree systemd delegated to it, which a shell
//! session usually lacks.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// How often the watchdog samples the group's memory. A process allocating fast can pass the
/// limit by what it allocates in one interval before it is killed (about 100 MB at 4 GB/s).
pub const MEMORY_SAMPLE_INTERVAL: Duration = Duration::from_millis(25);

pub(crate) const MIB: u64 = 1024 * 1024;

/// What one process-group scan of `/proc` found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GroupScan {
    /// Members that are neither zombies nor dead.
    pub live: usize,
    /// Resident memory summed over the live members.
    pub rss_bytes: u64,
}

/// Scans `/proc` for the members of process group `pgid`. `None` when `/proc` cannot be read.
pub(crate) fn scan_group(pgid: Pid) -> Option<GroupScan> {
    ProcReader::default().scan_all(pgid, None)
}

/// Reads `/proc` with buffers kept from one read to the next.
#[derive(Debug, Default)]
struct ProcReader {
    path: String,
    text: String,
}

impl ProcReader {
    /// `/proc/<pid>/<file>` as text; `None` when it cannot be read (the process has gone).
    fn read(&mut self, pid: impl std::fmt::Display, file: &str) -> Option<&str> {
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/{file}");
        self.text.clear();
        let mut f = std::fs::File::open(&self.path).ok()?;
        f.read_to_string(&mut self.text).ok()?;
        Some(&self.text)
    }

    /// A process's group, whether it is live (neither a zombie nor dead) and its resident bytes.
    fn stat(&mut self, pid: impl std::fmt::Display) -> Option<(i32, bool, u64)> {
        let (pgrp, state, pages) = parse_stat(self.read(pid, "stat")?)?;
        let live = state != "Z" && state != "X";
        Some((pgrp, live, pages.saturating_mul(page_size())))
    }

    /// Every process in `/proc`, one stat read each; the live members' pids go to `members`.
    fn scan_all(&mut self, pgid: Pid, mut members: Option<&mut Vec<i32>>) -> Option<GroupScan> {
        let dir = std::fs::read_dir("/proc").ok()?;
        let mut scan = GroupScan::default();
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            if let Some((pgrp, true, bytes)) = self.stat(pid) {
                if pgrp == pgid.as_raw() {
                    scan.live += 1;
                    scan.rss_bytes = scan.rss_bytes.saturating_add(bytes);
                    if let Some(members) = members.as_deref_mut() {
                        members.push(pid);
                    }
                }
            }
        }
        Some(scan)
    }

    /// The children a process's main thread started, from `/proc/<pid>/task/<pid>/children`.
    fn children(&mut self, pid: i32, into: &mut Vec<i32>) {
        if let Some(text) = self.read(format_args!("{pid}/task/{pid}"), "children") {
            into.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
}

/// How often (in samples) the watchdog reads all of `/proc` rather than only the group's tree.
/// The tree misses a process whose parent exited before it was seen (`(hog &)`) and children
/// started by threads other than the main one; a full scan finds them within this many samples.
const FULL_SCAN_EVERY: u32 = 20;

/// The watchdog's view of one process group.
///
/// A full scan of `/proc` costs one read per process on the machine (about 20 µs each on a
/// virtual machine, a few on bare metal), so between full scans only the known members and
/// their children are read: two reads per member.
#[derive(Debug)]
struct GroupSampler {
    pgid: Pid,
    reader: ProcReader,
    /// The live members found by the last sample.
    members: Vec<i32>,
    samples: u32,
}

impl GroupSampler {
    fn new(pgid: Pid) -> Self {
        Self {
            pgid,
            reader: ProcReader::default(),
            members: Vec::new(),
            samples: 0,
        }
    }

    /// The resident bytes of the group now; `None` when `/proc` cannot be read.
    fn sample(&mut self) -> Option<u64> {
        let full = self.samples.is_multiple_of(FULL_SCAN_EVERY) || !children_files();
        self.samples = self.samples.wrapping_add(1);
        let mut queue = std::mem::take(&mut self.members);
        if full {
            queue.clear();
            return self
                .reader
                .scan_all(self.pgid, Some(&mut self.members))
                .map(|scan| scan.rss_bytes);
        }
        // Breadth first from the known members: whoever is still in the group counts, and so
        // may the children it started since.
        let mut seen: std::collections::HashSet<i32> = queue.iter().copied().collect();
        let mut rss: u64 = 0;
        let mut children = Vec::new();
        let mut next = 0;
        while let Some(&pid) = queue.get(next) {
            next += 1;
            let Some((pgrp, true, bytes)) = self.reader.stat(pid) else {
                continue;
            };
            if pgrp != self.pgid.as_raw() {
                continue;
            }
            rss = rss.saturating_add(bytes);
            self.members.push(pid);
            children.clear();
            self.reader.children(pid, &mut children);
            for &child in &children {
                if seen.insert(child) {
                    queue.push(child);
                }
            }
        }
        Some(rss)
    }
}

/// Whether this kernel has `/proc/<pid>/task/<tid>/children` (`CONFIG_PROC_CHILDREN`); without
/// it every sample is a full scan.
fn children_files() -> bool {
    static KNOWN: OnceLock<bool> = OnceLock::new();
    *KNOWN.get_or_init(|| {
        let me = std::process::id();
        Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// The group, state and resident pages from a `/proc/<pid>/stat` line:
/// `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
/// cutime cstime priority nice threads itrealvalue starttime vsize rss ...`. `comm` may hold
/// spaces and parentheses, so fields are counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(i32, &str, u64)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    let rss = fields.nth(18)?.parse::<i64>().ok()?;
    Some((pgrp, state, u64::try_from(rss).unwrap_or(0)))
}

fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf only reads a system constant; it takes no pointers.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(size).ok().filter(|s| *s > 0).unwrap_or(4096)
    })
}

/// Bytes as whole MiB, rounded up so that any use shows as at least 1 and a use just over a
/// limit never prints as equal to it.
pub fn mib_ceil(bytes: u64) -> u64 {
    bytes.div_ceil(MIB)
}

/// Samples the group's resident memory every [`MEMORY_SAMPLE_INTERVAL`], keeping the most seen
/// in `peak`. When the sum passes `limit_mb`, kills the whole group at once (SIGKILL: a process
/// flooding memory gets no grace period in which to take more) and returns the bytes seen.
/// Never returns when `limit_mb` is `None`.
///
/// The first sample is one interval in: a command that ends sooner is never sampled, so a short
/// run costs nothing, and its `peak` stays `None`.
pub async fn watch_memory(pgid: Pid, limit_mb: Option<u64>, peak: &mut Option<u64>) -> u64 {
    let Some(limit_mb) = limit_mb else {
        return std::future::pending().await;
    };
    let limit = limit_mb.saturating_mul(MIB);
    let start = tokio::time::Instant::now() + MEMORY_SAMPLE_INTERVAL;
    let mut ticks = tokio::time::interval_at(start, MEMORY_SAMPLE_INTERVAL);
    // After a stall, sample once and go on; a burst of catch-up samples would tell nothing new.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sampler = GroupSampler::new(pgid);
    loop {
        ticks.tick().await;
        // Read inline rather than on a blocking thread: a sample reads a few small files, less
        // work than handing it to another thread would be.
        let Some(used) = sampler.sample() else {
            // No /proc (not Linux): nothing to measure, so no limit to enforce.
            return std::future::pending().await;
        };
        *peak = Some(peak.unwrap_or(0).max(used));
        if used > limit {
            let _ = killpg(pgid, Signal::SIGKILL);
            return used;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::os::unix::process::CommandExt;
    use std::time::Instant;

    use super::*;

    #[test]
    fn scan_finds_a_groups_live_members_and_their_memory() {
        let mut child = match std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
        {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
        // Between fork and exec the child has no resident pages of its own yet; on a loaded
        // machine that moment can be seen.
        let mut scan = scan_group(pgid).unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(2);
        while scan.rss_bytes == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            scan = scan_group(pgid).unwrap_or_default();
        }
        assert_eq!(scan.live, 1);
        assert!(scan.rss_bytes > 0 && scan.rss_bytes < 64 * MIB, "{scan:?}");
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(scan_group(pgid), Some(GroupScan::default()));
    }

    #[test]
    fn the_sampler_follows_new_children_and_finds_orphans_by_full_scans() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let go = dir.path().join("go");
        // A child of the shell and an orphan (its parent subshell exits at once), each holding
        // about 48 MiB, started only once `go` exists.
        let ready = dir.path().join("ready");
        // Each appends a byte to `ready` once its memory is in use.
        let one = format!(
            "python3 -c 'import time; b=bytearray(50*10**6); open(\"{}\", \"a\").write(\"x\"); \
             time.sleep(30)'",
            ready.display()
        );
        let script = format!(
            "while [ ! -e {go} ]; do sleep 0.01; done; {one} & ({one} &); sleep 30",
            go = go.display()
        );
        let mut child = match std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .process_group(0)
            .spawn()
        {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        let pgid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0));
        let mut sampler = GroupSampler::new(pgid);
        // Full scan: the shell (and perhaps one of its `sleep 0.01`).
        let before = sampler.sample().unwrap_or(0);
        assert!(
            sampler.members.contains(&pgid.as_raw()),
            "{:?}",
            sampler.members
        );
        if let Err(e) = std::fs::write(&go, "") {
            panic!("{e}");
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read(&ready).map_or(0, |r| r.len()) < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // From the tree: the shell's child (and the sleeps), not the orphan.
        let tree = sampler.sample().unwrap_or(0);
        // A full scan: both.
        let mut full = tree;
        while !sampler.samples.is_multiple_of(FULL_SCAN_EVERY) {
            full = sampler.sample().unwrap_or(0);
        }
        full = full.max(sampler.sample().unwrap_or(0));
        let _ = killpg(pgid, Signal::SIGKILL);
        let _ = child.wait();
        assert!(
            (before + 40 * MIB..before + 80 * MIB).contains(&tree),
            "tree {} MiB, shell alone {} MiB",
            tree / MIB,
            before / MIB
        );
        assert!(
            full >= tree + 40 * MIB,
            "full {} MiB, tree {} MiB",
            full / MIB,
            tree / MIB
        );
    }

    #[test]
    fn stat_lines_are_read_after_the_last_parenthesis() {
        let line = "4242 (we (ird) name) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    123 10000000 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0";
        assert_eq!(parse_stat(line), Some((4240, "S", 2560)));
        assert_eq!(parse_stat("garbage"), None);
    }
}
