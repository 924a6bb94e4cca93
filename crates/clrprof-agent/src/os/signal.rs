//! Signals for the signal sampler (Linux x86_64): the disposition of a signal, installing
//! an `SA_SIGINFO` handler, sending a queued signal to one thread (`rt_tgsigqueueinfo`),
//! and what a handler reads: the queued value, the interrupted registers, errno.

use std::ffi::c_void;

/// The bytes of `siginfo_t` that `rt_tgsigqueueinfo` needs on x86_64 (128 bytes in all;
/// `_sifields._rt` starts at offset 16).
#[repr(C)]
struct QueueInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: u64,
    _rest: [u8; 96],
}

const _: () = assert!(std::mem::size_of::<QueueInfo>() == 128);

/// A handler with the `SA_SIGINFO` signature.
pub type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void);

/// Whether someone else handles `sig` (a disposition other than default or ignore).
pub fn handled_elsewhere(sig: libc::c_int) -> std::io::Result<bool> {
    // SAFETY: (A8) zeroed sigaction is a valid "query" argument; we only read `old`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: (A8) a null new action only queries the current disposition.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN)
}

/// Installs `handler` for `sig` (`SA_SIGINFO | SA_RESTART`, every signal blocked while it
/// runs); false when `sigaction` failed (errno says why).
///
/// # Safety
/// `handler` must be async-signal-safe and must not unwind (rule A6).
pub unsafe fn install(sig: libc::c_int, handler: Handler) -> bool {
    // SAFETY: (A8) a fully initialised sigaction whose handler has the SA_SIGINFO
    // signature.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: (A8) `act.sa_mask` is a valid sigset to fill.
    unsafe { libc::sigfillset(&mut act.sa_mask) };
    // SAFETY: (A6) installs a handler the caller vouches for (the function's contract).
    unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) == 0 }
}

/// Ignores `sig` from now on (which also discards pending ones).
pub fn ignore(sig: libc::c_int) {
    // SAFETY: (A8) a zeroed sigaction with SIG_IGN is valid.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = libc::SIG_IGN;
    // SAFETY: (A8) valid arguments; ignoring SIGPROF is harmless to a .NET application.
    unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
}

/// Sends `sig` with `value` to thread `tid` of process `pid` (ours, sent as `uid`); false
/// when it could not be queued (the thread is gone).
#[inline]
pub fn send_queued(pid: u32, tid: u32, sig: libc::c_int, uid: u32, value: u64) -> bool {
    let mut info = QueueInfo {
        signo: sig,
        errno: 0,
        code: libc::SI_QUEUE,
        _pad: 0,
        pid: pid as i32,
        uid,
        value,
        _rest: [0; 96],
    };
    // SAFETY: (A8) `info` is a 128-byte siginfo for this process; the kernel copies it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            pid as libc::pid_t,
            tid as libc::pid_t,
            sig,
            &mut info as *mut QueueInfo,
        )
    };
    r == 0
}

/// A queued signal's sender pid and value; `None` for a signal that was not queued
/// (`kill` from outside).
///
/// # Safety
/// `info` is the non-null siginfo the kernel passed to an `SA_SIGINFO` handler.
#[inline]
pub unsafe fn queued(info: *const libc::siginfo_t) -> Option<(u32, u64)> {
    // SAFETY: (A6) the kernel passes a valid 128-byte siginfo with SA_SIGINFO.
    let q = unsafe { &*(info as *const QueueInfo) };
    (q.code == libc::SI_QUEUE).then_some((q.pid as u32, q.value))
}

/// The interrupted thread's RIP, RSP and RBP.
///
/// # Safety
/// `ctx` is the non-null context the kernel passed to an `SA_SIGINFO` handler.
#[inline]
pub unsafe fn registers(ctx: *const c_void) -> (u64, u64, u64) {
    // SAFETY: (A6) with SA_SIGINFO the third argument is the interrupted ucontext.
    let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
    let g = &uc.uc_mcontext.gregs;
    (
        g[libc::REG_RIP as usize] as u64,
        g[libc::REG_RSP as usize] as u64,
        g[libc::REG_RBP as usize] as u64,
    )
}

/// The calling thread's errno (a handler saves it before its syscalls).
#[inline]
pub fn errno() -> i32 {
    // SAFETY: (A8) errno is thread-local and always addressable.
    unsafe { *libc::__errno_location() }
}

/// Restores the calling thread's errno.
#[inline]
pub fn set_errno(value: i32) {
    // SAFETY: (A8) as in `errno`.
    unsafe { *libc::__errno_location() = value };
}
