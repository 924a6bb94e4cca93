using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `threads64 [calls=10000]`: 64 threads (t64-01..t64-64), released together, each calling
/// Work(int) exactly `calls` times.
/// </summary>
public static class Threads64
{
    private const int ThreadCount = 64;
    private static long s_workCalls;
    private static long s_checksum;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int calls = args.Int("calls", 10_000);
        using var start = new ManualResetEventSlim(false);
        var threads = new Thread[ThreadCount];
        for (int i = 0; i < ThreadCount; i++)
        {
            threads[i] = new Thread(() => Worker(start, calls)) { Name = $"t64-{i + 1:D2}" };
            threads[i].Start();
        }
        start.Set();
        foreach (var t in threads)
        {
            t.Join();
        }
        Results.Print(
            ("threads", ThreadCount),
            ("calls_per_thread", calls),
            ("work_calls", s_workCalls),
            ("checksum", s_checksum));
        return 0;
    }

    private static void Worker(ManualResetEventSlim start, int calls)
    {
        start.Wait();
        long local = 0;
        long count = 0;
        for (int k = 0; k < calls; k++)
        {
            local += Work(k);
            count++;
        }
        Interlocked.Add(ref s_workCalls, count);
        Interlocked.Add(ref s_checksum, local);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Work(int k) => (k * 7 + 3) % 11;
}
