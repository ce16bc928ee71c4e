//! The terminal while the TUI owns it: raw mode and the alternate screen on stdout, stderr
//! diverted to a file, and the one way back, [`restore`], taken on every exit path: the end of
//! the view, a panic (the [`Screen`] is dropped as it unwinds; a panic hook would also fire
//! for the panics a run catches in its roles and goes on after), and an exit on a second
//! Ctrl+C or signal. It is idempotent and needs no
//! lock another thread might hold (ralph-orchestrator #99: a deadlock between the signal path
//! and raw mode).

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crossterm::{cursor, event, execute, terminal};

/// Whether the terminal is in the TUI's state now.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The saved stderr while it is diverted (-1: not diverted).
static SAVED_STDERR: AtomicI32 = AtomicI32::new(-1);

/// The terminal in the TUI's state; dropping it restores the terminal.
pub struct Screen {
    stderr_log: Option<PathBuf>,
}

impl Screen {
    /// Raw mode, the alternate screen, the mouse left alone; stderr into `stderr_log` so that
    /// nothing written there (a log line, a child's message) lands on the screen.
    pub fn enter(stderr_log: Option<&Path>) -> std::io::Result<Self> {
        let stderr_log = stderr_log.and_then(|p| divert_stderr(p).ok().map(|()| p.to_path_buf()));
        if let Err(e) = terminal::enable_raw_mode() {
            restore();
            return Err(e);
        }
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = std::io::stdout();
        if let Err(e) = execute!(
            out,
            terminal::EnterAlternateScreen,
            cursor::Hide,
            event::EnableBracketedPaste
        ) {
            restore();
            return Err(e);
        }
        Ok(Self { stderr_log })
    }

    /// Where stderr went while the view was up, if it was diverted.
    pub fn stderr_log(&self) -> Option<&Path> {
        self.stderr_log.as_deref()
    }

    /// Leaves the terminal to another program (`$EDITOR`) until `f` is done.
    pub async fn suspended_async<T>(
        &mut self,
        f: impl std::future::Future<Output = T>,
    ) -> std::io::Result<T> {
        leave();
        let result = f.await;
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide,
            event::EnableBracketedPaste
        )?;
        Ok(result)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal back as it was: the main screen, cooked mode, the cursor shown, stderr
/// back. Safe to call from anywhere, any number of times.
pub fn restore() {
    leave();
    let saved = SAVED_STDERR.swap(-1, Ordering::SeqCst);
    if saved >= 0 {
        // SAFETY: `saved` is the duplicate of fd 2 made by `divert_stderr`, owned here alone
        // (the swap took it); dup2 and close on valid descriptors.
        unsafe {
            libc::dup2(saved, 2);
            libc::close(saved);
        }
    }
}

fn leave() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = std::io::stdout();
        let _ = execute!(
            out,
            event::DisableBracketedPaste,
            cursor::Show,
            terminal::LeaveAlternateScreen
        );
        let _ = terminal::disable_raw_mode();
        let _ = out.flush();
    }
}

/// Sends fd 2 to `path` (appended), keeping the old one to put back.
fn divert_stderr(path: &Path) -> std::io::Result<()> {
    let file = File::options().create(true).append(true).open(path)?;
    // SAFETY: dup of fd 2, which is open for the whole process.
    let saved: RawFd = unsafe { libc::dup(2) };
    if saved < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are valid; dup2 replaces fd 2 atomically.
    if unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: `saved` was just made by dup and is owned here.
        drop(unsafe { OwnedFd::from_raw_fd(saved) });
        return Err(e);
    }
    SAVED_STDERR.store(saved, Ordering::SeqCst);
    Ok(())
}
