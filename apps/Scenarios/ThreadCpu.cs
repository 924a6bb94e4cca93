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

    /// <summary>Nanoseconds of CPU this thread has used; -1 where libc or the clock is missing.</summary>
    public static long Nanoseconds()
    {
        const int CLOCK_THREAD_CPUTIME_ID = 3;
        try
        {
            return ClockGetTime(CLOCK_THREAD_CPUTIME_ID, out var ts) == 0 ? (ts.Sec * 1_000_000_000) + ts.Nsec : -1;
        }
        catch (DllNotFoundException)
        {
            return -1;
        }
    }

    /// <summary>Microseconds of CPU this thread has used; -1 where libc or the clock is missing.</summary>
    public static double Microseconds()
    {
        long ns = Nanoseconds();
        return ns < 0 ? -1 : ns / 1e3;
    }
}
