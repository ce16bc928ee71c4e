//! The part of the hooks' sandbox Landlock cannot do: no IPv4 or IPv6 socket at all (UDP, raw,
//! and TCP again), and no io_uring, whose socket operations a filter would not see. A seccomp
//! filter answers `socket(AF_INET | AF_INET6, …)` with `EACCES` and `io_uring_setup` with
//! `EPERM`; Unix sockets and netlink stay open. It needs `no_new_privs`, which Landlock has set.

/// The audit architecture of this build's system calls; `None` where the filter is not built
/// (the numbers it checks are this architecture's).
const ARCH: Option<u32> = if cfg!(target_arch = "x86_64") {
    Some(0xc000_003e)
} else if cfg!(target_arch = "aarch64") {
    Some(0xc000_00b7)
} else {
    None
};

/// Where `seccomp_data` keeps the system call's number, its architecture and its first
/// argument's low 32 bits (little-endian).
const NR: u32 = 0;
const ARCH_AT: u32 = 4;
const ARG0_LOW: u32 = 16;

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// `if A == k` jump `jt` instructions ahead, else `jf`.
fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

/// The filter's program.
fn program(arch: u32) -> Vec<libc::sock_filter> {
    let load = |at: u32| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, at);
    let ret = |k: u32| stmt(libc::BPF_RET | libc::BPF_K, k);
    let errno = |e: i32| ret(libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA));
    vec![
        /* 0 */ load(ARCH_AT),
        /* 1 */ jeq(arch, 0, 8), // another architecture's calls: allowed (→ 10)
        /* 2 */ load(NR),
        /* 3 */ jeq(libc::SYS_io_uring_setup as u32, 5, 0), // → 9
        /* 4 */ jeq(libc::SYS_socket as u32, 0, 5), // not socket: → 10
        /* 5 */ load(ARG0_LOW),
        /* 6 */ jeq(libc::AF_INET as u32, 1, 0), // → 8
        /* 7 */ jeq(libc::AF_INET6 as u32, 0, 2), // not inet6: → 10
        /* 8 */ errno(libc::EACCES),
        /* 9 */ errno(libc::EPERM),
        /* 10 */ ret(libc::SECCOMP_RET_ALLOW),
    ]
}

/// Installs the filter on this thread (and so on what it `exec`s and starts); `Ok(false)`
/// where it is not built for the architecture.
pub fn deny_inet() -> std::io::Result<bool> {
    let Some(arch) = ARCH else {
        return Ok(false);
    };
    let filter = program(arch);
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` points at `filter`, alive for the call; the kernel copies the program.
    let done = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            ) == 0
    };
    if done {
        Ok(true)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each jump lands inside the program, on the instruction its comment names.
    #[test]
    fn every_jump_lands_where_it_should() {
        let p = program(0xc000_003e);
        let target =
            |at: usize, taken: bool| at + 1 + usize::from(if taken { p[at].jt } else { p[at].jf });
        assert_eq!(target(1, false), 10);
        assert_eq!(target(3, true), 9);
        assert_eq!(target(4, false), 10);
        assert_eq!(target(6, true), 8);
        assert_eq!(target(7, false), 10);
        assert_eq!(p.len(), 11);
    }
}
