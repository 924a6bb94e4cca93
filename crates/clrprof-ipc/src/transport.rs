//! One request, one response, one connection.
//!
//! The runtime serves each connection once: it reads one message, answers, and (for the
//! commands used here) closes. So every command opens a fresh `UnixStream`.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::codec::{CodecError, HEADER_LEN, Header};

/// Why an exchange failed, before any meaning is given to the answer.
#[derive(Debug)]
pub enum TransportError {
    /// `connect(2)` failed.
    Connect(io::Error),
    /// Sending the request failed.
    Send(io::Error),
    /// Reading the answer failed; `received` bytes had arrived.
    Receive {
        /// Bytes of the answer received before the failure.
        received: usize,
        /// The failure.
        source: io::Error,
    },
    /// Nothing arrived within the timeout.
    Timeout,
    /// The answer's header is invalid.
    Codec(CodecError),
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads exactly `buf.len()` bytes, reporting how many arrived on failure.
fn read_full(stream: &mut UnixStream, buf: &mut [u8]) -> Result<(), (usize, io::Error)> {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]) {
            Ok(0) => {
                return Err((
                    got,
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("connection closed after {got} of {} bytes", buf.len()),
                    ),
                ));
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((got, e)),
        }
    }
    Ok(())
}

/// Sends `request` to the socket at `path` and reads one response: exactly the 20-byte
/// header, then exactly `size - 20` payload bytes. `timeout` bounds each read and write.
pub fn exchange(
    path: &Path,
    request: &[u8],
    timeout: Duration,
) -> Result<(Header, Vec<u8>), TransportError> {
    let mut stream = UnixStream::connect(path).map_err(TransportError::Connect)?;
    // A zero timeout means "block forever" to std; use at least 1 ms.
    let timeout = timeout.max(Duration::from_millis(1));
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(TransportError::Connect)?;
    stream.write_all(request).map_err(|e| {
        if is_timeout(&e) {
            TransportError::Timeout
        } else {
            TransportError::Send(e)
        }
    })?;
    let fail = |offset: usize, (got, e): (usize, io::Error)| {
        if is_timeout(&e) {
            TransportError::Timeout
        } else {
            TransportError::Receive {
                received: offset + got,
                source: e,
            }
        }
    };
    let mut head = [0u8; HEADER_LEN];
    read_full(&mut stream, &mut head).map_err(|e| fail(0, e))?;
    let header = Header::decode(&head).map_err(TransportError::Codec)?;
    let mut payload = vec![0u8; header.payload_len()];
    read_full(&mut stream, &mut payload).map_err(|e| fail(HEADER_LEN, e))?;
    Ok((header, payload))
}
