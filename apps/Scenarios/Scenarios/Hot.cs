using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `hot [seconds=3]`: two CPU-bound threads, hot-a (the main thread, renamed) and hot-b.
/// Each runs Worker, which alternates HotA for 3 units and HotB for 1 unit of identical
/// loop iterations, so 75% of the CPU is in HotA. The stack on hot-a is
/// Main → RunHot → Worker → HotA/HotB; hot-b's starts at Worker. The app times each call
/// with a Stopwatch (both are pure CPU) and prints the measured shares.
/// </summary>
public static class Hot
{
    private const int UnitIterations = 400_000;
    private static long s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int RunHot(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 3);
        long deadline = Stopwatch.GetTimestamp() + (seconds * Stopwatch.Frequency);

        Thread.CurrentThread.Name = "hot-a";
        var b = new WorkerStats();
        var other = new Thread(() => Worker(deadline, b)) { Name = "hot-b" };
        other.Start();
        var a = new WorkerStats();
        Worker(deadline, a);
        other.Join();

        long hotATicks = a.HotATicks + b.HotATicks;
        long hotBTicks = a.HotBTicks + b.HotBTicks;
        double share = (double)hotATicks / (hotATicks + hotBTicks);
        Results.Print(
            ("hota_share", Results.Share(share)),
            ("hotb_share", Results.Share(1 - share)),
            ("hota_ms", hotATicks * 1000 / Stopwatch.Frequency),
            ("hotb_ms", hotBTicks * 1000 / Stopwatch.Frequency),
            ("hota_calls", a.HotACalls + b.HotACalls),
            ("hotb_calls", a.HotBCalls + b.HotBCalls),
            ("seconds", seconds));
        Results.Print(
            ("hot_a_tid", a.Tid),
            ("hot_b_tid", b.Tid),
            ("hot_a_cpu_ms", a.CpuMs),
            ("hot_b_cpu_ms", b.CpuMs));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Worker(long deadline, WorkerStats stats)
    {
        stats.Tid = ThreadInfo.CurrentOsTid();
        long cpuBefore = ThreadInfo.CurrentThreadCpuMs();
        ulong seed = (ulong)stats.Tid | 1;
        while (Stopwatch.GetTimestamp() < deadline)
        {
            long t0 = Stopwatch.GetTimestamp();
            seed = HotA(seed, 3 * UnitIterations);
            long t1 = Stopwatch.GetTimestamp();
            seed = HotB(seed, UnitIterations);
            long t2 = Stopwatch.GetTimestamp();
            stats.HotATicks += t1 - t0;
            stats.HotBTicks += t2 - t1;
            stats.HotACalls++;
            stats.HotBCalls++;
        }
        stats.CpuMs = ThreadInfo.CurrentThreadCpuMs() - cpuBefore;
        Interlocked.Add(ref s_sink, (long)seed);
    }

    // HotA and HotB have the same body: equal time per iteration. Fully optimized from the
    // first call so tiering does not skew the split.
    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    public static ulong HotA(ulong x, int iterations)
    {
        for (int i = 0; i < iterations; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining | MethodImplOptions.AggressiveOptimization)]
    public static ulong HotB(ulong x, int iterations)
    {
        for (int i = 0; i < iterations; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return x;
    }

    private sealed class WorkerStats
    {
        public int Tid;
        public long CpuMs;
        public long HotATicks;
        public long HotBTicks;
        public long HotACalls;
        public long HotBCalls;
    }
}
