//! Who is at the other end of a Unix socket: the kernel's record of the peer
//! (`SO_PEERCRED`), which the peer cannot forge.

use std::os::fd::{AsRawFd, BorrowedFd};

/// The peer's process and user ids, as the kernel recorded them when it connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCred {
    pub pid: u32,
    pub uid: u32,
}

/// `getsockopt(SO_PEERCRED)` of a connected Unix socket.
pub fn peer_credentials(fd: BorrowedFd<'_>) -> std::io::Result<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: (A8) `fd` is a descriptor the caller holds open (a `BorrowedFd`); `cred` is a
    // live local of the type SO_PEERCRED writes and `len` its true size.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if len as usize != std::mem::size_of::<libc::ucred>() {
        return Err(std::io::Error::other("SO_PEERCRED returned a short answer"));
    }
    Ok(PeerCred {
        pid: cred.pid as u32,
        uid: cred.uid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_socket_pair_sees_this_process() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let c = peer_credentials(a.as_fd()).unwrap();
        assert_eq!(c.pid, std::process::id());
        assert_eq!(c.uid, crate::os::process::euid());
        // Not a socket: an error, not a guess.
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        assert!(peer_credentials(f.as_fd()).is_err());
    }
}
