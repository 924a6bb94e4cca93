using System.Runtime.InteropServices;

namespace Scenarios;

/// <summary>
/// The calling thread's CPU time (<c>CLOCK_THREAD_CPUTIME_ID</c>): beside a stopwatch, a
/// figure that time spent waiting for a core on a busy machine does not inflate.
/// </summary>
public static class ThreadCpu
{
    [StructLayout(LayoutKind.Sequential)]
    private struct Timespec
    {
        public long Sec;
        public long Nsec;
    }

    [DllImport("libc", EntryPoint = "clock_gettime")]
    private static extern int ClockGetTime(int clock, out Timespec ts);

    /// <summary>Microseconds of CPU this thread has used; -1 where the clock is missing.</summary>
    public static double Microseconds()
    {
        const int CLOCK_THREAD_CPUTIME_ID = 3;
        return ClockGetTime(CLOCK_THREAD_CPUTIME_ID, out var ts) == 0
            ? (ts.Sec * 1e6) + (ts.Nsec / 1e3)
            : -1;
    }
}
