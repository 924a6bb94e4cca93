using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `sleeper [seconds=3]`: thread `sleepy` spends the whole time in SleepLoop (Thread.Sleep
/// in a loop), thread `spinny` spins on the CPU in SpinLoop.
/// </summary>
public static class Sleeper
{
    private static long s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 3);
        long deadline = Stopwatch.GetTimestamp() + (seconds * Stopwatch.Frequency);
        var sleepy = new ThreadStats();
        var spinny = new ThreadStats();
        var sleepThread = new Thread(() => Measure(sleepy, () => SleepLoop(deadline))) { Name = "sleepy" };
        var spinThread = new Thread(() => Measure(spinny, () => SpinLoop(deadline))) { Name = "spinny" };
        sleepThread.Start();
        spinThread.Start();
        sleepThread.Join();
        spinThread.Join();
        Results.Print(
            ("sleepy_iterations", sleepy.Iterations),
            ("spinny_iterations", spinny.Iterations),
            ("sleepy_cpu_ms", sleepy.CpuMs),
            ("spinny_cpu_ms", spinny.CpuMs),
            ("sleepy_tid", sleepy.Tid),
            ("spinny_tid", spinny.Tid),
            ("seconds", seconds));
        return 0;
    }

    private static void Measure(ThreadStats stats, Func<long> body)
    {
        stats.Tid = ThreadInfo.CurrentOsTid();
        long before = ThreadInfo.CurrentThreadCpuMs();
        stats.Iterations = body();
        stats.CpuMs = ThreadInfo.CurrentThreadCpuMs() - before;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SleepLoop(long deadline)
    {
        long sleeps = 0;
        while (Stopwatch.GetTimestamp() < deadline)
        {
            Thread.Sleep(20);
            sleeps++;
        }
        return sleeps;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long SpinLoop(long deadline)
    {
        long rounds = 0;
        ulong x = 88172645463325252UL;
        while (Stopwatch.GetTimestamp() < deadline)
        {
            for (int i = 0; i < 100_000; i++)
            {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            rounds++;
        }
        Interlocked.Add(ref s_sink, (long)x);
        return rounds;
    }

    private sealed class ThreadStats
    {
        public int Tid;
        public long CpuMs;
        public long Iterations;
    }
}
