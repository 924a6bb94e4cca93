//! This process: its ids, and reading its own memory without faulting.

use std::ffi::c_void;

/// The process id (`getpid`).
pub fn pid() -> u32 {
    // SAFETY: (A8) getpid has no preconditions.
    unsafe { libc::getpid() as u32 }
}

/// The real user id (`getuid`).
pub fn uid() -> u32 {
    // SAFETY: (A8) getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// The effective user id (`geteuid`).
pub fn euid() -> u32 {
    // SAFETY: (A8) geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Copies `[from, from + len)` of our own memory into `dst` page by page; returns the
/// bytes copied before the first unreadable page. Async-signal-safe (one syscall,
/// `process_vm_readv` on `pid`, our own process, which reports an unmapped page as a short
/// read instead of faulting).
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes and not read or written by anyone else
/// meanwhile.
#[inline]
pub unsafe fn copy_own_memory(pid: u32, dst: *mut u8, from: u64, len: usize) -> usize {
    const PAGE: u64 = 4096;
    const MAX_IOV: usize = 128;
    let mut remote = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_IOV];
    let mut n = 0;
    let mut at = from;
    let end = from.saturating_add(len as u64);
    while at < end && n < MAX_IOV {
        let next = ((at / PAGE) + 1) * PAGE;
        let chunk_end = next.min(end);
        remote[n] = libc::iovec {
            iov_base: at as *mut c_void,
            iov_len: (chunk_end - at) as usize,
        };
        n += 1;
        at = chunk_end;
    }
    let local = libc::iovec {
        iov_base: dst as *mut c_void,
        iov_len: (at - from) as usize,
    };
    // SAFETY: (A8) `local` is the caller's writable buffer of at most `len` bytes (the
    // function's contract); remote ranges are only read by the kernel, which reports
    // unmapped pages instead of faulting. Partial transfers stop at the first unreadable
    // iovec (one page each).
    let r = unsafe {
        libc::process_vm_readv(
            pid as libc::pid_t,
            &local,
            1,
            remote.as_ptr(),
            n as libc::c_ulong,
            0,
        )
    };
    if r < 0 { 0 } else { r as usize }
}

/// The path of the shared object this code was loaded from (`dladdr` on one of its own
/// functions), as the runtime's `dlopen` named it: the CLI waits for that path to leave
/// the target's maps after a detach.
pub fn own_library_path() -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    let here = own_library_path as *const c_void;
    // SAFETY: (A8) `here` is an address of this library's code and `info` a valid, writable
    // Dl_info; dladdr only fills it in.
    let found = unsafe { libc::dladdr(here, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: (A8) on success dli_fname is a NUL-terminated string owned by the loader,
    // valid while the library is loaded (we copy it at once).
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(
        name.to_bytes(),
    )))
}

/// Whether the library was made permanent ([`keep_loaded`]). Process-wide on purpose: the
/// flag is the loader's, for the life of the process.
static KEPT_LOADED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
const KEEP_UNDECIDED: u8 = 0;
const KEEP_PINNED: u8 = 2;
const KEEP_FAILED: u8 = 3;

/// The C library's version (`gnu_get_libc_version`), e.g. `2.36`.
pub fn glibc_version() -> Option<String> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: (A8) gnu_get_libc_version has no preconditions and returns a static
        // NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        Some(v.to_string_lossy().into_owned())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

/// Marks this library `RTLD_NODELETE` (a `dlopen` of its own, already loaded path with
/// `RTLD_NOLOAD`), so the runtime's unload after a detach or a failed initialisation leaves
/// it mapped, inert between sessions: no thread of ours runs, nothing of ours is called,
/// and the session's memory was given back at detach. The next attach names the same
/// file and `dlopen` returns this object, so the process loads the library (and takes a
/// TLS module id) once. On every glibc, so every platform behaves the same; on 2.34-2.36
/// an unload would also corrupt other libraries' TLS: a later `dlopen` reuses the closed
/// library's TLS module id, and a thread whose DTV update skips the gap gets a fresh,
/// zeroed block for libcoreclr's `t_CurrentThreadInfo` (the sourceware bug 29039 family;
/// Datadog's .NET loader refuses to `dlclose` there too, dd-trace-dotnet #7125). Done
/// once, at the first entry point.
pub fn keep_loaded() {
    use std::sync::atomic::Ordering;
    if KEPT_LOADED.load(Ordering::Acquire) != KEEP_UNDECIDED {
        return;
    }
    let outcome = {
        match own_library_path().and_then(|p| {
            use std::os::unix::ffi::OsStrExt;
            std::ffi::CString::new(p.as_os_str().as_bytes()).ok()
        }) {
            None => KEEP_FAILED,
            Some(path) => {
                // SAFETY: (A8) `path` is NUL-terminated; with RTLD_NOLOAD dlopen only looks
                // up the already loaded object (ourselves) and adds the NODELETE flag; the
                // reference it returns is never closed, on purpose.
                let h = unsafe {
                    libc::dlopen(
                        path.as_ptr(),
                        libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
                    )
                };
                if h.is_null() {
                    KEEP_FAILED
                } else {
                    KEEP_PINNED
                }
            }
        }
    };
    KEPT_LOADED.store(outcome, Ordering::Release);
}

/// Whether the library stays mapped after a detach (see [`keep_loaded`]); `Err` when it
/// could not be made to.
pub fn kept_loaded() -> Result<bool, String> {
    match KEPT_LOADED.load(std::sync::atomic::Ordering::Acquire) {
        KEEP_PINNED => Ok(true),
        KEEP_FAILED => Err("this library could not be marked RTLD_NODELETE".into()),
        _ => Ok(false),
    }
}
