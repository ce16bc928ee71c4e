//! A process's whole tree of descendants, read from `/proc`, across process groups and
//! sessions: what a coding agent leaves behind when its shell tool starts commands in a session
//! of their own (Claude Code does), which killing the agent's group cannot reach. Also the CPU
//! time the tree has used, by which a silent agent still at work is told from a stuck one.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    /// Neither a zombie nor dead.
    pub live: bool,
    /// User and system time, in clock ticks.
    pub cpu_ticks: u64,
}

/// Every process on the machine; `None` when `/proc` cannot be read.
pub fn table() -> Option<Vec<Proc>> {
    let mut procs = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(p) = parse(pid, &stat) {
            procs.push(p);
        }
    }
    Some(procs)
}

/// `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
/// stime cutime cstime ...`; `comm` may hold spaces and parentheses, so fields are counted from
/// the last `)`. Its CPU time includes its children's that it has waited for (`cutime`,
/// `cstime`): a process that runs many short commands (`git status`, `grep`) is at work,
/// though each command has gone before the next look.
fn parse(pid: i32, stat: &str) -> Option<Proc> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().take(15).collect();
    let state = *fields.first()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let ticks = |i: usize| -> Option<u64> { fields.get(i)?.parse().ok() };
    Some(Proc {
        pid,
        ppid,
        live: state != "Z" && state != "X",
        cpu_ticks: ticks(11)? + ticks(12)? + ticks(13)? + ticks(14)?,
    })
}

/// The descendants of `root` in `table` (not `root` itself), parents before their children.
pub fn descendants(root: i32, table: &[Proc]) -> Vec<Proc> {
    let mut out: Vec<Proc> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for p in table.iter().filter(|p| p.ppid == parent && p.pid != root) {
            if !out.iter().any(|o| o.pid == p.pid) {
                out.push(*p);
                frontier.push(p.pid);
            }
        }
    }
    out
}

/// What each live process of a tree has done so far: CPU time and bytes read or written
/// (files, pipes, sockets), by pid.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Activity {
    procs: Vec<Work>,
}

/// One process's share of an [`Activity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Work {
    pid: i32,
    cpu_ticks: u64,
    io_bytes: u64,
}

impl Activity {
    /// Whether anything was done between `before` and this: a process that was there before
    /// used CPU time or did I/O, or a new one started. Compared process by process, not as
    /// sums: a tree that runs many short commands (a shell loop, `git status` after `grep`)
    /// loses the ended ones' counters from a sum, which can then shrink while it works.
    pub fn since(&self, before: &Activity) -> bool {
        self.procs.iter().any(
            |now| match before.procs.iter().find(|then| then.pid == now.pid) {
                Some(then) => now.cpu_ticks > then.cpu_ticks || now.io_bytes > then.io_bytes,
                None => true,
            },
        )
    }

    /// Whether the tree has done anything at all.
    #[cfg(test)]
    pub fn any(&self) -> bool {
        self.procs.iter().any(|w| w.cpu_ticks > 0 || w.io_bytes > 0)
    }
}

/// The activity of `root`'s live descendants, and of `root` itself unless it is the reaper
/// (`reaper`), whose own polling is not the command's work; `None` when `/proc` cannot be read
/// or `root` has gone.
pub fn activity(root: i32, reaper: bool) -> Option<Activity> {
    let table = table()?;
    let own = table.iter().find(|p| p.pid == root)?;
    let mut procs = Vec::new();
    if !reaper {
        procs.push(Work {
            pid: root,
            cpu_ticks: own.cpu_ticks,
            io_bytes: io_bytes(root),
        });
    }
    for p in descendants(root, &table).iter().filter(|p| p.live) {
        procs.push(Work {
            pid: p.pid,
            cpu_ticks: p.cpu_ticks,
            io_bytes: io_bytes(p.pid),
        });
    }
    Some(Activity { procs })
}

/// `rchar` + `wchar` of `/proc/<pid>/io`; 0 when it cannot be read.
fn io_bytes(pid: i32) -> u64 {
    let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) else {
        return 0;
    };
    io.lines()
        .filter_map(|l| {
            l.strip_prefix("rchar: ")
                .or_else(|| l.strip_prefix("wchar: "))
        })
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .sum()
}

/// How many live descendants `root` has.
pub fn live_descendants(root: i32) -> usize {
    table().map_or(0, |table| {
        descendants(root, &table).iter().filter(|p| p.live).count()
    })
}

/// Sends `signal` to every live descendant of `root`; returns how many there were.
pub fn signal_descendants(root: i32, signal: Signal) -> usize {
    let Some(table) = table() else {
        return 0;
    };
    let live: Vec<Proc> = descendants(root, &table)
        .into_iter()
        .filter(|p| p.live)
        .collect();
    for p in &live {
        let _ = kill(Pid::from_raw(p.pid), signal);
    }
    live.len()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn stat_lines_are_read_past_a_command_name_with_parentheses() {
        let stat =
            "42 (my (odd) name) S 7 42 42 0 -1 4194560 100 0 0 0 15 5 3 2 20 0 1 0 100 1000 50";
        assert_eq!(
            parse(42, stat),
            Some(Proc {
                pid: 42,
                ppid: 7,
                live: true,
                // utime + stime + the waited-for children's cutime + cstime
                cpu_ticks: 25
            })
        );
        assert!(
            !parse(43, "43 (z) Z 7 1 1 0 -1 0 0 0 0 0 1 1 0 0")
                .unwrap()
                .live
        );
    }

    #[test]
    fn descendants_follow_every_generation_and_nothing_else() {
        let p = |pid, ppid| Proc {
            pid,
            ppid,
            live: true,
            cpu_ticks: 1,
        };
        let table = [p(1, 0), p(10, 1), p(11, 10), p(12, 11), p(13, 10), p(20, 1)];
        let mut pids: Vec<i32> = descendants(10, &table).iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        assert_eq!(pids, [11, 12, 13]);
    }

    /// A shell loop running short commands: the command seen in the first look has ended by
    /// the second, which sees the shell's counters barely moved and a new command. At work.
    #[test]
    fn a_tree_of_short_lived_commands_is_at_work_though_its_sums_shrink() {
        let w = |pid, cpu_ticks, io_bytes| Work {
            pid,
            cpu_ticks,
            io_bytes,
        };
        let before = Activity {
            procs: vec![w(10, 5, 100), w(11, 1, 4000)],
        };
        let after = Activity {
            procs: vec![w(10, 5, 111), w(12, 0, 800)],
        };
        assert!(after.since(&before));
        let stalled = Activity {
            procs: vec![w(10, 5, 100)],
        };
        assert!(!stalled.since(&before), "an ended command is not work");
        assert!(!before.since(&before));
        assert!(Activity {
            procs: vec![w(10, 5, 100), w(13, 0, 0)]
        }
        .since(&before));
    }

    /// A process of this test's own tree is found, and its CPU time counted.
    #[test]
    fn a_real_child_is_a_descendant() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id() as i32;
        let table = table().unwrap();
        assert!(descendants(me, &table)
            .iter()
            .any(|p| p.pid == child.id() as i32));
        assert!(activity(me, false).is_some_and(|a| a.any()));
        assert_eq!(signal_descendants(child.id() as i32, Signal::SIGKILL), 0);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
