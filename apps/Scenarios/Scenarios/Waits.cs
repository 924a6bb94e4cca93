using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Scenarios;

/// <summary>The object the `waits` scenario's threads contend for (its type names the lock).</summary>
public sealed class Ledger
{
    public long Entries;
}

/// <summary>
/// `waits [rounds=5]`: known waits, for `record --waits`.
/// 1. Four threads (waits-lock-N) each take one <see cref="Ledger"/>'s lock `rounds` times
///    in <see cref="TakeLedger"/> and hold it ~20 ms in <see cref="HoldLedger"/> (a CPU
///    loop, so that the holder is seen running); a Stopwatch measures each acquisition.
/// 2. 48 thread-pool work items block on <c>Task.Delay(300).Wait()</c> in
///    <see cref="BlockPoolThread"/> (sync over async: the pool starves and injects threads).
/// 3. A thread (waits-sleeper) sleeps 500 ms in <see cref="Nap"/>.
/// Prints <c>RESULT contentions=… lock_wait_ns=… acquisitions=… blocked_items=48
/// pool_threads_before=… pool_threads_after=…</c>: the change of
/// <c>Monitor.LockContentionCount</c> over phase 1 and the Stopwatch total.
/// </summary>
public static class Waits
{
    private static readonly Ledger s_ledger = new();
    private static long s_waitTicks;
    private static long s_sink;
    private static bool s_go;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(ScenarioArgs args)
    {
        int rounds = args.Int("rounds", 5);
        // Phase 1: the lock.
        long before = Monitor.LockContentionCount;
        // The threads start together on a flag, not on a lock or an event: phase 1's
        // only contention is the ledger's.
        var threads = new Thread[4];
        for (int i = 0; i < threads.Length; i++)
        {
            threads[i] = new Thread(() =>
            {
                while (!Volatile.Read(ref s_go))
                {
                    Thread.Sleep(1);
                }
                for (int r = 0; r < rounds; r++)
                {
                    TakeLedger();
                }
            })
            { Name = $"waits-lock-{i}" };
            threads[i].Start();
        }
        Thread.Sleep(50);
        Volatile.Write(ref s_go, true);
        foreach (var t in threads)
        {
            t.Join();
        }
        long contentions = Monitor.LockContentionCount - before;
        long waitNs = (long)(Interlocked.Read(ref s_waitTicks) * (1e9 / Stopwatch.Frequency));

        // Phase 3 runs beside phase 2: a sleeping thread.
        var sleeper = new Thread(Nap) { Name = "waits-sleeper" };
        sleeper.Start();

        // Phase 2: sync over async on the thread pool.
        int poolBefore = ThreadPool.ThreadCount;
        var items = new Task[48];
        for (int i = 0; i < items.Length; i++)
        {
            items[i] = Task.Run(BlockPoolThread);
        }
        Task.WaitAll(items);
        int poolAfter = ThreadPool.ThreadCount;
        sleeper.Join();

        Results.Print(
            ("contentions", contentions),
            ("lock_wait_ns", waitNs),
            ("acquisitions", 4 * rounds),
            ("blocked_items", items.Length),
            ("pool_threads_before", poolBefore),
            ("pool_threads_after", poolAfter),
            ("entries", s_ledger.Entries));
        return 0;
    }

    /// <summary>Takes the ledger's lock (the waiter), timing the acquisition.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void TakeLedger()
    {
        long t0 = Stopwatch.GetTimestamp();
        lock (s_ledger)
        {
            Interlocked.Add(ref s_waitTicks, Stopwatch.GetTimestamp() - t0);
            HoldLedger();
        }
    }

    /// <summary>Holds the lock ~20 ms, running (the owner).</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void HoldLedger()
    {
        s_ledger.Entries++;
        long end = Stopwatch.GetTimestamp() + Stopwatch.Frequency / 50;
        long x = 0;
        while (Stopwatch.GetTimestamp() < end)
        {
            x += x * 31 + 7;
        }
        s_sink += x;
    }

    /// <summary>A pool work item that blocks on a task (sync over async).</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void BlockPoolThread()
    {
        Task.Delay(300).Wait();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Nap()
    {
        Thread.Sleep(500);
    }
}
