using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>
/// `pool-hot [seconds=2] [workers=4]`: a thread-pool server's shape: `workers` pool work
/// items, each on a pool thread of its own, serve "requests" through the same hot path
/// (<c>PoolHot.Serve</c> → <c>PoolHot.Handle</c>, CPU only) until the time is up.
/// </summary>
public static class PoolHot
{
    private static long s_requests;
    private static long s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int seconds = args.Int("seconds", 2);
        int workers = args.NamedInt("workers", 4);
        ThreadPool.GetMinThreads(out int minWorkers, out int minIo);
        ThreadPool.SetMinThreads(Math.Max(minWorkers, workers + 1), minIo);
        long deadline = Stopwatch.GetTimestamp() + (seconds * Stopwatch.Frequency);
        var tids = new ConcurrentDictionary<int, bool>();
        var started = new CountdownEvent(workers);
        var tasks = new Task[workers];
        for (int i = 0; i < workers; i++)
        {
            tasks[i] = Task.Factory.StartNew(() =>
            {
                tids[ThreadInfo.CurrentOsTid()] = true;
                // Every worker holds its pool thread before any serves: one thread each.
                started.Signal();
                started.Wait();
                Serve(deadline);
            }, TaskCreationOptions.DenyChildAttach);
        }
        Task.WaitAll(tasks);
        Results.Print(
            ("pool_requests", Interlocked.Read(ref s_requests)),
            ("pool_threads", tids.Count),
            ("pool_sink", s_sink & 1));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Serve(long deadline)
    {
        long sink = 0;
        while (Stopwatch.GetTimestamp() < deadline)
        {
            sink += Handle(sink);
            Interlocked.Increment(ref s_requests);
        }
        Interlocked.Add(ref s_sink, sink);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Handle(long seed)
    {
        ulong x = (ulong)seed | 1;
        for (int i = 0; i < 50_000; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return (long)(x & 0xff);
    }
}
