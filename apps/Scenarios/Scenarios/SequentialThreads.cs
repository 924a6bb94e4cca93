using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `sequential-threads [n=30]`: n threads named seq-01..seq-n, each started only after the
/// previous one was joined, so the runtime is free to reuse a dead thread's ThreadID (and
/// its native thread object) for the next one; a collection after each join lets it.
/// </summary>
public static class SequentialThreads
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int count = args.Int("n", 30);
        var names = new string[count];
        var tids = new int[count];
        for (int i = 0; i < count; i++)
        {
            int index = i;
            names[i] = $"seq-{i + 1:D2}";
            var thread = new Thread(() => tids[index] = SeqWork()) { Name = names[i] };
            thread.Start();
            thread.Join();
            // The dead thread's runtime object is freed once its Thread is collected and
            // finalized; the next thread then tends to get the same ThreadID.
            thread = null!;
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }
        Results.Print(
            ("sequential_threads", count),
            ("thread_names", string.Join(',', names)),
            ("thread_tids", string.Join(',', tids)),
            ("distinct_tids", tids.Distinct().Count()));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int SeqWork()
    {
        Thread.Sleep(2);
        return ThreadInfo.CurrentOsTid();
    }
}
