using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `threads`: five threads named clrprof-worker-1..5 (named before Start), each doing
/// about 20 ms of CPU work; all joined.
/// </summary>
public static class Threads
{
    private const int Count = 5;
    private static readonly int[] s_tids = new int[Count];
    private static readonly long[] s_results = new long[Count];

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        var threads = new Thread[Count];
        for (int i = 0; i < Count; i++)
        {
            int index = i;
            threads[i] = new Thread(() => Work(index)) { Name = $"clrprof-worker-{i + 1}" };
            threads[i].Start();
        }
        foreach (var t in threads)
        {
            t.Join();
        }
        Results.Print(
            ("threads", Count),
            ("thread_names", string.Join(',', threads.Select(t => t.Name))),
            ("worker_tids", string.Join(',', s_tids)),
            ("work_ok", s_results.All(r => r != 0)));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Work(int index)
    {
        s_tids[index] = ThreadInfo.CurrentOsTid();
        var clock = Stopwatch.StartNew();
        ulong x = (ulong)index + 1;
        while (clock.ElapsedMilliseconds < 20)
        {
            for (int k = 0; k < 10_000; k++)
            {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
        }
        s_results[index] = (long)(x | 1);
    }
}
