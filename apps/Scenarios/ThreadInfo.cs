using System.Globalization;

namespace Scenarios;

/// <summary>
/// The calling thread's OS thread id and CPU time, read from <c>/proc/thread-self</c>
/// (Linux only; -1 elsewhere). Lets tests relate the profiler's per-thread numbers to
/// the app's own.
/// </summary>
public static class ThreadInfo
{
    /// <summary>The kernel's id of the calling thread.</summary>
    public static int CurrentOsTid()
    {
        if (!OperatingSystem.IsLinux())
        {
            return -1;
        }
        // "/proc/thread-self" links to "<pid>/task/<tid>".
        string? target = new FileInfo("/proc/thread-self").LinkTarget;
        if (target is null)
        {
            return -1;
        }
        string last = target[(target.LastIndexOf('/') + 1)..];
        return int.TryParse(last, NumberStyles.None, CultureInfo.InvariantCulture, out int tid) ? tid : -1;
    }

    /// <summary>User + system CPU time the calling thread has used, in milliseconds.</summary>
    public static long CurrentThreadCpuMs()
    {
        if (!OperatingSystem.IsLinux())
        {
            return -1;
        }
        string stat = File.ReadAllText("/proc/thread-self/stat");
        // The command name (field 2) is in parentheses and may contain spaces.
        string[] fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
        // fields[0] is field 3 (state); utime is field 14 and stime field 15.
        long ticks = long.Parse(fields[11], CultureInfo.InvariantCulture)
            + long.Parse(fields[12], CultureInfo.InvariantCulture);
        const long ClockTicksPerSecond = 100; // USER_HZ on Linux
        return ticks * 1000 / ClockTicksPerSecond;
    }
}
