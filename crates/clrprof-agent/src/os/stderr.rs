//! The process's stderr, written without ever blocking. A parent that piped the app's
//! stderr and does not read it (a test harness, a supervisor that stalled) leaves a full
//! pipe, and a plain `write` then waits for a reader that never comes: during an attach
//! that is the runtime's diagnostics server thread, which answers no client again. So a
//! pipe is written through a descriptor of its own opened non-blocking (`/proc/self/fd/2`
//! opens the same pipe with a new open file description: the app's own descriptor and its
//! flags stay as they are), a socket with `MSG_DONTWAIT`; a line that does not fit is
//! dropped and counted. Terminals and files are written as before (they do not fill).
//! Rare by design: the callers hold the log's mutex, and each line costs a `stat`.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::sync::Mutex;

/// The non-blocking descriptor of the pipe stderr was last seen to be, by (device, inode):
/// opened again when the app points stderr elsewhere.
static PIPE: Mutex<Option<(u64, u64, File)>> = Mutex::new(None);

/// What became of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Written,
    /// The reader had not made room (a full pipe or socket buffer), or none was left.
    Dropped,
}

/// Writes `bytes` to stderr, whole or not at all when it is a pipe and `bytes` is at most
/// `PIPE_BUF` (4 KiB: such writes are atomic); a longer text may be cut where the pipe
/// filled.
pub fn write(bytes: &[u8]) -> Outcome {
    write_to("/proc/self/fd/2", 2, bytes)
}

fn write_to(link: &str, fd: i32, bytes: &[u8]) -> Outcome {
    let Ok(meta) = std::fs::metadata(link) else {
        // Closed, or no /proc: nothing to write to, or nothing to learn; the plain write
        // (which fails on a closed descriptor) is all that is left.
        return plain(fd, bytes);
    };
    let kind = meta.file_type();
    if kind.is_fifo() {
        let Ok(mut guard) = PIPE.lock() else {
            return Outcome::Dropped;
        };
        let key = (meta.dev(), meta.ino());
        if guard.as_ref().is_none_or(|(d, i, _)| (*d, *i) != key) {
            *guard = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(link)
                .ok()
                .map(|f| (key.0, key.1, f));
        }
        let Some((_, _, pipe)) = guard.as_mut() else {
            // ENXIO: no reader left.
            return Outcome::Dropped;
        };
        match pipe.write_all(bytes) {
            Ok(()) => Outcome::Written,
            Err(_) => Outcome::Dropped,
        }
    } else if kind.is_socket() {
        let mut rest = bytes;
        while !rest.is_empty() {
            // SAFETY: (A8) `rest` is a live slice and its true length; `fd` is only a
            // number to the kernel, which answers EBADF or ENOTSOCK for a wrong one.
            let n = unsafe {
                libc::send(
                    fd,
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if n <= 0 {
                return Outcome::Dropped;
            }
            rest = &rest[n as usize..];
        }
        Outcome::Written
    } else {
        plain(fd, bytes)
    }
}

fn plain(fd: i32, bytes: &[u8]) -> Outcome {
    let written = if fd == 2 {
        std::io::stderr().write_all(bytes)
    } else {
        Err(std::io::Error::other("only stderr is written plainly"))
    };
    match written {
        Ok(()) => Outcome::Written,
        Err(_) => Outcome::Dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;

    /// A pipe nobody reads: the write returns at once, dropped, and the descriptor the
    /// test holds keeps blocking mode (its open file description was not touched).
    #[test]
    fn a_full_pipe_drops_the_line_instead_of_blocking() {
        let (mut reader, writer) = std::io::pipe().unwrap();
        let link = format!("/proc/self/fd/{}", writer.as_raw_fd());
        // Fill it through a non-blocking descriptor of its own.
        let mut filler = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&link)
            .unwrap();
        let chunk = [b'x'; 4096];
        while filler.write(&chunk).is_ok() {}
        let line = b"clrprof[1]: a line\n";
        assert_eq!(write_to(&link, writer.as_raw_fd(), line), Outcome::Dropped);
        // Room again: the next line is written whole.
        let mut sink = vec![0; 1 << 20];
        let mut drained = 0;
        while drained < 60_000 {
            drained += reader.read(&mut sink).unwrap();
        }
        assert_eq!(write_to(&link, writer.as_raw_fd(), line), Outcome::Written);
        // SAFETY: (A8) F_GETFL on a descriptor this test holds open.
        let flags = unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_GETFL) };
        assert_eq!(flags & libc::O_NONBLOCK, 0, "the app's descriptor changed");
    }

    #[test]
    fn a_socket_with_a_full_buffer_drops_the_line() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let link = format!("/proc/self/fd/{}", a.as_raw_fd());
        let chunk = [b'x'; 4096];
        let mut outcome = Outcome::Written;
        for _ in 0..10_000 {
            outcome = write_to(&link, a.as_raw_fd(), &chunk);
            if outcome == Outcome::Dropped {
                break;
            }
        }
        assert_eq!(outcome, Outcome::Dropped);
    }
}
